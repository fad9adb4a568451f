/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Verdict counters: per reason (packets and bytes) and per subject
 * (packets), per CPU. fw_count() is the one place every program's exit
 * counts a verdict: the TC programs, the cgroup programs and the guard. */
#ifndef FW_BPF_COUNTERS_H
#define FW_BPF_COUNTERS_H

#include "common.h"
#include "rows.h"

/* reason -> packets/bytes, per CPU. Writer: every program's exit (fw_count).
 * Reader: fastwalld, CLI. FW_REASON_SLOTS, not FW_REASON_MAX: a new reason keeps the layout
 * (and the pinned map) of this one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_REASON_SLOTS);
	__type(key, __u32);
	__type(value, struct fw_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_stats_v2 SEC(".maps");

/* subject id -> per-reason packets, per CPU. Writer: fw_count.
 * Reader: fastwalld, CLI. Reset by fastwalld when an id is reused. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_subject_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_subject_stats_v2 SEC(".maps");

/* Counts one verdict: len bytes under reason, and for a subject's own
 * (FW_COUNT_SUBJECT) a packet of the subject's, in its row where the
 * program has rows, else in fastwall_subject_stats_v2. A reason out of
 * the table is counted as bad, the drop it stands for, and *reason
 * becomes bad. */
#define FW_COUNT_SUBJECT 1
#define FW_COUNT_GLOBAL	 0

static __always_inline void fw_count(__u32 *reason, __u32 bad, __u32 subject, __u32 len, int scope)
{
	struct fw_subject_stats *ss;
	struct fw_subject_row *row;
	struct fw_counter *c;

	if (*reason >= FW_REASON_MAX)
		*reason = bad;
	c = bpf_map_lookup_elem(&fastwall_stats_v2, reason);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	if (scope != FW_COUNT_SUBJECT)
		return;
	/* the policy's passes on the line the answer cache has brought in */
	row = *reason < FW_ROW_REASONS ? fw_subject_row(subject) : NULL;
	if (row) {
		__u32 slot = *reason;

		/* bounded again where it indexes: reason lives on the stack
		 * (the lookup key above), and verifiers before 5.14 forget
		 * the bounds of a scalar reloaded from there */
		asm volatile("" : "+r"(slot));
		if (slot < FW_ROW_REASONS)
			row->packets[slot]++;
	} else {
		ss = bpf_map_lookup_elem(&fastwall_subject_stats_v2, &subject);
		if (ss && *reason < FW_REASON_SLOTS)
			ss->packets[*reason]++;
	}
}

#endif /* FW_BPF_COUNTERS_H */
