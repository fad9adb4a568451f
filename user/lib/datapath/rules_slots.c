// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's slots: what each slot's trie holds, known at the first
 * request that needs it (or fetched ahead after a restart); the first
 * start, which gives every slot of fastwall_rules_v2 its trie for good;
 * and opening and closing the store. See rules_store.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "common/clock.h"
#include "common/log.h"
#include "datapath/rules_store.h"

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
	fw_rs_keys_push(&g->all, k);
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
			fw_rs_keys_push(ntohl(g->all.k[i].gen) == g->max ? &live : &old,
					&g->all.k[i]);
	}
	fw_rs_keys_free(&g->all);
	pthread_mutex_lock(&r->lock);
	if (s->known) {
		pthread_mutex_unlock(&r->lock);
		fw_rs_keys_free(&live);
		fw_rs_keys_free(&old);
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
			fw_rs_keys_move(&s->old, &s->live);
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
int fw_rs_slot_fetch(struct fw_dp *dp, __u32 id, void *arg)
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
		fd = fw_rs_trie_create(dp->rules);
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
		fw_rs_keys_free(&g.all);
		close(fd);
		return err;
	}
	slot_publish(r, id, fd, &g);
	return 0;
}

/* The slot known, or a negative errno. */
int fw_rs_slot_get(struct fw_dp *dp, __u32 id)
{
	int err;

	if (!dp->rules || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	if (__atomic_load_n(&dp->rules->slot[id].known, __ATOMIC_ACQUIRE))
		return 0;
	err = fw_rs_slot_fetch(dp, id, NULL);
	if (err)
		fw_err("can't open the rule trie of subject %u: %s", id, strerror(-err));
	return err;
}

static void *warm_run(void *dp)
{
	int err = fw_rs_pool(dp, fw_rs_slot_fetch, NULL);

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
		return fw_rs_slot_fetch(dp, id, NULL); /* kept from a start cut short */
	fd = fw_rs_trie_create(dp->rules);
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
		err = fw_rs_sets_boot(dp, r);
		if (err) {
			fw_err("can't read fastwall_rule_sets: %s", strerror(-err));
			return err;
		}
	}
	fw_rs_ranges_map(dp, r);
	if (dp->rule_ranges_fd >= 0) {
		err = fw_rs_ranges_boot(dp, r);
		if (err) {
			fw_err("can't read fastwall_rule_ranges: %s", strerror(-err));
			return err;
		}
	}
	/* only a first start makes tries; one made later (a start cut
	 * short) goes without, which bpftool prints as bytes */
	if (populate)
		fw_rs_trie_btf(r);
	err = fw_rs_grace_maps(r);
	if (err) {
		fw_err("can't create the grace-period map: %s", strerror(-err));
		return err;
	}
	if (populate) {
		struct populate p = {.check = check, .old_fd = old_fd};
		__u64 t0 = fw_now_ns();

		err = fw_rs_pool(dp, slot_populate, &p);
		if (err) {
			fw_err("can't give every rule slot its trie: %s", strerror(-err));
			return err;
		}
		fw_info("rule slots: %u tries created and written%s in %llu ms", FW_MAX_SUBJECTS,
			old_fd >= 0 ? " (ABI 1 rules copied)" : "",
			(unsigned long long)((fw_now_ns() - t0) / 1000000));
	}
	r->worker_up = pthread_create(&r->worker, NULL, fw_rs_worker_run, dp) == 0;
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
		fw_rs_keys_free(&r->slot[id].live);
		fw_rs_keys_free(&r->slot[id].old);
		gens_free(&r->slot[id].sets_old);
		gens_free(&r->slot[id].sets_boot);
	}
	btf__free(r->btf);
	fw_rs_ranges_unmap(r);
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
