// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's third form: a policy of at most FW_RANGE_RULES entries
 * as a range table, a sorted array of address ranges (ranges.c builds
 * it) in a slot of fastwall_range_tables, named by the element
 * {subject, generation} -> slot of fastwall_rule_ranges. A table is
 * written once and replaced whole, never edited; its slot is free again a
 * grace period after nothing names it. See rules_store.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/ranges.h"
#include "datapath/rules_store.h"

/* A free slot of fastwall_range_tables, taken; -1 when none is. */
static int range_slot_take(struct fw_dp_rules *r)
{
	int slot = -1;

	pthread_mutex_lock(&r->lock);
	for (__u32 i = 0; i < FW_RANGE_SLOTS && slot < 0; i++) {
		__u32 at = (r->range_next + i) % FW_RANGE_SLOTS;

		if (!r->range_used[at]) {
			r->range_used[at] = true;
			r->range_next = at + 1;
			slot = (int)at;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return slot;
}

void fw_rs_range_slot_give(struct fw_dp_rules *r, __u32 slot)
{
	if (slot >= FW_RANGE_SLOTS)
		return;
	pthread_mutex_lock(&r->lock);
	r->range_used[slot] = false;
	pthread_mutex_unlock(&r->lock);
}

/* Writes set as the range table {id, gen} (gen with FW_GEN_RANGE): the
 * table into a free slot, in place through the array's mapping (no
 * program reads a free slot; a map update where it could not be mapped),
 * then the element that names the slot, new (BPF_NOEXIST, as for a small
 * set): one element write whatever the number of entries, and no
 * allocation in the kernel but the 4-byte element's. -E2BIG when the set cuts into more
 * ranges than a table holds or no slot is free, -ENOMEM when the kernel
 * has no memory for the element: the caller writes the trie instead. */
int fw_rs_range_put(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set, __u32 gen,
		    __u32 pgen)
{
	struct fw_dp_rules *r = dp->rules;
	struct fw_set_key k = {.subject = id, .gen = gen};
	int slot = range_slot_take(r);
	struct fw_range_set *v;
	__u32 at = (__u32)slot;
	int err;

	if (slot < 0)
		return -E2BIG;
	/* mapped: built in the slot itself, which is free, so no program
	 * reads it until the element below names it (that write, a
	 * syscall, orders these stores before it); else built here and
	 * written by a map update */
	v = r->tables ? &r->tables[at] : malloc(sizeof(*v));
	err = v ? fw_range_build(v, set->entries, set->n, set->nports ? pgen : 0) : -ENOMEM;
	if (!err && r->tables)
		__atomic_thread_fence(__ATOMIC_RELEASE);
	else if (!err && bpf_map_update_elem(dp->range_tables_fd, &at, v, BPF_ANY))
		err = -errno;
	if (!r->tables)
		free(v);
	if (!err && bpf_map_update_elem(dp->rule_ranges_fd, &k, &at, BPF_NOEXIST))
		err = errno == E2BIG ? -E2BIG : -errno;
	if (err)
		fw_rs_range_slot_give(r, at);
	return err;
}

/* Deletes range table k; its slot is free again (the caller waited for
 * the grace period after the last dispatch value naming its generation).
 * held: the slot stays taken, its number pushed there (__u32), for a
 * caller that frees it only after another grace period; NULL: free. */
int fw_rs_range_delete(struct fw_dp *dp, const struct fw_set_key *k, struct fw_recs *held)
{
	__u32 slot;

	if (dp->rule_ranges_fd < 0 || bpf_map_lookup_elem(dp->rule_ranges_fd, k, &slot))
		return 0; /* gone already */
	if (bpf_map_delete_elem(dp->rule_ranges_fd, k))
		return errno == ENOENT ? 0 : -errno;
	if (!held || fw_recs_push(held, &slot))
		fw_rs_range_slot_give(dp->rules, slot); /* no memory to hold it: free now */
	return 0;
}

static int boot_range(const void *key, const void *val, void *ctx)
{
	const struct fw_set_key *k = key;
	struct fw_dp_rules *r = ctx;
	__u32 slot;

	memcpy(&slot, val, sizeof(slot));
	if (slot < FW_RANGE_SLOTS)
		r->range_used[slot] = true; /* whoever wrote it, taken */
	if (!(k->gen & FW_GEN_RANGE) || k->subject >= FW_MAX_SUBJECTS)
		return 0; /* not ours: the reaper's scan finds it */
	return gens_push(&r->slot[k->subject].sets_boot, k->gen) ? 0 : -ENOMEM;
}

/* The range tables a restart adopts (an element is written after its
 * table, so where it exists the table is whole), and the slots they take;
 * a table written into a slot no element names is a change cut short:
 * its slot is free. */
int fw_rs_ranges_boot(struct fw_dp *dp, struct fw_dp_rules *r)
{
	return fw_dp_scan(dp->rule_ranges_fd, boot_range, r);
}

struct range_dead {
	const bool *dead;
	struct fw_recs keys; /* struct fw_set_key of the dead ids */
};

static int range_of_dead(const void *key, const void *val, void *ctx)
{
	const struct fw_set_key *k = key;
	struct range_dead *d = ctx;

	(void)val;
	if (k->subject < FW_MAX_SUBJECTS && !d->dead[k->subject])
		return 0;
	return fw_recs_push(&d->keys, k);
}

/* Deletes the range tables of the dead ids, known or not, and frees their
 * slots (the caller waited for the grace period). */
int fw_rs_ranges_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	struct range_dead d = {.dead = dead, .keys = {.size = sizeof(struct fw_set_key)}};
	int err = fw_dp_scan(dp->rule_ranges_fd, range_of_dead, &d);

	for (size_t i = 0; !err && i < d.keys.n; i++) {
		struct fw_set_key k;

		memcpy(&k, d.keys.data + i * sizeof(k), sizeof(k));
		err = fw_rs_range_delete(dp, &k, NULL);
	}
	free(d.keys.data);
	return err;
}

__u32 fw_dp_range_slots_used(struct fw_dp *dp)
{
	struct fw_dp_rules *r = dp->rules;
	__u32 n = 0;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (__u32 i = 0; i < FW_RANGE_SLOTS; i++)
		n += r->range_used[i];
	pthread_mutex_unlock(&r->lock);
	return n;
}

void fw_rs_ranges_map(struct fw_dp *dp, struct fw_dp_rules *r)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *p = MAP_FAILED;

	if (dp->range_tables_fd < 0)
		return;
	if (bpf_obj_get_info_by_fd(dp->range_tables_fd, &info, &len) == 0 &&
	    info.value_size == sizeof(struct fw_range_set) && info.max_entries == FW_RANGE_SLOTS &&
	    (info.map_flags & BPF_F_MMAPABLE))
		p = mmap(NULL, (size_t)FW_RANGE_SLOTS * sizeof(struct fw_range_set),
			 PROT_READ | PROT_WRITE, MAP_SHARED, dp->range_tables_fd, 0);
	if (p != MAP_FAILED)
		r->tables = p;
	else
		fw_debug("range tables written by map updates: the array can't be mapped");
}

void fw_rs_ranges_unmap(struct fw_dp_rules *r)
{
	if (r->tables)
		munmap(r->tables, (size_t)FW_RANGE_SLOTS * sizeof(struct fw_range_set));
	r->tables = NULL;
}
