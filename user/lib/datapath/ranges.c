// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Prefixes to ranges. Sorted by start, and for one start shortest first,
 * a compiled set's prefixes are a forest: each one either holds the next
 * or ends before it. One pass with a stack of the prefixes that hold the
 * current address cuts the address space where the longest of them
 * changes; each cut starts a range whose entry is the top of the stack. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/ranges.h"

typedef unsigned __int128 u128;

#define U128_MAX (~(u128)0)

static u128 ip_get(const struct fw_ip *ip)
{
	u128 v = 0;

	for (int i = 0; i < 16; i++)
		v = v << 8 | ip->b[i];
	return v;
}

struct span {
	u128 lo, hi; /* first and last address */
	__u32 plen;
	__u32 entry; /* index in the caller's entries */
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return 0;
}

struct cut {
	struct fw_range_set *out;
	bool full;
};

/* A range from lo on, of entry at (FW_RANGE_NONE: none); merged into the
 * previous one when it has the same entry. */
static void cut_at(struct cut *c, u128 lo, __u16 at)
{
	struct fw_range_set *o = c->out;

	if (o->n && o->at[o->n - 1] == at)
		return;
	if (o->n == FW_RANGE_MAX) {
		c->full = true;
		return;
	}
	for (int w = 0; w < 4; w++)
		o->start[o->n][w] = (__u32)(lo >> (96 - 32 * w));
	o->at[o->n++] = at;
}

int fw_range_build(struct fw_range_set *out, const struct fw_compiled *entries, size_t n,
		   __u32 pgen)
{
	struct span *sp, *stack[129];
	struct cut c = {.out = out};
	u128 pos = 0;
	bool done = false; /* pos went past the last address */
	size_t depth = 0;

	if (n > FW_RANGE_RULES)
		return -E2BIG;
	sp = malloc((n ? n : 1) * sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		__u32 plen = entries[i].key.prefixlen;
		u128 mask;

		if (plen > 128) {
			free(sp);
			return -EINVAL;
		}
		mask = plen ? U128_MAX << (128 - plen) : 0;
		sp[i].lo = ip_get(&entries[i].key.addr) & mask;
		sp[i].hi = sp[i].lo | ~mask;
		sp[i].plen = plen;
		sp[i].entry = (__u32)i;
		out->rule[i] = entries[i].rule;
		if (pgen && out->rule[i].portset)
			out->rule[i].portset |= pgen;
		out->plen[i] = (__u8)plen;
	}
	out->nrules = (__u32)n;
	qsort(sp, n, sizeof(*sp), span_cmp);
	for (size_t i = 0; i < n; i++) {
		struct span *e = &sp[i];

		if (i && e->lo == sp[i - 1].lo && e->plen == sp[i - 1].plen) {
			free(sp);
			return -EINVAL; /* one prefix twice: which decides? */
		}
		/* close the prefixes that end before e */
		while (depth && stack[depth - 1]->hi < e->lo) {
			struct span *top = stack[--depth];

			if (pos <= top->hi)
				cut_at(&c, pos, (__u16)top->entry);
			pos = top->hi + 1; /* top->hi < e->lo: no wrap */
		}
		if (pos < e->lo)
			cut_at(&c, pos, depth ? (__u16)stack[depth - 1]->entry : FW_RANGE_NONE);
		pos = e->lo;
		stack[depth++] = e; /* nested: at most 129 deep */
	}
	while (depth && !done) {
		struct span *top = stack[--depth];

		if (pos <= top->hi)
			cut_at(&c, pos, (__u16)top->entry);
		if (top->hi == U128_MAX)
			done = true;
		else
			pos = top->hi + 1;
	}
	if (!done)
		cut_at(&c, pos, FW_RANGE_NONE);
	free(sp);
	if (c.full)
		return -E2BIG;
	/* the unused ranges start at the last address, with the last entry:
	 * the search lands on one only for that address, which the last
	 * range holds anyway */
	for (__u32 i = out->n; i < FW_RANGE_MAX; i++) {
		memset(out->start[i], 0xff, sizeof(out->start[i]));
		out->at[i] = out->at[out->n - 1];
	}
	return 0;
}

int fw_range_find(const struct fw_range_set *set, const struct fw_ip *addr)
{
	u128 a = ip_get(addr);
	__u32 i = 0;

	for (int step = FW_RANGE_STEPS - 1; step >= 0; step--) {
		__u32 j = i | 1u << step;
		u128 s = 0;

		for (int w = 0; w < 4; w++)
			s = s << 32 | set->start[j][w];
		if (a >= s)
			i = j;
	}
	return set->at[i] < FW_RANGE_RULES ? set->at[i] : -1;
}
