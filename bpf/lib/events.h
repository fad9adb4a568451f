/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Deny and sampled allow events: the ring buffer fastwalld reads, each
 * subject's event budget (GCRA, per CPU) and the count of events lost to
 * a full ring. fw_event_emit() writes one event within the budget; the
 * verdict stands whether or not it could. */
#ifndef FW_BPF_EVENTS_H
#define FW_BPF_EVENTS_H

#include "common.h"
#include "parse.h"
#include "config.h"

/* subject id -> GCRA state of its event budget, per CPU. Writer and reader:
 * every program that emits events. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_event_budget);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_event_budget SEC(".maps");

/* deny events (struct fw_event). Writer: every program that emits events.
 * Reader: fastwalld. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FW_EVENT_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_events SEC(".maps");

/* event type (FW_EVENT_DROP, FW_EVENT_ALLOW) -> events lost because the
 * ring was full, per CPU. Writer: every program that emits events.
 * Reader: fastwalld. Added to ABI 2 without a new version. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_EVENT_LOST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_events_lost SEC(".maps");

/* GCRA: allow a burst of cfg->event_burst events, then one per interval. */
static __always_inline bool fw_event_allowed(__u32 subject, __u64 *suppressed)
{
	struct fw_config *cfg = fw_config();
	struct fw_event_budget *b;
	__u64 now, tolerance;

	b = bpf_map_lookup_elem(&fastwall_event_budget, &subject);
	if (!cfg || !b || !cfg->event_interval_ns)
		return false;

	now = bpf_ktime_get_ns();
	tolerance = cfg->event_interval_ns * cfg->event_burst;
	if (b->tat_ns < now)
		b->tat_ns = now;
	/* room for one more interval within the burst tolerance */
	if (b->tat_ns + cfg->event_interval_ns - now > tolerance) {
		b->suppressed++;
		return false;
	}
	b->tat_ns += cfg->event_interval_ns;
	*suppressed = b->suppressed;
	b->suppressed = 0;
	return true;
}

/* One event, rate limited per subject (0: the source is no subject).
 * Every field is written: ring buffer space is not zeroed. */
static __always_inline void fw_event_emit(__u32 type, __u32 subject, __u32 reason, __u32 ifindex,
					  const struct fw_ip *src, const struct fw_ip *dst,
					  __be16 sport, __be16 dport, __u8 proto, __u8 family)
{
	struct fw_event *ev;
	__u64 suppressed = 0;

	if (!fw_event_allowed(subject, &suppressed))
		return;
	ev = bpf_ringbuf_reserve(&fastwall_events, sizeof(*ev), 0);
	if (!ev) {
		__u64 *lost = bpf_map_lookup_elem(&fastwall_events_lost, &type);

		/* nobody reads fast enough: count it, the verdict stands */
		if (lost)
			(*lost)++;
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->type = type;
	ev->subject = subject;
	ev->reason = reason;
	ev->ifindex = ifindex;
	ev->suppressed = suppressed;
	ev->src = *src;
	ev->dst = *dst;
	ev->sport = sport;
	ev->dport = dport;
	ev->proto = proto;
	ev->family = family;
	ev->pad[0] = 0;
	ev->pad[1] = 0;
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline void fw_event_drop(__u32 subject, __u32 reason, __u32 ifindex,
					  const struct fw_ip *src, const struct fw_ip *dst,
					  __be16 sport, __be16 dport, __u8 proto, __u8 family)
{
	fw_event_emit(FW_EVENT_DROP, subject, reason, ifindex, src, dst, sport, dport, proto,
		      family);
}

/* A passed packet as a sampled allow event (monitor.allow_sample). Off,
 * the cost is the flag test on cfg, which the caller has read already. */
static __always_inline void fw_event_allow_sample(struct __sk_buff *skb,
						  const struct fw_config *cfg,
						  const struct fw_pkt *pkt, __u32 subject,
						  __u32 reason)
{
	if (!(cfg->flags & FW_CF_ALLOW_SAMPLE) || FW_REASON_DROPS(reason))
		return;
	if (cfg->allow_sample > 1 && bpf_get_prandom_u32() % cfg->allow_sample)
		return;
	fw_event_emit(FW_EVENT_ALLOW, subject, reason, skb->ifindex, &pkt->src, &pkt->dst,
		      pkt->sport, pkt->dport, pkt->proto, pkt->family);
}

#endif /* FW_BPF_EVENTS_H */
