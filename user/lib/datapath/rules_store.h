/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Inside datapath/: the rule store's state, which its files share (see
 * rules.h for what it does). Each storage form has its file: the slot
 * tries (rules_trie.c), the small sets (rules_set.c), the range tables
 * (rules_range.c); knowing the slots, the first start, open and close are
 * rules_slots.c, the thread pool and the grace-period worker
 * rules_worker.c, the request path rules.c. Calls go from rules.c down
 * to the others, from rules_slots.c and rules_worker.c to the forms, and
 * from every one to scan.c, never back up. Functions return 0 or a
 * negative errno unless said. */
#ifndef FW_DATAPATH_RULES_STORE_H
#define FW_DATAPATH_RULES_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <arpa/inet.h>

#include "datapath/datapath.h"
#include "datapath/rules.h"
#include "datapath/scan.h"

struct btf;

#define SLOT_ROOM   (2 * FW_MAX_RULES) /* entries a slot's trie holds */
#define QUEUE_MAX   1024	       /* retired generations waiting for the worker */
#define POOL_MAX    128		       /* threads that write or fetch slots together */
#define NOFILE_NEED (FW_MAX_SUBJECTS + 4096)
#define WORKER_NICE 10 /* the grace-period worker's, relative to the process */
#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's own "operation not supported" */
#endif

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

static inline void key_of(struct fw_rule_key *k, const struct fw_lpm_key *from, __u32 gen)
{
	k->prefixlen = 32 + from->prefixlen;
	k->gen = htonl(gen);
	k->addr = from->addr;
}

/* Lists of small-set generations: fw_recs of __u32 (a zeroed list is an
 * empty one). */
static inline void gens_free(struct fw_recs *l)
{
	free(l->data);
	*l = (struct fw_recs){0};
}

/* false: no memory (the set is left to the reaper's scan) */
static inline bool gens_push(struct fw_recs *l, __u32 gen)
{
	l->size = sizeof(gen);
	return fw_recs_push(l, &gen) == 0;
}

static inline __u32 gen_at(const struct fw_recs *l, size_t i)
{
	__u32 gen;

	memcpy(&gen, l->data + i * sizeof(gen), sizeof(gen));
	return gen;
}

/* The generation after gen, of any form: one counter for the three,
 * which never reaches the form bits (it wraps to 0). */
static inline __u32 next_gen(__u32 gen)
{
	return ((gen & ~FW_GEN_FORMS) + 1) & ~FW_GEN_FORMS;
}

/* Lifecycle (datapath.c and load.c call these). Sets up dp->rules.
 * populate: give every slot of fastwall_rules_v2 its trie (slots already
 * holding one are kept when check is set); old_fd >= 0: ABI 1's
 * fastwall_rules, whose tries are copied in under generation 0. */
int fw_dp_rules_open(struct fw_dp *dp, bool populate, bool check, int old_fd);
void fw_dp_rules_close(struct fw_dp *dp);
/* fw_dp_reap's part: the rules of the dead ids, after a grace period. */
int fw_dp_rules_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);

/* ---- the slot tries (rules_trie.c) ---- */
void fw_rs_keys_free(struct keys *l);
/* A key pushed where there is no memory: the list is lost. */
void fw_rs_keys_push(struct keys *l, const struct fw_rule_key *k);
/* Moves every key of from to the end of to; from is left empty. */
void fw_rs_keys_move(struct keys *to, struct keys *from);
void fw_rs_keys_drop(struct keys *l, const struct fw_rule_key *k);
/* The BTF the tries are made with, where the kernel takes it (best
 * effort: r->btf stays NULL otherwise). */
void fw_rs_trie_btf(struct fw_dp_rules *r);
/* A new, empty trie of a slot's size: its fd or a negative errno. */
int fw_rs_trie_create(struct fw_dp_rules *r);
/* Writes set into fd under generation gen (per-port exceptions under
 * pgen); on failure deletes what it wrote. */
int fw_rs_trie_put(struct fw_dp_rules *r, int fd, __u32 id, const struct fw_compiled_set *set,
		   __u32 gen, __u32 pgen);
/* Deletes the generations of fd before keep (~0u: all). */
int fw_rs_trie_delete_older(int fd, __u32 keep);

/* ---- the small sets (rules_set.c) ---- */
int fw_rs_set_put(int fd, __u32 id, const struct fw_compiled_set *set, __u32 gen, __u32 pgen);
int fw_rs_set_delete(int fd, __u32 id, __u32 gen);
/* The sets a restart adopts, into each slot's sets_boot. */
int fw_rs_sets_boot(struct fw_dp *dp, struct fw_dp_rules *r);
/* Deletes the small sets of the dead ids, known or not. */
int fw_rs_sets_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);

/* ---- the range tables (rules_range.c) ---- */
/* Maps fastwall_range_tables for writing in place where it can. */
void fw_rs_ranges_map(struct fw_dp *dp, struct fw_dp_rules *r);
void fw_rs_ranges_unmap(struct fw_dp_rules *r);
int fw_rs_range_put(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set, __u32 gen,
		    __u32 pgen);
int fw_rs_range_delete(struct fw_dp *dp, const struct fw_set_key *k, struct fw_recs *held);
void fw_rs_range_slot_give(struct fw_dp_rules *r, __u32 slot);
int fw_rs_ranges_boot(struct fw_dp *dp, struct fw_dp_rules *r);
int fw_rs_ranges_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);

/* ---- the pool and the grace-period worker (rules_worker.c) ---- */
/* Calls fn(dp, id, arg) for every id from a pool of threads; the last
 * error any returned, else 0. */
int fw_rs_pool(struct fw_dp *dp, int (*fn)(struct fw_dp *, __u32, void *), void *arg);
/* Returns after an RCU grace period. */
int fw_rs_grace(struct fw_dp_rules *r);
int fw_rs_grace_maps(struct fw_dp_rules *r);
/* The worker thread's body (arg: the struct fw_dp). */
void *fw_rs_worker_run(void *dp);
/* Waits until no deletion of id (every id: FW_MAX_SUBJECTS) is pending. */
void fw_rs_flush(struct fw_dp_rules *r, __u32 id);
/* Deletes the small sets or range tables l of subject id (gone already:
 * fine); held as for fw_rs_range_delete. */
void fw_rs_sets_delete(struct fw_dp *dp, __u32 id, const struct fw_recs *l, struct fw_recs *held);

/* ---- knowing a slot (rules_slots.c) ---- */
/* The slot known (fetched from the kernel if need be). */
int fw_rs_slot_get(struct fw_dp *dp, __u32 id);
int fw_rs_slot_fetch(struct fw_dp *dp, __u32 id, void *arg);

#endif /* FW_DATAPATH_RULES_STORE_H */
