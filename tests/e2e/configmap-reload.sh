#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# End-to-end: a configuration in a Kubernetes ConfigMap volume reloads
# when the volume is updated, as SIGHUP reloads it. The volume's layout is
# made here as the kubelet makes it: DIR/fastwalld.yaml ->
# ..data/fastwalld.yaml, ..data -> a timestamped directory, and an update
# writes a new directory and renames a new symlink onto ..data. A good
# update is applied (the new rule decides, fastwall explain says so, and
# fastwall_config_last_reload_successful is 1); a bad one is rejected and
# changes nothing (the metric is 0, the old rule still decides), and the
# next good one is applied again.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -euo pipefail

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap fw_cleanup EXIT
trap 'exit 130' INT TERM
fw_require

fw_topology
fw_sandbox a 2

CM=$FW_TMP/configmap
FW_CFG=$CM/fastwalld.yaml
mkdir -p "$CM"

# version NAME CIDR: the configuration whose sandbox-a allows CIDR, in the
# volume's directory ..NAME
version() {
	mkdir -p "$CM/..$1"
	cat >"$CM/..$1/fastwalld.yaml" <<EOF
log_level: info
monitor:
  socket: $FW_MON_SOCK
dns: { proxy: false }
datapath:
  bpffs: $BPFFS
  bridges: [br0]
subjects:
$(fw_subject_yaml a 2)
    policy:
      defaultAction: deny
      egress:
        - { action: allow, target: $2 }
EOF
}

# swap NAME: the kubelet's update, ..data pointed at ..NAME in one rename
swap() {
	local old
	old=$(readlink "$CM/..data")
	ln -s "..$1" "$CM/..data_tmp"
	mv -T "$CM/..data_tmp" "$CM/..data"
	rm -rf "${CM:?}/$old"
}

# explain's exit status for sandbox-a to DST port 80 (0 pass, 7 drop)
verdict() { fw_cli explain 10.42.0.2 "$1" 80/tcp >/dev/null 2>&1 && echo 0 || echo $?; }
reload_ok() {
	fw_ns "$NS_POD" curl -s --max-time 3 http://127.0.0.1:9464/metrics |
		awk '$1 == "fastwall_config_last_reload_successful" { print $2 }'
}

version v1 198.51.100.0/24
ln -s ..v1 "$CM/..data"
ln -s ..data/fastwalld.yaml "$CM/fastwalld.yaml"
fw_start_daemon || fw_die "fastwalld did not start"
check "fastwalld says it watches the ConfigMap volume" \
	grep -q "is in a ConfigMap volume: an update of $CM/..data reloads it" "$FW_LOG"
check_eq "v1: 203.0.113.10 drops" "$(verdict 203.0.113.10)" 7

echo "# a good update"
version v2 203.0.113.0/24
swap v2
check "reloaded on the swap of ..data, without a signal" fw_wait_log 'reloaded ' 1 5
check "the log says why" grep -q 'the ConfigMap volume was updated; reloading' "$FW_LOG"
check_eq "v2: 203.0.113.10 passes" "$(verdict 203.0.113.10)" 0
check_eq "fastwall_config_last_reload_successful 1" "$(reload_ok)" 1

echo "# a bad update"
mkdir -p "$CM/..v3"
printf 'datapath:\n  bpffs: [\n' >"$CM/..v3/fastwalld.yaml"
swap v3
check "rejected" fw_wait_log 'reload rejected, running configuration unchanged' 1 5
check_eq "fastwall_config_last_reload_successful 0" "$(reload_ok)" 0
check_eq "the running rules stay: 203.0.113.10 passes" "$(verdict 203.0.113.10)" 0
check "fastwalld still runs" kill -0 "$FW_DAEMON_PID"

echo "# the next good update"
version v4 192.0.2.128/25
swap v4
check "reloaded again" fw_wait_log 'reloaded ' 2 5
check_eq "v4: 203.0.113.10 drops" "$(verdict 203.0.113.10)" 7
check_eq "fastwall_config_last_reload_successful 1 again" "$(reload_ok)" 1
check_eq "one reload per update (no reload of a file that was not swapped)" \
	"$(fw_log_count 'the ConfigMap volume was updated')" 3

fw_summary
