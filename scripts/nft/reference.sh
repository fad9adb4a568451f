#!/usr/bin/env bash
# Ruleset generator for the reference nftables egress design (peer 2 of
# scripts/bench-nft.sh), the design fastwall replaces:
#
#   table inet T
#     prerouting (hook prerouting, mangle priority): one `ip saddr X jump mark_X`
#       per subject; mark_X sets meta mark 0x2 when the destination is allowed
#       (deny set first: deny beats allow), never accepts;
#     forward (hook forward): ct state established,related accept; 853 drops;
#       the fail-closed mark check `meta mark != 0x2 drop`; one
#       `ip saddr X jump subj_X` per subject (subj_X re-checks the deny set);
#       no explicit accept on the subject path (the reference avoids accept
#       because of bridge-nf-call-iptables);
#     per subject: deny_X and allow_X interval sets, learned_X timeout set.
#   The per-subject DNS REDIRECT (nat) of the reference is left out: the
#   benchmark traffic is not DNS.
#
# usage: reference.sh N RULES LEARNED [MODE [I]]
#   MODE full (default): the whole table for N subjects, preceded by
#        `delete table` so loading it again is the reference's rebuild
#   MODE without I: the same rebuild with subject index I left out (removal)
#   MODE subject I: `add` statements for one more subject with index I
#   MODE swap I: one transaction replacing subject I's allow/deny sets
#        (policy swap; learned addresses kept, as the reference does)
# Subjects: address of index i is 10.64.8.2 - N/2 + i, as in tests/bench/bench_tc.c
# (subject N/2 is 10.64.8.2, the benchmark traffic's source). Rules: rule 0
# allow 203.0.113.0/25, rule 1 deny 203.0.113.128/27, then pseudo-random
# v4 prefixes (/8../32, one in three deny) below 192/8 from bench_tc.c's
# generator (same seeds); learned k: 198.51.100.k, then 192.0.2.(k-256).
# Env: FWNFT_TABLE (default fwref), FWNFT_STYLE (reference|best; best.sh
# sets it), FWNFT_TIMEOUT (learned lease, default 300s).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: ${0##*/} N RULES LEARNED [full|without I|subject I|swap I]" >&2; exit 2; }
N=$1 RULES=$2 LEARNED=$3 MODE=${4:-full} IDX=${5:--1}
STYLE=${FWNFT_STYLE:-reference}
case $STYLE in reference) DEF_TABLE=fwref ;; best) DEF_TABLE=fwbest ;; *) echo "bad FWNFT_STYLE" >&2; exit 2 ;; esac
TABLE=${FWNFT_TABLE:-$DEF_TABLE}
[[ $N =~ ^[0-9]+$ && $RULES =~ ^[0-9]+$ && $LEARNED =~ ^[0-9]+$ && $N -ge 1 && $RULES -ge 2 && $LEARNED -le 512 ]] ||
	{ echo "${0##*/}: N >= 1, RULES >= 2, LEARNED <= 512" >&2; exit 2; }
case $MODE in full | without | subject | swap) ;; *) echo "${0##*/}: bad mode $MODE" >&2; exit 2 ;; esac
[[ $MODE == full || $IDX =~ ^[0-9]+$ ]] || { echo "${0##*/}: mode $MODE needs an index" >&2; exit 2; }

exec awk -v n="$N" -v rules="$RULES" -v learned="$LEARNED" -v mode="$MODE" -v idx="$IDX" \
	-v style="$STYLE" -v T="$TABLE" -v tmo="${FWNFT_TIMEOUT:-300s}" '
function lcg() { seed = (seed * 1664525 + 1013904223) % 4294967296; return int(seed / 256) }
function ip(a) { return sprintf("%d.%d.%d.%d", int(a / 16777216), int(a / 65536) % 256, int(a / 256) % 256, a % 256) }
function saddr(i) { return center - int(n / 2) + i }
function sname(i) { return sprintf("%08x", saddr(i)) }
# fills A[] (allow) and D[] (deny) with subject i policy; salt varies it for swaps
function policy(i, salt,   k, plen, o1, a, m) {
	na = nd = 0
	A[++na] = "203.0.113.0/25"; D[++nd] = "203.0.113.128/27"
	seed = (2654435769 * (i + 1 + salt)) % 4294967296
	for (k = 2; k < rules; k++) {
		plen = plens[lcg() % 12]
		do o1 = 1 + lcg() % 190; while (o1 == 10 || o1 == 100 || o1 == 127 || o1 == 169 || o1 == 172)
		a = o1 * 16777216 + lcg() % 16777216
		m = 2 ^ (32 - plen); a = a - a % m
		if (k % 3 == 0) D[++nd] = ip(a) "/" plen; else A[++na] = ip(a) "/" plen
	}
}
function join(arr, cnt,   s, k) { s = arr[1]; for (k = 2; k <= cnt; k++) s = s ", " arr[k]; return s }
function learned_list(   s, k, a) {
	s = ""
	for (k = 0; k < learned; k++) {
		a = k < 256 ? 3325256704 + k : 3221225984 + k - 256
		s = s (k ? ", " : "") ip(a)
	}
	return s
}
# the objects of subject i as `add` commands (used by every mode)
function subject(i,   x, L) {
	x = sname(i); policy(i, 0)
	printf "add set inet %s deny_%s { type ipv4_addr; flags interval; auto-merge; elements = { %s } }\n", T, x, join(D, nd)
	printf "add set inet %s allow_%s { type ipv4_addr; flags interval; auto-merge; elements = { %s } }\n", T, x, join(A, na)
	L = learned_list()
	printf "add set inet %s learned_%s { type ipv4_addr; flags timeout; timeout %s;%s }\n", T, x, tmo,
		(learned ? " elements = { " L " }" : "")
	if (style == "reference") {
		printf "add chain inet %s mark_%s\n", T, x
		printf "add rule inet %s mark_%s ip daddr @deny_%s return\n", T, x, x
		printf "add rule inet %s mark_%s ip daddr @allow_%s meta mark set 0x2 return\n", T, x, x
		printf "add rule inet %s mark_%s ip daddr @learned_%s meta mark set 0x2\n", T, x, x
		printf "add chain inet %s subj_%s\n", T, x
		printf "add rule inet %s subj_%s ip daddr @deny_%s drop\n", T, x, x
		printf "add rule inet %s prerouting ip saddr %s jump mark_%s\n", T, ip(saddr(i)), x
		printf "add rule inet %s forward ip saddr %s jump subj_%s\n", T, ip(saddr(i)), x
	} else {
		printf "add chain inet %s s_%s\n", T, x
		printf "add rule inet %s s_%s ip daddr @deny_%s drop\n", T, x, x
		printf "add rule inet %s s_%s ip daddr @allow_%s accept\n", T, x, x
		printf "add rule inet %s s_%s ip daddr @learned_%s accept\n", T, x, x
		printf "add rule inet %s s_%s drop\n", T, x
		printf "add element inet %s subjects { %s : goto s_%s }\n", T, ip(saddr(i)), x
	}
}
BEGIN {
	split("8 12 16 16 20 22 24 24 24 28 32 32", P0, " "); for (k = 1; k <= 12; k++) plens[k - 1] = P0[k]
	center = 10 * 16777216 + 64 * 65536 + 8 * 256 + 2
	if (mode == "subject") { subject(idx); exit }
	if (mode == "swap") {
		x = sname(idx); policy(idx, 65536)
		printf "flush set inet %s deny_%s\nflush set inet %s allow_%s\n", T, x, T, x
		printf "add element inet %s deny_%s { %s }\nadd element inet %s allow_%s { %s }\n", T, x, join(D, nd), T, x, join(A, na)
		exit
	}
	printf "table inet %s\ndelete table inet %s\nadd table inet %s\n", T, T, T
	if (style == "reference") {
		printf "add chain inet %s prerouting { type filter hook prerouting priority mangle; policy accept; }\n", T
		printf "add chain inet %s forward { type filter hook forward priority filter; policy accept; }\n", T
		printf "add rule inet %s forward ct state established,related accept\n", T
		printf "add rule inet %s forward tcp dport 853 drop\n", T
		printf "add rule inet %s forward udp dport 853 drop\n", T
		printf "add rule inet %s forward meta mark != 0x2 drop\n", T
	} else {
		printf "add map inet %s subjects { type ipv4_addr : verdict; }\n", T
		printf "add chain inet %s forward { type filter hook forward priority filter; policy accept; }\n", T
		printf "add rule inet %s forward ct state established,related accept\n", T
		printf "add rule inet %s forward meta l4proto { tcp, udp } th dport 853 drop\n", T
		printf "add rule inet %s forward ip saddr vmap @subjects\n", T
		# fail closed: a source on the sandbox side that is no subject
		printf "add rule inet %s forward iifname \"br0\" drop\n", T
	}
	for (i = 0; i < n; i++) if (mode != "without" || i != idx) subject(i)
}'
