// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The subject registry. See subjects.h.
 *
 * Locking: r->lock guards the name table, by_id, id reservations, every
 * entry's refs, addrs and naddrs, and all writes to fastwall_dispatch (an
 * address changes owner only under it). e->op serialises the changes to
 * one subject; kernel work other than dispatch (rule tries, learned
 * flushes) runs under e->op alone, so subjects proceed in parallel. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/hash.h"
#include "common/log.h"
#include "datapath/bandwidth.h"
#include "datapath/cgroup.h"
#include "datapath/dispatch.h"
#include "datapath/rules.h"
#include "datapath/scan.h"
#include "datapath/stats.h"
#include "subjects/registry.h"

__u64 fw_binding_hash(const struct fw_subject_spec *spec)
{
	__u64 h = FW_FNV_BASIS;

	h = fw_fnv(h, spec->addrs, sizeof(spec->addrs[0]) * spec->naddrs);
	h = fw_fnv(h, spec->ifname, strnlen(spec->ifname, sizeof(spec->ifname)));
	for (int f = 0; f < FW_FAM_MAX; f++) {
		h = fw_fnv(h, &spec->has_gateway[f], sizeof(spec->has_gateway[f]));
		if (spec->has_gateway[f])
			h = fw_fnv(h, &spec->gateway[f], sizeof(spec->gateway[f]));
		h = fw_fnv(h, &spec->has_private[f], sizeof(spec->has_private[f]));
		if (spec->has_private[f])
			h = fw_fnv(h, &spec->private_net[f], sizeof(spec->private_net[f]));
	}
	/* only when set: the hashes of address subjects stay what they were */
	if (spec->cgroup_id)
		h = fw_fnv(h, &spec->cgroup_id, sizeof(spec->cgroup_id));
	return h;
}

__u64 fw_fence_hash(const char *runtime_instance_id, const char *attachment_id)
{
	/* the NUL keeps ("ab", "c") apart from ("a", "bc") */
	__u64 h = fw_fnv(FW_FNV_BASIS, runtime_instance_id, strlen(runtime_instance_id) + 1);

	h = fw_fnv(h, attachment_id, strlen(attachment_id));
	return h ? h : 1; /* 0 means "no fence" */
}

/* ---- the dispatch owners (registry.h) ----------------------------------- */

static void owners_set(struct fw_registry *r, const struct fw_ip *a, __u32 id)
{
	if (!id)
		return; /* what an absent address reads as, too */
	if (!r->owners_lost && fw_iptab_set(&r->owners, a, id)) {
		fw_iptab_free(&r->owners); /* the kernel is asked instead */
		r->owners_lost = true;
	}
}

/* fw_dp_dispatch_put, and the owners after it (registry lock held, or
 * the registry not shared yet). */
static int dispatch_put(struct fw_registry *r, const struct fw_ip *a, const struct fw_subject *ks)
{
	int err = fw_dp_dispatch_put(r->dp, a, ks);

	if (!err)
		owners_set(r, a, ks->id);
	return err;
}

/* fw_dp_dispatch_del: a's dispatch removed if it still sends to id. */
static int dispatch_del(struct fw_registry *r, const struct fw_ip *a, __u32 id)
{
	int err;

	if (r->owners_lost)
		return fw_dp_dispatch_del(r->dp, a, id);
	if (fw_iptab_get(&r->owners, a) != id)
		return 0; /* a newer owner (or nobody): left alone */
	err = fw_dp_dispatch_drop(r->dp, a);
	if (!err)
		fw_iptab_del(&r->owners, a);
	return err;
}

static unsigned int bucket(const char *name)
{
	return (unsigned int)(fw_fnv(FW_FNV_BASIS, name, strnlen(name, FW_NAME_LEN)) %
			      FW_REG_BUCKETS);
}

static __u32 resolve_ifindex(const char *ifname)
{
	unsigned int idx;

	if (!ifname[0])
		return FW_IFINDEX_ANY;
	idx = if_nametoindex(ifname);
	return idx ? idx : FW_IFINDEX_MISSING;
}

__u8 fw_reg_l7_flags(const struct fw_registry *r, const struct fw_subject_spec *spec)
{
	bool on;

	if (!r->l7_enabled)
		return 0;
	on = spec->policy.l7 == FW_POLICY_L7_DEFAULT ? r->l7_default_on
						     : spec->policy.l7 == FW_POLICY_L7_ON;
	if (!on)
		return 0;
	return FW_SF_L7 | (r->l7_cidr_pin ? FW_SF_L7_CIDR : 0);
}

static void build_ksub(const struct fw_registry *r, struct fw_subject *k, __u32 id,
		       const struct fw_subject_spec *spec)
{
	memset(k, 0, sizeof(*k));
	k->id = id;
	k->flags = fw_reg_l7_flags(r, spec);
	if (fw_policy_bw_rate(&spec->policy))
		k->flags |= FW_SF_BW;
	k->state = spec->state;
	k->ifindex = resolve_ifindex(spec->ifname);
	for (int f = 0; f < FW_FAM_MAX; f++) {
		if (spec->has_gateway[f]) {
			k->flags |= f == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
			k->gateway[f] = spec->gateway[f];
		}
		if (spec->has_private[f]) {
			k->private_net[f] = spec->private_net[f].net;
			k->private_plen[f] = spec->private_net[f].plen;
		}
	}
}

static struct fw_entry *lookup_locked(struct fw_registry *r, const char *name)
{
	struct fw_entry *e;

	for (e = r->names[bucket(name)]; e; e = e->next)
		if (strncmp(e->meta.name, name, FW_NAME_LEN) == 0)
			return e;
	return NULL;
}

static struct fw_entry *entry_new(struct fw_registry *r, const char *name)
{
	struct fw_entry *e = calloc(1, sizeof(*e));
	unsigned int b;

	if (!e)
		return NULL;
	pthread_mutex_init(&e->op, NULL);
	snprintf(e->meta.name, sizeof(e->meta.name), "%s", name);
	b = bucket(e->meta.name);
	e->next = r->names[b];
	r->names[b] = e;
	return e;
}

static void run_policy_drop(struct fw_entry *e)
{
	if (!e->run_policy)
		return;
	fw_policy_free(e->run_policy);
	free(e->run_policy);
	e->run_policy = NULL;
}

int fw_reg_set_run_policy(struct fw_entry *e, const struct fw_policy *policy)
{
	struct fw_policy *copy = calloc(1, sizeof(*copy));

	if (!copy)
		return -ENOMEM;
	fw_policy_init(copy);
	if (fw_policy_copy(copy, policy)) {
		fw_policy_free(copy);
		free(copy);
		return -ENOMEM;
	}
	run_policy_drop(e);
	e->run_policy = copy;
	return 0;
}

static void entry_unlink_locked(struct fw_registry *r, struct fw_entry *e)
{
	struct fw_entry **pp;

	for (pp = &r->names[bucket(e->meta.name)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	fw_compiled_set_free(&e->live);
	run_policy_drop(e);
	pthread_mutex_destroy(&e->op);
	free(e);
}

static __u32 reserve_id_locked(struct fw_registry *r)
{
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		if (!r->id_reserved[id]) {
			r->id_reserved[id] = true;
			r->id_gen[id]++;
			return id;
		}
	}
	return 0;
}

static bool ports_live(__u32 id, __u32 *gen, const void *ctx)
{
	const struct fw_registry *r = ctx;

	if (id == 0 || id >= FW_MAX_SUBJECTS || !r->by_id[id])
		return false;
	*gen = r->by_id[id]->meta.port_state & FW_PORTSET_GEN;
	return true;
}

/* A process subject's DNS proxy address, 127.254.0.0/16 + id, v4-mapped
 * (fastwall/abi.h): its queries go there and the proxy attributes them
 * by it. A dispatch entry, not one of the subject's addresses. */
static struct fw_ip cg_alias(__u32 id)
{
	struct fw_ip a = {0};

	FW_IP_W(&a)[2] = htonl(0xffff);
	FW_IP_W(&a)[3] = htonl(FW_CG_DNS_ALIAS_NET | (id & 0xffff));
	return a;
}

static bool is_cg_alias(const struct fw_ip *a)
{
	return FW_IP_W(a)[0] == 0 && FW_IP_W(a)[1] == 0 && FW_IP_W(a)[2] == htonl(0xffff) &&
	       (ntohl(FW_IP_W(a)[3]) & 0xffff0000u) == FW_CG_DNS_ALIAS_NET;
}

/* The alias dispatches to ks, but on no interface: no packet of a
 * sandbox port can claim it. */
static int alias_put(struct fw_registry *r, const struct fw_subject *ks)
{
	struct fw_subject a = *ks;
	struct fw_ip addr = cg_alias(ks->id);

	a.ifindex = FW_IFINDEX_MISSING;
	return dispatch_put(r, &addr, &a);
}

static void alias_del(struct fw_registry *r, __u32 id)
{
	struct fw_ip addr = cg_alias(id);

	dispatch_del(r, &addr, id);
}

struct adopt_ctx {
	struct fw_registry *r;
	size_t nretired;
	struct fw_recs stale;	 /* struct stale_addr: dispatch to nobody */
	struct fw_recs stale_cg; /* struct stale_cgroup */
};

struct stale_addr {
	struct fw_ip addr;
	__u32 id;
};

static int adopt_meta(const void *key, const void *val, void *ctx)
{
	struct adopt_ctx *a = ctx;
	struct fw_registry *r = a->r;
	struct fw_subject_meta meta;
	struct fw_entry *e;
	__u32 id;

	memcpy(&id, key, sizeof(id));
	memcpy(&meta, val, sizeof(meta));
	if (id == 0 || id >= FW_MAX_SUBJECTS || r->by_id[id])
		return 0;
	if (meta.origin == FW_ORIGIN_RETIRED) {
		a->nretired++; /* removed before the restart, not reaped yet */
		return 0;
	}
	meta.name[FW_NAME_LEN - 1] = '\0';
	meta.ifname[sizeof(meta.ifname) - 1] = '\0';
	if (lookup_locked(r, meta.name))
		return 0; /* a duplicate name: the first one wins */
	e = entry_new(r, meta.name);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->meta = meta;
	e->pinned_domains = fw_dp_domains_get(r->dp, id);
	e->adopted = true;
	r->by_id[id] = e;
	r->id_reserved[id] = true;
	r->count++;
	return 0;
}

static int adopt_dispatch(const void *key, const void *val, void *ctx)
{
	struct adopt_ctx *a = ctx;
	struct fw_subject ks;
	struct fw_entry *e;
	struct fw_ip addr;

	memcpy(&addr, key, sizeof(addr));
	memcpy(&ks, val, sizeof(ks));
	owners_set(a->r, &addr, ks.id);
	e = ks.id < FW_MAX_SUBJECTS ? a->r->by_id[ks.id] : NULL;
	if (!e) {
		/* an address nobody owns any more: fail closed by removing it
		 * (after the scan, which a delete would disturb) */
		struct stale_addr st = {.addr = addr, .id = ks.id};

		return fw_recs_push(&a->stale, &st);
	}
	if (is_cg_alias(&addr))
		return 0; /* a process subject's DNS proxy address, not its own */
	e->ksub = ks;
	if (e->naddrs < FW_SUBJECT_MAX_ADDRS)
		e->addrs[e->naddrs++] = addr;
	return 0;
}

struct stale_cgroup {
	__u64 cgid;
	__u32 id;
	__u32 pad;
};

static int adopt_cgroup(const void *key, const void *val, void *ctx)
{
	struct adopt_ctx *a = ctx;
	struct stale_cgroup st = {};
	struct fw_subject ks;
	struct fw_entry *e;

	memcpy(&st.cgid, key, sizeof(st.cgid));
	memcpy(&ks, val, sizeof(ks));
	e = ks.id < FW_MAX_SUBJECTS ? a->r->by_id[ks.id] : NULL;
	if (!e || e->cgroup_id) {
		st.id = ks.id; /* nobody's (or a second one): fail closed, remove it */
		return fw_recs_push(&a->stale_cg, &st);
	}
	e->ksub = ks;
	e->cgroup_id = st.cgid;
	return 0;
}

int fw_reg_init(struct fw_registry *r, struct fw_dp *dp)
{
	struct adopt_ctx a = {.r = r,
			      .stale.size = sizeof(struct stale_addr),
			      .stale_cg.size = sizeof(struct stale_cgroup)};
	const struct stale_cgroup *stale_cg;
	const struct stale_addr *stale;
	int err;
	__u32 id;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->reap_lock, NULL);
	fw_policy_init(&r->overlay);
	r->dp = dp;
	r->owners_lost = fw_iptab_init(&r->owners, FW_MAX_ADDRS) != 0;

	err = fw_dp_meta_scan(dp, adopt_meta, &a);
	if (!err)
		err = fw_dp_dispatch_scan(dp, adopt_dispatch, &a);
	stale = (const struct stale_addr *)a.stale.data;
	for (size_t i = 0; !err && i < a.stale.n; i++)
		dispatch_del(r, &stale[i].addr, stale[i].id);
	free(a.stale.data);
	if (!err)
		err = fw_dp_cgroup_scan(dp, adopt_cgroup, &a);
	stale_cg = (const struct stale_cgroup *)a.stale_cg.data;
	for (size_t i = 0; !err && i < a.stale_cg.n; i++)
		fw_dp_cgroup_del(dp, stale_cg[i].cgid, stale_cg[i].id);
	free(a.stale_cg.data);
	if (err)
		return err;
	if (r->count)
		fw_info("adopted %zu subjects from pinned maps", r->count);
	if (a.nretired)
		fw_info("%zu removed subjects still to be reaped", a.nretired);
	/* No id is handed out before the reaper has emptied it: those retired
	 * before the restart, and any other unbound id too, since a release
	 * cut short by an older version or a foreign write may have left
	 * learned addresses under it. The first reap, one scan of each map,
	 * runs once the daemon is ready (or at the first add, if sooner). */
	for (id = 1; id < FW_MAX_SUBJECTS; id++) {
		if (r->by_id[id])
			continue;
		r->id_reserved[id] = true;
		r->id_dead[id] = true;
		r->dead_ns[id] = 0;
		r->ndead++;
	}
	err = fw_dp_ports_sweep(dp, ports_live, r);
	return err;
}

void fw_reg_free(struct fw_registry *r)
{
	if (!r->dp)
		return;
	for (int b = 0; b < FW_REG_BUCKETS; b++) {
		while (r->names[b]) {
			struct fw_entry *e = r->names[b];

			r->names[b] = e->next;
			if (e->priv && r->priv_free)
				r->priv_free(e->priv);
			fw_compiled_set_free(&e->live);
			fw_domain_policy_put(e->domains);
			run_policy_drop(e);
			pthread_mutex_destroy(&e->op);
			free(e);
		}
	}
	fw_policy_free(&r->overlay);
	fw_iptab_free(&r->owners);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->reap_lock);
	memset(r, 0, sizeof(*r));
}

struct fw_entry *fw_reg_get(struct fw_registry *r, const char *name, bool create)
{
	struct fw_entry *e;

	if (!name[0] || strnlen(name, FW_NAME_LEN) >= FW_NAME_LEN)
		return NULL;
	pthread_mutex_lock(&r->lock);
	e = lookup_locked(r, name);
	if (!e && create)
		e = entry_new(r, name);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&r->lock);
	if (e)
		pthread_mutex_lock(&e->op);
	return e;
}

void fw_reg_put(struct fw_registry *r, struct fw_entry *e)
{
	pthread_mutex_unlock(&e->op);
	pthread_mutex_lock(&r->lock);
	if (--e->refs == 0 && e->id == 0 && !e->priv)
		entry_unlink_locked(r, e);
	pthread_mutex_unlock(&r->lock);
}

struct fw_entry *fw_reg_find(struct fw_registry *r, const char *name)
{
	struct fw_entry *e;

	pthread_mutex_lock(&r->lock);
	e = lookup_locked(r, name);
	pthread_mutex_unlock(&r->lock);
	return e;
}

int fw_reg_set_overlay(struct fw_registry *r, const struct fw_policy *overlay)
{
	struct fw_policy copy, old;
	int err;

	fw_policy_init(&copy);
	if (overlay) {
		err = fw_policy_copy(&copy, overlay);
		if (err)
			return err;
	}
	pthread_mutex_lock(&r->lock);
	old = r->overlay;
	r->overlay = copy;
	pthread_mutex_unlock(&r->lock);
	fw_policy_free(&old);
	return 0;
}

void fw_reg_name_of(struct fw_registry *r, __u32 id, char *buf, size_t len)
{
	pthread_mutex_lock(&r->lock);
	if (id < FW_MAX_SUBJECTS && r->by_id[id])
		snprintf(buf, len, "%s", r->by_id[id]->meta.name);
	else if (len)
		buf[0] = '\0';
	pthread_mutex_unlock(&r->lock);
}

size_t fw_reg_count(struct fw_registry *r)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = r->count;
	pthread_mutex_unlock(&r->lock);
	return n;
}

struct fw_reg_live *fw_reg_live_subjects(struct fw_registry *r, size_t *n)
{
	struct fw_reg_live *v;
	size_t k = 0;

	*n = 0;
	pthread_mutex_lock(&r->lock);
	v = r->count ? calloc(r->count, sizeof(*v)) : NULL;
	for (__u32 id = 1; v && id < FW_MAX_SUBJECTS && k < r->count; id++) {
		const struct fw_entry *e = r->by_id[id];

		if (!e || e->id != id)
			continue;
		v[k].id = id;
		snprintf(v[k].name, sizeof(v[k].name), "%s", e->meta.name);
		k++;
	}
	pthread_mutex_unlock(&r->lock);
	if (!k) {
		free(v);
		return NULL;
	}
	*n = k;
	return v;
}

void fw_domain_policy_put(struct fw_domain_policy *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		fw_policy_free(&d->policy);
		free(d);
	}
}

struct fw_domain_policy *fw_reg_domains(struct fw_registry *r, __u32 id)
{
	struct fw_domain_policy *d = NULL;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return NULL;
	pthread_mutex_lock(&r->lock);
	if (r->by_id[id] && r->by_id[id]->id == id)
		d = r->by_id[id]->domains;
	if (d)
		__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&r->lock);
	return d;
}

static bool is_domain_rule(const struct fw_policy_rule *rule)
{
	return rule->kind == FW_TARGET_DOMAIN || rule->kind == FW_TARGET_WILDCARD;
}

static __u64 domain_rules_hash(__u64 h, const struct fw_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++) {
		const struct fw_policy_rule *rule = &p->rules[i];

		if (!is_domain_rule(rule))
			continue;
		h = fw_fnv(h, &rule->action, sizeof(rule->action));
		h = fw_fnv(h, &rule->kind, sizeof(rule->kind));
		h = fw_fnv(h, rule->domain, strlen(rule->domain) + 1);
		h = fw_fnv(h, &rule->nports, sizeof(rule->nports));
		if (rule->nports)
			h = fw_fnv(h, rule->ports, rule->nports * sizeof(rule->ports[0]));
	}
	return h;
}

static int add_domain_rules(struct fw_policy *dst, const struct fw_policy *src)
{
	for (size_t i = 0; i < src->nrules; i++) {
		if (!is_domain_rule(&src->rules[i]))
			continue;
		int err = fw_policy_rule_copy(&dst->rules[dst->nrules], &src->rules[i]);

		if (err)
			return err;
		dst->nrules++;
	}
	return 0;
}

/* Builds the domain policy of spec behind overlay; *out is NULL when it
 * equals cur (nothing to publish). */
static int domains_build(const struct fw_policy *overlay, const struct fw_subject_spec *spec,
			 const struct fw_domain_policy *cur, struct fw_domain_policy **out)
{
	struct fw_domain_policy *d;
	__u64 h = FW_FNV_BASIS;
	size_t n = overlay->nrules + spec->policy.nrules;
	int err;

	*out = NULL;
	h = fw_fnv(h, &spec->state, sizeof(spec->state));
	h = fw_fnv(h, &spec->policy.default_action, sizeof(spec->policy.default_action));
	h = domain_rules_hash(h, overlay);
	h = fw_fnv(h, "|", 1);
	h = domain_rules_hash(h, &spec->policy);
	if (cur && cur->hash == h)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	fw_policy_init(&d->policy);
	d->policy.rules = calloc(n ? n : 1, sizeof(*d->policy.rules));
	if (!d->policy.rules) {
		free(d);
		return -ENOMEM;
	}
	d->policy.default_action = spec->policy.default_action;
	err = add_domain_rules(&d->policy, overlay);
	if (!err)
		err = add_domain_rules(&d->policy, &spec->policy);
	if (err) {
		fw_policy_free(&d->policy);
		free(d);
		return err;
	}
	d->refs = 1;
	d->state = spec->state;
	d->hash = h;
	*out = d;
	return 0;
}

/* Publishes d (may be NULL: nothing changed) for e under the registry lock;
 * tells the DNS side when the same id's policy changed. */
static void domains_publish(struct fw_registry *r, struct fw_entry *e, struct fw_domain_policy *d,
			    bool same_id)
{
	struct fw_domain_policy *old;

	if (!d)
		return;
	pthread_mutex_lock(&r->lock);
	old = e->domains;
	e->domains = d;
	pthread_mutex_unlock(&r->lock);
	fw_domain_policy_put(old);
	if (same_id && old && r->on_domains)
		r->on_domains(r->hook_ctx, e->id);
}

static bool has_addr(const struct fw_ip *addrs, size_t n, const struct fw_ip *a)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&addrs[i], a, sizeof(*a)) == 0)
			return true;
	return false;
}

static void drop_addr_locked(struct fw_entry *o, const struct fw_ip *a)
{
	for (size_t i = 0; i < o->naddrs; i++) {
		if (memcmp(&o->addrs[i], a, sizeof(*a)) == 0) {
			o->addrs[i] = o->addrs[--o->naddrs];
			return;
		}
	}
}

/* The other subject that dispatch sends a to, or NULL (lock held). */
static struct fw_entry *addr_owner_locked(struct fw_registry *r, const struct fw_ip *a)
{
	struct fw_subject cur;

	if (!r->owners_lost)
		cur.id = fw_iptab_get(&r->owners, a);
	else if (fw_dp_dispatch_lookup(r->dp, a, &cur))
		return NULL;
	return cur.id < FW_MAX_SUBJECTS ? r->by_id[cur.id] : NULL;
}

int fw_reg_addr_owner(struct fw_registry *r, const struct fw_ip *a, char *name, size_t len,
		      enum fw_origin *origin)
{
	struct fw_entry *o;
	int ret = -ENOENT;

	pthread_mutex_lock(&r->lock);
	o = addr_owner_locked(r, a);
	if (o && o->id) {
		snprintf(name, len, "%s", o->meta.name);
		*origin = (enum fw_origin)o->meta.origin;
		ret = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* Points addrs at ks; held gets the addresses e holds afterwards. With
 * takeover (a new binding: it wins), an address another subject holds is
 * taken over and leaves that subject's list, so the old subject's later
 * updates or removal never touch it again; without (the same binding
 * applied again), only addresses nobody holds are (re)claimed. Either way
 * the static configuration owns its addresses: a protocol subject (origin
 * not static) never takes one from a static subject. */
static int claim_addrs_locked(struct fw_registry *r, struct fw_entry *e, const struct fw_ip *addrs,
			      size_t n, const struct fw_subject *ks, __u32 origin, bool takeover,
			      struct fw_ip held[FW_SUBJECT_MAX_ADDRS], size_t *nheld)
{
	*nheld = 0;
	for (size_t i = 0; i < n; i++) {
		struct fw_entry *o = addr_owner_locked(r, &addrs[i]);
		char buf[FW_ADDR_STRLEN];
		int err;

		/* the process subjects' DNS proxy addresses are no one's to claim */
		if (is_cg_alias(&addrs[i])) {
			fw_warn("subject %s: address %s is reserved (127.254.0.0/16)",
				e->meta.name[0] ? e->meta.name : "?",
				fw_addr_str(&addrs[i], buf, sizeof(buf)));
			continue;
		}

		if (o && o != e && o->id && o->id != ks->id) {
			if (o->meta.origin == FW_ORIGIN_STATIC && origin != FW_ORIGIN_STATIC) {
				fw_warn("subject %s: address %s stays with static subject %s",
					e->meta.name[0] ? e->meta.name : "?",
					fw_addr_str(&addrs[i], buf, sizeof(buf)), o->meta.name);
				continue;
			}
			if (!takeover)
				continue;
			fw_info("address %s moves from %s to %s",
				fw_addr_str(&addrs[i], buf, sizeof(buf)), o->meta.name,
				e->meta.name);
			drop_addr_locked(o, &addrs[i]);
		}
		err = dispatch_put(r, &addrs[i], ks);
		if (err)
			return err;
		held[(*nheld)++] = addrs[i];
	}
	return 0;
}

/* Points cgroup cgid at ks (0: none) and removes e's previous cgroup, if
 * another; registry lock held. */
static int cgroup_claim(struct fw_registry *r, struct fw_entry *e, __u64 cgid,
			const struct fw_subject *ks)
{
	int err = 0;

	if (cgid)
		err = fw_dp_cgroup_put(r->dp, cgid, ks);
	if (!err && cgid)
		err = alias_put(r, ks);
	if (err)
		return err;
	if (!cgid && e->cgroup_id)
		alias_del(r, e->id);
	if (e->cgroup_id && e->cgroup_id != cgid)
		fw_dp_cgroup_del(r->dp, e->cgroup_id, e->id);
	e->cgroup_id = cgid;
	e->ksub = *ks;
	return 0;
}

int fw_reg_cgroup_owner(struct fw_registry *r, __u64 cgid, char *name, size_t len, __u32 *id)
{
	int err = -ENOENT;

	pthread_mutex_lock(&r->lock);
	for (__u32 i = 1; cgid && i < FW_MAX_SUBJECTS; i++) {
		struct fw_entry *e = r->by_id[i];

		if (e && e->id == i && e->cgroup_id == cgid) {
			snprintf(name, len, "%s", e->meta.name);
			if (id)
				*id = i;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* Retires id once nothing dispatches to it any more: its rule trie goes,
 * its metadata says retired (so a restart does not reuse it either), and
 * the id stays reserved until fw_reg_reap() has deleted its learned
 * addresses, connection records and port exceptions. A constant number of
 * map operations, whatever the size of the maps. */
static void retire_id(struct fw_registry *r, __u32 id, const char *name)
{
	struct fw_subject_meta m = {.origin = FW_ORIGIN_RETIRED};
	int err;

	/* a failure leaves something unreachable behind, nothing more: the
	 * reaper deletes the metadata in any case. Its rules go after a grace
	 * period (a packet that read its dispatch value just before may still
	 * be reading them), and the reaper deletes whatever is left */
	snprintf(m.name, sizeof(m.name), "%s", name);
	err = fw_dp_meta_put(r->dp, id, &m);
	if (err)
		fw_err("subject %s: can't mark id %u retired: %s", name, id, strerror(-err));
	fw_dp_rules_release(r->dp, id);
	fw_dp_bandwidth_set(r->dp, id, 0, 0);
	/* retired in any case: nothing dispatches to it any more, and the
	 * reaper deletes what is left before the id is handed out again */
	pthread_mutex_lock(&r->lock);
	if (r->by_id[id] && r->by_id[id]->id != id)
		r->by_id[id] = NULL;
	if (!r->id_dead[id]) {
		r->id_dead[id] = true;
		r->ndead++;
	}
	r->dead_ns[id] = fw_now_ns();
	pthread_mutex_unlock(&r->lock);
	/* after the id reads as retired: whatever the learner still adopts
	 * for it, this drops */
	if (r->on_release)
		r->on_release(r->hook_ctx, id);
}

int fw_reg_reap(struct fw_registry *r, __u64 min_age_ns)
{
	bool *doomed = NULL;
	__u64 now = fw_now_ns(), t0;
	int n = 0, err = 0;

	pthread_mutex_lock(&r->reap_lock);
	pthread_mutex_lock(&r->lock);
	if (r->ndead) {
		doomed = calloc(FW_MAX_SUBJECTS, sizeof(*doomed));
		if (!doomed)
			err = -ENOMEM;
		for (__u32 id = 1; doomed && id < FW_MAX_SUBJECTS; id++) {
			if (r->id_dead[id] && now - r->dead_ns[id] >= min_age_ns) {
				doomed[id] = true;
				n++;
			}
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (!n || err)
		goto out;
	/* nothing can add to these ids any more: no dispatch entry points at
	 * them, the learner forgot them, and packets that looked them up
	 * before they retired have long been processed */
	t0 = fw_now_ns();
	err = fw_dp_reap(r->dp, doomed);
	if (err) {
		fw_err("can't reap %d removed subjects: %s", n, strerror(-err));
		goto out;
	}
	fw_info("reaper: %d subject ids emptied and freed in %llu ms", n,
		(unsigned long long)((fw_now_ns() - t0) / 1000000));
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		if (!doomed[id])
			continue;
		if (fw_dp_meta_del(r->dp, id)) {
			doomed[id] = false; /* stays retired; the next round retries */
			n--;
			continue;
		}
		if (r->on_reap)
			r->on_reap(r->hook_ctx, id);
		pthread_mutex_lock(&r->lock);
		r->id_dead[id] = false;
		r->ndead--;
		r->id_reserved[id] = false;
		pthread_mutex_unlock(&r->lock);
	}
out:
	pthread_mutex_unlock(&r->reap_lock);
	free(doomed);
	return err ? err : n;
}

int fw_reg_id_state(struct fw_registry *r, __u32 id, __u32 *gen)
{
	int st = 0;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return 0;
	pthread_mutex_lock(&r->lock);
	if (r->id_dead[id])
		st = -1;
	else if (r->by_id[id] && r->by_id[id]->id == id)
		st = 1;
	if (gen)
		*gen = r->id_gen[id];
	pthread_mutex_unlock(&r->lock);
	return st;
}

static __u64 domains_hash(struct fw_registry *r, const struct fw_entry *e)
{
	__u64 h;

	pthread_mutex_lock(&r->lock);
	h = e->domains ? e->domains->hash : 0;
	pthread_mutex_unlock(&r->lock);
	return h;
}

/* The digest of e's domain rules before an apply: an adopted subject's as
 * the pins recorded it (0 when they do not say: pins of a version before
 * fastwall_subject_domains). */
static __u64 old_domains_of(struct fw_registry *r, const struct fw_entry *e)
{
	__u64 h = domains_hash(r, e);

	return h || !e->adopted ? h : e->pinned_domains;
}

/* Records e's domain digest for the next start to compare. */
static void domains_pin(struct fw_registry *r, struct fw_entry *e, bool new_id)
{
	__u64 h = domains_hash(r, e);
	int err;

	if (!new_id && h == e->pinned_domains)
		return;
	err = fw_dp_domains_put(r->dp, e->id, h);
	if (err)
		fw_warn("subject %s: can't record its domains' digest (a restart will say it "
			"updated): %s",
			e->meta.name, strerror(-err));
	else
		e->pinned_domains = h;
}

static void note_change(struct fw_registry *r, const struct fw_entry *e, const char *what,
			__u32 old_id, __u64 old_policy, __u64 old_domains, __u64 fence_hash,
			__u8 state)
{
	struct fw_reg_change c = {
		.old_domains = old_domains,
		.domains = domains_hash(r, e),
		.name = e->meta.name,
		.what = what,
		.old_id = old_id,
		.id = e->id,
		.fence_hash = fence_hash,
		.old_policy = old_policy,
		.policy = e->meta.policy_hash,
		.state = state,
		.origin = (enum fw_origin)e->meta.origin,
	};

	if (r->on_change)
		r->on_change(r->change_ctx, &c);
}

int fw_reg_unbind(struct fw_registry *r, struct fw_entry *e)
{
	__u32 id = e->id;
	__u64 old_policy = e->meta.policy_hash, fence = e->meta.fence_hash;
	__u64 old_domains = old_domains_of(r, e);
	int err = 0;

	if (!id)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < e->naddrs && !err; i++)
		err = dispatch_del(r, &e->addrs[i], id);
	if (!err && e->cgroup_id) {
		err = fw_dp_cgroup_del(r->dp, e->cgroup_id, id);
		alias_del(r, id);
	}
	if (!err) {
		e->cgroup_id = 0;
		e->naddrs = 0;
		r->by_id[id] = NULL;
		r->count--;
		e->id = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (err) {
		fw_err("subject %s: can't remove dispatch: %s", e->meta.name, strerror(-err));
		return err;
	}
	/* from here on the subject is gone for traffic (its addresses are
	 * unknown sources); what retire_id could not delete, the reaper does */
	retire_id(r, id, e->meta.name);
	fw_info("subject %s: removed (id %u)", e->meta.name, id);
	memset(&e->ksub, 0, sizeof(e->ksub));
	e->meta.binding_hash = e->meta.policy_hash = e->meta.fence_hash = 0;
	e->meta.port_state = 0;
	e->bw_rate = e->bw_burst = 0;
	e->bw_known = false;
	fw_compiled_set_free(&e->live);
	run_policy_drop(e);
	e->adopted = false;
	pthread_mutex_lock(&r->lock);
	fw_domain_policy_put(e->domains);
	e->domains = NULL;
	pthread_mutex_unlock(&r->lock);
	note_change(r, e, "removed", id, old_policy, old_domains, fence, e->ksub.state);
	return 0;
}

/* Remembers set as the live trie's content (a copy). */
static void remember_live(struct fw_entry *e, const struct fw_compiled_set *set)
{
	struct fw_compiled_set copy = {};

	fw_compiled_set_free(&e->live);
	copy.entries = malloc((set->n ? set->n : 1) * sizeof(*copy.entries));
	copy.ports = malloc((set->nports ? set->nports : 1) * sizeof(*copy.ports));
	if (!copy.entries || !copy.ports) {
		fw_compiled_set_free(&copy);
		return; /* unknown: the next change swaps the whole trie */
	}
	if (set->n)
		memcpy(copy.entries, set->entries, set->n * sizeof(*copy.entries));
	if (set->nports)
		memcpy(copy.ports, set->ports, set->nports * sizeof(*copy.ports));
	copy.n = set->n;
	copy.nports = set->nports;
	e->live = copy;
}

/* Same identity: change the rules and update the binding in place. */
static int apply_in_place(struct fw_registry *r, struct fw_entry *e,
			  const struct fw_subject_spec *spec, const struct fw_compiled_set *set,
			  __u64 phash, __u64 bhash, __u32 origin, bool *changed)
{
	struct fw_ip held[FW_SUBJECT_MAX_ADDRS];
	struct fw_subject ks;
	bool swapped = false, cg_write, answers_stale;
	__u32 old_ports = 0;
	size_t nheld;
	int err = 0;

	/* a denying subject drops everything before its rules are read: its
	 * rule set is written when it turns active, not before */
	if (e->meta.policy_hash != phash && spec->state == FW_STATE_ACTIVE) {
		/* what the live rules hold: the compiled set last written
		 * (unknown before the first write); the data path edits one
		 * entry in place or writes a new generation */
		old_ports = e->meta.port_state;
		err = fw_dp_policy_update(r->dp, e->id, e->meta.policy_hash ? &e->live : NULL, set,
					  &e->meta.port_state, &swapped);
		if (err) {
			fw_compiled_set_free(&e->live);
			return err;
		}
		remember_live(e, set);
		e->meta.policy_hash = phash;
		*changed = true;
	}
	/* the first apply after a start: the limit the pins hold, which a
	 * restart that changed nothing keeps, with its state */
	if (!e->bw_known && !fw_dp_bandwidth_get(r->dp, e->id, &e->bw_rate, &e->bw_burst))
		e->bw_known = true;
	/* a changed limit: its state starts afresh */
	if (!e->bw_known || e->bw_rate != fw_policy_bw_rate(&spec->policy) ||
	    (e->bw_rate && e->bw_burst != spec->policy.bw_burst)) {
		err = fw_dp_bandwidth_set(r->dp, e->id, fw_policy_bw_rate(&spec->policy),
					  spec->policy.bw_burst);
		if (err)
			return err;
		e->bw_rate = fw_policy_bw_rate(&spec->policy);
		e->bw_burst = spec->policy.bw_burst;
		e->bw_known = true;
		*changed = true;
	}
	build_ksub(r, &ks, e->id, spec);
	/* a new generation reaches the data plane with the dispatch rewrite
	 * below (every address of e: ks differs from e->ksub) */
	ks.rules_gen = fw_dp_rules_gen(r->dp, e->id);
	cg_write = spec->cgroup_id != e->cgroup_id ||
		   (spec->cgroup_id && memcmp(&ks, &e->ksub, sizeof(ks)) != 0);
	/* what TC ingress's cached answers passed besides the rules */
	answers_stale =
		memcmp(ks.private_net, e->ksub.private_net, sizeof(ks.private_net)) != 0 ||
		memcmp(ks.private_plen, e->ksub.private_plen, sizeof(ks.private_plen)) != 0 ||
		memcmp(ks.gateway, e->ksub.gateway, sizeof(ks.gateway)) != 0 ||
		((ks.flags ^ e->ksub.flags) &
		 (FW_SF_GATEWAY4 | FW_SF_GATEWAY6 | FW_SF_L7 | FW_SF_L7_CIDR));

	pthread_mutex_lock(&r->lock);
	if (e->meta.binding_hash != bhash) {
		/* new addresses first, then the ones that went: the subject is
		 * reachable by dispatch throughout */
		struct fw_ip old[FW_SUBJECT_MAX_ADDRS];
		size_t nold = e->naddrs;

		memcpy(old, e->addrs, sizeof(old[0]) * nold);
		err = claim_addrs_locked(r, e, spec->addrs, spec->naddrs, &ks, origin, true, held,
					 &nheld);
		if (!err) {
			for (size_t i = 0; i < nold; i++)
				if (!has_addr(held, nheld, &old[i]))
					dispatch_del(r, &old[i], e->id);
			memcpy(e->addrs, held, sizeof(held[0]) * nheld);
			e->naddrs = nheld;
			e->ksub = ks;
			*changed = true;
		}
	} else if (memcmp(&ks, &e->ksub, sizeof(ks)) != 0 || e->naddrs != spec->naddrs) {
		/* also when an address was taken from e: a static subject
		 * takes its own back, a protocol subject one that no static
		 * subject holds any more */
		err = claim_addrs_locked(r, e, spec->addrs, spec->naddrs, &ks, origin,
					 origin == FW_ORIGIN_STATIC, held, &nheld);
		if (!err) {
			*changed = *changed || nheld != e->naddrs ||
				   memcmp(&ks, &e->ksub, sizeof(ks)) != 0;
			memcpy(e->addrs, held, sizeof(held[0]) * nheld);
			e->naddrs = nheld;
			e->ksub = ks;
		}
	}
	if (!err && cg_write) {
		err = cgroup_claim(r, e, spec->cgroup_id, &ks);
		*changed = true;
	}
	pthread_mutex_unlock(&r->lock);
	/* dispatch names the new generation (or, after a failed write, some
	 * addresses fail closed until the retry rewrites them): the old one
	 * goes after a grace period */
	if (swapped)
		fw_dp_policy_retire(r->dp, e->id, old_ports);
	/* a cached answer was taken after the pod-local and sibling checks
	 * passed (TC ingress skips them on a hit): those of the old gateway
	 * or private CIDR end with the epoch, after every dispatch value has
	 * the new one */
	if (!err && answers_stale)
		err = fw_dp_rules_epoch_bump(r->dp);
	if (err)
		return err;
	e->meta.binding_hash = bhash;
	snprintf(e->meta.ifname, sizeof(e->meta.ifname), "%s", spec->ifname);
	return 0;
}

/* New identity: a fresh id, written completely before dispatch points at
 * it, then the old id (if any) released. */
static int apply_new_id(struct fw_registry *r, struct fw_entry *e,
			const struct fw_subject_spec *spec, const struct fw_compiled_set *set,
			struct fw_subject_meta *meta)
{
	struct fw_ip old[FW_SUBJECT_MAX_ADDRS], held[FW_SUBJECT_MAX_ADDRS];
	struct fw_subject ks;
	__u32 id, old_id;
	bool swapped;
	size_t nold, nheld;
	int err;

	pthread_mutex_lock(&r->lock);
	id = reserve_id_locked(r);
	pthread_mutex_unlock(&r->lock);
	if (!id && fw_reg_reap(r, 0) >= 0) {
		/* every free id was waiting for the reaper (this one, or one
		 * that was running already) */
		pthread_mutex_lock(&r->lock);
		id = reserve_id_locked(r);
		pthread_mutex_unlock(&r->lock);
	}
	if (!id) {
		fw_err("subject %s: no free subject id (limit %u)", spec->name,
		       FW_MAX_SUBJECTS - 1);
		return -ENOSPC;
	}
	/* a free id holds nothing: fw_reg_reap() emptied it before freeing
	 * it, and fw_learn_new() deleted what no id held at start */
	meta->port_state = 0;
	err = fw_dp_subject_reset(r->dp, id);
	/* the limit before dispatch names the id (and none left from before) */
	if (!err)
		err = fw_dp_bandwidth_set(r->dp, id, fw_policy_bw_rate(&spec->policy),
					  spec->policy.bw_burst);
	if (!err && spec->state == FW_STATE_ACTIVE)
		/* nothing to edit: a new generation */
		err = fw_dp_policy_update(r->dp, id, NULL, set, &meta->port_state, &swapped);
	else
		meta->policy_hash = 0; /* no rule set until it turns active */
	if (!err)
		err = fw_dp_meta_put(r->dp, id, meta);
	if (err)
		goto undo;
	build_ksub(r, &ks, id, spec);
	ks.rules_gen = fw_dp_rules_gen(r->dp, id);

	pthread_mutex_lock(&r->lock);
	err = claim_addrs_locked(r, e, spec->addrs, spec->naddrs, &ks, meta->origin, true, held,
				 &nheld);
	if (!err && spec->cgroup_id)
		err = fw_dp_cgroup_put(r->dp, spec->cgroup_id, &ks);
	if (!err && spec->cgroup_id)
		err = alias_put(r, &ks);
	if (err) {
		/* some addresses may point at the new id: retry converges */
		pthread_mutex_unlock(&r->lock);
		fw_err("subject %s: can't program dispatch: %s", spec->name, strerror(-err));
		goto undo_dispatch;
	}
	old_id = e->id;
	nold = e->naddrs;
	memcpy(old, e->addrs, sizeof(old[0]) * nold);
	for (size_t i = 0; i < nold && old_id; i++)
		if (!has_addr(held, nheld, &old[i]))
			dispatch_del(r, &old[i], old_id);
	if (old_id && e->cgroup_id && e->cgroup_id != spec->cgroup_id)
		fw_dp_cgroup_del(r->dp, e->cgroup_id, old_id);
	if (old_id && e->cgroup_id)
		alias_del(r, old_id);
	e->cgroup_id = spec->cgroup_id;
	if (old_id)
		r->by_id[old_id] = NULL;
	else
		r->count++;
	r->by_id[id] = e;
	e->id = id;
	e->ksub = ks;
	memcpy(e->addrs, held, sizeof(held[0]) * nheld);
	e->naddrs = nheld;
	pthread_mutex_unlock(&r->lock);

	e->meta = *meta;
	e->adopted = false;
	/* what fastwall_bandwidth holds for the new id (the old id's went
	 * with it, or goes in retire_id below) */
	e->bw_rate = fw_policy_bw_rate(&spec->policy);
	e->bw_burst = spec->policy.bw_burst;
	e->bw_known = true;
	fw_compiled_set_free(&e->live);
	if (spec->state == FW_STATE_ACTIVE)
		remember_live(e, set);
	if (old_id) {
		fw_info("subject %s: rebound (id %u -> %u)", spec->name, old_id, id);
		retire_id(r, old_id, spec->name); /* the rebind stands either way */
		return 0;
	}
	fw_info("subject %s: added (id %u, %s)", spec->name, id,
		spec->state == FW_STATE_ACTIVE ? "active" : "denying");
	return 0;

undo_dispatch:
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < spec->naddrs; i++)
		dispatch_del(r, &spec->addrs[i], id);
	if (spec->cgroup_id) {
		fw_dp_cgroup_del(r->dp, spec->cgroup_id, id);
		alias_del(r, id);
	}
	pthread_mutex_unlock(&r->lock);
undo:
	/* a query may have been learned for id while its dispatch was up */
	retire_id(r, id, spec->name);
	return err;
}

int fw_reg_apply(struct fw_registry *r, struct fw_entry *e, const struct fw_subject_spec *spec,
		 enum fw_origin origin, __u64 fence_hash, bool *changed)
{
	struct fw_subject_meta meta = {};
	struct fw_compiled_set set = {};
	struct fw_domain_policy *domains = NULL;
	struct fw_policy overlay;
	__u64 bhash, phash, old_policy = e->meta.policy_hash, old_domains = old_domains_of(r, e);
	__u32 old_id = e->id;
	bool dummy, same;
	int err;

	if (!changed)
		changed = &dummy;
	*changed = false;

	fw_policy_init(&overlay);
	pthread_mutex_lock(&r->lock);
	err = fw_policy_copy(&overlay, &r->overlay);
	pthread_mutex_unlock(&r->lock);
	if (!err)
		err = fw_policy_compile_set(&overlay, &spec->policy, &set);
	if (err) {
		fw_policy_free(&overlay);
		fw_err("subject %s: can't compile policy: %s", spec->name, strerror(-err));
		return err;
	}
	phash = fw_compiled_set_hash(&set);
	bhash = fw_binding_hash(spec);

	same = e->id && (fence_hash ? e->meta.fence_hash == fence_hash
				    : !e->meta.fence_hash && e->meta.binding_hash == bhash);
	if (same) {
		pthread_mutex_lock(&r->lock);
		err = domains_build(&overlay, spec, e->domains, &domains);
		pthread_mutex_unlock(&r->lock);
		if (!err)
			err = apply_in_place(r, e, spec, &set, phash, bhash, origin, changed);
		if (!err)
			domains_publish(r, e, domains, true);
		else
			fw_domain_policy_put(domains);
		if (!err) {
			bool meta_changed =
				e->adopted || e->meta.origin != (__u32)origin || *changed;

			e->adopted = false;
			e->meta.origin = origin;
			if (meta_changed)
				err = fw_dp_meta_put(r->dp, e->id, &e->meta);
		}
		goto out;
	}

	snprintf(meta.name, sizeof(meta.name), "%s", spec->name);
	snprintf(meta.ifname, sizeof(meta.ifname), "%s", spec->ifname);
	meta.binding_hash = bhash;
	meta.policy_hash = phash;
	meta.origin = origin;
	meta.fence_hash = fence_hash;
	err = domains_build(&overlay, spec, NULL, &domains);
	if (!err)
		err = apply_new_id(r, e, spec, &set, &meta);
	if (!err) {
		domains_publish(r, e, domains, false);
		*changed = true;
	} else {
		fw_domain_policy_put(domains);
	}
out:
	fw_policy_free(&overlay);
	fw_compiled_set_free(&set);
	if (!err && e->id)
		domains_pin(r, e, e->id != old_id);
	/* a change of domain rules alone changes nothing in the kernel */
	if (!err && (*changed || domains_hash(r, e) != old_domains))
		note_change(r, e,
			    !old_id	      ? "added"
			    : old_id != e->id ? "rebound"
					      : "updated",
			    old_id, old_policy, old_domains, fence_hash, spec->state);
	return err;
}

int fw_reg_upsert(struct fw_registry *r, const struct fw_subject_spec *spec, enum fw_origin origin,
		  bool *changed)
{
	struct fw_entry *e = fw_reg_get(r, spec->name, true);
	int err;

	if (!e)
		return -ENOMEM;
	err = fw_reg_apply(r, e, spec, origin, 0, changed);
	fw_reg_put(r, e);
	return err;
}

/* Names of the entries pick() selects, copied under the lock so the
 * caller can work on each without holding it. */
static char (*collect(struct fw_registry *r,
		      bool (*pick)(const struct fw_entry *e, const void *ctx), const void *ctx,
		      size_t *n))[FW_NAME_LEN]
{
	char(*names)[FW_NAME_LEN] = NULL;
	size_t cap = 0;

	*n = 0;
	pthread_mutex_lock(&r->lock);
	for (int b = 0; b < FW_REG_BUCKETS; b++) {
		for (struct fw_entry *e = r->names[b]; e; e = e->next) {
			if (!pick(e, ctx))
				continue;
			if (*n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				char(*grown)[FW_NAME_LEN] = realloc(names, ncap * FW_NAME_LEN);

				if (!grown)
					goto out;
				names = grown;
				cap = ncap;
			}
			memcpy(names[(*n)++], e->meta.name, FW_NAME_LEN);
		}
	}
out:
	pthread_mutex_unlock(&r->lock);
	return names;
}

static bool pick_static(const struct fw_entry *e, const void *ctx)
{
	(void)ctx;
	return e->id && e->meta.origin == FW_ORIGIN_STATIC;
}

int fw_reg_sync_static(struct fw_registry *r, const struct fw_policy *overlay,
		       const struct fw_subject_spec *subjects, size_t nsubjects, bool prune_adopted)
{
	char(*names)[FW_NAME_LEN];
	int err, ret = 0;
	size_t n;

	err = fw_reg_set_overlay(r, overlay);
	if (err)
		return err;
	for (size_t i = 0; i < nsubjects; i++) {
		struct fw_entry *e = fw_reg_get(r, subjects[i].name, true);

		if (!e) {
			ret = ret ? ret : -ENOMEM;
			continue;
		}
		if (e->id && e->meta.origin != FW_ORIGIN_STATIC && !e->adopted) {
			fw_err("static subject %s: the name is held by a protocol subject",
			       subjects[i].name);
			ret = ret ? ret : -EEXIST;
		} else {
			err = fw_reg_apply(r, e, &subjects[i], FW_ORIGIN_STATIC, 0, NULL);
			if (err && !ret)
				ret = err;
		}
		fw_reg_put(r, e);
	}

	names = collect(r, pick_static, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		bool wanted = false;
		struct fw_entry *e;

		for (size_t j = 0; j < nsubjects && !wanted; j++)
			wanted = strncmp(subjects[j].name, names[i], FW_NAME_LEN) == 0;
		e = fw_reg_get(r, names[i], false);
		if (!e)
			continue;
		/* apply() confirmed every wanted subject; what is still
		 * adopted here nobody has claimed */
		if (e->id && e->meta.origin == FW_ORIGIN_STATIC &&
		    (e->adopted ? prune_adopted : !wanted)) {
			err = fw_reg_unbind(r, e);
			if (err && !ret)
				ret = err;
		}
		fw_reg_put(r, e);
	}
	free(names);
	return ret;
}

static bool pick_protocol(const struct fw_entry *e, const void *ctx)
{
	(void)ctx;
	return e->id && e->meta.origin == FW_ORIGIN_ACTIONS;
}

char (*fw_reg_protocol_names(struct fw_registry *r, size_t *n))[FW_NAME_LEN]
{
	return collect(r, pick_protocol, NULL, n);
}

static bool pick_vault_holder(const struct fw_entry *e, const void *ctx)
{
	(void)ctx;
	return e->id && (e->meta.origin == FW_ORIGIN_ACTIONS ||
			 (e->meta.origin == FW_ORIGIN_PROCESS && e->run_policy));
}

char (*fw_reg_vault_names(struct fw_registry *r, size_t *n))[FW_NAME_LEN]
{
	return collect(r, pick_vault_holder, NULL, n);
}

static bool pick_adopted(const struct fw_entry *e, const void *ctx)
{
	return e->id && e->adopted && e->meta.origin == *(const __u32 *)ctx;
}

int fw_reg_prune_adopted(struct fw_registry *r, enum fw_origin origin)
{
	__u32 o = origin;
	char(*names)[FW_NAME_LEN];
	int removed = 0, ret = 0;
	size_t n;

	names = collect(r, pick_adopted, &o, &n);
	for (size_t i = 0; i < n; i++) {
		struct fw_entry *e = fw_reg_get(r, names[i], false);
		int err;

		if (!e)
			continue;
		if (e->id && e->adopted) {
			fw_info("subject %s: not confirmed after restart, removing", names[i]);
			err = fw_reg_unbind(r, e);
			if (err && !ret)
				ret = err;
			else if (!err)
				removed++;
		}
		fw_reg_put(r, e);
	}
	free(names);
	return ret ? ret : removed;
}

static bool pick_bound_iface(const struct fw_entry *e, const void *ctx)
{
	(void)ctx;
	return e->id && e->meta.ifname[0];
}

int fw_reg_links_changed(struct fw_registry *r)
{
	char(*names)[FW_NAME_LEN];
	size_t n;
	int ret = 0;

	names = collect(r, pick_bound_iface, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		struct fw_entry *e = fw_reg_get(r, names[i], false);
		struct fw_subject ks;
		int err = 0;

		if (!e)
			continue;
		ks = e->ksub;
		ks.ifindex = resolve_ifindex(e->meta.ifname);
		if (e->id && ks.ifindex != e->ksub.ifindex) {
			struct fw_ip held[FW_SUBJECT_MAX_ADDRS], mine[FW_SUBJECT_MAX_ADDRS];
			size_t nheld, nmine;

			pthread_mutex_lock(&r->lock);
			nmine = e->naddrs;
			memcpy(mine, e->addrs, sizeof(mine[0]) * nmine);
			err = claim_addrs_locked(r, e, mine, nmine, &ks, e->meta.origin, false,
						 held, &nheld);
			if (!err) {
				memcpy(e->addrs, held, sizeof(held[0]) * nheld);
				e->naddrs = nheld;
			}
			pthread_mutex_unlock(&r->lock);
			if (!err) {
				fw_info("subject %s: host interface %s is now ifindex %d",
					e->meta.name, e->meta.ifname,
					ks.ifindex == FW_IFINDEX_MISSING ? -1 : (int)ks.ifindex);
				e->ksub = ks;
			} else {
				ret = err;
			}
		}
		fw_reg_put(r, e);
	}
	free(names);
	return ret;
}
