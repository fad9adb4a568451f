// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's second form: a policy of at most FW_SET_LARGEST
 * entries as a small set of fastwall_rule_sets, {subject, generation}
 * -> its entries longest prefix first, in chunks. A set is written once
 * and replaced whole, never edited. See rules_store.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/addr.h"
#include "datapath/rules_store.h"

/* Longest prefix first: the scan's first match is the longest-prefix one. */
static int by_length(const struct fw_compiled *x, const struct fw_compiled *y)
{
	if (x->key.prefixlen != y->key.prefixlen)
		return x->key.prefixlen > y->key.prefixlen ? -1 : 1;
	return memcmp(&x->key.addr, &y->key.addr, sizeof(x->key.addr));
}

/* order[] = the entries of set by_length: insertion sort, as a set has at
 * most FW_SET_LARGEST of them (qsort's setup costs more than the sort) */
static void sort_by_length(const struct fw_compiled *order[], const struct fw_compiled_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct fw_compiled *e = &set->entries[i];
		size_t j = i;

		for (; j && by_length(order[j - 1], e) > 0; j--)
			order[j] = order[j - 1];
		order[j] = e;
	}
}

_Static_assert(FW_MAX_SUBJECTS <= 1u << FW_SET_CHUNK_SHIFT, "chunk bits above the subject id");

static struct fw_set_key chunk_key(__u32 id, __u32 gen, __u32 chunk)
{
	return (struct fw_set_key){.subject = FW_SET_SUBJECT(id, chunk), .gen = gen};
}

/* Deletes small set {id, gen}, every chunk of it (one batch, which stops
 * at the first chunk that is not there: the set's end). */
int fw_rs_set_delete(int fd, __u32 id, __u32 gen)
{
	struct fw_set_key k[FW_SET_CHUNKS];
	__u32 count = FW_SET_CHUNKS;

	for (__u32 c = 0; c < FW_SET_CHUNKS; c++)
		k[c] = chunk_key(id, gen, c);
	if (bpf_map_delete_batch(fd, k, &count, NULL) == 0 || errno == ENOENT)
		return 0;
	/* no batches here: chunk by chunk */
	for (__u32 c = 0; c < FW_SET_CHUNKS; c++) {
		if (bpf_map_delete_elem(fd, &k[c]) == 0)
			continue;
		if (errno != ENOENT)
			return -errno;
		if (c)
			break;
	}
	return 0;
}

/* Writes set as the small set {id, gen} (gen with FW_GEN_SET), in as many
 * chunks as it needs. A generation is written once: gen is newer than any
 * a dispatch value names or a start found (chunks a write cut short
 * before its chunk 0 are deleted at the next start), so nothing of it
 * exists yet; a one-chunk set says so to the kernel (BPF_NOEXIST), a
 * batch cannot (its element flags take BPF_F_LOCK only). Chunk 0 goes
 * last, so a set whose chunk 0 is there is whole: several chunks are one
 * batch, which writes its elements in order and stops at the first it
 * cannot write. */
int fw_rs_set_put(int fd, __u32 id, const struct fw_compiled_set *set, __u32 gen, __u32 pgen)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	const struct fw_compiled *order[FW_SET_LARGEST];
	struct fw_rule_set v[FW_SET_CHUNKS];
	struct fw_set_key k[FW_SET_CHUNKS];
	__u32 chunks = (__u32)((set->n + FW_SET_MAX - 1) / FW_SET_MAX), count;
	int err;

	if (set->n > FW_SET_LARGEST)
		return -E2BIG;
	if (!chunks)
		chunks = 1;
	memset(v, 0, chunks * sizeof(v[0]));
	sort_by_length(order, set);
	for (size_t i = 0; i < set->n; i++) {
		/* chunk c at [c - 1], chunk 0 at the end */
		__u32 c = (__u32)(i / FW_SET_MAX), at = c ? c - 1 : chunks - 1;
		struct fw_set_entry *e = &v[at].e[v[at].n++];
		__u32 plen = order[i]->key.prefixlen > 128 ? 128 : order[i]->key.prefixlen;

		k[at] = chunk_key(id, gen, c);
		fw_prefix_netmask(&e->mask, plen);
		fw_ip_and(&e->addr, &order[i]->key.addr, &e->mask);
		e->rule = order[i]->rule;
		if (set->nports && e->rule.portset)
			e->rule.portset |= pgen;
	}
	k[chunks - 1] = chunk_key(id, gen, 0);
	if (chunks == 1)
		return bpf_map_update_elem(fd, &k[0], &v[0], BPF_NOEXIST) ? -errno : 0;
	count = chunks;
	if (bpf_map_update_batch(fd, k, v, &count, &opts) == 0)
		return 0;
	err = -errno;
	if (err == -EINVAL || err == -ENOTSUPP || err == -EOPNOTSUPP) {
		/* no batches here: one by one, in the same order */
		for (count = 0; count < chunks; count++)
			if (bpf_map_update_elem(fd, &k[count], &v[count], BPF_ANY))
				break;
		if (count == chunks)
			return 0;
		err = -errno;
	}
	/* the chunks written before the failure (never chunk 0) */
	for (__u32 c = 0; c < count && c < chunks - 1; c++)
		bpf_map_delete_elem(fd, &k[c]);
	return err;
}

struct boot_scan {
	struct fw_dp_rules *r;
	struct fw_recs later; /* struct fw_set_key: chunks after chunk 0 */
};

static int boot_set(const void *key, const void *val, void *ctx)
{
	const struct fw_set_key *k = key;
	struct boot_scan *b = ctx;

	(void)val;
	if (!(k->gen & FW_GEN_SET))
		return 0; /* not ours: the reaper's scan finds it */
	if (FW_SET_CHUNK(k->subject))
		return fw_recs_push(&b->later, k);
	if (k->subject >= FW_MAX_SUBJECTS)
		return 0;
	if (!gens_push(&b->r->slot[k->subject].sets_boot, k->gen))
		return -ENOMEM;
	return 0;
}

/* The sets a restart adopts (their chunk 0: written last, so the set is
 * whole), and the chunks of a write that was cut short before its chunk
 * 0, deleted: no dispatch value ever named them, and the generation they
 * carry is written again. */
int fw_rs_sets_boot(struct fw_dp *dp, struct fw_dp_rules *r)
{
	struct boot_scan b = {.r = r, .later = {.size = sizeof(struct fw_set_key)}};
	int err = fw_dp_scan(dp->rule_sets_fd, boot_set, &b);

	for (size_t i = 0; !err && i < b.later.n; i++) {
		struct fw_set_key k;
		const struct fw_recs *whole;
		bool found = false;
		__u32 id;

		memcpy(&k, b.later.data + i * sizeof(k), sizeof(k));
		id = FW_SET_ID(k.subject);
		if (id >= FW_MAX_SUBJECTS)
			continue;
		whole = &r->slot[id].sets_boot;
		for (size_t j = 0; j < whole->n && !found; j++)
			found = gen_at(whole, j) == k.gen;
		if (!found && bpf_map_delete_elem(dp->rule_sets_fd, &k) && errno != ENOENT)
			err = -errno;
	}
	free(b.later.data);
	return err;
}

static bool set_alive(const void *key, const void *ctx)
{
	const struct fw_set_key *k = key;
	const bool *dead = ctx;
	__u32 id = FW_SET_ID(k->subject);

	return id >= FW_MAX_SUBJECTS || !dead[id];
}

int fw_rs_sets_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	if (dp->rule_sets_fd < 0)
		return 0;
	return fw_dp_prune(dp->rule_sets_fd, sizeof(struct fw_set_key), set_alive, dead);
}
