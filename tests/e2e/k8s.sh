#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The Kubernetes manifests and the Containerfile of deploy/, checked
# statically (this machine has no cluster and can't pull the base image):
# each manifest parses (python3-yaml), its embedded fastwalld config
# passes `fastwalld check` and the JSON Schema, and its fastwalld pod has
# what a node needs: readiness on /readyz and liveness on /healthz at the
# config's metrics port (not on loopback, which the kubelet can't reach),
# requests and limits, tolerations, a priority class that exists, the
# capabilities (IPC_LOCK among them), the bpffs init container, the image
# the Containerfile builds, the config mounted where the command reads it;
# the sidecar also has the actions section on loopback beside the Fastlet
# container. The Containerfile copies the package `make deb` builds (its
# file name is matched against a real build), installs it and runs
# fastwalld from it. Needs no root.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
FASTWALLD=$BUILD/fastwalld
[ -x "$FASTWALLD" ] || { echo "fatal: $FASTWALLD missing: run make all" >&2; exit 1; }
"$PY" -c 'import yaml, jsonschema' 2>/dev/null ||
	{ echo "fatal: python3-yaml and python3-jsonschema needed (scripts/install-deps.sh)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1
"$PY" scripts/gen-schema.py "$FASTWALLD" "$T/schema" || { echo "fatal: gen-schema.py failed" >&2; exit 1; }
DEB=$(scripts/build-deb.sh "$T/deb" 2>"$T/build.log") ||
	{ sed 's/^/  | /' "$T/build.log" >&2; echo "fatal: make deb failed" >&2; exit 1; }
dpkg-deb -c "$DEB" | awk '{ print $NF }' | sed 's|^\.||' >"$T/deb.files"

"$PY" - "$FASTWALLD" "$T" "$(basename "$DEB")" deploy/Containerfile \
	deploy/fastwall-daemonset.yaml deploy/fastwall-sidecar.yaml <<'PYEOF'
import fnmatch
import ipaddress
import json
import os
import re
import subprocess
import sys

import jsonschema
import yaml

fastwalld, tmp, debname, containerfile, *manifests = sys.argv[1:]
passed = failed = 0
schema = json.load(open(os.path.join(tmp, "schema", "fastwalld-config.schema.json")))
validator = jsonschema.Draft202012Validator(schema)
deb_files = set(open(os.path.join(tmp, "deb.files")).read().split())


def check(desc, cond, detail=""):
    global passed, failed
    if cond:
        print(f"ok - {desc}")
        passed += 1
    else:
        print(f"not ok - {desc}" + (f": {detail}" if detail else ""))
        failed += 1


# --- the Containerfile -------------------------------------------------------
lines = []
for raw in open(containerfile).read().replace("\\\n", " ").splitlines():
    if raw.strip() and not raw.lstrip().startswith("#"):
        lines.append(raw.strip())
instr = [(l.split(None, 1)[0].upper(), l.split(None, 1)[1] if " " in l else "") for l in lines]
froms = [a for i, a in instr if i == "FROM"]
check("Containerfile: FROM a Debian 12 image",
      len(froms) == 1 and re.search(r"debian:(bookworm|12)", froms[0]), froms)
copies = [a.split() for i, a in instr if i == "COPY"]
check("Containerfile: COPYs the package make deb builds "
      f"({debname})", any(fnmatch.fnmatch(debname, c[0]) for c in copies if len(c) == 2), copies)
runs = " ".join(a for i, a in instr if i == "RUN")
check("Containerfile: installs it with apt-get",
      any(re.search(r"apt-get install .*" + re.escape(c[1].rstrip("/")) + "/?"
                    + re.escape(c[0]), runs) for c in copies if len(c) == 2), runs)
ep = [json.loads(a) for i, a in instr if i == "ENTRYPOINT"]
cmd = [json.loads(a) for i, a in instr if i == "CMD"]
check("Containerfile: runs /usr/sbin/fastwalld, which the package ships",
      ep and ep[-1][0] == "/usr/sbin/fastwalld" and "/usr/sbin/fastwalld" in deb_files, ep)
check("Containerfile: its default command is a valid fastwalld command line",
      cmd and cmd[-1][:2] == ["-c", "/etc/fastwall/fastwalld.yaml"] and cmd[-1][-1] == "run", cmd)
head = open(containerfile).read()
check("Containerfile: documents its build with build/deb as the context",
      re.search(r"build -t (fastwall:\S+) -f deploy/Containerfile build/deb", head))
image = re.search(r"build -t (fastwall:\S+)", head).group(1) if "build -t" in head else None

# --- the manifests -------------------------------------------------------------
def metrics_port(cfg):
    listen = ((cfg or {}).get("metrics") or {}).get("listen", "127.0.0.1:9464")
    host, _, port = listen.rpartition(":")
    return host.strip("[]"), int(port)


for path in manifests:
    name = os.path.basename(path)
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d]
    except yaml.YAMLError as e:
        check(f"{name}: parses", False, e)
        continue
    check(f"{name}: parses, every object has apiVersion, kind and a name",
          docs and all(d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name")
                       for d in docs))
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    cms = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    workloads = [d for d in docs if d["kind"] in ("DaemonSet", "Deployment", "StatefulSet")]
    check(f"{name}: one workload", len(workloads) == 1, [d["kind"] for d in docs])
    if not workloads:
        continue
    pod = workloads[0]["spec"]["template"]["spec"]
    fw = [c for c in pod.get("containers", []) if c["name"] == "fastwalld"]
    check(f"{name}: a fastwalld container", len(fw) == 1)
    if not fw:
        continue
    fw = fw[0]
    # the config: the ConfigMap volume mounted where -c points
    argv = fw.get("command", []) + fw.get("args", [])
    cfg_path = argv[argv.index("-c") + 1] if "-c" in argv else "/etc/fastwall/fastwalld.yaml"
    check(f"{name}: fastwalld runs from the package ({argv[:1]})",
          argv and argv[0] in deb_files and argv[-1] == "run", argv)
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    cfg_text = None
    for m in fw.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        if "configMap" in v and cfg_path.startswith(m["mountPath"].rstrip("/") + "/"):
            key = cfg_path[len(m["mountPath"].rstrip("/")) + 1:]
            cfg_text = cms.get(v["configMap"]["name"], {}).get("data", {}).get(key)
    check(f"{name}: the config fastwalld reads comes from a ConfigMap in the manifest",
          cfg_text is not None)
    if cfg_text is None:
        continue
    cfg_file = os.path.join(tmp, name + ".fastwalld.yaml")
    with open(cfg_file, "w") as f:
        f.write(cfg_text)
    r = subprocess.run([fastwalld, "-c", cfg_file, "check"], capture_output=True, text=True)
    check(f"{name}: fastwalld check accepts its config", r.returncode == 0 and not r.stderr,
          (r.stdout + r.stderr).strip())
    cfg = yaml.safe_load(cfg_text)
    errs = [e.message for e in validator.iter_errors(cfg)]
    check(f"{name}: its config is valid for the JSON Schema", not errs, errs)
    host, port = metrics_port(cfg)
    hostnet = pod.get("hostNetwork") is True
    if hostnet:
        # the kubelet is in the node's network namespace: it reaches the
        # loopback the pod shares with the node, and nothing else need
        check(f"{name}: host network: metrics.listen on loopback, not on every node address",
              host and ipaddress.ip_address(host).is_loopback, host)
    else:
        check(f"{name}: metrics.listen is reachable by the kubelet (not loopback)",
              host and not ipaddress.ip_address(host).is_loopback, host)
    for probe, want in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        g = (fw.get(probe) or {}).get("httpGet") or {}
        check(f"{name}: {probe} is GET {want} on the metrics port {port}"
              + (f" of {host}" if hostnet else ""),
              g.get("path") == want and g.get("port") == port and
              (not hostnet or g.get("host") == host), g)
    if hostnet:
        # the pod is fastwalld's own (a sidecar's pod is the Fastlet's to set)
        check(f"{name}: no service account token (fastwalld never calls the API)",
              pod.get("automountServiceAccountToken") is False)
        check(f"{name}: Linux nodes only", (pod.get("nodeSelector") or {}).get(
            "kubernetes.io/os") == "linux", pod.get("nodeSelector"))
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        if c.get("image", "").startswith("fastwall"):
            check(f"{name}: {c['name']}: an imagePullPolicy", c.get("imagePullPolicy") in
                  ("IfNotPresent", "Always", "Never"), c.get("imagePullPolicy"))
    check(f"{name}: fastwalld's termination message falls back to its log",
          fw.get("terminationMessagePolicy") == "FallbackToLogsOnError")
    res = fw.get("resources", {})
    check(f"{name}: requests and limits of cpu and memory",
          all(k in res.get(s, {}) for s in ("requests", "limits") for k in ("cpu", "memory")), res)
    check(f"{name}: tolerations", bool(pod.get("tolerations")))
    pc = pod.get("priorityClassName")
    defined = {d["metadata"]["name"] for d in by_kind.get("PriorityClass", [])}
    check(f"{name}: a priority class that exists ({pc})",
          pc and (pc in defined or pc in ("system-node-critical", "system-cluster-critical")))
    caps = set((fw.get("securityContext", {}).get("capabilities") or {}).get("add", []))
    need = {"BPF", "PERFMON", "NET_ADMIN", "SYS_ADMIN", "IPC_LOCK", "SYS_RESOURCE"}
    check(f"{name}: capabilities {' '.join(sorted(need))}", need <= caps, sorted(caps))
    check(f"{name}: fastwalld is not privileged",
          not fw.get("securityContext", {}).get("privileged"))
    bpf_mounts = [m for m in fw.get("volumeMounts", []) if m["mountPath"] == "/sys/fs/bpf"]
    check(f"{name}: the node's bpffs is mounted into fastwalld",
          bpf_mounts and vols.get(bpf_mounts[0]["name"], {}).get("hostPath", {}).get("path")
          == "/sys/fs/bpf")
    inits = pod.get("initContainers", [])
    mounter = [c for c in inits
               if re.search(r"mountpoint -q /sys/fs/bpf \|\| mount -t bpf",
                            " ".join(c.get("command", []) + c.get("args", [])))]
    check(f"{name}: an init container mounts bpffs when the node has none",
          mounter and any(m["mountPath"] == "/sys/fs/bpf" and
                          m.get("mountPropagation") == "Bidirectional"
                          for m in mounter[0].get("volumeMounts", [])))
    images = {c["image"] for c in [fw] + mounter}
    check(f"{name}: fastwalld and the init container run the Containerfile's image ({image})",
          images == {image}, images)
    if "sidecar" in name:
        act = cfg.get("actions")
        check(f"{name}: the config has an actions section on loopback",
              isinstance(act, dict) and act.get("listen", "127.0.0.1:18080").startswith("127."))
        others = [c for c in pod["containers"] if c["name"] != "fastwalld"]
        check(f"{name}: the Fastlet container shares the pod (its loopback and the vault socket)",
              others and not pod.get("hostNetwork") and any(
                  m["mountPath"] == os.path.dirname(act.get("vault_socket",
                                                            "/run/fastwall/vault.sock"))
                  for c in others for m in c.get("volumeMounts", [])))
    else:
        check(f"{name}: node-wide: host network", pod.get("hostNetwork") is True)

print(f"k8s: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PYEOF
