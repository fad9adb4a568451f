#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the Debian package as a node would get it. Builds it (make
# deb), runs lintian on it (no errors, no warnings), checks that this host
# satisfies its dependencies (apt-get --simulate, which changes nothing),
# installs it into a temporary root (dpkg --root: the package has no
# maintainer scripts, so nothing runs chrooted and the host's own dpkg
# database and /usr stay untouched) and checks what landed there: the
# binaries, man pages, completions, schemas, the unit, and the example
# config registered as a conffile and valid for `fastwalld check`. The
# unit passes `systemd-analyze verify`; its ExecStart command line, taken
# from the installed unit file, runs the installed fastwalld with a test
# config and this run's pin path inside the test's network namespaces,
# with the unit's capability bounding set and no_new_privs, under strace:
# /readyz and /healthz on the metrics listener answer, the
# ExecReload signal reloads, and every system call the daemon made is
# one the unit's SystemCallFilter allows. Finally `make install` into a
# DESTDIR installs the example config and the completions, and a second
# install keeps an edited config.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
for t in dpkg-deb lintian strace setpriv systemd-analyze apt-get; do
	command -v "$t" >/dev/null || fw_die "$t not found (scripts/install-deps.sh)"
done

cd "$FW_ROOT" || exit 1
DEB=$(scripts/build-deb.sh "$FW_TMP/deb" 2>"$FW_TMP/build.log") ||
	{ sed 's/^/  | /' "$FW_TMP/build.log" >&2; fw_die "make deb failed"; }
check "make deb built a package" test -s "$DEB"

# --- lintian ---------------------------------------------------------------
lintian --tag-display-limit 0 --fail-on error,warning "$DEB" >"$FW_TMP/lintian.out" 2>&1
rc=$?
sed -i '/running with root privileges/d' "$FW_TMP/lintian.out"
if [ "$rc" = 0 ] && ! grep -qE '^[EW]: ' "$FW_TMP/lintian.out"; then
	fw_ok "lintian: no errors, no warnings"
else
	fw_not_ok "lintian: no errors, no warnings"
	sed 's/^/#   /' "$FW_TMP/lintian.out"
fi

# --- dependencies and the installation into a temporary root ----------------
apt-get -s install "$DEB" >"$FW_TMP/apt.out" 2>&1
inst=$(grep -c '^Inst ' "$FW_TMP/apt.out")
check_eq "this host has every dependency (apt-get -s installs only fastwall)" \
	"$inst $(grep -c '^Inst fastwall ' "$FW_TMP/apt.out")" "1 1"

R=$FW_TMP/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
# the temporary root has no libc: its dependencies are the host's, checked above
check "dpkg --root installs the package" \
	dpkg --root="$R" --log=/dev/null --force-depends -i "$DEB"
# shellcheck disable=SC2016 # dpkg-query's ${Status}, not the shell's
status=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' fastwall)
check_eq "dpkg says it is installed" "$status" "install ok installed"
check "/etc/fastwall/fastwalld.yaml is a conffile" \
	bash -c "dpkg-query --admindir='$R/var/lib/dpkg' -W -f='\${Conffiles}' fastwall |
		grep -q '^ /etc/fastwall/fastwalld.yaml [0-9a-f]\{32\}$'"
for f in usr/sbin/fastwalld usr/sbin/fastwall usr/share/man/man8/fastwalld.8.gz \
	usr/share/man/man8/fastwall.8.gz \
	usr/share/bash-completion/completions/fastwall \
	usr/share/bash-completion/completions/fastwalld lib/systemd/system/fastwalld.service \
	usr/share/zsh/vendor-completions/_fastwall usr/share/zsh/vendor-completions/_fastwalld \
	usr/share/fish/vendor_completions.d/fastwall.fish \
	usr/share/fish/vendor_completions.d/fastwalld.fish \
	usr/share/fastwall/schema/fastwalld-config.schema.json \
	usr/share/fastwall/schema/fastwall-policy.schema.json usr/share/doc/fastwall/copyright; do
	check "installed /$f" test -s "$R/$f"
done
# the packaged docs: every relative link of a page names a file the
# package ships (the page itself or its .gz)
cat >"$FW_TMP/links.py" <<'EOF'
import gzip, os, re, sys
doc, bad = sys.argv[1], []
for d, _, files in os.walk(doc):
    for f in files:
        if not f.endswith(".md.gz"):
            continue
        text = gzip.open(os.path.join(d, f), "rt").read()
        for u in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", u) or u.startswith("#"):
                continue
            t = os.path.normpath(os.path.join(d, u.split("#")[0]))
            if not (os.path.exists(t) or os.path.exists(t + ".gz")):
                bad.append(os.path.relpath(os.path.join(d, f), doc) + ": " + u)
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
check "every relative link of the packaged docs names a page the package ships" \
	"$FW_PY" "$FW_TMP/links.py" "$R/usr/share/doc/fastwall"
check "the packaged docs hold operations.md and design.md" \
	test -s "$R/usr/share/doc/fastwall/docs/operations.md.gz" -a \
	-s "$R/usr/share/doc/fastwall/docs/design.md.gz"
# the gateway's page is its package's (tests/e2e/nginx-deb.sh)
check_fails "fastwall-ingress(8) is not fastwall's" test -e "$R/usr/share/man/man8/fastwall-ingress.8.gz"
check_eq "the installed fastwall prints its version" \
	"$("$R/usr/sbin/fastwall" --version | cut -d' ' -f1)" fastwall
check "the installed example config passes fastwalld check" \
	"$R/usr/sbin/fastwalld" -c "$R/etc/fastwall/fastwalld.yaml" check

# --- the unit ----------------------------------------------------------------
UNIT=$R/lib/systemd/system/fastwalld.service
# verify resolves the commands on this host: point them into the root
mkdir -p "$FW_TMP/unit"
sed "s|/usr/sbin/fastwalld|$R/usr/sbin/fastwalld|g" "$UNIT" >"$FW_TMP/unit/fastwalld.service"
systemd-analyze verify --man=no "$FW_TMP/unit/fastwalld.service" >"$FW_TMP/verify.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$FW_TMP/verify.out" ]; then
	fw_ok "systemd-analyze verify: no errors or warnings"
else
	fw_not_ok "systemd-analyze verify: no errors or warnings"
	sed 's/^/#   /' "$FW_TMP/verify.out"
fi
unit_key() { sed -n "s/^$1=//p" "$UNIT"; }
for want in "Restart=on-failure" "ExecReload=/bin/kill -HUP \$MAINPID" "ProtectSystem=strict" \
	"ProtectHome=yes" "NoNewPrivileges=yes" "PrivateTmp=yes" "Type=notify" "NotifyAccess=main" \
	"WatchdogSec=20s"; do
	check "the unit has $want" grep -qxF "$want" "$UNIT"
done
caps=$(unit_key CapabilityBoundingSet)
for c in CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN CAP_IPC_LOCK CAP_PERFMON CAP_SYS_RESOURCE; do
	check "the unit keeps $c" grep -qw "$c" <<<"$caps"
done
check "the unit checks the bpffs mount first" \
	grep -q '^ExecStartPre=+.*mountpoint -q /sys/fs/bpf' "$UNIT"

# ExecStart as systemd would run it: the installed binary, the test config
exec_start=$(unit_key ExecStart)
read -ra argv <<<"${exec_start#[-@:+!]}"
check_eq "ExecStart runs /usr/sbin/fastwalld" "${argv[0]}" /usr/sbin/fastwalld
argv[0]=$R${argv[0]}
found_cfg=0
for i in "${!argv[@]}"; do
	if [ "${argv[i]}" = /etc/fastwall/fastwalld.yaml ]; then
		argv[i]=$FW_CFG
		found_cfg=1
	fi
done
check_eq "ExecStart names /etc/fastwall/fastwalld.yaml" "$found_cfg" 1

fw_topology
fw_sandbox a 2
cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
dns:
  upstreams: [198.51.100.53]
metrics:
  listen: 127.0.0.1:9464
actions:
  listen: 127.0.0.1:18080
  vault_socket: $FW_TMP/vault.sock
subjects:
  - name: sandbox-a
    addresses: [10.42.0.2]
    interface: sb-a
    gateway: [10.42.0.1]
    private_cidr: [10.42.0.0/24]
    policy:
      defaultAction: deny
      egress: [{ action: allow, target: 198.51.100.0/24 }, { action: allow, target: allowed.example }]
EOF
# not the host's monitor socket: this run's own
fw_own_sockets "$FW_CFG"
# no separate check before ExecStart: run refuses a bad file itself with
# exit 3, which RestartPreventExitStatus keeps from restarting (a refusing
# ExecStartPre would be retried every RestartSec)
check_eq "the unit runs no fastwalld check before ExecStart" \
	"$(unit_key ExecStartPre | grep -c 'fastwalld.* check')" 0
check "the unit's RestartPreventExitStatus names 3" \
	sh -c "grep -qE '^RestartPreventExitStatus=.*\\b3\\b' '$UNIT'"
printf 'datapath: { bpffs: %s }\nno_such_key: 1\n' "$BPFFS" >"$FW_TMP/bad.yaml"
"$R/usr/sbin/fastwalld" -c "$FW_TMP/bad.yaml" run >"$FW_TMP/bad.out" 2>&1
check_eq "run with a bad file exits 3 (invalid configuration) before loading anything" "$?" 3

# systemd's privileges: only the unit's bounding set (as far as this host
# has those capabilities), no new privileges; under strace, so the syscall
# filter is checked against what the daemon really calls
bset=-all
for c in $caps; do
	c=${c#CAP_}
	bset+=,+${c,,}
done
check_eq "the unit sets NoNewPrivileges" "$(unit_key NoNewPrivileges)" yes
nsenter --net="/run/netns/$NS_POD" setpriv --bounding-set "$bset" --no-new-privs -- \
	strace -f -qq -o "$FW_TMP/strace.out" -- "${argv[@]}" >>"$FW_LOG" 2>&1 &
STRACE_PID=$!
FW_PIDS+=("$STRACE_PID")
fw_eventually 20 grep -q 'fastwalld ready' "$FW_LOG"
MAINPID=$(pgrep -P "$STRACE_PID" -x fastwalld)
check "the unit's ExecStart starts fastwalld" test -n "$MAINPID"
# CAP_SYS_RESOURCE may be missing from this host's own bounding set: fastwalld
# must not need more than what is left of the unit's
want_bnd=$(setpriv --bounding-set "$bset" -- sed -n 's/^CapBnd:\t//p' /proc/self/status)
check_eq "fastwalld runs with the unit's capabilities only" \
	"$(sed -n 's/^CapBnd:\t//p' "/proc/$MAINPID/status" 2>/dev/null)" "$want_bnd"
check_eq "fastwalld runs with no_new_privs" "$(sed -n 's/^NoNewPrivs:\t//p' "/proc/$MAINPID/status" 2>/dev/null)" 1
# "BODY CODE" of a GET on the metrics listener
probe() {
	local code
	code=$(fw_ns "$NS_POD" curl -s -m 5 -o "$FW_TMP/probe.body" -w '%{http_code}' "http://127.0.0.1:9464$1")
	printf '%s %s' "$(cat "$FW_TMP/probe.body")" "$code"
}
check_eq "/readyz on the metrics listener" "$(probe /readyz)" "ready 200"
check_eq "/healthz on the metrics listener" "$(probe /healthz)" "ok 200"
check "the installed fastwall reads the pins" \
	bash -c "nsenter --net=/run/netns/$NS_POD $R/usr/sbin/fastwall --bpffs $BPFFS subjects | grep -q sandbox-a"

# the proxy and the actions listener at work, for the syscall check: a
# query the proxy forwards (to an upstream that never answers) and the
# protocol's status
fw_dns "$(fw_sb_ns a)" allowed.example 2 >/dev/null 2>&1
check "the actions listener answers" \
	bash -c "nsenter --net=/run/netns/$NS_POD curl -sf -m 5 http://127.0.0.1:18080/_fastlet/v1/actions/status | grep -q '\"ready\":true'"

# ExecReload, with $MAINPID as systemd fills it in
reload=$(unit_key ExecReload)
reload=${reload//\$MAINPID/$MAINPID}
n=$(fw_log_count 'reloaded ')
read -ra rargv <<<"$reload"
"${rargv[@]}"
check "ExecReload makes fastwalld reload" fw_wait_log 'reloaded ' $((n + 1)) 5
if [ -n "$MAINPID" ]; then
	kill -TERM "$MAINPID"
	wait "$STRACE_PID"
fi
check "fastwalld stopped on SIGTERM" fw_wait_log 'stopping on signal' 1 5

# every system call made is in the unit's SystemCallFilter
read -ra filter <<<"$(unit_key SystemCallFilter)"
systemd-analyze syscall-filter >"$FW_TMP/groups.txt" 2>/dev/null
"$FW_PY" - "$FW_TMP/groups.txt" "$FW_TMP/strace.out" "${filter[@]}" >"$FW_TMP/sys.out" <<'EOF'
import re
import sys

groups, cur = {}, None
for line in open(sys.argv[1]):
    if line.startswith("@"):
        cur = line.split()[0]
        groups[cur] = []
    elif cur and line.strip() and not line.strip().startswith("#"):
        groups[cur].append(line.split()[0])


def expand(word, seen):
    if not word.startswith("@"):
        return {word}
    if word in seen:
        return set()
    seen.add(word)
    out = set()
    for w in groups.get(word, []):
        out |= expand(w, seen)
    return out


allowed = set()
for w in sys.argv[3:]:
    allowed |= expand(w, set())
used = set()
for line in open(sys.argv[2]):
    m = re.match(r"^\d+\s+([a-z0-9_]+)\(", line)
    if m:
        used.add(m.group(1))
missing = sorted(used - allowed)
print(f"{len(used)} system calls used, outside the filter: {' '.join(missing) or 'none'}")
sys.exit(1 if missing or not used else 0)
EOF
rc=$?
if [ "$rc" = 0 ]; then fw_ok "$(cat "$FW_TMP/sys.out")"; else fw_not_ok "$(cat "$FW_TMP/sys.out")"; fi

# --- make install -------------------------------------------------------------
D=$FW_TMP/destdir
check "make install into a DESTDIR" \
	make --no-print-directory BUILD="$BUILD" DESTDIR="$D" PREFIX=/usr/local install
check "make install installed the example config" cmp deploy/fastwalld.yaml "$D/etc/fastwall/fastwalld.yaml"
check "make install installed the completions" \
	test -s "$D/usr/local/share/bash-completion/completions/fastwall" -a \
	-s "$D/usr/local/share/bash-completion/completions/fastwalld"
echo "# edited" >>"$D/etc/fastwall/fastwalld.yaml"
make --no-print-directory BUILD="$BUILD" DESTDIR="$D" PREFIX=/usr/local install >/dev/null 2>&1
check "a second make install keeps an edited config" \
	grep -qx '# edited' "$D/etc/fastwall/fastwalld.yaml"

fw_summary
