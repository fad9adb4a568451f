/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-subject egress bandwidth (bpf/bandwidth.bpf.c, at the TC egress of
 * the uplinks the `bandwidth` section names): the limits, their state and
 * the counters, shared by the program and fastwalld. Plain data, as in
 * fastwall/abi.h, which it includes. */
#ifndef FASTWALL_BANDWIDTH_H
#define FASTWALL_BANDWIDTH_H

#include "fastwall/abi.h"
#ifndef __VMLINUX_H__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

/* The limits a subject may carry (fastwallBandwidth: {rate, burst}), bytes
 * per second and bytes. The burst is at least one GSO packet (64 KiB: the
 * program sees a TCP segment train as one skb). When not given it is the
 * rate's tenth of a second, and at least 1 MiB: a policer whose bucket
 * holds only a few GSO packets drops a TCP flow's whole window at once,
 * and the flow waits for its retransmission timer (a single flow got 45 %
 * of a 10 Mbit/s limit with a 128 KiB burst, 101 % with 1 MiB; the
 * police rows of docs/bandwidth.md). */
#define FW_BW_RATE_MIN	  1000ull	 /* 8 kbit/s */
#define FW_BW_RATE_MAX	  12500000000ull /* 100 Gbit/s */
#define FW_BW_BURST_MIN	  65536ull
#define FW_BW_BURST_MAX	  (1ull << 32)
#define FW_BW_BURST_FLOOR (1ull << 20)
#define FW_BW_BURST_DEFAULT(rate)                                                                  \
	((rate) / 10 > FW_BW_BURST_FLOOR ? (rate) / 10 : FW_BW_BURST_FLOOR)

#ifndef FW_BW_HORIZON_NS
#define FW_BW_HORIZON_NS (2ull * FW_NSEC_PER_SEC) /* bandwidth.horizon's default */
#endif

/* fastwall_bandwidth: subject id -> struct fw_bandwidth, only for subjects
 * with a limit (a subject without one costs the program one lookup miss).
 * t_last is the departure time of the subject's last packet (edt) or its
 * theoretical arrival time (police), CLOCK_MONOTONIC ns, under the lock:
 * many CPUs send for one subject. A write from userspace replaces rate and
 * burst and starts the state afresh. Added in ABI 2 without a new version:
 * older pins lack it and fastwalld creates it at start (the TC programs
 * carry it). Writer: fastwalld (the registry, on every apply and
 * removal). Reader and writer of t_last: the bandwidth programs. */
struct fw_bandwidth {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 rate;   /* bytes per second, FW_BW_RATE_MIN..FW_BW_RATE_MAX */
	__u64 burst;  /* bytes, FW_BW_BURST_MIN..FW_BW_BURST_MAX */
	__u64 t_last; /* ns; 0 = nothing sent yet */
};

/* fastwall_bandwidth_stats: enum fw_bw_stat -> struct fw_counter (per-CPU
 * array). The drops are counted under their reasons (fastwall_stats_v2,
 * the subject's counters), not here. Writer: the bandwidth programs.
 * Reader: fastwalld (metrics). */
enum fw_bw_stat {
	FW_BW_STAT_SENT = 0,  /* packets of limited subjects that left */
	FW_BW_STAT_PACED = 1, /* ... with a departure time later than now (edt) */
	FW_BW_STAT_MAX,
};

#ifndef __VMLINUX_H__
_Static_assert(sizeof(struct fw_bandwidth) == 32, "fw_bandwidth");
#endif

#endif /* FASTWALL_BANDWIDTH_H */
