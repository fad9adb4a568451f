// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Learned leases. The kernel's fastwall_learned map is what the data plane
 * reads; this table mirrors it with what the kernel does not need: the
 * names that taught each address (also written to fastwall_names and
 * fastwall_learned_names, so a restart can still revoke by name), the port
 * set the names' rules allow (fastwall_learned_ports), the order addresses
 * were learned in (the cap evicts the oldest without an open connection)
 * and when a connection was last seen. One lock covers the table and every
 * kernel write of a lease, so the two never disagree; connection records
 * are read outside it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "dns/learn.h"
#include "dns/learn_keys.h"
#include "common/hash.h"
#include "common/log.h"
#include "datapath/dispatch.h"
#include "datapath/leases.h"
#include "datapath/scan.h"

#define NAME_BUCKETS	16384
#define PORTSET_BUCKETS 4096
/* One subject's share of fastwall_learned_ports: its sets are unions of
 * its own rules' ports chosen by which names it resolves, so without a
 * share a sandbox could fill the map and its siblings could learn
 * nothing with ports. FW_MAX_LEARNED_PORTS / this many subjects at the
 * share fill the map. */
#define FW_LEARN_MAX_PORT_ENTRIES 4096
#define MIN_BUCKETS		  1024
/* An answer that would move a lease's expiry by less than this leaves the
 * lease as it is: the address stays learned at least lease.min - 1 s past
 * the answer, still well past the TTL the client caches it for, and a name
 * resolved thousands of times a second costs one write a second. */
#define LEASE_SLACK_NS (1000000000ULL)
#define DNSP_FORWARD   (-1) /* FW_DNSP_FORWARD, without the engine's header */

struct lname {
	struct lname *next;
	unsigned int refs;
	__u32 id;     /* in fastwall_names; 0 = not kept there (table full, or not yet) */
	bool unsaved; /* not written to fastwall_names yet: the next flush does */
	bool adopted; /* read back at start: freed after adoption if nothing names it */
	__u64 hash;
	char text[];
};

/* A learned port set: the TCP/UDP ports some of a subject's learned
 * addresses may be reached on (fastwall_learned_ports), shared by every
 * address with the same ports and freed with the last one. */
struct lports {
	struct lports *next;  /* by content */
	struct lports *inext; /* by {subject, id} */
	__u32 subject, id;
	unsigned int refs;
	bool adopted; /* read back at start: freed after adoption if nothing names it */
	__u64 hash;
	size_t n;
	__u16 ports[]; /* ascending */
};

struct lentry {
	struct lentry *hnext;	    /* hash chain */
	struct lentry *prev, *next; /* the subject's list, least recently learned first */
	__u32 id;
	struct fw_ip addr;
	__u64 expires_ns, learned_ns;
	__u64 conn_ns;	      /* the last refresh round that saw an open connection to it */
	bool adopted;	      /* found in the kernel at start: names unknown */
	struct lports *ports; /* NULL: every port */
	/* on fw_learn.dirty: its names changed since fastwall_learned_names
	 * was written */
	bool dirty;
	struct lentry *dprev, *dnext;
	unsigned int nnames;
	struct lname *names[FW_LEARN_MAX_NAMES];
};

struct lsubject {
	struct lentry *head, *tail;
	size_t count;
	size_t port_entries; /* in fastwall_learned_ports, FW_LEARN_MAX_PORT_ENTRIES at most */
	__u64 tat_ns;	     /* denied-query events: GCRA */
	__u64 suppressed;
	bool retired; /* the id was removed; its entries wait for on_reap() */
};

struct fw_learn {
	pthread_mutex_t lock;
	__u64 serial; /* never 0: the key of its dispatch_seen entries */
	struct fw_learn_config cfg;
	struct fw_registry *reg;
	struct fw_dp *dp;
	struct lentry **buckets;
	size_t nbuckets, n;
	struct lentry *dirty; /* names to write where a restart finds them */
	struct lname *names[NAME_BUCKETS];
	struct lports *portsets[PORTSET_BUCKETS];
	struct lports *portset_ids[PORTSET_BUCKETS];
	__u32 next_portset; /* ids are never 0 (every port) */
	__u32 next_name_id;
	struct lname **adopt_names; /* read back at start, by id, until adoption ends */
	size_t nadopt_names;
	/* entry_want_ports' scratch, under the lock */
	__u16 port_list[FW_LEARN_MAX_NAMES * FW_POLICY_MAX_PORTS];
	struct lsubject subj[FW_MAX_SUBJECTS];
	struct fw_learn_stats st;
	__u64 cap_rejected_logged, port_cap_logged;
	void (*sink)(void *ctx, const struct fw_learn_event *ev);
	void *sink_ctx;
	/* set before the proxy starts, read without the lock */
	void (*mon)(void *ctx, const struct fw_learn_event *ev);
	bool (*mon_wants)(void *ctx);
	void *mon_ctx;
	pthread_t adopter;
	bool adopter_started;
	bool adopting;	 /* atomic: the kernel's entries are not all in the table yet */
	bool adopt_stop; /* atomic */
};

void fw_learn_config_init(struct fw_learn_config *c)
{
	memset(c, 0, sizeof(*c));
	fw_ck_defaults(&fw_learn_keys, c);
	fw_ck_defaults(&fw_learn_lease_keys, c);
	c->close_linger_ns = 120 * FW_NSEC_PER_SEC;
	c->gc_grace_ns = 60 * FW_NSEC_PER_SEC;
	c->event_burst = 10;
	c->event_interval_ns = FW_NSEC_PER_SEC / 10;
}

/* ---- who a client is ------------------------------------------------------ */

/* The proxy asks who a client is twice a query (to decide, and again
 * before learning), and a map lookup is a system call: each thread keeps
 * the answers it read, for as long as fastwall_dispatch has not been
 * written since (fw_dp_dispatch_gen), keyed by the learner's serial so
 * that a learner never reads another's. */
#define DISPATCH_CACHE 256
struct dispatch_seen {
	__u64 serial, gen;
	struct fw_ip ip;
	int err;
	struct fw_subject ks;
};
static __thread struct dispatch_seen dispatch_seen[DISPATCH_CACHE];
static __u64 learn_serials; /* atomic */

static int dispatch_lookup(struct fw_learn *l, const struct fw_ip *ip, struct fw_subject *out)
{
	__u64 gen = fw_dp_dispatch_gen();
	struct dispatch_seen *c =
		&dispatch_seen[fw_fnv(FW_FNV_BASIS, ip, sizeof(*ip)) & (DISPATCH_CACHE - 1)];

	if (c->serial != l->serial || c->gen != gen || memcmp(&c->ip, ip, sizeof(*ip))) {
		c->serial = l->serial;
		c->gen = gen;
		c->ip = *ip;
		c->err = fw_dp_dispatch_lookup(l->dp, ip, &c->ks);
	}
	if (!c->err)
		*out = c->ks;
	return c->err;
}

static size_t entry_bucket(const struct fw_learn *l, __u32 id, const struct fw_ip *a)
{
	__u64 h = fw_fnv(FW_FNV_BASIS, &id, sizeof(id));

	return fw_fnv(h, a, sizeof(*a)) & (l->nbuckets - 1);
}

/* ---- interned names --------------------------------------------------- */

static void name_link(struct fw_learn *l, struct lname *n)
{
	struct lname **b = &l->names[n->hash & (NAME_BUCKETS - 1)];

	n->next = *b;
	*b = n;
}

/* A fresh id for n in fastwall_names (BPF_NOEXIST: an id still in use
 * after the counter wrapped is skipped); 0 when the table is full. */
static __u32 name_save(struct fw_learn *l, const char *text)
{
	struct fw_lease_name v = {};

	snprintf(v.text, sizeof(v.text), "%s", text);
	for (int tries = 0; tries < 16; tries++) {
		__u32 id = ++l->next_name_id;

		if (!id)
			continue;
		int err = fw_dp_name_add(l->dp, id, &v);

		if (!err)
			return id;
		if (err != -EEXIST)
			break;
	}
	l->st.kernel_errors++;
	return 0;
}

static struct lname *name_get(struct fw_learn *l, const char *text)
{
	size_t len = strlen(text);
	__u64 h = fw_fnv(FW_FNV_BASIS, text, len);
	struct lname *n;

	for (n = l->names[h & (NAME_BUCKETS - 1)]; n; n = n->next) {
		if (n->hash == h && strcmp(n->text, text) == 0) {
			n->refs++;
			return n;
		}
	}
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	n->refs = 1;
	n->hash = h;
	n->adopted = false;
	memcpy(n->text, text, len + 1);
	/* kept where a restart finds it by entry_save_names; without, the
	 * address is adopted with the names that were kept (or as names
	 * unknown) */
	n->id = 0;
	n->unsaved = true;
	name_link(l, n);
	return n;
}

static void name_unlink(struct fw_learn *l, struct lname *n)
{
	struct lname **p;

	for (p = &l->names[n->hash & (NAME_BUCKETS - 1)]; *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			break;
		}
	}
}

/* kernel: delete it from fastwall_names with the last reference (false
 * when fastwalld is stopping: the next one reads it back). */
static void name_put(struct fw_learn *l, struct lname *n, bool kernel)
{
	/* an adopted one waits for adopt_names_done(): leases not read back
	 * yet may name it, and the adoption index points at it */
	if (--n->refs || n->adopted)
		return;
	name_unlink(l, n);
	if (kernel && n->id)
		fw_dp_name_del(l->dp, n->id);
	free(n);
}

/* ---- learned port sets --------------------------------------------------- */

static __u64 ports_hash(__u32 id, const __u16 *ports, size_t n)
{
	return fw_fnv(fw_fnv(FW_FNV_BASIS, &id, sizeof(id)), ports, n * sizeof(*ports));
}

static struct lports **id_bucket(struct fw_learn *l, __u32 id, __u32 set)
{
	return &l->portset_ids[(id * 2654435761u ^ set) & (PORTSET_BUCKETS - 1)];
}

static void lports_link(struct fw_learn *l, struct lports *p)
{
	struct lports **b = &l->portsets[p->hash & (PORTSET_BUCKETS - 1)], **ib;

	p->next = *b;
	*b = p;
	ib = id_bucket(l, p->subject, p->id);
	p->inext = *ib;
	*ib = p;
}

static void lports_unlink(struct fw_learn *l, struct lports *p)
{
	struct lports **q;

	for (q = &l->portsets[p->hash & (PORTSET_BUCKETS - 1)]; *q; q = &(*q)->next) {
		if (*q == p) {
			*q = p->next;
			break;
		}
	}
	for (q = id_bucket(l, p->subject, p->id); *q; q = &(*q)->inext) {
		if (*q == p) {
			*q = p->inext;
			break;
		}
	}
}

/* The set of exactly these ports (ascending) for subject id, written to the
 * kernel when new; NULL on failure (nothing of it left in the kernel). */
static struct lports *lports_get(struct fw_learn *l, __u32 id, const __u16 *ports, size_t n)
{
	__u64 h = ports_hash(id, ports, n);
	struct lports *p;

	for (p = l->portsets[h & (PORTSET_BUCKETS - 1)]; p; p = p->next) {
		if (p->hash == h && p->subject == id && p->n == n &&
		    memcmp(p->ports, ports, n * sizeof(*ports)) == 0) {
			p->refs++;
			return p;
		}
	}
	if (l->subj[id].port_entries + n > FW_LEARN_MAX_PORT_ENTRIES) {
		l->st.port_cap_rejected++;
		return NULL;
	}
	p = malloc(sizeof(*p) + n * sizeof(*ports));
	if (!p)
		return NULL;
	p->subject = id;
	p->refs = 1;
	p->adopted = false;
	p->hash = h;
	p->n = n;
	memcpy(p->ports, ports, n * sizeof(*ports));
	do
		p->id = ++l->next_portset;
	while (p->id == 0);
	if (fw_dp_lports_put(l->dp, id, p->id, ports, n)) {
		fw_dp_lports_del(l->dp, id, p->id, ports, n);
		l->st.kernel_errors++;
		free(p);
		return NULL;
	}
	lports_link(l, p);
	l->subj[id].port_entries += n;
	return p;
}

/* kernel: delete its ports when the last reference goes (false when the
 * kernel's copy is someone else's business: the reaper's, or it must stay
 * because fastwalld is stopping). */
static void lports_put(struct fw_learn *l, struct lports *p, bool kernel)
{
	/* an adopted one waits for adopt_portsets_done(): leases not read
	 * back yet may name it */
	if (!p || --p->refs || p->adopted)
		return;
	lports_unlink(l, p);
	if (p->subject < FW_MAX_SUBJECTS)
		l->subj[p->subject].port_entries -= p->n;
	if (kernel)
		fw_dp_lports_del(l->dp, p->subject, p->id, p->ports, p->n);
	free(p);
}

/* The port set e should have under d: the union over its names' rules
 * (fw_policy_domain_ports), NULL for every port (or with d NULL:
 * fw_learn_add, no policy to ask). -EACCES when d allows none of its
 * names, -ENOSPC when the set can't be made (the subject's share is used,
 * no memory, the kernel refused). Under the lock (the scratch is l's). */
static int entry_want_ports(struct fw_learn *l, const struct fw_domain_policy *d,
			    const struct lentry *e, struct lports **out)
{
	const char *names[FW_LEARN_MAX_NAMES];
	bool all;
	int n;

	*out = NULL;
	if (!d || !e->nnames)
		return 0;
	if (d->state != FW_STATE_ACTIVE)
		return -EACCES;
	for (unsigned int i = 0; i < e->nnames; i++)
		names[i] = e->names[i]->text;
	n = fw_policy_domain_ports(&d->policy, names, e->nnames, l->port_list, &all);
	if (n < 0)
		return n;
	if (all)
		return 0;
	*out = lports_get(l, e->id, l->port_list, (size_t)n);
	return *out ? 0 : -ENOSPC;
}

/* ---- the table ----------------------------------------------------------- */

static struct lentry *entry_find(struct fw_learn *l, __u32 id, const struct fw_ip *a)
{
	struct lentry *e;

	if (id < FW_MAX_SUBJECTS && l->subj[id].retired)
		return NULL; /* what is left of it waits for on_reap() */
	for (e = l->buckets[entry_bucket(l, id, a)]; e; e = e->hnext)
		if (e->id == id && memcmp(&e->addr, a, sizeof(*a)) == 0)
			return e;
	return NULL;
}

static void grow(struct fw_learn *l)
{
	size_t nb = l->nbuckets * 2;
	struct lentry **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < l->nbuckets; i++) {
		while (l->buckets[i]) {
			struct lentry *e = l->buckets[i];
			size_t j;

			l->buckets[i] = e->hnext;
			l->nbuckets = nb;
			j = entry_bucket(l, e->id, &e->addr);
			l->nbuckets = nb / 2;
			e->hnext = b[j];
			b[j] = e;
		}
	}
	free(l->buckets);
	l->buckets = b;
	l->nbuckets = nb;
}

static void list_append(struct lsubject *s, struct lentry *e)
{
	e->next = NULL;
	e->prev = s->tail;
	if (s->tail)
		s->tail->next = e;
	else
		s->head = e;
	s->tail = e;
}

static void list_unlink(struct lsubject *s, struct lentry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->tail = e->prev;
	e->prev = e->next = NULL;
}

static struct lentry *entry_new(struct fw_learn *l, __u32 id, const struct fw_ip *a)
{
	struct lentry *e = calloc(1, sizeof(*e));
	size_t b;

	if (!e)
		return NULL;
	if (l->n + 1 > l->nbuckets)
		grow(l);
	e->id = id;
	e->addr = *a;
	b = entry_bucket(l, id, a);
	e->hnext = l->buckets[b];
	l->buckets[b] = e;
	list_append(&l->subj[id], e);
	l->subj[id].count++;
	l->n++;
	return e;
}

static void entry_clean(struct fw_learn *l, struct lentry *e)
{
	if (!e->dirty)
		return;
	if (e->dprev)
		e->dprev->dnext = e->dnext;
	else
		l->dirty = e->dnext;
	if (e->dnext)
		e->dnext->dprev = e->dprev;
	e->dirty = false;
	e->dprev = e->dnext = NULL;
}

static void entry_dirty(struct fw_learn *l, struct lentry *e)
{
	if (e->dirty)
		return;
	e->dirty = true;
	e->dprev = NULL;
	e->dnext = l->dirty;
	if (l->dirty)
		l->dirty->dprev = e;
	l->dirty = e;
}

/* Unlinks and frees e; the kernel lease is the caller's business, its
 * port set's the kernel flag's (lports_put). */
static void entry_drop(struct fw_learn *l, struct lentry *e, bool kernel)
{
	struct lentry **p = &l->buckets[entry_bucket(l, e->id, &e->addr)];

	entry_clean(l, e);
	while (*p && *p != e)
		p = &(*p)->hnext;
	if (*p)
		*p = e->hnext;
	list_unlink(&l->subj[e->id], e);
	l->subj[e->id].count--;
	l->n--;
	for (unsigned int i = 0; i < e->nnames; i++)
		name_put(l, e->names[i], kernel);
	lports_put(l, e->ports, kernel);
	free(e);
}

static void entry_remove(struct fw_learn *l, struct lentry *e)
{
	struct fw_learned_key k = {.subject = e->id, .addr = e->addr};
	int err = fw_dp_learned_del(l->dp, e->id, &e->addr);

	if (err)
		l->st.kernel_errors++;
	fw_dp_lease_names_del(l->dp, &k);
	entry_drop(l, e, true);
}

/* Writes which names taught e where a restart finds them, the names
 * themselves first. */
static void entry_save_names(struct fw_learn *l, struct lentry *e)
{
	struct fw_learned_key k = {.subject = e->id, .addr = e->addr};
	struct fw_lease_names v = {};
	unsigned int n = 0;

	_Static_assert(FW_LEASE_NAMES == FW_LEARN_MAX_NAMES, "names per lease");
	entry_clean(l, e);
	for (unsigned int i = 0; i < e->nnames; i++) {
		if (e->names[i]->unsaved) {
			e->names[i]->id = name_save(l, e->names[i]->text);
			e->names[i]->unsaved = false;
		}
	}
	for (unsigned int i = 0; i < e->nnames; i++)
		if (e->names[i]->id)
			v.ids[n++] = e->names[i]->id;
	if (!n) {
		fw_dp_lease_names_del(l->dp, &k);
		return;
	}
	if (fw_dp_lease_names_put(l->dp, &k, &v))
		l->st.kernel_errors++;
}

/* true when e's names changed */
static bool entry_add_name(struct fw_learn *l, struct lentry *e, const char *text)
{
	struct lname *n;

	for (unsigned int i = 0; i < e->nnames; i++)
		if (strcmp(e->names[i]->text, text) == 0)
			return false;
	n = name_get(l, text);
	if (!n)
		return false;
	if (e->nnames == FW_LEARN_MAX_NAMES) {
		/* the oldest name goes: revocation then judges by the newer ones */
		name_put(l, e->names[0], true);
		memmove(e->names, e->names + 1, sizeof(e->names[0]) * (FW_LEARN_MAX_NAMES - 1));
		e->nnames--;
	}
	e->names[e->nnames++] = n;
	e->adopted = false;
	return true;
}

static bool conn_live(const struct fw_learn *l, const struct lentry *e, __u64 now)
{
	return e->conn_ns && now - e->conn_ns <= 2 * l->cfg.refresh_interval_ns;
}

/* The cap: the least recently learned address without an open connection
 * goes. false when every one of them has one. */
static bool evict_one(struct fw_learn *l, __u32 id, __u64 now)
{
	for (struct lentry *e = l->subj[id].head; e; e = e->next) {
		if (conn_live(l, e, now))
			continue;
		entry_remove(l, e);
		l->st.evicted++;
		return true;
	}
	return false;
}

/* Writes e's lease with expiry exp (never shorter than it has) and port
 * set p (a reference the caller hands over; e's old set is released once
 * the kernel no longer names it). Nothing to write: p's reference goes. */
static int lease_write(struct fw_learn *l, struct lentry *e, __u64 exp, struct lports *p)
{
	struct lports *old = e->ports;
	int err;

	if (exp < e->expires_ns)
		exp = e->expires_ns;
	if (exp == e->expires_ns && p == old) {
		lports_put(l, p, true);
		return 0;
	}
	err = fw_dp_lease_put(l->dp, e->id, &e->addr, exp, p ? p->id : 0);
	if (err) {
		l->st.kernel_errors++;
		lports_put(l, p, true);
		return err;
	}
	e->expires_ns = exp;
	e->ports = p;
	lports_put(l, old, true);
	return 0;
}

/* Extends e's lease to exp in the kernel (never shortens it). */
static int lease_extend(struct fw_learn *l, struct lentry *e, __u64 exp)
{
	if (exp <= e->expires_ns)
		return 0;
	if (e->ports)
		e->ports->refs++;
	return lease_write(l, e, exp, e->ports);
}

/* d: the policy that allowed name, for the ports (NULL: every port). */
static int learn_one(struct fw_learn *l, const struct fw_domain_policy *d, __u32 id,
		     const struct fw_ip *addr, const char *name, __u32 ttl, __u64 now)
{
	const struct fw_learn_config *c = &l->cfg;
	__u64 exp = now + (__u64)fw_dns_lease_seconds(ttl, c->lease_add_s, c->lease_min_s,
						      c->lease_max_s) *
				  FW_NSEC_PER_SEC;
	struct lentry *e = entry_find(l, id, addr);
	struct lports *p = NULL;
	bool fresh = !e, renamed = false;
	int err;

	if (!e) {
		if (c->max_per_subject && l->subj[id].count >= c->max_per_subject &&
		    !evict_one(l, id, now)) {
			l->st.cap_rejected++;
			return 0;
		}
		e = entry_new(l, id, addr);
		if (!e)
			return -ENOMEM;
	} else {
		list_unlink(&l->subj[id], e);
		list_append(&l->subj[id], e);
	}
	if (name && name[0])
		renamed = entry_add_name(l, e, name);
	if (d && e->nnames) {
		err = entry_want_ports(l, d, e, &p);
	} else {
		/* no policy or name to judge by (adopted, a test's): unchanged */
		p = e->ports;
		if (p)
			p->refs++;
		err = 0;
	}
	if (!err && !fresh && p == e->ports && exp > e->expires_ns &&
	    exp - e->expires_ns < LEASE_SLACK_NS)
		exp = e->expires_ns;
	if (!err)
		err = lease_write(l, e, exp, p);
	if (err) {
		if (fresh)
			entry_drop(l, e, true);
		return err;
	}
	/* names are written by the next flush: after the answer left, once
	 * for all the answers of a round (the lease itself is written) */
	if (renamed)
		entry_dirty(l, e);
	e->learned_ns = now;
	l->st.learned++;
	return 0;
}

/* ---- events -------------------------------------------------------------- */

#define FW_DNS_REASON_NAME_(id, verdict, name, meaning)                                            \
	case id:                                                                                   \
		return name;

const char *fw_dns_reason_name(enum fw_dns_reason reason)
{
	switch (reason) {
		FW_DNS_REASONS(FW_DNS_REASON_NAME_)
	case FW_DNS_REASON_MAX:
		break;
	}
	return "dns-unknown";
}

static bool mon_on(struct fw_learn *l)
{
	return l->mon && (!l->mon_wants || l->mon_wants(l->mon_ctx));
}

static void mon_event(struct fw_learn *l, struct fw_learn_event *ev, const struct fw_dns_query *q)
{
	char name[FW_NAME_LEN] = "";

	if (ev->subject)
		fw_reg_name_of(l->reg, ev->subject, name, sizeof(name));
	ev->name = name;
	ev->qname = q->name;
	ev->qtype = q->qtype;
	l->mon(l->mon_ctx, ev);
}

static void deny_event(struct fw_learn *l, __u32 id, const struct fw_ip *client,
		       const struct fw_dns_query *q, enum fw_dns_reason reason)
{
	struct fw_learn_event ev = {
		.subject = id, .client = client, .reason = reason, .rcode = FW_DNS_RCODE_NXDOMAIN};
	struct lsubject *s = &l->subj[id < FW_MAX_SUBJECTS ? id : 0];
	__u64 now = fw_now_ns(), interval, burst;
	char name[FW_NAME_LEN] = "";
	bool emit;

	if (mon_on(l)) {
		struct fw_learn_event mev = ev;

		mon_event(l, &mev, q);
	}
	pthread_mutex_lock(&l->lock);
	interval = l->cfg.event_interval_ns;
	burst = l->cfg.event_burst;
	emit = l->sink && interval;
	if (emit) {
		/* GCRA, as the kernel limits its own deny events */
		if (s->tat_ns < now)
			s->tat_ns = now;
		if (s->tat_ns - now > burst * interval) {
			s->suppressed++;
			emit = false;
		} else {
			s->tat_ns += interval;
			ev.suppressed = s->suppressed;
			s->suppressed = 0;
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (!emit)
		return;
	if (id)
		fw_reg_name_of(l->reg, id, name, sizeof(name));
	ev.name = name;
	ev.qname = q->name;
	ev.qtype = q->qtype;
	l->sink(l->sink_ctx, &ev);
}

/* ---- the proxy's hooks --------------------------------------------------- */

static bool name_allowed(const struct fw_domain_policy *d, const char *name)
{
	__u8 action;

	if (d->state != FW_STATE_ACTIVE)
		return false;
	fw_policy_match_domain(&d->policy, name, &action);
	return action == FW_ACTION_ALLOW;
}

int fw_learn_decide(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		    __u64 *token)
{
	struct fw_learn *l = ctx;
	struct fw_domain_policy *d;
	struct fw_subject ks;
	bool ok;

	*token = 0;
	if (dispatch_lookup(l, client, &ks)) {
		__atomic_add_fetch(&l->st.denied, 1, __ATOMIC_RELAXED);
		deny_event(l, 0, client, q, FW_DNS_UNKNOWN_SOURCE);
		return FW_DNS_RCODE_NXDOMAIN;
	}
	*token = ks.id;
	if (ks.state != FW_STATE_ACTIVE) {
		__atomic_add_fetch(&l->st.denied, 1, __ATOMIC_RELAXED);
		deny_event(l, ks.id, client, q, FW_DNS_DENYING);
		return FW_DNS_RCODE_NXDOMAIN;
	}
	d = fw_reg_domains(l->reg, ks.id);
	if (!d) {
		/* adopted after a restart, policy not replayed yet: the
		 * client retries, rather than caching a wrong NXDOMAIN */
		__atomic_add_fetch(&l->st.no_policy, 1, __ATOMIC_RELAXED);
		return FW_DNS_RCODE_SERVFAIL;
	}
	ok = name_allowed(d, q->name);
	fw_domain_policy_put(d);
	if (!ok) {
		__atomic_add_fetch(&l->st.denied, 1, __ATOMIC_RELAXED);
		deny_event(l, ks.id, client, q, FW_DNS_DENIED_NAME);
		return FW_DNS_RCODE_NXDOMAIN;
	}
	__atomic_add_fetch(&l->st.allowed, 1, __ATOMIC_RELAXED);
	return DNSP_FORWARD;
}

static int learn_answer(struct fw_learn *l, const struct fw_ip *client,
			const struct fw_dns_query *q, __u32 id, const struct fw_dns_answer *a,
			__u32 *nlearned)
{
	struct fw_domain_policy *d;
	struct fw_subject ks;
	__u64 now = fw_now_ns();
	int err = 0;

	*nlearned = 0;
	if (!a->naddrs)
		return 0;
	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	pthread_mutex_lock(&l->lock);
	/* under the lock, so a release of id (whose hook takes it after the
	 * dispatch entry is gone) cannot slip between this check and the
	 * writes */
	if (dispatch_lookup(l, client, &ks) || ks.id != id) {
		err = -ESTALE;
		goto out;
	}
	/* a policy change during the upstream exchange may have revoked the
	 * name already: decide again on the policy of now */
	d = fw_reg_domains(l->reg, id);
	if (!d || !name_allowed(d, q->name))
		err = -EACCES;
	for (__u32 i = 0; !err && i < a->naddrs; i++) {
		err = learn_one(l, d, id, &a->addrs[i].ip, q->name, a->addrs[i].ttl, now);
		if (!err)
			*nlearned = i + 1;
	}
	fw_domain_policy_put(d);
out:
	pthread_mutex_unlock(&l->lock);
	return err;
}

int fw_learn_answer(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		    __u64 token, const struct fw_dns_answer *a)
{
	struct fw_learn *l = ctx;
	__u32 nlearned;
	int err = learn_answer(l, client, q, (__u32)token, a, &nlearned);

	if (mon_on(l)) {
		struct fw_learn_event ev = {.subject = (__u32)token,
					    .client = client,
					    .reason = FW_DNS_ALLOWED_NAME,
					    .allowed = true,
					    .rcode = err ? FW_DNS_RCODE_SERVFAIL : a->rcode,
					    .learned = a->addrs,
					    .nlearned = nlearned};

		mon_event(l, &ev, q);
	}
	return err;
}

static void flush_names(struct fw_learn *l)
{
	while (l->dirty)
		entry_save_names(l, l->dirty);
}

void fw_learn_flush(void *ctx)
{
	struct fw_learn *l = ctx;

	pthread_mutex_lock(&l->lock);
	flush_names(l);
	pthread_mutex_unlock(&l->lock);
}

int fw_learn_add(struct fw_learn *l, __u32 id, const struct fw_ip *addr, const char *name,
		 __u32 ttl)
{
	int err;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	pthread_mutex_lock(&l->lock);
	err = learn_one(l, NULL, id, addr, name, ttl, fw_now_ns());
	flush_names(l);
	pthread_mutex_unlock(&l->lock);
	return err;
}

/* ---- the registry's hooks ------------------------------------------------ */

/* Revocation: an address stays while one of the names that taught it is
 * still allowed, reachable on the ports of the rules that allow them now.
 * Adopted addresses (names unknown) keep their lease and ports. */
static void on_domains(void *ctx, __u32 id)
{
	struct fw_learn *l = ctx;
	struct fw_domain_policy *d = fw_reg_domains(l->reg, id);
	size_t revoked = 0;
	char sname[FW_NAME_LEN];

	if (!d)
		return;
	pthread_mutex_lock(&l->lock);
	for (struct lentry *e = l->subj[id].head, *next; e; e = next) {
		unsigned int keep = 0;

		next = e->next;
		if (e->adopted || !e->nnames)
			continue;
		for (unsigned int i = 0; i < e->nnames; i++) {
			if (name_allowed(d, e->names[i]->text))
				e->names[keep++] = e->names[i];
			else
				name_put(l, e->names[i], true);
		}
		if (keep && keep != e->nnames) {
			e->nnames = keep;
			entry_save_names(l, e);
		}
		e->nnames = keep;
		if (keep) {
			struct lports *p;

			/* the same ports, more or fewer; when the new set
			 * can't be written the address goes (fail closed) */
			if (!entry_want_ports(l, d, e, &p) && !lease_write(l, e, 0, p))
				continue;
		}
		entry_remove(l, e);
		revoked++;
	}
	l->st.revoked += revoked;
	pthread_mutex_unlock(&l->lock);
	fw_domain_policy_put(d);
	if (revoked) {
		fw_reg_name_of(l->reg, id, sname, sizeof(sname));
		fw_info("subject %s: revoked %zu learned addresses (their names are no longer "
			"allowed)",
			sname, revoked);
	}
}

/* A retired id's addresses are forgotten at once (O(1): the subject is
 * marked, entry_find() no longer sees them) and freed by on_reap(), when
 * the registry's reaper has deleted their kernel entries. */
static void on_release(void *ctx, __u32 id)
{
	struct fw_learn *l = ctx;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return;
	pthread_mutex_lock(&l->lock);
	l->subj[id].retired = true;
	l->subj[id].tat_ns = 0;
	l->subj[id].suppressed = 0;
	pthread_mutex_unlock(&l->lock);
}

static void on_reap(void *ctx, __u32 id)
{
	struct fw_learn *l = ctx;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return;
	pthread_mutex_lock(&l->lock);
	while (l->subj[id].head)
		entry_drop(l, l->subj[id].head, true); /* its names may be no one else's */
	l->subj[id].retired = false;
	pthread_mutex_unlock(&l->lock);
}

/* ---- refresh and garbage collection --------------------------------------- */

struct conn_rec {
	struct fw_conn_key k;
	struct fw_conn v;
};

enum { CONN_KEEP, CONN_DELETE, CONN_MARK_RENEWED };

static int collect_conn(const void *key, const void *val, void *ctx)
{
	struct conn_rec rec;

	memcpy(&rec.k, key, sizeof(rec.k));
	memcpy(&rec.v, val, sizeof(rec.v));
	return fw_recs_push(ctx, &rec);
}

/* The per-subject record counts (fastwall_conn_count) drift when a
 * count's update is lost (fastwalld stopped between a delete and its
 * decrement, a record the kernel refused): each round replaces a count by
 * the records its scan found, but only where the count is still what it
 * was before the scan (less the round's own deletes), i.e. no SYN of the
 * subject added a record meanwhile; a busy subject heals in a later round. */
static void counts_heal(__u64 *counts, const __u64 *before, const __u64 *found)
{
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		__u64 expected = before[id];

		if (expected == found[id])
			continue;
		__atomic_compare_exchange_n(&counts[id], &expected, found[id], false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

int fw_learn_tick(struct fw_learn *l)
{
	struct fw_recs cc = {.size = sizeof(struct conn_rec)};
	__u64 *counts = fw_dp_conn_counts(l->dp), *before = NULL, *found = NULL;
	struct conn_rec *recs;
	unsigned char *verdict = NULL;
	size_t n;
	__u64 now, rejected, port_rejected;
	int err;

	/* a connection to an address not adopted yet would look revoked */
	if (__atomic_load_n(&l->adopting, __ATOMIC_ACQUIRE))
		return 0;
	fw_learn_flush(l); /* names a proxy without a flush hook left */

	/* the per-subject record counts as they were before the scan, so
	 * the counts it finds can replace them if nothing changed meanwhile */
	if (counts) {
		before = malloc(FW_MAX_SUBJECTS * sizeof(*before));
		found = calloc(FW_MAX_SUBJECTS, sizeof(*found));
		if (!before || !found) {
			free(before);
			free(found);
			return -ENOMEM;
		}
		for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
			before[id] = __atomic_load_n(&counts[id], __ATOMIC_RELAXED);
	}
	/* read the connection records without the lock, in batches */
	err = fw_dp_conns_scan(l->dp, collect_conn, &cc);
	recs = (struct conn_rec *)cc.data;
	n = cc.n;
	if (err) {
		free(found);
		free(before);
		free(recs);
		return err;
	}
	verdict = calloc(n ? n : 1, 1);
	if (!verdict) {
		free(found);
		free(before);
		free(recs);
		return -ENOMEM;
	}

	now = fw_now_ns();
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < n; i++) {
		const struct fw_conn *c = &recs[i].v;
		__u32 id = recs[i].k.subject;
		struct lentry *e =
			id && id < FW_MAX_SUBJECTS ? entry_find(l, id, &recs[i].k.dst) : NULL;
		__u64 renew = now + (__u64)l->cfg.lease_min_s * FW_NSEC_PER_SEC;

		if (!e) {
			/* revoked, collected, or its subject is gone */
			verdict[i] = CONN_DELETE;
			continue;
		}
		if (c->closed_ns) {
			if (!c->renewed) {
				if (renew > e->expires_ns)
					l->st.grace++;
				lease_extend(l, e, renew);
				verdict[i] = CONN_MARK_RENEWED;
			}
			if (now > c->closed_ns && now - c->closed_ns > l->cfg.close_linger_ns)
				verdict[i] = CONN_DELETE;
			continue;
		}
		if (now > c->last_seen_ns && now - c->last_seen_ns > l->cfg.tcp_idle_ns) {
			verdict[i] = CONN_DELETE;
			continue;
		}
		e->conn_ns = now;
		if (renew > e->expires_ns && !lease_extend(l, e, renew))
			l->st.renewed++;
	}

	/* garbage collection: leases past their end plus the grace */
	for (size_t b = 0; b < l->nbuckets; b++) {
		for (struct lentry *e = l->buckets[b], *next; e; e = next) {
			next = e->hnext;
			if (e->expires_ns + l->cfg.gc_grace_ns < now) {
				entry_remove(l, e);
				l->st.expired++;
			}
		}
	}
	rejected = l->st.cap_rejected - l->cap_rejected_logged;
	l->cap_rejected_logged = l->st.cap_rejected;
	port_rejected = l->st.port_cap_rejected - l->port_cap_logged;
	l->port_cap_logged = l->st.port_cap_rejected;
	pthread_mutex_unlock(&l->lock);
	if (rejected)
		fw_warn("learned-address cap (%u per subject) reached: %llu addresses not learned "
			"since the last round, all others carry open connections",
			l->cfg.max_per_subject, (unsigned long long)rejected);
	if (port_rejected)
		fw_warn("learned port sets: %llu refused since the last round (a subject's share "
			"of "
			"%d port entries is used up)",
			(unsigned long long)port_rejected, FW_LEARN_MAX_PORT_ENTRIES);

	for (size_t i = 0; i < n; i++) {
		__u32 id = recs[i].k.subject;

		if (verdict[i] == CONN_DELETE) {
			if (!fw_dp_conn_del(l->dp, &recs[i].k)) {
				if (counts && id < FW_MAX_SUBJECTS) {
					__atomic_sub_fetch(&counts[id], 1, __ATOMIC_RELAXED);
					before[id]--;
				}
				continue;
			}
		} else if (verdict[i] == CONN_MARK_RENEWED) {
			recs[i].v.renewed = 1;
			/* BPF_EXIST: a record the data plane dropped stays dropped */
			fw_dp_conn_update(l->dp, &recs[i].k, &recs[i].v);
		}
		if (found && id < FW_MAX_SUBJECTS)
			found[id]++;
	}
	if (found)
		counts_heal(counts, before, found);
	free(found);
	free(before);
	free(verdict);
	free(recs);
	return err;
}

/* ---- setup --------------------------------------------------------------- */

struct adopt_rec {
	struct fw_learned_key k;
	struct fw_lease v;
};

struct adopt_ctx {
	struct fw_learn *l;
	signed char state[FW_MAX_SUBJECTS]; /* fw_reg_id_state() of every id */
	__u32 gen[FW_MAX_SUBJECTS];	    /* and its generation, before the scan */
	struct fw_recs keep;		    /* struct adopt_rec */
};

static int adopt_one(const void *key, const void *val, void *ctx)
{
	struct adopt_ctx *a = ctx;
	const struct fw_learned_key *k = key;

	if (__atomic_load_n(&a->l->adopt_stop, __ATOMIC_RELAXED))
		return -ECANCELED; /* shutting down */
	/* ids not bound are the reaper's (fw_reg_reap) */
	if (k->subject >= FW_MAX_SUBJECTS || a->state[k->subject] != 1)
		return 0;
	struct adopt_rec rec = {.k = *k};

	memcpy(&rec.v, val, sizeof(rec.v));
	return fw_recs_push(&a->keep, &rec);
}

#define ADOPT_CHUNK 512 /* entries inserted per hold of the table lock (< 1 ms) */

static int collect_lport(const void *key, const void *val, void *ctx)
{
	(void)val;
	return fw_recs_push(ctx, key);
}

static int lport_key_cmp(const void *a, const void *b)
{
	const struct fw_port_rule_key *x = a, *y = b;

	if (x->subject != y->subject)
		return x->subject < y->subject ? -1 : 1;
	if (x->portset != y->portset)
		return x->portset < y->portset ? -1 : 1;
	return (int)x->port - (int)y->port;
}

/* The learned port sets the kernel holds, into the table (unreferenced,
 * marked adopted) before anything is learned: new sets get ids above
 * theirs. Their kernel entries stay as they are. */
static int adopt_portsets(struct fw_learn *l)
{
	struct fw_recs r = {.size = sizeof(struct fw_port_rule_key)};
	struct fw_port_rule_key *k;
	int err = fw_dp_lports_scan(l->dp, collect_lport, &r);

	k = (struct fw_port_rule_key *)r.data;
	if (!err && r.n)
		qsort(k, r.n, sizeof(*k), lport_key_cmp);
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0, j; !err && i < r.n; i = j) {
		struct lports *p;

		for (j = i; j < r.n && k[j].subject == k[i].subject && k[j].portset == k[i].portset;
		     j++)
			;
		p = malloc(sizeof(*p) + (j - i) * sizeof(p->ports[0]));
		if (!p) {
			err = -ENOMEM;
			break;
		}
		p->subject = k[i].subject;
		p->id = k[i].portset;
		p->refs = 0;
		p->adopted = true;
		p->n = j - i;
		for (size_t m = i; m < j; m++)
			p->ports[m - i] = k[m].port;
		p->hash = ports_hash(p->subject, p->ports, p->n);
		lports_link(l, p);
		if (p->subject < FW_MAX_SUBJECTS)
			l->subj[p->subject].port_entries += p->n;
		if (p->id > l->next_portset)
			l->next_portset = p->id;
	}
	pthread_mutex_unlock(&l->lock);
	free(r.data);
	return err;
}

struct name_rec {
	__u32 id;
	struct fw_lease_name v;
};

static int collect_name(const void *key, const void *val, void *ctx)
{
	struct name_rec r;

	memcpy(&r.id, key, sizeof(r.id));
	memcpy(&r.v, val, sizeof(r.v));
	return fw_recs_push(ctx, &r);
}

static int lname_id_cmp(const void *a, const void *b)
{
	const struct lname *x = *(struct lname *const *)a, *y = *(struct lname *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The names the kernel holds, into the table (unreferenced, marked
 * adopted, indexed by id for adopt_run) before anything is learned: new
 * names get ids above theirs. */
static int adopt_names(struct fw_learn *l)
{
	struct fw_recs r = {.size = sizeof(struct name_rec)};
	struct name_rec *rec;
	int err = fw_dp_names_scan(l->dp, collect_name, &r);

	rec = (struct name_rec *)r.data;
	pthread_mutex_lock(&l->lock);
	if (!err && r.n) {
		l->adopt_names = calloc(r.n, sizeof(*l->adopt_names));
		if (!l->adopt_names)
			err = -ENOMEM;
	}
	for (size_t i = 0; !err && i < r.n; i++) {
		size_t len;
		struct lname *n;

		rec[i].v.text[sizeof(rec[i].v.text) - 1] = '\0';
		len = strlen(rec[i].v.text);
		n = malloc(sizeof(*n) + len + 1);
		if (!n) {
			err = -ENOMEM;
			break;
		}
		n->refs = 0;
		n->id = rec[i].id;
		n->unsaved = false; /* read from fastwall_names: kept there */
		n->adopted = true;
		n->hash = fw_fnv(FW_FNV_BASIS, rec[i].v.text, len);
		memcpy(n->text, rec[i].v.text, len + 1);
		name_link(l, n);
		l->adopt_names[l->nadopt_names++] = n;
		if (n->id > l->next_name_id)
			l->next_name_id = n->id;
	}
	if (l->nadopt_names)
		qsort(l->adopt_names, l->nadopt_names, sizeof(*l->adopt_names), lname_id_cmp);
	pthread_mutex_unlock(&l->lock);
	free(r.data);
	return err;
}

static struct lname *adopted_name(struct fw_learn *l, __u32 id)
{
	size_t lo = 0, hi = l->nadopt_names;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct lname *n = l->adopt_names[mid];

		if (n->id == id)
			return n;
		if (n->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The names fastwall_learned_names says taught e (adopted), so it can be
 * revoked by name again; e stays "adopted" (kept to its lease) when none
 * of them is known. */
static void adopt_entry_names(struct fw_learn *l, struct lentry *e)
{
	struct fw_learned_key k = {.subject = e->id, .addr = e->addr};
	struct fw_lease_names v;

	if (fw_dp_lease_names_get(l->dp, &k, &v))
		return;
	for (unsigned int i = 0; i < FW_LEASE_NAMES && e->nnames < FW_LEARN_MAX_NAMES; i++) {
		struct lname *n = v.ids[i] ? adopted_name(l, v.ids[i]) : NULL;

		if (!n)
			continue;
		n->refs++;
		e->names[e->nnames++] = n;
	}
	if (e->nnames)
		e->adopted = false;
}

/* After adoption: adopted names nothing refers to are deleted (complete:
 * after an interrupted one they stay, leases not read back may name them). */
static void adopt_names_done(struct fw_learn *l, bool complete)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nadopt_names; i++) {
		struct lname *n = l->adopt_names[i];

		n->adopted = false;
		if (n->refs || !complete)
			continue;
		name_unlink(l, n);
		fw_dp_name_del(l->dp, n->id);
		free(n);
	}
	free(l->adopt_names);
	l->adopt_names = NULL;
	l->nadopt_names = 0;
	pthread_mutex_unlock(&l->lock);
}

/* The adopted set {id, set}; one with no ports when the kernel lost them
 * (so the lease keeps naming a set, and keeps dropping, rather than
 * becoming "every port"). NULL only without memory. */
static struct lports *adopted_portset(struct fw_learn *l, __u32 id, __u32 set)
{
	struct lports *p;

	for (p = *id_bucket(l, id, set); p; p = p->inext) {
		if (p->subject == id && p->id == set) {
			p->refs++;
			return p;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->subject = id;
	p->id = set;
	p->refs = 1;
	p->adopted = true;
	p->hash = ports_hash(id, p->ports, 0);
	lports_link(l, p);
	return p;
}

/* After adoption: adopted sets no lease names are deleted. */
static void adopt_portsets_done(struct fw_learn *l)
{
	pthread_mutex_lock(&l->lock);
	for (size_t b = 0; b < PORTSET_BUCKETS; b++) {
		for (struct lports *p = l->portsets[b], *next; p; p = next) {
			next = p->next;
			if (!p->adopted)
				continue;
			p->adopted = false;
			if (p->refs)
				continue;
			lports_unlink(l, p);
			if (p->subject < FW_MAX_SUBJECTS)
				l->subj[p->subject].port_entries -= p->n;
			fw_dp_lports_del(l->dp, p->subject, p->id, p->ports, p->n);
			free(p);
		}
	}
	pthread_mutex_unlock(&l->lock);
}

/* Takes over the learned addresses of bound subjects from the kernel
 * (names unknown): one batched scan, then the table in chunks, so the DNS
 * path never waits long. An entry is taken only if its id still belongs
 * to the subject it belonged to before the scan (same generation, not
 * retired) and was not learned afresh meanwhile. */
static int adopt_run(struct fw_learn *l)
{
	struct adopt_ctx *a = calloc(1, sizeof(*a));
	const struct adopt_rec *keep;
	size_t n = 0;
	int err;

	if (!a)
		return -ENOMEM;
	a->l = l;
	a->keep.size = sizeof(struct adopt_rec);
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
		a->state[id] = (signed char)fw_reg_id_state(l->reg, id, &a->gen[id]);
	err = fw_dp_learned_scan(l->dp, adopt_one, a);
	pthread_mutex_lock(&l->lock);
	keep = (const struct adopt_rec *)a->keep.data;
	while (!err && l->nbuckets < l->n + a->keep.n) {
		size_t nb = l->nbuckets;

		grow(l);
		if (l->nbuckets == nb)
			break;
	}
	pthread_mutex_unlock(&l->lock);
	for (size_t i = 0; !err && i < a->keep.n; i += ADOPT_CHUNK) {
		if (__atomic_load_n(&l->adopt_stop, __ATOMIC_RELAXED))
			break;
		pthread_mutex_lock(&l->lock);
		for (size_t j = i; j < a->keep.n && j < i + ADOPT_CHUNK; j++) {
			const struct adopt_rec *r = &keep[j];
			__u32 gen;
			struct lentry *e;

			if (fw_reg_id_state(l->reg, r->k.subject, &gen) != 1 ||
			    gen != a->gen[r->k.subject] || entry_find(l, r->k.subject, &r->k.addr))
				continue;
			e = entry_new(l, r->k.subject, &r->k.addr);
			if (!e) {
				err = -ENOMEM;
				break;
			}
			e->expires_ns = r->v.expires_ns;
			e->learned_ns = r->v.learned_ns;
			e->adopted = true;
			adopt_entry_names(l, e);
			if (r->v.portset) {
				e->ports = adopted_portset(l, r->k.subject, r->v.portset);
				if (!e->ports) {
					/* it would read as every port: not kept */
					entry_drop(l, e, false);
					err = -ENOMEM;
					break;
				}
			}
			n++;
		}
		pthread_mutex_unlock(&l->lock);
	}
	free(a->keep.data);
	free(a);
	if (!err)
		adopt_portsets_done(l);
	adopt_names_done(l, !err);
	__atomic_store_n(&l->adopting, false, __ATOMIC_RELEASE);
	/* the names are known again: judge them by the policies of now (those
	 * applied before the entries were read back judged nothing) */
	for (__u32 id = 1; !err && id < FW_MAX_SUBJECTS; id++)
		if (fw_learn_count(l, id))
			on_domains(l, id);
	if (err == -ECANCELED)
		fw_info("adopting learned addresses: stopped");
	else if (err)
		fw_err("adopting learned addresses: %s", strerror(-err));
	else
		fw_info("adopted %zu learned addresses from pinned maps", n);
	return err;
}

static void *adopt_thread(void *arg)
{
	adopt_run(arg);
	return NULL;
}

int fw_learn_adopt(struct fw_learn *l, bool background)
{
	int err;

	if (l->adopter_started)
		return -EALREADY;
	err = adopt_portsets(l);
	if (!err)
		err = adopt_names(l);
	if (err) {
		fw_err("reading learned port sets and names: %s", strerror(-err));
		return err;
	}
	__atomic_store_n(&l->adopting, true, __ATOMIC_RELEASE);
	if (!background)
		return adopt_run(l);
	err = -pthread_create(&l->adopter, NULL, adopt_thread, l);
	if (err) {
		__atomic_store_n(&l->adopting, false, __ATOMIC_RELEASE);
		return err;
	}
	l->adopter_started = true;
	return 0;
}

int fw_learn_new(const struct fw_learn_config *c, struct fw_registry *reg, struct fw_learn **out)
{
	struct fw_learn *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->serial = __atomic_add_fetch(&learn_serials, 1, __ATOMIC_RELAXED);
	l->cfg = *c;
	l->reg = reg;
	l->dp = reg->dp;
	l->nbuckets = MIN_BUCKETS;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	if (!l->buckets) {
		fw_learn_free(l);
		return -ENOMEM;
	}
	reg->hook_ctx = l;
	reg->on_domains = on_domains;
	reg->on_release = on_release;
	reg->on_reap = on_reap;
	*out = l;
	return 0;
}

void fw_learn_free(struct fw_learn *l)
{
	if (!l)
		return;
	if (l->adopter_started) {
		__atomic_store_n(&l->adopt_stop, true, __ATOMIC_RELAXED);
		pthread_join(l->adopter, NULL);
	}
	/* the names not flushed yet: they are what the next start adopts */
	fw_learn_flush(l);
	if (l->reg && l->reg->hook_ctx == l) {
		l->reg->on_domains = NULL;
		l->reg->on_release = NULL;
		l->reg->on_reap = NULL;
		l->reg->hook_ctx = NULL;
	}
	for (size_t b = 0; l->buckets && b < l->nbuckets; b++)
		while (l->buckets[b])
			entry_drop(l, l->buckets[b], false); /* the kernel keeps enforcing */
	for (size_t b = 0; b < PORTSET_BUCKETS; b++) {
		while (l->portsets[b]) {
			struct lports *p = l->portsets[b];

			l->portsets[b] = p->next;
			free(p);
		}
	}
	for (size_t b = 0; b < NAME_BUCKETS; b++) {
		while (l->names[b]) {
			struct lname *n = l->names[b];

			l->names[b] = n->next;
			free(n);
		}
	}
	free(l->adopt_names);
	free(l->buckets);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

void fw_learn_set_config(struct fw_learn *l, const struct fw_learn_config *c)
{
	pthread_mutex_lock(&l->lock);
	l->cfg = *c;
	pthread_mutex_unlock(&l->lock);
}

void fw_learn_set_monitor(struct fw_learn *l,
			  void (*sink)(void *ctx, const struct fw_learn_event *ev),
			  bool (*wants)(void *ctx), void *ctx)
{
	l->mon = sink;
	l->mon_wants = wants;
	l->mon_ctx = ctx;
}

void fw_learn_set_event_sink(struct fw_learn *l,
			     void (*sink)(void *ctx, const struct fw_learn_event *ev), void *ctx)
{
	pthread_mutex_lock(&l->lock);
	l->sink = sink;
	l->sink_ctx = ctx;
	pthread_mutex_unlock(&l->lock);
}

void fw_learn_get_stats(struct fw_learn *l, struct fw_learn_stats *out)
{
	pthread_mutex_lock(&l->lock);
	*out = l->st;
	out->allowed = __atomic_load_n(&l->st.allowed, __ATOMIC_RELAXED);
	out->denied = __atomic_load_n(&l->st.denied, __ATOMIC_RELAXED);
	out->no_policy = __atomic_load_n(&l->st.no_policy, __ATOMIC_RELAXED);
	out->entries = l->n;
	pthread_mutex_unlock(&l->lock);
}

int fw_learn_lookup(struct fw_learn *l, __u32 id, const struct fw_ip *addr,
		    struct fw_learn_info *out)
{
	struct lentry *e;
	int err = -ENOENT;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&l->lock);
	e = id && id < FW_MAX_SUBJECTS ? entry_find(l, id, addr) : NULL;
	if (e) {
		out->expires_ns = e->expires_ns;
		out->learned_ns = e->learned_ns;
		out->adopted = e->adopted;
		out->nnames = e->nnames;
		for (unsigned int i = 0; i < e->nnames; i++)
			snprintf(out->names[i], sizeof(out->names[i]), "%s", e->names[i]->text);
		err = 0;
	}
	pthread_mutex_unlock(&l->lock);
	return err;
}

size_t fw_learn_count(struct fw_learn *l, __u32 id)
{
	size_t n;

	if (id == 0 || id >= FW_MAX_SUBJECTS)
		return 0;
	pthread_mutex_lock(&l->lock);
	n = l->subj[id].retired ? 0 : l->subj[id].count;
	pthread_mutex_unlock(&l->lock);
	return n;
}
