/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-subject egress bandwidth: the maps (fastwall/bandwidth.h) and the
 * one decision, fw_bw_decide(), which either gives the packet a departure
 * time (edt, for the fq qdisc) or polices it, and returns 0 or the drop
 * reason. The TC programs carry the maps so that they are created and
 * pinned with the rest; only bpf/bandwidth.bpf.c reads them. */
#ifndef FW_BPF_BANDWIDTH_H
#define FW_BPF_BANDWIDTH_H

#include "common.h"
#include "fastwall/bandwidth.h"

/* subject id -> struct fw_bandwidth (fastwall/bandwidth.h). Preallocated:
 * the lookup on every packet of the uplink stays a plain hash probe. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_bandwidth);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_bandwidth SEC(".maps");

/* enum fw_bw_stat -> packets and bytes, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FW_BW_STAT_MAX);
	__type(key, __u32);
	__type(value, struct fw_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_bandwidth_stats SEC(".maps");

static __always_inline void fw_bw_stat(__u32 stat, __u32 len)
{
	struct fw_counter *c = bpf_map_lookup_elem(&fastwall_bandwidth_stats, &stat);

	if (c) {
		c->packets++;
		c->bytes += len;
	}
}

/* The packet of len bytes leaves at the subject's rate. edt (Cilium's
 * bandwidth manager): its departure is the later of now and the last
 * departure plus the time len takes at the rate, written to skb->tstamp
 * for fq; past horizon_ns from now it drops. police: a GCRA token bucket
 * over the same clock, t_last the theoretical arrival time; a packet
 * that would put it more than the burst's time ahead of now drops.
 * The clock reads come before the lock: no helper may run under it. */
static __always_inline __u32 fw_bw_decide(struct __sk_buff *skb, struct fw_bandwidth *bw, bool edt,
					  __u64 horizon_ns)
{
	__u64 now = bpf_ktime_get_ns(), len = skb->len, rate, delay, t, next, burst_ns;
	__u32 reason = 0;

	rate = bw->rate;
	if (rate < FW_BW_RATE_MIN)
		rate = FW_BW_RATE_MIN; /* a torn or hand-written value: never a division by 0 */
	delay = len * FW_NSEC_PER_SEC / rate;
	burst_ns = bw->burst * FW_NSEC_PER_SEC / rate;
	if (edt) {
		t = skb->tstamp > now ? skb->tstamp : now;
		bpf_spin_lock(&bw->lock);
		next = bw->t_last + delay;
		if (next <= t) {
			bw->t_last = t;
			next = 0;
		} else if (next - now >= horizon_ns) {
			reason = FW_DROP_BW_HORIZON;
		} else {
			bw->t_last = next;
		}
		bpf_spin_unlock(&bw->lock);
		if (!reason && next) {
			skb->tstamp = next;
			fw_bw_stat(FW_BW_STAT_PACED, len);
		}
	} else {
		bpf_spin_lock(&bw->lock);
		t = bw->t_last > now ? bw->t_last : now;
		if (t + delay - now > burst_ns)
			reason = FW_DROP_BW_POLICE;
		else
			bw->t_last = t + delay;
		bpf_spin_unlock(&bw->lock);
	}
	if (!reason)
		fw_bw_stat(FW_BW_STAT_SENT, len);
	return reason;
}

#endif /* FW_BPF_BANDWIDTH_H */
