// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Per-subject egress bandwidth at the TC egress of the node's uplinks
 * (the `bandwidth` section). It runs after forwarding, so the departure
 * time it writes reaches the qdisc on every kernel (before 5.18 the
 * forwarding path clears skb->tstamp, so one written at the sandbox's own
 * hook would be lost). The subject is the one of the packet's source
 * address (bridged sandboxes, whose packets arrive without a socket) or
 * of its socket's cgroup (process sandboxes, in the node's namespace).
 * fw_bw_edt paces for the fq qdisc fastwalld puts on the uplink; fw_bw_police
 * drops what exceeds the burst where fq cannot be had. Nothing of it runs
 * in fw_from_sandbox. */
#include "lib/common.h"
#include "lib/counters.h"
#include "lib/subject.h"
#include "lib/bandwidth.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* set by fastwalld before load: bandwidth.horizon, and whether process
 * sandboxes exist (without them a packet with a socket is the node's own
 * and no cgroup walk is done) */
const volatile __u64 fw_bw_horizon_ns = FW_BW_HORIZON_NS;
/* 1 by default: a plain load (bpftool, the verifier checks) takes the
 * longest path */
const volatile __u8 fw_bw_processes = 1;

/* The id of a subject with a limit (FW_SF_BW), else 0. */
static __always_inline __u32 fw_bw_limited(const struct fw_subject *s)
{
	return s && (s->flags & FW_SF_BW) ? s->id : 0;
}

/* The subject of the socket's cgroup: the first of levels
 * 1..FW_CG_MAX_LEVELS that fastwall_cgroups knows, from the top, as the
 * cgroup programs find it (bpf/lib/cgroup.h). */
static __always_inline __u32 fw_bw_cgroup_subject(struct __sk_buff *skb)
{
	for (int lvl = 1; lvl <= FW_CG_MAX_LEVELS; lvl++) {
		__u64 id = bpf_skb_ancestor_cgroup_id(skb, lvl);
		struct fw_subject *s;

		if (!id)
			return 0;
		s = bpf_map_lookup_elem(&fastwall_cgroups, &id);
		if (s)
			return fw_bw_limited(s);
	}
	return 0;
}

/* The id of the packet's subject when it has a limit, else 0. The source
 * address first: a bridged sandbox's packet has no socket after its
 * namespace (and a test run's has a dummy one), and a process sandbox's
 * source is the node's, which no subject has. */
static __always_inline __u32 fw_bw_subject(struct __sk_buff *skb)
{
	struct fw_subject *s = NULL;
	struct fw_ip src = {};

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		FW_IP_W(&src)[2] = bpf_htonl(0xffff);
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 12, &FW_IP_W(&src)[3], 4))
			return 0;
		s = bpf_map_lookup_elem(&fastwall_dispatch, &src);
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 8, src.b, sizeof(src.b)))
			return 0;
		s = bpf_map_lookup_elem(&fastwall_dispatch, &src);
	}
	if (s)
		return fw_bw_limited(s);
	return fw_bw_processes && skb->sk ? fw_bw_cgroup_subject(skb) : 0;
}

static __always_inline int fw_bw_egress(struct __sk_buff *skb, bool edt)
{
	struct fw_bandwidth *bw;
	__u32 id = fw_bw_subject(skb), reason;

	if (!id)
		return TC_ACT_OK;
	bw = bpf_map_lookup_elem(&fastwall_bandwidth, &id);
	if (!bw)
		return TC_ACT_OK;
	reason = fw_bw_decide(skb, bw, edt, fw_bw_horizon_ns);
	if (!reason)
		return TC_ACT_OK;
	fw_count(&reason, FW_DROP_BW_POLICE, id, skb->len, FW_COUNT_SUBJECT);
	return TC_ACT_SHOT;
}

SEC("tc")
int fw_bw_edt(struct __sk_buff *skb)
{
	return fw_bw_egress(skb, true);
}

SEC("tc")
int fw_bw_police(struct __sk_buff *skb)
{
	return fw_bw_egress(skb, false);
}
