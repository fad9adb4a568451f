/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Layer-7 pinning: a subject's TCP connection to a pinned port of an
 * address a lease opened (or, with FW_SF_L7_CIDR, an allow CIDR) goes to
 * the node's proxy, which lets through only the server name (TLS) or
 * Host (HTTP) of a name that taught the address. The maps are read by
 * every program that pins (the TC programs, the cgroup programs) and the
 * proxy; the redirect of a sandbox port's packets (fw_l7_redirect) and
 * its way back (fw_l7_unredirect) are the TC programs' alone, compiled
 * where FW_L7_TC is defined. Fail closed throughout: a connection that
 * cannot be handed to the proxy drops with a reason of its own, never
 * goes past it. */
#ifndef FW_BPF_L7_H
#define FW_BPF_L7_H

#include "common.h"
#include "parse.h"
#include "config.h"

/* {TCP, port} -> struct fw_l7_port: the destination ports pinned and the
 * proxy port of their kind. Writer: fastwalld. Readers: fw_from_sandbox,
 * the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_L7_PORTS);
	__type(key, struct fw_port_key);
	__type(value, struct fw_l7_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l7_ports SEC(".maps");

/* {sandbox address, sandbox port, proxy port} -> struct fw_l7_nat: where
 * a connection sent to the proxy was meant to go. A plain hash: a new
 * connection never pushes out a live one; full, or the subject's share
 * of it used up (fastwall_l7_count), is l7-full. Writers:
 * fw_from_sandbox, the cgroup sockops program, fastwalld (fw_dp_l7_gc
 * deletes what went idle). Readers: the TC and cgroup programs, the
 * proxy. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_L7_NAT);
	__type(key, struct fw_l7_nat_key);
	__type(value, struct fw_l7_nat);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l7_nat SEC(".maps");

/* subject id -> fastwall_l7_nat entries it holds, capped at
 * fw_config.conn_quota (0 = no cap), so one sandbox's SYNs cannot fill
 * the table for its siblings. Writers: fw_l7_put (adds after an insert),
 * the cgroup sockops program (takes off the entry it deletes at close),
 * fastwalld (takes off what fw_dp_l7_gc deletes, rewrites a count its
 * scan found drifted, zeroes a reaped id's). Mmapable, so fastwalld's
 * writes are atomic against the programs'. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l7_count SEC(".maps");

/* last_seen_ns is written at most this often by the packet path */
#define FW_L7_TOUCH_NS 1000000000ull

/* The pinned port of TCP or UDP destination port dport, or NULL. */
static __always_inline struct fw_l7_port *fw_l7_port_of(__be16 dport)
{
	struct fw_port_key pk = {};

	pk.proto = FW_IPPROTO_TCP;
	pk.port = dport;
	return bpf_map_lookup_elem(&fastwall_l7_ports, &pk);
}

/* The packet goes where nat says the connection was meant to go. */
static __always_inline bool fw_l7_same_orig(const struct fw_l7_nat *nat, const struct fw_ip *dst,
					    __be16 dport)
{
	return fw_ip_eq(&nat->orig_dst, dst) && nat->orig_port == dport;
}

/* An entry of subject id was deleted: one off its count. Only the
 * deleter of an entry that was there calls it, so a delete that found
 * nothing takes nothing off. */
static __always_inline void fw_l7_uncount(__u32 id)
{
	__u64 *count = bpf_map_lookup_elem(&fastwall_l7_count, &id);

	if (count)
		__sync_fetch_and_add(count, -1);
}

/* Writes v, the entry of a connection of subject v->subject, at k. cur:
 * the entry there now (the caller looked it up), or NULL. The subject's
 * own entry (a port reused after its connection closed or went idle) is
 * overwritten and counts nothing, unless the proxy reported it closed
 * (no longer counted: it is deleted, and the new one is counted);
 * otherwise the entry is new: within the
 * subject's share (conn_quota; 0 = no cap) it is added, never over
 * another (BPF_NOEXIST), and counted after the insert. An entry of
 * another subject there (the address changed hands) is deleted first and
 * taken off its count. false: the share is used up or the table is full
 * (l7-full). The count is checked, then added to (a fetching atomic
 * needs 5.12): concurrent SYNs on several CPUs pass the quota by at most
 * one each. */
static __always_inline bool fw_l7_put(const struct fw_l7_nat_key *k, const struct fw_l7_nat *v,
				      const struct fw_l7_nat *cur)
{
	struct fw_config *cfg = fw_config();
	__u32 id = v->subject;
	__u64 *count;

	if (cur) {
		__u32 old = cur->subject;
		bool counted = !cur->reported;

		if (old == id && counted) {
			if (!bpf_map_update_elem(&fastwall_l7_nat, k, v, BPF_EXIST))
				return true;
			/* collected since the lookup: a new entry */
		} else if (!bpf_map_delete_elem(&fastwall_l7_nat, k) && counted) {
			fw_l7_uncount(old);
		}
	}
	count = bpf_map_lookup_elem(&fastwall_l7_count, &id);
	if (!cfg || !count)
		return false;
	if (cfg->conn_quota && *count >= cfg->conn_quota)
		return false;
	if (bpf_map_update_elem(&fastwall_l7_nat, k, v, BPF_NOEXIST))
		return false;
	__sync_fetch_and_add(count, 1);
	return true;
}

#ifdef FW_L7_TC
#include "flows.h"
#include "rewrite.h"
#include "subject.h"

/* What fw_from_sandbox hands fw_l7_finish (bpf/egress.bpf.c): the
 * parsed packet, its verdict and its subject. A global function's
 * arguments can only be the context and scalars on the oldest kernels of
 * the matrix, so they travel in this CPU's slot. Writer and reader:
 * fw_from_sandbox. */
struct fw_l7_args {
	struct fw_pkt pkt;
	__u32 reason;
	__u32 subject;
	/* fw_l7_redirect's key and entry: here rather than on its stack,
	 * which 5.10 and 6.1 add to its callers' (512 bytes in all) */
	struct fw_l7_nat_key k;
	struct fw_l7_nat v;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_l7_args);
} fastwall_l7_args SEC(".maps");

/* Not a reason: fw_from_sandbox_reason's word that the packet is a pin
 * candidate, stashed in fastwall_l7_args for fw_l7_finish. */
#define FW_L7_PENDING 0xfffeu

/* A pass that may be pinned: by a lease or an allow CIDR, TCP or UDP. */
static __always_inline bool fw_l7_candidate(const struct fw_pkt *pkt, __u32 reason)
{
	return (reason == FW_PASS_LEARNED || reason == FW_PASS_ALLOW_CIDR) && pkt->has_ports &&
	       (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP);
}

/* The candidate into this CPU's slot: FW_L7_PENDING, or a drop when the
 * slot is missing (fail closed). */
static __always_inline __u32 fw_l7_stash(const struct fw_pkt *pkt, __u32 reason, __u32 subject)
{
	struct fw_l7_args *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&fastwall_l7_args, &zero);
	if (!a)
		return FW_DROP_MALFORMED;
	__builtin_memcpy(&a->pkt, pkt, sizeof(*pkt));
	a->reason = reason;
	a->subject = subject;
	return FW_L7_PENDING;
}

/* fw_l7_finish, with FW_CF_L7 set, for a pin candidate after its verdict
 * and the note of a passed first fragment: the verdict again,
 * FW_PASS_L7_PROXY when the packet was rewritten to the proxy (the
 * subject's gateway of the family and the proxy port of the kind), or a
 * drop reason. */
static __always_inline __u32 fw_l7_redirect(struct __sk_buff *skb, const struct fw_config *cfg,
					    struct fw_l7_args *a)
{
	const struct fw_pkt *pkt = &a->pkt;
	struct fw_l7_nat_key *k = &a->k;
	struct fw_l7_nat *v = &a->v, *cur;
	__u32 reason = a->reason;
	struct fw_l7_port *lp;
	struct fw_subject *s;
	__u8 fam = pkt->family & 1;
	__u8 gw_flag = pkt->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
	__u64 now;

	if (reason != FW_PASS_LEARNED && reason != FW_PASS_ALLOW_CIDR)
		return reason;
	if (!pkt->has_ports || (pkt->proto != FW_IPPROTO_TCP && pkt->proto != FW_IPPROTO_UDP))
		return reason;
	lp = fw_l7_port_of(pkt->dport);
	if (!lp)
		return reason;
	/* the fast path's verdict carries no flags: the dispatch value has */
	s = fw_subject_of(&pkt->src);
	if (!s || !(s->flags & FW_SF_L7))
		return reason;
	if (reason == FW_PASS_ALLOW_CIDR && !(s->flags & FW_SF_L7_CIDR))
		return reason;
	if (pkt->proto == FW_IPPROTO_UDP) {
		/* QUIC would carry the name past the proxy: clients fall back
		 * to TCP when it drops */
		if (lp->kind == FW_L7_TLS && !(cfg->flags & FW_CF_L7_QUIC))
			return FW_DROP_L7_QUIC;
		return reason;
	}
	/* later fragments would keep the old destination: no reassembly,
	 * and the note that the datagram passed goes */
	if (pkt->frag_first) {
		fw_frag_forget(pkt);
		return FW_DROP_FRAGMENT;
	}
	if (!(s->flags & gw_flag))
		return FW_DROP_L7_PROXY_DOWN;

	__builtin_memset(k, 0, sizeof(*k));
	k->client = pkt->src;
	k->client_port = pkt->sport;
	k->proxy_port = lp->proxy_port;
	cur = bpf_map_lookup_elem(&fastwall_l7_nat, k);
	now = bpf_ktime_get_ns();
	if ((pkt->tcp_flags & (FW_TCP_SYN | FW_TCP_ACK)) == FW_TCP_SYN) {
		if (!(cfg->flags & FW_CF_L7_UP))
			return FW_DROP_L7_PROXY_DOWN;
		/* neither side closed it */
		bool open = cur && !cur->closed && !cur->reported;

		if (open && fw_l7_same_orig(cur, &pkt->dst, pkt->dport)) {
			/* a retransmitted SYN */
			cur->last_seen_ns = now;
		} else {
			if (open && now - cur->last_seen_ns < FW_L7_REUSE_NS)
				return FW_DROP_L7_PORT_REUSE;
			__builtin_memset(v, 0, sizeof(*v));
			v->orig_dst = pkt->dst;
			v->orig_port = pkt->dport;
			v->proxy_port = lp->proxy_port;
			v->subject = s->id;
			v->last_seen_ns = now;
			v->kind = lp->kind;
			v->family = pkt->family;
			if (!fw_l7_put(k, v, cur))
				return FW_DROP_L7_FULL;
		}
	} else {
		/* the entry went (idle, or the table was emptied): never to
		 * the original destination, which never saw the SYN */
		if (!cur || !fw_l7_same_orig(cur, &pkt->dst, pkt->dport))
			return FW_DROP_L7_UNTRACKED;
		if (pkt->tcp_flags & (FW_TCP_FIN | FW_TCP_RST))
			cur->closed = 1;
		if (now - cur->last_seen_ns >= FW_L7_TOUCH_NS)
			cur->last_seen_ns = now;
	}
	if (fw_rewrite_addr(skb, pkt, false, &pkt->dst, &s->gateway[fam]) ||
	    fw_rewrite_port(skb, pkt, pkt->l4_off + 2, pkt->dport, lp->proxy_port))
		return FW_DROP_MALFORMED;
	return FW_PASS_L7_PROXY;
}

/* fw_to_sandbox, for TCP into subject s from one of the pod's own
 * addresses: with FW_CF_L7 set, the proxy's segment of a pinned
 * connection leaves with the source the sandbox addressed. Returns true
 * when it was one. Out of line, and the settings looked up here: the
 * path of traffic from anywhere else carries nothing of it. */
static __noinline bool fw_l7_unredirect(struct __sk_buff *skb, const struct fw_pkt *pkt,
					const struct fw_subject *s)
{
	__u8 gw_flag = pkt->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
	struct fw_l7_nat_key k = {};
	struct fw_config *cfg = fw_config();
	struct fw_l7_nat *v;
	struct fw_ip orig;
	__be16 port;

	if (!cfg || !(cfg->flags & FW_CF_L7))
		return false;
	/* the proxy listens on the gateway alone */
	if (!(s->flags & gw_flag) || !fw_ip_eq(&pkt->src, &s->gateway[pkt->family & 1]))
		return false;
	k.client = pkt->dst;
	k.client_port = pkt->dport;
	k.proxy_port = pkt->sport;
	v = bpf_map_lookup_elem(&fastwall_l7_nat, &k);
	if (!v)
		return false;
	orig = v->orig_dst;
	port = v->orig_port;
	fw_rewrite_addr(skb, pkt, true, &pkt->src, &orig);
	fw_rewrite_port(skb, pkt, pkt->l4_off, pkt->sport, port);
	return true;
}
#endif /* FW_L7_TC */

#endif /* FW_BPF_L7_H */
