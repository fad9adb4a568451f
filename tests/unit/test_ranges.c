// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The range form of a rule set: what its search finds for an address must
 * be what a longest-prefix match over the entries finds, for every set
 * (nested and apart, IPv4-mapped and IPv6, with and without a default)
 * and at every edge of every prefix, where an off-by-one would show. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "datapath/ranges.h"

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* the longest prefix of e[0..n) that holds a: its index, or -1 */
static int lpm(const struct fw_compiled *e, size_t n, const struct fw_ip *a)
{
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (fw_prefix_contains(&e[i].key.addr, e[i].key.prefixlen, a) &&
		    (best < 0 || e[i].key.prefixlen > e[best].key.prefixlen))
			best = (int)i;
	return best;
}

/* address a plus d (d = -1 or +1), wrapping */
static struct fw_ip step(struct fw_ip a, int d)
{
	for (int i = 15; i >= 0; i--) {
		a.b[i] = (__u8)(a.b[i] + d);
		if ((d > 0 && a.b[i] != 0) || (d < 0 && a.b[i] != 0xff))
			break;
	}
	return a;
}

static struct fw_ip last_of(const struct fw_compiled *e)
{
	struct fw_ip a = e->key.addr, m;

	fw_prefix_netmask(&m, e->key.prefixlen);
	for (int i = 0; i < 16; i++)
		a.b[i] |= (__u8)~m.b[i];
	return a;
}

/* n random prefixes near a few bases (so that they nest and touch), all
 * distinct, entry i's rule numbered i */
static size_t random_set(struct fw_compiled *e, size_t n, unsigned int *seed, bool dflt)
{
	static const __u8 v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 0};
	static const __u8 v6[16] = {0x20, 0x01, 0x0d, 0xb8};
	size_t k = 0;

	if (dflt) {
		memset(&e[k], 0, sizeof(e[k]));
		e[k].rule.rule = (__u32)k;
		e[k].rule.is_default = 1;
		k++;
	}
	while (k < n) {
		struct fw_compiled c;
		bool is4 = rnd(seed) % 2, dup = false;
		__u32 plen = is4 ? 96 + 8 + rnd(seed) % 25 : 16 + rnd(seed) % 113;

		memset(&c, 0, sizeof(c));
		memcpy(c.key.addr.b, is4 ? v4 : v6, 16);
		for (int i = is4 ? 14 : 4; i < 16; i++)
			c.key.addr.b[i] ^= (__u8)(rnd(seed) % 4 == 0 ? rnd(seed) : 0);
		fw_prefix_mask(&c.key.addr, plen);
		c.key.prefixlen = plen;
		for (size_t j = 0; j < k && !dup; j++)
			dup = e[j].key.prefixlen == plen &&
			      !memcmp(&e[j].key.addr, &c.key.addr, 16);
		if (dup)
			continue;
		c.rule.rule = (__u32)k;
		c.rule.action = rnd(seed) % 2 ? FW_ACTION_ALLOW : FW_ACTION_DENY;
		e[k++] = c;
	}
	return k;
}

static void check_at(const struct fw_range_set *s, const struct fw_compiled *e, size_t n,
		     const struct fw_ip *a)
{
	int want = lpm(e, n, a), got = fw_range_find(s, a);

	cr_assert_eq(got, want, "address %02x%02x..%02x%02x%02x%02x: entry %d, want %d", a->b[0],
		     a->b[1], a->b[12], a->b[13], a->b[14], a->b[15], got, want);
	if (got >= 0)
		cr_assert_eq(s->plen[got], e[want].key.prefixlen);
}

Test(ranges, agrees_with_longest_prefix_at_every_edge)
{
	static struct fw_compiled e[FW_RANGE_RULES];
	static struct fw_range_set s;
	unsigned int seed = 7;

	for (int round = 0; round < 300; round++) {
		size_t n = 1 + rnd(&seed) % FW_RANGE_RULES;

		n = random_set(e, n, &seed, round % 3 != 0);
		int err = fw_range_build(&s, e, n, 0);

		if (err == -E2BIG)
			continue; /* more than FW_RANGE_MAX ranges: the trie's */
		cr_assert_eq(err, 0, "round %d: %d", round, err);
		cr_assert(s.n >= 1 && s.n <= FW_RANGE_MAX);
		cr_assert_eq(s.nrules, n);
		for (__u32 w = 0; w < 4; w++)
			cr_assert_eq(s.start[0][w], 0, "the first range starts at ::");
		for (__u32 i = 1; i < s.n; i++)
			cr_assert(memcmp(s.start[i - 1], s.start[i], 16) != 0);
		for (size_t i = 0; i < n; i++) {
			struct fw_ip lo = e[i].key.addr, hi = last_of(&e[i]);

			check_at(&s, e, n, &lo);
			check_at(&s, e, n, &hi);
			check_at(&s, e, n, &(struct fw_ip){0});
			lo = step(lo, -1);
			hi = step(hi, +1);
			check_at(&s, e, n, &lo);
			check_at(&s, e, n, &hi);
		}
		for (int k = 0; k < 200; k++) {
			struct fw_ip a = e[rnd(&seed) % n].key.addr;

			a.b[15] ^= (__u8)rnd(&seed);
			a.b[14] ^= (__u8)(rnd(&seed) % 2 ? rnd(&seed) : 0);
			check_at(&s, e, n, &a);
		}
		struct fw_ip top;

		memset(&top, 0xff, sizeof(top));
		check_at(&s, e, n, &top);
	}
}

Test(ranges, nested_worst_case_and_limits)
{
	static struct fw_compiled e[FW_RANGE_RULES + 1];
	static struct fw_range_set s;

	/* 129 nested prefixes of one address, one of every length */
	memset(e, 0, sizeof(e));
	for (__u32 i = 0; i <= 128; i++) {
		memset(&e[i].key.addr, 0, 16);
		e[i].key.addr.b[0] = 0x20;
		e[i].key.prefixlen = i;
		if (i < 3)
			e[i].key.addr.b[0] = 0; /* /0../2 of 0x20 are 0 */
		e[i].rule.rule = i;
	}
	cr_assert_eq(fw_range_build(&s, e, 129, 0), 0);
	cr_assert(s.n >= 129 && s.n <= 2 * 129 - 1, "%u ranges", s.n);
	struct fw_ip a = e[128].key.addr;

	cr_assert_eq(fw_range_find(&s, &a), 128);
	a.b[15] = 1;
	cr_assert_eq(fw_range_find(&s, &a), 127);
	a.b[0] = 0xff;
	cr_assert_eq(fw_range_find(&s, &a), 0);

	/* too many entries, one prefix twice, a prefix past 128 bits */
	cr_assert_eq(fw_range_build(&s, e, FW_RANGE_RULES + 1, 0), -E2BIG);
	e[1] = e[2];
	cr_assert_eq(fw_range_build(&s, e, 129, 0), -EINVAL);
	e[1].key.prefixlen = 1;
	e[5].key.prefixlen = 129;
	cr_assert_eq(fw_range_build(&s, e, 129, 0), -EINVAL);
}

Test(ranges, disjoint_prefixes_past_the_table_are_refused)
{
	static struct fw_compiled e[FW_RANGE_RULES];
	static struct fw_range_set s;

	/* 256 /128s apart, no default: a gap before each and after the last
	 * is 513 ranges */
	memset(e, 0, sizeof(e));
	for (__u32 i = 0; i < FW_RANGE_RULES; i++) {
		e[i].key.addr.b[0] = 0x20;
		e[i].key.addr.b[14] = (__u8)(i >> 7);
		e[i].key.addr.b[15] = (__u8)(2 * i + 1);
		e[i].key.prefixlen = 128;
	}
	cr_assert_eq(fw_range_build(&s, e, FW_RANGE_RULES, 0), -E2BIG);
	/* with a default instead of the first, 2 * 255 + 1 ranges fit */
	memset(&e[0], 0, sizeof(e[0]));
	cr_assert_eq(fw_range_build(&s, e, FW_RANGE_RULES, 0), 0);
	cr_assert_eq(s.n, 2 * 255 + 1);
}

Test(ranges, port_set_generation)
{
	struct fw_compiled e[2];
	static struct fw_range_set s;

	memset(e, 0, sizeof(e));
	e[1].key.prefixlen = 128;
	e[1].rule.portset = 3;
	cr_assert_eq(fw_range_build(&s, e, 2, 0x80000000u), 0);
	cr_assert_eq(s.rule[0].portset, 0);
	cr_assert_eq(s.rule[1].portset, 0x80000003u);
}
