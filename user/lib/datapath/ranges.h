/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A compiled rule set as sorted address ranges (struct fw_range_set of
 * fastwall/abi.h): the form the programs search in FW_RANGE_STEPS steps. */
#ifndef FW_DATAPATH_RANGES_H
#define FW_DATAPATH_RANGES_H

#include <stddef.h>

#include "fastwall/abi.h"
#include "policy/policy.h"

/* Builds out from the n compiled entries (prefixes nested or apart, as a
 * compiled set has them; at most FW_RANGE_RULES). pgen is or-ed into the
 * port set of every entry that has one (the port sets' generation). 0, or
 * -E2BIG when the entries are too many or cut into more than FW_RANGE_MAX
 * ranges, -EINVAL for a prefix longer than 128 bits or two entries of one
 * prefix. */
int fw_range_build(struct fw_range_set *out, const struct fw_compiled *entries, size_t n,
		   __u32 pgen);

/* The entry of set that holds addr, as the programs find it: its index in
 * set->rule, or -1 when no prefix holds addr. */
int fw_range_find(const struct fw_range_set *set, const struct fw_ip *addr);

#endif /* FW_DATAPATH_RANGES_H */
