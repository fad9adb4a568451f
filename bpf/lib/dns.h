/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* DNS redirection to fastwalld's proxy, stateless where it can be: a query
 * to a pod-local address (the gateway) keeps its destination address and
 * only its port moves to the proxy's; a query to any other resolver (with
 * FW_CF_DNS_ALL) is sent to the subject's gateway, and the address it was
 * meant for is remembered in fastwall_dns_nat so the answer leaves with
 * that source. The sandbox's source address and port are never touched,
 * which is how the proxy knows the subject. */
#ifndef FW_BPF_DNS_H
#define FW_BPF_DNS_H

#include "common.h"
#include "parse.h"
#include "subject.h"
#include "rewrite.h"

/* {sandbox address, sandbox port, protocol} -> struct fw_dns_nat. Writer:
 * fw_from_sandbox. Reader: fw_to_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FW_MAX_DNS_NAT);
	__type(key, struct fw_dns_nat_key);
	__type(value, struct fw_dns_nat);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_dns_nat SEC(".maps");

/* fw_from_sandbox, for a subject's TCP or UDP packet to port 53: FW_PARSE_OK
 * when it is not to be redirected, FW_PASS_DNS_PROXY when it was, or a
 * drop reason. */
static __noinline __u32 fw_dns_redirect(struct __sk_buff *skb, const struct fw_config *cfg,
					const struct fw_pkt *pkt, const struct fw_subject *s)
{
	struct fw_dns_nat_key k = {};
	struct fw_dns_nat v = {}, *cur;
	const struct fw_ip *to;
	__u8 fam = pkt->family & 1;

	if (fw_is_pod_local(s, pkt->family, &pkt->dst)) {
		to = &pkt->dst;
	} else {
		__u8 gw_flag = pkt->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;

		if (!(cfg->flags & FW_CF_DNS_ALL) || !(s->flags & gw_flag))
			return FW_PARSE_OK;
		to = &s->gateway[fam];
	}
	/* later fragments would keep the old destination: no reassembly */
	if (pkt->frag_first)
		return FW_DROP_FRAGMENT;

	/* remember the destination even for the gateway, so a reused source
	 * port never inherits another resolver's address */
	k.client = pkt->src;
	k.client_port = pkt->sport;
	k.proto = pkt->proto;
	cur = bpf_map_lookup_elem(&fastwall_dns_nat, &k);
	if (!cur || !fw_ip_eq(&cur->orig_dst, &pkt->dst) || cur->orig_port != pkt->dport) {
		v.orig_dst = pkt->dst;
		v.orig_port = pkt->dport;
		bpf_map_update_elem(&fastwall_dns_nat, &k, &v, BPF_ANY);
	}
	if (fw_rewrite_addr(skb, pkt, false, &pkt->dst, to) ||
	    fw_rewrite_port(skb, pkt, pkt->l4_off + 2, pkt->dport, bpf_htons(cfg->dns_port)))
		return FW_DROP_MALFORMED;
	return FW_PASS_DNS_PROXY;
}

/* fw_to_sandbox: an answer from the proxy to subject s leaves with the address
 * and port the query was sent to. Returns true when it was one. */
static __always_inline bool fw_dns_unredirect(struct __sk_buff *skb, const struct fw_config *cfg,
					      const struct fw_pkt *pkt, const struct fw_subject *s)
{
	struct fw_dns_nat_key k = {};
	struct fw_dns_nat *v;

	if (!(cfg->flags & FW_CF_DNS_PROXY) || pkt->sport != bpf_htons(cfg->dns_port))
		return false;
	if (pkt->proto != FW_IPPROTO_TCP && pkt->proto != FW_IPPROTO_UDP)
		return false;
	if (!fw_is_pod_local(s, pkt->family, &pkt->src))
		return false;
	k.client = pkt->dst;
	k.client_port = pkt->dport;
	k.proto = pkt->proto;
	v = bpf_map_lookup_elem(&fastwall_dns_nat, &k);
	if (v) {
		struct fw_ip orig = v->orig_dst;
		__be16 port = v->orig_port;

		fw_rewrite_addr(skb, pkt, true, &pkt->src, &orig);
		fw_rewrite_port(skb, pkt, pkt->l4_off, pkt->sport, port);
		return true;
	}
	/* no record (evicted): the gateway's own answer needs only its port */
	fw_rewrite_port(skb, pkt, pkt->l4_off, pkt->sport, bpf_htons(53));
	return true;
}

#endif /* FW_BPF_DNS_H */
