/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The DNS side of the policy: decides each query for its subject (the
 * proxy's decide hook), writes the addresses of allowed answers into the
 * kernel's learned set before the answer leaves (the learn hook), and owns
 * those leases afterwards: which names taught each address (revocation
 * when a policy stops allowing them), the per-subject cap, renewal while a
 * TCP connection is open, and garbage collection. Thread-safe. Functions
 * return 0 or a negative errno. */
#ifndef FW_LEARN_H
#define FW_LEARN_H

#include <stdbool.h>

#include "dns/learn_keys.h"
#include "dns/wire.h"
#include "subjects/registry.h"

#define FW_LEARN_MAX_NAMES 8 /* names remembered per address; see fw_learn_answer */

/* A decided query, for the event streams (subject "" for an unknown
 * source): the deny log gets denied ones, rate limited; the monitor every
 * denied one and every allowed one once its answer is back. */
struct fw_learn_event {
	__u32 subject;
	const char *name; /* subject name */
	const struct fw_ip *client;
	const char *qname;
	__u16 qtype;
	enum fw_dns_reason reason;
	__u64 suppressed; /* events of this subject left out since the last */
	bool allowed;
	__u8 rcode; /* what the client gets: NXDOMAIN for a deny, else the answer's */
	const struct fw_dns_addr *learned; /* allowed: the addresses learned */
	__u32 nlearned;
};

struct fw_learn_stats {
	__u64 allowed, denied, no_policy;
	__u64 learned;		 /* addresses written (new or extended) */
	__u64 renewed;		 /* leases renewed for an open connection */
	__u64 grace;		 /* last renewals of a connection that ended */
	__u64 revoked;		 /* addresses whose names are no longer allowed */
	__u64 evicted;		 /* pushed out by the per-subject cap */
	__u64 cap_rejected;	 /* not learned: cap reached, all with live connections */
	__u64 port_cap_rejected; /* port sets refused: the subject's share of entries is used */
	__u64 expired;		 /* garbage-collected leases */
	__u64 kernel_errors;
	__u64 entries; /* addresses held now */
};

struct fw_learn;

/* reg must outlive l; l installs itself as reg's on_domains/on_release
 * hooks. */
/* The name of a DNS verdict reason (FW_DNS_REASONS): "dns-denied-name". */
const char *fw_dns_reason_name(enum fw_dns_reason reason);

int fw_learn_new(const struct fw_learn_config *c, struct fw_registry *reg, struct fw_learn **out);
/* Takes over the addresses the kernel already holds for bound subjects
 * (after a restart) with their port sets and the names that taught them
 * (fastwall_names, fastwall_learned_names), then judges every subject's
 * addresses by its policy of now (on_domains); an address none of whose
 * names was kept is never revoked, it ends with its lease. In a thread of
 * its own if background (a million take a few seconds), else before
 * returning. Until it is done the refresh rounds are skipped. Once per l. */
int fw_learn_adopt(struct fw_learn *l, bool background);
/* Stops and joins a background adoption. */
void fw_learn_free(struct fw_learn *l);
void fw_learn_set_config(struct fw_learn *l, const struct fw_learn_config *c);
void fw_learn_set_event_sink(struct fw_learn *l,
			     void (*sink)(void *ctx, const struct fw_learn_event *ev), void *ctx);
/* Every decision, unlimited, from the proxy's threads (the monitor); wants
 * (may be NULL) says whether anyone listens, so idle decisions cost a call. */
void fw_learn_set_monitor(struct fw_learn *l,
			  void (*sink)(void *ctx, const struct fw_learn_event *ev),
			  bool (*wants)(void *ctx), void *ctx);

/* The proxy's hooks (struct fw_dnsp_hooks, ctx = l). decide: NXDOMAIN for
 * an unknown source, a denying subject and a denied name; SERVFAIL while a
 * subject's policy is not known yet (just after a restart); else forward.
 * answer: learns every address of a's chain for the query's subject, on
 * the ports of the rules that allow the names that taught it; an address
 * in the kernel is only ever extended, never shortened. Fails (the client
 * gets SERVFAIL) when the kernel refuses the write or the subject's share
 * of port-set entries is used up (-ENOSPC). */
int fw_learn_decide(void *l, const struct fw_ip *client, const struct fw_dns_query *q,
		    __u64 *token);
int fw_learn_answer(void *l, const struct fw_ip *client, const struct fw_dns_query *q, __u64 token,
		    const struct fw_dns_answer *a);
/* flush: writes the names that taught the addresses learned since the
 * last flush to fastwall_names and fastwall_learned_names (the leases are
 * written before each answer leaves; the names only serve a restart). */
void fw_learn_flush(void *l);

/* Learns addr for subject id as taught by name (tests, benchmarks). */
int fw_learn_add(struct fw_learn *l, __u32 id, const struct fw_ip *addr, const char *name,
		 __u32 ttl);

/* One refresh round: renews the destinations of open connections, gives
 * ended ones their last renewal, drops stale connection records, and
 * collects expired leases. Call every refresh_interval_ns. */
int fw_learn_tick(struct fw_learn *l);

void fw_learn_get_stats(struct fw_learn *l, struct fw_learn_stats *out);

/* What is known of one learned address (CLI, tests): -ENOENT if none. */
struct fw_learn_info {
	__u64 expires_ns, learned_ns;
	size_t nnames;
	char names[FW_LEARN_MAX_NAMES][FW_DNS_NAME_BUF];
	bool adopted;
};
int fw_learn_lookup(struct fw_learn *l, __u32 id, const struct fw_ip *addr,
		    struct fw_learn_info *out);
size_t fw_learn_count(struct fw_learn *l, __u32 id);

#endif /* FW_LEARN_H */
