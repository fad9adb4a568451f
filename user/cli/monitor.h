/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall monitor`: fastwalld's live events (deny, DNS decisions,
 * sampled allows) as text or JSON lines. Returns the process exit code. */
#ifndef FW_CLI_MONITOR_H
#define FW_CLI_MONITOR_H

#include "common/cmd.h"

#define FW_MONITOR_SOCKET "/run/fastwall/monitor.sock"

extern const struct fw_cmd_opt fw_cli_monitor_opts[];
int fw_cli_monitor(struct fw_cmd_args *a);

#endif /* FW_CLI_MONITOR_H */
