// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule storage: one LPM trie per slot of fastwall_rules_v2, written
 * into the slot once, and generations inside it (see datapath.h).
 *
 * Writing a slot of an array of maps returns only after an RCU grace
 * period (milliseconds); a plain map update does not wait. So slots are
 * written at the first start only, many at once from a pool of threads
 * (callers waiting at the same time share grace periods), and a policy
 * change is plain trie updates plus the dispatch rewrite. What must wait
 * for a grace period (deleting a generation no packet may still be
 * reading) is done by a worker thread, for every pending deletion at once:
 * it writes a private one-slot array of maps, which is exactly that
 * wait. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/log.h"
#include "datapath/ranges.h"
#include "datapath/rules.h"

#define SLOT_ROOM   (2 * FW_MAX_RULES)
#define QUEUE_MAX   1024 /* retired generations waiting for the worker */
#define POOL_MAX    128	 /* threads that write or fetch slots together */
#define NOFILE_NEED (FW_MAX_SUBJECTS + 4096)
#define WORKER_NICE 10 /* the grace-period worker's, relative to the process */

/* The keys of some generations of a slot's trie, as written. A list that
 * could not be kept (no memory, a trie copied from ABI 1) is marked lost:
 * what it stood for is then found by a scan of the trie instead. */
struct keys {
	struct fw_rule_key *k;
	__u32 n, cap;
	bool lost;
};

struct slot {
	int fd;		/* the slot's trie; -1 until known */
	bool known;	/* fd, gen and counts are valid */
	__u32 gen;	/* live generation; FW_GEN_SET, FW_GEN_RANGE: not the trie's */
	__u32 nlive;	/* entries of gen */
	__u32 nold;	/* entries of older generations not yet queued */
	__u32 npending; /* entries queued for deletion */
	__u32 jobs;	/* queued or running deletions */
	__u32 port_jobs;
	struct keys live, old; /* the keys of gen, of the older ones not queued */
	/* generations (__u32, with FW_GEN_SET or FW_GEN_RANGE) held in
	 * fastwall_rule_sets or fastwall_rule_ranges */
	struct fw_recs sets_old;  /* retired sets not queued */
	struct fw_recs sets_boot; /* the sets found at open, until the slot is known */
};

struct job {
	__u32 id, keep;	     /* delete the generations before keep */
	__u32 n;	     /* entries that frees */
	__u32 ports;	     /* FW_PORTSET_GEN bit | 1 to delete; 0 = none */
	struct keys keys;    /* exactly those entries; lost: scan for them */
	struct fw_recs sets; /* and these small sets */
};

struct fw_dp_rules {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct slot slot[FW_MAX_SUBJECTS];
	struct job *q;
	size_t nq, capq;
	bool stop, worker_up, warm_up;
	pthread_t worker, warm;
	int grace_outer, grace_inner; /* the worker's private map pair */
	__u64 slot_writes, grace_waits;
	bool no_batch;	   /* the kernel has no batch updates for LPM tries */
	__u32 set_max;	   /* compiled sets of at most this many entries are small sets */
	__u32 range_max;   /* larger ones of at most this many are range tables */
	bool old_programs; /* an older build's programs may be attached: no range tables (atomic) */
	bool range_used[FW_RANGE_SLOTS]; /* slots of fastwall_range_tables taken (lock) */
	struct fw_range_set *tables;	 /* the array, mapped; NULL: written by syscall */
	__u32 range_next;		 /* where the search for a free one starts */
	struct btf *btf;		 /* of the tries' key and value; NULL: created without */
	__u32 btf_key, btf_value;
};

static void key_of(struct fw_rule_key *k, const struct fw_lpm_key *from, __u32 gen)
{
	k->prefixlen = 32 + from->prefixlen;
	k->gen = htonl(gen);
	k->addr = from->addr;
}

static void keys_free(struct keys *l)
{
	free(l->k);
	*l = (struct keys){0};
}

static void keys_lose(struct keys *l)
{
	keys_free(l);
	l->lost = true;
}

static void keys_push(struct keys *l, const struct fw_rule_key *k)
{
	if (l->lost)
		return;
	if (l->n == l->cap) {
		__u32 cap = l->cap ? 2 * l->cap : 16;
		struct fw_rule_key *grown = realloc(l->k, cap * sizeof(*grown));

		if (!grown) {
			keys_lose(l);
			return;
		}
		l->k = grown;
		l->cap = cap;
	}
	l->k[l->n++] = *k;
}

/* Lists of small-set generations: fw_recs of __u32 (a zeroed list is an
 * empty one). */
static void gens_free(struct fw_recs *l)
{
	free(l->data);
	*l = (struct fw_recs){0};
}

/* false: no memory (the set is left to the reaper's scan) */
static bool gens_push(struct fw_recs *l, __u32 gen)
{
	l->size = sizeof(gen);
	return fw_recs_push(l, &gen) == 0;
}

static __u32 gen_at(const struct fw_recs *l, size_t i)
{
	__u32 gen;

	memcpy(&gen, l->data + i * sizeof(gen), sizeof(gen));
	return gen;
}

/* Moves every key of from to the end of to; from is left empty. */
static void keys_move(struct keys *to, struct keys *from)
{
	if (from->lost || to->lost) {
		keys_free(from);
		keys_lose(to);
		return;
	}
	if (!to->n) {
		keys_free(to);
		*to = *from;
		*from = (struct keys){0};
		return;
	}
	for (__u32 i = 0; i < from->n && !to->lost; i++)
		keys_push(to, &from->k[i]);
	keys_free(from);
}

static void keys_drop(struct keys *l, const struct fw_rule_key *k)
{
	for (__u32 i = 0; i < l->n; i++) {
		if (!memcmp(&l->k[i], k, sizeof(*k))) {
			l->k[i] = l->k[--l->n];
			return;
		}
	}
}

/* Writes a generation's entries in one BPF_MAP_UPDATE_BATCH where the
 * kernel has batches for LPM tries (one syscall instead of one per
 * entry); returns how many it wrote, the caller writes the rest one by
 * one (all of them on kernels without, which the first refusal records). */
#define BATCH_MAX 256
#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's own "operation not supported" */
#endif
static size_t batch_put(struct fw_dp_rules *r, int fd, const struct fw_compiled_set *set, __u32 gen,
			__u32 pgen)
{
	struct fw_rule_key keys[BATCH_MAX];
	struct fw_rule vals[BATCH_MAX];
	size_t done = 0;

	while (!r->no_batch && done < set->n) {
		__u32 n = (__u32)(set->n - done > BATCH_MAX ? BATCH_MAX : set->n - done);
		__u32 count = n;

		for (__u32 i = 0; i < n; i++) {
			key_of(&keys[i], &set->entries[done + i].key, gen);
			vals[i] = set->entries[done + i].rule;
			if (set->nports && vals[i].portset)
				vals[i].portset |= pgen;
		}
		if (bpf_map_update_batch(fd, keys, vals, &count, NULL)) {
			if (errno == EINVAL || errno == ENOTSUPP || errno == EOPNOTSUPP) {
				/* refused before any entry: the kernel leaves
				 * count as it was given */
				r->no_batch = true;
				return done;
			}
			/* count: how many went in before the failure */
			return done + (count < n ? count : 0);
		}
		done += n;
	}
	return done;
}

/* The generation after gen, of any form: one counter for the three,
 * which never reaches the form bits (it wraps to 0). */
static __u32 next_gen(__u32 gen)
{
	return ((gen & ~FW_GEN_FORMS) + 1) & ~FW_GEN_FORMS;
}

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
static int set_delete(int fd, __u32 id, __u32 gen)
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
static int set_put(int fd, __u32 id, const struct fw_compiled_set *set, __u32 gen, __u32 pgen)
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

static void range_slot_give(struct fw_dp_rules *r, __u32 slot)
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
static int range_put(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set, __u32 gen,
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
		range_slot_give(r, at);
	return err;
}

/* Deletes range table k; its slot is free again (the caller waited for
 * the grace period after the last dispatch value naming its generation).
 * held: the slot stays taken, its number pushed there (__u32), for a
 * caller that frees it only after another grace period; NULL: free. */
static int range_delete(struct fw_dp *dp, const struct fw_set_key *k, struct fw_recs *held)
{
	__u32 slot;

	if (dp->rule_ranges_fd < 0 || bpf_map_lookup_elem(dp->rule_ranges_fd, k, &slot))
		return 0; /* gone already */
	if (bpf_map_delete_elem(dp->rule_ranges_fd, k))
		return errno == ENOENT ? 0 : -errno;
	if (!held || fw_recs_push(held, &slot))
		range_slot_give(dp->rules, slot); /* no memory to hold it: free now */
	return 0;
}

/* Deletes a retired set of either hashed form (gen says which). */
static int hashed_delete(struct fw_dp *dp, __u32 id, __u32 gen, struct fw_recs *held)
{
	struct fw_set_key k = {.subject = id, .gen = gen};

	if (!(gen & FW_GEN_RANGE))
		return set_delete(dp->rule_sets_fd, id, gen);
	return range_delete(dp, &k, held);
}

/* The BTF of struct fw_rule_key and struct fw_rule, built here because
 * the programs' BTF has no fw_rule_key (they only use it on the stack), so
 * that `bpftool map dump id N` of a slot's trie prints fields and action
 * names instead of bytes. Best effort: without it the tries work the same. */
static void rules_btf(struct fw_dp_rules *r)
{
	struct btf *btf = btf__new_empty();
	int u8, u32, be32, b16, ip, act, key, val, err = 0;

	if (!btf)
		return;
#define BTF_OK(x) (err |= (x) < 0 ? 1 : 0)
	u8 = btf__add_int(btf, "__u8", 1, 0);
	u32 = btf__add_int(btf, "__u32", 4, 0);
	be32 = btf__add_typedef(btf, "__be32", u32);
	b16 = btf__add_array(btf, u32, u8, 16);
	ip = btf__add_struct(btf, "fw_ip", sizeof(struct fw_ip));
	BTF_OK(u8), BTF_OK(u32), BTF_OK(be32), BTF_OK(b16), BTF_OK(ip);
	BTF_OK(btf__add_field(btf, "b", b16, 0, 0));
	act = btf__add_enum(btf, "fw_action", sizeof(enum fw_action));
	BTF_OK(act);
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_DENY", FW_ACTION_DENY));
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_ALLOW", FW_ACTION_ALLOW));
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_NONE", FW_ACTION_NONE));
	key = btf__add_struct(btf, "fw_rule_key", sizeof(struct fw_rule_key));
	BTF_OK(key);
	BTF_OK(btf__add_field(btf, "prefixlen", u32, 8 * offsetof(struct fw_rule_key, prefixlen),
			      0));
	BTF_OK(btf__add_field(btf, "gen", be32, 8 * offsetof(struct fw_rule_key, gen), 0));
	BTF_OK(btf__add_field(btf, "addr", ip, 8 * offsetof(struct fw_rule_key, addr), 0));
	val = btf__add_struct(btf, "fw_rule", sizeof(struct fw_rule));
	BTF_OK(val);
	BTF_OK(btf__add_field(btf, "action", act, 8 * offsetof(struct fw_rule, action), 0));
	BTF_OK(btf__add_field(btf, "is_default", u8, 8 * offsetof(struct fw_rule, is_default), 0));
	BTF_OK(btf__add_field(btf, "dflt", act, 8 * offsetof(struct fw_rule, dflt), 0));
	BTF_OK(btf__add_field(btf, "pad", u8, 8 * offsetof(struct fw_rule, pad), 0));
	BTF_OK(btf__add_field(btf, "portset", u32, 8 * offsetof(struct fw_rule, portset), 0));
	BTF_OK(btf__add_field(btf, "rule", u32, 8 * offsetof(struct fw_rule, rule), 0));
#undef BTF_OK
	if (err || btf__load_into_kernel(btf)) {
		fw_debug("rule tries without BTF: the kernel refused the key and value types");
		btf__free(btf);
		return;
	}
	r->btf = btf;
	r->btf_key = key;
	r->btf_value = val;
}

/* Whether the kernel takes a trie with BTF into a slot whose template has
 * none (the programs' inner map definition gives sizes, not types): 6.1
 * compares what the BTF says of a value's special fields and refuses it,
 * 5.10 and 6.12 on do not. Tried once on a private outer map, whose write
 * waits for no program. */
static bool trie_btf_fits(struct fw_dp_rules *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, plain, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, typed, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, outer);
	int tmpl, trie = -1, o = -1;
	__u32 zero = 0;
	bool fits = false;

	typed.btf_fd = btf__fd(r->btf);
	typed.btf_key_type_id = r->btf_key;
	typed.btf_value_type_id = r->btf_value;
	tmpl = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_probe_t", sizeof(struct fw_rule_key),
			      sizeof(struct fw_rule), SLOT_ROOM, &plain);
	if (tmpl < 0)
		return false;
	outer.inner_map_fd = tmpl;
	o = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "fw_probe_o", 4, 4, 1, &outer);
	if (o >= 0)
		trie = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_probe_b",
				      sizeof(struct fw_rule_key), sizeof(struct fw_rule), SLOT_ROOM,
				      &typed);
	if (trie >= 0)
		fits = bpf_map_update_elem(o, &zero, &trie, BPF_ANY) == 0;
	if (trie >= 0)
		close(trie);
	if (o >= 0)
		close(o);
	close(tmpl);
	return fits;
}

static int trie_create(struct fw_dp_rules *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct btf *btf = r->btf; /* set before any trie is made */
	int fd;

	if (btf) {
		opts.btf_fd = btf__fd(btf);
		opts.btf_key_type_id = r->btf_key;
		opts.btf_value_type_id = r->btf_value;
		fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_rules", sizeof(struct fw_rule_key),
				    sizeof(struct fw_rule), SLOT_ROOM, &opts);
		if (fd >= 0)
			return fd;
		opts.btf_fd = opts.btf_key_type_id = opts.btf_value_type_id = 0;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_rules", sizeof(struct fw_rule_key),
			    sizeof(struct fw_rule), SLOT_ROOM, &opts);
	return fd < 0 ? -errno : fd;
}

/* ---- a pool of threads over every slot ----------------------------------- */

struct pool {
	struct fw_dp *dp;
	int (*fn)(struct fw_dp *dp, __u32 id, void *arg);
	void *arg;
	__u32 next;
	int err;
};

static void *pool_run(void *p_)
{
	struct pool *p = p_;
	__u32 id;

	while ((id = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < FW_MAX_SUBJECTS) {
		int err = p->fn(p->dp, id, p->arg);

		if (err)
			__atomic_store_n(&p->err, err, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int pool(struct fw_dp *dp, int (*fn)(struct fw_dp *, __u32, void *), void *arg)
{
	struct pool p = {.dp = dp, .fn = fn, .arg = arg};
	pthread_t t[POOL_MAX];
	int n = 0;

	while (n < POOL_MAX && pthread_create(&t[n], NULL, pool_run, &p) == 0)
		n++;
	pool_run(&p);
	while (n--)
		pthread_join(t[n], NULL);
	return p.err;
}

/* ---- knowing a slot ------------------------------------------------------- */

struct gen_count {
	__u32 max, nmax, nother;
	bool any;
	struct keys all; /* every key seen */
};

static int count_gen(const void *key, const void *val, void *ctx)
{
	const struct fw_rule_key *k = key;
	struct gen_count *g = ctx;
	__u32 gen = ntohl(k->gen);

	(void)val;
	if (!g->any || gen > g->max) {
		g->nother += g->nmax;
		g->max = gen;
		g->nmax = 0;
		g->any = true;
	}
	if (gen == g->max)
		g->nmax++;
	else
		g->nother++;
	keys_push(&g->all, k);
	return 0;
}

/* Takes g->all: its keys of the newest generation are the live list, the
 * rest the old one. */
static void slot_publish(struct fw_dp_rules *r, __u32 id, int fd, struct gen_count *g)
{
	struct slot *s = &r->slot[id];
	struct keys live = {0}, old = {0};

	if (g->all.lost) {
		live.lost = old.lost = true;
	} else {
		for (__u32 i = 0; i < g->all.n; i++)
			keys_push(ntohl(g->all.k[i].gen) == g->max ? &live : &old, &g->all.k[i]);
	}
	keys_free(&g->all);
	pthread_mutex_lock(&r->lock);
	if (s->known) {
		pthread_mutex_unlock(&r->lock);
		keys_free(&live);
		keys_free(&old);
		close(fd);
		return;
	}
	s->fd = fd;
	s->gen = g->any ? g->max : 0;
	s->nlive = g->nmax;
	s->nold = g->nother;
	s->live = live;
	s->old = old;
	/* the newest generation of either form is the live one */
	for (size_t i = 0; i < s->sets_boot.n; i++) {
		__u32 sg = gen_at(&s->sets_boot, i);

		if ((sg & ~FW_GEN_FORMS) > (s->gen & ~FW_GEN_FORMS)) {
			if (s->gen & FW_GEN_FORMS)
				gens_push(&s->sets_old, s->gen);
			s->nold += s->nlive;
			s->nlive = 0;
			keys_move(&s->old, &s->live);
			s->gen = sg;
		} else {
			gens_push(&s->sets_old, sg);
		}
	}
	gens_free(&s->sets_boot);
	s->known = true;
	pthread_mutex_unlock(&r->lock);
}

/* After a restart: the slot's trie (an outer lookup, which kernels before
 * 6.8 make wait for a grace period) and what it holds. The newest
 * generation is the live one: a swap writes it completely before any
 * dispatch value names it, and deletes the older ones only after. */
static int slot_fetch(struct fw_dp *dp, __u32 id, void *arg)
{
	struct fw_dp_rules *r = dp->rules;
	struct gen_count g = {};
	__u32 inner;
	int fd, err;

	(void)arg;
	if (__atomic_load_n(&r->slot[id].known, __ATOMIC_ACQUIRE))
		return 0;
	if (bpf_map_lookup_elem(dp->rules_fd, &id, &inner) == 0) {
		fd = bpf_map_get_fd_by_id(inner);
		if (fd < 0)
			return -errno;
	} else {
		/* an empty slot (only if something else deleted it): fill it */
		fd = trie_create(dp->rules);
		if (fd < 0)
			return fd;
		if (bpf_map_update_elem(dp->rules_fd, &id, &fd, BPF_ANY)) {
			err = -errno;
			close(fd);
			return err;
		}
		__atomic_fetch_add(&r->slot_writes, 1, __ATOMIC_RELAXED);
	}
	err = fw_dp_scan(fd, count_gen, &g);
	if (err) {
		keys_free(&g.all);
		close(fd);
		return err;
	}
	slot_publish(r, id, fd, &g);
	return 0;
}

/* The slot known, or a negative errno. */
static int slot_get(struct fw_dp *dp, __u32 id)
{
	int err;

	if (!dp->rules || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	if (__atomic_load_n(&dp->rules->slot[id].known, __ATOMIC_ACQUIRE))
		return 0;
	err = slot_fetch(dp, id, NULL);
	if (err)
		fw_err("can't open the rule trie of subject %u: %s", id, strerror(-err));
	return err;
}

static void *warm_run(void *dp)
{
	int err = pool(dp, slot_fetch, NULL);

	if (err)
		fw_warn("can't open every rule trie ahead (%s): requests open theirs",
			strerror(-err));
	return NULL;
}

void fw_dp_slots_warm(struct fw_dp *dp)
{
	struct fw_dp_rules *r = dp->rules;

	if (!r || r->warm_up)
		return;
	r->warm_up = pthread_create(&r->warm, NULL, warm_run, dp) == 0;
}

/* ---- the first start: every slot gets its trie ------------------------------ */

/* Copies ABI 1's trie of id (if any) into fd under generation 0. */
static int copy_v1(int old_fd, __u32 id, int fd, __u32 *n)
{
	struct fw_lpm_key k, *prev = NULL;
	__u32 inner;
	int ifd, err = 0;

	if (bpf_map_lookup_elem(old_fd, &id, &inner))
		return 0;
	ifd = bpf_map_get_fd_by_id(inner);
	if (ifd < 0)
		return -errno;
	while (!err && bpf_map_get_next_key(ifd, prev, &k) == 0) {
		struct fw_rule v;
		struct fw_rule_key nk;

		prev = &k;
		if (bpf_map_lookup_elem(ifd, &k, &v))
			continue;
		key_of(&nk, &k, 0);
		if (bpf_map_update_elem(fd, &nk, &v, BPF_ANY))
			err = -errno;
		else
			(*n)++;
	}
	close(ifd);
	return err;
}

struct populate {
	bool check;
	int old_fd;
};

static int slot_populate(struct fw_dp *dp, __u32 id, void *arg)
{
	struct populate *p = arg;
	struct gen_count g = {};
	__u32 n = 0;
	int fd, err;

	if (p->check && bpf_map_lookup_elem(dp->rules_fd, &id, &fd) == 0)
		return slot_fetch(dp, id, NULL); /* kept from a start cut short */
	fd = trie_create(dp->rules);
	if (fd < 0)
		return fd;
	err = p->old_fd >= 0 ? copy_v1(p->old_fd, id, fd, &n) : 0;
	if (!err && bpf_map_update_elem(dp->rules_fd, &id, &fd, BPF_ANY))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	__atomic_fetch_add(&dp->rules->slot_writes, 1, __ATOMIC_RELAXED);
	g.nmax = n;
	g.any = n > 0;
	if (n)
		g.all.lost = true; /* copied from ABI 1: found by a scan when retired */
	slot_publish(dp->rules, id, fd, &g);
	return 0;
}

/* One descriptor per slot trie stays open. */
static void nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= NOFILE_NEED)
		return;
	if (rl.rlim_max < NOFILE_NEED)
		rl.rlim_max = NOFILE_NEED; /* root may raise it */
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fw_warn("can't raise the open file limit to %u: %s", NOFILE_NEED, strerror(errno));
}

/* ---- the grace-period worker ------------------------------------------------ */

/* Returns after an RCU grace period: a slot write of an array of maps
 * waits for one (synchronize_rcu) before it returns. */
static int grace(struct fw_dp_rules *r)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(r->grace_outer, &zero, &r->grace_inner, BPF_ANY))
		return -errno;
	__atomic_fetch_add(&r->grace_waits, 1, __ATOMIC_RELAXED);
	return 0;
}

static int grace_maps(struct fw_dp_rules *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);

	r->grace_inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fw_grace_in", 4, 4, 1, NULL);
	if (r->grace_inner < 0)
		return -errno;
	opts.inner_map_fd = r->grace_inner;
	r->grace_outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "fw_grace", 4, 4, 1, &opts);
	if (r->grace_outer < 0)
		return -errno;
	return 0;
}

struct older {
	__u32 keep;
	struct fw_recs keys;
};

static int collect_older(const void *key, const void *val, void *ctx)
{
	const struct fw_rule_key *k = key;
	struct older *o = ctx;

	(void)val;
	return ntohl(k->gen) < o->keep ? fw_recs_push(&o->keys, key) : 0;
}

/* Deletes the generations of fd before keep (~0u: all). */
static int delete_older(int fd, __u32 keep)
{
	struct older o = {.keep = keep, .keys = {.size = sizeof(struct fw_rule_key)}};
	int err = fw_dp_scan(fd, collect_older, &o);

	if (!err)
		err = fw_dp_delete_keys(fd, o.keys.data, o.keys.n, o.keys.size);
	free(o.keys.data);
	return err;
}

static bool port_kept(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const __u32 *del = ctx;

	if (k->subject >= FW_MAX_SUBJECTS || !del[k->subject])
		return true;
	return (k->portset & FW_PORTSET_GEN) != (del[k->subject] & FW_PORTSET_GEN);
}

/* Deletes the small sets l of subject id (gone already: fine). */
static void sets_delete(struct fw_dp *dp, __u32 id, const struct fw_recs *l, struct fw_recs *held)
{
	for (size_t i = 0; i < l->n; i++) {
		int err = hashed_delete(dp, id, gen_at(l, i), held);

		if (err)
			fw_warn("subject %u: can't delete a retired rule set: %s", id,
				strerror(-err));
	}
}

/* The calling thread's nice value WORKER_NICE above the process's. */
static void worker_nice(void)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int base;

	errno = 0;
	base = getpriority(PRIO_PROCESS, tid);
	if (errno)
		return;
	if (setpriority(PRIO_PROCESS, tid, base + WORKER_NICE > 19 ? 19 : base + WORKER_NICE))
		fw_debug("rule worker: can't lower its priority: %s", strerror(errno));
}

static void *worker_run(void *dp_)
{
	struct fw_dp *dp = dp_;
	struct fw_dp_rules *r = dp->rules;
	__u32 *ports = calloc(FW_MAX_SUBJECTS, sizeof(*ports));

	/* deferred work: behind the requests whose old generations it
	 * deletes when they compete for a CPU (the queue's back-pressure
	 * bounds how far behind) */
	worker_nice();
	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct job *jobs;
		size_t n;
		bool any_ports = false;
		int err;

		while (!r->nq && !r->stop)
			pthread_cond_wait(&r->work, &r->lock);
		if (!r->nq)
			break;
		jobs = r->q;
		n = r->nq;
		r->q = NULL;
		r->nq = r->capq = 0;
		pthread_mutex_unlock(&r->lock);

		/* one grace period for every deletion taken: packets that read
		 * a dispatch value naming an old generation are done */
		err = grace(r);
		if (err)
			fw_err("rule worker: can't wait for a grace period: %s", strerror(-err));
		for (size_t i = 0; i < n && !err; i++) {
			struct job *j = &jobs[i];

			if (j->keys.lost)
				delete_older(r->slot[j->id].fd, j->keep);
			else if (j->keys.n)
				fw_dp_delete_keys(r->slot[j->id].fd, j->keys.k, j->keys.n,
						  sizeof(*j->keys.k));
			sets_delete(dp, j->id, &j->sets, NULL);
			if (j->ports && ports) {
				ports[j->id] = j->ports;
				any_ports = true;
			}
		}
		if (any_ports && !err) {
			fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), port_kept,
				    ports);
			memset(ports, 0, FW_MAX_SUBJECTS * sizeof(*ports));
		}
		pthread_mutex_lock(&r->lock);
		for (size_t i = 0; i < n; i++) {
			struct slot *s = &r->slot[jobs[i].id];

			s->npending -= jobs[i].n;
			s->jobs--;
			if (jobs[i].ports)
				s->port_jobs--;
			keys_free(&jobs[i].keys);
			gens_free(&jobs[i].sets);
		}
		free(jobs);
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	free(ports);
	return NULL;
}

/* Waits until no deletion of id (every id: FW_MAX_SUBJECTS) is pending. */
static void flush(struct fw_dp_rules *r, __u32 id)
{
	pthread_mutex_lock(&r->lock);
	for (;;) {
		bool busy = false;

		if (id < FW_MAX_SUBJECTS)
			busy = r->slot[id].jobs;
		for (__u32 i = 0; id >= FW_MAX_SUBJECTS && i < FW_MAX_SUBJECTS && !busy; i++)
			busy = r->slot[i].jobs;
		if (!busy || !r->worker_up)
			break;
		pthread_cond_wait(&r->done, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
}

void fw_dp_rules_no_batch(struct fw_dp *dp)
{
	if (dp->rules)
		dp->rules->no_batch = true;
}

void fw_dp_rules_old_programs(struct fw_dp *dp, bool old)
{
	if (dp->rules)
		__atomic_store_n(&dp->rules->old_programs, old, __ATOMIC_RELEASE);
}

void fw_dp_rules_settle(struct fw_dp *dp)
{
	if (dp->rules)
		flush(dp->rules, FW_MAX_SUBJECTS);
}

/* ---- open, close -------------------------------------------------------- */

/* The limit in environment variable name, 0 to max (default and on bad
 * input: max). FASTWALL_RULE_SET_MAX: compiled sets of at most that many
 * entries are small sets; FASTWALL_RULE_RANGE_MAX: larger ones of at most
 * that many are range tables; 0 puts them in the trie (the tests use both
 * to cover every form). */
static __u32 limit_env(const char *name, __u32 max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return max;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > max) {
		fw_warn("%s=%s: not a number from 0 to %u, using %u", name, v, max, max);
		return max;
	}
	return (__u32)n;
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
static int boot_sets(struct fw_dp *dp, struct fw_dp_rules *r)
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
static int boot_ranges(struct fw_dp *dp, struct fw_dp_rules *r)
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
static int ranges_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	struct range_dead d = {.dead = dead, .keys = {.size = sizeof(struct fw_set_key)}};
	int err = fw_dp_scan(dp->rule_ranges_fd, range_of_dead, &d);

	for (size_t i = 0; !err && i < d.keys.n; i++) {
		struct fw_set_key k;

		memcpy(&k, d.keys.data + i * sizeof(k), sizeof(k));
		err = range_delete(dp, &k, NULL);
	}
	free(d.keys.data);
	return err;
}

int fw_dp_rules_open(struct fw_dp *dp, bool populate, bool check, int old_fd)
{
	struct fw_dp_rules *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->done, NULL);
	r->grace_outer = r->grace_inner = -1;
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
		r->slot[id].fd = -1;
	r->set_max = limit_env("FASTWALL_RULE_SET_MAX", FW_SET_LARGEST);
	r->range_max = limit_env("FASTWALL_RULE_RANGE_MAX", FW_RANGE_RULES);
	dp->rules = r;
	nofile_raise();
	if (dp->rule_sets_fd >= 0) {
		/* before any slot is known: the sets a restart adopts */
		err = boot_sets(dp, r);
		if (err) {
			fw_err("can't read fastwall_rule_sets: %s", strerror(-err));
			return err;
		}
	}
	if (dp->range_tables_fd >= 0) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		void *p = MAP_FAILED;

		if (bpf_obj_get_info_by_fd(dp->range_tables_fd, &info, &len) == 0 &&
		    info.value_size == sizeof(struct fw_range_set) &&
		    info.max_entries == FW_RANGE_SLOTS && (info.map_flags & BPF_F_MMAPABLE))
			p = mmap(NULL, (size_t)FW_RANGE_SLOTS * sizeof(struct fw_range_set),
				 PROT_READ | PROT_WRITE, MAP_SHARED, dp->range_tables_fd, 0);
		if (p != MAP_FAILED)
			r->tables = p;
		else
			fw_debug("range tables written by map updates: the array can't be mapped");
	}
	if (dp->rule_ranges_fd >= 0) {
		err = boot_ranges(dp, r);
		if (err) {
			fw_err("can't read fastwall_rule_ranges: %s", strerror(-err));
			return err;
		}
	}
	/* only a first start makes tries; one made later (a start cut
	 * short) goes without, which bpftool prints as bytes */
	if (populate)
		rules_btf(r);
	if (r->btf && !trie_btf_fits(r)) {
		fw_debug("rule tries without BTF: this kernel refuses them in the slots");
		btf__free(r->btf);
		r->btf = NULL;
	}
	err = grace_maps(r);
	if (err) {
		fw_err("can't create the grace-period map: %s", strerror(-err));
		return err;
	}
	if (populate) {
		struct populate p = {.check = check, .old_fd = old_fd};
		__u64 t0 = fw_now_ns();

		err = pool(dp, slot_populate, &p);
		if (err) {
			fw_err("can't give every rule slot its trie: %s", strerror(-err));
			return err;
		}
		fw_info("rule slots: %u tries created and written%s in %llu ms", FW_MAX_SUBJECTS,
			old_fd >= 0 ? " (ABI 1 rules copied)" : "",
			(unsigned long long)((fw_now_ns() - t0) / 1000000));
	}
	r->worker_up = pthread_create(&r->worker, NULL, worker_run, dp) == 0;
	if (!r->worker_up)
		return -EAGAIN;
	return 0;
}

void fw_dp_rules_close(struct fw_dp *dp)
{
	struct fw_dp_rules *r = dp->rules;

	if (!r)
		return;
	if (r->warm_up)
		pthread_join(r->warm, NULL);
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->work);
	pthread_mutex_unlock(&r->lock);
	if (r->worker_up)
		pthread_join(r->worker, NULL); /* pending deletions are done first */
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		if (r->slot[id].fd >= 0)
			close(r->slot[id].fd);
		keys_free(&r->slot[id].live);
		keys_free(&r->slot[id].old);
		gens_free(&r->slot[id].sets_old);
		gens_free(&r->slot[id].sets_boot);
	}
	btf__free(r->btf);
	if (r->tables)
		munmap(r->tables, (size_t)FW_RANGE_SLOTS * sizeof(struct fw_range_set));
	if (r->grace_outer >= 0)
		close(r->grace_outer);
	if (r->grace_inner >= 0)
		close(r->grace_inner);
	free(r->q);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->done);
	pthread_mutex_destroy(&r->lock);
	free(r);
	dp->rules = NULL;
}

__u64 fw_dp_slot_writes(struct fw_dp *dp)
{
	return dp->rules ? __atomic_load_n(&dp->rules->slot_writes, __ATOMIC_RELAXED) : 0;
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

/* ---- the request path ------------------------------------------------------ */

__u32 fw_dp_rules_gen(struct fw_dp *dp, __u32 id)
{
	__u32 gen;

	if (slot_get(dp, id))
		return 0;
	pthread_mutex_lock(&dp->rules->lock);
	gen = dp->rules->slot[id].gen;
	pthread_mutex_unlock(&dp->rules->lock);
	return gen;
}

int fw_dp_policy_swap(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set,
		      __u32 *port_state, __u32 *gen_out)
{
	__u32 live_gen = *port_state & FW_PORTSET_GEN, pgen = live_gen ^ FW_PORTSET_GEN;
	struct fw_dp_rules *r = dp->rules;
	size_t written = 0, nports = 0;
	struct keys fresh = {0};
	struct slot *s;
	bool wait, small, range;
	__u32 gen;
	int err;

	if (set->n > FW_MAX_RULES) {
		fw_err("subject %u: %zu compiled rules exceed the limit of %u", id, set->n,
		       FW_MAX_RULES);
		return -E2BIG;
	}
	err = slot_get(dp, id);
	if (err)
		return err;
	s = &r->slot[id];
	small = set->n <= r->set_max && dp->rule_sets_fd >= 0;
	range = !small && set->n <= r->range_max && dp->rule_ranges_fd >= 0 &&
		dp->range_tables_fd >= 0 && !__atomic_load_n(&r->old_programs, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&r->lock);
	wait = (!small && !range && s->nlive + s->nold + s->npending + set->n > SLOT_ROOM) ||
	       (set->nports && s->port_jobs);
	pthread_mutex_unlock(&r->lock);
	if (wait) {
		/* the old generations' deletion has not run yet (rare: two
		 * large changes of one subject within a grace period) */
		flush(r, id);
	}
	gen = next_gen(s->gen);
	for (; nports < set->nports; nports++) {
		struct fw_port_rule_key k = {
			.subject = id,
			.portset = set->ports[nports].portset | pgen,
			.port = set->ports[nports].port,
		};

		if (bpf_map_update_elem(dp->ports_fd, &k, &set->ports[nports].action, BPF_ANY)) {
			err = -errno;
			fw_err("can't update fastwall_ports: %s", strerror(-err));
			goto undo;
		}
	}
	if (small) {
		err = set_put(dp->rule_sets_fd, id, set, gen | FW_GEN_SET, pgen);
		if (!err) {
			gen |= FW_GEN_SET;
			goto written;
		}
		if (err != -E2BIG && err != -ENOMEM) {
			fw_err("subject %u: can't write its rule set: %s", id, strerror(-err));
			goto undo;
		}
		/* the map is full: this one goes to the trie */
	}
	if (range) {
		err = range_put(dp, id, set, gen | FW_GEN_RANGE, pgen);
		if (!err) {
			gen |= FW_GEN_RANGE;
			goto written;
		}
		if (err != -E2BIG && err != -ENOMEM) {
			fw_err("subject %u: can't write its range table: %s", id, strerror(-err));
			goto undo;
		}
		/* too many ranges, the map full or no memory: the trie, which
		 * may need its old generations deleted first */
		pthread_mutex_lock(&r->lock);
		wait = s->nlive + s->nold + s->npending + set->n > SLOT_ROOM;
		pthread_mutex_unlock(&r->lock);
		if (wait)
			flush(r, id);
	}
	written = batch_put(r, s->fd, set, gen, pgen);
	for (; written < set->n; written++) {
		struct fw_rule v = set->entries[written].rule;
		struct fw_rule_key k;

		key_of(&k, &set->entries[written].key, gen);
		if (set->nports && v.portset)
			v.portset |= pgen;
		if (bpf_map_update_elem(s->fd, &k, &v, BPF_ANY)) {
			err = -errno;
			fw_err("subject %u: can't write rule trie: %s", id, strerror(-err));
			goto undo;
		}
	}
	for (size_t i = 0; i < set->n; i++) {
		struct fw_rule_key k;

		key_of(&k, &set->entries[i].key, gen);
		keys_push(&fresh, &k);
	}
written:
	pthread_mutex_lock(&r->lock);
	s->nold += s->nlive;
	s->nlive = gen & FW_GEN_FORMS ? 0 : (__u32)set->n;
	if (s->gen & FW_GEN_FORMS)
		gens_push(&s->sets_old, s->gen);
	s->gen = gen;
	keys_move(&s->old, &s->live);
	s->live = fresh;
	pthread_mutex_unlock(&r->lock);
	*gen_out = gen;
	*port_state = set->nports ? pgen | (__u32)set->nports : live_gen;
	return 0;

undo:
	/* nothing names the new generation yet: it goes at once */
	for (size_t i = 0; i < written; i++) {
		struct fw_rule_key k;

		key_of(&k, &set->entries[i].key, gen);
		bpf_map_delete_elem(s->fd, &k);
	}
	for (size_t i = 0; i < nports; i++) {
		struct fw_port_rule_key k = {
			.subject = id,
			.portset = set->ports[i].portset | pgen,
			.port = set->ports[i].port,
		};

		bpf_map_delete_elem(dp->ports_fd, &k);
	}
	return err;
}

void fw_dp_policy_retire(struct fw_dp *dp, __u32 id, __u32 old_port_state)
{
	struct fw_dp_rules *r = dp->rules;
	struct slot *s;
	struct job j;

	if (slot_get(dp, id))
		return;
	s = &r->slot[id];
	pthread_mutex_lock(&r->lock);
	j.id = id;
	j.keep = s->gen & ~FW_GEN_FORMS; /* every trie generation before it */
	j.n = s->nold;
	j.ports = old_port_state & ~FW_PORTSET_GEN ? (old_port_state & FW_PORTSET_GEN) | 1 : 0;
	if (!j.n && !j.ports && !s->sets_old.n) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	/* back-pressure: changes faster than the worker deletes wait for
	 * it, so the backlog (memory, and what a stop has to drain) stays
	 * bounded */
	while (r->nq >= QUEUE_MAX && r->worker_up)
		pthread_cond_wait(&r->done, &r->lock);
	if (r->nq == r->capq) {
		size_t cap = r->capq ? 2 * r->capq : 64;
		struct job *q = realloc(r->q, cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&r->lock);
			return; /* left for the next retire or the reaper */
		}
		r->q = q;
		r->capq = cap;
	}
	j.keys = s->old;
	s->old = (struct keys){0};
	j.sets = s->sets_old;
	s->sets_old = (struct fw_recs){0};
	r->q[r->nq++] = j;
	s->nold = 0;
	s->npending += j.n;
	s->jobs++;
	if (j.ports)
		s->port_jobs++;
	pthread_cond_signal(&r->work);
	pthread_mutex_unlock(&r->lock);
}

void fw_dp_rules_release(struct fw_dp *dp, __u32 id)
{
	struct fw_dp_rules *r = dp->rules;
	struct slot *s;

	if (slot_get(dp, id))
		return; /* the reaper deletes them */
	s = &r->slot[id];
	pthread_mutex_lock(&r->lock);
	s->nold += s->nlive;
	s->nlive = 0;
	if (s->gen & FW_GEN_FORMS)
		gens_push(&s->sets_old, s->gen);
	s->gen = next_gen(s->gen); /* every generation it had is older */
	keys_move(&s->old, &s->live);
	pthread_mutex_unlock(&r->lock);
	fw_dp_policy_retire(dp, id, 0);
}

static int rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del)
{
	struct fw_dp_rules *r = dp->rules;
	struct fw_rule_key k;
	struct slot *s;
	int err = slot_get(dp, id);

	if (err)
		return err;
	s = &r->slot[id];
	if (s->gen & FW_GEN_FORMS)
		return -EOPNOTSUPP; /* a small set or range table is replaced, never edited */
	key_of(&k, &c->key, s->gen);
	if (del) {
		if (bpf_map_delete_elem(s->fd, &k))
			return -errno;
		pthread_mutex_lock(&r->lock);
		s->nlive--;
		keys_drop(&s->live, &k);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	if (bpf_map_update_elem(s->fd, &k, &c->rule, BPF_NOEXIST) == 0) {
		pthread_mutex_lock(&r->lock);
		s->nlive++;
		keys_push(&s->live, &k);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	if (errno == EEXIST && bpf_map_update_elem(s->fd, &k, &c->rule, BPF_EXIST) == 0)
		return 0;
	err = -errno;
	fw_err("subject %u: can't edit rule trie: %s", id, strerror(-err));
	return err;
}

/* ---- clearing ---------------------------------------------------------- */

static void slot_emptied(struct fw_dp_rules *r, __u32 id)
{
	pthread_mutex_lock(&r->lock);
	r->slot[id].nlive = r->slot[id].nold = 0;
	r->slot[id].gen &= ~FW_GEN_FORMS; /* its set is gone too */
	keys_free(&r->slot[id].live);
	keys_free(&r->slot[id].old);
	gens_free(&r->slot[id].sets_old);
	pthread_mutex_unlock(&r->lock);
}

/* The small sets id holds, live and retired (deleted after a grace period
 * by the caller). */
static void sets_of(struct fw_dp_rules *r, __u32 id, struct fw_recs *out)
{
	struct slot *s = &r->slot[id];

	pthread_mutex_lock(&r->lock);
	*out = s->sets_old;
	s->sets_old = (struct fw_recs){0};
	if (s->gen & FW_GEN_FORMS)
		gens_push(out, s->gen);
	pthread_mutex_unlock(&r->lock);
}

static bool set_alive(const void *key, const void *ctx)
{
	const struct fw_set_key *k = key;
	const bool *dead = ctx;
	__u32 id = FW_SET_ID(k->subject);

	return id >= FW_MAX_SUBJECTS || !dead[id];
}

/* An edit changes entries dispatch already names: cached answers of the
 * live generation end with it (fastwall_subject_rows). */
int fw_dp_rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del)
{
	int err = rules_edit(dp, id, c, del);

	return err ? err : fw_dp_rules_epoch_bump(dp);
}

int fw_dp_rules_clear(struct fw_dp *dp, __u32 id)
{
	int err = slot_get(dp, id);

	if (err)
		return err;
	flush(dp->rules, id);
	err = grace(dp->rules);
	if (!err)
		err = delete_older(dp->rules->slot[id].fd, ~0u);
	if (!err) {
		struct fw_recs sets, held = {.size = sizeof(__u32)};

		sets_of(dp->rules, id, &sets);
		sets_delete(dp, id, &sets, &held);
		gens_free(&sets);
		slot_emptied(dp->rules, id);
		/* the live table's element is gone, but dispatch still names
		 * its generation: a packet may have found the slot just
		 * before, so the slot is free only a grace period later */
		if (held.n && grace(dp->rules))
			fw_warn("subject %u: can't wait for a grace period; %zu range slots stay "
				"taken",
				id, held.n);
		else
			for (size_t i = 0; i < held.n; i++)
				range_slot_give(dp->rules, gen_at(&held, i));
		free(held.data);
	}
	/* the subject may still be dispatched to (it fails closed now) */
	return err ? err : fw_dp_rules_epoch_bump(dp);
}

static int slot_fetch_dead(struct fw_dp *dp, __u32 id, void *dead)
{
	return ((const bool *)dead)[id] ? slot_fetch(dp, id, NULL) : 0;
}

int fw_dp_rules_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	struct fw_dp_rules *r = dp->rules;
	int err = 0;

	if (!r)
		return 0;
	/* slots not opened yet (a restart), many at once */
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		if (dead[id] && !__atomic_load_n(&r->slot[id].known, __ATOMIC_ACQUIRE)) {
			err = pool(dp, slot_fetch_dead, (void *)dead);
			break;
		}
	}
	if (err)
		return err;
	/* only the dead ids' own deletions: they get no new ones, so this
	 * ends after the worker's current round even while live subjects
	 * keep it busy (waiting for an empty queue would starve the caller,
	 * fastwalld's main loop, under a steady stream of policy changes) */
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
		if (dead[id])
			flush(r, id);
	/* nothing dispatches to them any more; packets that looked them up
	 * before are done after this */
	err = grace(r);
	for (__u32 id = 0; id < FW_MAX_SUBJECTS && !err; id++) {
		if (!dead[id])
			continue;
		err = delete_older(r->slot[id].fd, ~0u);
		if (!err)
			slot_emptied(r, id);
	}
	/* their small sets, known or not (one scan of the map) */
	if (!err && dp->rule_sets_fd >= 0)
		err = fw_dp_prune(dp->rule_sets_fd, sizeof(struct fw_set_key), set_alive, dead);
	if (!err && dp->rule_ranges_fd >= 0)
		err = ranges_reap(dp, dead);
	return err;
}
