/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall hostname hash|parse|expose|get|delete|list|delete-sandbox`:
 * exposed-service hostnames from the command line, and a gateway's
 * service admin API. Returns the process exit code. */
#ifndef FW_CLI_HOSTNAME_H
#define FW_CLI_HOSTNAME_H

#include "common/cmd.h"

extern const struct fw_cmd_opt fw_cli_hostname_opts[];
int fw_cli_hostname(struct fw_cmd_args *a);

#endif /* FW_CLI_HOSTNAME_H */
