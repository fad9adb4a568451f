#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the cross-cluster control plane's security, with two real
# nginx gateways in one namespace and a test CA made here. West publishes
# its member records to east's admin API over TLS (east's certificate
# verified against the CA and for east's name), each record signed under
# a key ring; east's admin API listens on non-loopback addresses and so
# needs a credential. Checks: publishing to a peer whose certificate the
# CA did not sign is refused (west logs it, east gets nothing); a forged,
# unsigned, altered, stale, future or replayed record is refused (403),
# and an older one never rolls a newer back; a staged key is accepted
# before it signs, a key rotation keeps the records flowing and a retired
# key is refused; the admin API answers 401 without (or with a wrong)
# credential and nginx -t refuses a non-loopback admin listener without
# one, while loopback stays credential-optional; when the DNS name of
# east's gateway moves (dnsmasq), west follows it through nginx's
# resolver, for publications and for forwarded requests. FastPath over
# TLS: west resolves through grpcs:// with the server's certificate
# verified and its name checked, a client certificate presented; a server
# certificate of another CA or another name fails closed (503).
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require xcluster-sec
command -v dnsmasq >/dev/null || fw_die "dnsmasq is not installed (scripts/install-deps.sh installs it)"

NS=fwxs-$FW_ID
WEST=192.0.2.1
EAST1=192.0.2.11 # east's gateway answers on both; DNS names one at a time
EAST2=192.0.2.12
DNS=192.0.2.53
FP=192.0.2.2:50051 # west's FastPath stand-in, over TLS
FASTLET=198.51.100.7:8080
NS_NAME=tenant-a
UUID=0f8fad5b-d9cb-469f-a165-70867728950e
T=$FW_TMP

fw_netns_add "$NS"
for a in $WEST 192.0.2.2 $EAST1 $EAST2 $DNS 198.51.100.7; do
	ip -n "$NS" addr add "$a/32" dev lo
done
fw_fastpath_stubs

echo "# a test CA, another CA, and the certificates"
mkcert() { # NAME CA-PREFIX (signs NAME's key with that CA)
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$T/$1.key" -out "$T/$1.csr" >/dev/null 2>&1 &&
		printf 'subjectAltName=DNS:%s\n' "$1" >"$T/$1.ext" &&
		openssl x509 -req -in "$T/$1.csr" -CA "$T/$2.crt" -CAkey "$T/$2.key" -CAcreateserial \
			-days 1 -extfile "$T/$1.ext" -out "$T/$1.crt" >/dev/null 2>&1
}
for ca in ca evil-ca; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj "/CN=fastwall test $ca" -keyout "$T/$ca.key" -out "$T/$ca.crt" >/dev/null 2>&1 ||
		fw_die "openssl req failed"
done
for n in gw-east.test fastpath.test gw-west.test; do
	mkcert "$n" ca || fw_die "openssl could not make $n"
done

echo "# DNS: gw-east.test at $EAST1 (dnsmasq)"
printf '%s gw-east.test\n' "$EAST1" >"$T/dns.hosts"
printf '%s\n' no-resolv no-hosts no-poll bind-interfaces "listen-address=$DNS" port=53 user=root \
	pid-file= "addn-hosts=$T/dns.hosts" local-ttl=0 >"$T/dnsmasq.conf"
fw_bg "$NS" dnsmasq -k -C "$T/dnsmasq.conf" --log-facility="$T/dnsmasq.log"
DNSMASQ=${FW_PIDS[-1]}
resolves() { fw_ns "$NS" dig +short +time=1 +tries=1 "@$DNS" gw-east.test 2>/dev/null | grep -qxF "$1"; }
fw_eventually 5 resolves "$EAST1" || fw_die "dnsmasq did not answer: $(tail -3 "$T/dnsmasq.log")"
# nginx resolves a name without address= when it loads the configuration
# (getaddrinfo): give it the same answer in a hosts file of its own mount
# namespace, so the host's /etc/hosts is never touched
printf '%s gw-east.test\n127.0.0.1 localhost\n' "$EAST1" >"$T/hosts"

fw_bg_ready "$NS" "$T/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$T/gen" --listen $FP \
	--calls "$T/calls" --upstream "http://$FASTLET" --refused "http://198.51.100.99:1" \
	--tls-upstream "https://198.51.100.99:1" --cert "$T/fastpath.test.crt" --key "$T/fastpath.test.key" \
	--client-ca "$T/ca.crt"
fw_bg_ready "$NS" "$T/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$T/echo.log"

# route scope keys, and the two publication keys a (now) and b (next)
printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$T/scope.keys"
KEY_A=cHVibGlzaC1rZXktYS0wMTIzNDU2Nzg5
KEY_B=cHVibGlzaC1rZXktYi05ODc2NTQzMjEw
printf 'a=%s\n' "$KEY_A" >"$T/ring.a"
printf 'a=%s\nb=%s\n' "$KEY_A" "$KEY_B" >"$T/ring.ab"
printf 'b=%s\n' "$KEY_B" >"$T/ring.b"
CRED=east-admin-credential-5f1c9e
printf '%s\n' "$CRED" >"$T/admin.cred"

ngx_head() { # DIR
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
worker_processes 2;
pid $1/nginx.pid;
error_log $1/error.log info;
events { worker_connections 256; }
http {
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fastcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
	fastwall_ingress_keys $T/scope.keys;
	proxy_http_version 1.1;
EOF
}

# the FastPath call over TLS; $1 the CA west trusts, $2 the name it expects
resolve_loc() {
	cat <<EOF
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass \$fastwall_ingress_resolver_url;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_connect_timeout 2s;
			grpc_send_timeout 2s;
			grpc_read_timeout 2s;
			grpc_ssl_verify on;
			grpc_ssl_trusted_certificate $1;
			grpc_ssl_server_name on;
			grpc_ssl_name $2;
			grpc_ssl_certificate $T/gw-west.test.crt;
			grpc_ssl_certificate_key $T/gw-west.test.key;
		}
EOF
}

# west: RING KEY-ID PUBLISH-CA
conf_w() {
	ngx_head "$T/w"
	cat <<EOF
	fastwall_ingress_resolver grpcs://$FP;
	resolver $DNS valid=1s ipv6=off;
	resolver_timeout 2s;
	fastwall_ingress_cluster_id west;
	fastwall_ingress_cluster east https://gw-east.test/xc;
	fastwall_ingress_cluster_keys $1;
	fastwall_ingress_cluster_key_id $2;
	fastwall_ingress_cluster_publish east https://gw-east.test:8443/fastwall/cluster/members;
	fastwall_ingress_cluster_publish_ssl_trusted_certificate $3;
	fastwall_ingress_cluster_publish_interval 1s;
	fastwall_ingress_cluster_resolve_interval 500ms;
	server {
		listen $WEST:80;
		location / {
			fastwall_ingress on;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
			proxy_set_header Host \$fastwall_ingress_cluster_host;
			proxy_ssl_server_name on;
			proxy_ssl_name \$fastwall_ingress_cluster_sni;
			proxy_ssl_verify on;
			proxy_ssl_trusted_certificate $T/ca.crt;
		}
$(resolve_loc "$T/ca.crt" fastpath.test)
	}
	server {
		listen $WEST:81;
		location / { fastwall_ingress on; proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri; }
$(resolve_loc "$T/evil-ca.crt" fastpath.test)
	}
	server {
		listen $WEST:82;
		location / { fastwall_ingress on; proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri; }
$(resolve_loc "$T/ca.crt" other.test)
	}
	server {
		listen 127.0.0.1:88;
		location /fastwall/cluster/ { fastwall_ingress_cluster_admin; }
	}
}
EOF
}

# east: RING
conf_e() {
	ngx_head "$T/e"
	cat <<EOF
	fastwall_ingress_resolver 192.0.2.2:1;
	fastwall_ingress_cluster_id east;
	fastwall_ingress_cluster_prefix /xc;
	fastwall_ingress_cluster west http://gw-west.test address=$WEST;
	fastwall_ingress_cluster_keys $1;
	fastwall_ingress_cluster_admin_credential $T/admin.cred;
	log_format at '\$server_addr \$request_method \$uri \$status';
	access_log $T/e/access.log at;
	ssl_certificate $T/gw-east.test.crt;
	ssl_certificate_key $T/gw-east.test.key;
	server {
		listen $EAST1:8443 ssl;
		listen $EAST2:8443 ssl;
		location /fastwall/cluster/ { fastwall_ingress_cluster_admin; }
	}
	server {
		listen $EAST1:443 ssl;
		listen $EAST2:443 ssl;
		location / { return 200 "east at \$server_addr\n"; }
	}
}
EOF
}

mkdir -p "$T/w" "$T/e"
# nginx in its own mount namespace, where /etc/hosts is $T/hosts
# shellcheck disable=SC2016 # expanded by that sh
NGX=(unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$T/hosts" "$FW_NGINX")
ngx_t() { fw_ns "$NS" "${NGX[@]}" -t -p "$(dirname "$1")" -c "$1"; }

echo "# nginx -t"
conf_w "$T/ring.a" a "$T/ca.crt" >"$T/w/nginx.conf"
conf_e "$T/ring.ab" >"$T/e/nginx.conf"
check "west's nginx.conf passes nginx -t (admin on loopback, no credential)" ngx_t "$T/w/nginx.conf"
check "east's nginx.conf passes nginx -t (admin elsewhere, with a credential)" ngx_t "$T/e/nginx.conf"
sed '/admin_credential/d' "$T/e/nginx.conf" >"$T/e/nocred.conf"
ngx_t "$T/e/nocred.conf" >"$T/nocred.out" 2>&1
check "an admin API on a non-loopback listener without a credential: refused" \
	grep -qF "\"fastwall_ingress_cluster_admin\" on \"$EAST1:8443\", which is not loopback, needs \"fastwall_ingress_cluster_admin_credential\"" \
	"$T/nocred.out"
sed 's|fastwall_ingress_cluster_key_id a;|fastwall_ingress_cluster_key_id c;|' "$T/w/nginx.conf" >"$T/w/badkid.conf"
ngx_t "$T/w/badkid.conf" >"$T/badkid.out" 2>&1
check "a key id the ring does not hold: refused" grep -qF 'fastwall_ingress_cluster_key_id: "c" is not in' "$T/badkid.out"
sed '/publish_ssl_trusted_certificate/d' "$T/w/nginx.conf" >"$T/w/noca.conf"
ngx_t "$T/w/noca.conf" >"$T/noca.out" 2>&1
check "an https publication without trusted certificates: refused" \
	grep -qF 'needs "fastwall_ingress_cluster_publish_ssl_trusted_certificate"' "$T/noca.out"

fw_bg "$NS" "${NGX[@]}" -p "$T/e" -c "$T/e/nginx.conf"
NGINX_E=${FW_PIDS[-1]}
fw_bg "$NS" "${NGX[@]}" -p "$T/w" -c "$T/w/nginx.conf"
NGINX_W=${FW_PIDS[-1]}
fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://127.0.0.1:88/" ||
	fw_die "west did not start: $(tail -5 "$T/w/error.log")"
fw_eventually 5 fw_ns "$NS" curl -sk -o /dev/null "https://$EAST1:8443/" ||
	fw_die "east did not start: $(tail -5 "$T/e/error.log")"

EURL=https://gw-east.test:8443/fastwall/cluster
ecurl() { fw_ns "$NS" curl -s -m 5 --cacert "$T/ca.crt" --resolve "gw-east.test:8443:$EAST1" "$@"; }
eauth() { ecurl -H "Authorization: Bearer $CRED" "$@"; }
wpost() { # BODY: west's control plane posts to west's loopback admin
	fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' --data-binary "$1" http://127.0.0.1:88/fastwall/cluster/members
}
eplace() { eauth -G --data-urlencode "namespace=$NS_NAME" --data-urlencode "ref=$1" "$EURL/place"; }
at_east() { [ "$(eplace "$1")" = "$2" ]; }
fwd() { echo "{\"decision\":\"forward\",\"cluster\":\"west\",\"target\":\"west::$1\",\"step\":2}"; }

echo "# the admin API's credential"
code() { "$@" -o /dev/null -w '%{http_code}'; }
check_eq "east's admin without a credential: 401" "$(code ecurl "$EURL/members")" 401
check_eq "with a wrong one: 401" "$(code ecurl -H 'Authorization: Bearer east-admin-credential-5f1c9f' "$EURL/members")" 401
check_eq "with another scheme: 401" "$(code ecurl -u "x:$CRED" "$EURL/members")" 401
check_eq "with the credential: 200" "$(code eauth "$EURL/members")" 200
check_eq "a control-plane POST without it: 401" \
	"$(code ecurl --data-binary "cluster=east&namespace=$NS_NAME&env=x&pool=p&idle=1" "$EURL/members")" 401
check_eq "west's admin on loopback needs none: 204" "$(wpost "cluster=west&namespace=$NS_NAME&env=pub&pool=p1&idle=2")" 204

echo "# west publishes over TLS, signed"
check "a record posted at west reaches east's placement (within 6 s)" fw_eventually 6 at_east pub "$(fwd p1)"
check "east's log shows signed publications, 204" grep -q "^$EAST1 POST /fastwall/cluster/members 204\$" "$T/e/access.log"

echo "# records that are not west's signed ones"
now_ms() { "$FW_PY" -c 'import time; print(int(time.time() * 1000))'; }
sign() { # KEY-ID KEY-BASE64 TS BODY [FROM [TO]]
	"$FW_PY" -c 'import base64, hashlib, hmac, sys
kid, key, ts, body, frm, to = sys.argv[1:7]
msg = ("fastwall-cluster-record-v1\n%s\n%s\n%s\n" % (frm, to, ts)).encode() + body.encode()
print("v1.%s.%s.%s" % (kid, ts, hmac.new(base64.b64decode(key), msg, hashlib.sha256).hexdigest()))' \
		"$1" "$2" "$3" "$4" "${5:-west}" "${6:-east}"
}
epub() { # BODY SIGNATURE|"" -> status and error
	local sig=()
	[ -n "$2" ] && sig=(-H "X-Fastwall-Cluster-Signature: $2")
	ecurl -o "$T/epub" -w '%{http_code}' --data-binary "$1" -H 'X-Fastwall-Cluster-From: west' "${sig[@]}" \
		"$EURL/members"
	printf ' %s' "$(cat "$T/epub")"
}
REC="cluster=west&namespace=$NS_NAME&env=direct&pool=d&idle=1"
TS=$(now_ms)
GOOD=$(sign a "$KEY_A" "$TS" "$REC")
check_eq "unsigned: 403" "$(epub "$REC" "")" \
	'403 {"error":"unsigned (no X-Fastwall-Cluster-Signature)"}'
check_eq "forged (key id a, another secret): 403" \
	"$(epub "$REC" "$(sign a c29tZS1vdGhlci1zZWNyZXQ= "$TS" "$REC")")" \
	'403 {"error":"signature does not match the record"}'
check_eq "altered (idle=9 under west's signature of idle=1): 403" \
	"$(epub "${REC/idle=1/idle=9}" "$GOOD")" '403 {"error":"signature does not match the record"}'
check_eq "signed for another receiver: 403" \
	"$(epub "$REC" "$(sign a "$KEY_A" "$TS" "$REC" west south)")" \
	'403 {"error":"signature does not match the record"}'
check_eq "malformed signature: 403" "$(epub "$REC" "v1.a.$TS.zz")" \
	'403 {"error":"signature is not v1.<key id>.<unix ms>.<64 lowercase hex>"}'
check_eq "signed 31 s ago (TTL 30 s): 403" \
	"$(epub "$REC" "$(sign a "$KEY_A" $((TS - 31000)) "$REC")")" \
	'403 {"error":"signed longer ago than the record TTL"}'
check_eq "signed 60 s in the future: 403" \
	"$(epub "$REC" "$(sign a "$KEY_A" $((TS + 60000)) "$REC")")" \
	'403 {"error":"signed in the future (beyond the allowed clock skew)"}'
check_eq "nothing refused was kept" "$(eplace direct)" '{"error":"no such env"}'
check_eq "the genuine record: 204" "$(epub "$REC" "$GOOD")" "204 "
check_eq "the same record again (a replay): 403" "$(epub "$REC" "$GOOD")" \
	'403 {"error":"not newer than a record already taken (a replay)"}'
NEWER="cluster=west&namespace=$NS_NAME&env=direct&pool=d&idle=0&autoscale=1&headroom=2"
check_eq "a newer record: 204" "$(epub "$NEWER" "$(sign a "$KEY_A" $((TS + 1)) "$NEWER")")" "204 "
check_eq "the older one replayed after it: 403" "$(epub "$REC" "$GOOD")" \
	'403 {"error":"not newer than a record already taken (a replay)"}'
check_eq "and it did not roll east back (the newer counts: step 4)" "$(eplace direct)" \
	'{"decision":"forward","cluster":"west","target":"west::d","step":4}'
check_eq "a staged key (b, in east's ring, not yet signing at west): 204" \
	"$(epub "${REC/env=direct/env=staged}" "$(sign b "$KEY_B" "$TS" "${REC/env=direct/env=staged}")")" "204 "

echo "# rotation: west signs with b, then east retires a"
# a reload is done when both old workers have exited: until then the old
# publisher may still send what the new configuration would refuse
reload() { # DIR PID
	local gone
	gone=$(grep -c 'worker process [0-9]* exited with code' "$1/error.log")
	kill -HUP "$2"
	# shellcheck disable=SC2317 # called through fw_eventually
	exited() { [ "$(grep -c 'worker process [0-9]* exited with code' "$1/error.log")" -ge "$2" ]; }
	fw_eventually 10 exited "$1" $((gone + 2))
}
conf_w "$T/ring.b" b "$T/ca.crt" >"$T/w/nginx.conf"
check "west reloaded with ring b, signing with b" reload "$T/w" "$NGINX_W"
conf_e "$T/ring.b" >"$T/e/nginx.conf"
check "east reloaded with a retired" reload "$T/e" "$NGINX_E"
wpost "cluster=west&namespace=$NS_NAME&env=rot&pool=p2&idle=1" >/dev/null
check "west's records signed with b reach east" fw_eventually 6 at_east rot "$(fwd p2)"
TS=$(now_ms)
R2="cluster=west&namespace=$NS_NAME&env=old&pool=o&idle=1"
check_eq "a record signed with the retired key a: 403" "$(epub "$R2" "$(sign a "$KEY_A" "$TS" "$R2")")" \
	'403 {"error":"signed with a key id this gateway does not hold (retired or unknown)"}'

echo "# a peer certificate west's CA did not sign"
conf_w "$T/ring.b" b "$T/evil-ca.crt" >"$T/w/nginx.conf"
check "west reloaded trusting another CA for publications" reload "$T/w" "$NGINX_W"
wpost "cluster=west&namespace=$NS_NAME&env=mitm&pool=p3&idle=1" >/dev/null
check "west refuses east's certificate and says why" \
	fw_eventually 6 grep -q 'member records not published to cluster "east" at https://gw-east.test:8443/fastwall/cluster/members: peer certificate not trusted: ' \
	"$T/w/error.log"
check_eq "east got nothing" "$(eplace mitm)" '{"error":"no such env"}'
conf_w "$T/ring.b" b "$T/ca.crt" >"$T/w/nginx.conf"
check "west reloaded with the test CA again" reload "$T/w" "$NGINX_W"
check "and publishes again" fw_eventually 6 at_east mitm "$(fwd p3)"

echo "# east's gateway moves: $EAST1 to $EAST2 in DNS"
EAST_SB=$("$FASTWALL" scope sign --keys "$T/scope.keys" --key-id k "$NS_NAME" "east.$UUID" 8080)
wget_east() { fw_ns "$NS" curl -s -m 5 -H "OpenSandbox-Ingress-To: $EAST_SB" "http://$WEST:80/"; }
check_eq "a request for east's sandbox goes to $EAST1" "$(wget_east)" "east at $EAST1"
printf '%s gw-east.test\n' "$EAST2" >"$T/dns.hosts"
kill -HUP "$DNSMASQ"
fw_eventually 5 resolves "$EAST2" || fw_die "dnsmasq did not take the new address"
moved() { [ "$(wget_east)" = "east at $EAST2" ]; }
check "west follows: forwarded requests reach $EAST2 (within 6 s)" fw_eventually 6 moved
pubs_at2() { grep -q "^$EAST2 POST /fastwall/cluster/members 204\$" "$T/e/access.log"; }
check "and publications too" fw_eventually 6 pubs_at2
check "west logged the move" grep -q 'cluster "east": gateway gw-east.test moved from 192.0.2.11:443 to 192.0.2.12:443' "$T/w/error.log"

echo "# FastPath over TLS"
LOCAL_SB=$("$FASTWALL" scope sign --keys "$T/scope.keys" --key-id k "$NS_NAME" sb-tls-ok 8080)
check_eq "resolved over TLS (CA verified, name checked, client certificate): 200" \
	"$(fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' -H "OpenSandbox-Ingress-To: $LOCAL_SB" "http://$WEST:80/")" 200
check_eq "FastPath was asked" "$(grep -c " sb-tls-ok " "$T/calls")" 1
SB81=$("$FASTWALL" scope sign --keys "$T/scope.keys" --key-id k "$NS_NAME" sb-tls-ca 8080)
check_eq "a FastPath certificate of another CA: fails closed, 503" \
	"$(fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' -H "OpenSandbox-Ingress-To: $SB81" "http://$WEST:81/")" 503
SB82=$("$FASTWALL" scope sign --keys "$T/scope.keys" --key-id k "$NS_NAME" sb-tls-name 8080)
check_eq "a FastPath certificate for another name: fails closed, 503" \
	"$(fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}' -H "OpenSandbox-Ingress-To: $SB82" "http://$WEST:82/")" 503
check_eq "neither reached FastPath's servicer" "$(grep -c -e sb-tls-ca -e sb-tls-name "$T/calls")" 0

echo "# secrets"
check_eq "no credential, token or key in a log" \
	"$(cat "$T/w/error.log" "$T/e/error.log" | grep -c -F -e "$CRED" -e "$KEY_A" -e "$KEY_B")" 0
check "no worker crashed" bash -c "! grep -q 'exited on signal' '$T/w/error.log' '$T/e/error.log'"
[ -n "${FW_XS_KEEP:-}" ] && cp -r "$T" "$FW_XS_KEEP"

fw_summary
