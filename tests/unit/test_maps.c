// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The map table (datapath/maps.h): a map's name carries its layout
 * version (_v2 and on), names are unique, and every replaced map names
 * the map userspace carries its counters into. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "datapath/datapath.h"

#define ENTRY(name, field, version, late) {#name, version},
static const struct {
	const char *name;
	int version;
} maps[] = {FW_DP_MAPS(ENTRY)};

#define RETIRED(name, abi, type, key, value, max, successor) {#name, abi, #successor},
static const struct {
	const char *name;
	int abi;
	const char *successor;
} retired[] = {FW_DP_RETIRED_MAPS(RETIRED)};

#define USER(name, field, type, key, value, max) #name,
static const char *const user_maps[] = {FW_DP_USER_MAPS(USER)};

static bool is_user_map(const char *name)
{
	for (size_t i = 0; i < sizeof(user_maps) / sizeof(user_maps[0]); i++)
		if (strcmp(user_maps[i], name) == 0)
			return true;
	return false;
}

static int in_table(const char *name)
{
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (strcmp(maps[i].name, name) == 0)
			return (int)i;
	return -1;
}

Test(maps, names_carry_their_layout_version)
{
	cr_assert_eq(sizeof(maps) / sizeof(maps[0]), FW_DP_NMAPS);
	for (size_t i = 0; i < FW_DP_NMAPS; i++) {
		const char *v = strrchr(maps[i].name, '_');
		char want[16];

		cr_assert(strncmp(maps[i].name, "fastwall_", 9) == 0, "%s", maps[i].name);
		cr_assert(maps[i].version >= 1 && maps[i].version <= FW_ABI_VERSION, "%s",
			  maps[i].name);
		snprintf(want, sizeof(want), "_v%d", maps[i].version);
		if (maps[i].version == 1)
			cr_assert(!(v[1] == 'v' && v[2] >= '0' && v[2] <= '9'),
				  "%s: version 1 has no suffix", maps[i].name);
		else
			cr_assert_str_eq(v, want, "%s is version %d", maps[i].name,
					 maps[i].version);
		cr_assert_eq(in_table(maps[i].name), (int)i, "%s twice", maps[i].name);
	}
}

Test(maps, replaced_maps_name_a_successor)
{
	cr_assert_eq(sizeof(retired) / sizeof(retired[0]), FW_DP_NRETIRED);
	for (size_t i = 0; i < FW_DP_NRETIRED; i++) {
		cr_assert_lt(in_table(retired[i].name), 0, "%s is still current", retired[i].name);
		/* counters are carried into a map userspace creates (the live
		 * ones are the data plane's alone); ABI 1's rule tries are
		 * copied into the slot tries of the current rules map */
		if (strcmp(retired[i].name, "fastwall_rules") == 0)
			cr_assert_geq(in_table(retired[i].successor), 0, "%s: into %s",
				      retired[i].name, retired[i].successor);
		else
			cr_assert(is_user_map(retired[i].successor), "%s: carried into %s",
				  retired[i].name, retired[i].successor);
		cr_assert(retired[i].abi >= FW_ABI_OLDEST && retired[i].abi < FW_ABI_VERSION);
		cr_assert_str_neq(retired[i].name, FW_DP_ABI_PIN);
	}
	cr_assert_lt(in_table(FW_DP_ABI_PIN), 0);
	for (size_t i = 0; i < sizeof(user_maps) / sizeof(user_maps[0]); i++)
		cr_assert_lt(in_table(user_maps[i]), 0, "%s", user_maps[i]);
}

#define GUARD(name) #name,
static const char *const guard_maps[] = {FW_GUARD_MAPS(GUARD)};

/* The guard's own maps are pinned beside the table's and purged with them:
 * their names must be fastwall's, the guard's, and no other map's. */
Test(maps, guard_maps_are_apart)
{
	for (size_t i = 0; i < sizeof(guard_maps) / sizeof(guard_maps[0]); i++) {
		cr_assert(strncmp(guard_maps[i], "fastwall_guard_", 15) == 0, "%s", guard_maps[i]);
		cr_assert_lt(in_table(guard_maps[i]), 0, "%s", guard_maps[i]);
		cr_assert(!is_user_map(guard_maps[i]), "%s", guard_maps[i]);
		for (size_t j = 0; j < FW_DP_NRETIRED; j++)
			cr_assert_str_neq(guard_maps[i], retired[j].name);
		for (size_t j = 0; j < i; j++)
			cr_assert_str_neq(guard_maps[i], guard_maps[j]);
	}
}

#define CG_OWN(name) #name,
static const char *const cg_maps[] = {FW_CG_MAPS(CG_OWN)};

/* The cgroup programs' own maps are never pinned nor shared: fw_cg_load
 * would otherwise look for them among the data plane's (and a pin of that
 * name could be mistaken for one). */
Test(maps, cgroup_own_maps_are_apart)
{
	for (size_t i = 0; i < sizeof(cg_maps) / sizeof(cg_maps[0]); i++) {
		cr_assert(strncmp(cg_maps[i], "fastwall_cg_", 12) == 0, "%s", cg_maps[i]);
		cr_assert_lt(in_table(cg_maps[i]), 0, "%s", cg_maps[i]);
		cr_assert(!is_user_map(cg_maps[i]), "%s", cg_maps[i]);
		for (size_t j = 0; j < sizeof(guard_maps) / sizeof(guard_maps[0]); j++)
			cr_assert_str_neq(cg_maps[i], guard_maps[j]);
		for (size_t j = 0; j < FW_DP_NRETIRED; j++)
			cr_assert_str_neq(cg_maps[i], retired[j].name);
	}
}
