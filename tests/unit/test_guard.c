// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The port guard's choice of hook under mode auto (datapath/guard.h), by
 * the driver names ETHTOOL_GDRVINFO reports: TC ingress on a veth, whose
 * native XDP copies each packet; native XDP first on every other driver
 * (the kernel refuses it where a driver has none, and auto then falls back
 * to TC, which tests/e2e/guard.sh checks on a bridge). */
#include <criterion/criterion.h>
#include <string.h>

#include "datapath/guard.h"

/* physical NIC drivers and the virtual ones that run XDP on the buffers
 * they receive into */
static const char *const in_place[] = {
	"mlx5_core",
	"mlx4_en",
	"ixgbe",
	"i40e",
	"ice",
	"igb",
	"igc",
	"bnxt_en",
	"ena",
	"nfp",
	"gve",
	"virtio_net",
	"tun",
	"bond",
	"netdevsim",
	/* no driver name, and names that only look like veth's */
	"",
	"veth0",
	"VETH",
	"vet",
	"vethx",
};

Test(guard, auto_takes_tc_on_a_veth)
{
	enum fw_guard_why why = FW_GUARD_WHY_MAX;

	cr_assert_eq(fw_guard_auto_hook("veth", &why), FW_GUARD_TC);
	cr_assert_eq(why, FW_GUARD_WHY_COPIES);
	cr_assert(fw_guard_xdp_copies("veth"));
}

Test(guard, auto_takes_native_xdp_elsewhere)
{
	for (size_t i = 0; i < sizeof(in_place) / sizeof(in_place[0]); i++) {
		enum fw_guard_why why = FW_GUARD_WHY_MAX;

		cr_assert_eq(fw_guard_auto_hook(in_place[i], &why), FW_GUARD_XDP, "driver '%s'",
			     in_place[i]);
		cr_assert_eq(why, FW_GUARD_WHY_DRIVER, "driver '%s'", in_place[i]);
		cr_assert(!fw_guard_xdp_copies(in_place[i]), "driver '%s'", in_place[i]);
	}
}

Test(guard, an_unknown_driver_tries_native_xdp_first)
{
	enum fw_guard_why why = FW_GUARD_WHY_MAX;

	cr_assert_eq(fw_guard_auto_hook(NULL, &why), FW_GUARD_XDP);
	cr_assert_eq(why, FW_GUARD_WHY_DRIVER);
	cr_assert(!fw_guard_xdp_copies(NULL));
}

/* fastwall_guard_hooks stores these numbers: a later release reads them */
Test(guard, recorded_numbers_are_fixed)
{
	cr_assert_eq(FW_GUARD_AUTO, 0);
	cr_assert_eq(FW_GUARD_XDP, 1);
	cr_assert_eq(FW_GUARD_XDP_GENERIC, 2);
	cr_assert_eq(FW_GUARD_TC, 3);
	cr_assert_eq(FW_GUARD_NONE, 4);
	cr_assert_eq(FW_GUARD_WHY_CONFIGURED, 0);
	cr_assert_eq(FW_GUARD_WHY_DRIVER, 1);
	cr_assert_eq(FW_GUARD_WHY_COPIES, 2);
	cr_assert_eq(FW_GUARD_WHY_BUSY, 3);
	cr_assert_eq(FW_GUARD_WHY_NO_XDP, 4);
}

Test(guard, every_reason_has_a_text)
{
	for (int w = 0; w < FW_GUARD_WHY_MAX; w++) {
		const char *t = fw_guard_why_text((enum fw_guard_why)w);

		cr_assert(t && *t && strcmp(t, "unknown"), "why %d", w);
	}
	cr_assert_str_eq(fw_guard_why_text(FW_GUARD_WHY_MAX), "unknown");
}
