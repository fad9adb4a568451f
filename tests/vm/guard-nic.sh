#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The port guard on a NIC whose driver runs XDP on its own receive pages:
# two virtio-net NICs of the guest, joined by a hub inside qemu (make
# vmtest with VMTEST_GUARD_NIC=1 adds them, MACs 52:54:00:fa:57:01 for the
# flooder, :02 for the pod). scripts/bench-guard.sh runs on them
# (GUARD_NICS): the flooder's NIC in its namespace, the pod's as gu0, the
# forms none, xdp (native on virtio_net), tc, nft-dev, nft-inet and auto
# interleaved over rounds. Run by tests/vm/run.sh when VMTEST_GUARD_NIC=1,
# or on its own as the guest's command (VMTEST_CMD).
#
# The guest has one CPU: the flooder, the trusted client, the receiver
# and the whole receive path share it, so a drop per busy second counts
# the sender's cost too, the same for every form. Under TCG the absolute
# rates mean nothing; the ratios between forms of one run do.
# Prints "ok - ..." / "not ok - ...", bench-guard's output as comments,
# "# gnic FORM key=value..." lines that scripts/vmtest/vmtest.sh collects,
# and "N passed, N failed, N skipped" last. Fails only when a NIC is
# missing or a form does not do its job, never on a figure.
# VMTEST_GUARD_NIC_ROUNDS (3), _DURATION (2 s per phase), _FORMS.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${VMTEST_BUILD:-${BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${VMTEST_GUARD_NIC_ROUNDS:-3}
DURATION=${VMTEST_GUARD_NIC_DURATION:-2}
FORMS=${VMTEST_GUARD_NIC_FORMS:-none xdp tc nft-dev nft-inet auto}
MAC_FLOOD=52:54:00:fa:57:01 MAC_POD=52:54:00:fa:57:02
TMP=$(mktemp -d "/tmp/fastwall-gnic.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PASSED=0 FAILED=0

ok() { echo "ok - $1"; PASSED=$((PASSED + 1)); }
not_ok() { echo "not ok - $1"; FAILED=$((FAILED + 1)); }
summary() {
	echo "$PASSED passed, $FAILED failed, 0 skipped"
	[ "$FAILED" -eq 0 ]
	exit
}

# nic MAC: the interface with that address in this namespace
nic() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && echo "${d##*/}" && return 0
	done
	return 1
}

echo "# the port guard on two virtio-net NICs, kernel $(uname -r)"
[ "$(id -u)" = 0 ] || { echo "tests/vm/guard-nic.sh needs root" >&2; exit 2; }
# no udev in the guest: nothing loads a PCI device's driver by itself
for m in virtio_net nf_tables; do
	if ! out=$(modprobe "$m" 2>&1); then
		not_ok "module $m loads: $out"
		summary
	fi
done
# find_nics: sets fl and pd, the flooder's and the pod's NICs; a NIC comes
# back from a deleted namespace a moment later
find_nics() {
	fl='' pd=''
	for _ in $(seq 50); do
		fl=$(nic $MAC_FLOOD) && pd=$(nic $MAC_POD) && return 0
		read -rt 0.1 <> <(:) || true
	done
	return 1
}
if ! find_nics; then
	not_ok "two virtio-net NICs ($MAC_FLOOD, $MAC_POD): have '${fl}' '${pd}' (make vmtest adds them with VMTEST_GUARD_NIC=1)"
	summary
fi
drv=$(readlink "/sys/class/net/$pd/device/driver")
drv=${drv##*/}
if [ "$drv" = virtio_net ]; then
	ok "the pod's NIC $pd and the flooder's $fl are virtio_net"
else
	not_ok "the pod's NIC $pd is virtio_net (driver '$drv')"
	summary
fi

# the forms' counters, the flood's and the trusted flow's rates: figures;
# bench-guard fails when a form lets the flood through or stops the
# trusted flow, or when a form can't be put on (native XDP refused)
bench() { # FORMS
	# a process takes 50-200 ms to start under emulation: the receiver
	# gets half a second to bind before the senders start
	GUARD_NICS="$fl $pd" FORMS="$1" ROUNDS="$ROUNDS" DURATION="$DURATION" BUILD="$BUILD" SINK_WAIT=0.5 \
		bash "$ROOT/scripts/bench-guard.sh" 2>&1 | tee "$TMP/bench" | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	if [ "$rc" -eq 0 ]; then
		ok "bench-guard on virtio-net ($1): every form drops the flood and passes the trusted flow"
		return 0
	fi
	why=$(grep -m1 -E "can't attach the guard|^fatal:|bench-guard: " "$TMP/bench" | sed 's/^ *| *//')
	not_ok "bench-guard on virtio-net ($1), status $rc: ${why:-see its output above}"
	return 1
}
if ! bench "$FORMS" && grep -qE "xdp: gu0 has no native XDP|can't attach the guard to gu0 \(native XDP\)" "$TMP/bench"; then
	# native XDP refused on this kernel: the error is above; the other forms still
	echo "# native XDP does not attach to virtio_net here: the run again without xdp and auto"
	rest=$(for f in $FORMS; do case $f in xdp | auto) ;; *) printf '%s ' "$f" ;; esac; done)
	find_nics && bench "${rest% }"
fi

# the medians table: form, drops/s, drops/s/core, trusted pps,
# trusted/core, pass %, trusted under the flood, kept %
echo "# gnic run rounds=$ROUNDS duration=$DURATION"
awk '/^form +drops\/s / { t = 1; next } t && NF == 0 { exit }
	t && NF == 8 { f = $1; gsub(/-/, "_", f)
		printf "# gnic %s drops_s=%s drops_core=%s trusted_pps=%s trusted_core=%s pass_pct=%s flood_trusted_pps=%s kept_pct=%s\n",
			f, $2, $3, $4, $5, $6, $7, $8 }' "$TMP/bench"
# the paired ratios: "xdp / tc, drops per core (paired): x1.23"
awk '/^[a-z-]+ \/ [a-z-]+, drops per core \(paired/ { a = $1; b = $3; sub(/,$/, "", b)
		v = $NF; sub(/^x/, "", v); gsub(/-/, "_", a); gsub(/-/, "_", b); r = r " " a "_" b "=" v }
	END { if (r != "") print "# gnic ratio" r }' "$TMP/bench"
hook=$(sed -n 's/^auto (the default) on gu0, as fastwall status says it: //p' "$TMP/bench")
[ -n "$hook" ] && echo "# gnic auto_hook is=${hook// /_}"
summary
