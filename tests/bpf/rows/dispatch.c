// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Who is sending: the dispatch of a packet to its subject by source
 * address, subjects in other states than active, and the binding of a
 * subject to its interface (anti-spoofing). */
#include "verdicts.h"

/* An active subject whose rule set is gone must fail closed. */
static int epsilon_rules_cleared(void)
{
	t.dirty = true;
	return fw_dp_rules_clear(t.dp, id_of("epsilon")) ? -1 : 0;
}

const struct row dispatch_rows[] = {
	/* who is sending */
	{"v4 source of no subject", .pkt = TCP4(STRANGER4, OK4, 40000, 80),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"v6 source of no subject", .pkt = TCP6(STRANGER6, OK6, 40000, 80),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"subject still denying", .pkt = TCP4(GAMMA4, OK4, 40000, 80), DROP(FW_DROP_DENYING),
	 .subject = "gamma"},
	/* the first answer is this CPU's cached one when the rule set goes */
	{"default-allow subject passes", .pkt = TCP4(EPS4, OK4, 40000, 80), PASS(FW_PASS_DEFAULT),
	 .subject = "epsilon"},
	{"... and without its rule set fails closed", .then = true, .setup = epsilon_rules_cleared,
	 .pkt = TCP4(EPS4, OK4, 40000, 80), DROP(FW_DROP_NO_POLICY), .subject = "epsilon"},

	/* anti-spoof: delta is bound to the dummy interface */
	{"bound subject seen on another interface (lo)", .pkt = TCP4(DELTA4, OK4, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"bound subject v6 seen on another interface (lo)", .pkt = TCP6(DELTA6, OK6, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"bound subject on its own interface", .on_dummy = true,
	 .pkt = TCP4(DELTA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"bound subject v6 on its own interface", .on_dummy = true,
	 .pkt = TCP6(DELTA6, OK6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"unbound subject on any interface", .on_dummy = true, .pkt = TCP4(ALPHA4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"subject bound to a missing interface drops on lo", .pkt = TCP4(ZETA4, OK4, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "zeta"},
	{"subject bound to a missing interface drops on dummy", .on_dummy = true,
	 .pkt = TCP4(ZETA4, OK4, 40000, 80), DROP(FW_DROP_SPOOF), .subject = "zeta"},

};
const size_t dispatch_rows_n = sizeof(dispatch_rows) / sizeof(dispatch_rows[0]);
