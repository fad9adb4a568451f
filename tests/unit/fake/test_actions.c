// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Sandbox Actions handler over the in-memory data plane: the
 * absent -> denying -> active lifecycle through the handler's entry points
 * (SET_BINDING, the hooks, REMOVE_BINDING, policy pushes), fencing and
 * stale calls answered as the protocol says, and what the data plane holds
 * after each answer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>

#include "dns/learn.h"
#include "helpers.h"
#include "protocol/actions.h"
#include "datapath/dispatch.h"

#define DNSP_FORWARD (-1)
#define SANDBOX_IP   "192.0.2.8"

static struct fw_dp *dp;
static struct fw_registry reg;
static struct fw_actions act;
static struct fw_learn *learn;

static void setup(void)
{
	struct fw_actions_opts o = {.grace_ns = 3600 * FW_NSEC_PER_SEC,
				    .pending_ttl_ns = 30 * FW_NSEC_PER_SEC};
	struct fw_learn_config lc;

	dp = fake_dp_new();
	cr_assert_not_null(dp);
	reg_start(&reg, dp);
	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	cr_assert_eq(fw_learn_new(&lc, &reg, &learn), 0);
	cr_assert_eq(fw_actions_init(&act, &reg, &o), 0);
}

static void teardown(void)
{
	fw_actions_fini(&act);
	fw_learn_free(learn);
	fw_reg_free(&reg);
	fake_dp_free(dp);
}

TestSuite(actions, .init = setup, .fini = teardown);

#define POLICY_ALLOW_DOCS                                                                          \
	"\"{\\\"defaultAction\\\":\\\"deny\\\",\\\"egress\\\":[{\\\"action\\\":\\\"allow\\\","     \
	"\\\"target\\\":\\\"198.51.100.0/24\\\"},{\\\"action\\\":\\\"allow\\\",\\\"target\\\":"    \
	"\\\"*.example.com\\\"}]}\""

/* One envelope through fw_actions_post; returns the status. input is the
 * JSON text of binding.input (a quoted string or null), hook a hook name;
 * either may be NULL. */
static int post(const char *op, const char *uid, const char *rt, const char *att, const char *ip,
		const char *input, const char *hook, long gen)
{
	char body[4096];
	struct fw_reply r;
	int n, status;

	n = snprintf(body, sizeof(body),
		     "{\"apiVersion\":\"sandbox.fast.io/actions/v1\",\"operation\":\"%s\","
		     "\"invocationId\":\"sha256:1\",\"sandbox\":{\"uid\":\"%s\",\"name\":\"sb\","
		     "\"namespace\":\"t\"},\"revision\":{\"specGeneration\":%ld,"
		     "\"runtimeInstanceId\":\"%s\",\"attachmentId\":\"%s\",\"routeGeneration\":1},"
		     "\"attachment\":{\"network\":{\"ip\":\"%s\",\"gateway\":\"192.0.2.1\","
		     "\"privateCidr\":\"192.0.2.0/24\",\"hostVeth\":\"veth-t\"}}",
		     op, uid, gen, rt, att, ip);
	if (input)
		n += snprintf(body + n, sizeof(body) - (size_t)n, ",\"binding\":{\"input\":%s}",
			      input);
	if (hook)
		n += snprintf(body + n, sizeof(body) - (size_t)n,
			      ",\"hook\":{\"name\":\"%s\",\"sequence\":2}", hook);
	snprintf(body + n, sizeof(body) - (size_t)n, "}");
	fw_actions_post(&act, body, strlen(body), &r);
	status = r.status;
	fw_reply_free(&r);
	return status;
}

static int set_binding(const char *uid, const char *rt, const char *att, const char *ip,
		       const char *input)
{
	return post("SET_BINDING", uid, rt, att, ip, input, NULL, 4);
}

static int hook(const char *uid, const char *rt, const char *att, const char *name)
{
	return post("LIFECYCLE_HOOK", uid, rt, att, SANDBOX_IP, NULL, name, 4);
}

static int remove_binding(const char *uid, const char *rt, const char *att)
{
	return post("REMOVE_BINDING", uid, rt, att, SANDBOX_IP, NULL, NULL, 4);
}

static __u8 state_at(const char *ip)
{
	struct fw_ip a = ip_of(ip);
	struct fw_subject ks;

	return fw_dp_dispatch_lookup(dp, &a, &ks) ? FW_STATE_ABSENT : ks.state;
}

/* The DNS proxy's decision for a query from ip. */
static int dns_decide(const char *ip, const char *name)
{
	struct fw_ip c = ip_of(ip);
	struct fw_dns_query q = {.qtype = 1, .qclass = 1};
	__u64 token;

	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	return fw_learn_decide(learn, &c, &q, &token);
}

Test(actions, absent_denying_active_and_removed)
{
	__u32 id;

	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ABSENT);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	id = dispatch_id(dp, SANDBOX_IP);
	cr_assert_neq(id, 0);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING, "deny-first until data-plane-ready");
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), -1, "no rules while denying");
	cr_assert_eq(dns_decide(SANDBOX_IP, "api.example.com"), FW_DNS_RCODE_NXDOMAIN);

	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.runtime-ready"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING);

	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), id, "activation keeps the id");
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_DENY);
	cr_assert_eq(dns_decide(SANDBOX_IP, "api.example.com"), DNSP_FORWARD);
	cr_assert_eq(dns_decide(SANDBOX_IP, "evil.test"), FW_DNS_RCODE_NXDOMAIN);

	/* a lost response: the Fastlet sends the hook again */
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);

	cr_assert_eq(remove_binding("u-1", "rt-1", "att-1"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ABSENT);
	cr_assert_eq(fake_dispatch_count(dp), 0);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), -1);
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), -1);
	cr_assert_eq(dns_decide(SANDBOX_IP, "api.example.com"), FW_DNS_RCODE_NXDOMAIN);
	/* removal is idempotent */
	cr_assert_eq(remove_binding("u-1", "rt-1", "att-1"), 200);
}

Test(actions, an_active_subject_takes_a_new_policy_in_place)
{
	__u32 id;

	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	id = dispatch_id(dp, SANDBOX_IP);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP,
				 "\"{\\\"defaultAction\\\":\\\"allow\\\"}\""),
		     200);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), id, "a policy update never resets a sandbox");
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);
	cr_assert_eq(verdict(dp, id, "203.0.113.7"), FW_ACTION_ALLOW);

	/* input null: back to denying, and the next hook has nothing to apply */
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, "null"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING);
	cr_assert_eq(dns_decide(SANDBOX_IP, "api.example.com"), FW_DNS_RCODE_NXDOMAIN);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 409);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING);
}

Test(actions, hooks_for_unknown_or_unfenced_subjects_are_409)
{
	cr_assert_eq(hook("u-9", "rt-1", "att-1", "sandbox.data-plane-ready"), 409);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-OLD", "sandbox.data-plane-ready"), 409);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING, "a stale hook activates nothing");
}

Test(actions, a_rebind_starts_over_and_stale_calls_change_nothing)
{
	const char *addr[] = {"203.0.113.5"};
	struct fw_dns_query q = {.qtype = 1, .qclass = 1};
	struct fw_dns_answer ans = {.naddrs = 1};
	struct fw_ip client = ip_of(SANDBOX_IP);
	struct fw_reply r;
	__u64 token;
	__u32 id, id2;

	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	id = dispatch_id(dp, SANDBOX_IP);
	/* something learned under the first binding */
	snprintf(q.name, sizeof(q.name), "api.example.com");
	ans.addrs[0].ip = ip_of(addr[0]);
	ans.addrs[0].ttl = 30;
	cr_assert_eq(fw_learn_decide(learn, &client, &q, &token), DNSP_FORWARD);
	cr_assert_eq(fw_learn_answer(learn, &client, &q, token, &ans), 0);
	cr_assert_eq(fake_learned_count(dp, id), 1);

	/* a new attachment: a new fence, deny-first under a fresh id */
	cr_assert_eq(set_binding("u-1", "rt-1", "att-2", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	id2 = dispatch_id(dp, SANDBOX_IP);
	cr_assert_neq(id2, id);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING);
	cr_assert_eq(fake_learned_count(dp, id2), 0, "nothing learned carries over");
	cr_assert_eq(fw_reg_id_state(&reg, id, NULL), -1);

	/* the old fence's calls: a hook is 409, a removal 200 and ignored */
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 409);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING);
	cr_assert_eq(remove_binding("u-1", "rt-1", "att-1"), 200);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), id2, "a stale removal keeps the new binding");

	/* a policy push of another generation than the binding's is refused */
	cr_assert_eq(hook("u-1", "rt-1", "att-2", "sandbox.data-plane-ready"), 200);
	fw_actions_policy(&act, "PUT", "u-1", "3", "{\"defaultAction\":\"allow\"}", 25, &r);
	cr_assert_eq(r.status, 409);
	fw_reply_free(&r);
	cr_assert_eq(verdict(dp, id2, "203.0.113.7"), FW_ACTION_DENY);
	fw_actions_policy(&act, "PUT", "u-1", "4", "{\"defaultAction\":\"allow\"}", 25, &r);
	cr_assert_eq(r.status, 200);
	fw_reply_free(&r);
	cr_assert_eq(verdict(dp, id2, "203.0.113.7"), FW_ACTION_ALLOW);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), id2);
}

Test(actions, a_bad_request_registers_nothing)
{
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, "\"{\\\"egress\\\":7}\""),
		     400);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", "192.0.2.300", POLICY_ALLOW_DOCS), 400);
	cr_assert_eq(
		post("SET_BINDING", "u-1", "", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS, NULL, 4),
		400);
	cr_assert_eq(fake_dispatch_count(dp), 0);
	cr_assert_eq(fw_reg_count(&reg), 0);
}

/* The uid header of a push (credential-push.md): trimmed, 1-128 bytes, no
 * path separator or control character; a bad one is 400 before anything
 * is looked up, a good one for an unknown sandbox 404 on GET. */
static int push_uid(const char *uid)
{
	struct fw_reply r;
	int status;

	fw_actions_policy(&act, "GET", uid, NULL, NULL, 0, &r);
	status = r.status;
	fw_reply_free(&r);
	return status;
}

Test(actions, a_push_uid_header_is_checked)
{
	char uid[FW_UID_MAX + 2];

	cr_assert_eq(push_uid("u-1"), 404);
	cr_assert_eq(push_uid(" \tu-1\t "), 404, "trimmed");
	cr_assert_eq(push_uid(NULL), 400);
	cr_assert_eq(push_uid(""), 400);
	cr_assert_eq(push_uid(" \t "), 400);
	cr_assert_eq(push_uid("../u-1"), 400);
	cr_assert_eq(push_uid("a/b"), 400);
	cr_assert_eq(push_uid("a\\b"), 400);
	cr_assert_eq(push_uid("a\nb"), 400);
	cr_assert_eq(push_uid("a\x7f"), 400);
	memset(uid, 'u', sizeof(uid));
	uid[FW_UID_MAX] = '\0';
	cr_assert_eq(push_uid(uid), 404, "%d bytes is the longest", FW_UID_MAX);
	uid[FW_UID_MAX] = 'u';
	uid[FW_UID_MAX + 1] = '\0';
	cr_assert_eq(push_uid(uid), 400, "%d bytes is one too many", FW_UID_MAX + 1);
}

Test(actions, an_envelope_uid_past_the_limit_registers_nothing)
{
	char uid[FW_UID_MAX + 3];

	memset(uid, 'u', sizeof(uid));
	uid[FW_UID_MAX + 1] = '\0';
	cr_assert_eq(set_binding(uid, "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 400);
	uid[FW_UID_MAX + 2] = '\0';
	uid[FW_UID_MAX + 1] = 'u';
	cr_assert_eq(set_binding(uid, "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 400);
	cr_assert_eq(fake_dispatch_count(dp), 0);
	cr_assert_eq(fw_reg_count(&reg), 0);
	uid[FW_UID_MAX] = '\0';
	cr_assert_eq(set_binding(uid, "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(fw_reg_count(&reg), 1);
}

Test(actions, a_data_plane_failure_is_500_and_the_retry_converges)
{
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	fake_fail_next(dp, FAKE_POLICY_SWAP, -ENOMEM);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 500);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING, "fail closed");
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200,
		     "the pending policy was kept for the retry");
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);

	fake_fail_next(dp, FAKE_DISPATCH_DEL, -EIO);
	cr_assert_eq(remove_binding("u-1", "rt-1", "att-1"), 500);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE, "still registered for the retry");
	cr_assert_eq(remove_binding("u-1", "rt-1", "att-1"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ABSENT);
}

Test(actions, a_static_subjects_address_is_not_for_a_sandbox)
{
	struct fw_subject_spec s;
	__u32 sid;

	spec_init(&s, "static-a", SANDBOX_IP, NULL);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	sid = dispatch_id(dp, SANDBOX_IP);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 409);
	cr_assert_eq(set_binding("static-a", "rt-1", "att-1", "192.0.2.9", POLICY_ALLOW_DOCS), 409);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), sid);
	cr_assert_eq(dispatch_id(dp, "192.0.2.9"), 0);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);
}

Test(actions, a_restart_keeps_enforcing_until_the_replay)
{
	struct fw_actions_opts o = {.grace_ns = 3600 * FW_NSEC_PER_SEC};
	char before[sizeof(act.instance_id)];
	__u32 id;

	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	id = dispatch_id(dp, SANDBOX_IP);
	snprintf(before, sizeof(before), "%s", act.instance_id);

	/* fastwalld restarts over the same kernel state */
	fw_actions_fini(&act);
	fw_learn_free(learn);
	learn = NULL;
	fw_reg_free(&reg);
	cr_assert_eq(fw_reg_init(&reg, dp), 0);
	cr_assert_eq(fw_actions_init(&act, &reg, &o), 0);
	cr_assert_str_neq(act.instance_id, before, "a new instanceId tells the Fastlet");
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE, "the kernel kept enforcing");
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);

	/* the Fastlet replays SET_BINDING and the hook: same fence, same id */
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), id);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);
	cr_assert_not(fw_reg_find(&reg, "u-1")->adopted);
}

Test(actions, an_address_change_under_the_same_fence_moves_dispatch)
{
	__u32 id;

	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-1", "rt-1", "att-1", "sandbox.data-plane-ready"), 200);
	id = dispatch_id(dp, SANDBOX_IP);
	cr_assert_eq(set_binding("u-1", "rt-1", "att-1", "192.0.2.9", POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(dispatch_id(dp, "192.0.2.9"), id, "same fence, same subject");
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), 0);
	cr_assert_eq(state_at("192.0.2.9"), FW_STATE_ACTIVE);
	cr_assert_eq(verdict(dp, id, "198.51.100.7"), FW_ACTION_ALLOW);
}

Test(actions, a_new_sandbox_takes_over_an_address_and_keeps_it)
{
	__u32 idb;

	cr_assert_eq(set_binding("u-a", "rt-a", "att-a", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	cr_assert_eq(hook("u-a", "rt-a", "att-a", "sandbox.data-plane-ready"), 200);
	cr_assert_eq(set_binding("u-b", "rt-b", "att-b", SANDBOX_IP, POLICY_ALLOW_DOCS), 200);
	idb = dispatch_id(dp, SANDBOX_IP);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_DENYING, "the new owner starts denying");
	cr_assert_eq(remove_binding("u-a", "rt-a", "att-a"), 200);
	cr_assert_eq(dispatch_id(dp, SANDBOX_IP), idb, "the old sandbox's removal spares it");
	cr_assert_eq(hook("u-b", "rt-b", "att-b", "sandbox.data-plane-ready"), 200);
	cr_assert_eq(state_at(SANDBOX_IP), FW_STATE_ACTIVE);
}
