/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall scope sign|verify`: route scopes from the command line. Returns
 * the process exit code. */
#ifndef FW_CLI_SCOPE_H
#define FW_CLI_SCOPE_H

#include "common/cmd.h"

extern const struct fw_cmd_opt fw_cli_scope_opts[];
int fw_cli_scope(struct fw_cmd_args *a);

#endif /* FW_CLI_SCOPE_H */
