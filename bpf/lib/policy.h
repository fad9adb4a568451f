/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-subject policy: compiled CIDR rules (one LPM trie per subject slot
 * behind an array of maps, entries keyed by generation, or a small set in
 * one hash value), DNS-learned leases, TCP connections for
 * lease refresh, and the global DNS-over-HTTPS blocklist. */
#ifndef FW_BPF_POLICY_H
#define FW_BPF_POLICY_H

#include "common.h"
#include "parse.h"
#include "events.h"

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
 * entries). Reader: TC ingress, under the generation of the dispatch
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
 * grace period). Reader: TC ingress, the cgroup programs. */
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
 * the slot). Reader: TC ingress, the cgroup programs. */
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

/* key 0 -> the epoch the answers cached in fastwall_subject_rows are
 * valid in (abi.h). Writer: fastwalld. Reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_rules_epoch SEC(".maps");

/* {subject, address} -> struct fw_lease. Writer: fastwalld. Reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED);
	__type(key, struct fw_learned_key);
	__type(value, struct fw_lease);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned SEC(".maps");

/* {subject, sandbox port, port, learned address} -> struct fw_conn: TCP
 * connections to learned addresses, for the lease refresh. Writer: TC
 * ingress and egress, fastwalld. Reader: fastwalld. A plain hash, not an
 * LRU: a full LRU evicts whoever is oldest, so one sandbox's SYN flood
 * could end a sibling's records and with them its leases. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_CONNS);
	__type(key, struct fw_conn_key);
	__type(value, struct fw_conn);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_conns SEC(".maps");

/* subject id -> fastwall_conns records it holds. Writer: TC ingress (adds
 * before an insert, undoes it when the insert fails), fastwalld (takes
 * off what it deletes, rewrites what its scan found). Mmapable, so
 * fastwalld's writes are atomic against the data plane's. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, __u64); /* an array's slots are 8 bytes apart anyway */
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_conn_count SEC(".maps");

/* {subject, port set, port} -> enum fw_action. Writer: fastwalld.
 * Reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_PORT_RULES);
	__type(key, struct fw_port_rule_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_ports SEC(".maps");

/* {subject, learned port set, port} -> 1: the ports a learned address
 * whose lease names the set may be reached on. Writer: fastwalld.
 * Reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED_PORTS);
	__type(key, struct fw_port_rule_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned_ports SEC(".maps");

/* name id -> name, {subject, address} -> name ids: which names taught a
 * learned address, for revocation after a restart. Writer and reader:
 * fastwalld; no program reads them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_NAMES);
	__type(key, __u32);
	__type(value, struct fw_lease_name);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED);
	__type(key, struct fw_learned_key);
	__type(value, struct fw_lease_names);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned_names SEC(".maps");

/* prefix -> 1: TCP 443 destinations dropped in DoH list mode. Writer:
 * fastwalld. Reader: TC ingress. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FW_MAX_DOH);
	__type(key, struct fw_lpm_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_doh SEC(".maps");

static __always_inline bool fw_doh_blocked(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	struct fw_lpm_key key;

	if (pkt->proto != FW_IPPROTO_TCP || pkt->dport != bpf_htons(443))
		return false;
	if (cfg->flags & FW_CF_DOH_STRICT)
		return true;
	if (!(cfg->flags & FW_CF_DOH_LIST))
		return false;
	key.prefixlen = 128;
	key.addr = pkt->dst;
	return bpf_map_lookup_elem(&fastwall_doh, &key) != NULL;
}

/* A new record for subject id, within its quota: false when the subject
 * holds conn_quota records already or the map is full. The count is
 * checked, then added to (a fetching atomic needs 5.12), so concurrent
 * SYNs on several CPUs can pass the quota by at most one each. */
static __always_inline bool fw_conn_insert(__u32 id, const struct fw_conn_key *k,
					   const struct fw_conn *v)
{
	struct fw_config *cfg = fw_config();
	__u64 *count = bpf_map_lookup_elem(&fastwall_conn_count, &id);

	if (!cfg || !count)
		return false;
	if (cfg->conn_quota && *count >= cfg->conn_quota)
		return false;
	__sync_fetch_and_add(count, 1);
	if (bpf_map_update_elem(&fastwall_conns, k, v, BPF_NOEXIST)) {
		__sync_fetch_and_add(count, -1);
		return false;
	}
	return true;
}

/* TCP to a learned address: a record opens on the connection's SYN (and
 * on nothing else: a packet of a connection not tracked, a bare ACK or
 * FIN, makes none, so records cost a flooder its own quota only), closes
 * on FIN or RST and reopens on a new SYN (the same ports reused);
 * last_seen is written at most once a second, so a busy flow costs one
 * lookup per packet. The packet passes either way. */
static __always_inline void fw_note_conn(__u32 id, const struct fw_pkt *pkt, __u64 now)
{
	struct fw_conn_key k = {
		.subject = id,
		.sport = pkt->sport,
		.dport = pkt->dport,
		.dst = pkt->dst,
	};
	bool syn = (pkt->tcp_flags & (FW_TCP_SYN | FW_TCP_ACK)) == FW_TCP_SYN;
	bool closing = pkt->tcp_flags & (FW_TCP_FIN | FW_TCP_RST);
	struct fw_conn *c, fresh = {};

	if (!pkt->has_ports)
		return;
	c = bpf_map_lookup_elem(&fastwall_conns, &k);
	if (!c) {
		if (!syn || closing)
			return;
		fresh.last_seen_ns = now;
		fw_conn_insert(id, &k, &fresh);
		return;
	}
	if (c->closed_ns) {
		if (syn) {
			c->closed_ns = 0;
			c->renewed = 0;
			c->last_seen_ns = now;
		}
		return;
	}
	if (closing)
		c->closed_ns = now;
	if (now - c->last_seen_ns > FW_NSEC_PER_SEC)
		c->last_seen_ns = now;
}

/* A RST from a learned destination ends the connection as a RST from the
 * sandbox would (TC egress: the packet is going to the sandbox). */
static __always_inline void fw_note_conn_reset(__u32 id, const struct fw_pkt *pkt)
{
	struct fw_conn_key k = {
		.subject = id,
		.sport = pkt->dport,
		.dport = pkt->sport,
		.dst = pkt->src,
	};
	struct fw_conn *c;

	if (pkt->proto != FW_IPPROTO_TCP || !(pkt->tcp_flags & FW_TCP_RST))
		return;
	c = bpf_map_lookup_elem(&fastwall_conns, &k);
	if (c && !c->closed_ns)
		c->closed_ns = bpf_ktime_get_ns();
}

#define fw_barrier() asm volatile("" ::: "memory")

/* TC ingress uses the answer cache (fw_answer_hit) only where loads stay
 * in order (x86): elsewhere the rules could be read before the epoch, and
 * an answer older than an edit in place could be tagged with the epoch
 * that follows it; those builds look the rules up every time. */
#ifdef __TARGET_ARCH_x86
#define FW_RULE_CACHE 1
#else
#define FW_RULE_CACHE 0
#endif

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

/* The sequence number of a cache entry written by one CPU (the answer
 * rows, the source slots): odd while it is written. A reader takes
 * fw_seq_read's value, reads the entry, and keeps what it read only if
 * the number was even and fw_seq_same still holds; a writer that finds
 * it odd (it interrupted another) leaves the entry alone. */
static __always_inline __u32 fw_seq_read(const __u32 *seq)
{
	__u32 v = *(volatile const __u32 *)seq;

	fw_barrier();
	return v;
}

static __always_inline bool fw_seq_same(const __u32 *seq, __u32 v)
{
	fw_barrier();
	return *(volatile const __u32 *)seq == v;
}

static __always_inline bool fw_seq_write_begin(__u32 *seq, __u32 *v)
{
	*v = *(volatile __u32 *)seq;
	if (*v & 1)
		return false;
	*(volatile __u32 *)seq = *v + 1;
	fw_barrier();
	return true;
}

static __always_inline void fw_seq_write_end(__u32 *seq, __u32 v)
{
	fw_barrier();
	*(volatile __u32 *)seq = v + 2;
}

/* The answer cache (TC ingress only, FW_RULE_CACHE): per CPU and subject
 * the last answer of its rules, in fastwall_subject_rows, used only for the
 * same destination, generation and epoch. The epoch is read before
 * anything an answer depends on (the dispatch value, the rules), so an
 * answer is never tagged with an epoch newer than what it saw (x86 keeps
 * loads in order; fastwalld raises the epoch after an edit in place).
 * TC ingress runs with bottom halves off, so on one CPU only a test run in
 * process context can be interrupted by it: seq is odd while a row is
 * written, a reader does not use a row it saw odd or whose seq moved, and
 * a writer that finds it odd (it interrupted another) leaves the row
 * alone. Hooks that run preemptible (cgroup) look the rules up every
 * time. */
struct fw_answer {
	struct fw_subject_row *row; /* found by fw_answer_hit */
	struct fw_src_slot *slot;   /* found by fw_src_hit */
	__u32 epoch;
	bool on; /* the epoch was read: this packet may use and fill the cache */
};

/* Before the dispatch lookup. */
static __always_inline void fw_answer_begin(struct fw_answer *a)
{
	__u64 *ep = bpf_map_lookup_elem(&fastwall_rules_epoch, &(__u32){0});

	a->row = NULL;
	a->slot = NULL;
	a->epoch = 0;
	a->on = false;
	if (!FW_RULE_CACHE || !ep)
		return;
	a->epoch = (__u32) * (volatile __u64 *)ep;
	fw_barrier();
	a->on = true;
}

/* This CPU's answer for {id, gen, dst}, when it has one. */
static __always_inline bool fw_answer_hit(struct fw_answer *a, __u32 id, __u32 gen,
					  const struct fw_ip *dst, struct fw_rule *out)
{
	struct fw_subject_row *c;
	__u32 seq;

	if (!a->on)
		return false;
	c = fw_subject_row(id);
	a->row = c;
	if (!c)
		return false;
	seq = fw_seq_read(&c->seq);
	if (!(seq & 1) && c->gen == gen && c->epoch == a->epoch && fw_ip_eq(&c->dst, dst)) {
		*out = c->rule;
		if (fw_seq_same(&c->seq, seq))
			return true;
	}
	return false;
}

/* Records rule as the answer for {gen, dst} in the row fw_answer_hit
 * found. */
static __always_inline void fw_answer_put(const struct fw_answer *a, __u32 gen,
					  const struct fw_ip *dst, const struct fw_rule *rule)
{
	struct fw_subject_row *c = a->row;
	__u32 seq;

	if (!c || !fw_seq_write_begin(&c->seq, &seq))
		return;
	c->gen = gen;
	c->epoch = a->epoch;
	c->dst = *dst;
	c->rule = *rule;
	fw_seq_write_end(&c->seq, seq);
}

/* What a source's slot answers: its subject, the subject's binding
 * and the rule for the packet's destination. */
struct fw_src_answer {
	__u32 id;
	__u32 ifindex;
	struct fw_rule rule;
};

/* This CPU's slot of an IPv4 source (fastwall_src_slots), when its
 * answer is for this packet's destination under the epoch read by
 * fw_answer_begin: then the packet needs neither the dispatch value nor
 * the subject's row. DNS and DNS over TLS are decided on the full path
 * (the proxy's redirect, the DoT drop), whatever the slot says; so are
 * IPv6 sources. On a miss the slot is left in a->slot for fw_src_put. */
static __always_inline bool fw_src_hit(struct fw_answer *a, const struct fw_pkt *pkt,
				       struct fw_src_answer *out)
{
#ifdef FW_SUBJECT_ROWS
	struct fw_src_slot *c;
	__be32 src = FW_IP_W(&pkt->src)[3];
	__u32 key, seq, h = bpf_ntohl(src);

	if (!a->on || pkt->family != FW_FAM_V4)
		return false;
	if (pkt->has_ports && (pkt->dport == bpf_htons(53) || pkt->dport == bpf_htons(853)))
		return false;
	key = FW_SRC_KEY(bpf_get_smp_processor_id(), FW_SRC_HASH(h));
	c = bpf_map_lookup_elem(&fastwall_src_slots, &key);
	a->slot = c;
	if (!c)
		return false;
	seq = fw_seq_read(&c->seq);
	if (!(seq & 1) && c->epoch == a->epoch && c->src == src && c->id &&
	    c->dst == FW_IP_W(&pkt->dst)[3]) {
		out->id = c->id;
		out->ifindex = c->ifindex;
		out->rule = c->rule;
		if (fw_seq_same(&c->seq, seq))
			return true;
	}
#else
	(void)a;
	(void)pkt;
	(void)out;
#endif
	return false;
}

/* Records the answer of subject s for this packet (IPv4, a destination
 * that reached the subject's rules) in the slot fw_src_hit found. */
static __always_inline void fw_src_put(const struct fw_answer *a, const struct fw_subject *s,
				       const struct fw_pkt *pkt, const struct fw_rule *rule)
{
	struct fw_src_slot *c = a->slot;
	__u32 seq;

	if (!c || !fw_seq_write_begin(&c->seq, &seq))
		return;
	c->epoch = a->epoch;
	c->src = FW_IP_W(&pkt->src)[3];
	c->dst = FW_IP_W(&pkt->dst)[3];
	c->id = s->id;
	c->ifindex = s->ifindex;
	c->rule = *rule;
	fw_seq_write_end(&c->seq, seq);
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

/* The verdict of rule, subject id's entry for the packet's destination:
 * its CIDR action (or the port exception's), else the default, else a
 * learned lease. */
static __always_inline __u32 fw_policy_rule_of(__u32 id, const struct fw_pkt *pkt,
					       const struct fw_rule *rule)
{
	struct fw_learned_key lkey = {};
	struct fw_lease *lease;
	__u64 now;

	if (rule->portset && pkt->has_ports &&
	    (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP)) {
		struct fw_port_rule_key pk = {
			.subject = id,
			.portset = rule->portset,
			.port = bpf_ntohs(pkt->dport),
		};
		__u8 *v = bpf_map_lookup_elem(&fastwall_ports, &pk);

		if (v)
			return *v == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
	}
	if (!rule->is_default && rule->action != FW_ACTION_NONE)
		return rule->action == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
	if (rule->dflt == FW_ACTION_ALLOW)
		return FW_PASS_DEFAULT;

	lkey.subject = id;
	lkey.addr = pkt->dst;
	lease = bpf_map_lookup_elem(&fastwall_learned, &lkey);
	if (!lease)
		return FW_DROP_DEFAULT_DENY;
	now = bpf_ktime_get_ns();
	if (lease->expires_ns <= now)
		return FW_DROP_LEASE_EXPIRED;
	if (lease->portset) {
		/* only the ports of the rules that taught it: no ports (ICMP,
		 * a first fragment without its header) is none of them */
		struct fw_port_rule_key pk = {
			.subject = id,
			.portset = lease->portset,
			.port = bpf_ntohs(pkt->dport),
		};

		if (!pkt->has_ports ||
		    (pkt->proto != FW_IPPROTO_TCP && pkt->proto != FW_IPPROTO_UDP) ||
		    !bpf_map_lookup_elem(&fastwall_learned_ports, &pk))
			return FW_DROP_LEARNED_PORT;
	}
	if (pkt->proto == FW_IPPROTO_TCP)
		fw_note_conn(id, pkt, now);
	return FW_PASS_LEARNED;
}

static __always_inline __u32 fw_policy_rule(const struct fw_subject *s, const struct fw_pkt *pkt,
					    const struct fw_rule *rule)
{
	return fw_policy_rule_of(s->id, pkt, rule);
}

/* Deny CIDRs, allow CIDRs, learned leases, default, in that order. */
static __always_inline __u32 fw_policy(const struct fw_subject *s, const struct fw_pkt *pkt)
{
	struct fw_rule r;

	if (!fw_rule_get(s->id, s->rules_gen, &pkt->dst, &r))
		return FW_DROP_NO_POLICY;
	return fw_policy_rule(s, pkt, &r);
}

#endif /* FW_BPF_POLICY_H */
