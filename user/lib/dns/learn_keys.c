// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The learner's keys (dns/learn_keys.h). */
#include <errno.h>
#include <stdio.h>

#include "dns/learn.h"
#include "dns/learn_keys.h"

#define F(m) FW_CK_FIELD(struct fw_learn_config, m)

static const struct fw_cfgkey keys[] = {
	{.key = "max_learned_per_subject",
	 .type = FW_CK_UINT,
	 F(max_per_subject),
	 .min = 0,
	 .max = FW_MAX_LEARNED,
	 .def = 4096,
	 .doc = "at the cap, learning an address evicts the subject's least recently learned "
		"address that carries no open TCP connection; if every one does, the new address "
		"is not learned (counted, and its connects are dropped). 0: no cap",
	 .reload = FW_CK_RELOAD},
	{.key = "refresh_interval",
	 .type = FW_CK_DURATION,
	 F(refresh_interval_ns),
	 .min = 1,
	 .max = 3600,
	 .def = 10,
	 .scale = FW_NSEC_PER_SEC,
	 .type_doc = "seconds, 1-3600, at most `lease.min / 2`",
	 .doc = "the lease refresh round: renewals, the last renewal of ended connections, "
		"garbage collection",
	 .reload = FW_CK_RELOAD},
	{.key = "tcp_idle_timeout",
	 .type = FW_CK_DURATION,
	 F(tcp_idle_ns),
	 .min = 1,
	 .max = 7 * 86400,
	 .def = 3600,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "an open connection with no packet for this long no longer keeps its "
		"destination's lease",
	 .reload = FW_CK_RELOAD},
};

static const struct fw_cfgkey lease_keys[] = {
	{.key = "add",
	 .type = FW_CK_UINT,
	 F(lease_add_s),
	 .min = 0,
	 .max = 86400,
	 .def = 60,
	 .type_doc = "seconds, 0-86400",
	 .doc = "added to an answer's TTL: a learned address's lease is clamp(TTL + add, min, "
		"max)",
	 .reload = FW_CK_RELOAD},
	{.key = "min",
	 .type = FW_CK_UINT,
	 F(lease_min_s),
	 .min = 1,
	 .max = 86400,
	 .def = 60,
	 .type_doc = "seconds, 1-86400, at most `max`",
	 .doc = "the shortest lease; also what an open TCP connection renews its destination "
		"to",
	 .reload = FW_CK_RELOAD},
	{.key = "max",
	 .type = FW_CK_UINT,
	 F(lease_max_s),
	 .min = 1,
	 .max = 86400,
	 .def = 360,
	 .type_doc = "seconds, 1-86400",
	 .doc = "the longest lease; answer TTLs above it are lowered to it, so clients never "
		"cache past the lease",
	 .reload = FW_CK_RELOAD},
};

const struct fw_cfgtable fw_learn_keys = FW_CK_TABLE("dns", keys);
const struct fw_cfgtable fw_learn_lease_keys = FW_CK_TABLE("dns.lease", lease_keys);

int fw_learn_config_check(const struct fw_learn_config *c, bool lease_only, char *msg,
			  size_t msglen)
{
	if (c->lease_min_s > c->lease_max_s) {
		snprintf(msg, msglen, "dns.lease.min (%u) is above dns.lease.max (%u)",
			 c->lease_min_s, c->lease_max_s);
		return -EINVAL;
	}
	/* a live connection's lease is renewed to lease.min every round: two
	 * rounds must fit in it, or a late round lets the lease lapse */
	if (!lease_only && 2 * c->refresh_interval_ns > (__u64)c->lease_min_s * FW_NSEC_PER_SEC) {
		snprintf(msg, msglen,
			 "dns.refresh_interval (%llus) must be at most half of dns.lease.min (%us)",
			 (unsigned long long)(c->refresh_interval_ns / FW_NSEC_PER_SEC),
			 c->lease_min_s);
		return -EINVAL;
	}
	return 0;
}
