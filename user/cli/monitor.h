/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall monitor`: fastwalld's live events (deny, DNS decisions,
 * sampled allows) as text or JSON lines. Returns the process exit code. */
#ifndef FW_CLI_MONITOR_H
#define FW_CLI_MONITOR_H

#define FW_MONITOR_SOCKET "/run/fastwall/monitor.sock"

int fw_cli_monitor(int argc, char **argv);

#endif /* FW_CLI_MONITOR_H */
