/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's commands, as its command table (main.c) runs them: each
 * returns the process's exit status (common/exitcodes.h). */
#ifndef FW_DAEMON_FASTWALLD_H
#define FW_DAEMON_FASTWALLD_H

#include <stdbool.h>

#define FW_DEFAULT_CONFIG "/etc/fastwall/fastwalld.yaml"

struct fw_daemon;

/* The daemon's state before run: the configuration's path, and whether
 * --log-level and --log-format win over the configuration's. NULL
 * without memory. */
struct fw_daemon *fw_daemon_new(const char *config_path, bool level_forced, bool format_forced);
/* Stops what run started and frees d. */
void fw_daemon_free(struct fw_daemon *d);

/* Loads, attaches and enforces until SIGTERM. */
int run(struct fw_daemon *d);
/* Validates the configuration; its warnings on stderr. */
int check(const char *config_path);
/* The layer-7 proxy's nginx.conf as a start writes it, to stdout. */
int l7_conf(const char *config_path);
/* Removes fastwall from every interface; purge also unpins the maps
 * under bpffs (NULL: the configuration's). */
int detach(const char *config_path, const char *bpffs, bool purge);

#endif /* FW_DAEMON_FASTWALLD_H */
