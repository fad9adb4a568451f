# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Shared topology and helpers for fastwall's end-to-end tests and the demo.
# Source it from bash; everything it creates carries a per-run id and lives
# in network namespaces it creates, and fw_cleanup removes all of it.
#
#   internet ns (fwinet-ID)                 pod ns (fwpod-ID)
#   eth0 192.0.2.254/24  <-- veth -->  up0 192.0.2.1/24          br0 10.42.0.1/24
#        2001:db8:1::254/64                2001:db8:1::1/64         fd00:42::1/64
#   lo 198.51.100.10, .66                                           |  ports sb-X
#      203.0.113.10                                                 |
#      2001:db8::10, ::66           sandbox ns fwsb-ID-X: eth0 10.42.0.N/24
#                                                                  fd00:42::N/64
#
# Only documentation ranges (RFC 5737, RFC 3849) and 10.42.0.0/24,
# fd00:42::/64 are used, all inside the namespaces; the initial namespace
# is never touched besides the pin directory under /sys/fs/bpf.

# The test runners glob tests/e2e/*.sh; run directly, this file does nothing.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "lib.sh: helpers sourced by the end-to-end tests and scripts/demo.sh; nothing to run"
	exit 0
fi

# The parts, in the order they build on each other (each is only sourced,
# and only from here):
#   core      this run's names, fw_die, fw_require, fw_ns, fw_cleanup
#   topology  namespaces, the pod's bridge and uplink, the internet, sandboxes
#   traffic   servers (fw_bg, fw_serve, fw_resolver) and clients (fw_http ...)
#   daemon    fastwalld start/stop/reload, its log, the CLI, counters,
#             fw_subject_yaml (a sandbox subject for $FW_CFG)
#   checks    check, check_fails, check_eq, fw_eventually, fw_summary
#   actions   the Sandbox Actions protocol
#   ingress   the ingress gateway (nginx and its stand-ins)
#   cgroup    cgroup2 for process sandboxes
#   l7        layer-7 pinning: the TLS and HTTP server, its CA, a capture
#   credentials  layer-7 credential injection: an upstream showing what it got
#   machine   a Debian machine under systemd-nspawn, systemd as its PID 1
FW_LIB_DIR=$(dirname "${BASH_SOURCE[0]}")/lib
# shellcheck source=tests/e2e/lib/core.sh
. "$FW_LIB_DIR/core.sh"
# shellcheck source=tests/e2e/lib/topology.sh
. "$FW_LIB_DIR/topology.sh"
# shellcheck source=tests/e2e/lib/traffic.sh
. "$FW_LIB_DIR/traffic.sh"
# shellcheck source=tests/e2e/lib/daemon.sh
. "$FW_LIB_DIR/daemon.sh"
# shellcheck source=tests/e2e/lib/checks.sh
. "$FW_LIB_DIR/checks.sh"
# shellcheck source=tests/e2e/lib/actions.sh
. "$FW_LIB_DIR/actions.sh"
# shellcheck source=tests/e2e/lib/ingress.sh
. "$FW_LIB_DIR/ingress.sh"
# shellcheck source=tests/e2e/lib/cgroup.sh
. "$FW_LIB_DIR/cgroup.sh"
# shellcheck source=tests/e2e/lib/l7.sh
. "$FW_LIB_DIR/l7.sh"
# shellcheck source=tests/e2e/lib/credentials.sh
. "$FW_LIB_DIR/credentials.sh"
# shellcheck source=tests/e2e/lib/machine.sh
. "$FW_LIB_DIR/machine.sh"
