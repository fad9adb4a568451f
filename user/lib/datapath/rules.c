// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's request path (see rules.h): a policy written under a
 * new generation beside the live one, in the form its size calls for (a
 * small set, a range table or the slot's trie); one entry of a trie
 * edited in place; retired generations handed to the grace-period
 * worker; a subject's rules cleared; the per-port exceptions. The forms,
 * the slots and the worker are the files below (rules_store.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/dispatch.h"
#include "datapath/rules.h"
#include "datapath/rules_store.h"

__u32 fw_dp_rules_gen(struct fw_dp *dp, __u32 id)
{
	__u32 gen;

	if (fw_rs_slot_get(dp, id))
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
	size_t nports = 0;
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
	err = fw_rs_slot_get(dp, id);
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
		fw_rs_flush(r, id);
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
		err = fw_rs_set_put(dp->rule_sets_fd, id, set, gen | FW_GEN_SET, pgen);
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
		err = fw_rs_range_put(dp, id, set, gen | FW_GEN_RANGE, pgen);
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
			fw_rs_flush(r, id);
	}
	err = fw_rs_trie_put(r, s->fd, id, set, gen, pgen);
	if (err)
		goto undo;
	for (size_t i = 0; i < set->n; i++) {
		struct fw_rule_key k;

		key_of(&k, &set->entries[i].key, gen);
		fw_rs_keys_push(&fresh, &k);
	}
written:
	pthread_mutex_lock(&r->lock);
	s->nold += s->nlive;
	s->nlive = gen & FW_GEN_FORMS ? 0 : (__u32)set->n;
	if (s->gen & FW_GEN_FORMS)
		gens_push(&s->sets_old, s->gen);
	s->gen = gen;
	fw_rs_keys_move(&s->old, &s->live);
	s->live = fresh;
	pthread_mutex_unlock(&r->lock);
	*gen_out = gen;
	*port_state = set->nports ? pgen | (__u32)set->nports : live_gen;
	return 0;

undo:
	/* nothing names the new generation yet: it goes at once */
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

	if (fw_rs_slot_get(dp, id))
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

	if (fw_rs_slot_get(dp, id))
		return; /* the reaper deletes them */
	s = &r->slot[id];
	pthread_mutex_lock(&r->lock);
	s->nold += s->nlive;
	s->nlive = 0;
	if (s->gen & FW_GEN_FORMS)
		gens_push(&s->sets_old, s->gen);
	s->gen = next_gen(s->gen); /* every generation it had is older */
	fw_rs_keys_move(&s->old, &s->live);
	pthread_mutex_unlock(&r->lock);
	fw_dp_policy_retire(dp, id, 0);
}

static int rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del)
{
	struct fw_dp_rules *r = dp->rules;
	struct fw_rule_key k;
	struct slot *s;
	int err = fw_rs_slot_get(dp, id);

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
		fw_rs_keys_drop(&s->live, &k);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	if (bpf_map_update_elem(s->fd, &k, &c->rule, BPF_NOEXIST) == 0) {
		pthread_mutex_lock(&r->lock);
		s->nlive++;
		fw_rs_keys_push(&s->live, &k);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	if (errno == EEXIST && bpf_map_update_elem(s->fd, &k, &c->rule, BPF_EXIST) == 0)
		return 0;
	err = -errno;
	fw_err("subject %u: can't edit rule trie: %s", id, strerror(-err));
	return err;
}

static void slot_emptied(struct fw_dp_rules *r, __u32 id)
{
	pthread_mutex_lock(&r->lock);
	r->slot[id].nlive = r->slot[id].nold = 0;
	r->slot[id].gen &= ~FW_GEN_FORMS; /* its set is gone too */
	fw_rs_keys_free(&r->slot[id].live);
	fw_rs_keys_free(&r->slot[id].old);
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

/* An edit changes entries dispatch already names: cached answers of the
 * live generation end with it (fastwall_subject_rows). */
int fw_dp_rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del)
{
	int err = rules_edit(dp, id, c, del);

	return err ? err : fw_dp_rules_epoch_bump(dp);
}

int fw_dp_rules_clear(struct fw_dp *dp, __u32 id)
{
	int err = fw_rs_slot_get(dp, id);

	if (err)
		return err;
	fw_rs_flush(dp->rules, id);
	err = fw_rs_grace(dp->rules);
	if (!err)
		err = fw_rs_trie_delete_older(dp->rules->slot[id].fd, ~0u);
	if (!err) {
		struct fw_recs sets, held = {.size = sizeof(__u32)};

		sets_of(dp->rules, id, &sets);
		fw_rs_sets_delete(dp, id, &sets, &held);
		gens_free(&sets);
		slot_emptied(dp->rules, id);
		/* the live table's element is gone, but dispatch still names
		 * its generation: a packet may have found the slot just
		 * before, so the slot is free only a grace period later */
		if (held.n && fw_rs_grace(dp->rules))
			fw_warn("subject %u: can't wait for a grace period; %zu range slots stay "
				"taken",
				id, held.n);
		else
			for (size_t i = 0; i < held.n; i++)
				fw_rs_range_slot_give(dp->rules, gen_at(&held, i));
		free(held.data);
	}
	/* the subject may still be dispatched to (it fails closed now) */
	return err ? err : fw_dp_rules_epoch_bump(dp);
}

static int slot_fetch_dead(struct fw_dp *dp, __u32 id, void *dead)
{
	return ((const bool *)dead)[id] ? fw_rs_slot_fetch(dp, id, NULL) : 0;
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
			err = fw_rs_pool(dp, slot_fetch_dead, (void *)dead);
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
			fw_rs_flush(r, id);
	/* nothing dispatches to them any more; packets that looked them up
	 * before are done after this */
	err = fw_rs_grace(r);
	for (__u32 id = 0; id < FW_MAX_SUBJECTS && !err; id++) {
		if (!dead[id])
			continue;
		err = fw_rs_trie_delete_older(r->slot[id].fd, ~0u);
		if (!err)
			slot_emptied(r, id);
	}
	/* their small sets and range tables, known or not (one scan of
	 * each map) */
	if (!err)
		err = fw_rs_sets_reap(dp, dead);
	if (!err && dp->rule_ranges_fd >= 0)
		err = fw_rs_ranges_reap(dp, dead);
	return err;
}

/* ---- the per-port exceptions ------------------------------------------- */

static bool not_ports_of(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const __u32 *want = ctx; /* {subject, generation bit or ~0u for all} */

	if (k->subject != want[0])
		return true;
	return want[1] != ~0u && (k->portset & FW_PORTSET_GEN) != want[1];
}

int fw_dp_ports_flush(struct fw_dp *dp, __u32 id)
{
	__u32 want[2] = {id, ~0u};

	return fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), not_ports_of, want);
}

struct ports_sweep_ctx {
	bool (*live)(__u32 id, __u32 *gen, const void *ctx);
	const void *ctx;
};

static bool port_rule_live(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const struct ports_sweep_ctx *c = ctx;
	__u32 gen;

	return c->live(k->subject, &gen, c->ctx) && (k->portset & FW_PORTSET_GEN) == gen;
}

/* Deletes per-port exceptions that no live trie can reference: those of
 * unknown subjects and of the generation a subject does not use (left by a
 * swap interrupted by a crash). live(id, &gen) says whether id is known
 * and its live generation. */
int fw_dp_ports_sweep(struct fw_dp *dp, bool (*live)(__u32 id, __u32 *gen, const void *ctx),
		      const void *ctx)
{
	struct ports_sweep_ctx c = {live, ctx};

	return fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), port_rule_live, &c);
}
