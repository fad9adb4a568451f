/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the tests over the in-memory data plane share: addresses from text,
 * subject specs with a policy, a registry over a fresh fake. */
#ifndef FW_FAKE_HELPERS_H
#define FW_FAKE_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/addr.h"
#include "common/log.h"
#include "datapath_fake.h"
#include "subjects/registry.h"
#include "datapath/dispatch.h"

static inline struct fw_ip ip_of(const char *s)
{
	struct fw_ip ip;
	enum fw_family fam;

	cr_assert_eq(fw_addr_parse(s, &ip, &fam), 0, "bad test address %s", s);
	return ip;
}

/* name with one address (addr2 may be NULL), active, default deny */
static inline void spec_init(struct fw_subject_spec *s, const char *name, const char *addr,
			     const char *addr2)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->addrs[s->naddrs++] = ip_of(addr);
	if (addr2)
		s->addrs[s->naddrs++] = ip_of(addr2);
	s->state = FW_STATE_ACTIVE;
	fw_policy_init(&s->policy);
}

static inline void rule_add(struct fw_policy *p, const char *action, const char *target)
{
	char err[256];

	cr_assert_eq(fw_policy_add_rule(p, action, target, NULL, 0, err, sizeof(err)), 0, "%s",
		     err);
}

/* A registry over dp with every id the start marks retired reaped, as the
 * daemon's first round does. */
static inline void reg_start(struct fw_registry *r, struct fw_dp *dp)
{
	fw_log_level = FW_LOG_WARN;
	cr_assert_eq(fw_reg_init(r, dp), 0);
	cr_assert_geq(fw_reg_reap(r, 0), 0);
}

/* The id dispatch sends addr to; 0 when none. */
static inline __u32 dispatch_id(struct fw_dp *dp, const char *addr)
{
	struct fw_ip a = ip_of(addr);
	struct fw_subject ks;

	return fw_dp_dispatch_lookup(dp, &a, &ks) ? 0 : ks.id;
}

static inline int verdict(struct fw_dp *dp, __u32 id, const char *addr)
{
	struct fw_ip a = ip_of(addr);

	return fake_rules_verdict(dp, id, &a);
}

#endif /* FW_FAKE_HELPERS_H */
