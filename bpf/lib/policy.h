/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A subject's policy, from the features it is made of: its CIDR rules
 * (rules.h) and their port exceptions (ports.h), else the default, else a
 * learned lease (leases.h). fw_policy() and fw_policy_rule*() return a
 * reason of the table. */
#ifndef FW_BPF_POLICY_H
#define FW_BPF_POLICY_H

#include "common.h"
#include "parse.h"
#include "rules.h"
#include "ports.h"
#include "leases.h"

/* The verdict of rule, subject id's entry for the packet's destination:
 * its CIDR action (or the port exception's), else the default, else a
 * learned lease. */
static __always_inline __u32 fw_policy_rule_of(__u32 id, const struct fw_pkt *pkt,
					       const struct fw_rule *rule)
{
	__u8 *v = fw_port_exception(id, rule->portset, pkt);

	if (v)
		return *v == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
	if (!rule->is_default && rule->action != FW_ACTION_NONE)
		return rule->action == FW_ACTION_ALLOW ? FW_PASS_ALLOW_CIDR : FW_DROP_DENY_CIDR;
	if (rule->dflt == FW_ACTION_ALLOW)
		return FW_PASS_DEFAULT;
	return fw_lease_verdict(id, pkt);
}

static __always_inline __u32 fw_policy_rule(const struct fw_subject *s, const struct fw_pkt *pkt,
					    const struct fw_rule *rule)
{
	return fw_policy_rule_of(s->id, pkt, rule);
}

/* Deny CIDRs, allow CIDRs, learned leases, default, in that order. */
static __always_inline __u32 fw_policy(const struct fw_subject *s, const struct fw_pkt *pkt)
{
	struct fw_rule r;

	if (!fw_rule_get(s->id, s->rules_gen, &pkt->dst, &r))
		return FW_DROP_NO_POLICY;
	return fw_policy_rule(s, pkt, &r);
}

#endif /* FW_BPF_POLICY_H */
