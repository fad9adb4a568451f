#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The image, built and run for real (make test-container): a Debian 12 base
# imported from the cached debootstrap root (scripts/debian-rootfs.sh; no
# registry is needed), `podman build -f deploy/Containerfile` on it with
# the package `make deb` builds, then the DaemonSet's two containers as the
# kubelet would run them (deploy/fastwall-daemonset.yaml, read here): the
# privileged bpffs init container, and fastwalld with the manifest's
# command, capabilities, read-only root, no new privileges, the bpffs
# hostPath, the ConfigMap's configuration (this run's bridge, pin path and
# one sandbox's policy added) and the pod's network namespace, one the
# test created. It checks /readyz and /healthz, and a sandbox's traffic
# allowed and denied as its policy says, seen (or not) on the far side.
# Everything podman makes lives in this run's own storage, removed at the
# end with the containers and images.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
PODMAN_ROOT=""
podman_cleanup() {
	set +e
	[ -n "$PODMAN_ROOT" ] || return 0
	pm rm -af -t 2 >/dev/null 2>&1
	pm system reset -f >/dev/null 2>&1
	# whatever the reset left mounted under the storage
	grep -F " $PODMAN_ROOT/" /proc/mounts | cut -d' ' -f2 | sort -r | xargs -r -n1 umount -l
	return 0
}
trap 'podman_cleanup; fw_cleanup' EXIT
trap 'exit 130' INT TERM
fw_require
for t in podman debootstrap; do
	command -v "$t" >/dev/null || {
		echo "skip: $t not found (scripts/install-deps.sh)"
		exit 77
	}
done
cd "$FW_ROOT" || exit 1
t0=$SECONDS

PODMAN_ROOT=$FW_TMP/podman
# this run's storage, nothing in the host's; cgroupfs: the host's init
# need not be systemd; runc when there is one: crun refuses a host whose
# cgroups are a v1/v2 hybrid with a controller on the v2 side
PM=(podman --root "$PODMAN_ROOT/root" --runroot "$PODMAN_ROOT/run" --storage-driver overlay
	--cgroup-manager cgroupfs --events-backend none)
command -v runc >/dev/null && PM+=(--runtime runc)
pm() { "${PM[@]}" "$@"; }
# the host's own limits: podman's defaults for a root container are
# above them where the test runs without CAP_SYS_RESOURCE
ULIMITS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=8192:8192)
mkdir -p "$PODMAN_ROOT"

# --- the image ---------------------------------------------------------------
mkdir -p "$FW_TMP/ctx"
DEB=$(scripts/build-deb.sh "$FW_TMP/ctx" 2>"$FW_TMP/build.log") ||
	{ sed 's/^/  | /' "$FW_TMP/build.log" >&2; fw_die "make deb failed"; }
check "make deb built fastwall's package into the build context" test -s "$DEB"
TAR=$(scripts/debian-rootfs.sh) || fw_die "no Debian root file system"
t1=$SECONDS
pm import "$TAR" localhost/fastwall-base:bookworm >"$FW_TMP/import.log" 2>&1 || fw_die "podman import failed"
echo "# base imported in $((SECONDS - t1)) s"
t1=$SECONDS
# --from replaces the file's FROM (a registry's debian:bookworm-slim) with
# the imported base; apt-get in the build reaches the archive over the
# host's network (no bridge or NAT rule is made for it)
check "podman build -f deploy/Containerfile" \
	pm build --isolation chroot --network host --from localhost/fastwall-base:bookworm -t localhost/fastwall:test \
	-f deploy/Containerfile "$FW_TMP/ctx"
echo "# image built in $((SECONDS - t1)) s"
check "the image runs fastwalld --version" pm run --rm --pull=never "${ULIMITS[@]}" --network none localhost/fastwall:test --version
check "the image has bpftool and curl" \
	pm run --rm --pull=never "${ULIMITS[@]}" --network none --entrypoint /bin/sh localhost/fastwall:test -c 'command -v bpftool && command -v curl'

# --- the DaemonSet's containers, in the pod's namespace ------------------------
fw_topology
fw_sandbox a 2
fw_serve "$NS_INET" --http 198.51.100.10:80 --http 203.0.113.10:80 \
	--udp-logged "198.51.100.10:9001=$FW_TMP/seen-allowed" \
	--udp-logged "203.0.113.10:9001=$FW_TMP/seen-denied"
MANIFEST=deploy/fastwall-daemonset.yaml
mkdir -p "$FW_TMP/config"
# the ConfigMap's file, for this run: its bridge, its pins, one sandbox
"$FW_PY" - "$MANIFEST" "$BPFFS" >"$FW_TMP/config/fastwalld.yaml" <<'EOF'
import sys

import yaml

docs = list(yaml.safe_load_all(open(sys.argv[1])))
cm = next(d for d in docs if d and d.get("kind") == "ConfigMap")
cfg = yaml.safe_load(cm["data"]["fastwalld.yaml"])
cfg["datapath"]["bpffs"] = sys.argv[2]
cfg["datapath"]["bridges"] = ["br0"]
cfg["dns"] = {"proxy": True, "upstreams": ["198.51.100.53"]}
cfg["subjects"] = [{
    "name": "sandbox-a", "addresses": ["10.42.0.2"], "interface": "sb-a",
    "gateway": ["10.42.0.1"], "private_cidr": ["10.42.0.0/24"],
    "policy": {"defaultAction": "deny",
               "egress": [{"action": "allow", "target": "198.51.100.0/24"}]},
}]
yaml.safe_dump(cfg, sys.stdout)
EOF
# the fastwalld container's spec: command, capabilities, security context
"$FW_PY" - "$MANIFEST" >"$FW_TMP/spec" <<'EOF'
import sys

import yaml

docs = list(yaml.safe_load_all(open(sys.argv[1])))
ds = next(d for d in docs if d and d.get("kind") == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "fastwalld")
init = next(c for c in pod["initContainers"] if c["name"] == "bpffs")
sc = c["securityContext"]
print("CMD=(%s)" % " ".join("'%s'" % a for a in c["command"]))
print("INIT=(%s)" % " ".join("'%s'" % a for a in init["command"]))
print("INIT_PRIV=%s" % ("yes" if init["securityContext"].get("privileged") else "no"))
print("CAPS=%s" % ",".join(c["securityContext"]["capabilities"]["add"]))
print("DROP=%s" % ",".join(sc["capabilities"]["drop"]))
print("RO=%s" % ("yes" if sc.get("readOnlyRootFilesystem") else "no"))
print("NNP=%s" % ("yes" if sc.get("allowPrivilegeEscalation") is False else "no"))
print("HOSTNET=%s" % ("yes" if pod.get("hostNetwork") else "no"))
EOF
# shellcheck disable=SC1091 # written just above
. "$FW_TMP/spec"
check_eq "the DaemonSet runs in the node's network namespace" "$HOSTNET" yes
check_eq "the bpffs init container is privileged" "$INIT_PRIV" yes
# the node's network namespace is, for this test, the pod namespace it made
NET=(--network "ns:/run/netns/$NS_POD")
check "the bpffs init container runs (privileged)" \
	pm run --rm --pull=never "${ULIMITS[@]}" --privileged "${NET[@]}" -v /sys/fs/bpf:/sys/fs/bpf:rshared \
	--entrypoint "${INIT[0]}" localhost/fastwall:test "${INIT[@]:1}"
# shellcheck disable=SC2054 # --cap-add's own list, one word
opts=(--pull=never "${ULIMITS[@]}" "${NET[@]}" --name "fw-$FW_ID" --cap-drop "$DROP" --cap-add "$CAPS"
	--security-opt seccomp=unconfined # a pod's default (no seccompProfile set)
	-v /sys/fs/bpf:/sys/fs/bpf:rslave -v "$FW_TMP/config:/etc/fastwall:ro"
	--mount type=tmpfs,destination=/run/fastwall,tmpfs-size=1m)
[ "$RO" = yes ] && opts+=(--read-only)
[ "$NNP" = yes ] && opts+=(--security-opt no-new-privileges)
check "podman run starts the fastwalld container" \
	pm run -d "${opts[@]}" --entrypoint "${CMD[0]}" localhost/fastwall:test "${CMD[@]:1}"
probe() { fw_ns "$NS_POD" curl -s -m 2 "http://127.0.0.1:9464$1"; }
if ! fw_eventually 30 bash -c "[ \"\$(nsenter --net=/run/netns/$NS_POD curl -s -m 2 http://127.0.0.1:9464/readyz)\" = ready ]"; then
	pm logs "fw-$FW_ID" 2>&1 | tail -n 20 | sed 's/^/#   /'
fi
check_eq "/readyz on the pod's loopback says ready" "$(probe /readyz)" ready
check_eq "/healthz on the pod's loopback says ok" "$(probe /healthz)" ok
C=fw-$FW_ID
# the bounding set of exactly BPF, PERFMON, NET_ADMIN, SYS_ADMIN, IPC_LOCK
# and SYS_RESOURCE (bits 39, 38, 12, 21, 14, 24), as far as this host has them
want_bnd=$(printf '%016x' $(( (1 << 39 | 1 << 38 | 1 << 12 | 1 << 21 | 1 << 14 | 1 << 24) &
	0x$(sed -n 's/^CapBnd:\t//p' /proc/self/status) )))
check_eq "fastwalld runs with the manifest's capabilities only" \
	"$(pm exec "$C" sed -n 's/^CapBnd:\t//p' /proc/1/status)" "$want_bnd"
check_eq "fastwalld runs with no_new_privs" "$(pm exec "$C" sed -n 's/^NoNewPrivs:\t//p' /proc/1/status)" 1
check_fails "the container's root is read-only" pm exec "$C" touch /usr/x
subjects() { pm exec "$C" fastwall --bpffs "$BPFFS" subjects | grep -q sandbox-a; }
check "fastwall in the image reads the pins" subjects
pinned() { pm exec "$C" bpftool map show pinned "$BPFFS/fastwall_dispatch" | grep -q fastwall; }
check "bpftool in the image reads the pinned maps" pinned

# --- verdicts, seen on the far side -------------------------------------------
SB=$(fw_sb_ns a)
check "the sandbox reaches 198.51.100.10:80 (allowed)" fw_http "$SB" http://198.51.100.10/ 2
check_fails "the sandbox does not reach 203.0.113.10:80 (denied by default)" fw_http "$SB" http://203.0.113.10/ 1
fw_udp "$SB" 198.51.100.10 9001 1 >/dev/null 2>&1
fw_udp "$SB" 203.0.113.10 9001 1 >/dev/null 2>&1
check "198.51.100.10 saw the sandbox's datagram" grep -q '10.42.0.2' "$FW_TMP/seen-allowed"
check_fails "203.0.113.10 saw nothing from the sandbox" grep -q '10.42.0.2' "$FW_TMP/seen-denied"

# --- stop: the kernel keeps enforcing -----------------------------------------
check "podman stop ends fastwalld" pm stop -t 10 "$C"
check_eq "fastwalld exited 0 on SIGTERM" "$(pm inspect -f '{{.State.ExitCode}}' "$C")" 0
check "its log says it stopped on the signal" bash -c "$(printf '%q ' "${PM[@]}") logs $C 2>&1 | grep -q 'stopping on signal 15'"
check_fails "with the container gone, 203.0.113.10 is still denied" fw_http "$SB" http://203.0.113.10/ 1
echo "# $((SECONDS - t0)) s"
fw_summary
