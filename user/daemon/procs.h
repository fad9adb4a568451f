/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's process sandboxes: the cgroup2 mount, the cgroup programs
 * attached to the configured parent, the `fastwall run` socket (root and
 * processes.run_group, SO_PEERCRED), and the runs it registered, each
 * removed (subject and cgroup) once its launcher is done and its cgroup
 * is empty (inotify on cgroup.events). Runs on the daemon's event loop;
 * functions return 0 or a negative errno. */
#ifndef FW_DAEMON_PROCS_H
#define FW_DAEMON_PROCS_H

#include "common/loop.h"
#include "config/config.h"
#include "subjects/registry.h"

struct fw_procs;

/* Finds (or mounts) cgroup2, creates the parent, loads and attaches the
 * cgroup programs and adopts the runs of an earlier start: before any
 * process subject is programmed. */
int fw_procs_open(struct fw_registry *reg, const struct fw_cfg *cfg, struct fw_procs **out);
/* Called for each run root registers, its entry held (run_policy set):
 * the credential pushes that arrived before it apply now. */
typedef void (*fw_procs_run_fn)(void *ctx, struct fw_entry *e);
void fw_procs_on_run(struct fw_procs *p, fw_procs_run_fn fn, void *ctx);
/* Serves the run socket and checks the runs on loop. */
int fw_procs_serve(struct fw_procs *p, struct fw_loop *loop);
/* Resolves the cgroup of every static subject with one (below the
 * parent, created when missing) to its id in the spec; a subject whose
 * cgroup can't be made or is too deep gets none (it matches nothing).
 * An active one without keep_caps whose cgroup holds a process that may
 * leave it is set denying (caps_held) until the periodic check finds
 * none; the check looks at these specs (kept, not copied) from then on. */
void fw_procs_resolve(struct fw_procs *p, struct fw_subject_spec *subjects, size_t n);
/* Closes the socket; subjects, cgroups and programs stay (fail closed:
 * the sandboxes keep their policy while fastwalld is away). */
/* The cgroup programs learn the proxy's ports (fw_cg_l7_sync) after
 * every write of fastwall_l7_ports; p may be NULL. */
int fw_procs_l7_sync(struct fw_procs *p, struct fw_dp *dp);
void fw_procs_stop(struct fw_procs *p);
/* Removes fastwall's cgroup programs from the configured parent (detach). */
int fw_procs_detach(const struct fw_cfg *cfg);

#endif /* FW_DAEMON_PROCS_H */
