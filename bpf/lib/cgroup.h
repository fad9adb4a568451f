/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Process sandboxes (bpf/cgroup.bpf.c): the subject of a task's or a
 * socket's cgroup, through its ancestors; the verdict of a destination
 * for such a subject; and the one exit path that counts a verdict and
 * reports a drop. Only the cgroup programs use this; the TC programs
 * decide in bpf/egress.bpf.c on the same maps. */
#ifndef FW_BPF_CGROUP_H
#define FW_BPF_CGROUP_H

#include "common.h"
#include "parse.h"
#include "config.h"
#include "counters.h"
#include "events.h"
#include "subject.h"
#include "answers.h"
#include "doh.h"
#include "policy.h"
#include "l7.h"

/* The subject of the first of levels 1..FW_CG_MAX_LEVELS of the calling
 * task's cgroup path that fastwall_cgroups knows, from the top down: a
 * sub-cgroup of a sandbox (one the sandbox made itself, say) is held to
 * the sandbox's subject, whatever is registered below. The ancestor id
 * is 0 once the level is deeper than the cgroup itself. */
static __always_inline struct fw_subject *fw_cg_task_subject(void)
{
	for (int lvl = 1; lvl <= FW_CG_MAX_LEVELS; lvl++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(lvl);
		struct fw_subject *s;

		if (!id)
			return NULL;
		s = bpf_map_lookup_elem(&fastwall_cgroups, &id);
		if (s)
			return s;
	}
	return NULL;
}

/* The same for the cgroup of the socket that sent skb (the packet path
 * runs in softirq as often as not: the current task says nothing). */
static __always_inline struct fw_subject *fw_cg_skb_subject(struct __sk_buff *skb)
{
	for (int lvl = 1; lvl <= FW_CG_MAX_LEVELS; lvl++) {
		__u64 id = bpf_skb_ancestor_cgroup_id(skb, lvl);
		struct fw_subject *s;

		if (!id)
			return NULL;
		s = bpf_map_lookup_elem(&fastwall_cgroups, &id);
		if (s)
			return s;
	}
	return NULL;
}

/* A sandbox socket's own record of its last socket-layer decision (the
 * sendmsg hooks'): the subject the cgroup walk found for the sending
 * task's cgroup, and the verdict of the last destination that fw_cg_decide
 * answered from the subject, its trie and port sets alone. Both hold only
 * for the same task cgroup and the epoch they were taken in:
 * fastwall_rules_epoch, which fastwalld raises after every write to
 * fastwall_cgroups (a subject added, removed or rebound, its state or
 * rules generation changed) and to a live generation's rules. A lease (or
 * the lack of one: default-deny) is never taken from here: it can be
 * revoked or expire within an epoch. Writer and reader: the sendmsg
 * hooks, which run with the socket locked (one writer per socket).
 * Not pinned: the cgroup object's own, it goes with its programs. */
struct fw_cg_sock {
	__u64 cgid;		   /* the sending task's cgroup (not the socket's) */
	__u64 epoch;		   /* fastwall_rules_epoch when taken */
	struct fw_subject subject; /* cgid's subject then */
	struct fw_ip dst;	   /* the last destination decided here, */
	__be16 dport;
	__u8 proto;
	__u8 decided; /* reason holds a verdict for dst, dport, proto */
	__u32 reason;
	/* The ticket: the datagram a sendmsg hook passed last (its
	 * destination after any rewrite), for cgroup_skb/egress, which lets
	 * that one datagram by without a second walk (fw_cg_sent_match).
	 * sent_seq is a sequence number (fw_seq_*: odd while a hook writes);
	 * sent_used is the sent_seq of the ticket egress took, so each
	 * ticket lets one datagram by. */
	__u32 sent_seq;
	__u32 sent_used;
	__u64 sent_epoch; /* fastwall_rules_epoch of the decision */
	struct fw_ip sent_dst;
	__be16 sent_dport;
	__u8 sent_proto;
	/* Layer-7 pinning: a TCP socket whose connect went to the proxy
	 * (fw_sa_l7, bpf/cgroup.bpf.c). Writers: the connect hooks, which
	 * set it (or clear it) at every connect, then the sockops program;
	 * both run with the socket locked. Readers: egress, getpeername. */
	__u8 l7;	       /* FW_CG_L7_*: what the fields below hold */
	__u8 l7_kind;	       /* enum fw_l7_kind */
	__be16 l7_port;	       /* the process addressed l7_dst, this port */
	__be16 l7_proxy_port;  /* it went to l7_proxy, this port */
	__be16 l7_client_port; /* its own end, keying its fastwall_l7_nat entry */
	__u32 l7_subject;
	__u64 l7_seen_ns; /* the entry's last_seen_ns as egress last wrote it */
	struct fw_ip l7_dst;
	struct fw_ip l7_proxy; /* 127.0.0.1 (v4-mapped) or ::1 */
	struct fw_ip l7_client;
};

/* fw_cg_sock.l7: connect sent the socket to the proxy (SENT); the
 * sockops program wrote its fastwall_l7_nat entry (NAT) or could not
 * (FULL); the socket closed and its entry went (CLOSED). */
#define FW_CG_L7_NONE	0
#define FW_CG_L7_SENT	1
#define FW_CG_L7_NAT	2
#define FW_CG_L7_FULL	3
#define FW_CG_L7_CLOSED 4

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fw_cg_sock);
} fastwall_cg_sock SEC(".maps");

/* The epoch, read before anything it guards (the walk, the trie): an
 * entry is then never tagged with an epoch newer than what it saw (see
 * fw_rule_get; FW_RULE_CACHE says where loads stay in order). */
static __always_inline bool fw_cg_epoch(__u64 *out)
{
	__u64 *ep = bpf_map_lookup_elem(&fastwall_rules_epoch, &(__u32){0});

	if (!FW_RULE_CACHE || !ep)
		return false;
	*out = *(volatile __u64 *)ep;
	fw_barrier();
	return true;
}

/* fw_cg_task_subject for a socket call, through the socket's record when
 * it was taken for the same task cgroup in the current epoch. A socket
 * passed to a task of another cgroup (or used after its task moved) walks
 * again: the task's cgroup decides, as it does without the record. *out
 * is the socket's record, valid for the subject returned, or NULL (none:
 * a task of no sandbox, storage refused, or no ordered loads). */
static __always_inline struct fw_subject *fw_cg_sock_subject(struct bpf_sock_addr *ctx,
							     struct fw_cg_sock **out)
{
	struct fw_cg_sock *c;
	struct fw_subject *s;
	__u64 epoch, cgid;

	*out = NULL;
	if (!fw_cg_epoch(&epoch))
		return fw_cg_task_subject();
	cgid = bpf_get_current_cgroup_id();
	c = bpf_sk_storage_get(&fastwall_cg_sock, ctx->sk, 0, 0);
	if (c && c->cgid == cgid && c->epoch == epoch) {
		*out = c;
		return &c->subject;
	}
	s = fw_cg_task_subject();
	if (!s)
		return NULL;
	if (!c)
		c = bpf_sk_storage_get(&fastwall_cg_sock, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return s;
	c->cgid = cgid;
	c->epoch = epoch;
	c->subject = *s;
	c->decided = 0;
	*out = c;
	return &c->subject;
}

/* The loopback address a process subject's DNS goes to, where the proxy
 * receives it (fastwall/abi.h). */
static __always_inline __be32 fw_cg_alias4(__u32 id)
{
	return bpf_htonl(FW_CG_DNS_ALIAS_NET | (id & 0xffff));
}

static __always_inline bool fw_cg_is_alias4(__be32 a)
{
	return (bpf_ntohl(a) & 0xffff0000u) == FW_CG_DNS_ALIAS_NET;
}

/* An IPv4 (or v4-mapped) address in 127.254.0.0/16: the one test of
 * a DNS alias, whichever subject's it is. */
static __always_inline bool fw_cg_any_alias(const struct fw_ip *a)
{
	return fw_ip_is_v4mapped(a) && fw_cg_is_alias4(FW_IP_W(a)[3]);
}

/* s's own. */
static __always_inline bool fw_cg_own_alias(const struct fw_ip *a, const struct fw_subject *s)
{
	return fw_cg_any_alias(a) && FW_IP_W(a)[3] == fw_cg_alias4(s->id);
}

/* Another subject's. */
static __always_inline bool fw_cg_foreign_alias(const struct fw_ip *a, const struct fw_subject *s)
{
	return fw_cg_any_alias(a) && FW_IP_W(a)[3] != fw_cg_alias4(s->id);
}

/* What a process subject may reach: nothing unless active, never DNS
 * over TLS or the DoH blocklist, and then its rules. There is no pod
 * here: no gateway, pod-local set or private CIDR; loopback and the
 * node's own addresses are destinations like any other. */
static __always_inline __u32 fw_cg_decide(const struct fw_pkt *pkt, const struct fw_subject *s)
{
	struct fw_config *cfg = fw_config();

	if (!cfg)
		return FW_DROP_NO_POLICY;
	if (s->state != FW_STATE_ACTIVE)
		return FW_DROP_DENYING;
	if (pkt->has_ports && pkt->dport == bpf_htons(853) &&
	    (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP))
		return FW_DROP_DOT;
	if (fw_doh_blocked(cfg, pkt))
		return FW_DROP_DOH;
	return fw_policy(s, pkt);
}

/* fw_cg_decide for a UDP datagram of a socket with record c: the
 * record's verdict when it is for the same destination, else
 * fw_cg_decide's, kept when nothing but the epoch's state decided it
 * (a CIDR or port rule, the default allow). */
static __always_inline __u32 fw_cg_decide_sock(const struct fw_pkt *pkt, const struct fw_subject *s,
					       struct fw_cg_sock *c)
{
	__u32 reason;

	if (c && c->decided && c->proto == pkt->proto && c->dport == pkt->dport &&
	    fw_ip_eq(&c->dst, &pkt->dst))
		return c->reason;
	reason = fw_cg_decide(pkt, s);
	if (c && pkt->proto == FW_IPPROTO_UDP &&
	    (reason == FW_PASS_ALLOW_CIDR || reason == FW_PASS_DEFAULT ||
	     reason == FW_DROP_DENY_CIDR)) {
		c->dst = pkt->dst;
		c->dport = pkt->dport;
		c->proto = pkt->proto;
		c->reason = reason;
		c->decided = 1;
	}
	return reason;
}

/* A ticket for the datagram a sendmsg hook is passing on c's socket to
 * dst, dport (after any rewrite to the DNS proxy): egress lets that
 * datagram by (fw_cg_sent_match). The hooks write it with the socket
 * locked, one writer at a time. */
static __always_inline void fw_cg_sent(struct fw_cg_sock *c, const struct fw_ip *dst, __be16 dport,
				       __u8 proto)
{
	__u32 v;

	if (!c || !fw_seq_write_begin(&c->sent_seq, &v))
		return;
	c->sent_dst = *dst;
	c->sent_dport = dport;
	c->sent_proto = proto;
	c->sent_epoch = c->epoch;
	fw_seq_write_end(&c->sent_seq, v);
}

/* The proxy's ports (a TLS and an HTTP one, network order; 0: none),
 * written by the loader from fastwall_l7_ports (fw_cg_l7_sync): no
 * process addresses them on loopback itself. */
#define FW_CG_L7_PROXIES 4
volatile __be16 fw_cg_l7_proxy[FW_CG_L7_PROXIES];

/* 127.0.0.0/8, ::1, and the unspecified addresses a connect() takes for
 * the local host: where the proxy listens. */
static __always_inline bool fw_cg_loopback(const struct fw_ip *a)
{
	__u32 w = bpf_ntohl(FW_IP_W(a)[3]);

	if (fw_ip_is_v4mapped(a))
		return (w >> 24) == 127 || w == 0;
	return (FW_IP_W(a)[0] | FW_IP_W(a)[1] | FW_IP_W(a)[2]) == 0 && w <= 1;
}

/* TCP to one of the proxy's ports on loopback. */
static __always_inline bool fw_cg_l7_to_proxy(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	if (!cfg || !(cfg->flags & FW_CF_L7) || pkt->proto != FW_IPPROTO_TCP || !pkt->has_ports ||
	    !fw_cg_loopback(&pkt->dst))
		return false;
	for (int i = 0; i < FW_CG_L7_PROXIES; i++)
		if (fw_cg_l7_proxy[i] && fw_cg_l7_proxy[i] == pkt->dport)
			return true;
	return false;
}

/* The pinned port a pass (reason) of s to pkt's destination port is, or
 * NULL: pinning configured, the subject pinned, the pass by a lease (or
 * by an allow CIDR, for a subject that pins those too), a port of
 * fastwall_l7_ports. A UDP destination port is looked up as the TCP
 * one (QUIC is TLS's UDP). */
static __always_inline struct fw_l7_port *fw_cg_l7_port(const struct fw_config *cfg,
							const struct fw_subject *s,
							const struct fw_pkt *pkt, __u32 reason)
{
	struct fw_port_key k = {.proto = FW_IPPROTO_TCP};

	if (!cfg || !(cfg->flags & FW_CF_L7) || !(s->flags & FW_SF_L7) || !pkt->has_ports)
		return NULL;
	if (reason != FW_PASS_LEARNED &&
	    !(reason == FW_PASS_ALLOW_CIDR && (s->flags & FW_SF_L7_CIDR)))
		return NULL;
	k.port = pkt->dport;
	return bpf_map_lookup_elem(&fastwall_l7_ports, &k);
}

/* reason, or l7-quic for UDP to a pinned TLS port (the proxy cannot read
 * QUIC; clients fall back to TCP) unless the configuration lets it by. */
static __always_inline __u32 fw_cg_l7_udp(const struct fw_config *cfg, const struct fw_subject *s,
					  const struct fw_pkt *pkt, __u32 reason)
{
	struct fw_l7_port *p;

	if (!cfg || pkt->proto != FW_IPPROTO_UDP || FW_REASON_DROPS(reason))
		return reason;
	p = fw_cg_l7_port(cfg, s, pkt, reason);
	if (p && p->kind == FW_L7_TLS && !(cfg->flags & FW_CF_L7_QUIC))
		return FW_DROP_L7_QUIC;
	return reason;
}

/* a socket call's drop: no interface yet */
static __always_inline void fw_cg_emit_drop(const struct fw_pkt *pkt, __u32 subject, __u32 reason)
{
	fw_event_drop(subject, reason, 0, &pkt->src, &pkt->dst, pkt->sport, pkt->dport, pkt->proto,
		      pkt->family);
}

/* Counts reason for subject (len bytes: 0 for a socket call), reports a
 * drop, and returns what the cgroup hooks take: 1 goes on, 0 refuses
 * (EPERM to the caller). */
static __always_inline int fw_cg_verdict(const struct fw_pkt *pkt, __u32 subject, __u32 reason,
					 __u32 len)
{
	fw_count(&reason, FW_DROP_MALFORMED, subject, len, FW_COUNT_SUBJECT);
	if (!FW_REASON_DROPS(reason))
		return 1;
	fw_cg_emit_drop(pkt, subject, reason);
	return 0;
}

#endif /* FW_BPF_CGROUP_H */
