#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The suite `make vmtest` runs inside each kernel's VM (scripts/vmtest/):
#   1. the whole BPF_PROG_TEST_RUN verdict table ($BUILD/tests/bpf_verdicts)
#      and the cgroup programs' ($BUILD/tests/bpf_cgroup_verdicts),
#      the pinned-map ABI checks, and what a control-plane operation costs
#      next to a plain array update ($BUILD/tests/cp_kernel; figures only);
#   2. the loader: fastwalld checks, loads, pins, attaches to a bridge's
#      ports, and detaches (--purge);
#   3. one end-to-end scenario with real TCP through network namespaces and
#      a bridge: allowed passes, denied is dropped, DNS through the proxy
#      (dnsmasq upstream, dig client; the port and address rewrites with
#      their checksums on this kernel) opens a default-deny destination,
#      the port guard on the uplink (the hook mode auto gives it, TC
#      ingress on this veth; native XDP by mode xdp; then TC by SIGHUP), a
#      restart keeps enforcing and keeps the
#      state; process sandboxes (tests/vm/procs.sh: the cgroup hooks and
#      fastwall run); layer-7 pinning (tests/vm/l7.sh: HTTP redirected to
#      fastwalld's nginx proxy, the right Host passes, another is refused);
#      bandwidth (tests/vm/bandwidth.sh: a flow paced by fq at its limit;
#      skipped on a kernel without sch_fq);
#   4. with VMTEST_GUARD_NIC=1 only: the port guard against nftables on two
#      virtio-net NICs (tests/vm/guard-nic.sh, scripts/bench-guard.sh).
#
# Guests are emulated (10-40x slower, ~50-200 ms per process start), so
# this spawns few processes: ip -batch for the topology, bash's /dev/tcp
# as the client, busybox httpd as the server, no python.
# Prints "ok - ..." / "not ok - ..." / "ok - ... # SKIP ...", feature lines
# "# feature NAME VALUE" for docs/kernels.md, and "N passed, N failed,
# N skipped" last. Runs on the host too (as root), in its own namespaces.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${VMTEST_BUILD:-${BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
FASTWALLD=$BUILD/fastwalld
FASTWALL=$BUILD/fastwall
ID=vt$$
BPFFS=/sys/fs/bpf/fastwall-$ID
TMP=$(mktemp -d "/tmp/fastwall-vm.XXXXXX")
LOG=$TMP/fastwalld.log
CFG=$TMP/fastwalld.yaml
POD=$ID-pod INET=$ID-inet SBA=$ID-sba SBB=$ID-sbb
PASSED=0 FAILED=0 SKIPPED=0 DAEMON=""

ok() { echo "ok - $1"; PASSED=$((PASSED + 1)); }
not_ok() { echo "not ok - $1"; FAILED=$((FAILED + 1)); }
# shellcheck disable=SC2317 # the TAP skip line: no check skips on the kernels we run
skip() { echo "ok - $1 # SKIP $2"; SKIPPED=$((SKIPPED + 1)); }
check() { # DESC CMD...: ok when CMD succeeds
	local d=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then ok "$d"; else not_ok "$d" && sed 's/^/#   /' "$TMP/out" && return 1; fi
}
check_fails() { # DESC CMD...: ok when CMD fails
	local d=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then not_ok "$d" && sed 's/^/#   /' "$TMP/out"; else ok "$d"; fi
}
feature() { echo "# feature $1 $2"; }
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }
# tcp NS HOST [TIMEOUT]: an HTTP exchange over bash's /dev/tcp
# shellcheck disable=SC2317 # called through check, which shellcheck does not follow
tcp() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	in_ns "$1" timeout "${3:-3}" bash -c 'exec 3<>"/dev/tcp/$0/80" && printf "GET / HTTP/1.0\r\n\r\n" >&3 &&
		read -r l <&3 && [[ $l == HTTP/1.* ]]' "$2"
}
# tcp_port NS HOST PORT [TIMEOUT]: the same on another port
# shellcheck disable=SC2317 # called through check, which shellcheck does not follow
tcp_port() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	in_ns "$1" timeout "${4:-3}" bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "GET / HTTP/1.0\r\n\r\n" >&3 &&
		read -r l <&3 && [[ $l == HTTP/1.* ]]' "$2" "$3"
}
# log_has REGEX [TIMEOUT_S]: waits for a daemon log line (bash only)
log_has() {
	local i
	for ((i = 0; i < ${2:-5} * 10; i++)); do
		[[ $(<"$LOG") =~ $1 ]] && return 0
		read -rt 0.1 <> <(:) || true
	done
	return 1
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	set +e
	[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
	for ns in $SBA $SBB $INET $POD; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p"; done
		ip netns del "$ns" 2>/dev/null
	done
	[ -d "$BPFFS" ] && "$FASTWALLD" -c "$CFG" detach --purge >/dev/null 2>&1
	rm -rf "$TMP" "$BPFFS"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
summary() {
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ "$FAILED" -eq 0 ]
	exit
}

[ "$(id -u)" = 0 ] || { echo "tests/vm/run.sh needs root" >&2; exit 2; }
echo "# kernel $(uname -r)"
if [ -e /sys/kernel/btf/vmlinux ]; then feature btf yes; else feature btf no; fi
feature jit "$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo none)"

echo "# 1. BPF_PROG_TEST_RUN verdict table"
if ip link add "${ID}d" type dummy 2>/dev/null; then
	ip link del "${ID}d"
	feature dummy yes
else
	feature dummy no
fi
# counted LABEL OUT CMD...: runs one of the C test binaries, which end with
# "N passed, M failed"; shows its failures, sets CP and CF and adds them
# to the totals. A non-zero exit, or no row passed, with no failure
# counted is one failure.
counted() {
	local label=$1 out=$2 rc t0=$SECONDS
	shift 2
	"$@" >"$out" 2>&1
	rc=$?
	grep -E '^(FAIL|not ok)|^(can|fixture|libbpf).*' "$out" | sed "s/^/# $label: /"
	read -r CP CF < <(awk 'match($0, /[0-9]+ passed, [0-9]+ failed/) {
		split(substr($0, RSTART, RLENGTH), w, " "); p = w[1]; f = w[3] }
		END { print p + 0, f + 0 }' "$out")
	if { [ "$rc" -ne 0 ] || [ "$CP" -eq 0 ]; } && [ "$CF" -eq 0 ]; then
		CF=1
		tail -20 "$out" | sed "s/^/# $label: /"
	fi
	PASSED=$((PASSED + CP)) FAILED=$((FAILED + CF))
	CSECS=$((SECONDS - t0))
}

# the verdict tables three times: small policies as small sets and
# larger ones as range tables (the default), then every policy in range
# tables (FASTWALL_RULE_SET_MAX=0), then every one in the slot tries
# (FASTWALL_RULE_RANGE_MAX=0 too), so all three forms run here
FORMS="default ranges tries"
form_env() {
	case $1 in
	ranges) echo FASTWALL_RULE_SET_MAX=0 ;;
	tries) echo FASTWALL_RULE_SET_MAX=0 FASTWALL_RULE_RANGE_MAX=0 ;;
	esac
}
tp=0 tf=0
for form in $FORMS; do
	# shellcheck disable=SC2046 # one word per variable
	counted verdicts "$TMP/verdicts" env $(form_env "$form") "$BUILD/tests/bpf_verdicts"
	echo "# verdict table (rule forms: $form): $CP rows passed, $CF failed (${CSECS}s)"
	tp=$((tp + CP)) tf=$((tf + CF))
done
feature test_run "$tp/$((tp + tf))"

echo "# 1b. pinned-map ABI: migration from the previous layout, refusals"
if [ -x "$BUILD/tests/abi_migrate" ]; then
	counted abi "$TMP/abi" "$BUILD/tests/abi_migrate"
	echo "# ABI checks: $CP passed, $CF failed (${CSECS}s)"
else
	not_ok "$BUILD/tests/abi_migrate is missing"
fi

echo "# 1b2. the cgroup programs' verdict table (process sandboxes)"
if [ -x "$BUILD/tests/bpf_cgroup_verdicts" ]; then
	tp=0 tf=0
	for form in $FORMS; do
		# shellcheck disable=SC2046 # one word per variable
		counted "cgroup verdicts" "$TMP/cgv" env $(form_env "$form") \
			"$BUILD/tests/bpf_cgroup_verdicts"
		echo "# cgroup verdict table (rule forms: $form): $CP rows passed, $CF failed (${CSECS}s)"
		tp=$((tp + CP)) tf=$((tf + CF))
	done
	feature cgroup_test_run "$tp/$((tp + tf))"
else
	not_ok "$BUILD/tests/bpf_cgroup_verdicts is missing"
fi

echo "# 1c. control-plane cost: add, update, rebind, remove against a plain array update"
# the figures are printed and collected for docs/kernels.md; only a failed
# operation fails the step, never its timing
if [ -x "$BUILD/tests/cp_kernel" ]; then
	t0=$SECONDS
	# the guests boot with rcupdate.rcu_expedited=1 (a faster boot), which
	# ends grace periods early and would hide what an operation waiting for
	# one costs on a normally booted kernel: off for this step only
	rexp=$(cat /sys/kernel/rcu_expedited 2>/dev/null || true)
	[ "$rexp" = 1 ] && echo 0 >/sys/kernel/rcu_expedited
	"$BUILD/tests/cp_kernel" -n "${VMTEST_CP_OPS:-300}" -p "/sys/fs/bpf/fastwall-$ID-cp" >"$TMP/cp" 2>&1
	crc=$?
	[ "$rexp" = 1 ] && echo 1 >/sys/kernel/rcu_expedited
	grep -E '^cp_kernel: (kernel|first start|a policy|each further|an add costs|[0-9]+ CIDR rules)' "$TMP/cp" | sed 's/^/# /'
	sed -n 's/^\(cp .*\)$/# \1/p' "$TMP/cp"
	grep -E '^  (op|add|update|remove|rebind|plain) ' "$TMP/cp" | sed 's/^/# /'
	if [ "$crc" -eq 0 ] && grep -q '^cp result=ok' "$TMP/cp"; then
		ok "control-plane operations succeed ($((SECONDS - t0))s)"
	else
		not_ok "control-plane operations succeed (cp_kernel status $crc)"
		tail -20 "$TMP/cp" | sed 's/^/#   | /'
	fi
else
	not_ok "$BUILD/tests/cp_kernel is missing"
fi

echo "# 2. topology: pod bridge with two sandbox ports, a simulated internet"
{ ip netns add "$POD" && ip netns add "$INET" && ip netns add "$SBA" && ip netns add "$SBB"; } ||
	{ not_ok "create network namespaces"; summary; }
ip -b - <<EOF || not_ok "ip -batch (root ns)"
link add br0 netns $POD address 02:fa:57:00:00:01 type bridge
link add up0 netns $POD type veth peer name eth0 netns $INET
link add sb-a netns $POD type veth peer name eth0 netns $SBA
link add sb-b netns $POD type veth peer name eth0 netns $SBB
EOF
ip -n "$POD" -b - <<EOF || not_ok "ip -batch (pod)"
link set lo up
addr add 10.42.0.1/24 dev br0
addr add fd00:42::1/64 dev br0 nodad
link set br0 up
addr add 192.0.2.1/24 dev up0
addr add 2001:db8:1::1/64 dev up0 nodad
link set up0 up
link set sb-a master br0
link set sb-b master br0
link set sb-a up
link set sb-b up
route add default via 192.0.2.254
route add ::/0 via 2001:db8:1::254
EOF
ip -n "$INET" -b - <<EOF || not_ok "ip -batch (internet)"
link set lo up
addr add 192.0.2.254/24 dev eth0
addr add 2001:db8:1::254/64 dev eth0 nodad
link set eth0 up
addr add 198.51.100.10/32 dev lo
addr add 198.51.100.66/32 dev lo
addr add 203.0.113.10/32 dev lo
addr add 203.0.113.20/32 dev lo
addr add 198.51.100.53/32 dev lo
addr add 2001:db8::10/128 dev lo nodad
addr add 2001:db8::66/128 dev lo nodad
route add 10.42.0.0/24 via 192.0.2.1
route add fd00:42::/64 via 2001:db8:1::1
EOF
n=2
for ns in $SBA $SBB; do
	ip -n "$ns" -b - <<EOF || not_ok "ip -batch ($ns)"
link set lo up
addr add 10.42.0.$n/24 dev eth0
addr add fd00:42::$n/64 dev eth0 nodad
link set eth0 up
route add default via 10.42.0.1
route add ::/0 via fd00:42::1
EOF
	n=$((n + 1))
done
in_ns "$POD" bash -c 'echo 1 >/proc/sys/net/ipv4/ip_forward; echo 1 >/proc/sys/net/ipv6/conf/all/forwarding'
mkdir -p "$TMP/www" && echo hello >"$TMP/www/index.html"
# the internet's web server on every address of the namespace; -vv logs
# each request's remote address and path ("192.0.2.1:41234: url:/")
in_ns "$INET" busybox httpd -f -vv -p 80 -h "$TMP/www" >"$TMP/httpd.log" 2>&1 &
# the upstream resolver
cat >"$TMP/dnsmasq.conf" <<EOF
no-resolv
no-hosts
no-poll
bind-interfaces
listen-address=198.51.100.53
port=53
user=root
pid-file=
address=/#/
host-record=learned.example.com,203.0.113.10,600
host-record=denied.example.com,198.51.100.10,600
host-record=l7.example.com,203.0.113.20,600
EOF
in_ns "$INET" dnsmasq -k -C "$TMP/dnsmasq.conf" --log-facility="$TMP/dnsmasq.log" &
disown # killed with the namespace, without a job notice

cat >"$CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
  events: { rate: 1000, burst: 1000 }
dns:
  upstreams: [198.51.100.53]
  timeout: 3
subjects:
  - name: sandbox-a
    addresses: [10.42.0.2, "fd00:42::2"]
    interface: sb-a
    gateway: [10.42.0.1, "fd00:42::1"]
    private_cidr: [10.42.0.0/24, "fd00:42::/64"]
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: 198.51.100.0/24 }
        - { action: deny, target: 198.51.100.66 }
        - { action: allow, target: "2001:db8::10" }
        - { action: allow, target: learned.example.com }
        - { action: allow, target: l7.example.com }
  - name: sandbox-b
    addresses: [10.42.0.3, "fd00:42::3"]
    interface: sb-b
    gateway: [10.42.0.1, "fd00:42::1"]
    private_cidr: [10.42.0.0/24, "fd00:42::/64"]
    policy: { defaultAction: allow }
EOF
# control: the topology works without fastwall (also warms the ARP caches)
check "without fastwall: sandbox-a -> 203.0.113.10:80 passes" tcp "$SBA" 203.0.113.10 10

echo "# 3. loader: load, pin, attach to the bridge's ports"
check "fastwalld check accepts the config" in_ns "$POD" "$FASTWALLD" -c "$CFG" check
start_daemon() {
	nsenter --net="/run/netns/$POD" "$FASTWALLD" -c "$CFG" run >>"$LOG" 2>&1 &
	DAEMON=$!
}
: >"$LOG"
start_daemon
if log_has 'fastwalld ready' 60; then
	ok "fastwalld loads and becomes ready"
else
	not_ok "fastwalld loads and becomes ready"
	sed 's/^/#   | /' "$LOG"
fi
if [[ $(<"$LOG") =~ kernel\ [^:]*:\ ring\ buffer,\ array\ of\ maps,\ LPM\ trie,\ LRU\ hash,\ TC\ programs:\ ok ]]; then
	ok "fastwalld's kernel probe: ring buffer, array of maps, LPM trie, LRU hash, TC programs"
	for f in ringbuf array_of_maps lpm_trie lru_hash sched_cls; do feature "$f" yes; done
else
	not_ok "fastwalld's kernel probe passes"
	grep -E 'lacks|TC \(cls_bpf\)' "$LOG" | sed 's/^/#   | /'
	for f in ringbuf:'ring buffer' array_of_maps:'array of maps' lpm_trie:'LPM trie' lru_hash:'LRU hash' sched_cls:'TC (cls_bpf)'; do
		if grep -qE "lacks ${f#*:}|can't load ${f#*:}" "$LOG"; then
			feature "${f%%:*}" no
		else
			feature "${f%%:*}" yes
		fi
	done
fi
check "maps pinned under $BPFFS" test -e "$BPFFS/fastwall_dispatch" -a -e "$BPFFS/fastwall_learned"
check "attached to both bridge ports (log)" log_has 'attached to sb-a.*attached to sb-b|attached to sb-b.*attached to sb-a' 5
tc -n "$POD" filter show dev sb-a ingress >"$TMP/tc-in" 2>&1
tc -n "$POD" filter show dev sb-a egress >"$TMP/tc-eg" 2>&1
if grep -q bpf "$TMP/tc-in" && grep -q bpf "$TMP/tc-eg"; then
	ok "clsact with a cls_bpf filter on sb-a ingress and egress"
	feature tc_attach yes
else
	not_ok "clsact with a cls_bpf filter on sb-a ingress and egress"
	sed 's/^/#   | /' "$TMP/tc-in" "$TMP/tc-eg"
	feature tc_attach no
fi

echo "# 4. traffic through the bridge"
check "allowed tcp4: sandbox-a -> 198.51.100.10:80" tcp "$SBA" 198.51.100.10
check_fails "deny beats allow tcp4: sandbox-a -> 198.51.100.66:80 dropped" tcp "$SBA" 198.51.100.66 1
check_fails "default deny tcp4: sandbox-a -> 203.0.113.10:80 dropped" tcp "$SBA" 203.0.113.10 1
check "allowed tcp6: sandbox-a -> [2001:db8::10]:80" tcp "$SBA" 2001:db8::10
check_fails "default deny tcp6: sandbox-a -> [2001:db8::66]:80 dropped" tcp "$SBA" 2001:db8::66 1
check "default allow: sandbox-b -> 203.0.113.10:80" tcp "$SBB" 203.0.113.10
check "deny event logged for sandbox-a -> 203.0.113.10:80" \
	log_has 'deny subject=sandbox-a reason=default-deny proto=tcp src=10.42.0.2 sport=[0-9]+ dst=203.0.113.10 dport=80 if=sb-a' 5
status=$(in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" status 2>&1)
if [[ $status =~ drop\ +default-deny\ +([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; then
	ok "fastwall status counts the default-deny drops (${BASH_REMATCH[1]})"
else
	not_ok "fastwall status counts the default-deny drops"
	printf '%s\n' "$status" | sed 's/^/#   | /'
fi

echo "# 5. DNS through the proxy: learn, then answer"
# dig: one process per query, +tries=1 so a failure is one timeout
q() { in_ns "$1" dig +time=10 +tries=1 "${@:2}" 2>&1; }
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1" | head -1; }
check_fails "before resolving: sandbox-a -> 203.0.113.10:80 dropped" tcp "$SBA" 203.0.113.10 1
out=$(q "$SBA" @10.42.0.1 learned.example.com)
if [[ $(status_of "$out") == NOERROR && $out == *203.0.113.10* ]]; then
	ok "udp dns to the gateway answered by the proxy (port rewritten both ways)"
	feature dns_redirect yes
else
	not_ok "udp dns to the gateway answered by the proxy (port rewritten both ways)"
	printf '%s\n' "$out" | sed 's/^/#   | /'
	feature dns_redirect no
fi
check "learned address passes at once: sandbox-a -> 203.0.113.10:80" tcp "$SBA" 203.0.113.10 ||
	{ in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" leases; grep -v 'deny subject' "$LOG"; } 2>&1 | sed 's/^/#   | /'
# shellcheck disable=SC2317 # called through check, which shellcheck does not follow
leases_has() { in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" leases | grep -q "^sandbox-a .*$1 "; }
check "fastwall leases lists it" leases_has 203.0.113.10
out=$(q "$SBA" @198.51.100.53 denied.example.com)
if [[ $(status_of "$out") == NXDOMAIN ]]; then
	ok "dns to another resolver redirected (address rewritten both ways): NXDOMAIN"
else
	not_ok "dns to another resolver redirected (address rewritten both ways): NXDOMAIN"
	printf '%s\n' "$out" | sed 's/^/#   | /'
fi
out=$(q "$SBA" +tcp @10.42.0.1 learned.example.com)
check "tcp dns to the gateway answered" test "$(status_of "$out")" = NOERROR

echo "# 5b. the port guard on the uplink, added by SIGHUP"
# the pod's data-plane port 8443; the internet's eth0 address is trusted,
# its 198.51.100.66 (a host route's source) is not
in_ns "$POD" busybox httpd -f -p 192.0.2.1:8443 -h "$TMP/www" >"$TMP/httpd-pod.log" 2>&1 &
printf 'guard:\n  interfaces: [up0]\n  ports: [8443]\n  trusted: [192.0.2.254/32]\n' >>"$CFG"
kill -HUP "$DAEMON"
if log_has 'guard on up0 \(' 60; then
	hook=$(sed -n 's/.*guard on up0 (\([^)]*\)).*/\1/p' "$LOG" | tail -1)
	ok "the guard attaches to up0 ($hook)"
	feature guard_hook "${hook// /_}"
else
	not_ok "the guard attaches to up0"
	grep -E 'guard|reload' "$LOG" | sed 's/^/#   | /'
	feature guard_hook no
fi
# guard_checks HOOK: trusted passes, the untrusted source drops
guard_checks() {
	check "guard ($1): trusted internet -> pod:8443 passes" tcp_port "$INET" 192.0.2.1 8443 10
	in_ns "$INET" ip route add 192.0.2.1/32 dev eth0 src 198.51.100.66
	check_fails "guard ($1): untrusted internet -> pod:8443 dropped" tcp_port "$INET" 192.0.2.1 8443 1
	in_ns "$INET" ip route del 192.0.2.1/32 dev eth0 src 198.51.100.66
}
guard_checks "${hook:-auto}"
# native XDP on the veth, by SIGHUP: what mode auto no longer takes there
# (it copies each packet), still run on every kernel
guard_reload_to() { # MODE HOOK: mode MODE by SIGHUP; true once the log says HOOK took up0
	local n
	printf '  mode: %s\n' "$1" >>"$CFG"
	n=$(grep -c "guard on up0 ($2)" "$LOG")
	kill -HUP "$DAEMON"
	for _ in $(seq 300); do
		[ "$(grep -c "guard on up0 ($2)" "$LOG")" -gt "$n" ] && return 0
		read -rt 0.1 <> <(:) || true
	done
	return 1
}
if guard_reload_to xdp "native XDP"; then
	ok "the guard moves to native XDP on up0 by SIGHUP (mode xdp)"
	feature guard_xdp yes
else
	not_ok "the guard moves to native XDP on up0 by SIGHUP (mode xdp)"
	grep -E 'guard|reload' "$LOG" | sed 's/^/#   | /'
	feature guard_xdp no
fi
check "  with the warning of its cost on a veth" grep -q 'guard: up0 is a veth; native XDP copies' "$LOG"
guard_checks "native XDP"
sed -i '/^  mode: xdp$/d' "$CFG"
# the fallback, by SIGHUP: the same guard at TC ingress
guard_reload_to tc "TC ingress" || true
check "the guard moves to TC ingress on up0 by SIGHUP" grep -q 'guard on up0 (TC ingress)' "$LOG"
guard_checks "TC ingress"
sed -i '/^  mode: tc$/d' "$CFG"

ida=$(in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" subjects 2>&1 | awk '/^[0-9]/ && $2 == "sandbox-a" { print $1 }')

echo "# 6. restart: the kernel keeps enforcing while fastwalld is down"
kill -TERM "$DAEMON"
wait "$DAEMON"
DAEMON=""
check "fastwalld stops on SIGTERM, kernel state kept" log_has 'kernel state stays in place' 1
check "while down: allowed sandbox-a -> 198.51.100.10:80 passes" tcp "$SBA" 198.51.100.10
check_fails "while down: sandbox-a -> 198.51.100.66:80 still dropped" tcp "$SBA" 198.51.100.66 1
check "while down: learned sandbox-a -> 203.0.113.10:80 still passes" tcp "$SBA" 203.0.113.10
in_ns "$INET" ip route add 192.0.2.1/32 dev eth0 src 198.51.100.66
check_fails "while down: the guard still drops untrusted -> pod:8443" tcp_port "$INET" 192.0.2.1 8443 1
in_ns "$INET" ip route del 192.0.2.1/32 dev eth0 src 198.51.100.66
start_daemon
if log_has 'maps reused' 60; then
	ok "restarted fastwalld reuses the pinned maps"
	feature pin_reuse yes
else
	not_ok "restarted fastwalld reuses the pinned maps"
	feature pin_reuse no
fi
check "restarted fastwalld is ready" log_has 'fastwalld ready.*fastwalld ready' 30
ida2=$(in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" subjects 2>&1 | awk '/^[0-9]/ && $2 == "sandbox-a" { print $1 }')
check "sandbox-a keeps its subject id across the restart ($ida -> $ida2)" test -n "$ida" -a "$ida" = "$ida2"
check "after restart: learned sandbox-a -> 203.0.113.10:80 still passes" tcp "$SBA" 203.0.113.10
check_fails "after restart: sandbox-a -> [2001:db8::66]:80 still dropped" tcp "$SBA" 2001:db8::66 1
kill -TERM "$DAEMON"
wait "$DAEMON"
DAEMON=""

# process sandboxes: tests/vm/procs.sh (its own fastwalld start)
# shellcheck source=tests/vm/procs.sh
. "$ROOT/tests/vm/procs.sh"
# layer-7 pinning: tests/vm/l7.sh (its own fastwalld start)
# shellcheck source=tests/vm/l7.sh
. "$ROOT/tests/vm/l7.sh"
# bandwidth in mode edt, with fq: tests/vm/bandwidth.sh (its own fastwalld start)
# shellcheck source=tests/vm/bandwidth.sh
. "$ROOT/tests/vm/bandwidth.sh"

echo "# 7. loader: detach --purge"
check "fastwalld detach --purge succeeds" in_ns "$POD" "$FASTWALLD" -c "$CFG" detach --purge
tc -n "$POD" filter show dev sb-a ingress >"$TMP/tc-in" 2>&1
tc -n "$POD" filter show dev sb-b egress >"$TMP/tc-eg" 2>&1
check_fails "no fastwall filter left on sb-a ingress, sb-b egress" grep -q bpf "$TMP/tc-in" "$TMP/tc-eg"
check_fails "pins removed from $BPFFS" test -e "$BPFFS/fastwall_dispatch"
ip -n "$POD" -d link show up0 >"$TMP/up0" 2>&1
tc -n "$POD" filter show dev up0 ingress >>"$TMP/up0" 2>&1
check_fails "no guard left on up0" grep -q fw_guard "$TMP/up0"
check "without fastwall: sandbox-a -> 198.51.100.66:80 passes" tcp "$SBA" 198.51.100.66

# only when asked (make vmtest gives the guest its two NICs then): a
# benchmark of several minutes under emulation, figures for docs only
if [ "${VMTEST_GUARD_NIC:-}" = 1 ]; then
	echo "# 8. the port guard on two virtio-net NICs (tests/vm/guard-nic.sh)"
	t0=$SECONDS
	bash "$ROOT/tests/vm/guard-nic.sh" | tee "$TMP/gnic"
	read -r gp gf < <(awk '/^[0-9]+ passed, [0-9]+ failed/ { p = $1; f = $3 } END { print p + 0, f + 0 }' "$TMP/gnic")
	[ "$gp" -eq 0 ] && [ "$gf" -eq 0 ] && gf=1 && echo "not ok - tests/vm/guard-nic.sh gave no result"
	echo "# guard on virtio-net: $gp passed, $gf failed ($((SECONDS - t0))s)"
	PASSED=$((PASSED + gp)) FAILED=$((FAILED + gf))
fi
summary
