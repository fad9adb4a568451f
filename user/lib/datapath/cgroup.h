/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Process sandboxes: subjects keyed by cgroup v2 id (fastwall_cgroups),
 * the cgroup programs of bpf/cgroup.bpf.c (loaded beside the TC programs,
 * on the same maps, attached to one cgroup with BPF_F_ALLOW_MULTI), and
 * the cgroup2 file system helpers fastwalld and `fastwall run` need.
 * Functions return 0 or a negative errno and log what failed. */
#ifndef FW_DATAPATH_CGROUP_H
#define FW_DATAPATH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/datapath.h"
#include "datapath/scan.h"

/* ---- the map (the registry's accesses; the fake implements these) ---- */

/* Points cgroup cgid (and everything below it) at subject s. */
int fw_dp_cgroup_put(struct fw_dp *dp, __u64 cgid, const struct fw_subject *s);
/* Removes cgid's entry if it still points at subject id. */
int fw_dp_cgroup_del(struct fw_dp *dp, __u64 cgid, __u32 id);
/* -ENOENT when cgid has no entry */
int fw_dp_cgroup_lookup(struct fw_dp *dp, __u64 cgid, struct fw_subject *out);
/* __u64 cgroup id -> struct fw_subject */
int fw_dp_cgroup_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);

/* ---- the programs ---- */

/* The descriptor of dp's map name (load.c's table), -ENOENT when none. */
int fw_dp_map_fd(struct fw_dp *dp, const char *name);

struct fw_cg;

/* Loads the cgroup programs on dp's maps (no pin of their own). */
int fw_cg_load(struct fw_dp *dp, struct fw_cg **out);
/* Attaches every program to the cgroup directory dir with
 * BPF_F_ALLOW_MULTI, replacing (atomically, BPF_F_REPLACE) fastwall's
 * programs of an earlier start there, so there is no moment without
 * one. The programs stay attached when fastwalld exits. */
int fw_cg_attach(struct fw_cg *cg, const char *dir);
/* Detaches fastwall's cgroup programs from dir (any fastwalld's);
 * how many it detached. */
int fw_cg_detach(const char *dir);
void fw_cg_close(struct fw_cg *cg);
/* Tells the cgroup programs the layer-7 proxy's ports, from
 * fastwall_l7_ports, so that a process sandbox cannot address them on
 * loopback itself: after every write of that map (fw_cg_load does it
 * once). At most FW_CG_L7_PROXIES distinct ports (-E2BIG: the first ones
 * are kept). */
#define FW_CG_L7_PROXIES 4
int fw_cg_l7_sync(struct fw_cg *cg, struct fw_dp *dp);
/* The descriptor of program name (fw_cg_egress, ...), for tests; -ENOENT. */
int fw_cg_prog_fd(struct fw_cg *cg, const char *name);

/* ---- the cgroup2 file system ---- */

/* true when path is the root of a cgroup2 mount */
bool fw_cg_is_cgroup2(const char *path);
/* want when it is a cgroup2 mount, else the first cgroup2 mount there is,
 * else fallback after mounting cgroup2 there (created when missing); the
 * one used goes to out. */
int fw_cg_mount(const char *want, const char *fallback, char *out, size_t len);
/* The cgroup v2 id of directory path (its inode number, as the kernel's
 * bpf_get_current_cgroup_id reports it). */
int fw_cg_id_of(const char *path, __u64 *id);
/* Levels of path below the cgroup2 mount root (the root is 0). */
int fw_cg_level(const char *root, const char *path);
/* 1 when cgroup path has a process in it or below, 0 when none, or a
 * negative errno (-ENOENT: the cgroup is gone). */
int fw_cg_populated(const char *path);
/* Kills every process in cgroup path and below (cgroup.kill). */
int fw_cg_kill(const char *path);
/* cgroup2 is mounted with nsdelegate (a flag of the whole hierarchy,
 * shown by each of its mounts): only then does a cgroup namespace bound
 * which cgroups its processes may move processes between. */
bool fw_cg_nsdelegate(void);
/* The first cgroup2 mount of this mount namespace (/proc/self/mounts). */
int fw_cg_find_mount(char *out, size_t len);
/* The path of cgroup id under the cgroup2 mount root, from its file
 * handle; -ENOENT when the id is not a live cgroup there. */
int fw_cg_path_of(const char *root, __u64 id, char *out, size_t len);
/* A descriptor of cgroup id opened through the mount at root (whatever
 * mount the id was seen on); a negative errno, -ENOENT when gone. */
int fw_cg_open_id(const char *root, __u64 id);

#endif /* FW_DATAPATH_CGROUP_H */
