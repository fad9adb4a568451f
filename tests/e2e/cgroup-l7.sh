#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer-7 pinning of process sandboxes, through fastwalld's own attach,
# without the real proxy: a stand-in (cgroup_l7.py serve, in no sandbox)
# listens on the proxy's port on loopback and answers each connection with
# the fastwall_l7_nat entry of its peer, as the proxy looks it up. A
# pinned sandbox's connect to a learned address on 443 reaches it, its
# getpeername says the original, the entry holds the original; with the
# proxy marked down the connect fails (EPERM); UDP 443 is refused; the
# proxy's port addressed directly is refused; a CIDR-allowed destination
# and a sandbox without l7 are not redirected. The pinning state
# (fastwall_config flags, fastwall_l7_ports, the subject's flag, the
# cgroup programs' proxy ports) is written straight into the maps after
# fastwalld started, as its l7 configuration will write it.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
fw_require

CG_MNT=/tmp/fastwall-cgl7-$FW_ID
CG_PARENT=fwl7-$FW_ID
CG=$CG_MNT/$CG_PARENT
L7="$FW_E2E_DIR/cgroup_l7.py"
PROBE_SOCK="$FW_E2E_DIR/sockprobe.py"
PROXY_LOG=$FW_TMP/proxy.log
PROXY_PID=
LEARNED=198.51.100.10 # leased to both sandboxes; served on port 80
CIDR=203.0.113.10     # allowed by a CIDR rule; served on port 80
FW_CF_L7=$((1 << 6))
FW_CF_L7_UP=$((1 << 7))
FW_SF_L7=$((1 << 2))

l7_cleanup() {
	set +e
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	fw_cg_teardown "$CG" "$CG_MNT"
	fw_cleanup
}
trap l7_cleanup EXIT

fw_topology
fw_serve_internet
fw_cg_mount "$CG_MNT"

cat >"$FW_CFG" <<EOF2
log_level: info
datapath:
  bpffs: $BPFFS
  events: { rate: 1000, burst: 1000 }
processes:
  cgroup_root: $CG_MNT
  cgroup_parent: $CG_PARENT
subjects:
  - name: pin-$FW_ID
    cgroup: pin
    policy:
      egress:
        - { action: allow, target: $CIDR }
  - name: plain-$FW_ID
    cgroup: plain
    policy:
      egress:
        - { action: allow, target: $CIDR }
EOF2
fw_start_daemon || exit 1
check "fastwalld attached the cgroup programs to $CG_PARENT" \
	fw_wait_log "process sandboxes: cgroup programs on $CG" 1 2

l7() { "$FW_PY" -S "$L7" "$@"; }
in_cg() { # CGROUP CMD...: a process of that sandbox
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	fw_ns "$NS_POD" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
probe() { # CGROUP MODE HOST PORT WANT
	in_cg "$CG/$1" "$FW_PY" "$PROBE_SOCK" "$2" "$3" "$4" --want "$5"
}
id_of() { fw_cli subjects | awk -v n="$1-$FW_ID" '$2 == n { print $1; exit }'; }
cgid_of() { stat -c %i "$CG/$1"; }
connections() { [ -f "$PROXY_LOG" ] && wc -l <"$PROXY_LOG" || echo 0; }

PIN_ID=$(id_of pin)
PLAIN_ID=$(id_of plain)
for id in "$PIN_ID" "$PLAIN_ID"; do
	"$FW_PY" -S "$FW_ACT_CLIENT" learned-add "$BPFFS" "$id" "$LEARNED" --secs 600
done
check "before pinning: the pinned sandbox reaches its learned address on 80" \
	probe pin tcp "$LEARNED" 80 ok

# the pinning state, as fastwalld's l7 configuration will write it
# (the cgroup programs' own proxy ports: fw_cg_l7_sync)
l7 port "$BPFFS" 443 15443 1
l7 port "$BPFFS" 80 15080 2
l7 subject "$BPFFS" "$(cgid_of pin)" "$FW_SF_L7"
BSS=
for prog in $(bpftool -j cgroup show "$CG" | "$FW_PY" -c 'import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p["name"] == "fw_cg_connect4"))'); do
	BSS=$(bpftool -j prog show id "$prog" | "$FW_PY" -c 'import json, subprocess, sys
for m in json.load(sys.stdin).get("map_ids", []):
    info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(m)],
                                     capture_output=True, text=True).stdout)
    if info.get("name", "").endswith(".bss"):
        print(m)')
done
check "the cgroup programs' proxy ports are found" test -n "$BSS"
l7 proxy-ports "$BSS" 15443 15080
l7 config "$BPFFS" --set $((FW_CF_L7 | FW_CF_L7_UP))

# the stand-in proxy, in the pod namespace and no sandbox
fw_ns "$NS_POD" "$FW_PY" -S "$L7" serve "$BPFFS" 15443 "$PROXY_LOG" >"$FW_TMP/proxy.out" 2>&1 &
PROXY_PID=$!
fw_wait_file_has() { for _ in $(seq 50); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
check "the stand-in proxy listens on 127.0.0.1 and ::1 port 15443" \
	fw_wait_file_has "$FW_TMP/proxy.out" listening

got=$(in_cg "$CG/pin" "$FW_PY" -S "$L7" connect "$LEARNED" 443)
check_eq "pinned: 443 of a learned address reaches the proxy; getpeername says the original; the entry holds it" \
	"$got" "$LEARNED 443 | $LEARNED 443 $PIN_ID 1 0"
got=$(in_cg "$CG/pin" "$FW_PY" -S "$L7" connect "::ffff:$LEARNED" 443)
check_eq "pinned: an IPv6 socket's v4-mapped connect too" \
	"$got" "::ffff:$LEARNED 443 | $LEARNED 443 $PIN_ID 1 0"
check_eq "the proxy's port addressed directly: EPERM" \
	"$(probe pin tcp 127.0.0.1 15443 x | tail -1)" EPERM
check_eq "... and on ::1" "$(probe pin tcp ::1 15443 x | tail -1)" EPERM
check_ge "... refused as the proxy's (pod-local), not by the policy" \
	"$(fw_subject_counter "pin-$FW_ID" "drop pod-local")" 2
check_eq "pinned: UDP 443 of a learned address (QUIC): EPERM" \
	"$(probe pin udp "$LEARNED" 443 x | tail -1)" EPERM
n=$(connections)
check "pinned: a CIDR-allowed destination is not redirected (its own server answers)" \
	probe pin tcp "$CIDR" 80 ok
check "not pinned: the sandbox without l7 reaches the learned address on 80" \
	probe plain tcp "$LEARNED" 80 ok
check_eq "not pinned: its 443 is no proxy's (the server refuses)" \
	"$(probe plain tcp "$LEARNED" 443 x | tail -1)" ECONNREFUSED
check_eq "not pinned: its UDP 443 is not QUIC-refused" \
	"$(probe plain udp "$LEARNED" 443 x | tail -1 | grep -c EPERM)" 0
check_eq "the proxy saw none of those" "$(connections)" "$n"
check_ge "fastwall subjects counts l7-proxy for the pinned sandbox" \
	"$(fw_subject_counter "pin-$FW_ID" "pass l7-proxy")" 2
check_ge "... and l7-quic" "$(fw_subject_counter "pin-$FW_ID" "drop l7-quic")" 1

l7 config "$BPFFS" --clear "$FW_CF_L7_UP"
check_eq "proxy down: the pinned connect fails at once (EPERM)" \
	"$(probe pin tcp "$LEARNED" 443 x | tail -1)" EPERM
check_eq "proxy down: the proxy saw nothing" "$(connections)" "$n"
check_ge "fastwall subjects counts l7-proxy-down" \
	"$(fw_subject_counter "pin-$FW_ID" "drop l7-proxy-down")" 1

fw_summary
