// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall's cgroup programs: process sandboxes in the node's own network
 * namespace, told apart by cgroup v2 id (fastwall_cgroups). A connect or
 * a sendmsg to a destination the subject may not reach fails at once
 * with EPERM; raw and packet sockets are refused; every packet a
 * sandbox's socket sends is checked again at cgroup egress (ICMP, and
 * sockets opened before the process joined the sandbox). Processes of no
 * sandbox pass untouched and uncounted. The maps are the TC programs'
 * (fastwalld loads this object on their descriptors). */
#include "lib/cgroup.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FW_AF_INET   2
#define FW_AF_INET6  10
#define FW_AF_PACKET 17
#define FW_SOCK_RAW  3

/* A socket call's destination as the policy reads it: IPv4 v4-mapped,
 * so an IPv6 socket's ::ffff:a.b.c.d meets the IPv4 rules. */
static __always_inline void fw_sa_pkt(struct bpf_sock_addr *ctx, struct fw_pkt *pkt, bool v6)
{
	if (v6) {
		pkt->family = FW_FAM_V6;
		pkt->dst.w[0] = ctx->user_ip6[0];
		pkt->dst.w[1] = ctx->user_ip6[1];
		pkt->dst.w[2] = ctx->user_ip6[2];
		pkt->dst.w[3] = ctx->user_ip6[3];
	} else {
		pkt->family = FW_FAM_V4;
		fw_ip_from_v4(&pkt->dst, ctx->user_ip4);
	}
	pkt->proto = ctx->protocol;
	pkt->dport = (__be16)ctx->user_port;
	pkt->has_ports = pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP;
}

static __always_inline int fw_sock_addr(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_subject *s = fw_cg_task_subject();
	struct fw_pkt pkt = {};

	if (!s)
		return 1;
	fw_sa_pkt(ctx, &pkt, v6);
	return fw_cg_verdict(&pkt, s->id, fw_cg_decide(&pkt, s), 0);
}

SEC("cgroup/connect4")
int fw_cg_connect4(struct bpf_sock_addr *ctx)
{
	return fw_sock_addr(ctx, false);
}

SEC("cgroup/connect6")
int fw_cg_connect6(struct bpf_sock_addr *ctx)
{
	return fw_sock_addr(ctx, true);
}

SEC("cgroup/sendmsg4")
int fw_cg_sendmsg4(struct bpf_sock_addr *ctx)
{
	return fw_sock_addr(ctx, false);
}

SEC("cgroup/sendmsg6")
int fw_cg_sendmsg6(struct bpf_sock_addr *ctx)
{
	return fw_sock_addr(ctx, true);
}

/* Raw IP and packet sockets write headers of their choosing and reach
 * past the socket hooks: a sandbox has none, whatever its state. */
SEC("cgroup/sock_create")
int fw_cg_sock_create(struct bpf_sock *sk)
{
	struct fw_subject *s = fw_cg_task_subject();
	struct fw_pkt pkt = {};

	if (!s)
		return 1;
	if (sk->family != FW_AF_PACKET && sk->type != FW_SOCK_RAW)
		return 1;
	pkt.family = sk->family == FW_AF_INET6 ? FW_FAM_V6 : FW_FAM_V4;
	pkt.proto = sk->protocol;
	return fw_cg_verdict(&pkt, s->id, FW_DROP_SOCKET_TYPE, 0);
}

/* The IPv6 extension headers a local socket may put before its transport
 * header; a fragment header (the stack fragments after this hook, so only
 * a raw socket's own) is malformed here. */
static __always_inline __u32 fw_skb_l4_v6(struct __sk_buff *skb, struct fw_pkt *pkt, __u32 *off)
{
	__u8 nh = pkt->proto;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u8 ext[2];

		if (nh == FW_NEXTHDR_FRAGMENT)
			return FW_DROP_FRAGMENT;
		if (nh != FW_NEXTHDR_HOP && nh != FW_NEXTHDR_ROUTING && nh != FW_NEXTHDR_DEST)
			break;
		if (bpf_skb_load_bytes(skb, *off, ext, sizeof(ext)))
			return FW_DROP_MALFORMED;
		nh = ext[0];
		*off += ((__u32)ext[1] + 1) * 8;
	}
	if (nh == FW_NEXTHDR_HOP || nh == FW_NEXTHDR_ROUTING || nh == FW_NEXTHDR_DEST ||
	    nh == FW_NEXTHDR_FRAGMENT)
		return FW_DROP_MALFORMED;
	pkt->proto = nh;
	return FW_PARSE_OK;
}

/* skb starts at its network header at cgroup egress. */
static __always_inline __u32 fw_skb_parse(struct __sk_buff *skb, struct fw_pkt *pkt)
{
	__u32 off, reason;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct fw_iphdr ip;

		if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)))
			return FW_DROP_MALFORMED;
		pkt->family = FW_FAM_V4;
		fw_ip_from_v4(&pkt->src, ip.saddr);
		fw_ip_from_v4(&pkt->dst, ip.daddr);
		pkt->proto = ip.protocol;
		if (bpf_ntohs(ip.frag_off) & 0x1fff)
			return FW_DROP_FRAGMENT; /* a later fragment: no ports to judge */
		off = (ip.ver_ihl & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct fw_ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)))
			return FW_DROP_MALFORMED;
		pkt->family = FW_FAM_V6;
		pkt->src = ip6.saddr;
		pkt->dst = ip6.daddr;
		pkt->proto = ip6.nexthdr;
		off = sizeof(ip6);
		reason = fw_skb_l4_v6(skb, pkt, &off);
		if (reason != FW_PARSE_OK)
			return reason;
	} else {
		return FW_DROP_ETHERTYPE;
	}
	if (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP) {
		__be16 ports[2];
		__u8 flags;

		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)))
			return FW_DROP_MALFORMED;
		pkt->sport = ports[0];
		pkt->dport = ports[1];
		pkt->has_ports = 1;
		if (pkt->proto == FW_IPPROTO_TCP && !bpf_skb_load_bytes(skb, off + 13, &flags, 1))
			pkt->tcp_flags = flags;
	} else if (pkt->proto == FW_IPPROTO_ICMP || pkt->proto == FW_IPPROTO_ICMPV6) {
		if (bpf_skb_load_bytes(skb, off, &pkt->icmp_type, 1))
			return FW_DROP_MALFORMED;
	}
	return FW_PARSE_OK;
}

SEC("cgroup_skb/egress")
int fw_cg_egress(struct __sk_buff *skb)
{
	struct fw_subject *s = fw_cg_skb_subject(skb);
	struct fw_pkt pkt = {};
	__u32 reason;

	if (!s)
		return 1;
	reason = fw_skb_parse(skb, &pkt);
	if (reason == FW_PARSE_OK)
		reason = fw_cg_decide(&pkt, s);
	return fw_cg_verdict(&pkt, s->id, reason, skb->len);
}
