# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by tests/vm/run.sh (its helpers, topology and config; fastwalld
# stopped): per-subject bandwidth in mode edt on this kernel, whose fq
# qdisc the host of the e2e tests may lack. fastwalld starts with a
# bandwidth section on up0 (mode edt: it makes fq the root qdisc) and
# sandbox-a limited to 2 Mbit/s; one iperf3 TCP flow from sandbox-a must
# get about that, paced (the departure times written after forwarding
# reach fq on this kernel), and detach must give up0 its default qdisc
# back. Short runs: the guest is emulated.
# Leaves fastwalld stopped and the config as it found it.

echo "# 6d. bandwidth: edt pacing through fq on the uplink"
T_BW=$SECONDS
BW_RATE=250000 # bytes per second: 2 Mbit/s
BW_CFG=$CFG.bw

# goodput in bytes per second of a 5-second iperf3 flow from NS (the
# first 2 seconds left out: slow start fills fq up to the horizon, as
# nothing holds a forwarded flow's sender back before the uplink), from
# its receiver line in Kbits/sec
bw_goodput() {
	in_ns "$1" timeout 40 iperf3 -c 198.51.100.10 -p 5201 -t 5 -O 2 -f k 2>/dev/null |
		awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Kbits/sec") v = $(i - 1) }
			END { printf "%d\n", v * 1000 / 8 }'
}
bw_root_qdisc() { tc -n "$POD" qdisc show dev up0 | awk '/ root / { print $2, $3; exit }'; }

if ! command -v iperf3 >/dev/null; then
	skip "bandwidth (edt)" "no iperf3"
	feature bw_edt not_run
	return 0
fi
# fq from the kernel's modules (scripts/vmtest/kernels.sh caches sch_fq):
# without it mode edt is refused, as docs/bandwidth.md says
if ! tc -n "$POD" qdisc add dev up0 root handle 1: fq 2>/dev/null; then
	skip "bandwidth (edt)" "no sch_fq on this kernel"
	feature bw_edt no_fq
	return 0
fi
tc -n "$POD" qdisc del dev up0 root
in_ns "$INET" iperf3 -s -B 198.51.100.10 -p 5201 >/dev/null 2>&1 &
BW_SRV=$!
# sandbox-a's policy gets the limit; the section names the uplink
sed '0,/^      defaultAction: deny$/s//      defaultAction: deny\n      fastwallBandwidth: { rate: '"$BW_RATE"' }/' \
	"$CFG" >"$BW_CFG"
printf 'bandwidth:\n  interfaces: [up0]\n  mode: edt\n  horizon: 1\n' >>"$BW_CFG"
BW_WAS=$(bw_root_qdisc)
touch "$LOG"
BW_READY=$(grep -c 'fastwalld ready' "$LOG")
in_ns "$POD" "$FASTWALLD" -c "$BW_CFG" run >>"$LOG" 2>&1 &
DAEMON=$!
if log_has 'bandwidth on up0: edt' 60; then
	ok "bandwidth: mode edt on up0, fq its root qdisc ($(bw_root_qdisc))"
	feature bw_edt yes
else
	not_ok "bandwidth: mode edt on up0"
	grep -E 'bandwidth|error' "$LOG" | tail -5 | sed 's/^/#   | /'
	feature bw_edt no
fi
check "bandwidth: up0's root qdisc is fastwall's fq" test "$(bw_root_qdisc)" = "fq fa5b:"
# the limits are written with the subjects, before "ready"
for ((i = 0; i < 600; i++)); do
	[ "$(grep -c 'fastwalld ready' "$LOG")" -gt "$BW_READY" ] && break
	read -rt 0.1 <> <(:) || true
done
G=$(bw_goodput "$SBA")
echo "# bandwidth: sandbox-a, one TCP flow, limit $BW_RATE B/s (edt): goodput ${G:-0} B/s"
check "bandwidth: the flow gets 70-110 % of its limit (${G:-0} B/s)" \
	test "${G:-0}" -ge $((BW_RATE * 70 / 100)) -a "${G:-0}" -le $((BW_RATE * 110 / 100))
check "bandwidth: its packets were paced (fastwall_bandwidth_packets_total paced)" \
	in_ns "$POD" bash -c "curl -s --max-time 5 http://127.0.0.1:9464/metrics |
		grep -Eq '^fastwall_bandwidth_packets_total\\{outcome=\"paced\"\\} [1-9]'"
kill -TERM "$DAEMON"
wait "$DAEMON" 2>/dev/null
DAEMON=""
kill "$BW_SRV" 2>/dev/null
wait "$BW_SRV" 2>/dev/null
in_ns "$POD" "$FASTWALLD" -c "$BW_CFG" detach >/dev/null 2>&1
check "bandwidth: detach gives up0 its default qdisc back ($BW_WAS)" \
	test "$(bw_root_qdisc)" = "$BW_WAS"
rm -f "$BW_CFG"
echo "# bandwidth: $((SECONDS - T_BW))s"
