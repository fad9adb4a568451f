/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one clock of fastwall: CLOCK_MONOTONIC, which is what the BPF
 * programs' bpf_ktime_get_ns reads, so a lease's expiry written by
 * userspace and compared by the data plane is on one time line. Every
 * network namespace shares it. */
#ifndef FW_CLOCK_H
#define FW_CLOCK_H

#include <time.h>

#include <linux/types.h>

#include "fastwall/abi.h"

static inline __u64 fw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * FW_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

static inline __u64 fw_now_ms(void)
{
	return fw_now_ns() / FW_NSEC_PER_MSEC;
}

#endif /* FW_CLOCK_H */
