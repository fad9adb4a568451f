/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall scope sign|verify`: route scopes from the command line. Returns
 * the process exit code. */
#ifndef FW_CLI_SCOPE_H
#define FW_CLI_SCOPE_H

int fw_cli_scope(int argc, char **argv);

#endif /* FW_CLI_SCOPE_H */
