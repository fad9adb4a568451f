/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's process sandboxes: the cgroup2 mount, the cgroup programs
 * attached to the configured parent, the `fastwall run` socket (root
 * only, SO_PEERCRED), and the runs it registered, each removed (subject
 * and cgroup) once its launcher is done and its cgroup is empty. Runs on
 * the daemon's event loop; functions return 0 or a negative errno. */
#ifndef FW_DAEMON_PROCS_H
#define FW_DAEMON_PROCS_H

#include "common/loop.h"
#include "config/config.h"
#include "subjects/registry.h"

struct fw_procs;

int fw_procs_start(struct fw_loop *loop, struct fw_registry *reg, const struct fw_cfg *cfg,
		   struct fw_procs **out);
/* Closes the socket; subjects, cgroups and programs stay (fail closed:
 * the sandboxes keep their policy while fastwalld is away). */
void fw_procs_stop(struct fw_procs *p);
/* Removes fastwall's cgroup programs from the configured parent (detach). */
int fw_procs_detach(const struct fw_cfg *cfg);

#endif /* FW_DAEMON_PROCS_H */
