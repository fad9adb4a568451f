# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by tests/vm/run.sh (its helpers, topology and config; fastwalld
# stopped): layer-7 pinning on this kernel, with real traffic.
# fastwalld starts with an l7 section: its nginx proxy with this build's
# module ($BUILD/l7, make l7proxy), run as nobody with CAP_BPF as its only
# capability, so the workers' bpf() map lookups are made the way an older
# kernel could refuse them. sandbox-a (l7: on; the other subject stays
# off) resolves l7.example.com (203.0.113.20) through the DNS proxy, then
# sends HTTP to that address over bash's /dev/tcp: fw_from_sandbox
# rewrites the SYN to the proxy's port on the gateway, the proxy checks
# the Host against the names that taught the address and connects from
# the pod's address. With Host l7.example.com the page arrives and the
# internet's busybox httpd (-vv: each request's remote address and path,
# v4-mapped: it listens on an IPv6 socket) saw it from 192.0.2.1, never from the sandbox's 10.42.0.2; with Host
# learned.example.com (allowed to sandbox-a, but it taught another
# address) the proxy answers 403 and nothing reaches the server.
# Then a process sandbox (when procs.sh found cgroup2): a fastwall run
# with "fastwallL7": "on" in its policy resolves the name (dig, the
# socket-layer DNS redirect) and sends the same two requests: its
# connect() goes to the proxy on loopback (cgroup/connect4, sockops),
# which serves the right Host and refuses the other.
# Leaves fastwalld stopped, its cgroup programs detached and the config
# as it found it.

echo "# 6c. layer-7 pinning: HTTP redirected to fastwalld's nginx proxy"
T_L7=$SECONDS
L7_SO=$BUILD/l7/ngx_fastwall_l7_module.so
L7_ADDR=203.0.113.20

if [ ! -x /usr/sbin/nginx ] || [ ! -e /usr/lib/nginx/modules/ngx_stream_module.so ] ||
	[ ! -e /usr/share/nginx/src/conf_flags ]; then
	skip "layer-7 pinning" "nginx, libnginx-mod-stream or nginx-dev not installed"
	feature l7_http not_run
	return 0
fi
if [ ! -f "$L7_SO" ]; then
	not_ok "layer-7 pinning: $L7_SO is missing (make l7proxy)"
	feature l7_http no
	return 0
fi

# http_get NS ADDR HOST PATH: one HTTP/1.0 request to ADDR:80 over
# /dev/tcp; prints the response, CRs dropped (nothing when refused)
http_get() {
	local r
	# shellcheck disable=SC2016 # expanded by the inner bash
	r=$(in_ns "$1" timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/80" || exit
		printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$1" >&3
		while IFS= read -r l <&3 || [ -n "$l" ]; do printf "%s\n" "$l"; done' "$2" "$3" "$4")
	printf '%s\n' "${r//$'\r'/}"
}
# httpd_saw REGEX: a line of the internet's busybox httpd log matches
# shellcheck disable=SC2317 # called through check, which shellcheck does not follow
httpd_saw() {
	grep -qE -- "$1" "$TMP/httpd.log" && return 0
	echo "the server's log:"
	tail -4 "$TMP/httpd.log"
	return 1
}
# subject_counter NAME "pass l7-proxy": that subject's packets (fastwall subjects)
subject_counter() {
	in_ns "$POD" "$FASTWALL" --bpffs "$BPFFS" subjects 2>/dev/null | awk -v s="$1" -v v="$2" '
		/^[0-9]/ { cur = $2; next }
		cur == s { gsub(/^ +/, ""); n = split($0, kv, ",")
			for (i = 1; i <= n; i++) { gsub(/^ +/, "", kv[i]); split(kv[i], p, "="); if (p[1] == v) c = p[2] } }
		END { print c + 0 }'
}

echo "l7 page" >"$TMP/www/l7.html"
echo "fronted page" >"$TMP/www/l7-front.html"
sed -i '/^  - name: sandbox-a$/a\    l7: on' "$CFG"
# the process sandbox's part: procs.sh's processes section again
if [ -n "${CGROOT:-}" ]; then
	printf 'processes:\n  cgroup_root: %s\n  cgroup_parent: %s\n  socket: %s\n  run_group: %s\n' \
		"$CGROOT" "$CGP" "$RUNSOCK" "$RUN_GID" >>"$CFG"
fi
printf 'l7:\n  enabled: true\n  default: off\n  module: %s\n  runtime_dir: %s\n  user: nobody\n  ca:\n    dir: %s\n' \
	"$L7_SO" "$TMP/l7run" "$TMP/l7-ca" >>"$CFG"
# credentials: the vaults' maps (a hash and a mmapped array, never
# pinned) handed to the proxy, and pushes over the actions listener
if [ -n "${CGROOT:-}" ] && command -v curl >/dev/null; then
	L7_ACT=127.0.0.1:18090
	printf '  credentials: on\nactions:\n  listen: %s\n  vault_socket: %s\n' \
		"$L7_ACT" "$TMP/vault.sock" >>"$CFG"
fi
# the proxy (nobody) reads its nginx.conf in $TMP/l7run
chmod 711 "$TMP"
start_daemon
F0=$FAILED
if log_has 'l7 proxy accepting connections' 60; then
	ok "fastwalld starts the proxy as nobody with CAP_BPF, and it accepts"
else
	not_ok "fastwalld starts the proxy as nobody with CAP_BPF, and it accepts"
	grep -E 'l7|error' "$LOG" | tail -8 | sed 's/^/#   | /'
fi

out=$(q "$SBA" @10.42.0.1 l7.example.com)
if [[ $(status_of "$out") == NOERROR && $out == *"$L7_ADDR"* ]]; then
	ok "sandbox-a resolves l7.example.com through the proxy ($L7_ADDR)"
else
	not_ok "sandbox-a resolves l7.example.com through the proxy ($L7_ADDR)"
	printf '%s\n' "$out" | sed 's/^/#   | /'
fi

p0=$(subject_counter sandbox-a "pass l7-proxy")
resp=$(http_get "$SBA" "$L7_ADDR" l7.example.com /l7.html)
if [[ ${resp%%$'\n'*} == "HTTP/1."[01]" 200 "* && $resp == *"l7 page"* ]]; then
	ok "HTTP Host l7.example.com to $L7_ADDR:80: the page arrives"
else
	not_ok "HTTP Host l7.example.com to $L7_ADDR:80: the page arrives"
	printf '%s\n' "${resp:-(no response)}" | head -5 | sed 's/^/#   | /'
	grep -E 'l7' "$LOG" | tail -5 | sed 's/^/#   | /'
fi
check "... through the proxy: the server saw the pod's address, not the sandbox's" \
	httpd_saw '^\[?(::ffff:)?192\.0\.2\.1\]?:[0-9]+: url:/l7\.html$'
check_fails "... and no request of the sandbox's own address" \
	httpd_saw '^\[?(::ffff:)?10\.42\.0\.2\]?:[0-9]+: url:/l7'
p1=$(subject_counter sandbox-a "pass l7-proxy")
check "fastwall subjects counts sandbox-a's pass l7-proxy ($p0 -> $p1)" test "$p1" -gt "$p0"

resp=$(http_get "$SBA" "$L7_ADDR" learned.example.com /l7-front.html)
if [[ -z $resp || ${resp%%$'\n'*} == "HTTP/1."[01]" 403 "* ]]; then
	ok "HTTP Host learned.example.com (it taught another address) to $L7_ADDR:80: refused (${resp%%$'\n'*})"
else
	not_ok "HTTP Host learned.example.com (it taught another address) to $L7_ADDR:80: refused"
	printf '%s\n' "$resp" | head -5 | sed 's/^/#   | /'
fi
check_fails "... nothing reached the server" httpd_saw 'url:/l7-front\.html'
check "... the denial is audited with its reason and Host" log_has \
	"deny subject=sandbox-a reason=l7-name proto=http src=10\\.42\\.0\\.2 sport=[0-9]+ dst=${L7_ADDR//./\\.} dport=80 name=learned\\.example\\.com" 5
# the feature holds when every check above did
if [ "$FAILED" = "$F0" ]; then feature l7_http yes; else feature l7_http no; fi

# a process sandbox: one run resolves the name and sends both requests
if [ -n "${CGROOT:-}" ]; then
	F0=$FAILED
	echo "run page" >"$TMP/www/l7-run.html"
	echo "run fronted page" >"$TMP/www/l7-run-front.html"
	printf '{"defaultAction": "deny", "egress": [{"action": "allow", "target": "l7.example.com"}], "fastwallL7": "on"}\n' \
		>"$TMP/l7run.json"
	# the run's script: dig's answer, then "HOST STATUS-LINE" per request
	cat >"$TMP/l7run.sh" <<SCRIPT
dig +short +time=5 +tries=1 @192.0.2.53 l7.example.com || exit
for r in l7.example.com:/l7-run.html learned.example.com:/l7-run-front.html; do
	exec 3<>/dev/tcp/$L7_ADDR/80 || continue
	printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "\${r#*:}" "\${r%%:*}" >&3
	l=
	read -r l <&3
	echo "\${r%%:*} \$l"
	exec 3<&-
done
SCRIPT
	out=$(prun l7p --policy "$TMP/l7run.json" -- timeout 20 bash "$TMP/l7run.sh" 2>&1)
	out=${out//$'\r'/}
	if [[ $out == *"l7.example.com HTTP/1."[01]" 200 "* ]]; then
		ok "run (fastwallL7 on): Host l7.example.com to $L7_ADDR:80: 200"
	else
		not_ok "run (fastwallL7 on): Host l7.example.com to $L7_ADDR:80: 200"
		printf '%s\n' "$out" | sed 's/^/#   | /'
	fi
	check "... it reached the server" httpd_saw 'url:/l7-run\.html$'
	if [[ $out == *"learned.example.com HTTP/1."[01]" 403 "* || $out == *"learned.example.com " ]]; then
		ok "run: Host learned.example.com to $L7_ADDR:80: refused by the proxy"
	else
		not_ok "run: Host learned.example.com to $L7_ADDR:80: refused by the proxy"
		printf '%s\n' "$out" | sed 's/^/#   | /'
	fi
	check_fails "... nothing reached the server" httpd_saw 'url:/l7-run-front\.html'
	check "... the denial is audited" log_has \
		"deny subject=l7p-$ID reason=l7-name proto=http .* dst=${L7_ADDR//./\\.} dport=80 name=learned\\.example\\.com" 5
	if [ "$FAILED" = "$F0" ]; then feature l7_run_http yes; else feature l7_run_http no; fi
fi

# credential injection on this kernel: a vault pushed for a run before it
# starts (cached, applied when root's run registers) binds l7.example.com
# over http with a bearer token; the run's request reaches the server
# (a busybox CGI that prints the Authorization it got) with it
if [ -n "${L7_ACT:-}" ]; then
	F0=$FAILED
	KEY=fw-vm-key-$ID-$RANDOM
	mkdir -p "$TMP/www/cgi-bin"
	# shellcheck disable=SC2016 # expanded by the CGI's sh
	printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nauth=%%s\\n" "$HTTP_AUTHORIZATION"\n' \
		>"$TMP/www/cgi-bin/auth"
	chmod 755 "$TMP/www/cgi-bin/auth"
	code=$(in_ns "$POD" curl -s -o "$TMP/push.out" -w '%{http_code}' --max-time 10 \
		-H "X-Fast-Sandbox-Uid: l7i-$ID" --data-binary \
		'{"credentials":[{"name":"k1","source":{"type":"inline","value":"'"$KEY"'"}}],"bindings":[{"name":"b1","match":{"hosts":["l7.example.com"],"schemes":["http"]},"auth":{"type":"bearer","credential":"k1"}}]}' \
		"http://$L7_ACT/credential-vault")
	check "a vault pushed for a run not started yet: cached (202)" test "$code" = 202
	cat >"$TMP/l7inj.sh" <<SCRIPT
dig +short +time=5 +tries=1 @192.0.2.53 l7.example.com >/dev/null || exit
exec 3<>/dev/tcp/$L7_ADDR/80 || exit
printf 'GET /cgi-bin/auth HTTP/1.0\r\nHost: l7.example.com\r\n\r\n' >&3
while IFS= read -r l <&3 || [ -n "\$l" ]; do printf '%s\n' "\$l"; done
SCRIPT
	out=$(prun l7i --policy "$TMP/l7run.json" -- timeout 20 bash "$TMP/l7inj.sh" 2>&1)
	out=${out//$'\r'/}
	if [[ $out == *"auth=Bearer $KEY"* ]]; then
		ok "run with a vault: the server got Authorization: Bearer with the vault's token"
	else
		not_ok "run with a vault: the server got Authorization: Bearer with the vault's token"
		printf '%s\n' "$out" | tail -4 | sed 's/^/#   | /'
		grep -E 'l7|vault' "$LOG" | tail -5 | sed 's/^/#   | /'
	fi
	check_fails "... the token is in no log of fastwalld's (the proxy's stderr with it)" \
		grep -qF "$KEY" "$LOG"
	if [ "$FAILED" = "$F0" ]; then feature l7_inject yes; else feature l7_inject no; fi
fi

kill -TERM "$DAEMON"
if eventually 30 sh -c "! kill -0 $DAEMON 2>/dev/null"; then
	ok "fastwalld stops on SIGTERM, and its proxy with it"
else
	not_ok "fastwalld stops on SIGTERM, and its proxy with it"
	tail -5 "$LOG" | sed 's/^/#   | /'
	kill -KILL "$DAEMON"
fi
wait "$DAEMON" 2>/dev/null
DAEMON=""
check "... the proxy stopped (log)" log_has 'l7 proxy \(pid [0-9]+\) stopped' 1
if [ -n "${CGROOT:-}" ]; then
	in_ns "$POD" timeout 60 "$FASTWALLD" -c "$CFG" detach >/dev/null 2>&1 ||
		not_ok "fastwalld detach takes the cgroup programs off $CGP"
	find "$CGDIR" -depth -type d -exec rmdir {} + 2>/dev/null
fi
chmod 700 "$TMP"
sed -i '/^processes:$/,$d; /^l7:$/,$d; /^    l7: on$/d' "$CFG"
echo "# layer-7 pinning: $((SECONDS - T_L7))s"
