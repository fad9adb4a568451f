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
#define FW_SOCK_DGRAM 2
#define FW_SOCK_RAW   3

/* A socket call's address (ctx->user_ip*) as the policy reads it: IPv4
 * v4-mapped, so an IPv6 socket's ::ffff:a.b.c.d meets the IPv4 rules. */
static __always_inline void fw_sa_addr(struct bpf_sock_addr *ctx, struct fw_ip *a, bool v6)
{
	if (v6) {
		FW_IP_W(a)[0] = ctx->user_ip6[0];
		FW_IP_W(a)[1] = ctx->user_ip6[1];
		FW_IP_W(a)[2] = ctx->user_ip6[2];
		FW_IP_W(a)[3] = ctx->user_ip6[3];
	} else {
		fw_ip_from_v4(a, ctx->user_ip4);
	}
}

/* A socket call's destination as the policy reads it. */
static __always_inline void fw_sa_pkt(struct bpf_sock_addr *ctx, struct fw_pkt *pkt, bool v6)
{
	pkt->family = v6 ? FW_FAM_V6 : FW_FAM_V4;
	fw_sa_addr(ctx, &pkt->dst, v6);
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

/* Layer-7 pinning of a connect: TCP that passes by a lease to a pinned
 * port goes to the proxy on loopback (127.0.0.1, or ::1 for an IPv6
 * destination) at the kind's proxy port, and the socket's record keeps
 * where it was meant to go: the sockops program writes the proxy's
 * fastwall_l7_nat entry from it once the socket has its own port,
 * getpeername gives it back, egress lets the socket's packets to the
 * proxy by. Without a proxy that accepts, the connect fails. UDP to a
 * pinned TLS port is QUIC. The proxy's own ports on loopback are no
 * destination of the process's choosing. A socket connected again
 * (after AF_UNSPEC) starts afresh. */
static __always_inline __u32 fw_sa_l7(struct bpf_sock_addr *ctx, const struct fw_config *cfg,
				      const struct fw_subject *s, const struct fw_pkt *pkt, bool v6)
{
	struct fw_cg_sock *c = NULL;
	struct fw_l7_port *port;
	__u32 reason;

	if (fw_cg_l7_to_proxy(cfg, pkt))
		return FW_DROP_POD_LOCAL;
	reason = fw_cg_decide(pkt, s);
	if (pkt->proto == FW_IPPROTO_UDP)
		return fw_cg_l7_udp(cfg, s, pkt, reason);
	if (pkt->proto != FW_IPPROTO_TCP || !cfg)
		return reason;
	c = bpf_sk_storage_get(&fastwall_cg_sock, ctx->sk, 0, 0);
	if (c)
		c->l7 = FW_CG_L7_NONE;
	if (FW_REASON_DROPS(reason))
		return reason;
	port = fw_cg_l7_port(cfg, s, pkt, reason);
	if (!port)
		return reason;
	if (!(cfg->flags & FW_CF_L7_UP))
		return FW_DROP_L7_PROXY_DOWN;
	if (!c)
		c = bpf_sk_storage_get(&fastwall_cg_sock, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return FW_DROP_L7_FULL;
	c->l7_dst = pkt->dst;
	c->l7_port = pkt->dport;
	c->l7_proxy_port = port->proxy_port;
	c->l7_kind = port->kind;
	c->l7_subject = s->id;
	c->l7_proxy = (struct fw_ip){};
	if (!v6 || fw_ip_is_v4mapped(&pkt->dst)) {
		fw_ip_from_v4(&c->l7_proxy, bpf_htonl(0x7f000001));
	} else {
		FW_IP_W(&c->l7_proxy)[3] = bpf_htonl(1);
	}
	c->l7 = FW_CG_L7_SENT;
	if (v6) {
		ctx->user_ip6[0] = FW_IP_W(&c->l7_proxy)[0];
		ctx->user_ip6[1] = FW_IP_W(&c->l7_proxy)[1];
		ctx->user_ip6[2] = FW_IP_W(&c->l7_proxy)[2];
		ctx->user_ip6[3] = FW_IP_W(&c->l7_proxy)[3];
	} else {
		ctx->user_ip4 = bpf_htonl(0x7f000001);
	}
	ctx->user_port = port->proxy_port;
	return FW_PASS_L7_PROXY;
}

/* connect(): DNS to the subject's own proxy address (bound or not, the
 * socket keeps its source); no process addresses 127.254.0.0/16 itself;
 * pinned TCP to the layer-7 proxy (fw_sa_l7). */
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
		return fw_cg_verdict(&pkt, s->id, fw_sa_l7(ctx, cfg, s, &pkt, v6), 0);
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

/* fw_cg_verdict for a sendmsg hook: a datagram that passes leaves its
 * socket a ticket for the destination the kernel will send it to (ctx,
 * after any rewrite), so egress need not judge it again. */
static __always_inline int fw_sa_sent(struct bpf_sock_addr *ctx, struct fw_cg_sock *c,
				      const struct fw_pkt *pkt, __u32 subject, __u32 reason,
				      bool v6)
{
	struct fw_ip dst;

	if (!fw_cg_verdict(pkt, subject, reason, 0))
		return 0;
	if (!c)
		return 1;
	fw_sa_addr(ctx, &dst, v6);
	fw_cg_sent(c, &dst, (__be16)ctx->user_port, ctx->protocol);
	return 1;
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
		return fw_sa_sent(ctx, c, &pkt, s->id, FW_PASS_DNS_PROXY, false);
	if (fw_cg_any_alias(&pkt.dst))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_ALIAS_SOURCE, 0);
	if (!fw_sa_is_dns(cfg, &pkt))
		return fw_sa_sent(ctx, c, &pkt, s->id,
				  fw_cg_l7_udp(cfg, s, &pkt, fw_cg_decide_sock(&pkt, s, c)), false);
	fw_sa_to_proxy(ctx, cfg, s, &pkt, false);
	return fw_sa_sent(ctx, c, &pkt, s->id, FW_PASS_DNS_PROXY, false);
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
		return fw_sa_sent(ctx, c, &pkt, s->id,
				  fw_cg_l7_udp(cfg, s, &pkt, fw_cg_decide_sock(&pkt, s, c)), true);
	/* the kernel refuses a sendmsg6 rewritten to a v4-mapped address
	 * (ENOTSUPP), and the proxy's addresses are IPv4: an IPv6 resolver
	 * is reached with connect() (which can be redirected) or not at all */
	if (!fw_ip_is_v4mapped(&pkt.dst))
		return fw_cg_verdict(&pkt, s->id, FW_DROP_DNS_V6_SENDMSG, 0);
	fw_sa_to_proxy(ctx, cfg, s, &pkt, true);
	return fw_sa_sent(ctx, c, &pkt, s->id, FW_PASS_DNS_PROXY, true);
}

/* The proxy's answer, and the peer of a connected DNS socket: the
 * resolver the socket addressed. recvmsg and getpeername programs may
 * only pass (1). */
static __always_inline int fw_recvmsg(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_config *cfg = fw_config();
	struct fw_dns_nat *orig;
	struct fw_ip peer;
	__u64 cookie;

	if (!cfg || !(cfg->flags & FW_CF_DNS_PROXY) || ctx->user_port != bpf_htons(cfg->dns_port))
		return 1;
	fw_sa_addr(ctx, &peer, v6);
	if (!fw_cg_any_alias(&peer))
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

/* The peer of a socket connect sent to the layer-7 proxy: the
 * destination the process addressed. */
static __always_inline bool fw_getpeername_l7(struct bpf_sock_addr *ctx, bool v6)
{
	struct fw_cg_sock *c = bpf_sk_storage_get(&fastwall_cg_sock, ctx->sk, 0, 0);
	struct fw_ip peer;

	if (!c || c->l7 == FW_CG_L7_NONE)
		return false;
	fw_sa_addr(ctx, &peer, v6);
	if (!fw_ip_eq(&peer, &c->l7_proxy) || (__be16)ctx->user_port != c->l7_proxy_port)
		return false;
	if (v6) {
		ctx->user_ip6[0] = FW_IP_W(&c->l7_dst)[0];
		ctx->user_ip6[1] = FW_IP_W(&c->l7_dst)[1];
		ctx->user_ip6[2] = FW_IP_W(&c->l7_dst)[2];
		ctx->user_ip6[3] = FW_IP_W(&c->l7_dst)[3];
	} else {
		ctx->user_ip4 = FW_IP_W(&c->l7_dst)[3];
	}
	ctx->user_port = c->l7_port;
	return true;
}

SEC("cgroup/getpeername4")
int fw_cg_getpeername4(struct bpf_sock_addr *ctx)
{
	if (fw_getpeername_l7(ctx, false))
		return 1;
	return fw_recvmsg(ctx, false);
}

SEC("cgroup/getpeername6")
int fw_cg_getpeername6(struct bpf_sock_addr *ctx)
{
	if (fw_getpeername_l7(ctx, true))
		return 1;
	return fw_recvmsg(ctx, true);
}

/* A socket connect sent to the layer-7 proxy, as its connection starts
 * (BPF_SOCK_OPS_TCP_CONNECT_CB: its own address and port are known, the
 * SYN is not sent yet): the proxy's fastwall_l7_nat entry, {the socket's
 * address (v4-mapped for IPv4), its port, the proxy port} -> where the
 * process meant it to go, whose it is and what kind. An entry left by an
 * earlier socket of the same end is replaced: the kernel gives no two
 * live sockets one end. The entry counts in the subject's share
 * (fw_l7_put) and goes when the socket closes (BPF_SOCK_OPS_STATE_CB),
 * taken off the count. A socket whose entry could not be written (the
 * table full, or the subject's share used up) sends nothing: egress
 * drops it, l7-full. */
#define FW_AF_INET6_OPS 10

static __always_inline void fw_sockops_l7_put(struct bpf_sock_ops *skops, struct fw_cg_sock *c)
{
	struct fw_l7_nat_key k = {};
	struct fw_l7_nat v = {};
	__be16 rport = bpf_htons((__u16)bpf_ntohl(skops->remote_port));

	if (rport != c->l7_proxy_port)
		return; /* not where connect sent it: egress drops it, l7-untracked */
	if (skops->family == FW_AF_INET6_OPS &&
	    !(skops->remote_ip6[0] == 0 && skops->remote_ip6[1] == 0 &&
	      skops->remote_ip6[2] == bpf_htonl(0xffff))) {
		FW_IP_W(&k.client)[0] = skops->local_ip6[0];
		FW_IP_W(&k.client)[1] = skops->local_ip6[1];
		FW_IP_W(&k.client)[2] = skops->local_ip6[2];
		FW_IP_W(&k.client)[3] = skops->local_ip6[3];
	} else {
		/* an IPv6 socket's v4-mapped connection has its IPv4 address
		 * here before its IPv6 view of it */
		fw_ip_from_v4(&k.client, skops->local_ip4);
	}
	k.client_port = bpf_htons((__u16)skops->local_port);
	k.proxy_port = c->l7_proxy_port;
	v.orig_dst = c->l7_dst;
	v.orig_port = c->l7_port;
	v.proxy_port = c->l7_proxy_port;
	v.subject = c->l7_subject;
	v.last_seen_ns = bpf_ktime_get_ns();
	c->l7_seen_ns = v.last_seen_ns;
	v.kind = (enum fw_l7_kind)c->l7_kind;
	v.family = fw_ip_is_v4mapped(&c->l7_dst) ? FW_FAM_V4 : FW_FAM_V6;
	v.sock = 1; /* this program deletes it at close, not fastwalld */
	if (!fw_l7_put(&k, &v, bpf_map_lookup_elem(&fastwall_l7_nat, &k))) {
		c->l7 = FW_CG_L7_FULL;
		return;
	}
	c->l7_client = k.client;
	c->l7_client_port = k.client_port;
	c->l7 = FW_CG_L7_NAT;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_STATE_CB_FLAG);
}

SEC("sockops")
int fw_cg_sockops(struct bpf_sock_ops *skops)
{
	struct fw_cg_sock *c;
	struct bpf_sock *sk;

	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB && skops->op != BPF_SOCK_OPS_STATE_CB)
		return 1;
	sk = skops->sk;
	if (!sk)
		return 1;
	c = bpf_sk_storage_get(&fastwall_cg_sock, sk, 0, 0);
	if (!c)
		return 1;
	if (skops->op == BPF_SOCK_OPS_TCP_CONNECT_CB) {
		if (c->l7 == FW_CG_L7_SENT)
			fw_sockops_l7_put(skops, c);
		return 1;
	}
	if (skops->args[1] == BPF_TCP_CLOSE && c->l7 == FW_CG_L7_NAT) {
		struct fw_l7_nat_key k = {.client = c->l7_client,
					  .client_port = c->l7_client_port,
					  .proxy_port = c->l7_proxy_port};

		/* collected already (idle): nothing to take off */
		if (!bpf_map_delete_elem(&fastwall_l7_nat, &k))
			fw_l7_uncount(c->l7_subject);
		c->l7 = FW_CG_L7_CLOSED;
	}
	return 1;
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

/* Raw IP sockets write headers of their choosing and reach past the
 * socket hooks: a sandbox has none, whatever its state. The hook runs for
 * the inet families only: packet sockets need CAP_NET_RAW, which
 * fastwall run drops. */
SEC("cgroup/sock_create")
int fw_cg_sock_create(struct bpf_sock *sk)
{
	struct fw_subject *s = fw_cg_task_subject();
	struct fw_pkt pkt = {};

	if (!s)
		return 1;
	if (sk->type != FW_SOCK_RAW)
		return 1;
	pkt.family = sk->family == FW_AF_INET6 ? FW_FAM_V6 : FW_FAM_V4;
	pkt.proto = sk->protocol;
	return fw_cg_verdict(&pkt, s->id, FW_DROP_SOCKET_TYPE, 0);
}

/* Socket options that put IP options or IPv6 extension headers on a
 * socket's packets (levels and names of linux/in.h and linux/in6.h). A
 * source route sends a datagram to its first hop, not to the address the
 * socket hooks judged; egress judges every address a packet names
 * (fw_cg_hop), and a sandbox has no use for any of them, so the
 * options are refused first, with EPERM. */
#define FW_SOL_IP	       0
#define FW_SOL_IPV6	       41
#define FW_IP_OPTIONS	       4
#define FW_IPV6_2292HOPOPTS    3
#define FW_IPV6_2292DSTOPTS    4
#define FW_IPV6_2292RTHDR      5
#define FW_IPV6_2292PKTOPTIONS 6
#define FW_IPV6_HOPOPTS	       54
#define FW_IPV6_RTHDRDSTOPTS   55
#define FW_IPV6_RTHDR	       57
#define FW_IPV6_DSTOPTS	       59
#define FW_SOCKOPT_PAGE	       4096

static __always_inline bool fw_sockopt_routes(int level, int name)
{
	if (level == FW_SOL_IP)
		return name == FW_IP_OPTIONS;
	if (level != FW_SOL_IPV6)
		return false;
	return name == FW_IPV6_2292HOPOPTS || name == FW_IPV6_2292DSTOPTS ||
	       name == FW_IPV6_2292RTHDR || name == FW_IPV6_2292PKTOPTIONS ||
	       name == FW_IPV6_HOPOPTS || name == FW_IPV6_RTHDRDSTOPTS || name == FW_IPV6_RTHDR ||
	       name == FW_IPV6_DSTOPTS;
}

/* Set by the loader: whether a setsockopt program may ask for the
 * calling task's cgroup ancestors (bpf_get_current_ancestor_cgroup_id;
 * 5.10 has only the task's own cgroup there). The branch the constant
 * rules out is never verified. */
const volatile bool fw_cg_sockopt_walk = false;

SEC("cgroup/setsockopt")
int fw_cg_setsockopt(struct bpf_sockopt *ctx)
{
	struct fw_subject *s;
	struct fw_pkt pkt = {};
	__u64 cgid;

	/* past a page the program is shown the first page only: optlen 0
	 * has the kernel read the caller's own buffer, whole */
	if (ctx->optlen > FW_SOCKOPT_PAGE)
		ctx->optlen = 0;
	if (!fw_sockopt_routes(ctx->level, ctx->optname))
		return 1;
	pkt.family = ctx->level == FW_SOL_IPV6 ? FW_FAM_V6 : FW_FAM_V4;
	if (fw_cg_sockopt_walk) {
		s = fw_cg_task_subject();
		if (!s)
			return 1;
		return fw_cg_verdict(&pkt, s->id, FW_DROP_SOCKOPT, 0);
	}
	/* without the walk, a task below the attach point whose own cgroup
	 * is no subject's (one a sandbox made below its own) is refused as
	 * well, counted under no subject: every cgroup there is a sandbox's
	 * or below one */
	cgid = bpf_get_current_cgroup_id();
	s = bpf_map_lookup_elem(&fastwall_cgroups, &cgid);
	return fw_cg_verdict(&pkt, s ? s->id : 0, FW_DROP_SOCKOPT, 0);
}

/* Where a packet's source route lists the addresses it goes on to after
 * its destination (the first hop): an IPv4 loose or strict source-route
 * option, an IPv6 routing header of type 0, 2 (one address) or 4
 * (segment routing). off is 0 while the packet has none. */
#define FW_CG_ROUTE_MAX 9 /* the most an IPv4 option holds (39 bytes) */

struct fw_cg_route {
	__u32 off; /* the first address, from the network header */
	__u32 n;   /* how many, at most FW_CG_ROUTE_MAX */
	__u32 len; /* bytes an address takes: 4 or 16 */
};

#define FW_IPOPT_LSRR 0x83
#define FW_IPOPT_SSRR 0x89

/* An IPv4 header's options (bytes 20 to ihl), in the one form fastwall
 * reads: a single loose or strict source route, first, followed by no
 * more than the end-of-list padding to the next word (what the kernel
 * builds from one source-route option in an IP_RETOPTS control message;
 * the IP_OPTIONS socket option is refused). A process sandbox has no
 * use for options: any other layout drops, unread. */
static __always_inline __u32 fw_skb_opts_v4(struct __sk_buff *skb, __u32 ihl,
					    struct fw_cg_route *rt)
{
	__u8 o[2];

	if (bpf_skb_load_bytes(skb, 20, o, sizeof(o)))
		return FW_DROP_MALFORMED;
	if ((o[0] != FW_IPOPT_LSRR && o[0] != FW_IPOPT_SSRR) || o[1] < 3 || 20 + o[1] > ihl ||
	    ihl - (20 + o[1]) >= 4)
		return FW_DROP_SOURCE_ROUTE;
	rt->off = 23;
	rt->n = (o[1] - 3) / 4;
	rt->len = 4;
	return FW_PARSE_OK;
}

/* An IPv6 routing header at off: the addresses it lists. A second
 * routing header, a type that lists no plain addresses (3, RPL, is
 * compressed), or more than FW_CG_ROUTE_MAX addresses drops. */
static __always_inline __u32 fw_skb_rthdr(struct __sk_buff *skb, __u32 off, struct fw_cg_route *rt)
{
	__u8 rh[8];
	__u32 n;

	if (bpf_skb_load_bytes(skb, off, rh, sizeof(rh)))
		return FW_DROP_MALFORMED;
	if (rt->off || (rh[2] != 0 && rh[2] != 2 && rh[2] != 4))
		return FW_DROP_SOURCE_ROUTE;
	n = rh[1] / 2;
	/* segment routing: last entry, then TLVs that are no addresses */
	if (rh[2] == 4 && (__u32)rh[4] + 1 < n)
		n = (__u32)rh[4] + 1;
	if (n > FW_CG_ROUTE_MAX)
		return FW_DROP_SOURCE_ROUTE;
	rt->off = off + 8;
	rt->n = n;
	rt->len = 16;
	return FW_PARSE_OK;
}

/* The IPv6 extension headers a local socket may put before its transport
 * header; a fragment header (the stack fragments after this hook, so only
 * a raw socket's own) is malformed here. */
static __always_inline __u32 fw_skb_l4_v6(struct __sk_buff *skb, struct fw_pkt *pkt, __u32 *off,
					  struct fw_cg_route *rt)
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
		if (nh == FW_NEXTHDR_ROUTING) {
			__u32 reason = fw_skb_rthdr(skb, *off, rt);

			if (reason != FW_PARSE_OK)
				return reason;
		}
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
static __always_inline __u32 fw_skb_parse(struct __sk_buff *skb, struct fw_pkt *pkt,
					  struct fw_cg_route *rt)
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
		if (off < sizeof(ip))
			return FW_DROP_MALFORMED;
		if (off > sizeof(ip)) {
			reason = fw_skb_opts_v4(skb, off, rt);
			if (reason != FW_PARSE_OK)
				return reason;
		}
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct fw_ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)))
			return FW_DROP_MALFORMED;
		pkt->family = FW_FAM_V6;
		pkt->src = ip6.saddr;
		pkt->dst = ip6.daddr;
		pkt->proto = ip6.nexthdr;
		off = sizeof(ip6);
		reason = fw_skb_l4_v6(skb, pkt, &off, rt);
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

/* One address of a source route (len bytes at off in skb), judged as a
 * destination of the packet's transport (proto, dport) for the subject
 * of skb's socket: 0 when the subject may reach it, else source-route. A
 * global function, which the verifier checks once, on its own, however
 * many addresses a route names (a static one is checked again at every
 * call, and nine policy walks in a row are more than it takes). */
__noinline __u32 fw_cg_hop(struct __sk_buff *skb, __u32 off, __u32 len, __u32 proto, __u32 dport)
{
	struct fw_subject *s = fw_cg_skb_subject(skb);
	struct fw_pkt pkt = {};
	__be32 a;

	if (!s)
		return FW_DROP_SOURCE_ROUTE;
	if (len == 16) {
		if (bpf_skb_load_bytes(skb, off, &pkt.dst, 16))
			return FW_DROP_SOURCE_ROUTE;
		pkt.family = FW_FAM_V6;
	} else {
		if (bpf_skb_load_bytes(skb, off, &a, 4))
			return FW_DROP_SOURCE_ROUTE;
		fw_ip_from_v4(&pkt.dst, a);
		pkt.family = FW_FAM_V4;
	}
	pkt.proto = proto;
	pkt.dport = dport;
	pkt.has_ports = proto == FW_IPPROTO_TCP || proto == FW_IPPROTO_UDP;
	if (fw_cg_any_alias(&pkt.dst) || FW_REASON_DROPS(fw_cg_decide(&pkt, s)))
		return FW_DROP_SOURCE_ROUTE;
	return 0;
}

/* A packet that passed for its destination (its first hop), judged at
 * every further address its source route names: the packet goes to each.
 * The first address the subject may not reach drops it (source-route). */
static __always_inline __u32 fw_cg_route_decide(struct __sk_buff *skb, const struct fw_pkt *pkt,
						const struct fw_cg_route *rt, __u32 reason)
{
	for (__u32 k = 0; k < FW_CG_ROUTE_MAX; k++) {
		if (k >= rt->n)
			break;
		if (fw_cg_hop(skb, rt->off + rt->len * k, rt->len, pkt->proto, pkt->dport))
			return FW_DROP_SOURCE_ROUTE;
	}
	return reason;
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

/* The socket of skb when it is an unconnected UDP socket, whose every
 * datagram names its own destination at sendmsg; else NULL. */
static __always_inline struct bpf_sock *fw_cg_udp_unconnected(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return NULL;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->type != FW_SOCK_DGRAM || sk->protocol != FW_IPPROTO_UDP ||
	    sk->state != BPF_TCP_CLOSE)
		return NULL;
	return sk;
}

/* Whether skb is the datagram a sendmsg hook passed last on its socket sk
 * (the socket's ticket, fw_cg_sent), in the current rules epoch, with
 * headers that cannot send it elsewhere: IPv4 without options, IPv6 with
 * UDP right after the fixed header. The hook judged that datagram a
 * moment ago, for the task that sent it; judging it again would cost a
 * second policy walk per datagram and count it twice. It takes the
 * ticket: anything else this socket sends is judged here in full (what
 * leaves, not what was asked): a datagram whose options or extension
 * headers route it through other addresses, one of a sender the hooks
 * found no subject for (an io_uring worker of another cgroup), or a
 * second one racing the first. */
static __always_inline bool fw_cg_sent_match(struct __sk_buff *skb, struct bpf_sock *sk)
{
	struct fw_cg_sock *c = bpf_sk_storage_get(&fastwall_cg_sock, sk, 0, 0);
	struct fw_ip dst;
	__be16 ports[2];
	__u64 epoch;
	__u32 off, seq;
	__u8 proto;

	if (!c || !fw_cg_epoch(&epoch))
		return false;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct fw_iphdr ip;

		if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) || ip.ver_ihl != 0x45)
			return false;
		fw_ip_from_v4(&dst, ip.daddr);
		proto = ip.protocol;
		off = sizeof(ip);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct fw_ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)))
			return false;
		dst = ip6.daddr;
		proto = ip6.nexthdr;
		off = sizeof(ip6);
	} else {
		return false;
	}
	if (proto != FW_IPPROTO_UDP || bpf_skb_load_bytes(skb, off, ports, sizeof(ports)))
		return false;
	seq = fw_seq_read(&c->sent_seq);
	if (!seq || (seq & 1) || c->sent_used == seq || c->sent_epoch != epoch ||
	    c->sent_proto != proto || c->sent_dport != ports[1] || !fw_ip_eq(&c->sent_dst, &dst) ||
	    !fw_seq_same(&c->sent_seq, seq))
		return false;
	c->sent_used = seq;
	return true;
}

/* The socket's fastwall_l7_nat entry is in use: its last_seen_ns, at
 * most once a second (fastwalld deletes idle entries). */
static __always_inline void fw_cg_l7_seen(struct fw_cg_sock *c)
{
	struct fw_l7_nat_key k = {.client = c->l7_client,
				  .client_port = c->l7_client_port,
				  .proxy_port = c->l7_proxy_port};
	__u64 now = bpf_ktime_get_ns();
	struct fw_l7_nat *v;

	if (now - c->l7_seen_ns < FW_NSEC_PER_SEC)
		return;
	c->l7_seen_ns = now;
	v = bpf_map_lookup_elem(&fastwall_l7_nat, &k);
	if (v)
		v->last_seen_ns = now;
}

/* TCP to loopback: a socket connect sent to the layer-7 proxy passes
 * there once its fastwall_l7_nat entry is written (and after it closed:
 * its last segments); one whose entry could not be written, or has none,
 * drops. Any other socket's TCP to the proxy's ports drops. FW_PARSE_OK:
 * none of these, the policy decides. */
static __always_inline __u32 fw_cg_skb_l7_proxy(struct __sk_buff *skb, const struct fw_pkt *pkt)
{
	struct fw_cg_sock *c = NULL;
	struct bpf_sock *sk = skb->sk;

	if (pkt->proto != FW_IPPROTO_TCP || !pkt->has_ports || !fw_cg_loopback(&pkt->dst))
		return FW_PARSE_OK;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (sk)
		c = bpf_sk_storage_get(&fastwall_cg_sock, sk, 0, 0);
	if (c && c->l7 != FW_CG_L7_NONE && pkt->dport == c->l7_proxy_port &&
	    fw_ip_eq(&pkt->dst, &c->l7_proxy)) {
		if (c->l7 == FW_CG_L7_NAT)
			fw_cg_l7_seen(c);
		if (c->l7 == FW_CG_L7_NAT || c->l7 == FW_CG_L7_CLOSED)
			return FW_PASS_L7_PROXY;
		return c->l7 == FW_CG_L7_FULL ? FW_DROP_L7_FULL : FW_DROP_L7_UNTRACKED;
	}
	if (fw_cg_l7_to_proxy(fw_config(), pkt))
		return FW_DROP_POD_LOCAL;
	return FW_PARSE_OK;
}

/* A pass of the policy, pinned: UDP to a pinned TLS port is QUIC; TCP to
 * a pinned port here never went through connect's redirect (a socket
 * connected before pinning began), so it drops. */
static __always_inline __u32 fw_cg_skb_l7(const struct fw_subject *s, const struct fw_pkt *pkt,
					  __u32 reason)
{
	struct fw_config *cfg = fw_config();

	if (FW_REASON_DROPS(reason))
		return reason;
	if (pkt->proto == FW_IPPROTO_UDP)
		return fw_cg_l7_udp(cfg, s, pkt, reason);
	if (pkt->proto == FW_IPPROTO_TCP && fw_cg_l7_port(cfg, s, pkt, reason))
		return FW_DROP_L7_UNTRACKED;
	return reason;
}

SEC("cgroup_skb/egress")
int fw_cg_egress(struct __sk_buff *skb)
{
	struct fw_cg_route rt = {};
	struct fw_subject *s;
	struct fw_pkt pkt = {};
	struct bpf_sock *sk;
	__u32 reason;

	sk = fw_cg_udp_unconnected(skb);
	if (sk && fw_cg_sent_match(skb, sk))
		return 1;
	s = fw_cg_skb_subject(skb);
	if (!s)
		return 1;
	reason = fw_skb_parse(skb, &pkt, &rt);
	if (reason == FW_PARSE_OK && fw_cg_foreign_alias(&pkt.src, s))
		reason = FW_DROP_ALIAS_SOURCE;
	else if (reason == FW_PARSE_OK)
		reason = fw_cg_skb_alias(skb, &pkt, s);
	if (reason == FW_PARSE_OK)
		reason = fw_cg_skb_l7_proxy(skb, &pkt);
	if (reason == FW_PARSE_OK)
		reason = fw_cg_skb_l7(s, &pkt, fw_cg_decide(&pkt, s));
	if (rt.n && !FW_REASON_DROPS(reason))
		reason = fw_cg_route_decide(skb, &pkt, &rt, reason);
	return fw_cg_verdict(&pkt, s->id, reason, skb->len);
}
