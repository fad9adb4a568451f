// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The subject registry over the in-memory data plane: what dispatch, the
 * rule tries, the metadata and the id lifecycle look like after each call,
 * as the packet path would see them. */
#include <criterion/criterion.h>
#include <errno.h>

#include "helpers.h"
#include "datapath/cgroup.h"
#include "datapath/dispatch.h"
#include "datapath/leases.h"
#include "datapath/rules.h"

static struct fw_dp *dp;
static struct fw_registry reg;

static void setup(void)
{
	dp = fake_dp_new();
	cr_assert_not_null(dp);
	reg_start(&reg, dp);
}

static void teardown(void)
{
	fw_reg_free(&reg);
	fake_dp_free(dp);
}

TestSuite(registry, .init = setup, .fini = teardown);

static __u32 id_of(const char *name)
{
	struct fw_entry *e = fw_reg_find(&reg, name);

	return e ? e->id : 0;
}

Test(registry, apply_dispatches_every_address_to_one_rule_set)
{
	struct fw_subject_spec s;
	struct fw_subject_meta m;
	bool changed = false;
	unsigned int swaps;
	__u32 id;

	spec_init(&s, "web", "192.0.2.10", "2001:db8::10");
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert(changed);
	id = id_of("web");
	cr_assert_neq(id, 0);
	cr_assert_eq(fake_dispatch_count(dp), 2);
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), id);
	cr_assert_eq(dispatch_id(dp, "2001:db8::10"), id);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_DENY);
	cr_assert_eq(fake_meta_get(dp, id, &m), 0);
	cr_assert_str_eq(m.name, "web");
	cr_assert_eq(m.origin, FW_ORIGIN_STATIC);
	cr_assert_eq(fake_resets(dp, id), 1, "a fresh id starts with zeroed counters");

	/* the same spec again changes nothing in the kernel */
	swaps = fake_rules_changes(dp, id);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert_not(changed);
	cr_assert_eq(fake_rules_changes(dp, id), swaps);
	fw_policy_free(&s.policy);
}

/* The rules generation dispatch names for addr; ~0u when none. */
static __u32 dispatch_gen(struct fw_dp *d, const char *addr)
{
	struct fw_ip a = ip_of(addr);
	struct fw_subject ks;

	return fw_dp_dispatch_lookup(d, &a, &ks) ? ~0u : ks.rules_gen;
}

/* The rule store chooses (fw_dp_policy_update): a policy change that
 * alters one compiled entry is an edit of the live rules in place, under
 * the generation dispatch already names; one that alters two is a new
 * generation, which dispatch then names. */
Test(registry, one_entry_changes_edit_in_place_two_swap)
{
	struct fw_subject_spec s;
	unsigned int changes;
	__u32 id, gen;

	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	cr_assert_eq(fake_rules_edits(dp, id), 0, "a subject's first rules are a new generation");
	gen = fw_dp_rules_gen(dp, id);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_DENY);

	changes = fake_rules_changes(dp, id);
	rule_add(&s.policy, "allow", "203.0.113.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(fake_rules_changes(dp, id), changes + 1);
	cr_assert_eq(fake_rules_edits(dp, id), 1, "one more entry: an edit in place");
	cr_assert_eq(fw_dp_rules_gen(dp, id), gen, "the live generation stays");
	cr_assert_eq(dispatch_gen(dp, "192.0.2.10"), gen);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_ALLOW);

	rule_add(&s.policy, "allow", "192.0.2.128/25");
	rule_add(&s.policy, "deny", "198.51.100.0/25");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(fake_rules_edits(dp, id), 1, "two more entries: no edit");
	cr_assert_neq(fw_dp_rules_gen(dp, id), gen, "a new generation");
	cr_assert_eq(dispatch_gen(dp, "192.0.2.10"), fw_dp_rules_gen(dp, id));
	cr_assert_eq(verdict(dp, id, "192.0.2.200"), FW_ACTION_ALLOW);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_DENY);
	fw_policy_free(&s.policy);
}

Test(registry, same_identity_swaps_rules_under_the_same_id)
{
	struct fw_subject_spec s;
	struct fw_ip dst = ip_of("203.0.113.9");
	struct fw_lease lease;
	__u32 id;

	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	/* something learned under the id, as the DNS side writes it */
	cr_assert_eq(fw_dp_lease_put(dp, id, &dst, fw_now_ns() + FW_NSEC_PER_SEC * 60, 0), 0);

	fw_policy_free(&s.policy);
	fw_policy_init(&s.policy);
	rule_add(&s.policy, "allow", "203.0.113.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(id_of("web"), id, "a policy change keeps the id");
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), id);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_DENY);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_ALLOW);
	cr_assert_eq(fake_lease_get(dp, id, &dst, &lease), 0, "learned addresses stay");
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), 1);
	fw_policy_free(&s.policy);
}

Test(registry, new_identity_gets_a_fresh_id_and_the_old_one_retires)
{
	struct fw_subject_spec s;
	struct fw_ip dst = ip_of("203.0.113.9");
	struct fw_lease lease;
	__u32 id, id2;

	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	cr_assert_eq(fw_dp_lease_put(dp, id, &dst, fw_now_ns() + FW_NSEC_PER_SEC * 60, 0), 0);

	/* a static subject's identity is its binding: a new address */
	s.addrs[0] = ip_of("192.0.2.11");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id2 = id_of("web");
	cr_assert_neq(id2, 0);
	cr_assert_neq(id2, id, "a new binding must not inherit what the old one learned");
	cr_assert_eq(dispatch_id(dp, "192.0.2.11"), id2);
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), 0);
	cr_assert_eq(verdict(dp, id2, "198.51.100.7"), FW_ACTION_ALLOW);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), -1, "the old id's trie is gone");
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), -1);
	cr_assert_eq(fake_lease_get(dp, id2, &dst, &lease), -ENOENT);
	cr_assert_eq(fw_reg_count(&reg), 1);
	fw_policy_free(&s.policy);
}

Test(registry, a_protocol_subject_never_takes_a_static_address)
{
	struct fw_subject_spec st, pr;
	struct fw_entry *e;
	__u32 sid;

	spec_init(&st, "static-a", "192.0.2.10", NULL);
	cr_assert_eq(fw_reg_upsert(&reg, &st, FW_ORIGIN_STATIC, NULL), 0);
	sid = id_of("static-a");

	spec_init(&pr, "u-1", "192.0.2.10", "192.0.2.20");
	e = fw_reg_get(&reg, "u-1", true);
	cr_assert_not_null(e);
	cr_assert_eq(
		fw_reg_apply(&reg, e, &pr, FW_ORIGIN_ACTIONS, fw_fence_hash("rt", "att"), NULL), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), sid, "the static subject keeps its address");
	cr_assert_eq(dispatch_id(dp, "192.0.2.20"), id_of("u-1"));
	cr_assert_neq(id_of("u-1"), sid);
}

Test(registry, a_newer_protocol_owner_keeps_the_address_when_the_old_one_goes)
{
	struct fw_subject_spec a, b;
	struct fw_entry *e;
	__u32 ida, idb;

	spec_init(&a, "u-old", "192.0.2.30", NULL);
	spec_init(&b, "u-new", "192.0.2.30", NULL);
	e = fw_reg_get(&reg, "u-old", true);
	cr_assert_eq(fw_reg_apply(&reg, e, &a, FW_ORIGIN_ACTIONS, fw_fence_hash("r", "1"), NULL),
		     0);
	fw_reg_put(&reg, e);
	ida = id_of("u-old");
	e = fw_reg_get(&reg, "u-new", true);
	cr_assert_eq(fw_reg_apply(&reg, e, &b, FW_ORIGIN_ACTIONS, fw_fence_hash("r", "2"), NULL),
		     0);
	fw_reg_put(&reg, e);
	idb = id_of("u-new");
	cr_assert_eq(dispatch_id(dp, "192.0.2.30"), idb, "the new binding takes the address over");

	e = fw_reg_get(&reg, "u-old", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(dispatch_id(dp, "192.0.2.30"), idb, "removing the old owner spares the new");
	cr_assert_eq(fw_reg_id_state(&reg, ida, NULL), -1);
}

/* TC ingress answers a destination it has seen from its cache without the
 * sibling check: a private CIDR changed in place (same fence, same id)
 * must end those answers, and nothing else about the binding needs to. */
Test(registry, a_private_cidr_changed_in_place_ends_the_cached_answers)
{
	struct fw_subject_spec s;
	struct fw_entry *e;
	__u64 fence = fw_fence_hash("rt", "sigma");
	__u64 before;
	__u32 id;

	spec_init(&s, "sigma", "192.0.2.40", NULL);
	s.has_private[FW_FAM_V4] = true;
	cr_assert_eq(fw_prefix_parse("10.42.0.0/25", &s.private_net[FW_FAM_V4].net,
				     &s.private_net[FW_FAM_V4].plen, NULL),
		     0);
	e = fw_reg_get(&reg, "sigma", true);
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	id = e->id;
	before = fake_epoch(dp);

	/* another address, the same private CIDR: no raise */
	s.addrs[s.naddrs++] = ip_of("192.0.2.41");
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	cr_assert_eq(e->id, id);
	cr_assert_eq(fake_epoch(dp), before, "an unchanged private CIDR keeps the answers");

	/* the CIDR grows: raised, after dispatch has the new one */
	s.private_net[FW_FAM_V4].plen--;
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	cr_assert_eq(e->id, id, "same fence, same id");
	cr_assert_gt(fake_epoch(dp), before, "a changed private CIDR ends the cached answers");
	fw_reg_put(&reg, e);
	fw_policy_free(&s.policy);
}

/* The same for the gateway: a cached answer was for a destination that
 * was not the subject's gateway (TC ingress skips the pod-local check on a
 * hit), so a gateway set or moved in place ends them. */
Test(registry, a_gateway_changed_in_place_ends_the_cached_answers)
{
	struct fw_subject_spec s;
	struct fw_entry *e;
	__u64 fence = fw_fence_hash("rt", "tau");
	__u64 before;
	__u32 id;

	spec_init(&s, "tau", "192.0.2.50", NULL);
	e = fw_reg_get(&reg, "tau", true);
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	id = e->id;
	before = fake_epoch(dp);

	s.has_gateway[FW_FAM_V4] = true;
	s.gateway[FW_FAM_V4] = ip_of("192.0.2.1");
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	cr_assert_eq(e->id, id, "same fence, same id");
	cr_assert_gt(fake_epoch(dp), before, "a new gateway ends the cached answers");

	before = fake_epoch(dp);
	s.gateway[FW_FAM_V4] = ip_of("192.0.2.2");
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	cr_assert_eq(e->id, id);
	cr_assert_gt(fake_epoch(dp), before, "a moved gateway ends the cached answers");

	before = fake_epoch(dp);
	s.addrs[s.naddrs++] = ip_of("192.0.2.51");
	cr_assert_eq(fw_reg_apply(&reg, e, &s, FW_ORIGIN_ACTIONS, fence, NULL), 0);
	cr_assert_eq(fake_epoch(dp), before, "an unchanged gateway keeps the answers");
	fw_reg_put(&reg, e);
	fw_policy_free(&s.policy);
}

Test(registry, unbind_removes_everything_and_retires_the_id)
{
	struct fw_subject_spec s;
	struct fw_ip dst = ip_of("203.0.113.9");
	struct fw_conn_key ck = {.dst = dst};
	struct fw_conn cv = {.last_seen_ns = fw_now_ns()};
	struct fw_subject_meta m;
	struct fw_entry *e;
	__u32 id;

	spec_init(&s, "web", "192.0.2.10", "2001:db8::10");
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	ck.subject = id;
	cr_assert_eq(fw_dp_lease_put(dp, id, &dst, fw_now_ns() + FW_NSEC_PER_SEC * 60, 0), 0);
	fake_conn_put(dp, &ck, &cv);

	e = fw_reg_get(&reg, "web", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(fake_dispatch_count(dp), 0);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), -1);
	cr_assert_eq(fake_meta_get(dp, id, &m), 0);
	cr_assert_eq(m.origin, FW_ORIGIN_RETIRED,
		     "a restart must not reuse the id before the reap");
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), -1);
	cr_assert_eq(fw_reg_count(&reg), 0);
	cr_assert_null(fw_reg_find(&reg, "web"));

	cr_assert_eq(fw_reg_reap(&reg, 0), 1);
	cr_assert_eq(fake_learned_count(dp, id), 0);
	cr_assert_eq(fake_conns_count(dp, id), 0);
	cr_assert_eq(fw_dp_conn_counts(dp)[id], 0);
	cr_assert_eq(fake_meta_get(dp, id, &m), -ENOENT);
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), 0);
	fw_policy_free(&s.policy);
}

Test(registry, the_reaper_waits_for_the_minimum_age)
{
	struct fw_subject_spec s;
	struct fw_ip dst = ip_of("203.0.113.9");
	struct fw_entry *e;
	__u32 id;

	spec_init(&s, "web", "192.0.2.10", NULL);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	cr_assert_eq(fw_dp_lease_put(dp, id, &dst, fw_now_ns() + FW_NSEC_PER_SEC * 60, 0), 0);
	e = fw_reg_get(&reg, "web", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);

	cr_assert_eq(fw_reg_reap(&reg, 3600 * FW_NSEC_PER_SEC), 0, "too young to reap");
	cr_assert_eq(fake_learned_count(dp, id), 1);
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), -1);
	cr_assert_eq(fw_reg_reap(&reg, 0), 1);
	cr_assert_eq(fake_learned_count(dp, id), 0);
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), 0);
}

Test(registry, a_restart_adopts_what_the_maps_hold)
{
	struct fw_subject_spec a, b;
	struct fw_subject ghost = {.id = 4242, .state = FW_STATE_ACTIVE};
	struct fw_ip ghost_addr = ip_of("192.0.2.99");
	struct fw_entry *e;
	bool changed = true;
	__u32 ida, idb;

	spec_init(&a, "a", "192.0.2.10", NULL);
	rule_add(&a.policy, "allow", "198.51.100.0/24");
	spec_init(&b, "b", "192.0.2.20", NULL);
	cr_assert_eq(fw_reg_upsert(&reg, &a, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(fw_reg_upsert(&reg, &b, FW_ORIGIN_STATIC, NULL), 0);
	ida = id_of("a");
	idb = id_of("b");
	/* dispatch to an id nobody owns (a foreign write, an interrupted removal) */
	cr_assert_eq(fw_dp_dispatch_put(dp, &ghost_addr, &ghost), 0);

	/* fastwalld stops (the kernel keeps enforcing) and starts again */
	fw_reg_free(&reg);
	cr_assert_eq(fw_reg_init(&reg, dp), 0);
	cr_assert_eq(fw_reg_count(&reg), 2);
	e = fw_reg_find(&reg, "a");
	cr_assert_not_null(e);
	cr_assert_eq(e->id, ida);
	cr_assert(e->adopted);
	cr_assert_eq(e->naddrs, 1);
	cr_assert_eq(dispatch_id(dp, "192.0.2.99"), 0, "dispatch to nobody fails closed");
	cr_assert_eq(fw_reg_id_state(&reg, 4242, NULL), -1, "unbound ids wait for the reaper");

	/* the configuration replayed: same identity, same id, nothing rewritten */
	cr_assert_eq(fw_reg_upsert(&reg, &a, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert_eq(id_of("a"), ida);
	cr_assert_not(fw_reg_find(&reg, "a")->adopted);
	cr_assert_eq(verdict(dp, ida, "198.51.100.7"), FW_ACTION_ALLOW);
	/* b was not replayed: pruned */
	cr_assert_eq(fw_reg_prune_adopted(&reg, FW_ORIGIN_STATIC), 1);
	cr_assert_eq(dispatch_id(dp, "192.0.2.20"), 0);
	cr_assert_eq(fw_reg_id_state(&reg, idb, NULL), -1);
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), ida);
	fw_policy_free(&a.policy);
}

Test(registry, the_overlay_goes_ahead_of_subject_rules)
{
	struct fw_subject_spec s[2];
	struct fw_policy overlay;
	__u32 id;

	fw_policy_init(&overlay);
	rule_add(&overlay, "deny", "198.51.100.0/24");
	spec_init(&s[0], "web", "192.0.2.10", NULL);
	rule_add(&s[0].policy, "allow", "198.51.100.7");
	rule_add(&s[0].policy, "allow", "203.0.113.0/24");
	spec_init(&s[1], "db", "192.0.2.20", NULL);

	cr_assert_eq(fw_reg_sync_static(&reg, &overlay, s, 2, true), 0);
	id = id_of("web");
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_DENY, "the operator's deny wins");
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_ALLOW);
	cr_assert_neq(id_of("db"), 0);

	/* without the overlay the subject's allow stands; db is no longer
	 * configured and goes */
	cr_assert_eq(fw_reg_sync_static(&reg, NULL, s, 1, true), 0);
	cr_assert_eq(id_of("web"), id);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);
	cr_assert_null(fw_reg_find(&reg, "db"));
	cr_assert_eq(dispatch_id(dp, "192.0.2.20"), 0);
	fw_policy_free(&overlay);
	fw_policy_free(&s[0].policy);
	fw_policy_free(&s[1].policy);
}

Test(registry, a_failed_dispatch_write_leaves_no_subject)
{
	struct fw_subject_spec s;

	spec_init(&s, "web", "192.0.2.10", NULL);
	fake_fail_next(dp, FAKE_DISPATCH_PUT, -ENOMEM);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), -ENOMEM);
	cr_assert_eq(fake_dispatch_count(dp), 0);
	cr_assert_eq(fw_reg_count(&reg), 0);
	/* the retry converges */
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(dispatch_id(dp, "192.0.2.10"), id_of("web"));
}

/* A process subject: no address, its cgroup in fastwall_cgroups with the
 * live generation of its rules, under one id through a policy change, and
 * gone with the subject. */
Test(registry, cgroup_subject_follows_its_rules_and_goes_with_it)
{
	struct fw_subject_spec s;
	struct fw_subject ks;
	struct fw_entry *e;
	char name[FW_NAME_LEN];
	__u32 id, owner = 0, gen;

	spec_init(&s, "proc", "192.0.2.10", NULL);
	s.naddrs = 0;
	s.cgroup_id = 4242;
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_PROCESS, NULL), 0);
	id = id_of("proc");
	cr_assert_neq(id, 0);
	/* no address: its one dispatch entry is its DNS source, on no port */
	cr_assert_eq(fake_dispatch_count(dp), 1);
	{
		char alias[32];
		struct fw_ip a;

		snprintf(alias, sizeof(alias), "127.254.%u.%u", id >> 8, id & 0xff);
		a = ip_of(alias);
		cr_assert_eq(fw_dp_dispatch_lookup(dp, &a, &ks), 0, "%s", alias);
		cr_assert_eq(ks.id, id);
		cr_assert_eq(ks.ifindex, FW_IFINDEX_MISSING);
	}
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 4242, &ks), 0);
	cr_assert_eq(ks.id, id);
	cr_assert_eq(ks.state, FW_STATE_ACTIVE);
	cr_assert_eq(ks.rules_gen, fw_dp_rules_gen(dp, id));
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);
	cr_assert_eq(fw_reg_cgroup_owner(&reg, 4242, name, sizeof(name), &owner), 0);
	cr_assert_str_eq(name, "proc");
	cr_assert_eq(owner, id);

	/* a new policy (two changes: a whole swap, not an edit in place):
	 * the same id, the cgroup entry names the new generation */
	gen = ks.rules_gen;
	rule_add(&s.policy, "allow", "203.0.113.0/24");
	rule_add(&s.policy, "allow", "192.0.2.128/25");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_PROCESS, NULL), 0);
	cr_assert_eq(id_of("proc"), id);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 4242, &ks), 0);
	cr_assert_neq(ks.rules_gen, gen);
	cr_assert_eq(ks.rules_gen, fw_dp_rules_gen(dp, id));
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_ALLOW);

	e = fw_reg_get(&reg, "proc", false);
	cr_assert_not_null(e);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 4242, &ks), -ENOENT);
	cr_assert_eq(fake_dispatch_count(dp), 0, "its DNS source went with it");
	cr_assert_eq(fw_reg_cgroup_owner(&reg, 4242, name, sizeof(name), NULL), -ENOENT);
	fw_policy_free(&s.policy);
}

/* After a restart the registry adopts the cgroup entry of a subject it
 * knows, and removes one pointing at an id nobody holds (fail closed). */
Test(registry, restart_adopts_cgroups_and_drops_strays)
{
	struct fw_subject_spec s;
	struct fw_subject ks, stray = {.id = 77, .state = FW_STATE_ACTIVE};
	__u32 id;

	spec_init(&s, "proc", "192.0.2.10", NULL);
	s.naddrs = 0;
	s.cgroup_id = 99;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_PROCESS, NULL), 0);
	id = id_of("proc");
	cr_assert_eq(fw_dp_cgroup_put(dp, 1234, &stray), 0);
	fw_reg_free(&reg);
	reg_start(&reg, dp);
	cr_assert_eq(id_of("proc"), id);
	cr_assert_eq(fw_reg_find(&reg, "proc")->cgroup_id, 99);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 99, &ks), 0);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 1234, &ks), -ENOENT);
	cr_assert_eq(fw_reg_find(&reg, "proc")->naddrs, 0, "its DNS source is no address");
	cr_assert_eq(fake_dispatch_count(dp), 1);
	fw_policy_free(&s.policy);
}

/* An address subject may not take a process subject's DNS source. */
Test(registry, dns_sources_are_reserved)
{
	struct fw_subject_spec p, a;
	struct fw_subject ks;
	char alias[32];
	struct fw_ip ip;
	__u32 id;

	spec_init(&p, "proc", "192.0.2.10", NULL);
	p.naddrs = 0;
	p.cgroup_id = 7;
	cr_assert_eq(fw_reg_upsert(&reg, &p, FW_ORIGIN_PROCESS, NULL), 0);
	id = id_of("proc");
	snprintf(alias, sizeof(alias), "127.254.%u.%u", id >> 8, id & 0xff);
	spec_init(&a, "addr", alias, "192.0.2.20");
	cr_assert_eq(fw_reg_upsert(&reg, &a, FW_ORIGIN_STATIC, NULL), 0);
	ip = ip_of(alias);
	cr_assert_eq(fw_dp_dispatch_lookup(dp, &ip, &ks), 0);
	cr_assert_eq(ks.id, id, "the DNS source still names the process subject");
	cr_assert_eq(dispatch_id(dp, "192.0.2.20"), id_of("addr"));
	cr_assert_eq(fw_reg_find(&reg, "addr")->naddrs, 1);
	fw_policy_free(&p.policy);
	fw_policy_free(&a.policy);
}

/* Layer-7 pinning: the subject's own word (policy.l7) over l7.default,
 * nothing when l7 is off, FW_SF_L7_CIDR with cidr: pin; a change of the
 * word rewrites the dispatch and cgroups values under the same id. */
static __u8 dispatch_flags(struct fw_dp *d, const char *addr)
{
	struct fw_ip a = ip_of(addr);
	struct fw_subject ks;

	return fw_dp_dispatch_lookup(d, &a, &ks) ? 0xff : ks.flags;
}

Test(registry, l7_flags_follow_the_subject_and_the_defaults)
{
	struct fw_subject_spec s, p;
	struct fw_subject ks;
	bool changed;
	__u32 id;

	cr_assert_eq(fw_reg_l7_flags(&reg, &(struct fw_subject_spec){.policy.l7 = FW_POLICY_L7_ON}),
		     0, "l7 off: nothing is pinned");
	reg.l7_enabled = true;
	reg.l7_default_on = true;

	spec_init(&s, "web", "192.0.2.10", NULL);
	s.has_gateway[FW_FAM_V4] = true;
	s.gateway[FW_FAM_V4] = ip_of("192.0.2.1");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	id = id_of("web");
	cr_assert_eq(dispatch_flags(dp, "192.0.2.10"), FW_SF_GATEWAY4 | FW_SF_L7);

	/* its own off: the value is rewritten, the id stays */
	s.policy.l7 = FW_POLICY_L7_OFF;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert(changed);
	cr_assert_eq(id_of("web"), id);
	cr_assert_eq(dispatch_flags(dp, "192.0.2.10"), FW_SF_GATEWAY4);

	/* default off, its own on, cidr: pin */
	reg.l7_default_on = false;
	reg.l7_cidr_pin = true;
	s.policy.l7 = FW_POLICY_L7_ON;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(dispatch_flags(dp, "192.0.2.10"), FW_SF_GATEWAY4 | FW_SF_L7 | FW_SF_L7_CIDR);
	s.policy.l7 = FW_POLICY_L7_DEFAULT;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(dispatch_flags(dp, "192.0.2.10"), FW_SF_GATEWAY4);

	/* a process sandbox's cgroups value carries it too */
	spec_init(&p, "proc", "192.0.2.20", NULL);
	p.naddrs = 0;
	p.cgroup_id = 77;
	p.policy.l7 = FW_POLICY_L7_ON;
	cr_assert_eq(fw_reg_upsert(&reg, &p, FW_ORIGIN_PROCESS, NULL), 0);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 77, &ks), 0);
	cr_assert_eq(ks.flags, FW_SF_L7 | FW_SF_L7_CIDR);
	p.policy.l7 = FW_POLICY_L7_OFF;
	cr_assert_eq(fw_reg_upsert(&reg, &p, FW_ORIGIN_PROCESS, NULL), 0);
	cr_assert_eq(fw_dp_cgroup_lookup(dp, 77, &ks), 0);
	cr_assert_eq(ks.flags, 0);
	fw_policy_free(&s.policy);
	fw_policy_free(&p.policy);
}

/* A subject's bandwidth limit (fastwallBandwidth) is written with its id
 * before dispatch names it, rewritten only when it changes (a write starts
 * the limit's state afresh), deleted when it goes from the policy, and
 * gone with the subject. */
Test(registry, bandwidth_limit_follows_the_policy)
{
	struct fw_subject_spec s;
	bool changed = false;
	struct fw_entry *e;
	__u32 id;

	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "198.51.100.0/24");
	cr_assert_eq(fw_policy_bw_set(&s.policy, 1250000, false, 0, NULL, 0), 0);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	id = id_of("web");
	cr_assert_eq(fake_bw_rate(dp, id), 1250000);
	cr_assert(dispatch_flags(dp, "192.0.2.10") & FW_SF_BW, "dispatch says it has a limit");
	/* the same spec: nothing rewritten, nothing changed */
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert_not(changed);
	/* a new rate, in place under the same id */
	cr_assert_eq(fw_policy_bw_set(&s.policy, 2500000, false, 0, NULL, 0), 0);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert(changed);
	cr_assert_eq(id_of("web"), id);
	cr_assert_eq(fake_bw_rate(dp, id), 2500000);
	/* removed from the policy */
	s.policy.bw = FW_POLICY_BW_OFF;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, &changed), 0);
	cr_assert(changed);
	cr_assert_eq(fake_bw_rate(dp, id), 0);
	cr_assert_not(dispatch_flags(dp, "192.0.2.10") & FW_SF_BW);
	/* and with the subject */
	cr_assert_eq(fw_policy_bw_set(&s.policy, 1000, false, 0, NULL, 0), 0);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	cr_assert_eq(fake_bw_rate(dp, id), 1000);
	e = fw_reg_get(&reg, "web", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(fake_bw_rate(dp, id), 0);
	fw_policy_free(&s.policy);
}
