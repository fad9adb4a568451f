#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: the service store shared by two ingress gateways (the real
# /usr/sbin/nginx with the module, Debian's PostgreSQL server started here
# in a temporary directory on a unix socket) and a SQLite one. Checks that
# a miss consults the store before a 404 (a row written through the other
# gateway routes at once), that misses of one host wait for one store
# read and a confirmed miss is cached, that deleting a sandbox removes
# all its services from every gateway within one refresh, that two or
# more rows under one label route none of them (at hydration and at
# refresh, with a metric and an alert), that a failed store write exposes
# nothing, and that with the store gone cached routes are served, what
# can't be resolved is 503 with Retry-After, and it recovers by itself.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PGD=""
PGBIN=""
hs_cleanup() {
	if [ -n "$PGD" ] && [ -f "$PGD/data/postmaster.pid" ]; then
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate stop >/dev/null 2>&1
	fi
	[ -n "$PGD" ] && rm -rf "$PGD"
	fw_cleanup
}
trap hs_cleanup EXIT
trap 'exit 130' INT TERM

fw_ingress_require hostnames-store sqlite3

PGBIN=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ] || ! id postgres >/dev/null 2>&1; then
	echo "hostnames-store: skipped: PostgreSQL server not installed (scripts/install-deps.sh installs postgresql)"
	exit 77
fi

NS=fwhst-$FW_ID
GW=192.0.2.1 # gateway A :90, B :100, C (SQLite) :110; admin on 127.0.0.1
FASTPATH=192.0.2.2:50051
FASTLET=198.51.100.7:8080
CALLS=$FW_TMP/calls
KEYS=$FW_TMP/keys
DOMAIN=apps.example.com
A=$FW_TMP/gw-a
B=$FW_TMP/gw-b
C=$FW_TMP/gw-c

fw_netns_add "$NS"
for a in $GW/32 192.0.2.2/32 198.51.100.7/32 198.51.100.8/32; do
	ip -n "$NS" addr add "$a" dev lo
done
mkdir -p "$A" "$B" "$C"
fw_fastpath_stubs
: >"$CALLS"
fw_bg_ready "$NS" "$FW_TMP/fp.ready" "$FW_PY" "$FW_NGX_SERVERS" fastpath --gen "$FW_TMP/gen" --listen $FASTPATH \
	--calls "$CALLS" --upstream "http://$FASTLET" --refused "http://198.51.100.8:8081" \
	--tls-upstream "https://198.51.100.8:8443"
fw_bg_ready "$NS" "$FW_TMP/echo.ready" "$FW_PY" "$FW_NGX_SERVERS" echo --listen $FASTLET --log "$FW_TMP/echo.log"
printf 'k=c2hhcmVkLXNlY3JldA==\n' >"$KEYS"

# ngx_conf DIR PORT ADMIN-PORT WORKERS STORE [EXTRA-HTTP]
ngx_conf() {
	local dir=$1 port=$2 admin=$3 workers=$4 store=$5 extra=${6:-}
	mkdir -p "$dir/logs" "$dir/tmp"
	cat <<EOF
load_module $FW_NGX_MODULE;
daemon off;
user root;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/logs/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	fastwall_ingress_keys $KEYS;
	fastwall_ingress_resolver $FASTPATH;
	fastwall_ingress_service_hosts *.$DOMAIN;
	fastwall_ingress_service_store "$store";
	fastwall_ingress_routing_name gateway-a;
	$extra
	proxy_http_version 1.1;

	server {
		listen $GW:$port;
		location / {
			fastwall_ingress on;
			proxy_pass \$fastwall_ingress_upstream\$fastwall_ingress_uri;
		}
		location = /fastsandbox.fastpath.v2.FastPath/ResolveEndpoint {
			internal;
			grpc_pass grpc://\$fastwall_ingress_resolver;
			grpc_set_header Content-Type application/grpc;
			grpc_set_header TE trailers;
			grpc_read_timeout 2s;
		}
	}
	server {
		listen 127.0.0.1:$admin;
		location /services {
			fastwall_ingress_admin;
		}
	}
}
EOF
}

gw_start() {
	local name=$1 dir=$2 port
	port=$(sed -n "s/^\t\tlisten $GW:\([0-9]*\);/\1/p;T;q" "$dir/nginx.conf")
	fw_bg "$NS" "$FW_NGINX" -p "$dir" -c "$dir/nginx.conf"
	eval "PID_$name=${FW_PIDS[-1]}"
	fw_eventually 5 fw_ns "$NS" curl -s -o /dev/null "http://$GW:$port/" ||
		fw_die "gateway $name did not start: $(tail -5 "$dir/logs/error.log")"
}

cget() { fw_ns "$NS" curl -s -m 10 -o "$FW_TMP/body" -w '%{http_code}' "$@"; }
host() { cget -H "Host: $2" "http://$GW:$1/"; }
admin() { cget -X "$2" "http://127.0.0.1:$1$3"; }
jfield() { "$FW_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$FW_TMP/body" "$1"; }
# metric ADMIN-PORT NAME{LABELS}: its value in GET /services/metrics
metric() {
	fw_ns "$NS" curl -s -m 5 "http://127.0.0.1:$1/services/metrics" |
		awk -v m="$2" '$1 == m { print $2; f = 1 } END { if (!f) print -1 }'
}
hash() { "$FASTWALL" hostname hash -g gateway-a "$@"; }
# the reads of the store a gateway made for misses (not its timer's)
reads() { grep -c 'refreshed from the store after a miss' "$1/logs/error.log" || true; }

echo "# PostgreSQL"
PGD=$(mktemp -d "/tmp/fastwall-pg-$FW_ID.XXXXXX")
chown postgres: "$PGD"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGD/data" -A trust -U postgres >"$PGD/initdb.log" 2>&1 ||
	fw_die "initdb failed: $(tail -3 "$PGD/initdb.log")"
pg_start() {
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w \
		-o "-k $PGD -c listen_addresses=''" start >/dev/null
}
pg_start || fw_die "postgres did not start: $(tail -3 "$PGD/log")"
PG="postgresql:host=$PGD dbname=postgres user=postgres"
psql_q() { runuser -u postgres -- psql -h "$PGD" -At -q -v ON_ERROR_STOP=1 -c "$1" postgres; }

# A: two workers; B: one (its miss cache is per worker); both read the
# store every 500 ms as well
ngx_conf "$A" 90 8091 2 "$PG" "fastwall_ingress_service_refresh 500ms;" >"$A/nginx.conf"
ngx_conf "$B" 100 8092 1 "$PG" "fastwall_ingress_service_refresh 500ms;
	fastwall_ingress_service_miss_ttl 700ms; fastwall_ingress_service_store_timeout 1s;" >"$B/nginx.conf"
gw_start A "$A"
gw_start B "$B"

echo "# a miss consults the store before a 404"
check_eq "expose team/seed through A: 200" "$(admin 8091 PUT '/services/team/seed?port=5000&public=true')" 200
for i in 1 2 3 4 5; do
	# one curl: a miss on A (a store read), an expose through B, then
	# A at once: nothing in A's index, a read must come first
	L=$(hash team "fresh$i")
	got=$(fw_ns "$NS" curl -s -m 10 -o /dev/null -w '%{http_code} ' -H "Host: aaaaaaaaaaaaaaa$i.$DOMAIN" "http://$GW:90/" \
		--next -s -m 10 -o /dev/null -w '%{http_code} ' -X PUT "http://127.0.0.1:8092/services/team/fresh$i?port=5000&public=true" \
		--next -s -m 10 -o /dev/null -w '%{http_code}' -H "Host: $L.$DOMAIN" "http://$GW:90/")
	check_eq "round $i: unknown label 404, expose through B 200, its host through A right after: 200" "$got" "404 200 200"
done

echo "# misses wait for one store read; a confirmed miss is cached"
# every read of the store now takes 300 ms (a view over the table)
delay_on() {
	psql_q "ALTER TABLE fastwall_services RENAME TO fastwall_services_t;
		CREATE VIEW fastwall_services AS WITH d AS MATERIALIZED (SELECT pg_sleep($1))
		SELECT t.* FROM fastwall_services_t t, d;"
}
delay_off() { psql_q "DROP VIEW fastwall_services; ALTER TABLE fastwall_services_t RENAME TO fastwall_services;"; }
delay_on 0.3
psql_q "INSERT INTO fastwall_services_t VALUES ('team', 'burst', '', 5003, 'gateway-a', '$(hash team burst)', 1)"
reads=$(reads "$B")
BURST=()
for i in $(seq 20); do
	fw_ns "$NS" curl -s -m 10 -o /dev/null -w '%{http_code}\n' -H "Host: $(hash team burst).$DOMAIN" "http://$GW:100/" >"$FW_TMP/burst.$i" &
	BURST+=($!)
done
wait "${BURST[@]}"
check_eq "20 concurrent requests for a label B does not know yet: all 200" "$(cat "$FW_TMP"/burst.* | sort | uniq -c | awk '{ print $1, $2 }')" "20 200"
n=$(($(reads "$B") - reads))
check "B read the store at most twice for them (got $n reads)" test "$n" -ge 1 -a "$n" -le 2
check_eq "the unknown label zzzz... through B: 404" "$(host 100 zzzzzzzzzzzzzzzz.$DOMAIN)" 404
reads=$(reads "$B")
hits=$(metric 8092 'fastwall_ingress_service_misses_total{by="miss_cache"}')
check_eq "again at once: 404" "$(host 100 zzzzzzzzzzzzzzzz.$DOMAIN)" 404
check_eq "from the miss cache, without a store read" \
	"$(($(reads "$B") - reads)) $(($(metric 8092 'fastwall_ingress_service_misses_total{by="miss_cache"}') - hits))" "0 1"
delay_off

echo "# deleting a sandbox"
for s in web api ''; do
	check_eq "expose team/gone${s:+/$s} through A: 200" "$(admin 8091 PUT "/services/team/gone${s:+/$s}?port=6000&public=true")" 200
done
check_eq "B routes team--gone--api" "$(host 100 team--gone--api.$DOMAIN)" 200
check_eq "and the unnamed service's hashed host" "$(host 100 "$(hash team gone).$DOMAIN")" 200
check_eq "DELETE /services/team/gone/* through A: 200" "$(admin 8091 DELETE '/services/team/gone/*')" 200
check_eq "it deleted 3" "$(jfield deleted)" 3
check_eq "the store holds none of them" "$(psql_q "SELECT count(*) FROM fastwall_services WHERE sandbox = 'gone'")" 0
check_eq "A stops routing them at once" "$(host 90 team--gone--web.$DOMAIN) $(host 90 "$(hash team gone).$DOMAIN")" "404 404"
gone_b() { [ "$(host 100 team--gone--api.$DOMAIN) $(host 100 "$(hash team gone).$DOMAIN") $(host 100 team--gone--web.$DOMAIN)" = "404 404 404" ]; }
check "B stops routing all three within its refresh (500 ms)" fw_eventually 2 gone_b
check_eq "the other sandbox's service stays" "$(host 100 team--seed.$DOMAIN)" 200
check_eq "a sandbox with none: 200, deleted 0" "$(admin 8091 DELETE '/services/team/none/*') $(jfield deleted)" "200 0"
check_eq "/* after a service: 405" "$(admin 8091 DELETE '/services/team/gone/web/*')" 405
check_eq "/* with PUT: 405" "$(admin 8091 PUT '/services/team/gone/*?port=1')" 405
check_eq "the CLI deletes a sandbox's services too" \
	"$(admin 8091 PUT '/services/team/cli/web?port=6001&public=true') $(fw_ns "$NS" "$FASTWALL" hostname delete-sandbox --admin 127.0.0.1:8091 team cli)" \
	"200 deleted 1 service of team/cli"
check_eq "and its host is 404" "$(host 90 team--cli--web.$DOMAIN)" 404

echo "# two or more rows under one label"
psql_q "DROP INDEX fastwall_services_label"
AMB=$(hash team amb1)
# one statement: a timed read sees none or all three
psql_q "INSERT INTO fastwall_services VALUES ('team', 'amb1', '', 5100, 'gateway-a', '$AMB', 1),
	('team', 'amb2', '', 5100, 'gateway-a', '$AMB', 1), ('team', 'amb3', '', 5100, 'gateway-a', '$AMB', 1)"
check_eq "at a refresh after a miss: the label is 404 through B" "$(host 100 "$AMB.$DOMAIN")" 404
check_eq "none of the three reached the resolver" "$(grep -c ' amb' "$CALLS")" 0
check "B logged it at alert" grep -q "alert.*share the label \"$AMB\"" "$B/logs/error.log"
check "naming the third too" grep -q "alert.*team/amb3/ shares the label \"$AMB\" too: 3 services" "$B/logs/error.log"
check_eq "B's metric counts one ambiguous label" "$(metric 8092 fastwall_ingress_service_ambiguous_labels)" 1
amb_a() { [ "$(metric 8091 fastwall_ingress_service_ambiguous_labels)" = 1 ]; }
check "and A's timed refresh sees it" fw_eventually 2 amb_a
check_eq "the readable hosts still route" "$(host 100 team--amb1.$DOMAIN) $(host 100 team--amb3.$DOMAIN)" "200 200"
psql_q "DELETE FROM fastwall_services WHERE sandbox IN ('amb2', 'amb3')"
amb_gone() { [ "$(host 100 "$AMB.$DOMAIN")" = 200 ]; }
check "with one row left, the label routes again after a refresh" fw_eventually 3 amb_gone
check_eq "and the metric is 0" "$(metric 8092 fastwall_ingress_service_ambiguous_labels)" 0

echo "# a failed store write exposes nothing"
psql_q "CREATE FUNCTION fw_fail() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RAISE EXCEPTION 'injected'; END \$\$;
	CREATE TRIGGER fw_fail BEFORE INSERT OR UPDATE OR DELETE ON fastwall_services FOR EACH ROW EXECUTE FUNCTION fw_fail()"
check_eq "expose through A with a trigger that raises: 503" "$(admin 8091 PUT '/services/team/failed?port=5200&public=true')" 503
check_eq "the store holds nothing of it" "$(psql_q "SELECT count(*) FROM fastwall_services WHERE sandbox = 'failed'")" 0
check_eq "A's index neither" "$(admin 8091 GET /services/team/failed)" 404
check_eq "its host is 404 through A and B" "$(host 90 team--failed.$DOMAIN) $(host 100 team--failed.$DOMAIN)" "404 404"
check_eq "a delete that fails: 503" "$(admin 8091 DELETE /services/team/seed)" 503
check_eq "and the service still routes, as the store says" "$(host 90 team--seed.$DOMAIN)" 200
psql_q "DROP TRIGGER fw_fail ON fastwall_services"
check_eq "the write errors are counted" "$(metric 8091 'fastwall_ingress_service_store_errors_total{call="write"}')" 2

echo "# the store goes away under load"
check_eq "team--seed routes through B (cached)" "$(host 100 team--seed.$DOMAIN)" 200
: >"$FW_TMP/load"
load() {
	local end=$((SECONDS + 4))
	while ((SECONDS < end)); do
		fw_ns "$NS" curl -s -m 5 -o /dev/null -w '%{http_code}\n' -H "Host: team--seed.$DOMAIN" "http://$GW:100/" >>"$FW_TMP/load"
	done
}
load &
LOADPID=$!
sleep 0.5
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" -m fast -w stop >/dev/null
check_eq "PostgreSQL stopped" "$(runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGD/data" status >/dev/null 2>&1; echo $?)" 3
check_eq "an unknown label through B: 503" "$(host 100 yyyyyyyyyyyyyyyy.$DOMAIN)" 503
check_eq "with Retry-After" "$(fw_ns "$NS" curl -s -m 5 -o /dev/null -D - -H "Host: yyyyyyyyyyyyyyy2.$DOMAIN" "http://$GW:100/" | tr -d '\r' | sed -n 's/^Retry-After: //p')" 2
check_eq "an unknown readable host through A: 503" "$(host 90 team--nobody.$DOMAIN)" 503
check_eq "an expose through A: 503" "$(admin 8091 PUT '/services/team/down?port=5300&public=true')" 503
sleep 1
check_eq "cached routes keep being served meanwhile: team--seed through A" "$(host 90 team--seed.$DOMAIN)" 200
pg_start || fw_die "postgres did not start again: $(tail -3 "$PGD/log")"
wait "$LOADPID"
check_eq "every request of the load on team--seed through B got 200" "$(sort "$FW_TMP/load" | uniq -c | awk '{ print $2 }' | tr '\n' ' ')" "200 "
check_ge "and there were some" "$(wc -l <"$FW_TMP/load")" 5
psql_q "INSERT INTO fastwall_services VALUES ('team', 'back', '', 5400, 'gateway-a', '$(hash team back)', 1)"
back() { [ "$(host 100 "$(hash team back).$DOMAIN")" = 200 ]; }
check "after it is back, a row written meanwhile routes through B, no restart" fw_eventually 3 back
check_eq "an unknown label is 404 again" "$(host 100 xxxxxxxxxxxxxxxx.$DOMAIN)" 404
check_eq "and expose through A works again" "$(admin 8091 PUT '/services/team/down?port=5300&public=true')" 200
check_ge "B counted the 503s" "$(metric 8092 fastwall_ingress_service_unavailable_total)" 2

echo "# a store slower than fastwall_ingress_service_store_timeout"
delay_on 2
fw_ns "$NS" curl -s -m 10 -o /dev/null -w '%{http_code}' -H "Host: wwwwwwwwwwwwwwww.$DOMAIN" "http://$GW:100/" >"$FW_TMP/slow" &
SLOW=$!
sleep 0.3 # the miss now waits on the store
check_eq "a cached host through B meanwhile, on its one worker: 200" "$(host 100 team--seed.$DOMAIN)" 200
check "answered while that worker's miss still waited (the store is off its event loop)" kill -0 "$SLOW"
wait "$SLOW"
check_eq "the miss gives up after 1 s: 503" "$(cat "$FW_TMP/slow")" 503
check "saying why" grep -q 'did not answer a miss in time' "$B/logs/error.log"
delay_off

echo "# SQLite: ambiguous rows at hydration, a write that fails"
DB=$C/services.db
"$FW_PY" - "$DB" "$AMB" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE fastwall_services (workspace TEXT NOT NULL, sandbox TEXT NOT NULL,"
          " service TEXT NOT NULL, port INTEGER NOT NULL, routing_name TEXT NOT NULL,"
          " label TEXT NOT NULL, public INTEGER NOT NULL DEFAULT 0,"
          " PRIMARY KEY (workspace, sandbox, service))")
for s in ("amb1", "amb2", "amb3"):
    c.execute("INSERT INTO fastwall_services VALUES ('team', ?, '', 5100, 'gateway-a', ?, 1)", (s, sys.argv[2]))
c.commit()
EOF
ngx_conf "$C" 110 8093 1 "sqlite:$DB" >"$C/nginx.conf"
gw_start C "$C"
check "C started on a store with three rows under one label, and said so" \
	grep -q 'alert.*the sqlite service store holds two services under one label' "$C/logs/error.log"
check "at hydration: logged at alert" grep -q "alert.*team/amb3/ shares the label \"$AMB\" too: 3 services" "$C/logs/error.log"
check_eq "the label is 404" "$(host 110 "$AMB.$DOMAIN")" 404
check_eq "the metric counts it" "$(metric 8093 fastwall_ingress_service_ambiguous_labels)" 1
check_eq "the readable hosts route" "$(host 110 team--amb2.$DOMAIN)" 200
"$FW_PY" -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TRIGGER fw_fail BEFORE INSERT ON fastwall_services BEGIN SELECT RAISE(ABORT, \"injected\"); END"); c.commit()' "$DB"
check_eq "expose with a SQLite trigger that raises: 503, not a collision" "$(admin 8093 PUT '/services/team/sq?port=5500&public=true')" 503
check_eq "nothing exposed" "$(admin 8093 GET /services/team/sq) $(host 110 team--sq.$DOMAIN)" "404 404"

for d in "$A" "$B" "$C"; do
	check "no worker crashed in $(basename "$d")" bash -c "! grep -q 'exited on signal' '$d/logs/error.log'"
done

fw_summary
