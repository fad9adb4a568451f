// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The in-memory data plane of datapath_fake.h. It implements the part of
 * the data path's headers (dispatch.h, leases.h, rules.h, stats.h,
 * cgroup.h) that the registry and the learner call, with the
 * semantics they rely on: puts replace, deletes of a missing key are no
 * error where the real functions say so, a dispatch delete spares a newer
 * owner, a policy swap writes the per-port exceptions under the unused
 * generation before the rules and drops the old generation after, the
 * reaper deletes by subject id. The choice between an edit and a swap
 * (fw_dp_policy_update) is the real one: datapath/policy_update.c is
 * linked in and calls the swap and edit below. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/hash.h"
#include "datapath_fake.h"
#include "datapath/bandwidth.h"
#include "datapath/cgroup.h"
#include "datapath/dispatch.h"
#include "datapath/leases.h"
#include "datapath/rules.h"
#include "datapath/scan.h"
#include "datapath/stats.h"

#define FMAP_BUCKETS 256

enum { F_ANY, F_NOEXIST, F_EXIST };

struct fmap_ent {
	struct fmap_ent *next;
	unsigned char kv[]; /* key, then value */
};

struct fmap {
	size_t ksz, vsz, n;
	struct fmap_ent *b[FMAP_BUCKETS];
};

struct frules {
	bool live;
	struct fw_compiled *c;
	size_t n;
	unsigned int changes;
	unsigned int edits; /* of those, edits in place */
	__u32 gen;	    /* of the rules above */
};

struct fake_dp {
	struct fw_dp dp;     /* first: the callers hold a struct fw_dp * */
	struct fmap cgroups; /* __u64 cgroup id -> struct fw_subject */
	struct fmap dispatch, meta, learned, lports, ports, names, lnames, conns;
	struct fmap domains; /* __u32 id -> __u64 digest (fastwall_subject_domains) */
	struct frules rules[FW_MAX_SUBJECTS];
	__u64 counts[FW_MAX_SUBJECTS];
	unsigned int resets[FW_MAX_SUBJECTS];
	__u64 bw_rate[FW_MAX_SUBJECTS]; /* fastwall_bandwidth: 0 = no entry */
	__u64 epoch;			/* fastwall_rules_epoch */
	int fail[FAKE_OP_MAX];
};

static struct fake_dp *fake_of(struct fw_dp *dp)
{
	return (struct fake_dp *)dp;
}

static int take_failure(struct fw_dp *dp, enum fake_op op)
{
	int err = fake_of(dp)->fail[op];

	fake_of(dp)->fail[op] = 0;
	return err;
}

/* ---- one map ------------------------------------------------------------- */

static void fmap_init(struct fmap *m, size_t ksz, size_t vsz)
{
	memset(m, 0, sizeof(*m));
	m->ksz = ksz;
	m->vsz = vsz;
}

static struct fmap_ent **fmap_slot(struct fmap *m, const void *key)
{
	struct fmap_ent **p = &m->b[fw_fnv(FW_FNV_BASIS, key, m->ksz) % FMAP_BUCKETS];

	while (*p && memcmp((*p)->kv, key, m->ksz))
		p = &(*p)->next;
	return p;
}

static int fmap_get(struct fmap *m, const void *key, void *val)
{
	struct fmap_ent *e = *fmap_slot(m, key);

	if (!e)
		return -ENOENT;
	if (val)
		memcpy(val, e->kv + m->ksz, m->vsz);
	return 0;
}

static int fmap_put(struct fmap *m, const void *key, const void *val, int flags)
{
	struct fmap_ent **p = fmap_slot(m, key);

	if (*p && flags == F_NOEXIST)
		return -EEXIST;
	if (!*p && flags == F_EXIST)
		return -ENOENT;
	if (!*p) {
		*p = calloc(1, sizeof(**p) + m->ksz + m->vsz);
		if (!*p)
			return -ENOMEM;
		memcpy((*p)->kv, key, m->ksz);
		m->n++;
	}
	memcpy((*p)->kv + m->ksz, val, m->vsz);
	return 0;
}

static int fmap_del(struct fmap *m, const void *key)
{
	struct fmap_ent **p = fmap_slot(m, key), *e = *p;

	if (!e)
		return -ENOENT;
	*p = e->next;
	free(e);
	m->n--;
	return 0;
}

/* fn sees a copy of every entry taken before the first call, so it may
 * change the map as a caller of fw_dp_scan may. */
static int fmap_scan(struct fmap *m, fw_dp_scan_fn fn, void *ctx)
{
	size_t sz = m->ksz + m->vsz, n = 0;
	unsigned char *snap = malloc(m->n ? m->n * sz : 1);
	int err = 0;

	if (!snap)
		return -ENOMEM;
	for (int b = 0; b < FMAP_BUCKETS; b++)
		for (struct fmap_ent *e = m->b[b]; e; e = e->next)
			memcpy(snap + n++ * sz, e->kv, sz);
	for (size_t i = 0; i < n && !err; i++)
		err = fn(snap + i * sz, snap + i * sz + m->ksz, ctx);
	free(snap);
	return err;
}

/* Deletes the entries keep() refuses. */
static void fmap_prune(struct fmap *m, bool (*keep)(const void *key, const void *ctx),
		       const void *ctx)
{
	for (int b = 0; b < FMAP_BUCKETS; b++) {
		for (struct fmap_ent **p = &m->b[b]; *p;) {
			struct fmap_ent *e = *p;

			if (keep(e->kv, ctx)) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			free(e);
			m->n--;
		}
	}
}

static void fmap_clear(struct fmap *m)
{
	for (int b = 0; b < FMAP_BUCKETS; b++) {
		while (m->b[b]) {
			struct fmap_ent *e = m->b[b];

			m->b[b] = e->next;
			free(e);
		}
	}
	m->n = 0;
}

/* The maps keyed by subject start their keys with the id. */
static size_t fmap_count_subject(struct fmap *m, __u32 id)
{
	size_t n = 0;

	for (int b = 0; b < FMAP_BUCKETS; b++) {
		for (struct fmap_ent *e = m->b[b]; e; e = e->next) {
			__u32 k;

			memcpy(&k, e->kv, sizeof(k));
			n += id == ~0u || k == id;
		}
	}
	return n;
}

/* ---- the fake's own API --------------------------------------------------- */

struct fw_dp *fake_dp_new(void)
{
	struct fake_dp *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	snprintf(f->dp.pin_root, sizeof(f->dp.pin_root), "%s", "(in memory)");
	/* no descriptor: a real map access through one fails loudly */
	f->dp.btf_fd = f->dp.from_sandbox_fd = f->dp.to_sandbox_fd = -1;
	f->dp.dispatch_fd = f->dp.rules_fd = f->dp.learned_fd = f->dp.conns_fd = -1;
	f->dp.meta_fd = f->dp.names_fd = f->dp.learned_names_fd = f->dp.learned_ports_fd = -1;
	f->dp.conn_count_fd = f->dp.ports_fd = -1;
	fmap_init(&f->dispatch, sizeof(struct fw_ip), sizeof(struct fw_subject));
	fmap_init(&f->cgroups, sizeof(__u64), sizeof(struct fw_subject));
	f->dp.cgroups_fd = f->dp.cg_dns_fd = -1;
	fmap_init(&f->meta, sizeof(__u32), sizeof(struct fw_subject_meta));
	fmap_init(&f->domains, sizeof(__u32), sizeof(__u64));
	fmap_init(&f->learned, sizeof(struct fw_learned_key), sizeof(struct fw_lease));
	fmap_init(&f->lports, sizeof(struct fw_port_rule_key), sizeof(__u8));
	fmap_init(&f->ports, sizeof(struct fw_port_rule_key), sizeof(__u8));
	fmap_init(&f->names, sizeof(__u32), sizeof(struct fw_lease_name));
	fmap_init(&f->lnames, sizeof(struct fw_learned_key), sizeof(struct fw_lease_names));
	fmap_init(&f->conns, sizeof(struct fw_conn_key), sizeof(struct fw_conn));
	f->dp.conn_count = f->counts;
	return &f->dp;
}

void fake_dp_free(struct fw_dp *dp)
{
	struct fake_dp *f = fake_of(dp);

	if (!f)
		return;
	fmap_clear(&f->dispatch);
	fmap_clear(&f->cgroups);
	fmap_clear(&f->meta);
	fmap_clear(&f->domains);
	fmap_clear(&f->learned);
	fmap_clear(&f->lports);
	fmap_clear(&f->ports);
	fmap_clear(&f->names);
	fmap_clear(&f->lnames);
	fmap_clear(&f->conns);
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
		free(f->rules[id].c);
	free(f);
}

void fake_fail_next(struct fw_dp *dp, enum fake_op op, int err)
{
	fake_of(dp)->fail[op] = err;
}

size_t fake_dispatch_count(struct fw_dp *dp)
{
	return fake_of(dp)->dispatch.n;
}

const struct fw_compiled *fake_rules(struct fw_dp *dp, __u32 id, size_t *n)
{
	struct frules *r = &fake_of(dp)->rules[id];

	*n = r->live ? r->n : 0;
	return r->live ? r->c : NULL;
}

int fake_rules_verdict(struct fw_dp *dp, __u32 id, const struct fw_ip *addr)
{
	const struct fw_compiled *best = NULL;
	size_t n;
	const struct fw_compiled *c = fake_rules(dp, id, &n);

	for (size_t i = 0; c && i < n; i++) {
		if (!fw_prefix_contains(&c[i].key.addr, c[i].key.prefixlen, addr))
			continue;
		if (!best || c[i].key.prefixlen > best->key.prefixlen)
			best = &c[i];
	}
	return best ? best->rule.action : -1;
}

unsigned int fake_rules_changes(struct fw_dp *dp, __u32 id)
{
	return fake_of(dp)->rules[id].changes;
}

unsigned int fake_rules_edits(struct fw_dp *dp, __u32 id)
{
	return fake_of(dp)->rules[id].edits;
}

int fake_meta_get(struct fw_dp *dp, __u32 id, struct fw_subject_meta *out)
{
	return fmap_get(&fake_of(dp)->meta, &id, out);
}

int fake_lease_get(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, struct fw_lease *out)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};

	return fmap_get(&fake_of(dp)->learned, &k, out);
}

size_t fake_learned_count(struct fw_dp *dp, __u32 id)
{
	return fmap_count_subject(&fake_of(dp)->learned, id);
}

size_t fake_conns_count(struct fw_dp *dp, __u32 id)
{
	return fmap_count_subject(&fake_of(dp)->conns, id);
}

size_t fake_ports_count(struct fw_dp *dp, __u32 id)
{
	return fmap_count_subject(&fake_of(dp)->ports, id);
}

size_t fake_lports_count(struct fw_dp *dp, __u32 id)
{
	return fmap_count_subject(&fake_of(dp)->lports, id);
}

size_t fake_lease_names_count(struct fw_dp *dp, __u32 id)
{
	return fmap_count_subject(&fake_of(dp)->lnames, id);
}

size_t fake_names_count(struct fw_dp *dp)
{
	return fake_of(dp)->names.n;
}

void fake_conn_put(struct fw_dp *dp, const struct fw_conn_key *k, const struct fw_conn *v)
{
	struct fake_dp *f = fake_of(dp);
	bool fresh = fmap_get(&f->conns, k, NULL) != 0;

	if (fmap_put(&f->conns, k, v, F_ANY) == 0 && fresh && k->subject < FW_MAX_SUBJECTS)
		f->counts[k->subject]++;
}

unsigned int fake_resets(struct fw_dp *dp, __u32 id)
{
	return fake_of(dp)->resets[id];
}

/* ---- datapath.h: dispatch and metadata ----------------------------------- */

static __u64 dispatch_gen;

__u64 fw_dp_dispatch_gen(void)
{
	return __atomic_load_n(&dispatch_gen, __ATOMIC_ACQUIRE);
}

int fw_dp_dispatch_put(struct fw_dp *dp, const struct fw_ip *addr, const struct fw_subject *s)
{
	int err = take_failure(dp, FAKE_DISPATCH_PUT);

	err = err ? err : fmap_put(&fake_of(dp)->dispatch, addr, s, F_ANY);
	__atomic_add_fetch(&dispatch_gen, 1, __ATOMIC_RELEASE);
	return err;
}

int fw_dp_dispatch_del(struct fw_dp *dp, const struct fw_ip *addr, __u32 id)
{
	struct fw_subject cur;
	int err = take_failure(dp, FAKE_DISPATCH_DEL);

	if (err)
		return err;
	if (fmap_get(&fake_of(dp)->dispatch, addr, &cur) || cur.id != id)
		return 0;
	err = fmap_del(&fake_of(dp)->dispatch, addr);
	__atomic_add_fetch(&dispatch_gen, 1, __ATOMIC_RELEASE);
	return err;
}

int fw_dp_dispatch_drop(struct fw_dp *dp, const struct fw_ip *addr)
{
	struct fw_subject cur;
	int err = take_failure(dp, FAKE_DISPATCH_DEL);

	if (err)
		return err;
	if (fmap_get(&fake_of(dp)->dispatch, addr, &cur))
		return 0;
	err = fmap_del(&fake_of(dp)->dispatch, addr);
	__atomic_add_fetch(&dispatch_gen, 1, __ATOMIC_RELEASE);
	return err;
}

int fw_dp_dispatch_lookup(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *out)
{
	return fmap_get(&fake_of(dp)->dispatch, addr, out);
}

int fw_dp_dispatch_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->dispatch, fn, ctx);
}

/* ---- datapath/cgroup.h: process subjects ---------------------------------- */

int fw_dp_cgroup_put(struct fw_dp *dp, __u64 cgid, const struct fw_subject *s)
{
	return fmap_put(&fake_of(dp)->cgroups, &cgid, s, F_ANY);
}

int fw_dp_cgroup_del(struct fw_dp *dp, __u64 cgid, __u32 id)
{
	struct fw_subject cur;

	if (fmap_get(&fake_of(dp)->cgroups, &cgid, &cur) || cur.id != id)
		return 0;
	return fmap_del(&fake_of(dp)->cgroups, &cgid);
}

int fw_dp_cgroup_lookup(struct fw_dp *dp, __u64 cgid, struct fw_subject *out)
{
	return fmap_get(&fake_of(dp)->cgroups, &cgid, out);
}

int fw_dp_cgroup_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->cgroups, fn, ctx);
}

int fw_dp_meta_put(struct fw_dp *dp, __u32 id, const struct fw_subject_meta *m)
{
	int err = take_failure(dp, FAKE_META_PUT);

	return err ? err : fmap_put(&fake_of(dp)->meta, &id, m, F_ANY);
}

int fw_dp_meta_del(struct fw_dp *dp, __u32 id)
{
	fmap_del(&fake_of(dp)->meta, &id);
	return 0;
}

int fw_dp_meta_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->meta, fn, ctx);
}

int fw_dp_domains_put(struct fw_dp *dp, __u32 id, __u64 hash)
{
	return fmap_put(&fake_of(dp)->domains, &id, &hash, F_ANY);
}

__u64 fw_dp_domains_get(struct fw_dp *dp, __u32 id)
{
	__u64 hash = 0;

	return fmap_get(&fake_of(dp)->domains, &id, &hash) ? 0 : hash;
}

int fw_dp_bandwidth_set(struct fw_dp *dp, __u32 id, __u64 rate, __u64 burst)
{
	(void)burst;
	if (id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	fake_of(dp)->bw_rate[id] = rate;
	return 0;
}

int fw_dp_bandwidth_get(struct fw_dp *dp, __u32 id, __u64 *rate, __u64 *burst)
{
	if (id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	*rate = fake_of(dp)->bw_rate[id];
	*burst = 0; /* the fake keeps no burst: a rate of its own is a change */
	return 0;
}

__u64 fake_bw_rate(struct fw_dp *dp, __u32 id)
{
	return fake_of(dp)->bw_rate[id];
}

int fw_dp_subject_reset(struct fw_dp *dp, __u32 id)
{
	fake_of(dp)->resets[id]++;
	return 0;
}

/* ---- rules ------------------------------------------------------------------ */

static int rules_set(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, size_t n)
{
	struct frules *r = &fake_of(dp)->rules[id];
	struct fw_compiled *copy = malloc(n ? n * sizeof(*c) : 1);

	if (!copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, c, n * sizeof(*c));
	free(r->c);
	r->c = copy;
	r->n = n;
	r->live = true;
	r->changes++;
	return 0;
}

struct ports_of {
	__u32 id, gen; /* gen ~0u: every generation */
};

static bool not_ports_of(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const struct ports_of *w = ctx;

	return k->subject != w->id || (w->gen != ~0u && (k->portset & FW_PORTSET_GEN) != w->gen);
}

int fw_dp_policy_swap(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set,
		      __u32 *port_state, __u32 *gen_out)
{
	struct fake_dp *f = fake_of(dp);
	__u32 live_gen = *port_state & FW_PORTSET_GEN;
	__u32 gen = live_gen ^ FW_PORTSET_GEN;
	struct fw_compiled *c;
	int err = take_failure(dp, FAKE_POLICY_SWAP);

	if (err)
		return err;
	c = malloc(set->n ? set->n * sizeof(*c) : 1);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < set->nports; i++) {
		struct fw_port_rule_key k = {
			.subject = id,
			.portset = set->ports[i].portset | gen,
			.port = set->ports[i].port,
		};

		fmap_put(&f->ports, &k, &set->ports[i].action, F_ANY);
	}
	for (size_t i = 0; i < set->n; i++) {
		c[i] = set->entries[i];
		if (set->nports && c[i].rule.portset)
			c[i].rule.portset |= gen;
	}
	err = rules_set(dp, id, c, set->n);
	free(c);
	if (err)
		return err;
	*gen_out = ++f->rules[id].gen;
	*port_state = set->nports ? gen | (__u32)set->nports : live_gen;
	return 0;
}

/* No packets here: the old port generation goes at once. */
void fw_dp_policy_retire(struct fw_dp *dp, __u32 id, __u32 old_port_state)
{
	if (old_port_state & ~FW_PORTSET_GEN) {
		struct ports_of w = {id, old_port_state & FW_PORTSET_GEN};

		fmap_prune(&fake_of(dp)->ports, not_ports_of, &w);
	}
}

__u32 fw_dp_rules_gen(struct fw_dp *dp, __u32 id)
{
	return fake_of(dp)->rules[id].gen;
}

__u64 fw_dp_slot_writes(struct fw_dp *dp)
{
	(void)dp;
	return 0;
}

void fw_dp_slots_warm(struct fw_dp *dp)
{
	(void)dp;
}

void fw_dp_rules_settle(struct fw_dp *dp)
{
	(void)dp;
}

int fw_dp_rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del)
{
	struct frules *r = &fake_of(dp)->rules[id];
	size_t i;

	if (!r->live)
		return -ENOENT;
	for (i = 0; i < r->n; i++)
		if (!memcmp(&r->c[i].key, &c->key, sizeof(c->key)))
			break;
	if (del) {
		if (i == r->n)
			return -ENOENT;
		r->c[i] = r->c[--r->n];
	} else if (i < r->n) {
		r->c[i] = *c;
	} else {
		struct fw_compiled *grown = realloc(r->c, (r->n + 1) * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		r->c = grown;
		r->c[r->n++] = *c;
	}
	r->changes++;
	r->edits++;
	return 0;
}

int fw_dp_rules_epoch_bump(struct fw_dp *dp)
{
	fake_of(dp)->epoch++;
	return 0;
}

__u64 fake_epoch(struct fw_dp *dp)
{
	return fake_of(dp)->epoch;
}

int fw_dp_rules_clear(struct fw_dp *dp, __u32 id)
{
	struct frules *r = &fake_of(dp)->rules[id];

	free(r->c);
	r->c = NULL;
	r->n = 0;
	r->live = false;
	return 0;
}

void fw_dp_rules_release(struct fw_dp *dp, __u32 id)
{
	fw_dp_rules_clear(dp, id);
}

struct sweep_ctx {
	bool (*live)(__u32 id, __u32 *gen, const void *ctx);
	const void *ctx;
};

static bool port_live(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const struct sweep_ctx *s = ctx;
	__u32 gen;

	return s->live(k->subject, &gen, s->ctx) && (k->portset & FW_PORTSET_GEN) == gen;
}

int fw_dp_ports_sweep(struct fw_dp *dp, bool (*live)(__u32 id, __u32 *gen, const void *ctx),
		      const void *ctx)
{
	struct sweep_ctx s = {live, ctx};

	fmap_prune(&fake_of(dp)->ports, port_live, &s);
	return 0;
}

/* ---- leases, names, connections --------------------------------------------- */

int fw_dp_lease_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns,
		    __u32 portset)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};
	struct fw_lease v = {
		.expires_ns = expires_ns, .learned_ns = fw_now_ns(), .portset = portset};
	int err = take_failure(dp, FAKE_LEASE_PUT);

	return err ? err : fmap_put(&fake_of(dp)->learned, &k, &v, F_ANY);
}

int fw_dp_learned_del(struct fw_dp *dp, __u32 id, const struct fw_ip *addr)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};

	fmap_del(&fake_of(dp)->learned, &k);
	return 0;
}

int fw_dp_learned_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->learned, fn, ctx);
}

int fw_dp_lports_put(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n)
{
	__u8 one = 1;

	for (size_t i = 0; i < n; i++) {
		struct fw_port_rule_key k = {.subject = id, .portset = set, .port = ports[i]};
		int err = fmap_put(&fake_of(dp)->lports, &k, &one, F_ANY);

		if (err)
			return err;
	}
	return 0;
}

void fw_dp_lports_del(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fw_port_rule_key k = {.subject = id, .portset = set, .port = ports[i]};

		fmap_del(&fake_of(dp)->lports, &k);
	}
}

int fw_dp_lports_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->lports, fn, ctx);
}

int fw_dp_name_add(struct fw_dp *dp, __u32 id, const struct fw_lease_name *v)
{
	return fmap_put(&fake_of(dp)->names, &id, v, F_NOEXIST);
}

int fw_dp_name_del(struct fw_dp *dp, __u32 id)
{
	return fmap_del(&fake_of(dp)->names, &id);
}

int fw_dp_names_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->names, fn, ctx);
}

int fw_dp_lease_names_put(struct fw_dp *dp, const struct fw_learned_key *k,
			  const struct fw_lease_names *v)
{
	return fmap_put(&fake_of(dp)->lnames, k, v, F_ANY);
}

int fw_dp_lease_names_get(struct fw_dp *dp, const struct fw_learned_key *k,
			  struct fw_lease_names *out)
{
	return fmap_get(&fake_of(dp)->lnames, k, out);
}

int fw_dp_lease_names_del(struct fw_dp *dp, const struct fw_learned_key *k)
{
	return fmap_del(&fake_of(dp)->lnames, k);
}

int fw_dp_conns_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fmap_scan(&fake_of(dp)->conns, fn, ctx);
}

int fw_dp_conn_del(struct fw_dp *dp, const struct fw_conn_key *k)
{
	return fmap_del(&fake_of(dp)->conns, k);
}

int fw_dp_conn_update(struct fw_dp *dp, const struct fw_conn_key *k, const struct fw_conn *v)
{
	return fmap_put(&fake_of(dp)->conns, k, v, F_EXIST);
}

__u64 *fw_dp_conn_counts(struct fw_dp *dp)
{
	return fake_of(dp)->counts;
}

/* ---- the reaper ---------------------------------------------------------------- */

static bool subject_alive(const void *key, const void *ctx)
{
	const bool *dead = ctx;
	__u32 id;

	memcpy(&id, key, sizeof(id));
	return id >= FW_MAX_SUBJECTS || !dead[id];
}

int fw_dp_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	struct fake_dp *f = fake_of(dp);

	fmap_prune(&f->learned, subject_alive, dead);
	fmap_prune(&f->conns, subject_alive, dead);
	fmap_prune(&f->ports, subject_alive, dead);
	fmap_prune(&f->lports, subject_alive, dead);
	fmap_prune(&f->lnames, subject_alive, dead);
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		if (!dead[id])
			continue;
		f->counts[id] = 0;
		fw_dp_rules_clear(dp, id);
	}
	return 0;
}

int fw_recs_push(struct fw_recs *r, const void *rec)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		char *grown = realloc(r->data, nc * r->size);

		if (!grown)
			return -ENOMEM;
		r->data = grown;
		r->cap = nc;
	}
	memcpy(r->data + r->n++ * r->size, rec, r->size);
	return 0;
}
