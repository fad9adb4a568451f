// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The learner over the in-memory data plane: the leases a DNS answer
 * writes (and does not), their renewal while a connection is open, garbage
 * collection, the per-subject cap, and a restart that keeps the names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <time.h>

#include "dns/learn.h"
#include "helpers.h"

#define DNSP_FORWARD (-1)

static struct fw_dp *dp;
static struct fw_registry reg;
static struct fw_learn *learn;
static struct fw_learn_config cfg;
static __u32 sid; /* the subject "web", 192.0.2.10, allowed *.example.com */

static void add_subject(const char *name, const char *addr, const char *allow)
{
	struct fw_subject_spec s;

	spec_init(&s, name, addr, NULL);
	if (allow)
		rule_add(&s.policy, "allow", allow);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	fw_policy_free(&s.policy);
}

static void start(void)
{
	cr_assert_eq(fw_learn_new(&cfg, &reg, &learn), 0);
}

static void setup(void)
{
	dp = fake_dp_new();
	cr_assert_not_null(dp);
	reg_start(&reg, dp);
	fw_learn_config_init(&cfg);
	cfg.event_interval_ns = 0;
	add_subject("web", "192.0.2.10", "*.example.com");
	sid = fw_reg_find(&reg, "web")->id;
}

static void teardown(void)
{
	fw_learn_free(learn);
	learn = NULL;
	fw_reg_free(&reg);
	fake_dp_free(dp);
}

TestSuite(learn, .init = setup, .fini = teardown);

/* A client's query and the answer the upstream gave, through the proxy's
 * hooks; returns the decision and *answered the learn hook's result. */
static int resolve(const char *client, const char *qname, const char *const *addrs, size_t n,
		   __u32 ttl, int *answered)
{
	struct fw_ip c = ip_of(client);
	struct fw_dns_query q = {.qtype = 1, .qclass = 1};
	struct fw_dns_answer a = {.naddrs = (__u32)n};
	__u64 token;
	int rc;

	snprintf(q.name, sizeof(q.name), "%s", qname);
	q.name_len = strlen(q.name);
	for (size_t i = 0; i < n; i++) {
		a.addrs[i].ip = ip_of(addrs[i]);
		a.addrs[i].ttl = ttl;
	}
	rc = fw_learn_decide(learn, &c, &q, &token);
	*answered = fw_learn_answer(learn, &c, &q, token, &a);
	fw_learn_flush(learn); /* as the proxy does once its answers left */
	return rc;
}

static __u64 lease_left_s(__u32 id, const char *addr)
{
	struct fw_ip a = ip_of(addr);
	struct fw_lease v;
	__u64 now = fw_now_ns();

	cr_assert_eq(fake_lease_get(dp, id, &a, &v), 0, "no lease for %s", addr);
	return v.expires_ns > now ? (v.expires_ns - now + FW_NSEC_PER_SEC / 2) / FW_NSEC_PER_SEC
				  : 0;
}

Test(learn, an_allowed_answer_writes_leases_within_the_clamps)
{
	const char *one[] = {"203.0.113.5"}, *two[] = {"203.0.113.6"}, *three[] = {"203.0.113.7"};
	int ans;

	start();
	/* lease = clamp(ttl + 60, 60, 360) */
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", one, 1, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(lease_left_s(sid, "203.0.113.5"), 90);
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", two, 1, 86400, &ans), DNSP_FORWARD);
	cr_assert_eq(lease_left_s(sid, "203.0.113.6"), 360, "capped at lease_max_s");
	cfg.lease_add_s = 0;
	fw_learn_set_config(learn, &cfg);
	cr_assert_eq(resolve("192.0.2.10", "cdn.example.com", three, 1, 5, &ans), DNSP_FORWARD);
	cr_assert_eq(lease_left_s(sid, "203.0.113.7"), 60, "raised to lease_min_s");
	cr_assert_eq(fw_learn_count(learn, sid), 3);
	cr_assert_eq(fake_learned_count(dp, sid), 3);
	cr_assert_eq(fake_names_count(dp), 2, "each name kept once for a restart");
}

Test(learn, a_denied_name_or_an_unknown_source_writes_nothing)
{
	const char *addr[] = {"203.0.113.5"};
	int ans;

	start();
	cr_assert_eq(resolve("192.0.2.10", "evil.test", addr, 1, 30, &ans), FW_DNS_RCODE_NXDOMAIN);
	cr_assert_neq(ans, 0);
	cr_assert_eq(resolve("192.0.2.77", "api.example.com", addr, 1, 30, &ans),
		     FW_DNS_RCODE_NXDOMAIN);
	cr_assert_neq(ans, 0);
	cr_assert_eq(fake_learned_count(dp, ~0u), 0);
	cr_assert_eq(fake_names_count(dp), 0);
	cr_assert_eq(fw_learn_count(learn, sid), 0);
}

Test(learn, ports_of_the_rule_become_the_leases_port_set)
{
	const char *addr[] = {"203.0.113.5"};
	struct fw_subject_spec s;
	struct fw_ip a = ip_of("203.0.113.5");
	struct fw_lease v;
	const long ports[] = {443, 8443};
	char err[128];
	int ans;

	spec_init(&s, "web", "192.0.2.10", NULL);
	cr_assert_eq(
		fw_policy_add_rule(&s.policy, "allow", "*.example.com", ports, 2, err, sizeof(err)),
		0);
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	fw_policy_free(&s.policy);
	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &v), 0);
	cr_assert_neq(v.portset, 0, "reachable on the rule's ports only");
	cr_assert_eq(fake_lports_count(dp, sid), 2);
}

Test(learn, refresh_renews_leases_with_an_open_connection)
{
	const char *addrs[] = {"203.0.113.5", "203.0.113.6"};
	struct fw_ip busy = ip_of("203.0.113.5"), idle = ip_of("203.0.113.6");
	struct fw_conn_key k = {.subject = sid, .sport = 40000, .dport = 443, .dst = busy};
	struct fw_conn c = {0};
	struct fw_lease before_busy, before_idle, after;
	struct timespec pause = {0, 20 * 1000 * 1000};
	struct fw_learn_stats st;
	int ans;

	/* leases of exactly lease_min_s: a renewal moves them forward */
	cfg.lease_add_s = 0;
	cfg.lease_min_s = 100;
	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addrs, 2, 0, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_lease_get(dp, sid, &busy, &before_busy), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &idle, &before_idle), 0);
	nanosleep(&pause, NULL);
	c.last_seen_ns = fw_now_ns();
	fake_conn_put(dp, &k, &c);

	cr_assert_eq(fw_learn_tick(learn), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &busy, &after), 0);
	cr_assert_gt(after.expires_ns, before_busy.expires_ns, "the open connection's lease grew");
	cr_assert_eq(fake_lease_get(dp, sid, &idle, &after), 0);
	cr_assert_eq(after.expires_ns, before_idle.expires_ns, "an idle lease is left alone");
	cr_assert_eq(fake_conns_count(dp, sid), 1, "an open connection's record stays");

	/* the connection ends: one last renewal, marked in its record */
	nanosleep(&pause, NULL);
	cr_assert_eq(fake_lease_get(dp, sid, &busy, &before_busy), 0);
	c.closed_ns = fw_now_ns();
	fake_conn_put(dp, &k, &c);
	nanosleep(&pause, NULL);
	cr_assert_eq(fw_learn_tick(learn), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &busy, &after), 0);
	cr_assert_gt(after.expires_ns, before_busy.expires_ns);
	fw_learn_get_stats(learn, &st);
	cr_assert_eq(st.renewed, 1);
	cr_assert_eq(st.grace, 1);
}

/* The renewal on a connection's record lengthens, never shortens: a lease
 * of lease_max_s keeps its end through an open connection's refresh tick,
 * and through the last renewal once the connection closes (no grace is
 * counted, nothing was extended). */
Test(learn, refresh_never_shortens_a_long_lease)
{
	const char *addr[] = {"203.0.113.5"};
	struct fw_ip a = ip_of("203.0.113.5");
	struct fw_conn_key k = {.subject = sid, .sport = 40000, .dport = 443, .dst = a};
	struct fw_conn c = {0};
	struct fw_lease before, after;
	struct fw_learn_stats st;
	int ans;

	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 86400, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &before), 0);
	cr_assert_eq(lease_left_s(sid, "203.0.113.5"), cfg.lease_max_s);

	c.last_seen_ns = fw_now_ns();
	fake_conn_put(dp, &k, &c);
	cr_assert_eq(fw_learn_tick(learn), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &after), 0);
	cr_assert_eq(after.expires_ns, before.expires_ns, "an open connection kept the long lease");

	c.closed_ns = fw_now_ns();
	fake_conn_put(dp, &k, &c);
	cr_assert_eq(fw_learn_tick(learn), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &after), 0);
	cr_assert_eq(after.expires_ns, before.expires_ns,
		     "a closed connection's last renewal shortened the lease to %llu s",
		     (unsigned long long)lease_left_s(sid, "203.0.113.5"));
	cr_assert_eq(lease_left_s(sid, "203.0.113.5"), cfg.lease_max_s);
	fw_learn_get_stats(learn, &st);
	cr_assert_eq(st.renewed, 0);
	cr_assert_eq(st.grace, 0);
}

Test(learn, gc_expires_leases_past_their_end)
{
	const char *addr[] = {"203.0.113.5"};
	struct timespec pause = {0, 2 * 1000 * 1000};
	struct fw_ip a = ip_of("203.0.113.5");
	struct fw_lease v;
	int ans;

	cfg.lease_add_s = cfg.lease_min_s = 0;
	cfg.gc_grace_ns = 0;
	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 0, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_learned_count(dp, sid), 1);
	cr_assert_eq(fake_lease_names_count(dp, sid), 1);
	nanosleep(&pause, NULL);
	cr_assert_eq(fw_learn_tick(learn), 0);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &v), -ENOENT);
	cr_assert_eq(fake_lease_names_count(dp, sid), 0);
	cr_assert_eq(fake_names_count(dp), 0, "a name nothing refers to goes too");
	cr_assert_eq(fw_learn_count(learn, sid), 0);
}

Test(learn, the_per_subject_cap_holds_and_spares_other_subjects)
{
	const char *mine[] = {"203.0.113.1", "203.0.113.2", "203.0.113.3"};
	const char *theirs[] = {"198.51.100.1", "198.51.100.2"};
	struct fw_ip first = ip_of("203.0.113.1"), last = ip_of("203.0.113.3");
	struct fw_lease v;
	__u32 other;
	int ans;

	add_subject("db", "192.0.2.20", "*.example.com");
	other = fw_reg_find(&reg, "db")->id;
	cfg.max_per_subject = 2;
	start();
	cr_assert_eq(resolve("192.0.2.10", "a.example.com", mine, 3, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_learned_count(dp, sid), 2);
	cr_assert_eq(fake_lease_get(dp, sid, &first, &v), -ENOENT, "the oldest is evicted");
	cr_assert_eq(fake_lease_get(dp, sid, &last, &v), 0);
	cr_assert_eq(resolve("192.0.2.20", "b.example.com", theirs, 2, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	cr_assert_eq(fake_learned_count(dp, other), 2);
	cr_assert_eq(fake_learned_count(dp, sid), 2);
}

Test(learn, names_survive_a_restart_and_still_revoke)
{
	const char *addr[] = {"203.0.113.5"};
	struct fw_ip a = ip_of("203.0.113.5");
	struct fw_learn_info info;
	struct fw_subject_spec s;
	struct fw_lease v;
	int ans;

	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);

	/* fastwalld stops; the kernel keeps everything */
	fw_learn_free(learn);
	learn = NULL;
	fw_reg_free(&reg);
	cr_assert_eq(fake_learned_count(dp, sid), 1);

	cr_assert_eq(fw_reg_init(&reg, dp), 0);
	add_subject("web", "192.0.2.10", "*.example.com"); /* the configuration replayed */
	cr_assert_eq(fw_reg_find(&reg, "web")->id, sid);
	start();
	cr_assert_eq(fw_learn_adopt(learn, false), 0);
	cr_assert_eq(fw_learn_lookup(learn, sid, &a, &info), 0);
	cr_assert_eq(info.nnames, 1);
	cr_assert_str_eq(info.names[0], "api.example.com");
	cr_assert_not(info.adopted, "known by name again");

	/* the policy stops allowing the name: the adopted lease is revoked */
	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "*.example.org");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	fw_policy_free(&s.policy);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &v), -ENOENT);
	cr_assert_eq(fw_learn_count(learn, sid), 0);
}

Test(learn, a_removed_subjects_leases_go_with_the_reap)
{
	const char *addr[] = {"203.0.113.5"};
	struct fw_entry *e;
	int ans;

	start();
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 30, &ans), DNSP_FORWARD);
	cr_assert_eq(ans, 0);
	e = fw_reg_get(&reg, "web", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	cr_assert_eq(resolve("192.0.2.10", "api.example.com", addr, 1, 30, &ans),
		     FW_DNS_RCODE_NXDOMAIN, "a removed subject's address is an unknown source");
	cr_assert_eq(fw_reg_reap(&reg, 0), 1);
	cr_assert_eq(fake_learned_count(dp, sid), 0);
	cr_assert_eq(fw_learn_count(learn, sid), 0);
	cr_assert_eq(fake_names_count(dp), 0);
}

Test(learn, an_answer_is_judged_on_the_policy_of_when_it_arrives)
{
	struct fw_ip c = ip_of("192.0.2.10"), a = ip_of("203.0.113.5");
	struct fw_dns_query q = {.qtype = 1, .qclass = 1};
	struct fw_dns_answer ans = {.naddrs = 1};
	struct fw_subject_spec s;
	struct fw_lease v;
	__u64 token;

	start();
	snprintf(q.name, sizeof(q.name), "api.example.com");
	ans.addrs[0].ip = a;
	ans.addrs[0].ttl = 30;
	cr_assert_eq(fw_learn_decide(learn, &c, &q, &token), DNSP_FORWARD);
	/* the policy changes while the upstream answers */
	spec_init(&s, "web", "192.0.2.10", NULL);
	rule_add(&s.policy, "allow", "*.example.org");
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	fw_policy_free(&s.policy);
	cr_assert_eq(fw_learn_answer(learn, &c, &q, token, &ans), -EACCES);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &v), -ENOENT);
}

Test(learn, an_answer_for_an_address_that_changed_subject_teaches_nothing)
{
	struct fw_ip c = ip_of("192.0.2.10"), a = ip_of("203.0.113.5");
	struct fw_dns_query q = {.qtype = 1, .qclass = 1};
	struct fw_dns_answer ans = {.naddrs = 1};
	struct fw_entry *e;
	struct fw_lease v;
	__u64 token;
	__u32 other;

	start();
	snprintf(q.name, sizeof(q.name), "api.example.com");
	ans.addrs[0].ip = a;
	ans.addrs[0].ttl = 30;
	cr_assert_eq(fw_learn_decide(learn, &c, &q, &token), DNSP_FORWARD);
	/* while the upstream answers, web goes and db takes its address */
	e = fw_reg_get(&reg, "web", false);
	cr_assert_eq(fw_reg_unbind(&reg, e), 0);
	fw_reg_put(&reg, e);
	add_subject("db", "192.0.2.10", "*.example.com");
	other = fw_reg_find(&reg, "db")->id;
	cr_assert_neq(other, sid);
	cr_assert_eq(fw_learn_answer(learn, &c, &q, token, &ans), -ESTALE);
	cr_assert_eq(fake_lease_get(dp, sid, &a, &v), -ENOENT);
	cr_assert_eq(fake_lease_get(dp, other, &a, &v), -ENOENT);
	cr_assert_eq(fake_learned_count(dp, ~0u), 0);
}

static char last_reason[32];

static void sink(void *ctx, const struct fw_learn_event *ev)
{
	(void)ctx;
	snprintf(last_reason, sizeof(last_reason), "%s", fw_dns_reason_name(ev->reason));
}

Test(learn, denied_queries_say_why)
{
	struct fw_subject_spec s;
	const char *addr[] = {"203.0.113.5"};
	int ans;

	spec_init(&s, "held", "192.0.2.30", NULL);
	rule_add(&s.policy, "allow", "*.example.com");
	s.state = FW_STATE_DENYING;
	cr_assert_eq(fw_reg_upsert(&reg, &s, FW_ORIGIN_STATIC, NULL), 0);
	fw_policy_free(&s.policy);
	cfg.event_interval_ns = 1;
	start();
	fw_learn_set_event_sink(learn, sink, NULL);

	cr_assert_eq(resolve("192.0.2.30", "api.example.com", addr, 1, 30, &ans),
		     FW_DNS_RCODE_NXDOMAIN);
	cr_assert_str_eq(last_reason, "dns-denying");
	cr_assert_eq(resolve("192.0.2.10", "evil.test", addr, 1, 30, &ans), FW_DNS_RCODE_NXDOMAIN);
	cr_assert_str_eq(last_reason, "dns-denied-name");
	cr_assert_eq(resolve("192.0.2.99", "api.example.com", addr, 1, 30, &ans),
		     FW_DNS_RCODE_NXDOMAIN);
	cr_assert_str_eq(last_reason, "dns-unknown-source");
	cr_assert_eq(fake_learned_count(dp, ~0u), 0);
}
