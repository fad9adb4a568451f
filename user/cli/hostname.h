/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `fastwall hostname hash|parse`: exposed-service hostnames from the
 * command line. Returns the process exit code. */
#ifndef FW_CLI_HOSTNAME_H
#define FW_CLI_HOSTNAME_H

int fw_cli_hostname(int argc, char **argv);

#endif /* FW_CLI_HOSTNAME_H */
