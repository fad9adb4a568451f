/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A subject's compiled CIDR rules, in one of three forms: an LPM trie per
 * subject slot behind an array of maps (entries keyed by generation), a
 * small set scanned in one hash value, or a large set of sorted address
 * ranges found by a binary search. fw_rule_get() returns whether the
 * generation holds an entry for a destination, and copies it out. */
#ifndef FW_BPF_RULES_H
#define FW_BPF_RULES_H

#include "common.h"

struct fw_rules_inner {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * FW_MAX_RULES); /* two generations during a swap */
	/* sizes, not types: libbpf cannot size types seen only through the
	 * outer map's value array */
	__uint(key_size, sizeof(struct fw_rule_key));
	__uint(value_size, sizeof(struct fw_rule));
	__uint(map_flags, BPF_F_NO_PREALLOC);
};

/* subject id -> LPM trie {gen, prefix -> struct fw_rule}. Writer:
 * fastwalld (the slots once, at the first start; then only the tries'
 * entries). Reader: fw_from_sandbox, under the generation of the dispatch
 * value. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct fw_rules_inner);
} fastwall_rules_v2 SEC(".maps");

/* {subject, generation} -> a small rule set, scanned (fastwall/abi.h).
 * Writer: fastwalld (whole elements; the retired ones deleted after a
 * grace period). Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_SETS);
	__type(key, struct fw_set_key);
	__type(value, struct fw_rule_set);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_rule_sets SEC(".maps");

/* {subject, generation} -> the slot of fastwall_range_tables that holds
 * a large rule set as sorted address ranges, found by a binary search
 * (fastwall/abi.h). Writer: fastwalld (a table into a free slot, then its
 * element; the retired ones deleted after a grace period, which frees
 * the slot). Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_RANGE_SLOTS);
	__type(key, struct fw_set_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_rule_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_RANGE_SLOTS);
	__type(key, __u32);
	__type(value, struct fw_range_set);
	__uint(map_flags, BPF_F_MMAPABLE); /* fastwalld writes a free slot in place */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_range_tables SEC(".maps");

/* The first entry of a small rule set whose prefix holds dst: the
 * longest-prefix match, as the entries are in that order. A function of
 * its own, so that each program verifies the scan once. */
static __noinline bool fw_set_match(const struct fw_rule_set *set, const struct fw_ip *dst,
				    struct fw_rule *out)
{
	__be32 d0 = FW_IP_W(dst)[0], d1 = FW_IP_W(dst)[1], d2 = FW_IP_W(dst)[2],
	       d3 = FW_IP_W(dst)[3];
	__u32 n = set->n;

	for (__u32 i = 0; i < FW_SET_MAX; i++) {
		const struct fw_set_entry *e = &set->e[i];

		if (i >= n)
			break;
		if (((d0 ^ FW_IP_W(&e->addr)[0]) & FW_IP_W(&e->mask)[0]) |
		    ((d1 ^ FW_IP_W(&e->addr)[1]) & FW_IP_W(&e->mask)[1]) |
		    ((d2 ^ FW_IP_W(&e->addr)[2]) & FW_IP_W(&e->mask)[2]) |
		    ((d3 ^ FW_IP_W(&e->addr)[3]) & FW_IP_W(&e->mask)[3]))
			continue;
		*out = e->rule;
		return true;
	}
	return false;
}

/* One limb of a 128-bit dst - start: the borrow out (1 when the
 * difference is negative). The barrier keeps the compiler from turning
 * the subtraction back into a comparison, which BPF can only make with a
 * branch: the search below has none, so the verifier walks it once. */
static __always_inline __u64 fw_borrow(__u64 d, __u64 s, __u64 borrow)
{
	__u64 t = d - s - borrow;

	asm volatile("" : "+r"(t));
	return t >> 63;
}

/* The entry of a large rule set (ranges) that holds dst: the range with
 * the largest start not above dst, found in FW_RANGE_STEPS halvings of
 * the table (its unused ranges start at the last address, so a search
 * never needs the count). A function of its own, so that each program
 * verifies the search once. */
static __noinline bool fw_range_match(const struct fw_range_set *set, const struct fw_ip *dst,
				      struct fw_rule *out)
{
	__u64 d0 = bpf_ntohl(FW_IP_W(dst)[0]), d1 = bpf_ntohl(FW_IP_W(dst)[1]),
	      d2 = bpf_ntohl(FW_IP_W(dst)[2]), d3 = bpf_ntohl(FW_IP_W(dst)[3]);
	__u32 i = 0, k;

#pragma unroll
	for (int step = FW_RANGE_STEPS - 1; step >= 0; step--) {
		__u32 j = i | (1u << step);
		const __u32 *w;
		__u64 b;

		/* the mask bounds j for every verifier (which may not follow
		 * the xor below); the barrier keeps the compiler, which knows
		 * the bound, from dropping it */
		asm volatile("" : "+r"(j));
		j &= FW_RANGE_MAX - 1;
		w = set->start[j];

		/* dst < start[j]: borrow out of dst - start[j] */
		b = fw_borrow(d3, w[3], 0);
		b = fw_borrow(d2, w[2], b);
		b = fw_borrow(d1, w[1], b);
		b = fw_borrow(d0, w[0], b);
		i = j ^ ((__u32)b << step); /* below start[j]: keep i */
	}
	asm volatile("" : "+r"(i));
	k = set->at[i & (FW_RANGE_MAX - 1)];
	if (k >= FW_RANGE_RULES)
		return false; /* FW_RANGE_NONE: no prefix holds dst */
	*out = set->rule[k];
	return true;
}

/* The entry of subject id's rules for {gen, dst}: its range table's, its
 * small set's (in one or more chunks) or its trie's. */
static __always_inline bool fw_rule_get(__u32 id, __u32 gen, const struct fw_ip *dst,
					struct fw_rule *out)
{
	struct fw_rule_key key;
	struct fw_rule *rule;
	void *trie;

	if (gen & FW_GEN_RANGE) {
		struct fw_set_key sk = {.subject = id, .gen = gen};
		__u32 *slot = bpf_map_lookup_elem(&fastwall_rule_ranges, &sk);
		struct fw_range_set *set;

		if (!slot)
			return false;
		set = bpf_map_lookup_elem(&fastwall_range_tables, slot);
		return set && fw_range_match(set, dst, out);
	}
	if (gen & FW_GEN_SET) {
		/* chunk after chunk: the last one holds the default */
		for (__u32 c = 0; c < FW_SET_CHUNKS; c++) {
			struct fw_set_key sk = {.subject = FW_SET_SUBJECT(id, c), .gen = gen};
			struct fw_rule_set *set = bpf_map_lookup_elem(&fastwall_rule_sets, &sk);

			if (!set)
				return false;
			if (fw_set_match(set, dst, out))
				return true;
		}
		return false;
	}
	trie = bpf_map_lookup_elem(&fastwall_rules_v2, &id);
	if (!trie)
		return false;
	key.prefixlen = 32 + 128;
	key.gen = bpf_htonl(gen);
	key.addr = *dst;
	rule = bpf_map_lookup_elem(trie, &key);
	if (!rule)
		return false;
	*out = *rule;
	return true;
}

#endif /* FW_BPF_RULES_H */
