// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall's TC programs, named for the direction as the sandbox sees it.
 * fw_from_sandbox runs at clsact ingress of every sandbox-facing port and
 * decides each packet a sandbox sends, sending its DNS to the proxy and
 * its pinned TCP connections to the layer-7 proxy; fw_to_sandbox runs at
 * clsact egress of the same ports (traffic into the sandbox): it gives
 * the proxies' answers their original source, records flows the pod
 * opens into a sandbox (so their replies can pass) and resets of
 * connections to learned addresses. */
/* the per-CPU subject rows (lib/rows.h) are these programs' alone */
#define FW_SUBJECT_ROWS 1
/* and so is the layer-7 redirect of a sandbox port's packets (lib/l7.h) */
#define FW_L7_TC 1
#include "lib/common.h"
#include "lib/parse.h"
#include "lib/config.h"
#include "lib/counters.h"
#include "lib/events.h"
#include "lib/subject.h"
#include "lib/answers.h"
#include "lib/doh.h"
#include "lib/names.h"
#include "lib/policy.h"
#include "lib/flows.h"
#include "lib/dns.h"
#include "lib/l7.h"
#include "lib/l2.h"
#include "lib/bandwidth.h" /* its maps only, created and pinned with the rest */
#include "lib/l7.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FW_ICMPV6_MLD_QUERY   130
#define FW_ICMPV6_MLD_REPORT  131
#define FW_ICMPV6_MLD_DONE    132
#define FW_ICMPV6_RS	      133
#define FW_ICMPV6_RA	      134
#define FW_ICMPV6_NS	      135
#define FW_ICMPV6_NA	      136
#define FW_ICMPV6_REDIRECT    137
#define FW_ICMPV6_MLD2_REPORT 143

/* A neighbour claim (ARP sender, NS source, NA target) updates the caches
 * of everyone on the bridge, so it must come from the subject that owns
 * the address, on its own port: otherwise a sandbox could answer for the
 * gateway or a sibling and take their traffic. */
static __always_inline __u32 fw_neigh_claim(struct __sk_buff *skb, const struct fw_ip *addr,
					    __u32 *subject, struct fw_subject **owner)
{
	struct fw_subject *s = fw_subject_of(addr);

	if (!s)
		return FW_DROP_UNKNOWN_SOURCE;
	*subject = s->id;
	if (owner)
		*owner = s;
	/* any state: a denying subject still resolves its gateway, so that
	 * its DNS can be answered NXDOMAIN rather than time out */
	if (s->ifindex != FW_IFINDEX_ANY && s->ifindex != skb->ifindex)
		return FW_DROP_SPOOF;
	return FW_PASS_NEIGH;
}

/* Where neighbour discovery goes: the solicited-node (ff02::1:ff00:0/104),
 * all-nodes and all-routers groups, link-local unicast (neither is ever
 * routed), one of the pod's own addresses (answers to the pod's
 * solicitations), and, from a subject's global address, its gateway or
 * another pod-local address (unicast NUD). Anything else would be routed
 * by the pod: a tunnel past the policy. */
static __always_inline bool fw_nd_dest_ok(const struct fw_pkt *pkt, const struct fw_subject *s)
{
	const struct fw_ip *d = &pkt->dst;

	if (fw_ip_is_ll(d))
		return true;
	if (FW_IP_W(d)[0] == bpf_htonl(0xff020000) && FW_IP_W(d)[1] == 0) {
		if (FW_IP_W(d)[2] == 0 &&
		    (FW_IP_W(d)[3] == bpf_htonl(1) || FW_IP_W(d)[3] == bpf_htonl(2)))
			return true;
		return FW_IP_W(d)[2] == bpf_htonl(1) && (bpf_ntohl(FW_IP_W(d)[3]) >> 24) == 0xff;
	}
	/* ::/96 (::1 above all) is pod-local by prefix, but nobody's
	 * neighbour: ND to it is never legitimate */
	if ((FW_IP_W(d)[0] | FW_IP_W(d)[1] | FW_IP_W(d)[2]) == 0)
		return false;
	if (s && fw_is_pod_local(s, FW_FAM_V6, d))
		return true;
	return fw_l2_pod_addr(d);
}

/* RS, NS and NA with hop limit 255: from the port's link-local address, a
 * subject's address on its own port, or :: (duplicate address detection,
 * RS); only where ND goes; claiming (NA target, DAD target) only the
 * port's own addresses; link-layer options with the port's MAC. Checks
 * without side effects first: a link-local address is learned for the
 * port only from a message that passes everything else. */
static __always_inline __u32 fw_nd(struct __sk_buff *skb, const struct fw_pkt *pkt,
				   struct fw_l2_port *port, __u32 *subject)
{
	struct fw_subject *s = NULL;
	bool from_zero = fw_ip_is_zero(&pkt->src), from_ll = fw_ip_is_ll(&pkt->src);
	__u32 reason;

	/* an advertisement from :: is invalid (RFC 4861 7.1.2) */
	if (from_zero && pkt->icmp_type == FW_ICMPV6_NA)
		return FW_DROP_ND_TARGET;
	if (!from_zero && !from_ll) {
		reason = fw_neigh_claim(skb, &pkt->src, subject, &s);
		if (reason != FW_PASS_NEIGH)
			return reason;
	}
	if (!fw_nd_dest_ok(pkt, s))
		return FW_DROP_ND_TARGET;
	if (pkt->icmp_type == FW_ICMPV6_NA) {
		if (fw_ip_is_zero(&pkt->nd_target))
			return FW_DROP_ND_TARGET;
		if (!fw_ip_is_ll(&pkt->nd_target)) {
			reason = fw_neigh_claim(skb, &pkt->nd_target, subject, NULL);
			if (reason != FW_PASS_NEIGH)
				return reason;
		}
	}
	reason =
		fw_nd_opts(skb, pkt, port, pkt->l4_off + (pkt->icmp_type == FW_ICMPV6_RS ? 8 : 24));
	if (reason != FW_PASS_NEIGH)
		return reason;

	if (from_ll) {
		reason = fw_l2_lladdr(skb, &port, &pkt->src);
		if (reason != FW_PASS_NEIGH)
			return reason;
	}
	if (pkt->icmp_type == FW_ICMPV6_NA && fw_ip_is_ll(&pkt->nd_target))
		return fw_l2_lladdr(skb, &port, &pkt->nd_target);
	if (pkt->icmp_type == FW_ICMPV6_NS && from_zero && fw_ip_is_ll(&pkt->nd_target))
		/* DAD of a link-local address: the prober claims it now, so a
		 * sibling that sees the probe can't take it first */
		return fw_l2_lladdr(skb, &port, &pkt->nd_target);
	return FW_PASS_NEIGH;
}

/* Link-local control a slot needs before (and regardless of) any subject:
 * ND with hop limit 255 and MLD to link-scope multicast. Router
 * advertisements and redirects from a sandbox are never legitimate. Only
 * for ICMPv6 that is not a later fragment; out of line, as the common
 * packet is none. */
static __noinline __u32 fw_icmp6_control(struct __sk_buff *skb, const struct fw_pkt *pkt,
					 struct fw_l2_port *port, __u32 *subject)
{
	struct fw_subject *s;

	switch (pkt->icmp_type) {
	case FW_ICMPV6_RS:
	case FW_ICMPV6_NS:
	case FW_ICMPV6_NA:
		if (pkt->hop_limit != 255)
			break;
		return fw_nd(skb, pkt, port, subject);
	case FW_ICMPV6_RA:
	case FW_ICMPV6_REDIRECT:
		s = fw_subject_of(&pkt->src);
		if (s)
			*subject = s->id;
		return FW_DROP_ROGUE_ND;
	case FW_ICMPV6_MLD_QUERY:
	case FW_ICMPV6_MLD_REPORT:
	case FW_ICMPV6_MLD_DONE:
	case FW_ICMPV6_MLD2_REPORT:
		/* ff02::/16, from the port's own addresses (or ::, RFC 3590) */
		if ((bpf_ntohl(FW_IP_W(&pkt->dst)[0]) >> 16) != 0xff02)
			return FW_PARSE_OK;
		if (fw_ip_is_zero(&pkt->src))
			return FW_PASS_NEIGH;
		if (fw_ip_is_ll(&pkt->src))
			return fw_l2_lladdr(skb, &port, &pkt->src);
		return fw_neigh_claim(skb, &pkt->src, subject, NULL);
	default:
		return FW_PARSE_OK;
	}
	/* ND with a hop limit below 255 was routed: forged or broken */
	s = fw_subject_of(&pkt->src);
	if (s)
		*subject = s->id;
	return FW_DROP_MALFORMED;
}

static __always_inline bool fw_is_l4_port(const struct fw_pkt *pkt, __u16 port)
{
	return pkt->has_ports && pkt->dport == bpf_htons(port) &&
	       (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP);
}

/* Out of line: traffic to the pod itself is the rare kind. */
static __noinline __u32 fw_pod_local(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	struct fw_port_key pk = {};

	if (fw_is_l4_port(pkt, 53))
		return FW_PASS_DNS_LOCAL;
	if (pkt->has_ports) {
		pk.proto = pkt->proto;
		pk.port = pkt->dport;
		if (bpf_map_lookup_elem(&fastwall_local_ports, &pk))
			return FW_PASS_POD_LOCAL;
	}
	if (fw_pod_flow_live(cfg, pkt))
		return FW_PASS_POD_REPLY;
	return FW_DROP_POD_LOCAL;
}

static __always_inline __u32 fw_decide(struct __sk_buff *skb, const struct fw_config *cfg,
				       const struct fw_pkt *pkt, const struct fw_subject *s,
				       struct fw_answer *ans)
{
	__u8 fam = pkt->family & 1;
	struct fw_rule r;
	__u32 reason;

	if (s->ifindex != FW_IFINDEX_ANY && s->ifindex != skb->ifindex)
		return FW_DROP_SPOOF;
	/* before the state check: a denying subject's DNS is answered
	 * NXDOMAIN by the proxy rather than left to time out */
	if ((cfg->flags & FW_CF_DNS_PROXY) && fw_is_l4_port(pkt, 53)) {
		reason = fw_dns_redirect(skb, cfg, pkt, s);
		if (reason != FW_PARSE_OK)
			return reason;
	}
	if (s->state != FW_STATE_ACTIVE)
		return FW_DROP_DENYING;
	if (fw_is_l4_port(pkt, 853))
		return FW_DROP_DOT;
	/* An answer is cached only after the pod-local and sibling checks
	 * below passed, and fastwalld raises the epoch whenever their
	 * inputs change (the pod-local set, the settings, a subject's
	 * gateway or private CIDR changed in place): a hit skips both, and
	 * with them a hash lookup and the last cache line of the dispatch
	 * element, where the private CIDR lies. */
	if (fw_answer_hit(ans, s->id, s->rules_gen, &pkt->dst, &r)) {
		fw_src_put(ans, s, pkt, &r);
		return fw_doh_blocked(cfg, pkt) ? FW_DROP_DOH : fw_policy_rule(s, pkt, &r);
	}
	if (fw_is_pod_local(s, pkt->family, &pkt->dst))
		return fw_pod_local(cfg, pkt);
	/* fastwalld could not write every pod address: any destination may
	 * be one, and none of its exceptions (DNS, ports) can be trusted */
	if (cfg->flags & FW_CF_LOCAL_FULL)
		return FW_DROP_POD_LOCAL;
	if (s->private_plen[fam] &&
	    fw_ip_in_prefix(&pkt->dst, &s->private_net[fam], s->private_plen[fam]))
		return FW_DROP_SIBLING;
	if (fw_doh_blocked(cfg, pkt))
		return FW_DROP_DOH;
	if (!fw_rule_get(s->id, s->rules_gen, &pkt->dst, &r))
		return FW_DROP_NO_POLICY;
	fw_answer_put(ans, s->rules_gen, &pkt->dst, &r);
	fw_src_put(ans, s, pkt, &r);
	return fw_policy_rule(s, pkt, &r);
}

/* The packet's verdict from its source's slot (fw_src_hit), or
 * FW_PARSE_OK: decide it on the full path. The slot holds what the full
 * path would read up to the rules; it was filled only past the denying,
 * pod-local and sibling checks, and the epoch ends it when any of their
 * inputs change. */
static __always_inline __u32 fw_decide_fast(struct __sk_buff *skb, const struct fw_config *cfg,
					    const struct fw_pkt *pkt, struct fw_answer *ans,
					    __u32 *subject)
{
	struct fw_src_answer h;

	if (!fw_src_hit(ans, pkt, &h))
		return FW_PARSE_OK;
	*subject = h.id;
	if (h.ifindex != FW_IFINDEX_ANY && h.ifindex != skb->ifindex)
		return FW_DROP_SPOOF;
	return fw_doh_blocked(cfg, pkt) ? FW_DROP_DOH : fw_policy_rule_of(h.id, pkt, &h.rule);
}

/* A later fragment passes as its datagram's first did, and only from the
 * datagram's own subject, on its own port: another port must not add
 * bytes to a sibling's passed datagram. */
static __noinline __u32 fw_later_fragment(struct __sk_buff *skb, const struct fw_pkt *pkt,
					  __u32 *subject)
{
	struct fw_subject *s;
	__u32 reason = fw_frag_verdict(pkt, subject);

	if (reason == FW_PASS_FRAGMENT) {
		s = fw_subject_of(&pkt->src);
		if (!s || s->id != *subject)
			reason = FW_DROP_FRAGMENT;
		else if (s->ifindex != FW_IFINDEX_ANY && s->ifindex != skb->ifindex)
			reason = FW_DROP_SPOOF;
	}
	return reason;
}

/* The reason of a packet a sandbox sends, and its subject (0: none). The
 * program's one exit is fw_verdict below: the counters and the deny event
 * are there once, not at every return, and the path of an allowed packet
 * stays short. */
static __always_inline __u32 fw_from_sandbox_reason(struct __sk_buff *skb, struct fw_pkt *pkt,
						    __u32 *subject)
{
	struct fw_l2_port *port = NULL;
	struct fw_answer ans;
	struct fw_subject *s;
	struct fw_config *cfg;
	__u32 reason, l2;

	reason = fw_parse(skb, pkt);
	if (fw_unlikely(reason != FW_PARSE_OK && reason != FW_PARSE_ARP))
		return reason;
	/* before anything passes: the bridge learns where a MAC lives from
	 * every frame it forwards */
	l2 = fw_l2_check(skb, pkt, reason == FW_PARSE_ARP, &port);
	if (fw_unlikely(l2 != FW_PARSE_OK)) {
		s = fw_subject_of(&pkt->src);
		*subject = s ? s->id : 0;
		return l2;
	}
	if (fw_unlikely(reason == FW_PARSE_ARP)) {
		/* 0.0.0.0: an address probe, which claims nothing */
		if (FW_IP_W(&pkt->src)[3] == 0)
			return FW_PASS_NEIGH;
		return fw_neigh_claim(skb, &pkt->src, subject, NULL);
	}

	if (fw_unlikely(pkt->family == FW_FAM_V6 && pkt->proto == FW_IPPROTO_ICMPV6 &&
			!pkt->frag_later)) {
		reason = fw_icmp6_control(skb, pkt, port, subject);
		if (reason != FW_PARSE_OK)
			return reason;
	}

	cfg = fw_config();
	if (fw_unlikely(!cfg))
		return FW_DROP_NO_POLICY;

	if (fw_unlikely(pkt->frag_later))
		return fw_later_fragment(skb, pkt, subject);

	fw_answer_begin(&ans); /* before the dispatch value it vouches for */
	reason = fw_decide_fast(skb, cfg, pkt, &ans, subject);
	if (reason == FW_PARSE_OK) {
		s = fw_subject_of(&pkt->src);
		if (fw_unlikely(!s))
			return FW_DROP_UNKNOWN_SOURCE;
		*subject = s->id;
		reason = fw_decide(skb, cfg, pkt, s, &ans);
	}
	/* a spoofed first fragment must not cancel its victim's datagram */
	if (fw_unlikely(pkt->frag_first)) {
		if (!FW_REASON_DROPS(reason))
			fw_frag_note(cfg, pkt, *subject);
		else if (reason != FW_DROP_SPOOF && reason != FW_DROP_MAC_SPOOF)
			fw_frag_forget(pkt);
	}
	/* the settings that act on a verdict, behind the one test that
	 * sampling alone had: a pass to a pinned port goes to the layer-7
	 * proxy, and allowed packets are sampled to the monitor */
	if (fw_unlikely(cfg->flags & (FW_CF_L7 | FW_CF_ALLOW_SAMPLE))) {
		if ((cfg->flags & FW_CF_L7) && fw_l7_candidate(pkt, reason))
			return fw_l7_stash(pkt, reason, *subject);
		fw_event_allow_sample(skb, cfg, pkt, *subject, reason);
	}
	return reason;
}

/* Out of line: the path of a passed packet does not carry it. */
static __noinline void fw_emit_drop(struct __sk_buff *skb, const struct fw_pkt *pkt, __u32 subject,
				    __u32 reason)
{
	fw_event_drop(subject, reason, skb->ifindex, &pkt->src, &pkt->dst, pkt->sport, pkt->dport,
		      pkt->proto, pkt->family);
}

/* The one exit of fw_from_sandbox: counts the verdict, reports a drop,
 * and maps the reason to a TC return code. */
static __always_inline int fw_verdict(struct __sk_buff *skb, const struct fw_pkt *pkt,
				      __u32 subject, __u32 reason)
{
	fw_count(&reason, FW_DROP_MALFORMED, subject, skb->len, FW_COUNT_SUBJECT);
	if (!FW_REASON_DROPS(reason))
		return TC_ACT_OK;
	fw_emit_drop(skb, pkt, subject, reason);
	return TC_ACT_SHOT;
}

/* A pin candidate's end, out of the program's main path: the redirect
 * (bpf/lib/l7.h), the sample of an allowed packet, and the one exit. A
 * global function, so the verifier checks it once rather than once for
 * every path of fw_from_sandbox that reaches it (inline, the program
 * went past the verifier's budget on 5.10 and 6.1). Its packet, verdict
 * and subject are in this CPU's fastwall_l7_args. */
__noinline int fw_l7_finish(struct __sk_buff *skb)
{
	struct fw_l7_args *a;
	struct fw_config *cfg;
	__u32 zero = 0, reason;

	if (!skb)
		return TC_ACT_SHOT;
	a = bpf_map_lookup_elem(&fastwall_l7_args, &zero);
	cfg = fw_config();
	if (!a || !cfg)
		return TC_ACT_SHOT;
	reason = fw_l7_redirect(skb, cfg, a);
	fw_event_allow_sample(skb, cfg, &a->pkt, a->subject, reason);
	return fw_verdict(skb, &a->pkt, a->subject, reason);
}

SEC("tc")
int fw_from_sandbox(struct __sk_buff *skb)
{
	struct fw_pkt pkt = {};
	__u32 subject = 0;
	__u32 reason = fw_from_sandbox_reason(skb, &pkt, &subject);

	if (fw_unlikely(reason == FW_L7_PENDING))
		return fw_l7_finish(skb);
	return fw_verdict(skb, &pkt, subject, reason);
}

SEC("tc")
int fw_to_sandbox(struct __sk_buff *skb)
{
	struct fw_pkt pkt = {};
	struct fw_subject *s;
	struct fw_config *cfg;

	if (fw_parse(skb, &pkt) != FW_PARSE_OK || !pkt.has_ports)
		return TC_ACT_OK;
	if (pkt.proto != FW_IPPROTO_TCP && pkt.proto != FW_IPPROTO_UDP)
		return TC_ACT_OK;
	s = fw_subject_of(&pkt.dst);
	if (!s)
		return TC_ACT_OK;
	cfg = fw_config();
	if (cfg && fw_dns_unredirect(skb, cfg, &pkt, s))
		return TC_ACT_OK;
	if (fw_is_pod_local(s, pkt.family, &pkt.src)) {
		/* the proxy's side of a pinned connection: no pod flow (the
		 * sandbox may not address the proxy port itself) */
		if (pkt.proto == FW_IPPROTO_TCP && fw_l7_unredirect(skb, &pkt, s))
			return TC_ACT_OK;
		fw_pod_flow_note(&pkt);
	} else {
		fw_note_conn_reset(s->id, &pkt);
	}
	return TC_ACT_OK;
}
