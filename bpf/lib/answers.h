/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The answer cache of fw_from_sandbox: per CPU the last answer of a
 * subject's rules (in its row, rows.h) and per IPv4 source the last
 * answer with what led to it (fastwall_src_slots), both valid in one
 * epoch of fastwall_rules_epoch, which fastwalld raises after an edit in
 * place. Hits return true and copy the answer out; a miss leaves where to
 * put the new one. The sequence numbers (fw_seq_*) guard every cache
 * entry one CPU writes, the cgroup programs' socket records too. */
#ifndef FW_BPF_ANSWERS_H
#define FW_BPF_ANSWERS_H

#include "common.h"
#include "parse.h"
#include "rows.h"

/* key 0 -> the epoch the answers cached in fastwall_subject_rows are
 * valid in (abi.h). Writer: fastwalld. Reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_rules_epoch SEC(".maps");

#ifdef FW_SUBJECT_ROWS
/* {CPU, source slot} -> struct fw_src_slot (fastwall/abi.h): this CPU's
 * last answer per IPv4 source. Here one CPU's slots; fastwalld sizes it
 * to every possible CPU before the load. A cache of these programs'
 * own: not pinned, empty at every load. Writer and reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_SRC_SLOTS);
	__type(key, __u32);
	__type(value, struct fw_src_slot);
	__uint(map_flags, BPF_F_MMAPABLE);
} fastwall_src_slots SEC(".maps");
#endif

#define fw_barrier() asm volatile("" ::: "memory")

/* fw_from_sandbox uses the answer cache (fw_answer_hit) only where loads stay
 * in order (x86): elsewhere the rules could be read before the epoch, and
 * an answer older than an edit in place could be tagged with the epoch
 * that follows it; those builds look the rules up every time. */
#ifdef __TARGET_ARCH_x86
#define FW_RULE_CACHE 1
#else
#define FW_RULE_CACHE 0
#endif

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

/* The answer cache (fw_from_sandbox only, FW_RULE_CACHE): per CPU and subject
 * the last answer of its rules, in fastwall_subject_rows, used only for the
 * same destination, generation and epoch. The epoch is read before
 * anything an answer depends on (the dispatch value, the rules), so an
 * answer is never tagged with an epoch newer than what it saw (x86 keeps
 * loads in order; fastwalld raises the epoch after an edit in place).
 * fw_from_sandbox runs with bottom halves off, so on one CPU only a test run in
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

#endif /* FW_BPF_ANSWERS_H */
