/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The per-CPU subject rows of the TC programs: one cache line per CPU
 * and subject holding its cached answer (answers.h) and its policy pass
 * counters (counters.h). fw_subject_row() returns this CPU's row, or NULL
 * where there is none (the cgroup programs and the guard, which count in
 * fastwall_subject_stats_v2). */
#ifndef FW_BPF_ROWS_H
#define FW_BPF_ROWS_H

#include "common.h"

/* {CPU, subject id} -> struct fw_subject_row (fastwall/abi.h): the
 * subject's answer cache and policy pass counters on one line. Here one
 * CPU's rows; fastwalld sizes it to every possible CPU before the load.
 * Writers: fw_from_sandbox, fastwalld (zeroes the counters of a reused id).
 * Readers: fw_from_sandbox, fastwalld, CLI. Only in the object that defines
 * FW_SUBJECT_ROWS (the TC programs): the cgroup programs and the guard
 * count in fastwall_subject_stats_v2 as they always did. */
#ifdef FW_SUBJECT_ROWS
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_subject_row);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_subject_rows SEC(".maps");
#endif

/* This CPU's row of subject id; NULL for a CPU the map was not sized
 * for (the caller then does without). A plain array, not a per-CPU one:
 * a per-CPU array places its values 8 bytes apart, so 64 bytes of it
 * would straddle two lines. Only where the program cannot migrate. */
static __always_inline struct fw_subject_row *fw_subject_row(__u32 id)
{
#ifdef FW_SUBJECT_ROWS
	__u32 key;

	if (id >= FW_MAX_SUBJECTS)
		return NULL;
	key = FW_ROW_KEY(bpf_get_smp_processor_id(), id);
	return bpf_map_lookup_elem(&fastwall_subject_rows, &key);
#else
	(void)id;
	return NULL;
#endif
}

#endif /* FW_BPF_ROWS_H */
