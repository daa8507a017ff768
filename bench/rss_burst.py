# RSS of a gputopo binary before, during and after bursts of large filter requests (full Nodes
# bodies of 2500 nodes, 8 at once, 3 times), on the demo cluster: does memory fall back after a
# burst? Run it on two binaries one after the other to compare them.
#   python3 bench/rss_burst.py build/release/src/gputopo [label]
# Reads ../shared/k8s (run from the repository root).
import json, os, subprocess, sys, time, socket, threading, http.client, copy
binary = sys.argv[1]
label = sys.argv[2] if len(sys.argv) > 2 else binary
tmpl = json.load(open("../shared/k8s/cache_false/013-filter.trainer-b.request.json"))
node = tmpl["Nodes"]["items"][0]
nodes = []
for i in range(2500):
    n = copy.deepcopy(node); n["metadata"]["name"] = f"burst-{i}"; nodes.append(n)
body = json.dumps({"Pod": tmpl["Pod"], "Nodes": {"items": nodes}, "NodeNames": None}).encode()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen([binary, "demo", "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def rss():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1]) / 1024
def wait_up():
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/healthz"); c.getresponse().read(); return
        except Exception: time.sleep(0.1)
wait_up(); time.sleep(3)  # the demo replay
base = rss()
peak = [base]
def one():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/filter", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
for burst in range(3):
    ts = [threading.Thread(target=one) for _ in range(8)]
    for t in ts: t.start()
    while any(t.is_alive() for t in ts):
        peak.append(rss()); time.sleep(0.05)
    for t in ts: t.join()
time.sleep(2)
after = rss()
p.terminate(); p.wait()
print(f"{label}: body {len(body)/2**20:.1f} MiB x 8 concurrent x 3 bursts; RSS baseline {base:.1f} MiB, peak {max(peak):.1f} MiB, 2 s after {after:.1f} MiB")
