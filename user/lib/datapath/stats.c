// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The counters: read and summed over CPUs, and zeroed for a new subject
 * (see stats.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "datapath/stats.h"

/* fastwall_subject_rows, mapped on first use: NULL (and rows_cpus 0)
 * while it is not pinned (an older fastwalld of this ABI) or can't be
 * mapped (said). */
static struct fw_subject_row *subject_rows(struct fw_dp *dp)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *p;

	if (dp->rows || dp->subject_rows_fd < 0)
		return dp->rows;
	if (bpf_obj_get_info_by_fd(dp->subject_rows_fd, &info, &len)) {
		fw_err("can't query fastwall_subject_rows: %s", strerror(errno));
		return NULL;
	}
	if (info.value_size != sizeof(struct fw_subject_row) || !FW_ROW_CPUS(info.max_entries)) {
		fw_err("fastwall_subject_rows has %u entries of %u bytes, not rows of %d subjects",
		       info.max_entries, info.value_size, FW_MAX_SUBJECTS);
		return NULL;
	}
	p = mmap(NULL, (size_t)info.max_entries * sizeof(struct fw_subject_row),
		 PROT_READ | PROT_WRITE, MAP_SHARED, dp->subject_rows_fd, 0);
	dp->rows_writable = p != MAP_FAILED;
	if (p == MAP_FAILED && (errno == EACCES || errno == EPERM))
		/* a reader of pins it may not write: enough to count */
		p = mmap(NULL, (size_t)info.max_entries * sizeof(struct fw_subject_row), PROT_READ,
			 MAP_SHARED, dp->subject_rows_fd, 0);
	if (p == MAP_FAILED) {
		fw_err("can't map fastwall_subject_rows: %s", strerror(errno));
		return NULL;
	}
	dp->rows = p;
	dp->rows_cpus = FW_ROW_CPUS(info.max_entries);
	return p;
}

/* Zeroes id's pass counters in every CPU's row, not its cached answer:
 * the data plane may be writing that, and its tags expire anyway. One
 * 8-byte store per counter, as the data plane's increments are. */
static int rows_zero(struct fw_dp *dp, __u32 id)
{
	struct fw_subject_row *rows = subject_rows(dp);

	if (!rows)
		return dp->subject_rows_fd < 0 ? 0 : -EIO;
	if (!dp->rows_writable)
		return -EACCES;
	for (__u32 c = 0; c < dp->rows_cpus; c++)
		for (int r = 0; r < FW_ROW_REASONS; r++)
			__atomic_store_n(&rows[FW_ROW_KEY(c, id)].packets[r], 0, __ATOMIC_RELAXED);
	return 0;
}

static int percpu_zero(int fd, __u32 key, size_t value_size)
{
	int ncpu = libbpf_num_possible_cpus();
	void *zero;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	zero = calloc(ncpu, (value_size + 7) & ~7ul);
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(fd, &key, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

int fw_dp_subject_zero(struct fw_dp *dp, __u32 id)
{
	int err = percpu_zero(dp->subject_stats_fd, id, sizeof(struct fw_subject_stats));

	if (!err && dp->subject_stats_carried_fd >= 0)
		err = percpu_zero(dp->subject_stats_carried_fd, id,
				  sizeof(struct fw_subject_stats));
	if (!err)
		err = rows_zero(dp, id);
	if (!err)
		err = percpu_zero(dp->budget_fd, id, sizeof(struct fw_event_budget));
	return err;
}

int fw_dp_subject_reset(struct fw_dp *dp, __u32 id)
{
	if (id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	/* the id is taken: its packets count from now on */
	if (dp->clean && dp->clean[id]) {
		dp->clean[id] = false;
		return 0;
	}
	return fw_dp_subject_zero(dp, id);
}

int fw_counters_add(int fd, __u32 nkeys, struct fw_counter *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct fw_counter *vals;

	if (ncpu < 0)
		return ncpu;
	if (fd < 0)
		return 0;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < nkeys; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			out[k].packets += vals[c].packets;
			out[k].bytes += vals[c].bytes;
		}
	}
	free(vals);
	return 0;
}

/* the live counters, then (when an earlier ABI's were carried over) those */
int fw_dp_stats_read(struct fw_dp *dp, struct fw_counter out[FW_REASON_MAX])
{
	int err;

	memset(out, 0, sizeof(*out) * FW_REASON_MAX);
	err = fw_counters_add(dp->stats_fd, FW_REASON_MAX, out);
	return err ? err : fw_counters_add(dp->stats_carried_fd, FW_REASON_MAX, out);
}

int fw_dp_subject_stats_read(struct fw_dp *dp, __u32 id, __u64 out[FW_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	int fds[2] = {dp->subject_stats_fd, dp->subject_stats_carried_fd};
	struct fw_subject_stats *vals;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, sizeof(__u64) * FW_REASON_MAX);
	for (int f = 0; f < 2 && !err; f++) {
		if (fds[f] < 0)
			continue;
		if (bpf_map_lookup_elem(fds[f], &id, vals)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			for (int r = 0; r < FW_REASON_MAX; r++)
				out[r] += vals[c].packets[r];
	}
	free(vals);
	if (!err && id < FW_MAX_SUBJECTS && subject_rows(dp)) {
		for (__u32 c = 0; c < dp->rows_cpus; c++)
			for (int r = 0; r < FW_ROW_REASONS; r++)
				out[r] += __atomic_load_n(&dp->rows[FW_ROW_KEY(c, id)].packets[r],
							  __ATOMIC_RELAXED);
	} else if (!err && dp->subject_rows_fd >= 0) {
		err = -EIO;
	}
	return err;
}

_Static_assert(FW_EVENT_ALLOW < FW_EVENT_LOST_SLOTS, "an event type without a lost slot");

int fw_dp_events_lost_read(struct fw_dp *dp, __u64 out[FW_EVENT_LOST_SLOTS])
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int err = 0;

	memset(out, 0, sizeof(__u64) * FW_EVENT_LOST_SLOTS);
	if (dp->events_lost_fd < 0)
		return 0;
	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < FW_EVENT_LOST_SLOTS && !err; k++) {
		if (bpf_map_lookup_elem(dp->events_lost_fd, &k, vals)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return err;
}
