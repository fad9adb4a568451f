/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The egress policy model (the Sandbox Actions policy format) and its
 * compilation into one subject's LPM entries. Functions return 0 or a
 * negative errno; on -EINVAL an error text is written to err. */
#ifndef FW_POLICY_H
#define FW_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"

#define FW_POLICY_MAX_RULES 4096
#define FW_POLICY_MAX_PORTS 256
#define FW_DOMAIN_MAX	    253

struct fw_prefix {
	struct fw_ip net;
	__u32 plen; /* over 128 bits */
};

enum fw_target_kind {
	FW_TARGET_IP = 1,   /* a single address (full-length prefix) */
	FW_TARGET_CIDR,	    /* a prefix, host bits cleared */
	FW_TARGET_DOMAIN,   /* exact name, lowercased, no trailing dot */
	FW_TARGET_WILDCARD, /* "*.example.com": domain holds "example.com" */
};

struct fw_policy_rule {
	__u8 action; /* enum fw_action */
	enum fw_target_kind kind;
	struct fw_ip addr; /* IP and CIDR */
	__u32 plen;	   /* over 128 bits */
	char *domain;	   /* DOMAIN and WILDCARD, owned */
	__u16 *ports;	   /* optional, owned; NULL and 0 = all ports */
	size_t nports;
	/* the target as given, trimmed, owned: what "the same target" means
	 * to a policy push merge or removal, and what the policy JSON shows */
	char *target;
};

/* fastwall's extension of the policy object, "fastwallL7" (the reference
 * ignores it): whether the subject's TLS and HTTP connections are pinned
 * to the names that taught their destinations (docs/egress-l7.md). */
enum fw_policy_l7 {
	FW_POLICY_L7_DEFAULT = 0, /* not said: the configuration's l7.default */
	FW_POLICY_L7_OFF,
	FW_POLICY_L7_ON,
};

/* fastwall's extension "fastwallBandwidth" (the reference ignores it):
 * the subject's egress rate and burst (docs/bandwidth.md). */
enum fw_policy_bw {
	FW_POLICY_BW_DEFAULT = 0, /* not said: no limit (a merge keeps the one there) */
	FW_POLICY_BW_OFF,	  /* "off": no limit (a merge removes it) */
	FW_POLICY_BW_ON,	  /* bw_rate and bw_burst */
};

struct fw_policy {
	__u8 default_action; /* enum fw_action */
	__u8 l7;	     /* enum fw_policy_l7 */
	__u8 bw;	     /* enum fw_policy_bw */
	__u64 bw_rate;	     /* bytes per second, with FW_POLICY_BW_ON */
	__u64 bw_burst;	     /* bytes, with FW_POLICY_BW_ON */
	struct fw_policy_rule *rules;
	size_t nrules;
};

struct fw_compiled {
	struct fw_lpm_key key;
	struct fw_rule rule;
};

/* A per-port exception of the compiled entries whose rule.portset is
 * portset (numbered from 1 within one compiled set). */
struct fw_port_rule {
	__u32 portset;
	__u16 port;
	__u8 action; /* FW_ACTION_DENY or FW_ACTION_ALLOW */
	__u8 pad;
};

struct fw_compiled_set {
	struct fw_compiled *entries;
	size_t n;
	struct fw_port_rule *ports;
	size_t nports;
};

void fw_policy_init(struct fw_policy *p); /* default deny, no rules */
void fw_policy_free(struct fw_policy *p);
int fw_policy_copy(struct fw_policy *dst, const struct fw_policy *src);
/* Deep copy of one rule into dst (whose old contents are not freed). */
int fw_policy_rule_copy(struct fw_policy_rule *dst, const struct fw_policy_rule *src);
void fw_policy_rule_free(struct fw_policy_rule *r);

/* Trimmed, lowercased; "" means deny; anything but allow/deny is -EINVAL. */
int fw_action_parse(const char *s, __u8 *action, char *err, size_t errlen);
/* "on" or "off", also "true" or "false" (trimmed, case-insensitive) into
 * *l7 (enum fw_policy_l7);
 * -EINVAL and err otherwise. */
int fw_policy_l7_parse(const char *s, __u8 *l7, char *err, size_t errlen);
/* "on", "off" or "default" */
const char *fw_policy_l7_name(__u8 l7);
/* The limit of fastwallBandwidth: rate in bytes per second
 * (FW_BW_RATE_MIN..FW_BW_RATE_MAX), burst in bytes (FW_BW_BURST_MIN..
 * FW_BW_BURST_MAX; has_burst false: FW_BW_BURST_DEFAULT of the rate).
 * -EINVAL and err (naming the bound) otherwise, p unchanged. */
int fw_policy_bw_set(struct fw_policy *p, long long rate, bool has_burst, long long burst,
		     char *err, size_t errlen);
/* the limit p sets, 0 when none */
static inline __u64 fw_policy_bw_rate(const struct fw_policy *p)
{
	return p->bw == FW_POLICY_BW_ON ? p->bw_rate : 0;
}
int fw_policy_set_default(struct fw_policy *p, const char *action, char *err, size_t errlen);
/* Classifies target as IP, else CIDR, else domain (wildcard when "*.");
 * ports may be NULL. Validates ports (1-65535, at most 256, no
 * duplicates). Rejects an empty target and malformed domain names. */
int fw_policy_add_rule(struct fw_policy *p, const char *action, const char *target,
		       const long *ports, size_t nports, char *err, size_t errlen);

/* Matches a query name (any case, optional trailing dot) against the domain
 * rules in first-match order; returns the rule index or -1 and stores the
 * action decided (the default when nothing matches). */
int fw_policy_match_domain(const struct fw_policy *p, const char *name, __u8 *action);
/* The ports an address taught by names (n of them) may be reached on
 * under p: the union of the `ports` of the allow rules that match them
 * (first match each), written ascending and unique to out (room for
 * n * FW_POLICY_MAX_PORTS); returns how many. *all is set (and 0
 * returned) when one of them is allowed on every port: by a rule without
 * ports, or by the default. -EACCES when p allows none of them. */
int fw_policy_domain_ports(const struct fw_policy *p, const char *const *names, size_t n,
			   __u16 *out, bool *all);

/* Compiles overlay (may be NULL; its rules go first) and p into
 * non-overlapping-verdict LPM entries: deny prefixes, allow prefixes not
 * covered by any deny prefix, and the ::/0 default entry. *out is
 * malloc'd; the caller frees it. rule indexes count overlay rules first. */
int fw_policy_compile(const struct fw_policy *overlay, const struct fw_policy *p,
		      struct fw_compiled **out, size_t *n);
/* The whole compiled policy, per-port exceptions included. Each LPM entry
 * carries the union of every same-family rule whose prefix covers it, so
 * one longest-prefix lookup (plus one port lookup when the entry has
 * exceptions) decides: deny for every port wins, then per-port deny, then
 * allow for every port or per port, then learned and default. */
int fw_policy_compile_set(const struct fw_policy *overlay, const struct fw_policy *p,
			  struct fw_compiled_set *out);
void fw_compiled_set_free(struct fw_compiled_set *s);
__u64 fw_compiled_set_hash(const struct fw_compiled_set *s);

/* Stable 64-bit hash of a compiled rule set (order-independent). */
__u64 fw_compiled_hash(const struct fw_compiled *c, size_t n);

#endif /* FW_POLICY_H */
