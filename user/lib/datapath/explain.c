// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The data plane's decision order, read from the pinned maps (explain.h).
 * Each step mirrors one of bpf/egress.bpf.c's fw_decide, bpf/lib/policy.h's
 * fw_policy_from or bpf/lib/cgroup.h's fw_cg_decide; a change to one of
 * those needs the same change here (the verdict table checks both agree). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <bpf/bpf.h>

#include "common/addr.h"
#include "datapath/cgroup.h"
#include "datapath/explain.h"
#include "datapath/l7.h"
#include "datapath/ranges.h"

#define FW_XSTEP_NAME_(id, name) [id] = name,
static const char *const step_names[FW_XS_MAX] = {FW_XSTEPS(FW_XSTEP_NAME_)};
#undef FW_XSTEP_NAME_

const char *fw_xstep_name(enum fw_xstep s)
{
	return (unsigned int)s < FW_XS_MAX ? step_names[s] : "unknown";
}

static bool ip_eq(const struct fw_ip *a, const struct fw_ip *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static bool is_v4mapped(const struct fw_ip *a)
{
	return FW_IP_W(a)[0] == 0 && FW_IP_W(a)[1] == 0 && FW_IP_W(a)[2] == htonl(0xffff);
}

static bool l4_port(const struct fw_xpkt *p, __u16 port)
{
	return p->has_ports && p->dport == port &&
	       (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP);
}

/* fw_is_pod_local of bpf/lib/subject.h */
static bool pod_local(struct fw_dp *dp, const struct fw_subject *s, __u8 family,
		      const struct fw_ip *a)
{
	__u8 gw_flag = family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
	struct fw_local v;

	if ((s->flags & gw_flag) && ip_eq(a, &s->gateway[family & 1]))
		return true;
	if (family == FW_FAM_V4) {
		__u32 x = ntohl(FW_IP_W(a)[3]);

		if ((x >> 24) == 127 || (x >> 8) == 0xe00000 || x == 0xffffffff)
			return true;
	} else {
		__u32 w0 = ntohl(FW_IP_W(a)[0]);

		if ((w0 | FW_IP_W(a)[1] | FW_IP_W(a)[2]) == 0 && FW_IP_W(a)[3] == htonl(1))
			return true;
		if ((w0 & 0xffc00000) == 0xfe800000 || (w0 >> 16) == 0xff02)
			return true;
	}
	return bpf_map_lookup_elem(dp->local_fd, a, &v) == 0;
}

/* fw_doh_blocked of bpf/lib/doh.h */
static bool doh_blocked(struct fw_dp *dp, const struct fw_config *cfg, const struct fw_xpkt *p)
{
	struct fw_lpm_key key = {.prefixlen = 128, .addr = p->dst};
	__u8 v;

	if (p->proto != IPPROTO_TCP || !p->has_ports || p->dport != 443)
		return false;
	if (cfg->flags & FW_CF_DOH_STRICT)
		return true;
	if (!(cfg->flags & FW_CF_DOH_LIST))
		return false;
	return bpf_map_lookup_elem(dp->doh_fd, &key, &v) == 0;
}

/* The one place that knows how a subject finds its trie: today the slot
 * of its own id in fastwall_rules_v2. */
int fw_explain_trie_fd(struct fw_dp *dp, const struct fw_subject *s)
{
	__u32 slot = s->id, inner = 0;
	int fd;

	if (bpf_map_lookup_elem(dp->rules_fd, &slot, &inner))
		return -ENOENT;
	fd = bpf_map_get_fd_by_id(inner);
	return fd < 0 ? -errno : fd;
}

/* The prefix of the entry a lookup of dst under gen found: the longest
 * key of that generation containing dst (a walk of the keys; only for
 * the display, the lookup's value is what decides). */
static void entry_prefix(int trie, __u32 gen, const struct fw_ip *dst, struct fw_xresult *r)
{
	struct fw_rule_key k, prev;
	bool first = true;
	long budget = 4L * FW_MAX_RULES;

	while (budget-- > 0 && bpf_map_get_next_key(trie, first ? NULL : &prev, &k) == 0) {
		first = false;
		prev = k;
		if (ntohl(k.gen) != gen || k.prefixlen < 32 || k.prefixlen > 160)
			continue;
		if (!fw_prefix_contains(&k.addr, k.prefixlen - 32, dst))
			continue;
		if (!r->has_prefix || k.prefixlen - 32 > r->prefix_len) {
			r->has_prefix = true;
			r->prefix = k.addr;
			r->prefix_len = k.prefixlen - 32;
		}
	}
}

/* fw_rule_get's range table of bpf/lib/rules.h (its element names the
 * slot): the same search; the entry's prefix is the destination cut to
 * the entry's length. */
static bool range_entry(struct fw_dp *dp, const struct fw_subject *s, const struct fw_ip *dst,
			struct fw_xresult *r)
{
	struct fw_set_key k = {.subject = s->id, .gen = s->rules_gen};
	struct fw_range_set *set;
	struct fw_ip mask;
	int at = -1;
	__u32 slot;

	if (dp->rule_ranges_fd < 0 || dp->range_tables_fd < 0 ||
	    bpf_map_lookup_elem(dp->rule_ranges_fd, &k, &slot) || !(set = malloc(sizeof(*set))))
		return false;
	if (bpf_map_lookup_elem(dp->range_tables_fd, &slot, set) == 0)
		at = fw_range_find(set, dst);
	if (at >= 0) {
		r->entry = set->rule[at];
		r->has_prefix = true;
		r->prefix_len = set->plen[at];
		fw_prefix_netmask(&mask, r->prefix_len);
		fw_ip_and(&r->prefix, dst, &mask);
	}
	free(set);
	return at >= 0;
}

/* fw_rule_get's small set of bpf/lib/rules.h: subject s's set, chunk
 * after chunk, the first entry (longest prefix first) whose prefix holds
 * dst. */
static bool set_entry(struct fw_dp *dp, const struct fw_subject *s, const struct fw_ip *dst,
		      struct fw_xresult *r)
{
	struct fw_rule_set set;

	if (dp->rule_sets_fd < 0)
		return false;
	for (__u32 c = 0; c < FW_SET_CHUNKS; c++) {
		struct fw_set_key k = {.subject = FW_SET_SUBJECT(s->id, c), .gen = s->rules_gen};

		if (bpf_map_lookup_elem(dp->rule_sets_fd, &k, &set))
			return false;
		for (__u32 i = 0; i < set.n && i < FW_SET_MAX; i++) {
			const struct fw_set_entry *e = &set.e[i];
			__u32 plen = 0;

			for (int b = 0; b < 16; b++)
				plen += (__u32)__builtin_popcount(e->mask.b[b]);
			if (!fw_prefix_contains(&e->addr, plen, dst))
				continue;
			r->entry = e->rule;
			r->has_prefix = true;
			r->prefix = e->addr;
			r->prefix_len = plen;
			return true;
		}
	}
	return false;
}

/* fw_policy_from of bpf/lib/policy.h: deny CIDRs, allow CIDRs, learned
 * leases, default. */
static __u32 policy(struct fw_dp *dp, const struct fw_subject *s, const struct fw_xpkt *p,
		    __u64 now, struct fw_xresult *r)
{
	struct fw_rule_key key = {
		.prefixlen = 32 + 128, .gen = htonl(s->rules_gen), .addr = p->dst};
	struct fw_learned_key lkey = {.subject = s->id, .addr = p->dst};
	bool tcpudp = p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP;
	struct fw_rule *rule = &r->entry;
	int trie;

	r->step = FW_XS_NO_POLICY;
	if (s->rules_gen & FW_GEN_RANGE) {
		if (!range_entry(dp, s, &p->dst, r))
			return FW_DROP_NO_POLICY;
		r->has_entry = true;
	} else if (s->rules_gen & FW_GEN_SET) {
		if (!set_entry(dp, s, &p->dst, r))
			return FW_DROP_NO_POLICY;
		r->has_entry = true;
	} else {
		trie = fw_explain_trie_fd(dp, s);
		if (trie < 0)
			return FW_DROP_NO_POLICY;
		if (bpf_map_lookup_elem(trie, &key, rule)) {
			close(trie);
			return FW_DROP_NO_POLICY;
		}
		r->has_entry = true;
		entry_prefix(trie, s->rules_gen, &p->dst, r);
		close(trie);
	}

	if (rule->portset && p->has_ports && tcpudp) {
		struct fw_port_rule_key pk = {
			.subject = s->id, .portset = rule->portset, .port = p->dport};
		__u8 v;

		if (bpf_map_lookup_elem(dp->ports_fd, &pk, &v) == 0) {
			r->step = FW_XS_PORT_RULE;
			r->port_action = v;
			return v == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
		}
	}
	if (!rule->is_default && rule->action != FW_ACTION_NONE) {
		r->step = FW_XS_RULE;
		return rule->action == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
	}
	r->step = FW_XS_DEFAULT;
	if (rule->dflt == FW_ACTION_ALLOW)
		return FW_PASS_DEFAULT;

	if (bpf_map_lookup_elem(dp->learned_fd, &lkey, &r->lease))
		return FW_DROP_DEFAULT_DENY;
	r->has_lease = true;
	r->step = FW_XS_LEASE;
	r->now_ns = now;
	if (bpf_map_lookup_elem(dp->learned_names_fd, &lkey, &r->names))
		memset(&r->names, 0, sizeof(r->names));
	if (r->lease.expires_ns <= now)
		return FW_DROP_LEASE_EXPIRED;
	if (r->lease.portset) {
		struct fw_port_rule_key pk = {
			.subject = s->id, .portset = r->lease.portset, .port = p->dport};
		__u8 v;

		if (!p->has_ports || !tcpudp || bpf_map_lookup_elem(dp->learned_ports_fd, &pk, &v))
			return FW_DROP_LEARNED_PORT;
	}
	return FW_PASS_LEARNED;
}

/* fw_pod_flow_live of bpf/lib/flows.h. A lookup by syscall leaves the
 * LRU's reference bit alone: asking does not keep a flow alive. */
static bool pod_flow_live(struct fw_dp *dp, const struct fw_config *cfg, const struct fw_xpkt *p,
			  __u64 now)
{
	struct fw_flow_key k = {
		.sandbox = p->src,
		.pod = p->dst,
		.sandbox_port = htons(p->sport),
		.pod_port = htons(p->dport),
		.proto = p->proto,
	};
	struct fw_flow f;

	if (!p->has_ports || !p->sport || bpf_map_lookup_elem(dp->pod_flows_fd, &k, &f))
		return false;
	return now - f.last_seen_ns < cfg->pod_flow_timeout_ns;
}

/* fw_l7_redirect of bpf/lib/l7.h (cgroup false), or the pinning of
 * bpf/lib/cgroup.h's connect (cgroup true: a connect is always a new
 * connection, to the proxy on loopback, with no gateway or table entry
 * yet). reason: the policy's verdict. */
static __u32 l7_decide(struct fw_dp *dp, const struct fw_config *cfg, const struct fw_xpkt *p,
		       __u64 now, bool cgroup, __u32 reason, struct fw_xresult *r)
{
	const struct fw_subject *s = &r->subject;
	struct fw_port_key pk = {.proto = IPPROTO_TCP, .port = htons(p->dport)};
	struct fw_l7_nat_key k = {.client = p->src, .client_port = htons(p->sport)};
	__u8 gw_flag = p->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
	bool syn = !p->tcp_flags || (p->tcp_flags & (TH_SYN | TH_ACK)) == TH_SYN;
	struct fw_l7_nat *cur = &r->l7_nat;
	__u64 *counts;
	bool same, open;

	if (!(cfg->flags & FW_CF_L7) || dp->l7_ports_fd < 0)
		return reason;
	if (reason != FW_PASS_LEARNED && reason != FW_PASS_ALLOW_CIDR)
		return reason;
	if (!p->has_ports || (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP))
		return reason;
	if (bpf_map_lookup_elem(dp->l7_ports_fd, &pk, &r->l7_port))
		return reason;
	if (!(s->flags & FW_SF_L7))
		return reason;
	if (reason == FW_PASS_ALLOW_CIDR && !(s->flags & FW_SF_L7_CIDR))
		return reason;
	if (p->proto == IPPROTO_UDP &&
	    (r->l7_port.kind != FW_L7_TLS || (cfg->flags & FW_CF_L7_QUIC)))
		return reason;
	r->l7_pass = reason;
	r->l7_step = r->step;
	r->step = FW_XS_L7;
	if (p->proto == IPPROTO_UDP)
		return FW_DROP_L7_QUIC;
	if (cgroup)
		return (cfg->flags & FW_CF_L7_UP) ? FW_PASS_L7_PROXY : FW_DROP_L7_PROXY_DOWN;
	if (!(s->flags & gw_flag))
		return FW_DROP_L7_PROXY_DOWN;
	k.proxy_port = r->l7_port.proxy_port;
	r->has_l7_nat =
		p->sport && dp->l7_nat_fd >= 0 && bpf_map_lookup_elem(dp->l7_nat_fd, &k, cur) == 0;
	same = r->has_l7_nat && ip_eq(&cur->orig_dst, &p->dst) && cur->orig_port == htons(p->dport);
	if (!syn)
		return same ? FW_PASS_L7_PROXY : FW_DROP_L7_UNTRACKED;
	if (!(cfg->flags & FW_CF_L7_UP))
		return FW_DROP_L7_PROXY_DOWN;
	/* neither side closed it */
	open = r->has_l7_nat && !cur->closed && !cur->reported;
	if (open && same)
		return FW_PASS_L7_PROXY; /* a retransmitted SYN */
	if (open && now - cur->last_seen_ns < FW_L7_REUSE_NS)
		return FW_DROP_L7_PORT_REUSE;
	/* fw_l7_put: the subject's own entry, still counted, is overwritten;
	 * anything else is a new entry, within the subject's share */
	if (r->has_l7_nat && cur->subject == s->id && !cur->reported)
		return FW_PASS_L7_PROXY;
	counts = fw_dp_l7_counts(dp);
	if (cfg->conn_quota && counts && s->id < FW_MAX_SUBJECTS &&
	    __atomic_load_n(&counts[s->id], __ATOMIC_RELAXED) >= cfg->conn_quota)
		return FW_DROP_L7_FULL;
	return FW_PASS_L7_PROXY;
}

static int config_of(struct fw_dp *dp, struct fw_config *cfg)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(dp->config_fd, &zero, cfg) ? -errno : 0;
}

/* fw_decide of bpf/egress.bpf.c, with the steps of fw_from_sandbox
 * before it that an unfragmented TCP, UDP or ICMP echo packet meets. */
static __u32 tc_decide(struct fw_dp *dp, const struct fw_xpkt *p, __u64 now, struct fw_xresult *r)
{
	const struct fw_subject *s = &r->subject;
	struct fw_config cfg;
	__u8 fam = p->family & 1;
	__u32 ifindex;

	if (p->family == FW_FAM_V6 && (is_v4mapped(&p->src) || is_v4mapped(&p->dst))) {
		r->step = FW_XS_V4MAPPED;
		return FW_DROP_V4MAPPED;
	}
	if (config_of(dp, &cfg)) {
		r->step = FW_XS_NO_CONFIG;
		return FW_DROP_NO_POLICY;
	}
	if (bpf_map_lookup_elem(dp->dispatch_fd, &p->src, &r->subject)) {
		r->step = FW_XS_NO_SUBJECT;
		return FW_DROP_UNKNOWN_SOURCE;
	}
	r->has_subject = true;
	/* no interface given: the subject's own, which a subject bound to an
	 * interface that is not there (FW_IFINDEX_MISSING) never has */
	ifindex = p->ifindex != FW_IFINDEX_ANY ? p->ifindex : s->ifindex;
	if (ifindex == FW_IFINDEX_MISSING)
		ifindex = FW_IFINDEX_ANY;
	r->step = FW_XS_INTERFACE;
	if (s->ifindex != FW_IFINDEX_ANY && s->ifindex != ifindex)
		return FW_DROP_SPOOF;
	if ((cfg.flags & FW_CF_DNS_PROXY) && l4_port(p, 53)) {
		__u8 gw_flag = p->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;

		r->step = FW_XS_DNS_REDIRECT;
		if (pod_local(dp, s, p->family, &p->dst))
			return FW_PASS_DNS_PROXY;
		if ((cfg.flags & FW_CF_DNS_ALL) && (s->flags & gw_flag))
			return FW_PASS_DNS_PROXY;
	}
	r->step = FW_XS_STATE;
	if (s->state != FW_STATE_ACTIVE)
		return FW_DROP_DENYING;
	r->step = FW_XS_DOT;
	if (l4_port(p, 853))
		return FW_DROP_DOT;
	if (pod_local(dp, s, p->family, &p->dst)) {
		struct fw_port_key pk = {.proto = p->proto, .port = htons(p->dport)};
		__u8 v;

		r->step = FW_XS_POD_LOCAL;
		if (l4_port(p, 53))
			return FW_PASS_DNS_LOCAL;
		if (p->has_ports && bpf_map_lookup_elem(dp->local_ports_fd, &pk, &v) == 0)
			return FW_PASS_POD_LOCAL;
		if (pod_flow_live(dp, &cfg, p, now))
			return FW_PASS_POD_REPLY;
		r->pod_reply_possible = p->has_ports && !p->sport;
		return FW_DROP_POD_LOCAL;
	}
	r->step = FW_XS_LOCAL_FULL;
	if (cfg.flags & FW_CF_LOCAL_FULL)
		return FW_DROP_POD_LOCAL;
	r->step = FW_XS_SIBLING;
	if (s->private_plen[fam] &&
	    fw_prefix_contains(&s->private_net[fam], s->private_plen[fam], &p->dst))
		return FW_DROP_SIBLING;
	r->step = FW_XS_DOH;
	if (doh_blocked(dp, &cfg, p))
		return FW_DROP_DOH;
	return l7_decide(dp, &cfg, p, now, false, policy(dp, s, p, now, r), r);
}

int fw_explain_tc(struct fw_dp *dp, const struct fw_xpkt *p, __u64 now_ns, struct fw_xresult *r)
{
	memset(r, 0, sizeof(*r));
	r->now_ns = now_ns;
	r->reason = tc_decide(dp, p, now_ns, r);
	return 0;
}

/* fw_connect of bpf/cgroup.bpf.c, then fw_cg_decide of bpf/lib/cgroup.h */
int fw_explain_cgroup(struct fw_dp *dp, const struct fw_subject *s, const struct fw_xpkt *p,
		      __u64 now_ns, struct fw_xresult *r)
{
	struct fw_config cfg;

	memset(r, 0, sizeof(*r));
	r->now_ns = now_ns;
	r->has_subject = true;
	r->subject = *s;
	if (config_of(dp, &cfg)) {
		r->step = FW_XS_NO_CONFIG;
		r->reason = FW_DROP_NO_POLICY;
		return 0;
	}
	r->step = FW_XS_DNS_REDIRECT;
	r->reason = FW_PASS_DNS_PROXY;
	if ((cfg.flags & FW_CF_DNS_PROXY) && l4_port(p, 53))
		return 0;
	r->step = FW_XS_STATE;
	r->reason = FW_DROP_DENYING;
	if (s->state != FW_STATE_ACTIVE)
		return 0;
	r->step = FW_XS_DOT;
	r->reason = FW_DROP_DOT;
	if (l4_port(p, 853))
		return 0;
	r->step = FW_XS_DOH;
	r->reason = FW_DROP_DOH;
	if (doh_blocked(dp, &cfg, p))
		return 0;
	r->reason = l7_decide(dp, &cfg, p, now_ns, true, policy(dp, s, p, now_ns, r), r);
	return 0;
}

int fw_explain_cgroup_subject(struct fw_dp *dp, const char *root, const char *path,
			      struct fw_subject *out)
{
	char real_root[PATH_MAX], real[PATH_MAX], prefix[PATH_MAX];
	size_t rlen;
	const char *rest;
	int lvl = 0;

	if (dp->cgroups_fd < 0)
		return -ENOENT;
	if (!realpath(root, real_root) || !realpath(path, real))
		return -errno;
	rlen = strlen(real_root);
	if (strncmp(real, real_root, rlen) != 0 || (real[rlen] != '/' && real[rlen] != '\0'))
		return -EXDEV; /* not below this cgroup2 mount */
	if (rlen == 1)
		rlen = 0; /* a mount at / */
	rest = real + rlen;
	/* from the top down, as fw_cg_task_subject: level 1 first */
	while (*rest == '/' && lvl < FW_CG_MAX_LEVELS) {
		const char *next = strchr(rest + 1, '/');
		size_t upto = (size_t)((next ? next : rest + strlen(rest)) - real);
		__u64 id;

		if (rest[1] == '\0')
			break;
		lvl++;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)upto, real);
		if (fw_cg_id_of(prefix, &id) == 0 &&
		    bpf_map_lookup_elem(dp->cgroups_fd, &id, out) == 0)
			return 0;
		if (!next)
			break;
		rest = next;
	}
	return -ENOENT;
}
