// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's threads: a pool that runs one function over every
 * slot (the first start writes every slot's trie with it, a restart
 * fetches them), and the grace-period worker.
 *
 * Writing a slot of an array of maps returns only after an RCU grace
 * period (milliseconds); a plain map update does not wait. So slots are
 * written at the first start only, many at once from the pool (callers
 * waiting at the same time share grace periods), and a policy change is
 * plain map updates plus the dispatch rewrite. What must wait for a grace
 * period (deleting a generation no packet may still be reading) is done
 * by the worker, for every pending deletion at once: it writes a private
 * one-slot array of maps, which is exactly that wait. See rules_store.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/rules_store.h"

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

int fw_rs_pool(struct fw_dp *dp, int (*fn)(struct fw_dp *, __u32, void *), void *arg)
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

/* Returns after an RCU grace period: a slot write of an array of maps
 * waits for one (synchronize_rcu) before it returns. */
int fw_rs_grace(struct fw_dp_rules *r)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(r->grace_outer, &zero, &r->grace_inner, BPF_ANY))
		return -errno;
	__atomic_fetch_add(&r->grace_waits, 1, __ATOMIC_RELAXED);
	return 0;
}

int fw_rs_grace_maps(struct fw_dp_rules *r)
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

static bool port_kept(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const __u32 *del = ctx;

	if (k->subject >= FW_MAX_SUBJECTS || !del[k->subject])
		return true;
	return (k->portset & FW_PORTSET_GEN) != (del[k->subject] & FW_PORTSET_GEN);
}

/* Deletes a retired set of either hashed form (gen says which). */
static int hashed_delete(struct fw_dp *dp, __u32 id, __u32 gen, struct fw_recs *held)
{
	struct fw_set_key k = {.subject = id, .gen = gen};

	if (!(gen & FW_GEN_RANGE))
		return fw_rs_set_delete(dp->rule_sets_fd, id, gen);
	return fw_rs_range_delete(dp, &k, held);
}

/* Deletes the small sets l of subject id (gone already: fine). */
void fw_rs_sets_delete(struct fw_dp *dp, __u32 id, const struct fw_recs *l, struct fw_recs *held)
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

void *fw_rs_worker_run(void *dp_)
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
		err = fw_rs_grace(r);
		if (err)
			fw_err("rule worker: can't wait for a grace period: %s", strerror(-err));
		for (size_t i = 0; i < n && !err; i++) {
			struct job *j = &jobs[i];

			if (j->keys.lost)
				fw_rs_trie_delete_older(r->slot[j->id].fd, j->keep);
			else if (j->keys.n)
				fw_dp_delete_keys(r->slot[j->id].fd, j->keys.k, j->keys.n,
						  sizeof(*j->keys.k));
			fw_rs_sets_delete(dp, j->id, &j->sets, NULL);
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
			fw_rs_keys_free(&jobs[i].keys);
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
void fw_rs_flush(struct fw_dp_rules *r, __u32 id)
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

void fw_dp_rules_settle(struct fw_dp *dp)
{
	if (dp->rules)
		fw_rs_flush(dp->rules, FW_MAX_SUBJECTS);
}
