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
#include "events.h"
#include "subject.h"
#include "policy.h"

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

/* An IPv4 (or v4-mapped) address in 127.254.0.0/16. */
static __always_inline bool fw_cg_any_alias(const struct fw_ip *a)
{
	return FW_IP_W(a)[0] == 0 && FW_IP_W(a)[1] == 0 && FW_IP_W(a)[2] == bpf_htonl(0xffff) &&
	       fw_cg_is_alias4(FW_IP_W(a)[3]);
}

/* s's own. */
static __always_inline bool fw_cg_own_alias(const struct fw_ip *a, const struct fw_subject *s)
{
	return fw_cg_any_alias(a) && FW_IP_W(a)[3] == fw_cg_alias4(s->id);
}

/* An IPv4 (or v4-mapped) address in 127.254.0.0/16 other than s's. */
static __always_inline bool fw_cg_foreign_alias(const struct fw_ip *a, const struct fw_subject *s)
{
	return FW_IP_W(a)[0] == 0 && FW_IP_W(a)[1] == 0 && FW_IP_W(a)[2] == bpf_htonl(0xffff) &&
	       fw_cg_is_alias4(FW_IP_W(a)[3]) && FW_IP_W(a)[3] != fw_cg_alias4(s->id);
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
	struct fw_subject_stats *ss;
	struct fw_counter *c;

	if (reason >= FW_REASON_MAX)
		reason = FW_DROP_MALFORMED;
	c = bpf_map_lookup_elem(&fastwall_stats_v2, &reason);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	ss = bpf_map_lookup_elem(&fastwall_subject_stats_v2, &subject);
	if (ss && reason < FW_REASON_SLOTS)
		ss->packets[reason]++;
	if (!FW_REASON_DROPS(reason))
		return 1;
	fw_cg_emit_drop(pkt, subject, reason);
	return 0;
}

#endif /* FW_BPF_CGROUP_H */
