// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The reason table is ABI: every reason keeps its number (the counter
 * slot in the pinned maps, the reason in a deny event), and the drop mask
 * the programs test says what the table says. */
#include <criterion/criterion.h>
#include <string.h>

#include "datapath/datapath.h"
#include "datapath/reasons.h"

/* Written out by hand on purpose: a renumbering or a rename fails here. */
static const struct {
	__u32 num;
	const char *name;
	bool drops;
} pinned[] = {
	{0, "allow-cidr", false},	 {1, "learned", false},
	{2, "default-allow", false},	 {3, "dns-local", false},
	{4, "dns-proxy", false},	 {5, "pod-local-allowed", false},
	{6, "pod-reply", false},	 {7, "neighbour", false},
	{8, "fragment", false},		 {9, "malformed", true},
	{10, "ethertype", true},	 {11, "unknown-fragment", true},
	{12, "unknown-source", true},	 {13, "denying", true},
	{14, "spoofed-source", true},	 {15, "sibling", true},
	{16, "pod-local", true},	 {17, "dns-over-tls", true},
	{18, "dns-over-https", true},	 {19, "deny-cidr", true},
	{20, "lease-expired", true},	 {21, "default-deny", true},
	{22, "no-policy", true},	 {23, "rogue-nd", true},
	{24, "spoofed-mac", true},	 {25, "nd-destination", true},
	{26, "fragment-header", true},	 {27, "v4-mapped", true},
	{28, "learned-port", true},	 {29, "socket-type", true},
	{30, "alias-source", true},	 {31, "dns-v6-sendto", true},
	{32, "guard-trusted", false},	 {33, "guard-untrusted", true},
	{34, "guard-fragment", true},	 {35, "guard-malformed", true},
	{36, "source-route", true},	 {37, "socket-option", true},
	{38, "l7-proxy", false},	 {39, "l7-proxy-down", true},
	{40, "l7-full", true},		 {41, "l7-quic", true},
	{42, "l7-untracked", true},	 {43, "l7-port-reuse", true},
	{44, "bandwidth-horizon", true}, {45, "bandwidth-police", true},
};

Test(reasons, numbers_and_names_are_fixed)
{
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		cr_assert_str_eq(fw_reason_name(pinned[i].num), pinned[i].name, "reason %u",
				 pinned[i].num);
		cr_assert_eq(fw_reason_drops(pinned[i].num), pinned[i].drops, "%s", pinned[i].name);
		cr_assert_not_null(fw_reason_meaning(pinned[i].num), "%s", pinned[i].name);
	}
	/* a reason added to the table must be added here with its number */
	cr_assert_eq(FW_REASON_MAX, sizeof(pinned) / sizeof(pinned[0]));
	cr_assert_eq(FW_REASON_SLOTS, 64);
}

Test(reasons, identifiers_keep_their_numbers)
{
	cr_assert_eq(FW_PASS_ALLOW_CIDR, 0);
	cr_assert_eq(FW_PASS_DNS_PROXY, 4);
	cr_assert_eq(FW_PASS_FRAGMENT, 8);
	cr_assert_eq(FW_DROP_MALFORMED, 9);
	cr_assert_eq(FW_DROP_NO_POLICY, 22);
	cr_assert_eq(FW_DROP_LEARNED_PORT, 28);
	cr_assert_eq(FW_PASS_GUARD_TRUSTED, 32);
	cr_assert_eq(FW_DROP_GUARD_MALFORMED, 35);
	cr_assert_eq(FW_DROP_SOURCE_ROUTE, 36);
	cr_assert_eq(FW_DROP_SOCKOPT, 37);
}

Test(reasons, drop_mask_is_the_table)
{
	for (__u32 r = 0; r < FW_REASON_SLOTS; r++) {
		bool bit = (FW_REASON_DROP_MASK >> r) & 1;

		cr_assert_eq(bit, fw_reason_drops(r), "slot %u", r);
		cr_assert_eq(FW_REASON_DROPS(r), fw_reason_drops(r), "slot %u", r);
		if (r >= FW_REASON_MAX) {
			/* a number the table does not define fails closed */
			cr_assert(bit, "undefined slot %u passes", r);
			cr_assert_str_eq(fw_reason_name(r), "unknown");
		}
	}
	cr_assert_eq(FW_REASON_DROP_MASK & FW_REASON_PASS_MASK, 0);
	cr_assert_eq(FW_REASON_DROP_MASK | FW_REASON_PASS_MASK, ~0ull);
	cr_assert(fw_reason_drops(FW_REASON_SLOTS));
	cr_assert(fw_reason_drops(~0u));
}

Test(reasons, names_are_unique)
{
	for (__u32 a = 0; a < FW_REASON_MAX; a++)
		for (__u32 b = a + 1; b < FW_REASON_MAX; b++)
			cr_assert_str_neq(fw_reason_name(a), fw_reason_name(b), "%u and %u", a, b);
}

Test(reasons, markdown_has_one_row_per_reason)
{
	char *buf = NULL;
	size_t len = 0, rows = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	fw_reasons_markdown(f);
	fclose(f);
	for (char *p = buf; (p = strstr(p, "\n| ")); p++)
		rows++;
	cr_assert_eq(rows, FW_REASON_MAX, "%s", buf);
	cr_assert_not_null(strstr(buf, "| dns-proxy | pass | "));
	cr_assert_not_null(strstr(buf, "| learned-port | drop | "));
	free(buf);
}
