// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The address table the registry keeps of fastwall_dispatch's owners:
 * against a plain array, through random sets and deletes in a table small
 * enough that probe chains collide and wrap around its end. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/hash.h"
#include "common/iptab.h"

/* Address n of a scattered set (consecutive addresses would take
 * consecutive slots: FNV-1a's low bits of a last byte that counts up are
 * a permutation, and then nothing collides). */
static struct fw_ip addr_n(unsigned int n)
{
	unsigned int x = n * 2654435761u;
	struct fw_ip a;

	memset(&a, 0, sizeof(a));
	a.b[10] = 0xff;
	a.b[11] = 0xff;
	a.b[12] = 10;
	a.b[13] = (unsigned char)(x >> 24);
	a.b[14] = (unsigned char)(x >> 16);
	a.b[15] = (unsigned char)(x >> 8);
	return a;
}

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

Test(iptab, empty_and_limits)
{
	struct fw_iptab t;
	struct fw_ip a = addr_n(1), b = addr_n(2), c = addr_n(3);

	cr_assert_eq(fw_iptab_init(&t, 2), 0);
	cr_assert_eq(fw_iptab_get(&t, &a), 0);
	fw_iptab_del(&t, &a); /* not held: nothing */
	cr_assert_eq(fw_iptab_set(&t, &a, 0), -EINVAL, "0 is no value");
	cr_assert_eq(fw_iptab_set(&t, &a, 7), 0);
	cr_assert_eq(fw_iptab_set(&t, &b, 8), 0);
	cr_assert_eq(fw_iptab_set(&t, &c, 9), -ENOSPC, "past max");
	cr_assert_eq(fw_iptab_get(&t, &c), 0, "a refused set leaves nothing");
	cr_assert_eq(fw_iptab_set(&t, &a, 10), 0, "a held address may change at max");
	cr_assert_eq(fw_iptab_get(&t, &a), 10);
	fw_iptab_del(&t, &b);
	cr_assert_eq(fw_iptab_set(&t, &c, 9), 0, "room again after a delete");
	cr_assert_eq(t.n, 2);
	fw_iptab_free(&t);
	cr_assert_eq(fw_iptab_get(&t, &a), 0, "a freed table holds nothing");
	cr_assert_eq(fw_iptab_set(&t, &a, 1), -EINVAL);
}

/* 200,000 random operations over 96 addresses in a table of 64 held at
 * most (128 slots): every get agrees with the reference after each step,
 * so no delete lost an address that probed past the hole it left. The
 * addresses collide (checked), and chains wrap past the last slot. */
Test(iptab, random_against_reference)
{
	enum { ADDRS = 96, MAX = 64, OPS = 200000 };
	__u32 ref[ADDRS] = {0};
	struct fw_iptab t;
	unsigned int seed = 12345, held = 0;

	cr_assert_eq(fw_iptab_init(&t, MAX), 0);
	cr_assert_eq(t.cap, 128);
	{
		unsigned int homes[128] = {0}, collisions = 0;

		for (unsigned int k = 0; k < ADDRS; k++) {
			struct fw_ip a = addr_n(k);

			collisions += homes[fw_fnv(FW_FNV_BASIS, &a, sizeof(a)) & 127]++ != 0;
		}
		cr_assert_gt(collisions, 20, "the test needs colliding homes (%u)", collisions);
		cr_assert_gt(homes[127] + homes[126], 0, "and chains that wrap");
	}
	for (unsigned int op = 0; op < OPS; op++) {
		unsigned int k = rnd(&seed) % ADDRS;
		struct fw_ip a = addr_n(k);

		if (rnd(&seed) % 2) {
			__u32 v = 1 + rnd(&seed) % 1000;
			int err = fw_iptab_set(&t, &a, v);

			if (!ref[k] && held == MAX) {
				cr_assert_eq(err, -ENOSPC, "op %u: set past max", op);
			} else {
				cr_assert_eq(err, 0, "op %u", op);
				held += !ref[k];
				ref[k] = v;
			}
		} else {
			fw_iptab_del(&t, &a);
			held -= !!ref[k];
			ref[k] = 0;
		}
		cr_assert_eq(t.n, held, "op %u: count", op);
		for (unsigned int j = 0; j < ADDRS; j++) {
			struct fw_ip b = addr_n(j);

			cr_assert_eq(fw_iptab_get(&t, &b), ref[j], "op %u: address %u", op, j);
		}
	}
	fw_iptab_free(&t);
}
