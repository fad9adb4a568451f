/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-subject egress bandwidth from userspace (bpf/bandwidth.bpf.c): the
 * limits in fastwall_bandwidth, the counters, and the programs on the
 * uplinks' TC egress with the fq qdisc that edt needs. Functions return 0
 * or a negative errno and log what failed. */
#ifndef FW_DATAPATH_BANDWIDTH_H
#define FW_DATAPATH_BANDWIDTH_H

#include <stdbool.h>

#include "datapath/datapath.h"
#include "fastwall/bandwidth.h"

#define FW_BW_TC_HANDLE	  0xfa59 /* neither the sandbox ports' 0xfa57 nor the guard's 0xfa58 */
#define FW_BW_TC_PRIORITY 0xfa5
/* the root fq fastwalld puts on an uplink, by its handle: detach removes
 * only this one, and the kernel's default qdisc comes back */
#define FW_BW_FQ_HANDLE 0xfa5b0000u

/* bandwidth.mode; the numbers are the configuration's */
enum fw_bw_mode {
	FW_BW_AUTO = 0, /* edt where fq can be the uplink's root qdisc, else police */
	FW_BW_EDT,	/* departure times for fq; refused where fq can't be had */
	FW_BW_POLICE,	/* a token bucket per subject, the excess dropped */
	FW_BW_NONE,	/* not attached */
};

const char *fw_bw_mode_name(enum fw_bw_mode m);

/* The limit of subject id: rate 0 removes it. A write starts the
 * subject's state afresh, so the caller writes only a change. */
int fw_dp_bandwidth_set(struct fw_dp *dp, __u32 id, __u64 rate, __u64 burst);
/* the limit fastwall_bandwidth holds for id: rate 0 (and burst 0) for
 * none; 0 or a negative errno */
int fw_dp_bandwidth_get(struct fw_dp *dp, __u32 id, __u64 *rate, __u64 *burst);
/* id's limit (-ENOENT: none); fd is fastwall_bandwidth's. */
int fw_bw_limit_get(int fd, __u32 id, __u64 *rate, __u64 *burst);
/* the counters summed over CPUs; -1 fd or a missing map reads zero */
int fw_bw_stats_read(int fd, struct fw_counter out[FW_BW_STAT_MAX]);

struct bandwidth_bpf;

struct fw_bw {
	struct bandwidth_bpf *skel;
	int edt_fd, police_fd;
};

/* Loads the programs with the maps pinned under pin_root (created there
 * when missing); horizon_ns and processes (process sandboxes exist: a
 * packet with a socket may be theirs) are fixed at load. */
int fw_bw_open(const char *pin_root, __u64 horizon_ns, bool processes, struct fw_bw **out);
void fw_bw_close(struct fw_bw *bw);

/* Puts the program of mode want on ifindex's TC egress (edt: with fq as
 * its root qdisc, which replaces only the kernel's default one); *used
 * gets the mode it runs in. auto takes police where fq can't be had and
 * says why once. */
int fw_bw_attach(struct fw_bw *bw, int ifindex, enum fw_bw_mode want, enum fw_bw_mode *used);
/* Removes the program and fastwall's fq from ifindex; -ENOENT when
 * neither was there. */
int fw_bw_detach(int ifindex);
/* The mode running on ifindex, FW_BW_NONE when none. */
enum fw_bw_mode fw_bw_attached(int ifindex);

#endif /* FW_DATAPATH_BANDWIDTH_H */
