/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The counters the programs keep, per reason and per subject, summed
 * over CPUs, and their reset when a subject id is taken again. Functions
 * return 0 or a negative errno. */
#ifndef FW_DATAPATH_STATS_H
#define FW_DATAPATH_STATS_H

#include "datapath/datapath.h"

/* Sums the per-CPU counters, with what an earlier ABI's carried (and,
 * per subject, the policy passes of its rows). */
/* adds the per-CPU fw_counter values of keys 0..nkeys-1 of the per-CPU
 * array fd (none when fd < 0) to out[]; 0 or a negative errno */
int fw_counters_add(int fd, __u32 nkeys, struct fw_counter *out);
int fw_dp_stats_read(struct fw_dp *dp, struct fw_counter out[FW_REASON_MAX]);
int fw_dp_subject_stats_read(struct fw_dp *dp, __u32 id, __u64 out[FW_REASON_MAX]);
/* Events the programs could not put in the full ring, by event type
 * (index FW_EVENT_DROP, FW_EVENT_ALLOW), summed over CPUs; all zero while
 * fastwall_events_lost is not pinned yet (an older fastwalld's pins). */
int fw_dp_events_lost_read(struct fw_dp *dp, __u64 out[FW_EVENT_LOST_SLOTS]);

/* Zeroes the per-subject counters and event budget of id (on id reuse);
 * no kernel write when they are known to be zero already. */
int fw_dp_subject_reset(struct fw_dp *dp, __u32 id);

/* Zeroes them whatever is known (fw_dp_reap's, off the request path). */
int fw_dp_subject_zero(struct fw_dp *dp, __u32 id);

#endif /* FW_DATAPATH_STATS_H */
