// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Baselines for the benchmarks (scripts/bench.sh), never deployed:
 *   bench_trivial: parses Ethernet + IPv4 with direct packet access and does
 *                  one hash lookup keyed by the source address, then passes
 *                  the packet (the "trivial TC program" of lessons.md);
 *   bench_empty:   returns TC_ACT_OK and nothing else;
 *   bench_drop:    drops everything (the sink of the packet-rate test). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TC_ACT_OK   0
#define TC_ACT_SHOT 2
#define ETH_P_IP    0x0800

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* IPv4 source address -> packets. Filled by the benchmark: a few sources
 * around the one that sends, or every source of the spread traffic (up to
 * 4,096 of them, so one lookup by a cycling source meets cold lines). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __be32);
	__type(value, __u64);
} bench_srcs SEC(".maps");

SEC("tc")
int bench_trivial(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph;
	__be32 saddr;

	if ((void *)(eth + 1) > data_end)
		return TC_ACT_OK;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return TC_ACT_OK;
	saddr = iph->saddr;
	if (bpf_map_lookup_elem(&bench_srcs, &saddr))
		return TC_ACT_OK;
	return TC_ACT_OK;
}

/* the baselines look at nothing: the cost measured is the program's call */
SEC("tc")
int bench_empty(struct __sk_buff *skb __attribute__((unused)))
{
	return TC_ACT_OK;
}

SEC("tc")
int bench_drop(struct __sk_buff *skb __attribute__((unused)))
{
	return TC_ACT_SHOT;
}
