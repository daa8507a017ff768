// The CEL of manifests/agent/admission-policy.yaml, evaluated on requests as the API server
// would see them: who may set, change or remove gputopo.io/assigned-gpus and observed-gpus
// (pods, Bindings, status updates; CREATE with no oldObject, objects without annotations), and
// what the agent may write on pods and nodes (its own node, one annotation).
//
//   node test/admission_policy_cases.mjs POLICIES.json CEL_JS_INDEX
//
// POLICIES.json: the file's documents as a JSON list (test/manifests_test.sh converts them).
// CEL_JS_INDEX: lib/index.js of the npm package @marcbachmann/cel-js, a CEL implementation in
// JavaScript (`npm install --prefix DIR @marcbachmann/cel-js`). It is not the API server's
// cel-go: it checks the expressions' logic on these cases, not Kubernetes' type checking or
// cost limits. Like the API server it evaluates matchConditions first, then the variables in
// order, then each validation; a validation that is not true denies with its message.
//
// Exit status: 0 every case as expected, 1 otherwise (each one printed).
import fs from 'fs'

const [policiesPath, celPath] = process.argv.slice(2)
const {evaluate} = await import(celPath)
const docs = JSON.parse(fs.readFileSync(policiesPath, 'utf8'))
const policies = Object.fromEntries(
  docs.filter(d => d.kind === 'ValidatingAdmissionPolicy').map(d => [d.metadata.name, d.spec]))

function admit (policy, {user, extra, object, oldObject}) {
  const request = {userInfo: {username: user, ...(extra ? {extra} : {})}}
  const ctx = {request, object, oldObject: oldObject ?? null}
  for (const mc of policy.matchConditions ?? []) {
    if (evaluate(mc.expression, ctx) !== true) return 'not matched'
  }
  const variables = {}
  for (const v of policy.variables ?? []) variables[v.name] = evaluate(v.expression, {...ctx, variables})
  for (const val of policy.validations) {
    if (evaluate(val.expression, {...ctx, variables}) !== true) {
      return 'DENY: ' + (val.messageExpression
        ? evaluate(val.messageExpression, {...ctx, variables}) : val.message)
    }
  }
  return 'allow'
}

// pod(annotations, more): a Pod bound to node n1 (annotations null: no metadata.annotations).
// A, O: the two annotations; G: gputopo's service account; AG: the agent's.
// A case: [policy without "gputopo-", what, request, 'allow' | 'DENY' | 'not matched'].
const pod = (ann, extra = {}) => ({metadata: {name: 'p', ...(ann ? {annotations: ann} : {})}, spec: {nodeName: 'n1', containers: [{name: 'c', image: 'i'}]}, ...extra})
const A = 'gputopo.io/assigned-gpus', O = 'gputopo.io/observed-gpus'
const G = 'system:serviceaccount:gputopo-system:gputopo', AG = 'system:serviceaccount:gputopo-agent:gputopo-agent'
const cases = [
  ['gpu-annotations', 'create, no annotations', {user: 'alice', object: pod(null)}, 'allow'],
  ['gpu-annotations', 'create, other annotations', {user: 'alice', object: pod({x: '1'})}, 'allow'],
  ['gpu-annotations', 'create with assigned', {user: 'alice', object: pod({[A]: 'GPU-1'})}, 'DENY'],
  ['gpu-annotations', 'create with observed', {user: 'alice', object: pod({[O]: 'GPU-1'})}, 'DENY'],
  ['gpu-annotations', 'update keeping both', {user: 'alice', object: pod({[A]: 'GPU-1', [O]: 'GPU-1', y: '2'}), oldObject: pod({[A]: 'GPU-1', [O]: 'GPU-1'})}, 'allow'],
  ['gpu-annotations', 'update changing assigned', {user: 'alice', object: pod({[A]: 'GPU-2'}), oldObject: pod({[A]: 'GPU-1'})}, 'DENY'],
  ['gpu-annotations', 'update removing observed', {user: 'alice', object: pod({}), oldObject: pod({[O]: 'GPU-1'})}, 'DENY'],
  ['gpu-annotations', 'update removing all annotations', {user: 'alice', object: pod(null), oldObject: pod({[A]: 'GPU-1'})}, 'DENY'],
  ['gpu-annotations', 'update adding assigned to none', {user: 'alice', object: pod({[A]: 'GPU-1'}), oldObject: pod(null)}, 'DENY'],
  ['gpu-annotations', 'kubelet status update, unchanged', {user: 'system:node:n1', object: pod({[A]: 'GPU-1'}, {status: {phase: 'Running'}}), oldObject: pod({[A]: 'GPU-1'})}, 'allow'],
  ['gpu-annotations', 'gputopo binding with assigned', {user: G, object: {kind: 'Binding', metadata: {name: 'p', annotations: {[A]: 'GPU-1'}}, target: {name: 'n1'}}}, 'allow'],
  ['gpu-annotations', 'default-scheduler variant user binding', {user: 'gputopo', object: {kind: 'Binding', metadata: {name: 'p', annotations: {[A]: 'GPU-1'}}, target: {name: 'n1'}}}, 'allow'],
  ['gpu-annotations', 'alice binding with assigned', {user: 'alice', object: {kind: 'Binding', metadata: {name: 'p', annotations: {[A]: 'GPU-1'}}, target: {name: 'n1'}}}, 'DENY'],
  ['gpu-annotations', 'default binder, no annotations', {user: 'system:kube-scheduler', object: {kind: 'Binding', metadata: {name: 'p'}, target: {name: 'n1'}}}, 'allow'],
  ['gpu-annotations', 'gputopo writing observed', {user: G, object: pod({[O]: 'GPU-1'}), oldObject: pod({})}, 'DENY'],
  ['gpu-annotations', 'agent writing observed', {user: AG, object: pod({[A]: 'GPU-1', [O]: 'GPU-2'}), oldObject: pod({[A]: 'GPU-1'})}, 'allow'],
  ['gpu-annotations', 'agent writing assigned', {user: AG, object: pod({[A]: 'GPU-2'}), oldObject: pod({[A]: 'GPU-1'})}, 'DENY'],
  ['agent-pods', 'not the agent', {user: 'alice', object: pod({}), oldObject: pod({})}, 'not matched'],
  ['agent-pods', 'own node, observed', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: pod({[O]: 'GPU-1', k: 'v'}), oldObject: pod({k: 'v'})}, 'allow'],
  ['agent-pods', 'own node, no annotations before', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: pod({[O]: 'GPU-1'}), oldObject: pod(null)}, 'allow'],
  ['agent-pods', 'other node', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n2']}, object: pod({[O]: 'GPU-1'}), oldObject: pod({})}, 'DENY'],
  ['agent-pods', 'no node in token', {user: AG, extra: {'authentication.kubernetes.io/pod-name': ['x']}, object: pod({[O]: 'GPU-1'}), oldObject: pod({})}, 'allow'],
  ['agent-pods', 'no extra at all', {user: AG, object: pod({[O]: 'GPU-1'}), oldObject: pod({})}, 'allow'],
  ['agent-pods', 'unbound pod', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: {metadata: {name: 'p', annotations: {[O]: 'x'}}, spec: {containers: []}}, oldObject: {metadata: {name: 'p'}, spec: {containers: []}}}, 'DENY'],
  ['agent-pods', 'label change', {user: AG, object: {...pod({}), metadata: {name: 'p', labels: {a: 'b'}}}, oldObject: pod({})}, 'DENY'],
  ['agent-pods', 'image change', {user: AG, object: {...pod({}), spec: {nodeName: 'n1', containers: [{name: 'c', image: 'evil'}]}}, oldObject: pod({})}, 'DENY'],
  ['agent-pods', 'other annotation removed', {user: AG, object: pod({[O]: 'g'}), oldObject: pod({x: '1'})}, 'DENY'],
  ['agent-pods', 'other annotation changed', {user: AG, object: pod({x: '2'}), oldObject: pod({x: '1'})}, 'DENY'],
  ['agent-pods', 'owner reference added', {user: AG, object: {...pod({}), metadata: {name: 'p', annotations: {}, ownerReferences: [{uid: 'u'}]}}, oldObject: pod({})}, 'DENY'],
  ['agent-nodes', 'own node topology', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: {metadata: {name: 'n1', labels: {l: '1'}, annotations: {'gputopo.io/topology': '{}', z: '1'}}, spec: {}}, oldObject: {metadata: {name: 'n1', labels: {l: '1'}, annotations: {z: '1'}}, spec: {}}}, 'allow'],
  ['agent-nodes', 'topology removed, no annotations left', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: {metadata: {name: 'n1'}, spec: {}}, oldObject: {metadata: {name: 'n1', annotations: {'gputopo.io/topology': '{}'}}, spec: {}}}, 'allow'],
  ['agent-nodes', 'other node', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n2']}, object: {metadata: {name: 'n1', annotations: {'gputopo.io/topology': '{}'}}, spec: {}}, oldObject: {metadata: {name: 'n1'}, spec: {}}}, 'DENY'],
  ['agent-nodes', 'taint added', {user: AG, extra: {'authentication.kubernetes.io/node-name': ['n1']}, object: {metadata: {name: 'n1'}, spec: {taints: [{key: 'x'}]}}, oldObject: {metadata: {name: 'n1'}, spec: {}}}, 'DENY'],
  ['agent-nodes', 'label added', {user: AG, object: {metadata: {name: 'n1', labels: {x: '1'}}, spec: {}}, oldObject: {metadata: {name: 'n1'}, spec: {}}}, 'DENY'],
  ['agent-nodes', 'other annotation', {user: AG, object: {metadata: {name: 'n1', annotations: {x: '1'}}, spec: {}}, oldObject: {metadata: {name: 'n1'}, spec: {}}}, 'DENY'],
  ['agent-nodes', 'kubelet', {user: 'system:node:n1', object: {metadata: {name: 'n1', labels: {x: '1'}}, spec: {}}, oldObject: {metadata: {name: 'n1'}, spec: {}}}, 'not matched'],
]

let failed = 0
for (const [name, what, request, want] of cases) {
  const policy = policies['gputopo-' + name]
  let got
  if (!policy) {
    got = 'no such policy'
  } else {
    try { got = admit(policy, request) } catch (e) { got = 'ERROR ' + e.message }
  }
  if (!got.startsWith(want)) {
    failed++
    console.log(`admission_policy_cases: FAIL: gputopo-${name}: ${what}: expected ${want}, got ${got}`)
  }
}
console.log(`admission_policy_cases: ${cases.length - failed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
