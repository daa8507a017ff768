#!/usr/bin/env bash
# Checks manifests/ offline, with kubectl (no cluster needed) and python3 (the standard library
# only: kubectl turns YAML into JSON).
#
#   test/manifests_test.sh [--gputopo PATH]
#
#  0. Without kubectl (python3 with PyYAML, Debian's python3-yaml): manifests/agent's source
#     files. The agent's RBAC grants exactly nodes get/patch, pods get/list/watch/patch and
#     events create; its DaemonSets (observe, and enforce from the Component) mount exactly
#     kubelet's socket directories (pod-resources read-only; device-plugins read-write in enforce
#     only), take --node-name from spec.nodeName, reach NVML through the NVIDIA runtime, probe
#     the --listen port, stay small and unprivileged, and differ only where enforce must; the
#     enforce time-slicing ConfigMap equals manifests/device-plugin's; the
#     ValidatingAdmissionPolicies match pods, pods/status, pods/binding and bindings and name
#     both annotations and both service accounts.
#     With node and GPUTOPO_CEL_JS (a CEL implementation for node, see below), their CEL is
#     also run on test/admission_policy_cases.mjs's requests.
#  1. Every *.yaml under manifests/ parses as Kubernetes objects (kubectl annotate --local, which
#     needs no API server, unlike create --dry-run=client).
#  2. `kubectl kustomize` builds manifests/, manifests/variants/default-scheduler,
#     manifests/examples, manifests/monitoring and manifests/ with the Kubernetes 1.24 component
#     enabled as its kustomization.yaml says, manifests/agent with and without its enforce Component, and the
#     builds hold the expected kinds.
#  3. Semantics: the KubeSchedulerConfiguration in the ConfigMap (an API version and only fields
#     that every kube-scheduler it is meant for knows, since decoding is strict: v1 from 1.25 for
#     manifests/, v1beta3 for 1.24; the extender stanza; leader election), the 1.24 component
#     (the same configuration, a 1.24 kube-scheduler, nothing else changed), the Deployment wired to it
#     (--config path = ConfigMap mount, gputopo's --listen port = urlPrefix port, probes,
#     security context), least-privilege RBAC that matches the configured lease, the
#     NetworkPolicy selecting the pods, the default-scheduler variant (its config, static pod and
#     kubeadm patch agree), the time-slicing ConfigMap, the example workloads' gputopo.io/*
#     annotations and the example nodes' topology documents and profiles, and the image tag
#     against the project version.
#  4. With --gputopo PATH (or GPUTOPO_BIN): the example nodes and workloads are loaded into
#     `gputopo serve --snapshot` and filtered, as kube-scheduler would.
#
# Exit status: 0 pass, 1 failure (each one named on stderr), 77 skipped (no kubectl or python3;
# register with SKIP_RETURN_CODE 77). Without kubectl, 0 still runs: a failure there is 1.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gputopo_bin=${GPUTOPO_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --gputopo) gputopo_bin=$2; shift 2 ;;
    --gputopo=*) gputopo_bin=${1#--gputopo=}; shift ;;
    *) echo "usage: $0 [--gputopo PATH]" >&2; exit 2 ;;
  esac
done

if ! command -v python3 >/dev/null 2>&1; then
  echo "manifests_test: SKIP: python3 not found"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "manifests_test: FAIL: $*" >&2
  failures=$((failures + 1))
}

# --- 0. manifests/agent, without kubectl (python3 and PyYAML: Debian's python3-yaml) ----------
# The agent's source files as written (the enforce Component read from its folder): RBAC verbs
# exactly, hostPath mounts, the DaemonSets' wiring, and the ValidatingAdmissionPolicies naming
# both annotations and both service accounts. kubectl's rendering is checked in 2 and 3.
agent_checked=no
if [ -d "$root/manifests/agent" ]; then
  if ! python3 -c 'import yaml' 2>/dev/null; then
    echo "manifests_test: note: python3 has no yaml module (Debian: python3-yaml): manifests/agent source checks skipped"
  else
    agent_checked=yes
    if ! python3 - "$root" <<'PY'
import glob, json, os, re, sys

import yaml

root = sys.argv[1]
adir = os.path.join(root, "manifests/agent")
failures = []


def fail(msg):
    failures.append(msg)


def docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


objs = []
for p in sorted(glob.glob(os.path.join(adir, "*.yaml")) + glob.glob(os.path.join(adir, "enforce/*.yaml"))):
    if os.path.basename(p) != "kustomization.yaml":
        for d in docs(p):
            d["_file"] = os.path.relpath(p, root)
            objs.append(d)


def find(kind, name=None):
    return [o for o in objs if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]


def one(kind, name):
    f = find(kind, name)
    if len(f) != 1:
        fail(f"manifests/agent: expected one {kind} {name}, found {len(f)}")
        return None
    return f[0]


def sa_user(path, what):
    sas = [d for d in docs(os.path.join(root, path)) if d.get("kind") == "ServiceAccount"]
    if len(sas) != 1:
        fail(f"{path}: expected one ServiceAccount ({what})")
        return None, None
    m = sas[0]["metadata"]
    return f"system:serviceaccount:{m.get('namespace')}:{m['name']}", m


gputopo_user, _ = sa_user("manifests/serviceaccount.yaml", "gputopo's")
agent_user, agent_sa = sa_user("manifests/agent/serviceaccount.yaml", "the agent's")
agent_ns = agent_sa.get("namespace") if agent_sa else None

# Every resource file is in the kustomization; the Component is offered commented out.
with open(os.path.join(adir, "kustomization.yaml")) as f:
    ktext = f.read()
kust = yaml.safe_load(ktext)
listed = set(kust.get("resources", []))
present = {os.path.basename(p) for p in glob.glob(os.path.join(adir, "*.yaml"))} - {"kustomization.yaml"}
if listed != present:
    fail(f"manifests/agent/kustomization.yaml: resources {sorted(listed)} != the files {sorted(present)}")
if not re.search(r"^# components:\n#   - enforce$", ktext, re.M):
    fail("manifests/agent/kustomization.yaml: no commented-out 'components: [enforce]' to enable")
with open(os.path.join(adir, "enforce/kustomization.yaml")) as f:
    comp = yaml.safe_load(f)
if comp.get("kind") != "Component" or set(comp.get("resources", [])) != {
        os.path.basename(p) for p in glob.glob(os.path.join(adir, "enforce/*.yaml"))} - {"kustomization.yaml"}:
    fail("manifests/agent/enforce: must be a kustomize Component listing each of its files")

# Namespaces: the agent's own (privileged: hostPath and uid 0), everything in it.
ns = one("Namespace", agent_ns or "gputopo-agent")
if ns and ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") != "privileged":
    fail(f"manifests/agent: Namespace {agent_ns} must enforce the privileged Pod Security level (hostPath volumes)")
for o in objs:
    if o["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding"):
        continue
    if o["metadata"].get("namespace") != agent_ns:
        fail(f"{o['_file']}: {o['kind']} {o['metadata']['name']} is not in namespace {agent_ns}")

# RBAC: exactly these verbs, nothing else, bound to the agent's service account.
AGENT_RBAC = {("", "nodes"): {"get", "patch"},
              ("", "pods"): {"get", "list", "watch", "patch"},
              ("", "events"): {"create"}}
crs = find("ClusterRole")
if [c["metadata"]["name"] for c in crs] != ["gputopo-agent"] or find("Role"):
    fail(f"manifests/agent: expected the one ClusterRole gputopo-agent and no Role, found {[c['metadata']['name'] for c in crs]}")
for cr in crs:
    g = {}
    for rule in cr.get("rules", []):
        if rule.get("resourceNames") or rule.get("nonResourceURLs"):
            fail(f"manifests/agent: ClusterRole {cr['metadata']['name']}: unexpected {rule}")
        for grp in rule.get("apiGroups", []):
            for res in rule.get("resources", []):
                g.setdefault((grp, res), set()).update(rule.get("verbs", []))
    if g != AGENT_RBAC:
        fail(f"manifests/agent: ClusterRole {cr['metadata']['name']} grants {sorted((k, sorted(v)) for k, v in g.items())}, "
             f"expected exactly {sorted((k, sorted(v)) for k, v in AGENT_RBAC.items())}")
    if "*" in json.dumps(cr.get("rules", [])):
        fail("manifests/agent: the agent's ClusterRole uses a wildcard")
crbs = find("ClusterRoleBinding")
if len(crbs) != 1 or crbs[0]["roleRef"].get("name") != "gputopo-agent" or crbs[0].get("subjects") != [
        {"kind": "ServiceAccount", "name": agent_sa and agent_sa["name"], "namespace": agent_ns}]:
    fail("manifests/agent: ClusterRole gputopo-agent must be bound to the agent's service account, and only to it")

# The DaemonSets.
TS_PATH = "manifests/device-plugin/time-slicing-config.yaml"


def flag(args, name):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def check_daemonset(ds, mode):
    where = f"{ds['_file']}: DaemonSet {ds['metadata']['name']}"
    spec = ds["spec"]["template"]["spec"]
    if spec.get("serviceAccountName") != (agent_sa and agent_sa["name"]):
        fail(f"{where}: serviceAccountName must be the agent's service account")
    if spec.get("priorityClassName") != "system-node-critical":
        fail(f"{where}: priorityClassName must be system-node-critical")
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        fail(f"{where}: needs no host network, PID or IPC namespace")
    terms = spec.get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    exprs = [{(e["key"], e["operator"], tuple(e.get("values", []))) for e in t.get("matchExpressions", [])} for t in terms]
    want_mode = ("gputopo.io/agent-mode", "In" if mode == "enforce" else "NotIn", ("enforce",))
    if not exprs or not all({("nvidia.com/gpu.present", "In", ("true",)), want_mode} <= e for e in exprs):
        fail(f"{where}: every node affinity term must require nvidia.com/gpu.present=true and {want_mode[0]} {want_mode[1]} [enforce]")
    if not any(t.get("key") == "nvidia.com/gpu" and t.get("operator") == "Exists" and not t.get("effect")
               for t in spec.get("tolerations", [])):
        fail(f"{where}: must tolerate nvidia.com/gpu taints (key nvidia.com/gpu, operator Exists, any effect)")
    ctrs = spec.get("containers", [])
    if len(ctrs) != 1:
        fail(f"{where}: expected one container")
        return None
    c = ctrs[0]
    args = c.get("args", [])
    i = args.index("agent") if "agent" in args else -1
    if i < 0 or args[i:i + 2] != ["agent", "run"]:
        fail(f"{where}: args must run `gputopo agent run`, got {args}")
    if flag(args, "--mode") != mode:
        fail(f"{where}: --mode must be {mode}, got {flag(args, '--mode')}")
    node = flag(args, "--node-name") or ""
    m = re.fullmatch(r"\$\((\w+)\)", node)
    env = {e["name"]: e for e in c.get("env", [])}
    if not m or env.get(m.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        fail(f"{where}: --node-name must come from the downward API (spec.nodeName), got {node!r}")
    nvidia_runtime = spec.get("runtimeClassName") == "nvidia" or env.get("NVIDIA_VISIBLE_DEVICES", {}).get("value") == "all"
    if not nvidia_runtime or "utility" not in env.get("NVIDIA_DRIVER_CAPABILITIES", {}).get("value", "").split(","):
        fail(f"{where}: NVML needs the NVIDIA runtime (runtimeClassName nvidia / NVIDIA_VISIBLE_DEVICES=all) "
             f"and NVIDIA_DRIVER_CAPABILITIES with utility")
    lport = (flag(args, "--listen") or "").rpartition(":")[2]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        g = c.get(probe, {}).get("httpGet", {})
        if g.get("path") != path or str(g.get("port")) != lport:
            fail(f"{where}: {probe} must be httpGet {path} on the --listen port {lport!r}, got {g}")
    res = c.get("resources", {})
    if res.get("requests", {}).get("memory") != "32Mi" or res.get("limits", {}).get("memory") not in ("64Mi", "96Mi", "128Mi"):
        fail(f"{where}: memory must be small (request 32Mi, limit 128Mi or less), got {res}")
    sc = c.get("securityContext", {})
    if sc.get("readOnlyRootFilesystem") is not True or sc.get("allowPrivilegeEscalation") is not False \
            or sc.get("privileged") or "ALL" not in sc.get("capabilities", {}).get("drop", []) \
            or sc.get("capabilities", {}).get("add"):
        fail(f"{where}: securityContext must be readOnlyRootFilesystem, no privilege escalation, not privileged, drop ALL, add none")
    # hostPath: exactly kubelet's socket directories under --kubelet-dir, mounted at the same path.
    kdir = (flag(args, "--kubelet-dir") or "/var/lib/kubelet").rstrip("/")
    want = {f"{kdir}/pod-resources": True}
    if mode == "enforce":
        want[f"{kdir}/device-plugins"] = False
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    host = {}
    for vm in c.get("volumeMounts", []):
        v = vols.get(vm["name"], {})
        if "hostPath" in v:
            if v["hostPath"].get("path") != vm["mountPath"] or v["hostPath"].get("type") != "Directory":
                fail(f"{where}: hostPath {v['hostPath']} must be a Directory mounted at its own path, got {vm['mountPath']}")
            host[v["hostPath"]["path"]] = bool(vm.get("readOnly"))
    if any("hostPath" in v for v in vols.values()) and len(host) != len([v for v in vols.values() if "hostPath" in v]):
        fail(f"{where}: a hostPath volume is not mounted")
    if host != want:
        fail(f"{where}: hostPath mounts (path: read-only) must be exactly {want}, got {host}")
    if ds["spec"]["template"]["metadata"].get("labels") != ds["spec"]["selector"].get("matchLabels"):
        fail(f"{where}: the pod labels must equal the selector")
    return c


observe = one("DaemonSet", "gputopo-agent")
enforce = one("DaemonSet", "gputopo-agent-enforce")
if observe:
    if observe["_file"] != "manifests/agent/daemonset.yaml":
        fail("manifests/agent: the observe DaemonSet belongs in daemonset.yaml")
    check_daemonset(observe, "observe")
if enforce:
    if not enforce["_file"].startswith("manifests/agent/enforce/"):
        fail("manifests/agent: the enforce DaemonSet belongs in the Component enforce/")
    c = check_daemonset(enforce, "enforce")
    if c:
        args = c.get("args", [])
        if not flag(args, "--trusted-schedulers"):
            fail(f"{enforce['_file']}: --trusted-schedulers must be given (README.md, the default-scheduler variant)")
        ts = flag(args, "--time-slicing-config")
        if ts and flag(args, "--replicas"):
            fail(f"{enforce['_file']}: --replicas and --time-slicing-config exclude each other")
        if ts:
            spec = enforce["spec"]["template"]["spec"]
            vm = next((m for m in c.get("volumeMounts", []) if ts.startswith(m["mountPath"].rstrip("/") + "/")), None)
            vol = next((v for v in spec.get("volumes", []) if vm and v["name"] == vm["name"]), {})
            rel = ts[len(vm["mountPath"].rstrip("/")) + 1:] if vm else None
            cmname = vol.get("configMap", {}).get("name")
            key = next((i["key"] for i in vol.get("configMap", {}).get("items", []) if i["path"] == rel), None)
            cm = one("ConfigMap", cmname) if cmname else None
            theirs = [d for d in docs(os.path.join(root, TS_PATH)) if d.get("kind") == "ConfigMap"]
            if not cm or key not in cm.get("data", {}):
                fail(f"{enforce['_file']}: --time-slicing-config={ts} is not a key of a ConfigMap of the Component")
            elif len(theirs) != 1 or theirs[0].get("data") != cm.get("data"):
                fail(f"{cm['_file']}: its data must equal {TS_PATH}'s (one time-slicing configuration)")
    # Alike but for what enforce needs: the same pod otherwise.
    if observe:
        def norm(ds):
            d = json.loads(json.dumps(ds))
            d.pop("_file")
            d["metadata"]["name"] = "X"
            for labels in (d["metadata"]["labels"], d["spec"]["selector"]["matchLabels"],
                           d["spec"]["template"]["metadata"]["labels"]):
                labels.pop("app.kubernetes.io/instance", None)
            spec = d["spec"]["template"]["spec"]
            for t in spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
                t["matchExpressions"] = [e for e in t["matchExpressions"] if e["key"] != "gputopo.io/agent-mode"]
            c = spec["containers"][0]
            c["args"] = [a for a in c["args"] if not re.match(r"--(mode|time-slicing-config|replicas|trusted-schedulers)\b", a)]
            extra = {"device-plugins", "time-slicing"}
            c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] not in extra]
            spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in extra]
            return d
        if norm(observe) != norm(enforce):
            fail("manifests/agent: the enforce DaemonSet differs from the observe one in more than its name, "
                 "instance label, agent-mode affinity, mode flags and the device-plugins/time-slicing volumes")
        if observe["spec"]["selector"] == enforce["spec"]["selector"]:
            fail("manifests/agent: the observe and enforce DaemonSets must not share a selector")

# The ValidatingAdmissionPolicies and their bindings.
ASSIGNED, OBSERVED = "gputopo.io/assigned-gpus", "gputopo.io/observed-gpus"
vaps = find("ValidatingAdmissionPolicy")
vapbs = find("ValidatingAdmissionPolicyBinding")
for o in vaps + vapbs:
    if o.get("apiVersion") != "admissionregistration.k8s.io/v1":
        fail(f"{o['_file']}: {o['kind']} {o['metadata']['name']} must be admissionregistration.k8s.io/v1 (GA in 1.30)")
for p in vaps:
    name = p["metadata"]["name"]
    if p["spec"].get("failurePolicy") != "Fail":
        fail(f"{p['_file']}: policy {name}: failurePolicy must be Fail")
    if not any(b["spec"].get("policyName") == name and "Deny" in b["spec"].get("validationActions", []) for b in vapbs):
        fail(f"{p['_file']}: policy {name} has no binding with validationActions [Deny]")
    if not p["spec"].get("validations"):
        fail(f"{p['_file']}: policy {name} validates nothing")


def text_of(p):
    s = p["spec"]
    return "\n".join([v["expression"] for v in s.get("variables", []) + s.get("validations", []) + s.get("matchConditions", [])])


def rules_of(p):
    out = set()
    for r in p["spec"].get("matchConstraints", {}).get("resourceRules", []):
        for res in r.get("resources", []):
            for op in r.get("operations", []):
                out.add((tuple(r.get("apiGroups", [])), res, op))
    return out


guard = one("ValidatingAdmissionPolicy", "gputopo-gpu-annotations")
if guard:
    t = text_of(guard)
    for s in (ASSIGNED, OBSERVED, gputopo_user, agent_user, "has(object.metadata.annotations)", "oldObject != null"):
        if s and s not in t:
            fail(f"{guard['_file']}: gputopo-gpu-annotations does not name {s!r}")
    need = {(("",), "pods", "CREATE"), (("",), "pods", "UPDATE"), (("",), "pods/status", "UPDATE"),
            (("",), "pods/binding", "CREATE"), (("",), "bindings", "CREATE")}
    if not need <= rules_of(guard):
        fail(f"{guard['_file']}: gputopo-gpu-annotations must match {sorted(need - rules_of(guard))} too "
             "(the annotations reach a pod through each)")
    if guard["spec"].get("matchConditions"):
        fail(f"{guard['_file']}: gputopo-gpu-annotations must apply to every request (no matchConditions)")
for name, res, key in (("gputopo-agent-pods", "pods", OBSERVED), ("gputopo-agent-nodes", "nodes", "gputopo.io/topology")):
    p = one("ValidatingAdmissionPolicy", name)
    if not p:
        continue
    mc = " ".join(m["expression"] for m in p["spec"].get("matchConditions", []))
    if not agent_user or f"'{agent_user}'" not in mc:
        fail(f"{p['_file']}: {name} must match the agent's requests only ({agent_user})")
    if (("",), res, "UPDATE") not in rules_of(p):
        fail(f"{p['_file']}: {name} must match {res} UPDATE")
    if key not in text_of(p) or "authentication.kubernetes.io/node-name" not in text_of(p):
        fail(f"{p['_file']}: {name} must limit the agent to {key} and to its own node")

# The image carries the project version, as the scheduler's does.
with open(os.path.join(root, "CMakeLists.txt")) as f:
    m = re.search(r"project\(gputopo\s+VERSION\s+([0-9.]+)", f.read())
for ds in (observe, enforce):
    for c in (ds or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        if m and not str(c.get("image")).endswith(":" + m.group(1)):
            fail(f"{ds['_file']}: image {c.get('image')!r} does not carry the project version {m.group(1)}")

for msg in failures:
    print(f"manifests_test: FAIL: {msg}", file=sys.stderr)
sys.exit(1 if failures else 0)
PY
    then
      failures=$((failures + 1))
    fi
    # The policies' CEL on concrete requests (test/admission_policy_cases.mjs), where node and
    # a CEL implementation for it are at hand: GPUTOPO_CEL_JS names @marcbachmann/cel-js
    # (its folder or lib/index.js; `npm install --prefix DIR @marcbachmann/cel-js`).
    cel_js=${GPUTOPO_CEL_JS:-}
    if [ -d "$cel_js" ]; then cel_js=$cel_js/lib/index.js; fi
    if [ -n "$cel_js" ] && [ -f "$cel_js" ] && command -v node >/dev/null 2>&1; then
      python3 -c 'import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)' \
        "$root/manifests/agent/admission-policy.yaml" > "$tmp/policies.json"
      if ! node "$root/test/admission_policy_cases.mjs" "$tmp/policies.json" "$cel_js"; then
        fail "manifests/agent/admission-policy.yaml: a CEL case above went the wrong way"
      fi
    else
      echo "manifests_test: note: admission policy CEL cases skipped (need node and GPUTOPO_CEL_JS)"
    fi
  fi
fi

kubectl=${KUBECTL:-kubectl}
if ! command -v "$kubectl" >/dev/null 2>&1; then
  if [ "$failures" -ne 0 ]; then
    echo "manifests_test: FAILED (manifests/agent source checks; kubectl not found for the rest)" >&2
    exit 1
  fi
  echo "manifests_test: SKIP: kubectl not found (set KUBECTL=/path/to/kubectl); manifests/agent source checks: $agent_checked"
  exit 77
fi
# Never talk to a cluster, whatever the environment says.
export KUBECONFIG=/dev/null

# --- 1. every YAML file parses ---------------------------------------------------------------
mapfile -t files < <(cd "$root" && find manifests -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
if [ ${#files[@]} -eq 0 ]; then
  fail "no YAML files under manifests/"
fi
for f in "${files[@]}"; do
  if ! "$kubectl" annotate --local --overwrite -f "$root/$f" manifests-test/parsed=true -o name \
      >/dev/null 2>"$tmp/err"; then
    fail "$f does not parse: $(tr '\n' ' ' < "$tmp/err")"
  fi
done

# --- 2. the kustomizations build --------------------------------------------------------------
built=0
build() {  # build <dir> <out.yaml>
  built=$((built + 1))
  if ! "$kubectl" kustomize "$root/$1" > "$2" 2>"$tmp/err"; then
    fail "kubectl kustomize $1: $(tr '\n' ' ' < "$tmp/err")"
    : > "$2"
  fi
}
build manifests "$tmp/main.yaml"
for kind in Namespace ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding ConfigMap \
            Deployment NetworkPolicy; do
  grep -q "^kind: $kind\$" "$tmp/main.yaml" || fail "kubectl kustomize manifests/ has no $kind"
done
grep -q 'kind: KubeSchedulerConfiguration' "$tmp/main.yaml" ||
  fail "kubectl kustomize manifests/ has no ConfigMap holding a KubeSchedulerConfiguration"
variant=manifests/variants/default-scheduler
if [ -f "$root/$variant/kustomization.yaml" ]; then
  build "$variant" "$tmp/variant.yaml"
  for kind in ClusterRole ClusterRoleBinding; do
    grep -q "^kind: $kind\$" "$tmp/variant.yaml" || fail "kubectl kustomize $variant has no $kind"
  done
else
  : > "$tmp/variant.yaml"
fi
if [ -f "$root/manifests/examples/kustomization.yaml" ]; then
  build manifests/examples "$tmp/examples.yaml"
fi
build manifests/monitoring "$tmp/monitoring.yaml"
for kind in PrometheusRule ConfigMap; do
  grep -q "^kind: $kind\$" "$tmp/monitoring.yaml" || fail "kubectl kustomize manifests/monitoring has no $kind"
done
grep -q 'grafana_dashboard: "1"' "$tmp/monitoring.yaml" ||
  fail "manifests/monitoring: the dashboard ConfigMap lacks the grafana_dashboard label"
# A Component of manifests/, enabled as manifests/kustomization.yaml says (uncomment its
# `components:` lines), in a copy of manifests/ at $2, built into $3 (empty if it does not build).
build_with_component() {
  local component=$1 copy=$2 out=$3
  : > "$out"
  [ -f "$root/manifests/$component/kustomization.yaml" ] || return 0
  cp -r "$root/manifests" "$copy"
  sed -i -e 's|^# components:$|components:|' -e "s|^#   - $component\$|  - $component|" \
    "$copy/kustomization.yaml"
  if ! grep -q "^  - $component\$" "$copy/kustomization.yaml"; then
    fail "manifests/kustomization.yaml has no commented-out 'components: [$component]' to enable"
    return 0
  fi
  built=$((built + 1))
  if ! "$kubectl" kustomize "$copy" > "$out" 2>"$tmp/err"; then
    fail "kubectl kustomize manifests/ with $component: $(tr '\n' ' ' < "$tmp/err")"
    : > "$out"
  fi
}
# Kubernetes 1.24, and all-pod mode.
build_with_component variants/kube-1.24 "$tmp/manifests-1.24" "$tmp/kube124.yaml"
build_with_component variants/all-pods "$tmp/manifests-all-pods" "$tmp/allpods.yaml"
build_with_component variants/filter-decides "$tmp/manifests-filter-decides" "$tmp/decides.yaml"

# The node agent: manifests/agent/, and with its enforce Component enabled as its
# kustomization.yaml says (uncomment `components:`), in a copy.
: > "$tmp/agent.yaml"
: > "$tmp/agent-enforce.yaml"
if [ -f "$root/manifests/agent/kustomization.yaml" ]; then
  build manifests/agent "$tmp/agent.yaml"
  for kind in Namespace ServiceAccount ClusterRole ClusterRoleBinding DaemonSet \
              ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding; do
    grep -q "^kind: $kind\$" "$tmp/agent.yaml" || fail "kubectl kustomize manifests/agent has no $kind"
  done
  cp -r "$root/manifests/agent" "$tmp/agent-enforce"
  sed -i -e 's|^# components:$|components:|' -e 's|^#   - enforce$|  - enforce|' \
    "$tmp/agent-enforce/kustomization.yaml"
  if ! grep -q '^  - enforce$' "$tmp/agent-enforce/kustomization.yaml"; then
    fail "manifests/agent/kustomization.yaml has no commented-out 'components: [enforce]' to enable"
  else
    built=$((built + 1))
    if ! "$kubectl" kustomize "$tmp/agent-enforce" > "$tmp/agent-enforce.yaml" 2>"$tmp/err"; then
      fail "kubectl kustomize manifests/agent with enforce: $(tr '\n' ' ' < "$tmp/err")"
      : > "$tmp/agent-enforce.yaml"
    fi
  fi
fi

# --- 3 and 4. semantic checks ------------------------------------------------------------------
if ! KUBECTL_BIN="$kubectl" python3 - "$root" "$tmp" "$gputopo_bin" <<'PY'
import glob, json, os, re, socket, subprocess, sys, time, urllib.request

root, tmp, gputopo_bin = sys.argv[1], sys.argv[2], sys.argv[3]
kubectl = os.environ["KUBECTL_BIN"]
failures = []


def fail(msg):
    failures.append(msg)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def objects_of(path):
    """The objects of a YAML file, as JSON, via kubectl (no API server needed)."""
    r = run([kubectl, "annotate", "--local", "--overwrite", "-f", path, "manifests-test/x=1", "-o", "json"])
    if r.returncode != 0:
        fail(f"{os.path.relpath(path, root)}: {r.stderr.strip()}")
        return []
    out, dec, i, objs = r.stdout, json.JSONDecoder(), 0, []
    while True:
        while i < len(out) and out[i].isspace():
            i += 1
        if i >= len(out):
            break
        obj, i = dec.raw_decode(out, i)
        meta = obj.get("metadata", {})
        meta.get("annotations", {}).pop("manifests-test/x", None)
        if not meta.get("annotations"):
            meta.pop("annotations", None)
        if not meta:  # kubectl added it (a KubeSchedulerConfiguration has none)
            obj.pop("metadata", None)
        objs.append(obj)
    return objs


def strict(path, what):
    """kubectl annotate accepts a repeated mapping key (the last one wins); kustomize does not."""
    kdir = os.path.join(tmp, "strict")
    os.makedirs(kdir, exist_ok=True)
    with open(os.path.join(kdir, "kustomization.yaml"), "w") as f:
        f.write(f"resources:\n- {json.dumps(os.path.abspath(path))}\n")
    r = run([kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", kdir])
    if r.returncode != 0:
        fail(f"{what}: {' '.join(r.stderr.split())[-400:]}")


def yaml_text_to_json(text, what):
    """Any YAML document (no kind needed) as JSON: wrapped in an object kubectl can read."""
    path = os.path.join(tmp, "wrapped.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Wrapped\nmetadata:\n  name: wrapped\nspec:\n")
        f.write("".join("  " + line + "\n" for line in text.splitlines()))
    strict(path, what + " (wrapped: its line numbers are the text's + 5)")
    objs = objects_of(path)
    if len(objs) != 1:
        fail(f"{what}: not one YAML document")
        return None
    return objs[0].get("spec")


def find(objs, kind, name=None, namespace=None):
    return [o for o in objs if o.get("kind") == kind
            and (name is None or o.get("metadata", {}).get("name") == name)
            and (namespace is None or o.get("metadata", {}).get("namespace") == namespace)]


def one(objs, kind, name=None, namespace=None, where="manifests/"):
    found = find(objs, kind, name, namespace)
    if len(found) != 1:
        fail(f"{where}: expected one {kind}{' ' + name if name else ''}, found {len(found)}")
        return None
    return found[0]


def parse_duration(s):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", str(s))
    return None if not m else int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


# The oldest Kubernetes minor version gputopo supports (README.md, "Kubernetes versions").
OLDEST_MINOR = 24
# KubeSchedulerConfiguration API versions: the Kubernetes minors whose kube-scheduler reads each
# (v1beta3: 1.23 to 1.28, removed in 1.29; v1: from 1.25). None: still served.
KSC_APIS = {"kubescheduler.config.k8s.io/v1beta3": (23, 28),
            "kubescheduler.config.k8s.io/v1": (25, None)}
# Fields kube-scheduler's strict decoder accepts, each with the first minor that knows it (0:
# every supported one): an unknown or misspelt field, or one newer than the oldest scheduler the
# file is for, stops that scheduler at start.
KSC_FIELDS = {"apiVersion": 0, "kind": 0, "parallelism": 0, "leaderElection": 0,
              "clientConnection": 0, "enableProfiling": 0, "enableContentionProfiling": 0,
              "percentageOfNodesToScore": 0, "podInitialBackoffSeconds": 0,
              "podMaxBackoffSeconds": 0, "profiles": 0, "extenders": 0,
              "delayCacheUntilActive": 28}  # kubernetes#115754
LEADER_FIELDS = dict.fromkeys({"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                               "resourceLock", "resourceName", "resourceNamespace"}, 0)
CLIENT_FIELDS = dict.fromkeys({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"}, 0)
PROFILE_FIELDS = {"schedulerName": 0, "plugins": 0, "pluginConfig": 0}
# Per profile only in v1, from 1.26 (kubernetes#112521).
PROFILE_FIELDS_V1 = dict(PROFILE_FIELDS, percentageOfNodesToScore=26)
EXTENDER_FIELDS = dict.fromkeys({"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb",
                                 "weight", "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout",
                                 "nodeCacheCapable", "managedResources", "ignorable"}, 0)
MANAGED_FIELDS = {"name": 0, "ignoredByScheduler": 0}


def unknown(obj, allowed, where, oldest):
    for k in sorted(obj):
        if k not in allowed:
            fail(f"{where}: field '{k}' is unknown to kube-scheduler (strict decoding)")
        elif allowed[k] > oldest:
            fail(f"{where}: field '{k}' needs kube-scheduler 1.{allowed[k]}, but this configuration "
                 f"is for 1.{oldest} and later (strict decoding stops older ones)")


def image_minor(image):
    """The minor version of registry.k8s.io/kube-scheduler:v1.M.P, or None."""
    m = re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v1\.(\d+)\.\d+", str(image))
    return int(m.group(1)) if m else None


def check_ksc(ksc, where, scheduler_name, minors, all_pods=False):
    """`minors`: (oldest, newest or None) Kubernetes minors whose kube-scheduler must load it.
    `all_pods`: the all-pod variant (no managedResources, weight 10).
    Returns the extender's (host, port) and the leader election settings."""
    if not isinstance(ksc, dict):
        fail(f"{where}: not a KubeSchedulerConfiguration")
        return None, {}
    oldest, newest = minors
    api = ksc.get("apiVersion")
    served = KSC_APIS.get(api)
    if ksc.get("kind") != "KubeSchedulerConfiguration" or not served:
        fail(f"{where}: must be a KubeSchedulerConfiguration of {sorted(KSC_APIS)}, got {api}")
        served = (0, None)
    elif served[0] > oldest or (served[1] is not None and (newest is None or newest > served[1])):
        fail(f"{where}: {api} is read by kube-scheduler 1.{served[0]} to "
             f"{'today' if served[1] is None else '1.' + str(served[1])}, but this file is for "
             f"1.{oldest} to {'today' if newest is None else '1.' + str(newest)}")
    unknown(ksc, KSC_FIELDS, where, oldest)
    le = ksc.get("leaderElection", {})
    unknown(le, LEADER_FIELDS, where + " leaderElection", oldest)
    unknown(ksc.get("clientConnection", {}), CLIENT_FIELDS, where + " clientConnection", oldest)
    if le.get("leaderElect") is not True:
        fail(f"{where}: leaderElection.leaderElect must be true (several replicas)")
    profiles = ksc.get("profiles", [])
    for p in profiles:
        unknown(p, PROFILE_FIELDS_V1 if str(api).endswith("/v1") else PROFILE_FIELDS,
                where + " profile", oldest)
    if scheduler_name not in [p.get("schedulerName") for p in profiles]:
        fail(f"{where}: no profile with schedulerName {scheduler_name}")
    exts = ksc.get("extenders", [])
    if len(exts) != 1:
        fail(f"{where}: expected one extender, found {len(exts)}")
        return None, le
    e = exts[0]
    unknown(e, EXTENDER_FIELDS, where + " extender", oldest)
    m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/?", e.get("urlPrefix", ""))
    if not m:
        fail(f"{where}: urlPrefix must be http://127.0.0.1:PORT (the sidecar), got {e.get('urlPrefix')!r}")
    for key, want in (("filterVerb", "filter"), ("prioritizeVerb", "prioritize"), ("bindVerb", "bind"),
                      ("preemptVerb", "preempt")):
        if e.get(key) != want:
            fail(f"{where}: {key} must be {want!r}, got {e.get(key)!r}")
    w = e.get("weight")
    if not isinstance(w, int) or w < 5:
        fail(f"{where}: weight must be an integer >= 5 (see the arithmetic in the comment), got {w!r}")
    if e.get("nodeCacheCapable") is not True:
        fail(f"{where}: nodeCacheCapable must be true")
    if e.get("ignorable") is not False:
        fail(f"{where}: ignorable must be false")
    t = parse_duration(e.get("httpTimeout"))
    if t is None or not 1 <= t <= 30:
        fail(f"{where}: httpTimeout must be a duration of 1s..30s, got {e.get('httpTimeout')!r}")
    mr = e.get("managedResources", [])
    for r in mr:
        unknown(r, MANAGED_FIELDS, where + " managedResources", oldest)
    if all_pods:
        if mr:
            fail(f"{where}: all-pod mode must not set managedResources (gputopo sees every pod)")
        if w != 10:
            fail(f"{where}: all-pod mode needs extender weight 10, got {w!r}")
    elif [r.get("name") for r in mr] != ["nvidia.com/gpu"] or mr[0].get("ignoredByScheduler", False) is not False:
        fail(f"{where}: managedResources must be [{{name: nvidia.com/gpu, ignoredByScheduler: false}}]")
    return (int(m.group(1)) if m else None), le


def flag(args, name):
    """The value of --name=V or --name V in an argument list, else None."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def check_container_security(c, pod_sc, where):
    sc = c.get("securityContext", {})
    if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
        fail(f"{where}: runAsNonRoot is not set")
    if sc.get("readOnlyRootFilesystem") is not True:
        fail(f"{where}: readOnlyRootFilesystem must be true")
    if sc.get("allowPrivilegeEscalation") is not False:
        fail(f"{where}: allowPrivilegeEscalation must be false")
    if "ALL" not in sc.get("capabilities", {}).get("drop", []):
        fail(f"{where}: capabilities must drop ALL")


def check_gputopo_container(c, port, host, where, admin_host=None):
    """admin_host: /metrics, /debug and the probes must be on --admin-listen=admin_host:PORT."""
    args = c.get("args", [])
    if not args or args[0] != "serve":
        fail(f"{where}: args must start with 'serve', got {args}")
    listen = flag(args, "--listen") or ""
    if listen != f"{host}:{port}":
        fail(f"{where}: --listen must be {host}:{port} (the urlPrefix port), got {listen!r}")
    if flag(args, "--log-format") not in ("json", "text"):
        fail(f"{where}: --log-format must be json or text")
    probe_port = port
    if admin_host is not None:
        admin = flag(args, "--admin-listen") or ""
        m = re.fullmatch(re.escape(admin_host) + r":([0-9]+)", admin)
        if not m or int(m.group(1)) == port:
            fail(f"{where}: --admin-listen must be {admin_host}:PORT, apart from the verbs, got {admin!r}")
        else:
            probe_port = int(m.group(1))
        if (flag(args, "--admin-auth") or "kubernetes") != "kubernetes":
            fail(f"{where}: --admin-auth must stay kubernetes on a pod-IP listener")
    probes = {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    for probe, path in probes.items():
        get = c.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or get.get("port") not in (probe_port, str(probe_port)):
            fail(f"{where}: {probe} must be httpGet {path} on port {probe_port}, got {get}")
    lim = c.get("resources", {}).get("limits", {})
    if "memory" not in lim:
        fail(f"{where}: no memory limit")


def mounted_file(container, volumes, path):
    """The volume providing file `path` in `container`: (volume, path inside the volume)."""
    for vm in container.get("volumeMounts", []):
        mp = vm["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            vol = next((v for v in volumes if v["name"] == vm["name"]), None)
            return vol, path[len(mp):].lstrip("/")
    return None, None


def load_all(pattern):
    objs = []
    for p in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
        objs += objects_of(p)
    return objs


def list_from(yaml_path):
    return objects_of(yaml_path) if os.path.getsize(yaml_path) else []


# ---------------------------------------------------------------- repeated keys, every file
for path in sorted(glob.glob(os.path.join(root, "manifests/**/*.y*ml"), recursive=True)):
    rel = os.path.relpath(path, root)
    if os.path.basename(path) == "kustomization.yaml":
        continue  # read by the kustomize builds
    objs = objects_of(path)
    if objs and all(o.get("metadata", {}).get("name") for o in objs):
        strict(path, rel)
    elif len(objs) == 1:  # a KubeSchedulerConfiguration: no metadata
        with open(path) as f:
            yaml_text_to_json(f.read(), rel)

# ---------------------------------------------------------------- the second scheduler
main = list_from(os.path.join(tmp, "main.yaml"))
ns = one(main, "Namespace")
ns_name = ns["metadata"]["name"] if ns else "gputopo-system"
for o in main:
    if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        if o["metadata"].get("namespace") not in (ns_name, "kube-system"):
            fail(f"manifests/: {o['kind']} {o['metadata']['name']} has namespace "
                 f"{o['metadata'].get('namespace')!r}, expected {ns_name} (or kube-system)")

dep = one(main, "Deployment")
cms = [c for c in find(main, "ConfigMap") if any("KubeSchedulerConfiguration" in v for v in c.get("data", {}).values())]
if len(cms) != 1:
    fail(f"manifests/: expected one ConfigMap holding a KubeSchedulerConfiguration, found {len(cms)}")
port, le, main_ksc = None, {}, None
V1, V1BETA3 = "kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3"
if dep and cms:
    cm = cms[0]
    spec = dep["spec"]["template"]["spec"]
    if dep["spec"].get("replicas", 1) < 2:
        fail("manifests/: the Deployment should run at least 2 replicas")
    containers = {c["name"]: c for c in spec.get("containers", [])}
    ks, gt = containers.get("kube-scheduler"), containers.get("gputopo")
    if not ks or not gt:
        fail(f"manifests/: the Deployment needs containers kube-scheduler and gputopo, has {sorted(containers)}")
    else:
        if image_minor(ks.get("image")) is None or image_minor(ks.get("image")) < KSC_APIS[V1][0]:
            fail(f"manifests/: kube-scheduler image {ks.get('image')!r}: expected "
                 f"registry.k8s.io/kube-scheduler:v1.M.P with M >= {KSC_APIS[V1][0]} (its configuration is v1)")
        cfg_path = flag(ks.get("command", []) + ks.get("args", []), "--config")
        vol, rel = mounted_file(ks, spec.get("volumes", []), cfg_path or "")
        if not cfg_path or not vol or vol.get("configMap", {}).get("name") != cm["metadata"]["name"]:
            fail(f"manifests/: kube-scheduler --config={cfg_path} is not a file of ConfigMap {cm['metadata']['name']}")
        else:
            items = vol["configMap"].get("items")
            key = next((i["key"] for i in items if i["path"] == rel), None) if items else rel
            if key not in cm.get("data", {}):
                fail(f"manifests/: --config={cfg_path} maps to key {key!r}, not in the ConfigMap")
            else:
                main_ksc = yaml_text_to_json(cm["data"][key], f"ConfigMap {cm['metadata']['name']} {key}")
                # The default configuration: every kube-scheduler that reads v1.
                port, le = check_ksc(main_ksc, f"ConfigMap {cm['metadata']['name']} {key}",
                                     "gputopo-scheduler", (KSC_APIS[V1][0], None))
        for probe in ("livenessProbe", "readinessProbe"):
            g = ks.get(probe, {}).get("httpGet", {})
            if g.get("port") not in (10259, "10259") or g.get("scheme") != "HTTPS":
                fail(f"manifests/: kube-scheduler {probe} must be HTTPS on 10259, got {g}")
        if port is not None:
            check_gputopo_container(gt, port, "127.0.0.1", "manifests/ gputopo container",
                                    admin_host="0.0.0.0")
        pod_sc = spec.get("securityContext", {})
        for c in (ks, gt):
            check_container_security(c, pod_sc, f"manifests/ container {c['name']}")
    sa = spec.get("serviceAccountName")
    if not find(main, "ServiceAccount", sa, dep["metadata"]["namespace"]):
        fail(f"manifests/: the Deployment's service account {sa!r} is not defined")

    def bound(role_kind, role_name, binding_kind, namespace=None):
        for b in find(main, binding_kind, namespace=namespace):
            if b["roleRef"]["kind"] == role_kind and b["roleRef"]["name"] == role_name and any(
                    s.get("kind") == "ServiceAccount" and s.get("name") == sa
                    and s.get("namespace") == dep["metadata"]["namespace"] for s in b.get("subjects", [])):
                return True
        return False

    for role in ("gputopo", "system:kube-scheduler", "system:volume-scheduler"):
        if not bound("ClusterRole", role, "ClusterRoleBinding"):
            fail(f"manifests/: ClusterRole {role} is not bound to the service account {sa}")
    if not bound("Role", "extension-apiserver-authentication-reader", "RoleBinding", "kube-system"):
        fail("manifests/: no RoleBinding in kube-system to extension-apiserver-authentication-reader")
    # The lease named in the configuration, in its namespace.
    lease_ns, lease = le.get("resourceNamespace"), le.get("resourceName")
    if lease_ns != ns_name or lease != "gputopo-scheduler":
        fail(f"manifests/: leader election lease must be {ns_name}/gputopo-scheduler, got {lease_ns}/{lease}")
    ok = {"create": False, "get": False, "update": False}
    for r in find(main, "Role", namespace=lease_ns):
        if not bound("Role", r["metadata"]["name"], "RoleBinding", lease_ns):
            continue
        for rule in r.get("rules", []):
            if "coordination.k8s.io" in rule.get("apiGroups", []) and "leases" in rule.get("resources", []):
                names = rule.get("resourceNames")
                for v in rule.get("verbs", []):
                    if v in ok and (v == "create" or not names or lease in names):
                        ok[v] = True
    for v, have in ok.items():
        if not have:
            fail(f"manifests/: no bound Role in {lease_ns} allows leases {v} on {lease}")
    # NetworkPolicy selects the scheduler pods.
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    nps = find(main, "NetworkPolicy", namespace=dep["metadata"]["namespace"])
    if not any(set(np["spec"].get("podSelector", {}).get("matchLabels", {}).items()) <= set(labels.items())
               and "Ingress" in np["spec"].get("policyTypes", []) for np in nps):
        fail("manifests/: no NetworkPolicy restricting ingress to the scheduler pods")

# gputopo's ClusterRole: exactly what it needs, no wildcards.
REQUIRED = {("", "nodes"): {"get", "list", "watch"},
            ("", "pods"): {"get", "list", "watch"},
            ("", "pods/binding"): {"create"},
            ("policy", "poddisruptionbudgets"): {"list", "watch"},
            ("authentication.k8s.io", "tokenreviews"): {"create"},
            ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
            ("", "events"): {"create"},
            ("events.k8s.io", "events"): {"create"}}


def grants(role):
    g = {}
    for rule in role.get("rules", []):
        for grp in rule.get("apiGroups", []):
            for res in rule.get("resources", []):
                g.setdefault((grp, res), set()).update(rule.get("verbs", []))
    return g


cr = one(main, "ClusterRole", "gputopo")
if cr:
    g = grants(cr)
    if g != REQUIRED:
        fail(f"manifests/: ClusterRole gputopo grants {sorted((k, sorted(v)) for k, v in g.items())}, "
             f"expected exactly {sorted((k, sorted(v)) for k, v in REQUIRED.items())}")
    if any("*" in str(rule) for rule in cr.get("rules", [])):
        fail("manifests/: ClusterRole gputopo uses a wildcard")

# ---------------------------------------------------------------- default-scheduler variant
vdir = os.path.join(root, "manifests/variants/default-scheduler")
if os.path.isdir(vdir):
    where = "manifests/variants/default-scheduler"
    variant = list_from(os.path.join(tmp, "variant.yaml"))
    vcr = one(variant, "ClusterRole", "gputopo", where=where)
    if vcr and cr and grants(vcr) != grants(cr):
        fail(f"{where}: ClusterRole gputopo differs from manifests/rbac.yaml")
    if vcr and not any(b["roleRef"]["name"] == "gputopo" and b.get("subjects") for b in find(variant, "ClusterRoleBinding")):
        fail(f"{where}: ClusterRole gputopo is not bound")
    cfgs = [o for o in load_all("manifests/variants/default-scheduler/**/*.yaml") if o.get("kind") == "KubeSchedulerConfiguration"]
    pods = [o for o in load_all("manifests/variants/default-scheduler/*.yaml") if o.get("kind") == "Pod"]
    by_api = {c.get("apiVersion"): c for c in cfgs}
    if len(cfgs) != 2 or set(by_api) != {V1, V1BETA3} or len(pods) != 1:
        fail(f"{where}: expected a v1 and a v1beta3 KubeSchedulerConfiguration and one static Pod, "
             f"found {sorted(map(str, by_api))} and {len(pods)} Pods")
    else:
        vport, _ = check_ksc(by_api[V1], where + " scheduler-config.yaml", "default-scheduler",
                             (KSC_APIS[V1][0], None))
        check_ksc(by_api[V1BETA3], where + " scheduler-config-v1beta3.yaml", "default-scheduler",
                  (OLDEST_MINOR, OLDEST_MINOR))
        if dict(by_api[V1], apiVersion=None) != dict(by_api[V1BETA3], apiVersion=None):
            fail(f"{where}: scheduler-config.yaml and scheduler-config-v1beta3.yaml differ in more than apiVersion")
        if not by_api[V1].get("clientConnection", {}).get("kubeconfig"):
            fail(f"{where}: with --config, clientConnection.kubeconfig must name the scheduler's kubeconfig")
        pod = pods[0]
        spec = pod["spec"]
        if spec.get("hostNetwork") is not True:
            fail(f"{where}: the static pod must keep hostNetwork: true")
        containers = {c["name"]: c for c in spec.get("containers", [])}
        ks, gt = containers.get("kube-scheduler"), containers.get("gputopo")
        if not ks or not gt:
            fail(f"{where}: static pod needs containers kube-scheduler and gputopo")
        else:
            cfg_path = flag(ks.get("command", []), "--config")
            vol, _ = mounted_file(ks, spec.get("volumes", []), cfg_path or "")
            if not vol or vol.get("hostPath", {}).get("path") != cfg_path:
                fail(f"{where}: kube-scheduler --config={cfg_path} is not mounted from the host")
            if vport is not None:
                check_gputopo_container(gt, vport, "127.0.0.1", where + " gputopo container")
                for probe in ("livenessProbe", "readinessProbe"):
                    if gt.get(probe, {}).get("httpGet", {}).get("host") != "127.0.0.1":
                        fail(f"{where}: gputopo {probe} must probe host 127.0.0.1 (hostNetwork, loopback listener)")
            kc = flag(gt.get("args", []), "--kubeconfig")
            vol, _ = mounted_file(gt, spec.get("volumes", []), kc or "")
            if not kc or not vol:
                fail(f"{where}: gputopo --kubeconfig={kc} is not mounted (a static pod has no service account)")
            check_container_security(gt, spec.get("securityContext", {}), where + " gputopo container")
        # The kubeadm patch, applied to the full manifest, must change nothing.
        for patch in glob.glob(os.path.join(vdir, "kubeadm-patches", "kube-scheduler*.yaml")):
            static = os.path.join(vdir, "kube-scheduler.yaml")
            r = run([kubectl, "patch", "--local", "-f", static, "--type", "strategic",
                     "--patch-file", patch, "-o", "json"])
            if r.returncode != 0:
                fail(f"{where}: {os.path.basename(patch)} does not apply: {r.stderr.strip()}")
            elif json.loads(r.stdout) != pod:
                fail(f"{where}: {os.path.basename(patch)} disagrees with kube-scheduler.yaml")

def ksc_key(objs):
    """The (ConfigMap, key) holding the KubeSchedulerConfiguration, or (None, None)."""
    for c in find(objs, "ConfigMap"):
        for k, v in c.get("data", {}).items():
            if "KubeSchedulerConfiguration" in v:
                return c, k
    return None, None


def normalized_except(objs, container, blank):
    """`objs` sorted, with the KubeSchedulerConfiguration blanked and `blank(ctr)` applied to each
    Deployment container named `container`: what a Component may change, taken out."""
    out = json.loads(json.dumps(objs))
    c, k = ksc_key(out)
    if c:
        c["data"][k] = "(the KubeSchedulerConfiguration)"
    for d in find(out, "Deployment"):
        for ctr in d["spec"]["template"]["spec"].get("containers", []):
            if ctr["name"] == container:
                blank(ctr)
    return sorted(out, key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]))


def gputopo_args(objs, prefix):
    """The arguments of every Deployment container named gputopo that start with `prefix`."""
    return [a for d in find(objs, "Deployment")
            for ctr in d["spec"]["template"]["spec"].get("containers", []) if ctr["name"] == "gputopo"
            for a in ctr.get("args", []) if a.startswith(prefix)]


# ---------------------------------------------------------------- Kubernetes 1.24 component
# manifests/ with variants/kube-1.24 enabled: the same objects but for the ConfigMap's
# KubeSchedulerConfiguration (v1beta3 instead of v1, the same settings) and the kube-scheduler
# image (1.24's).
if os.path.isdir(os.path.join(root, "manifests/variants/kube-1.24")):
    where = "manifests/variants/kube-1.24"
    k124 = list_from(os.path.join(tmp, "kube124.yaml"))

    # `main` is manifests/ as built; compare object by object, normalized.
    def normalized(objs):
        return normalized_except(objs, "kube-scheduler",
                                 lambda ctr: ctr.update(image="(the kube-scheduler image)"))

    if not k124:
        fail(f"{where}: manifests/ with this component does not build")
    else:
        if normalized(k124) != normalized(main):
            fail(f"{where}: changes more than the scheduler configuration and the kube-scheduler image")
        c, k = ksc_key(k124)
        ksc124 = yaml_text_to_json(c["data"][k], f"{where} ConfigMap {k}") if c else None
        check_ksc(ksc124, f"{where} ConfigMap {k}", "gputopo-scheduler", (OLDEST_MINOR, OLDEST_MINOR))
        if isinstance(ksc124, dict) and ksc124.get("apiVersion") != V1BETA3:
            fail(f"{where}: the configuration must be {V1BETA3} (kube-scheduler 1.24 has no v1)")
        if main_ksc is not None and isinstance(ksc124, dict) and \
                dict(ksc124, apiVersion=None) != dict(main_ksc, apiVersion=None):
            fail(f"{where}: its configuration differs from manifests/kube-scheduler-config.yaml in more than apiVersion")
        imgs = [ctr.get("image") for d in find(k124, "Deployment")
                for ctr in d["spec"]["template"]["spec"].get("containers", []) if ctr["name"] == "kube-scheduler"]
        if [image_minor(i) for i in imgs] != [OLDEST_MINOR]:
            fail(f"{where}: the kube-scheduler image must be 1.{OLDEST_MINOR}'s, got {imgs}")

# ---------------------------------------------------------------- all-pod mode component
# manifests/ with variants/all-pods enabled: the same objects but for the KubeSchedulerConfiguration
# (no managedResources, weight 10, the resource score plugins off) and gputopo's --policy=pack.
if os.path.isdir(os.path.join(root, "manifests/variants/all-pods")):
    where = "manifests/variants/all-pods"
    allpods = list_from(os.path.join(tmp, "allpods.yaml"))

    def without_mode(objs):
        return normalized_except(objs, "gputopo", lambda ctr: ctr.update(
            args=[a for a in ctr.get("args", []) if not a.startswith("--policy")]))

    if not allpods:
        fail(f"{where}: manifests/ with this component does not build")
    else:
        if without_mode(allpods) != without_mode(main):
            fail(f"{where}: changes more than the scheduler configuration and gputopo's --policy")
        c, k = ksc_key(allpods)
        ksc_all = yaml_text_to_json(c["data"][k], f"{where} ConfigMap {k}") if c else None
        check_ksc(ksc_all, f"{where} ConfigMap {k}", "gputopo-scheduler", (25, None), all_pods=True)
        if isinstance(ksc_all, dict) and main_ksc is not None:
            disabled = [p.get("plugins", {}).get("score", {}).get("disabled", [])
                        for p in ksc_all.get("profiles", [])]
            if disabled != [[{"name": "NodeResourcesFit"}, {"name": "NodeResourcesBalancedAllocation"}]]:
                fail(f"{where}: the profile must disable exactly NodeResourcesFit and "
                     f"NodeResourcesBalancedAllocation at score, got {disabled}")
            same = json.loads(json.dumps(ksc_all))
            for p in same.get("profiles", []):
                p.pop("plugins", None)
            for e in same.get("extenders", []):
                e["weight"] = main_ksc["extenders"][0].get("weight")
                e["managedResources"] = main_ksc["extenders"][0].get("managedResources")
            if same != main_ksc:
                fail(f"{where}: its configuration differs from manifests/kube-scheduler-config.yaml "
                     f"in more than plugins, weight and managedResources")
        policies = gputopo_args(allpods, "--policy")
        if policies != ["--policy=pack"]:
            fail(f"{where}: gputopo must run with --policy=pack, got {policies}")
        if not os.path.isfile(os.path.join(root, "policies/presets/pack.json")):
            fail(f"{where}: the pack preset (policies/presets/pack.json) is missing")

# ---------------------------------------------------------------- filter-decides component
# manifests/ with variants/filter-decides enabled: the same objects, the same
# KubeSchedulerConfiguration, and gputopo's arguments with --filter-decides added once.
if os.path.isdir(os.path.join(root, "manifests/variants/filter-decides")):
    where = "manifests/variants/filter-decides"
    decides = list_from(os.path.join(tmp, "decides.yaml"))

    def without_decides(objs):
        return normalized_except(objs, "gputopo", lambda ctr: ctr.update(
            args=[a for a in ctr.get("args", []) if a != "--filter-decides"]))

    if not decides:
        fail(f"{where}: manifests/ with this component does not build")
    else:
        if without_decides(decides) != without_decides(main):
            fail(f"{where}: changes more than gputopo's --filter-decides")
        c_main, k_main = ksc_key(main)
        c_dec, k_dec = ksc_key(decides)
        if not c_dec or not c_main or c_dec["data"][k_dec] != c_main["data"][k_main]:
            fail(f"{where}: the KubeSchedulerConfiguration must stay as manifests/ ships it")
        flags = gputopo_args(decides, "--filter-decides")
        if flags != ["--filter-decides"]:
            fail(f"{where}: gputopo must run with --filter-decides once, got {flags}")

# ---------------------------------------------------------------- the node agent, as built
# (its source files are checked in 0, without kubectl): the objects kubectl renders, the
# Component adding exactly the enforce DaemonSet and its ConfigMap, the common label.
if os.path.isdir(os.path.join(root, "manifests/agent")):
    where = "manifests/agent"
    agent = list_from(os.path.join(tmp, "agent.yaml"))
    agent_enf = list_from(os.path.join(tmp, "agent-enforce.yaml"))

    def keyed(objs):
        return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}

    a, e = keyed(agent), keyed(agent_enf)
    if not agent or not agent_enf:
        fail(f"{where}: does not build (with and without the enforce Component)")
    else:
        added = sorted(set(e) - set(a))
        if set(a) - set(e) or any(a[k] != e[k] for k in a) or [k[0] for k in added] != ["ConfigMap", "DaemonSet"]:
            fail(f"{where}: the enforce Component must add one DaemonSet and one ConfigMap and change nothing, added {added}")
        for o in agent_enf:
            if o["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") != "gputopo":
                fail(f"{where}: {o['kind']} {o['metadata']['name']} lacks the label app.kubernetes.io/part-of=gputopo")
        for d in find(agent_enf, "DaemonSet"):
            sa = d["spec"]["template"]["spec"].get("serviceAccountName")
            if not find(agent_enf, "ServiceAccount", sa, d["metadata"]["namespace"]):
                fail(f"{where}: DaemonSet {d['metadata']['name']}: service account {sa!r} is not defined in its namespace")
            for v in d["spec"]["template"]["spec"].get("volumes", []):
                cmn = v.get("configMap", {}).get("name")
                if cmn and not find(agent_enf, "ConfigMap", cmn, d["metadata"]["namespace"]):
                    fail(f"{where}: DaemonSet {d['metadata']['name']} mounts ConfigMap {cmn!r}, not in its namespace")
        for b in find(agent_enf, "ValidatingAdmissionPolicyBinding"):
            if not find(agent_enf, "ValidatingAdmissionPolicy", b["spec"].get("policyName")):
                fail(f"{where}: binding {b['metadata']['name']} names no policy of manifests/agent")

# ---------------------------------------------------------------- device plugin
ts = [o for o in load_all("manifests/device-plugin/*.yaml") if o.get("kind") == "ConfigMap"]
if not ts:
    fail("manifests/device-plugin: no time-slicing ConfigMap")
for cm in ts:
    for key, text in cm.get("data", {}).items():
        where = f"manifests/device-plugin ConfigMap {cm['metadata']['name']} {key}"
        doc = yaml_text_to_json(text, where) or {}
        tsl = doc.get("sharing", {}).get("timeSlicing", {})
        res = tsl.get("resources", [])
        if doc.get("version") != "v1":
            fail(f"{where}: version must be v1")
        if tsl.get("renameByDefault") is not False or tsl.get("failRequestsGreaterThanOne") is not False:
            fail(f"{where}: renameByDefault and failRequestsGreaterThanOne must be false")
        if not any(r.get("name") == "nvidia.com/gpu" and isinstance(r.get("replicas"), int) and r["replicas"] > 1 for r in res):
            fail(f"{where}: no nvidia.com/gpu resource with replicas > 1")

# ---------------------------------------------------------------- examples
presets = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(root, "policies/presets/*.json"))}
profiles = set()
for p in glob.glob(os.path.join(root, "topology/profiles/*.json")):
    with open(p) as f:
        profiles.add(json.load(f).get("name", os.path.splitext(os.path.basename(p))[0]))
ANNOTATIONS = {
    "gputopo.io/spread": lambda v: v in ("required", "preferred", "none"),
    "gputopo.io/locality": lambda v: v in ("nvlink", "numa", "none"),
    "gputopo.io/locality-mode": lambda v: v in ("required", "preferred"),
    "gputopo.io/exclusive": lambda v: v in ("true", "false"),
    "gputopo.io/gpu-milli": lambda v: v.isdigit() and 1 <= int(v) <= 1000,
    "gputopo.io/policy": lambda v: v in presets,
    "gputopo.io/group": lambda v: bool(v),
}
LINK = re.compile(r"NV[1-9]\d*|PIX|PXB|PHB|NODE|SYS")


def check_topology_document(text, where):
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail(f"{where}: gputopo.io/topology is not JSON: {e}")
        return
    gpus = doc.get("gpus", [])
    idx = sorted(g.get("index") for g in gpus)
    if doc.get("version") != 1 or not gpus or idx != list(range(len(gpus))):
        fail(f"{where}: gputopo.io/topology needs version 1 and GPU indices 0..n-1 once each")
    pairs = {}
    for link in doc.get("links", []):
        a, b = (link.get("gpus") or [None, None])[:2]
        if a not in idx or b not in idx or a == b or not LINK.fullmatch(str(link.get("type"))):
            fail(f"{where}: bad link {link}")
        elif pairs.setdefault(frozenset((a, b)), link["type"]) != link["type"]:
            fail(f"{where}: GPUs {a},{b} are given two link types")


edir = os.path.join(root, "manifests/examples")
example_pods, example_nodes = [], []
if os.path.isdir(edir):
    for path in sorted(glob.glob(os.path.join(edir, "*.yaml"))):
        if os.path.basename(path) == "kustomization.yaml":
            continue
        rel = os.path.relpath(path, root)
        for o in objects_of(path):
            kind, name = o["kind"], o["metadata"]["name"]
            if kind == "Node":
                example_nodes.append(o)
                labels = o["metadata"].get("labels", {})
                ann = o["metadata"].get("annotations", {})
                if "gputopo.io/topology-profile" in labels and labels["gputopo.io/topology-profile"] not in profiles:
                    fail(f"{rel}: node {name}: unknown profile {labels['gputopo.io/topology-profile']!r} (have {sorted(profiles)})")
                if "gputopo.io/topology" in ann:
                    check_topology_document(ann["gputopo.io/topology"], f"{rel}: node {name}")
                continue
            if kind == "Pod":
                meta, spec = o["metadata"], o["spec"]
            elif kind in ("Deployment", "StatefulSet", "Job", "ReplicaSet", "DaemonSet"):
                meta, spec = o["spec"]["template"]["metadata"], o["spec"]["template"]["spec"]
                if any(k.startswith("gputopo.io/") for k in o["metadata"].get("annotations", {})):
                    fail(f"{rel}: {kind} {name}: gputopo.io/ annotations belong on the pod template")
            else:
                continue
            if spec.get("schedulerName") != "gputopo-scheduler":
                fail(f"{rel}: {kind} {name}: schedulerName must be gputopo-scheduler")
            if not any("nvidia.com/gpu" in c.get("resources", {}).get("limits", {}) for c in spec.get("containers", [])):
                fail(f"{rel}: {kind} {name}: requests no nvidia.com/gpu (it would never reach gputopo)")
            for k, v in meta.get("annotations", {}).items():
                if k.startswith("gputopo.io/"):
                    check = ANNOTATIONS.get(k)
                    if not check or not check(str(v)):
                        fail(f"{rel}: {kind} {name}: invalid annotation {k}: {v!r}")
            example_pods.append((kind, name, meta, spec))
    wanted = {"spread": "gputopo.io/spread", "locality": "gputopo.io/locality",
              "exclusive": "gputopo.io/exclusive", "gpu-milli": "gputopo.io/gpu-milli",
              "policy": "gputopo.io/policy"}
    for what, key in wanted.items():
        if not any(key in m.get("annotations", {}) for _, _, m, _ in example_pods):
            fail(f"manifests/examples: no example uses {key}")

# ---------------------------------------------------------------- image tag and version
with open(os.path.join(root, "CMakeLists.txt")) as f:
    m = re.search(r"project\(gputopo\s+VERSION\s+([0-9.]+)", f.read())
version = m.group(1) if m else None
images = [c.get("image") for o in ([dep] if dep else []) for c in o["spec"]["template"]["spec"]["containers"] if c["name"] == "gputopo"]
images += [c.get("image") for o in load_all("manifests/variants/default-scheduler/**/*.yaml") if o.get("kind") == "Pod"
           for c in o["spec"].get("containers", []) if c["name"] == "gputopo"]
if os.path.isdir(os.path.join(root, "manifests/agent")):
    images += [c.get("image") for d in find(list_from(os.path.join(tmp, "agent-enforce.yaml")), "DaemonSet")
               for c in d["spec"]["template"]["spec"].get("containers", [])]
for img in images:
    if version and img != f"gputopo:{version}" and not img.endswith(f":{version}"):
        fail(f"manifests/: image {img!r} does not carry the project version {version}")

# ---------------------------------------------------------------- 4. against the binary
if gputopo_bin and example_nodes and example_pods:
    import uuid
    items = []
    for n in example_nodes:
        n = json.loads(json.dumps(n))
        n["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1")
        n.setdefault("spec", {})
        st = n.setdefault("status", {})
        st["conditions"] = [{"type": "Ready", "status": "True"}]
        for k in ("capacity", "allocatable"):
            st.setdefault(k, {}).update({"cpu": "128", "memory": "1Ti", "pods": "110"})
        items.append(n)
    for i, (kind, name, meta, spec) in enumerate(example_pods):
        pod_meta = json.loads(json.dumps(meta))
        pod_meta.update(name=f"{name}-{i}", namespace="default", uid=str(uuid.uuid4()), resourceVersion="2")
        if kind != "Pod":
            owner = {"Deployment": "ReplicaSet"}.get(kind, kind)
            pod_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": name,
                                            "uid": str(uuid.uuid4()), "controller": True}]
        pod_spec = json.loads(json.dumps(spec))
        for c in pod_spec.get("containers", []):
            r = c.setdefault("resources", {})
            r["limits"] = {k: str(v) for k, v in r.get("limits", {}).items()}
            r["requests"] = {**{k: str(v) for k, v in r.get("requests", {}).items()}, **r["limits"]}
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec,
                      "status": {"phase": "Pending"}})
    snap = os.path.join(tmp, "examples-cluster.json")
    with open(snap, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    bport = s.getsockname()[1]
    s.close()
    log = open(os.path.join(tmp, "gputopo.log"), "w")
    srv = subprocess.Popen([gputopo_bin, "serve", "--listen", f"127.0.0.1:{bport}", "--snapshot", snap],
                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{bport}"
    # Generous on purpose: a sanitizer build on a loaded machine may be slow, and a passing run
    # never waits these out (no check here needs a deadline to expire).
    answer_s = 120
    try:
        up_by = time.monotonic() + answer_s
        up = False
        while not up and srv.poll() is None and time.monotonic() < up_by:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=answer_s)
                up = True
            except OSError:
                time.sleep(0.1)
        if srv.poll() is None and not up:
            fail("gputopo serve did not come up")
        elif srv.poll() is not None:
            with open(os.path.join(tmp, "gputopo.log")) as f:
                fail(f"gputopo serve --snapshot exited: {f.read()[-500:]}")
        else:
            names = [n["metadata"]["name"] for n in example_nodes]
            for n in names:
                d = json.loads(urllib.request.urlopen(f"{base}/debug/nodes/{n}", timeout=answer_s).read())
                if not d.get("topologyKnown") or d.get("topologySource") not in ("annotation", "profile"):
                    fail(f"manifests/examples/nodes.yaml: gputopo does not read node {n}'s topology: "
                         f"{d.get('topologySource')} {d.get('topologyDetail')}")
            for item in items[len(example_nodes):]:
                body = json.dumps({"Pod": item, "Nodes": None, "NodeNames": names}).encode()
                req = urllib.request.Request(base + "/filter", data=body, headers={"Content-Type": "application/json"})
                res = json.loads(urllib.request.urlopen(req, timeout=answer_s).read())
                pname = item["metadata"]["name"]
                if res.get("Error") or not res.get("NodeNames"):
                    fail(f"manifests/examples: {pname} fits no example node: {res}")
                if item["metadata"].get("annotations", {}).get("gputopo.io/locality-mode") == "required":
                    # nodes.yaml promises that the 2+2 bridged node can never take a 4-GPU NVLink job.
                    if "gpu-a100-07" in names and "gpu-a100-07" not in res.get("FailedAndUnresolvableNodes", {}):
                        fail(f"manifests/examples: {pname} was not rejected for good on gpu-a100-07: {res}")
    finally:
        srv.terminate()
        srv.wait()

for msg in failures:
    print(f"manifests_test: FAIL: {msg}", file=sys.stderr)
sys.exit(1 if failures else 0)
PY
then
  failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
  echo "manifests_test: FAILED" >&2
  exit 1
fi
echo "manifests_test: OK (${#files[@]} files, $built kustomizations${gputopo_bin:+, examples checked against $gputopo_bin})"
