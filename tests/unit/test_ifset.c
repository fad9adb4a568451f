// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The attached-interface set: any ifindex the kernel can hand out is held
 * (veth churn passes 65,535), deleted ones are forgotten, order and
 * duplicates do not matter. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>

#include "common/ifset.h"

Test(ifset, holds_ifindexes_past_16_bits)
{
	struct fw_ifset s = {0};

	cr_assert_eq(fw_ifset_add(&s, 70000), 0);
	cr_assert_eq(fw_ifset_add(&s, 65536), 0);
	cr_assert_eq(fw_ifset_add(&s, INT_MAX), 0);
	cr_assert(fw_ifset_has(&s, 70000));
	cr_assert(fw_ifset_has(&s, 65536));
	cr_assert(fw_ifset_has(&s, INT_MAX));
	/* the old bitmap's aliasing: 70000 is not 70000 % 65536 */
	cr_assert_not(fw_ifset_has(&s, 70000 - 65536));
	cr_assert_not(fw_ifset_has(&s, 65535));
	fw_ifset_free(&s);
}

Test(ifset, deleted_ones_are_forgotten)
{
	struct fw_ifset s = {0};

	for (int i = 1; i <= 1000; i++)
		cr_assert_eq(fw_ifset_add(&s, i * 97), 0);
	cr_assert_eq(s.n, 1000);
	for (int i = 1; i <= 1000; i += 2)
		fw_ifset_del(&s, i * 97);
	cr_assert_eq(s.n, 500);
	for (int i = 1; i <= 1000; i++)
		cr_assert_eq(fw_ifset_has(&s, i * 97), i % 2 == 0, "ifindex %d", i * 97);
	fw_ifset_del(&s, 12345); /* absent: nothing */
	cr_assert_eq(s.n, 500);
	fw_ifset_clear(&s);
	cr_assert_eq(s.n, 0);
	cr_assert_not(fw_ifset_has(&s, 194));
	fw_ifset_free(&s);
}

Test(ifset, duplicates_and_order)
{
	struct fw_ifset s = {0};
	int in[] = {300000, 5, 70000, 5, 1, 300000, 2};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		cr_assert_eq(fw_ifset_add(&s, in[i]), 0);
	cr_assert_eq(s.n, 5);
	for (size_t i = 1; i < s.n; i++)
		cr_assert_lt(s.v[i - 1], s.v[i]);
	fw_ifset_free(&s);
}

Test(ifset, rejects_non_positive)
{
	struct fw_ifset s = {0};

	cr_assert_eq(fw_ifset_add(&s, 0), -EINVAL);
	cr_assert_eq(fw_ifset_add(&s, -3), -EINVAL);
	cr_assert_eq(s.n, 0);
	cr_assert_not(fw_ifset_has(&s, 0));
	fw_ifset_free(&s);
}
