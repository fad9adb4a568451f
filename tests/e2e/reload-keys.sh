#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: a SIGHUP that changes every restart-only key (the keys whose
# reload column in `fastwalld config-keys --markdown` says "restart").
# Each is named in a warning with the value kept; what runs stays what ran
# (the proxy's worker sockets, the monitor socket, the metrics listener);
# and a second SIGHUP with the same file warns again, because the
# running configuration says what runs. The list of keys below must be the
# table's: a new restart-only key fails here until it is covered.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require
command -v ss >/dev/null || fw_die "ss not found (iproute2)"

fw_topology

UP4=198.51.100.53 # nothing answers: the proxy needs an upstream, not an answer
METRICS=127.0.0.1:9464

# every restart-only key: the value the running configuration has (the
# first file sets none of them: defaults, and this run's bpffs and monitor
# socket), and the one the second file gives it
declare -A old=(
	[actions]=absent
	[processes]=absent
	[datapath.bpffs]=$BPFFS
	[actions.listen]=127.0.0.1:18080
	[actions.vault_socket]=/run/fastwall/vault.sock
	[actions.restart]=keep
	[actions.grace]=10
	[actions.pending_ttl]=30
	[actions.bind_host_veth]=true
	[processes.cgroup_root]=/sys/fs/cgroup
	[processes.cgroup_parent]=fastwall
	[processes.socket]=/run/fastwall/run.sock
	[processes.run_group]=""
	[processes.run_parent]=""
	[dns.proxy]=true
	[dns.port]=15353
	[dns.timeout]=5
	[dns.probe_interval]=10
	[dns.workers]=2
	[dns.max_tcp_clients]=256
	[dns.max_tcp_per_client]=16
	[dns.case_randomize]=false
	[dns.tcp_query_timeout]=10
	[metrics.listen]=$METRICS
	[metrics.per_subject]=false
	[monitor.socket]=$FW_MON_SOCK
	[monitor.reader_queue]=4096
	[l7.enabled]=false
	[l7.proxy_tls_port]=15443
	[l7.proxy_http_port]=15080
	[l7.default]=on
	[l7.cidr]=pass
	[l7.ech]=deny
	[l7.nginx]=/usr/sbin/nginx
	[l7.module]=/usr/lib/nginx/modules/ngx_fastwall_l7_module.so
	[l7.stream_module]=/usr/lib/nginx/modules/ngx_stream_module.so
	[l7.runtime_dir]=/run/fastwall/l7
	[l7.user]=nobody
	[l7.workers]=1
	[l7.max_connections]=4096
	[l7.subject_connections]=1024
	[l7.credentials]=on
	[l7.ca]=absent
	[l7.upstream_ca]=""
	[l7.upstream_keepalive]=64
	[l7.ca.dir]=/var/lib/fastwall/l7-ca
	[l7.ca.cert]=""
	[l7.ca.key]=""
	[l7.ca.publish]=absent
	[bandwidth.horizon]=2
)

# the first file
cat >"$FW_CFG" <<EOF
log_level: info
datapath:
  bpffs: $BPFFS
  bridges: [br0]
dns:
  upstreams: [$UP4]
bandwidth:
  interfaces: [up0]
  mode: police
EOF

# the second: every key above changed, nothing else
changed() {
	cat <<EOF
log_level: info
datapath:
  bpffs: $BPFFS-other
  bridges: [br0]
actions:
  listen: 127.0.0.1:18081
  vault_socket: $FW_TMP/vault.sock
  restart: wipe
  grace: 3
  pending_ttl: 7
  bind_host_veth: false
processes:
  cgroup_root: $FW_TMP/cgroup
  cgroup_parent: other
  socket: $FW_TMP/run.sock
  run_group: "0"
  run_parent: sub
dns:
  upstreams: [$UP4]
  proxy: false
  port: 15354
  timeout: 3
  probe_interval: 4
  workers: 3
  max_tcp_clients: 100
  max_tcp_per_client: 5
  case_randomize: true
  tcp_query_timeout: 7
metrics:
  listen: 127.0.0.1:9465
  per_subject: true
monitor:
  socket: $FW_TMP/other.sock
  reader_queue: 10
l7:
  enabled: true
  proxy_tls_port: 16443
  proxy_http_port: 16080
  default: off
  cidr: pin
  ech: allow
  nginx: $FW_TMP/nginx
  module: $FW_TMP/l7.so
  stream_module: $FW_TMP/stream.so
  runtime_dir: $FW_TMP/l7
  user: "65534"
  workers: 2
  max_connections: 100
  subject_connections: 10
  credentials: off
  upstream_ca: $FW_TMP/upstream.pem
  upstream_keepalive: 8
  ca:
    dir: $FW_TMP/l7-ca
    cert: $FW_TMP/ca.crt
    key: $FW_TMP/ca.key
    publish: [$FW_TMP/next.crt]
bandwidth:
  interfaces: [up0]
  mode: police
  horizon: 3
EOF
}

echo "# the test covers the table's restart-only keys"
table=$("$FASTWALLD" config-keys --markdown | awk '
	/^### `/ { s = $2; gsub(/`/, "", s); next }
	/\| restart \|/ { k = $2; gsub(/`/, "", k); print (s == "top" ? k : s "." k) }' | sort)
check_eq "the restart-only keys of config-keys --markdown are the ones changed here" \
	"$(echo "$table" | tr '\n' ' ')" "$(printf '%s\n' "${!old[@]}" | sort | tr '\n' ' ')"

fw_start_daemon || fw_die "fastwalld did not start"
# the proxy's sockets on its port: one a worker and family
proxy_sockets() { fw_ns "$NS_POD" ss -Huln "sport = :$1" | wc -l; }
socks=$(proxy_sockets 15353)
check "the proxy listens on 15353 ($socks sockets)" test "$socks" -gt 0
check "the monitor socket is there" test -S "$FW_MON_SOCK"

changed >"$FW_CFG"

for round in 1 2; do
	echo "# SIGHUP $round with every restart-only key changed"
	check "reload $round done" fw_reload
	check "reload $round applied" fw_wait_log "reloaded $FW_CFG" "$round" 1
	for k in $(printf '%s\n' "${!old[@]}" | sort); do
		check_eq "reload $round: $k named, '${old[$k]}' kept" \
			"$(grep -cF "$k changes only on restart; keeping '${old[$k]}'" "$FW_LOG")" \
			"$round"
	done
	check_eq "reload $round: the proxy still has its $socks sockets on 15353" \
		"$(proxy_sockets 15353)" "$socks"
	check_eq "reload $round: nothing listens on 15354" "$(proxy_sockets 15354)" 0
	check "reload $round: the monitor socket stays" test -S "$FW_MON_SOCK"
	check_fails "reload $round: no monitor socket at the new path" test -e "$FW_TMP/other.sock"
	check_eq "reload $round: /healthz still on $METRICS" \
		"$(fw_ns "$NS_POD" curl -s --max-time 3 -o /dev/null -w '%{http_code}' \
			"http://$METRICS/healthz")" 200
	check "reload $round: the pins stay under $BPFFS" test -d "$BPFFS"
	check_fails "reload $round: nothing pinned under $BPFFS-other" test -e "$BPFFS-other"
	check_fails "reload $round: no layer-7 proxy (l7.enabled stays false)" \
		grep -q "l7 proxy started" "$FW_LOG"
done

fw_stop_daemon
fw_summary
