/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The subject registry: every subject fastwalld has put in the kernel, by
 * name (static subject name or sandbox uid), with its kernel id, binding
 * and rule-set hash. It is the one writer of subjects to the data plane
 * and adopts what it finds pinned after a restart. Thread-safe: changes to
 * one subject are serialised by that entry's lock (fw_reg_get/fw_reg_put),
 * the registry lock is held only for bookkeeping and address ownership, so
 * one subject's work never waits for another's. Functions return 0 or a
 * negative errno. */
#ifndef FW_SUBJECTS_H
#define FW_SUBJECTS_H

#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>

#include "common/iptab.h"
#include "datapath/datapath.h"

#define FW_REG_BUCKETS	     4096
#define FW_SUBJECT_MAX_ADDRS 8

/* What a subject is, as the registry takes it from the static
 * configuration or the actions protocol: its name, the addresses dispatch
 * sends to it, its host side (interface, MAC, gateways, private nets),
 * its state and its policy. */
struct fw_subject_spec {
	char name[FW_NAME_LEN];
	struct fw_ip addrs[FW_SUBJECT_MAX_ADDRS];
	size_t naddrs;
	char ifname[IF_NAMESIZE]; /* "" = not bound to an interface */
	bool has_mac;		  /* mac: the only source MAC its interface accepts */
	__u8 mac[6];
	bool has_gateway[FW_FAM_MAX];
	struct fw_ip gateway[FW_FAM_MAX];
	bool has_private[FW_FAM_MAX];
	struct fw_prefix private_net[FW_FAM_MAX];
	__u8 state; /* FW_STATE_ACTIVE (default) or FW_STATE_DENYING */
	struct fw_policy policy;
	/* a process sandbox: the cgroup v2 id whose processes (and those of
	 * every cgroup below it) are this subject; 0 = none */
	__u64 cgroup_id;
	/* a static process sandbox: its cgroup below processes.cgroup_parent,
	 * which fastwalld resolves to cgroup_id; "" = none */
	char cgroup[256];
	/* a static process sandbox's processes may hold the capabilities that
	 * leave it (subjects/run.h, fw_sandbox_caps); without, fastwalld holds
	 * an active subject denying (caps_held) while one of them does */
	bool keep_caps;
	bool caps_held;
};

/* What the DNS proxy decides a subject's queries on: its domain rules
 * behind the operator overlay's, in first-match order, and its state.
 * Immutable once published and reference counted, so a query decides on
 * one whole version while an update publishes the next. */
struct fw_domain_policy {
	int refs; /* atomic */
	__u8 state;
	struct fw_policy policy; /* domain and wildcard rules only */
	__u64 hash;
};

struct fw_entry {
	pthread_mutex_t op;	/* held by whoever changes this subject */
	struct fw_entry *next;	/* name table chain, under the registry lock */
	int refs;		/* under the registry lock */
	__u32 id;		/* kernel id; 0 = nothing in the kernel */
	struct fw_subject ksub; /* as written to fastwall_dispatch */
	struct fw_subject_meta meta;
	struct fw_ip addrs[FW_SUBJECT_MAX_ADDRS]; /* under the registry lock */
	size_t naddrs;
	__u64 cgroup_id;		  /* what fastwall_cgroups holds for it; 0 = none */
	bool adopted;			  /* found in the kernel at start, not yet reconfirmed */
	struct fw_compiled_set live;	  /* what the live rule trie holds, if known */
	void *priv;			  /* the protocol layer's state; keeps the entry alive */
	struct fw_domain_policy *domains; /* under the registry lock; NULL until applied */
	/* a process sandbox root started: its policy as given, what the
	 * hosts of its credential vault are checked against (NULL: it takes
	 * no vault); goes when the subject does */
	struct fw_policy *run_policy;
	__u64 pinned_domains; /* the digest fastwall_subject_domains holds for id; 0: unknown */
	/* the limit fastwall_bandwidth holds for id (rate 0: none), when
	 * bw_known; a write starts the limit's state afresh, so only a
	 * change is written */
	__u64 bw_rate, bw_burst;
	bool bw_known;
};

/* A subject's change in the kernel, for the audit trail. */
struct fw_reg_change {
	const char *name;
	const char *what; /* "added", "updated", "rebound" (new id), "removed" */
	__u32 old_id, id;
	__u64 fence_hash;	    /* 0: a static subject */
	__u64 old_policy, policy;   /* compiled rule-set digests; 0: none */
	__u64 old_domains, domains; /* domain-rule digests (the DNS side); 0: none */
	__u8 state;		    /* FW_STATE_* now */
	enum fw_origin origin;
};

struct fw_registry {
	struct fw_dp *dp;
	pthread_mutex_t lock;
	/* address -> the subject id fastwall_dispatch sends it to, for every
	 * address the map holds (registry lock held). The registry is the
	 * map's only writer, so this follows each of its writes, and a claim
	 * or a removal asks here instead of the kernel: one lookup syscall
	 * less per address of every add, update, rebind and remove. Without
	 * it (no memory, or more addresses than the map's capacity, owners_lost)
	 * the kernel is asked as before. */
	struct fw_iptab owners;
	bool owners_lost;
	struct fw_policy overlay; /* operator rules ahead of everyone's, own copy */
	/* layer-7 pinning (the l7 section), set before the first apply: on
	 * at all; whether a subject whose policy says nothing (l7) is pinned;
	 * whether allow-CIDR destinations are pinned too. They become
	 * FW_SF_L7 and FW_SF_L7_CIDR in the subject's dispatch and cgroups
	 * values (fw_reg_l7_flags). */
	bool l7_enabled, l7_default_on, l7_cidr_pin;
	struct fw_entry *by_id[FW_MAX_SUBJECTS];
	bool id_reserved[FW_MAX_SUBJECTS];
	/* retired ids: reserved until fw_reg_reap() has deleted what the
	 * kernel still holds for them; when they were retired */
	bool id_dead[FW_MAX_SUBJECTS];
	__u64 dead_ns[FW_MAX_SUBJECTS];
	__u32 id_gen[FW_MAX_SUBJECTS]; /* bumped whenever the id is handed out */
	size_t ndead;
	pthread_mutex_t reap_lock; /* one reaper at a time */
	struct fw_entry *names[FW_REG_BUCKETS];
	size_t count;		       /* entries with a kernel id */
	void (*priv_free)(void *priv); /* for the entries' priv on fw_reg_free */
	/* the DNS side's hooks (may be NULL), called with the entry's lock
	 * held and the registry lock not held: a subject's domain policy
	 * changed under the same id; an id was retired (nothing reaches its
	 * learned addresses any more; the reaper deletes them from the kernel,
	 * the hook forgets them) */
	void (*on_domains)(void *ctx, __u32 id);
	void (*on_release)(void *ctx, __u32 id);
	/* the reaper deleted a retired id's kernel entries and is about to
	 * free it (called from fw_reg_reap, no lock held) */
	void (*on_reap)(void *ctx, __u32 id);
	void *hook_ctx;
	/* a subject changed in the kernel (may be NULL; entry lock held) */
	void (*on_change)(void *ctx, const struct fw_reg_change *c);
	void *change_ctx;
};

/* Adopts the subjects pinned in dp's maps (marked adopted). Every other
 * id counts as retired until the next fw_reg_reap() (ids retired before the
 * restart, and whatever an interrupted release or a foreign write left). */
int fw_reg_init(struct fw_registry *r, struct fw_dp *dp);

/* Removal is O(1): it deletes a subject's dispatch entries and rule trie
 * and marks its id retired. This deletes the learned addresses, connection
 * records and port exceptions of every id retired at least min_age_ns ago,
 * in one scan of each map whatever the number of ids, and then frees the
 * ids. Returns how many ids were freed or a negative errno. */
#define FW_REAP_AGE_NS FW_NSEC_PER_SEC
int fw_reg_reap(struct fw_registry *r, __u64 min_age_ns);
/* What id is to the registry: 1 bound, 0 free, -1 retired or not yet
 * known to be empty (not reaped). gen (may be NULL) gets the id's
 * generation, which changes whenever the id is handed out again. */
int fw_reg_id_state(struct fw_registry *r, __u32 id, __u32 *gen);
void fw_reg_free(struct fw_registry *r);

/* Returns name's entry with its lock held (create: a new, empty entry if
 * there is none), or NULL. Every fw_reg_get is paired with fw_reg_put. */
struct fw_entry *fw_reg_get(struct fw_registry *r, const char *name, bool create);
/* Unlocks e; an entry with nothing in the kernel and no priv is dropped. */
void fw_reg_put(struct fw_registry *r, struct fw_entry *e);

/* Makes the kernel hold spec for e (lock held). The identity of a subject
 * is its fence (fence_hash != 0, actions protocol) or, for static subjects
 * (fence_hash 0), its binding. Same identity: the rule set is swapped in
 * place and the binding updated (addresses moved) under the same id, so
 * learned addresses stay. New identity: a fresh id, so nothing learned
 * under the old one passes. Rules go in before dispatch. *changed (may be
 * NULL) tells whether anything in the kernel changed. */
int fw_reg_apply(struct fw_registry *r, struct fw_entry *e, const struct fw_subject_spec *spec,
		 enum fw_origin origin, __u64 fence_hash, bool *changed);
/* Removes every trace of e from the kernel (lock held). */
/* Keeps a copy of policy as e's run_policy (entry held): 0 or -ENOMEM. */
int fw_reg_set_run_policy(struct fw_entry *e, const struct fw_policy *policy);
int fw_reg_unbind(struct fw_registry *r, struct fw_entry *e);

/* Replaces the operator overlay (copied) used by later applies. */
int fw_reg_set_overlay(struct fw_registry *r, const struct fw_policy *overlay);

/* Sets the overlay (NULL: none), applies every one of the n static subjects, removes static
 * subjects no longer among them, and (prune_adopted) adopted static subjects nobody claimed. */
int fw_reg_sync_static(struct fw_registry *r, const struct fw_policy *overlay,
		       const struct fw_subject_spec *subjects, size_t n, bool prune_adopted);
/* Removes adopted subjects of origin that were not reconfirmed; returns
 * how many or a negative errno. */
int fw_reg_prune_adopted(struct fw_registry *r, enum fw_origin origin);
/* Re-resolves host interface names after links came or went. */
int fw_reg_links_changed(struct fw_registry *r);
/* The subject of cgroup cgid (fastwall_cgroups): its name and id;
 * -ENOENT when none. */
int fw_reg_cgroup_owner(struct fw_registry *r, __u64 cgid, char *name, size_t len, __u32 *id);
/* The subject dispatch sends address a to: its name and origin; -ENOENT
 * when none. */
int fw_reg_addr_owner(struct fw_registry *r, const struct fw_ip *a, char *name, size_t len,
		      enum fw_origin *origin);
/* The names of the bound protocol subjects (malloc'd, *n of them; NULL
 * when there are none or memory ran out). */
char (*fw_reg_protocol_names(struct fw_registry *r, size_t *n))[FW_NAME_LEN];
/* The same, and the process sandboxes that take a vault (run_policy). */
char (*fw_reg_vault_names(struct fw_registry *r, size_t *n))[FW_NAME_LEN];
/* Copies the name of subject id into buf ("" when unknown). */
void fw_reg_name_of(struct fw_registry *r, __u32 id, char *buf, size_t len);
size_t fw_reg_count(struct fw_registry *r);
/* A live subject: its kernel id and name. */
struct fw_reg_live {
	__u32 id;
	char name[FW_NAME_LEN];
};
/* The subjects that hold a kernel id now, by id (malloc'd, *n of them;
 * NULL when there are none or memory ran out). The lock is held for the
 * copy only. */
struct fw_reg_live *fw_reg_live_subjects(struct fw_registry *r, size_t *n);

/* Single-threaded callers (tests, benchmarks): get + apply + put. */
int fw_reg_upsert(struct fw_registry *r, const struct fw_subject_spec *spec, enum fw_origin origin,
		  bool *changed);
/* Single-threaded callers only: the entry of name without locking. */
struct fw_entry *fw_reg_find(struct fw_registry *r, const char *name);

/* The domain policy subject id decides on now (a reference; drop it with
 * fw_domain_policy_put), or NULL when the id is unknown or its policy was
 * not applied since fastwalld started (adopted, not yet reconfirmed). */
struct fw_domain_policy *fw_reg_domains(struct fw_registry *r, __u32 id);
void fw_domain_policy_put(struct fw_domain_policy *d);

/* The FW_SF_L7* flags the data plane gets for spec. */
__u8 fw_reg_l7_flags(const struct fw_registry *r, const struct fw_subject_spec *spec);

__u64 fw_binding_hash(const struct fw_subject_spec *spec);
__u64 fw_fence_hash(const char *runtime_instance_id, const char *attachment_id);

#endif /* FW_SUBJECTS_H */
