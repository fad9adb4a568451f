/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Connection memory the data plane keeps itself: flows the pod opened into
 * a sandbox (so their replies pass pod-local protection) and first
 * fragments (so the rest of a passed datagram can follow). Both LRU. */
#ifndef FW_BPF_FLOWS_H
#define FW_BPF_FLOWS_H

#include "common.h"
#include "parse.h"

/* reply-shaped 5-tuple -> last seen. Writer: fw_to_sandbox. Reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FW_MAX_POD_FLOWS);
	__type(key, struct fw_flow_key);
	__type(value, struct fw_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_pod_flows SEC(".maps");

/* {src, dst, id, proto} of a passed first fragment -> expiry. Writer and
 * reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FW_MAX_FRAGS);
	__type(key, struct fw_frag_key);
	__type(value, struct fw_frag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_frags SEC(".maps");

static __always_inline void fw_flow_key_of_reply(struct fw_flow_key *k, const struct fw_pkt *pkt)
{
	/* the sandbox's packet: src = sandbox, dst = pod */
	k->sandbox = pkt->src;
	k->pod = pkt->dst;
	k->sandbox_port = pkt->sport;
	k->pod_port = pkt->dport;
	k->proto = pkt->proto;
	k->pad[0] = k->pad[1] = k->pad[2] = 0;
}

static __always_inline bool fw_pod_flow_live(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	struct fw_flow_key k;
	struct fw_flow *f;

	if (!pkt->has_ports)
		return false;
	fw_flow_key_of_reply(&k, pkt);
	f = bpf_map_lookup_elem(&fastwall_pod_flows, &k);
	return f && bpf_ktime_get_ns() - f->last_seen_ns < cfg->pod_flow_timeout_ns;
}

/* Called on the pod's packet into the sandbox (src = pod, dst = sandbox). */
static __always_inline void fw_pod_flow_note(const struct fw_pkt *pkt)
{
	struct fw_flow_key k;
	struct fw_flow *f, fresh;
	__u64 now = bpf_ktime_get_ns();

	k.sandbox = pkt->dst;
	k.pod = pkt->src;
	k.sandbox_port = pkt->dport;
	k.pod_port = pkt->sport;
	k.proto = pkt->proto;
	k.pad[0] = k.pad[1] = k.pad[2] = 0;

	f = bpf_map_lookup_elem(&fastwall_pod_flows, &k);
	if (f) {
		if (now - f->last_seen_ns > FW_NSEC_PER_SEC)
			f->last_seen_ns = now;
		return;
	}
	fresh.last_seen_ns = now;
	bpf_map_update_elem(&fastwall_pod_flows, &k, &fresh, BPF_ANY);
}

static __always_inline void fw_frag_key_of(struct fw_frag_key *k, const struct fw_pkt *pkt)
{
	k->src = pkt->src;
	k->dst = pkt->dst;
	k->id = pkt->frag_id;
	/* IPv6 reassembles on addresses and id alone, taking the next header
	 * from the first fragment; the one after a later fragment's fragment
	 * header is whatever the sender wrote there */
	k->proto = pkt->family == FW_FAM_V6 ? 0 : pkt->proto;
	k->pad[0] = k->pad[1] = k->pad[2] = 0;
}

static __always_inline void fw_frag_note(const struct fw_config *cfg, const struct fw_pkt *pkt,
					 __u32 subject)
{
	struct fw_frag_key k;
	struct fw_frag v = {};

	fw_frag_key_of(&k, pkt);
	v.expires_ns = bpf_ktime_get_ns() + cfg->frag_timeout_ns;
	v.subject = subject;
	v.hdr_end = pkt->frag_hdr_end;
	bpf_map_update_elem(&fastwall_frags, &k, &v, BPF_ANY);
}

/* A first fragment the policy dropped takes its id back from an earlier
 * one that passed: later fragments with that id can no longer tell which
 * of the two they belong to. */
static __always_inline void fw_frag_forget(const struct fw_pkt *pkt)
{
	struct fw_frag_key k;

	fw_frag_key_of(&k, pkt);
	bpf_map_delete_elem(&fastwall_frags, &k);
}

/* The verdict on a non-first fragment: it follows a first fragment that
 * passed, unless it starts inside that fragment's headers (an overlap a
 * receiver could resolve in its favour, rewriting the ports that were
 * checked). *subject is the first fragment's subject, or 0. */
static __always_inline __u32 fw_frag_verdict(const struct fw_pkt *pkt, __u32 *subject)
{
	struct fw_frag_key k;
	struct fw_frag *v;

	fw_frag_key_of(&k, pkt);
	v = bpf_map_lookup_elem(&fastwall_frags, &k);
	if (!v || v->expires_ns <= bpf_ktime_get_ns())
		return FW_DROP_FRAGMENT;
	*subject = v->subject;
	if (pkt->frag_off < v->hdr_end)
		return FW_DROP_FRAG_HEADER;
	return FW_PASS_FRAGMENT;
}

#endif /* FW_BPF_FLOWS_H */
