#!/usr/bin/env bash
# Tests scripts/check-layers.sh: on small trees it builds in a temporary
# directory (one folder per layer, each including what it may), the check
# must pass on the clean tree and fail, naming file:line and the include,
# on each tree with one bad include; then it must pass on the repository.
# Prints "N passed, N failed".
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
CHECK=$REPO/scripts/check-layers.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/lint/result.sh
. "$REPO/tests/lint/result.sh"

# A tree where every folder includes the one below it, its own header
# and the ABI (siblings each include the one below them both); the data
# path also includes the skeleton, the CLI the gateway's codecs.
base_tree() {
	local root=$1 prev="" f
	for f in common policy gateway datapath subjects dns protocol config; do
		mkdir -p "$root/user/lib/$f"
		printf '#include "fastwall/abi.h"\n' >"$root/user/lib/$f/$f.h"
		{
			printf '#include <stdio.h>\n#include "%s/%s.h"\n' "$f" "$f"
			[ -n "$prev" ] && printf '#include "%s/%s.h"\n' "$prev" "$prev"
		} >"$root/user/lib/$f/$f.c"
		case $f in policy | dns | protocol) ;; *) prev=$f ;; esac
	done
	# policy and gateway are siblings on common; the data path uses both
	printf '#include "policy/policy.h"\n' >>"$root/user/lib/datapath/datapath.c"
	printf '#include "subjects/subjects.h"\n' >>"$root/user/lib/dns/dns.c"
	printf '#include "subjects/subjects.h"\n' >>"$root/user/lib/protocol/protocol.c"
	printf '#include "dns/dns.h"\n#include "protocol/protocol.h"\n' >>"$root/user/lib/config/config.c"
	printf '#include "egress.skel.h"\n' >>"$root/user/lib/datapath/datapath.c"
	mkdir -p "$root/user/daemon" "$root/user/cli"
	printf 'int http(void);\n' >"$root/user/daemon/http.h"
	printf '#include "http.h"\n#include "config/config.h"\n#include "common/common.h"\n' \
		>"$root/user/daemon/main.c"
	printf '#include "config/config.h"\n#include "gateway/gateway.h"\n' >"$root/user/cli/cli.c"
}

# expect_fail DESC TREE WANT...: the check fails and prints every WANT
expect_fail() {
	local desc=$1 root=$2 out rc w missing=""
	shift 2
	out=$("$CHECK" "$root" 2>&1)
	rc=$?
	for w in "$@"; do
		grep -qF -- "$w" <<<"$out" || missing+=" '$w'"
	done
	if [ "$rc" -ne 0 ] && [ -z "$missing" ]; then
		result 0 "$desc"
	else
		result 1 "$desc" "exit $rc, missing:$missing
$out"
	fi
}

# a fresh tree per case (it runs in a subshell: no counter survives)
tree() {
	local root
	root=$(mktemp -d "$TMP/tree.XXXXXX")
	base_tree "$root"
	echo "$root"
}

t=$(tree)
out=$("$CHECK" "$t" 2>&1)
result $? "a tree that keeps the order passes" "$out"

t=$(tree)
printf '#include "config/config.h"\n' >>"$t/user/lib/subjects/subjects.h"
expect_fail "an upward include fails and is named" "$t" \
	"user/lib/subjects/subjects.h:2:" '"config/config.h"' "upward"

t=$(tree)
printf '/* a comment */\n#include "policy/policy.h"\n' >>"$t/user/lib/common/common.c"
expect_fail "an include two layers up from common fails" "$t" \
	"user/lib/common/common.c:4:" '"policy/policy.h"'

t=$(tree)
printf '#include "protocol/protocol.h"\n' >>"$t/user/lib/dns/dns.c"
expect_fail "dns may not include protocol (siblings)" "$t" \
	"user/lib/dns/dns.c:" '"protocol/protocol.h"' "sideways"

t=$(tree)
printf '#include "dns/dns.h"\n' >>"$t/user/lib/protocol/protocol.h"
expect_fail "protocol may not include dns (siblings)" "$t" \
	"user/lib/protocol/protocol.h:2:" '"dns/dns.h"' "sideways"

t=$(tree)
printf '#include "gateway/gateway.h"\n' >>"$t/user/lib/policy/policy.h"
expect_fail "policy may not include gateway (siblings)" "$t" \
	"user/lib/policy/policy.h:2:" '"gateway/gateway.h"' "sideways"

t=$(tree)
printf '#include "policy/policy.h"\n' >>"$t/user/lib/gateway/gateway.c"
expect_fail "gateway may not include policy (siblings)" "$t" \
	"user/lib/gateway/gateway.c:" '"policy/policy.h"' "sideways"

t=$(tree)
printf '#include "datapath/datapath.h"\n' >>"$t/user/lib/gateway/gateway.h"
expect_fail "gateway may not include the data path (upward)" "$t" \
	"user/lib/gateway/gateway.h:2:" '"datapath/datapath.h"' "upward"

t=$(tree)
printf '#include "daemon/http.h"\n' >>"$t/user/cli/cli.c"
expect_fail "the CLI may not include the daemon" "$t" "user/cli/cli.c:3:" '"daemon/http.h"'

t=$(tree)
printf '#include "egress.skel.h"\n' >>"$t/user/lib/policy/policy.c"
expect_fail "the skeleton below the data path fails" "$t" \
	"user/lib/policy/policy.c:" '"egress.skel.h"'

t=$(tree)
mkdir -p "$t/user/lib/metrics"
printf '#include "common/common.h"\n' >"$t/user/lib/metrics/metrics.c"
expect_fail "a folder missing from the layer table fails" "$t" "user/lib/metrics" \
	"not in the layer table"

t=$(tree)
printf '#include "vendor/x.h"\n' >>"$t/user/lib/config/config.c"
expect_fail "an include of an unknown folder fails" "$t" \
	"user/lib/config/config.c:" '"vendor/x.h"'

t=$(tree)
printf '#include "missing.h"\n' >>"$t/user/lib/datapath/datapath.c"
expect_fail "a bare include of no header next to the file fails" "$t" \
	"user/lib/datapath/datapath.c:" '"missing.h"'

out=$("$CHECK" 2>&1)
result $? "the repository keeps the layer order" "$out"

results
