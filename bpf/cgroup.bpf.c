// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall's cgroup programs: process sandboxes in the node's own network
 * namespace, told apart by cgroup v2 id (fastwall_cgroups). A connect or
 * a sendmsg to a destination the subject may not reach fails at once
 * with EPERM; raw IP sockets are refused; every packet a
 * sandbox's socket sends is checked again at cgroup egress (ICMP, and
 * sockets no socket hook saw). While the DNS proxy runs, DNS goes to it
 * at the subject's own loopback address (127.254.0.0/16 + id), and
 * recvmsg gives the answer the resolver's address back; no sandbox
 * addresses those itself, nor uses another's as a source.
 * Processes of no sandbox pass untouched and uncounted. The maps are the
 * TC programs' (fastwalld loads this object on their descriptors). */
#include "lib/cgroup.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FW_AF_INET    2
#define FW_AF_INET6   10
#define FW_AF_PACKET  17
#define FW_SOCK_DGRAM 2
#define FW_SOCK_RAW   3

/* A socket call's destination as the policy reads it: IPv4 v4-mapped,
 * so an IPv6 socket's ::ffff:a.b.c.d meets the IPv4 rules. */
static __always_inline void fw_sa_pkt(struct bpf_sock_addr *ctx, struct fw_pkt *pkt, bool v6)
{
	if (v6) {
		pkt->family = FW_FAM_V6;
		FW_IP_W(&pkt->dst)[0] = ctx->user_ip6[0];
		FW_IP_W(&pkt->dst)[1] = ctx->user_ip6[1];
		FW_IP_W(&pkt->dst)[2] = ctx->user_ip6[2];
		FW_IP_W(&pkt->dst)[3] = ctx->user_ip6[3];
	} else {
		pkt->family = FW_FAM_V4;
		fw_ip_from_v4(&pkt->dst, ctx->user_ip4);
	}
	pkt->proto = ctx->protocol;
	pkt->dport = (__be16)ctx->user_port;
	pkt->has_ports = pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP;
}

/* DNS (TCP and UDP port 53, to any resolver) goes to fastwalld's proxy
 * while the proxy runs, whatever the subject's state (the proxy answers a
 * denying one NXDOMAIN). The resolver addressed is kept by socket cookie,
 * so recvmsg can give the answer its source back. */
static __always_inline bool fw_sa_is_dns(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	return cfg && (cfg->flags & FW_CF_DNS_PROXY) && pkt->has_ports &&
	       pkt->dport == bpf_htons(53);
}

/* To the subject's own proxy address, 127.254.0.0/16 + its id: the proxy
 * attributes the query by the local address it arrives on, so neither
 * the socket's source nor a bind() before connect() matters. */
static __always_inline void fw_sa_to_proxy(struct bpf_sock_addr *ctx, const struct fw_config *cfg,
					   const struct fw_subject *s, const struct fw_pkt *pkt,
					   bool v6)
{
	struct fw_dns_nat orig = {.orig_dst = pkt->dst, .orig_port = pkt->dport}, *cur;
	__u64 cookie = bpf_get_socket_cookie(ctx);

	/* a resolver's socket sends there again and again: an LRU update
	 * costs a new element each time, a lookup only marks the entry used */
	cur = bpf_map_lookup_elem(&fastwall_cg_dns, &cookie);
	if (!cur || !fw_ip_eq(&cur->orig_dst, &orig.orig_dst) || cur->orig_port != orig.orig_port)
		bpf_map_update_elem(&fastwall_cg_dns, &cookie, &orig, BPF_ANY);
	if (v6) {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0xffff);
		ctx->user_ip6[3] = fw_cg_alias4(s->id);
	} else {
		ctx->user_ip4 = fw_cg_alias4(s->id);
	}
	ctx->user_port = bpf_htons(cfg->dns_port);
}

/* To the subject's own proxy address, on a socket this program sent
 * there: a connected dual-stack socket's send() comes back through
 * sendmsg4 with the (rewritten) peer as its address. */
static __always_inline bool fw_sa_redirected(struct bpf_sock_addr *ctx, const struct fw_config *cfg,
					     const struct fw_subject *s, const struct fw_pkt *pkt)
{
	__u64 cookie;

	if (!cfg || !(cfg->flags & FW_CF_DNS_PROXY) || !pkt->has_ports ||
	    pkt->dport != bpf_htons(cfg->dns_port) || !fw_cg_own_alias(&pkt->dst, s))
		return false;
	cookie = bpf_get_socket_cookie(ctx);
	return bpf_map_lookup_elem(&fastwall_cg_dns, &cookie) != NULL;
}

/* connect(): DNS to the subject's own proxy address (bound or not, the
 * socket keeps its source); no process addresses 127.254.0.0/16 itself. */
static __always_inline int fw_connect(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_subject *s = fw_cg_task_subject();
	struct fw_config *cfg = fw_config();
	struct fw_pkt pkt = {};

	if (!s)
		return 1;
	fw_sa_pkt(ctx, &pkt, v6);
	if (fw_cg_any_alias(&pkt.dst))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (!fw_sa_is_dns(cfg, &pkt))
		return fw_cg_verdict(&pkt, s->id, fw_cg_decide(&pkt, s), 0);
	fw_sa_to_proxy(ctx, cfg, s, &pkt, v6);
	return fw_cg_verdict(&pkt, s->id, FW_PASS_DNS_PROXY, 0);
}

SEC("cgroup/connect4")
int fw_cg_connect4(struct bpf_sock_addr *ctx)
{
	return fw_connect(ctx, false);
}

SEC("cgroup/connect6")
int fw_cg_connect6(struct bpf_sock_addr *ctx)
{
	return fw_connect(ctx, true);
}

/* sendmsg() with an address: a source of the caller's choosing
 * (IP_PKTINFO) may not be another subject's proxy address, nor the
 * destination any; DNS goes to the subject's own. An unconnected socket
 * comes here for every datagram: the subject, and the verdict of the
 * last destination, come from the socket's record while it holds
 * (fw_cg_sock_subject, fw_cg_decide_sock); the checks before the
 * decision are made each time. */
SEC("cgroup/sendmsg4")
int fw_cg_sendmsg4(struct bpf_sock_addr *ctx)
{
	struct fw_cg_sock *c;
	struct fw_subject *s = fw_cg_sock_subject(ctx, &c);
	struct fw_config *cfg = fw_config();
	struct fw_pkt pkt = {};
	struct fw_ip src;

	if (!s)
		return 1;
	fw_sa_pkt(ctx, &pkt, false);
	fw_ip_from_v4(&src, ctx->msg_src_ip4);
	if (fw_cg_foreign_alias(&src, s))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (fw_sa_redirected(ctx, cfg, s, &pkt))
		return fw_cg_verdict(&pkt, s->id, FW_PASS_DNS_PROXY, 0);
	if (fw_cg_any_alias(&pkt.dst))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (!fw_sa_is_dns(cfg, &pkt))
		return fw_cg_verdict(&pkt, s->id, fw_cg_decide_sock(&pkt, s, c), 0);
	fw_sa_to_proxy(ctx, cfg, s, &pkt, false);
	return fw_cg_verdict(&pkt, s->id, FW_PASS_DNS_PROXY, 0);
}

SEC("cgroup/sendmsg6")
int fw_cg_sendmsg6(struct bpf_sock_addr *ctx)
{
	struct fw_cg_sock *c;
	struct fw_subject *s = fw_cg_sock_subject(ctx, &c);
	struct fw_config *cfg = fw_config();
	struct fw_pkt pkt = {};
	struct fw_ip src = {}; /* every word written below (cppcheck can't see it) */

	if (!s)
		return 1;
	fw_sa_pkt(ctx, &pkt, true);
	FW_IP_W(&src)[0] = ctx->msg_src_ip6[0];
	FW_IP_W(&src)[1] = ctx->msg_src_ip6[1];
	FW_IP_W(&src)[2] = ctx->msg_src_ip6[2];
	FW_IP_W(&src)[3] = ctx->msg_src_ip6[3];
	if (fw_cg_foreign_alias(&src, s))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (fw_cg_any_alias(&pkt.dst))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (!fw_sa_is_dns(cfg, &pkt))
		return fw_cg_verdict(&pkt, s->id, fw_cg_decide_sock(&pkt, s, c), 0);
	/* the kernel refuses a sendmsg6 rewritten to a v4-mapped address
	 * (ENOTSUPP), and the proxy's addresses are IPv4: an IPv6 resolver
	 * is reached with connect() (which can be redirected) or not at all */
	if (!(FW_IP_W(&pkt.dst)[0] == 0 && FW_IP_W(&pkt.dst)[1] == 0 &&
	      FW_IP_W(&pkt.dst)[2] == bpf_htonl(0xffff)))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_DNS_V6_SENDMSG, 0);
	fw_sa_to_proxy(ctx, cfg, s, &pkt, true);
	return fw_cg_verdict(&pkt, s->id, FW_PASS_DNS_PROXY, 0);
}

/* The proxy's answer, and the peer of a connected DNS socket: the
 * resolver the socket addressed. recvmsg and getpeername programs may
 * only pass (1). */
static __always_inline int fw_recvmsg(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_config *cfg = fw_config();
	struct fw_dns_nat *orig;
	__u64 cookie;

	if (!cfg || !(cfg->flags & FW_CF_DNS_PROXY) || ctx->user_port != bpf_htons(cfg->dns_port))
		return 1;
	if (v6 ? ctx->user_ip6[0] || ctx->user_ip6[1] || ctx->user_ip6[2] != bpf_htonl(0xffff) ||
			    !fw_cg_is_alias4(ctx->user_ip6[3])
	       : !fw_cg_is_alias4(ctx->user_ip4))
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	orig = bpf_map_lookup_elem(&fastwall_cg_dns, &cookie);
	if (!orig)
		return 1;
	if (v6) {
		ctx->user_ip6[0] = FW_IP_W(&orig->orig_dst)[0];
		ctx->user_ip6[1] = FW_IP_W(&orig->orig_dst)[1];
		ctx->user_ip6[2] = FW_IP_W(&orig->orig_dst)[2];
		ctx->user_ip6[3] = FW_IP_W(&orig->orig_dst)[3];
	} else {
		ctx->user_ip4 = FW_IP_W(&orig->orig_dst)[3];
	}
	ctx->user_port = orig->orig_port;
	return 1;
}

SEC("cgroup/recvmsg4")
int fw_cg_recvmsg4(struct bpf_sock_addr *ctx)
{
	return fw_recvmsg(ctx, false);
}

SEC("cgroup/recvmsg6")
int fw_cg_recvmsg6(struct bpf_sock_addr *ctx)
{
	return fw_recvmsg(ctx, true);
}

SEC("cgroup/getpeername4")
int fw_cg_getpeername4(struct bpf_sock_addr *ctx)
{
	return fw_recvmsg(ctx, false);
}

SEC("cgroup/getpeername6")
int fw_cg_getpeername6(struct bpf_sock_addr *ctx)
{
	return fw_recvmsg(ctx, true);
}

/* bind(): not to another subject's proxy address. */
static __always_inline int fw_bind(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_subject *s = fw_cg_task_subject();
	struct fw_pkt pkt = {};

	if (!s)
		return 1;
	fw_sa_pkt(ctx, &pkt, v6);
	if (!fw_cg_foreign_alias(&pkt.dst, s))
		return 1;
	return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
}

SEC("cgroup/bind4")
int fw_cg_bind4(struct bpf_sock_addr *ctx)
{
	return fw_bind(ctx, false);
}

SEC("cgroup/bind6")
int fw_cg_bind6(struct bpf_sock_addr *ctx)
{
	return fw_bind(ctx, true);
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

/* A packet to 127.254.0.0/16: only the subject's DNS that the socket
 * hooks sent to its own proxy address (the socket's cookie is in
 * fastwall_cg_dns) passes; anything else there is refused. */
static __always_inline __u32 fw_cg_skb_alias(struct __sk_buff *skb, const struct fw_pkt *pkt,
					     const struct fw_subject *s)
{
	struct fw_config *cfg = fw_config();
	__u64 cookie;

	if (!fw_cg_any_alias(&pkt->dst))
		return FW_PARSE_OK;
	if (!cfg || !(cfg->flags & FW_CF_DNS_PROXY) || !pkt->has_ports ||
	    (pkt->proto != FW_IPPROTO_TCP && pkt->proto != FW_IPPROTO_UDP) ||
	    pkt->dport != bpf_htons(cfg->dns_port) || !fw_cg_own_alias(&pkt->dst, s))
		return FW_DROP_ALIAS_SOURCE;
	cookie = bpf_get_socket_cookie(skb);
	if (!bpf_map_lookup_elem(&fastwall_cg_dns, &cookie))
		return FW_DROP_ALIAS_SOURCE;
	return FW_PASS_DNS_PROXY;
}

/* A datagram of an unconnected UDP socket: the sendmsg hooks judged it a
 * moment ago, for the task that sent it (such a socket names the
 * destination of every datagram, and each such sendmsg runs them), and
 * rewrote it if it was DNS. Judging it again would cost a second policy
 * walk per datagram and count it twice. Connected sockets (whose
 * destination's lease may have gone since connect) and all else are
 * judged here. */
static __always_inline bool fw_cg_judged_at_sendmsg(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return false;
	sk = bpf_sk_fullsock(sk);
	return sk && sk->type == FW_SOCK_DGRAM && sk->protocol == FW_IPPROTO_UDP &&
	       sk->state == BPF_TCP_CLOSE;
}

SEC("cgroup_skb/egress")
int fw_cg_egress(struct __sk_buff *skb)
{
	struct fw_subject *s;
	struct fw_pkt pkt = {};
	__u32 reason;

	if (fw_cg_judged_at_sendmsg(skb))
		return 1;
	s = fw_cg_skb_subject(skb);
	if (!s)
		return 1;
	reason = fw_skb_parse(skb, &pkt);
	if (reason == FW_PARSE_OK && fw_cg_foreign_alias(&pkt.src, s))
		reason = FW_DROP_ALIAS_SOURCE;
	else if (reason == FW_PARSE_OK)
		reason = fw_cg_skb_alias(skb, &pkt, s);
	if (reason == FW_PARSE_OK)
		reason = fw_cg_decide(&pkt, s);
	return fw_cg_verdict(&pkt, s->id, reason, skb->len);
}
