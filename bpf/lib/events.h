/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Verdict accounting: global and per-subject counters, the settings record,
 * and the rate-limited ring buffer of deny events. fw_verdict() is the one
 * exit path of the ingress program: it counts, reports drops, and maps the
 * reason to a TC return code. */
#ifndef FW_BPF_EVENTS_H
#define FW_BPF_EVENTS_H

#include "common.h"
#include "parse.h"

/* key 0 -> struct fw_config. Writer: fastwalld. Reader: TC programs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_config SEC(".maps");

/* reason -> packets/bytes, per CPU. Writer: TC ingress. Reader: fastwalld,
 * CLI. FW_REASON_SLOTS, not FW_REASON_MAX: a new reason keeps the layout
 * (and the pinned map) of this one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_REASON_SLOTS);
	__type(key, __u32);
	__type(value, struct fw_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_stats_v2 SEC(".maps");

/* subject id -> per-reason packets, per CPU. Writer: TC ingress.
 * Reader: fastwalld, CLI. Reset by fastwalld when an id is reused. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_subject_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_subject_stats_v2 SEC(".maps");

/* {CPU, subject id} -> struct fw_subject_row (fastwall/abi.h): the
 * subject's answer cache and policy pass counters on one line. Here one
 * CPU's rows; fastwalld sizes it to every possible CPU before the load.
 * Writers: TC ingress, fastwalld (zeroes the counters of a reused id).
 * Readers: TC ingress, fastwalld, CLI. Only in the object that defines
 * FW_SUBJECT_ROWS (the TC programs): the cgroup programs and the guard
 * count in fastwall_subject_stats_v2 as they always did. */
#ifdef FW_SUBJECT_ROWS
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_subject_row);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_subject_rows SEC(".maps");

/* {CPU, source slot} -> struct fw_src_slot (fastwall/abi.h): this CPU's
 * last answer per IPv4 source. Here one CPU's slots; fastwalld sizes it
 * to every possible CPU before the load. A cache of these programs'
 * own: not pinned, empty at every load. Writer and reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_SRC_SLOTS);
	__type(key, __u32);
	__type(value, struct fw_src_slot);
	__uint(map_flags, BPF_F_MMAPABLE);
} fastwall_src_slots SEC(".maps");
#endif

/* subject id -> GCRA state of its event budget, per CPU. Writer and reader:
 * TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_event_budget);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_event_budget SEC(".maps");

/* deny events (struct fw_event). Writer: TC ingress. Reader: fastwalld. */
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

static __always_inline struct fw_config *fw_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fastwall_config, &zero);
}

/* This CPU's row of subject id; NULL for a CPU the map was not sized
 * for (the caller then does without). A plain array, not a per-CPU one:
 * a per-CPU array places its values 8 bytes apart, so 64 bytes of it
 * would straddle two lines. Only where the program cannot migrate. */
static __always_inline struct fw_subject_row *fw_subject_row(__u32 id)
{
#ifdef FW_SUBJECT_ROWS
	__u32 key;

	if (id >= FW_MAX_SUBJECTS)
		return NULL;
	key = FW_ROW_KEY(bpf_get_smp_processor_id(), id);
	return bpf_map_lookup_elem(&fastwall_subject_rows, &key);
#else
	(void)id;
	return NULL;
#endif
}

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

/* Out of line: the path of a passed packet does not carry it. */
static __noinline void fw_emit_drop(struct __sk_buff *skb, const struct fw_pkt *pkt, __u32 subject,
				    __u32 reason)
{
	fw_event_drop(subject, reason, skb->ifindex, &pkt->src, &pkt->dst, pkt->sport, pkt->dport,
		      pkt->proto, pkt->family);
}

static __always_inline int fw_verdict(struct __sk_buff *skb, const struct fw_pkt *pkt,
				      __u32 subject, __u32 reason)
{
	struct fw_subject_stats *ss;
	struct fw_subject_row *row;
	struct fw_counter *c;

	if (reason >= FW_REASON_MAX)
		reason = FW_DROP_MALFORMED;

	c = bpf_map_lookup_elem(&fastwall_stats_v2, &reason);
	if (c) {
		c->packets++;
		c->bytes += skb->len;
	}
	/* the policy's passes on the line the answer cache has brought in */
	row = reason < FW_ROW_REASONS ? fw_subject_row(subject) : NULL;
	if (row) {
		__u32 slot = reason;

		/* bounded again where it indexes: reason lives on the stack
		 * (the lookup key above), and verifiers before 5.14 forget
		 * the bounds of a scalar reloaded from there */
		asm volatile("" : "+r"(slot));
		if (slot < FW_ROW_REASONS)
			row->packets[slot]++;
	} else {
		ss = bpf_map_lookup_elem(&fastwall_subject_stats_v2, &subject);
		if (ss && reason < FW_REASON_SLOTS)
			ss->packets[reason]++;
	}

	if (!FW_REASON_DROPS(reason))
		return TC_ACT_OK;
	fw_emit_drop(skb, pkt, subject, reason);
	return TC_ACT_SHOT;
}

#endif /* FW_BPF_EVENTS_H */
