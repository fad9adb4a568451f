// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Learned leases, the DNS side of the policy (dns/learn.c): what an
 * answer teaches, for how long, with which ports, and how a policy
 * change retires it. */
#include <unistd.h>

#include "verdicts.h"

/* ---- learned leases: the DNS side of the policy (dns/learn.c) ---------------- */

static const struct subject_def nu_v1 = {
	.name = "nu",
	.addrs = {NU4},
	.default_action = "deny",
	.rules = {"deny bad.example.com", "allow *.example.com", "allow pypi.org"},
};

/* *.example.com is no longer allowed */
static const struct subject_def nu_v2 = {
	.name = "nu",
	.addrs = {NU4},
	.default_action = "deny",
	.rules = {"allow pypi.org", "allow files.example.com"},
};

static int decide(struct fw_learn *l, const char *client, const char *name)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	struct fw_ip c = ip_of(client);
	__u64 token;

	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	return fw_learn_decide(l, &c, &q, &token);
}

/* An allowed answer for name from NU4 teaching addrs (ttl each). */
static int answer(struct fw_learn *l, const char *name, const char *const *addrs, __u32 ttl)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	static struct fw_dns_answer a;
	struct fw_ip c = ip_of(NU4);

	memset(&a, 0, sizeof(a));
	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	for (size_t i = 0; addrs[i]; i++) {
		a.addrs[a.naddrs].ip = ip_of(addrs[i]);
		a.addrs[a.naddrs++].ttl = ttl;
	}
	return fw_learn_answer(l, &c, &q, id_of("nu"), &a);
}

static int verdict_to(const char *src, const char *dst, __u16 sport, __u8 flags)
{
	struct pkt_spec p = TCP4(src, dst, sport, 443, .tcp_flags = flags);

	return run_frame(prog_fd(FROM_SANDBOX), &p);
}

__u64 kernel_expiry(__u32 id, const char *addr)
{
	struct fw_learned_key k = {.subject = id, .addr = ip_of(addr)};
	struct fw_lease v;

	return bpf_map_lookup_elem(t.dp->learned_fd, &k, &v) ? 0 : v.expires_ns;
}

/* ---- learned addresses carry the ports of the rules that taught them ---- */

#define RHO4 "10.42.14.10"

static const struct subject_def rho_v1 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow api.example.com ports=443", "allow alt.example.com ports=8080,53",
		  "allow open.example.com", "allow 192.0.2.96/30 ports=22"},
};

/* after the restart: api.example.com goes */
static const struct subject_def rho_v3 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow open.example.com"},
};

/* alt.example.com goes, api.example.com moves to 8443 */
static const struct subject_def rho_v2 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow api.example.com ports=8443", "allow open.example.com"},
};

static int answer_for(struct fw_learn *l, const char *subject, const char *client, const char *name,
		      const char *addr)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	static struct fw_dns_answer a;
	struct fw_ip c = ip_of(client);

	memset(&a, 0, sizeof(a));
	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	a.addrs[0].ip = ip_of(addr);
	a.addrs[0].ttl = 300;
	a.naddrs = 1;
	return fw_learn_answer(l, &c, &q, id_of(subject), &a);
}

struct port_probe {
	const char *what;
	struct pkt_spec pkt;
	int verdict;
	__u32 reason;
};

/* Runs each probe from rho; the reason is read off rho's counters. */
static void probe_all(const char *prefix, const struct port_probe *p, size_t n)
{
	__u32 id = id_of("rho");

	for (size_t i = 0; i < n; i++) {
		__u64 before[FW_REASON_MAX], after[FW_REASON_MAX];
		__u32 reason = FW_REASON_MAX;
		int v;

		fw_dp_subject_stats_read(t.dp, id, before);
		v = run_frame(prog_fd(FROM_SANDBOX), &p[i].pkt);
		fw_dp_subject_stats_read(t.dp, id, after);
		for (__u32 r = 0; r < FW_REASON_MAX; r++)
			if (after[r] != before[r])
				reason = r;
		result(v == p[i].verdict && (v == TC_ACT_OK || reason == p[i].reason), p[i].what,
		       "%s: verdict %d reason %u", prefix, v, reason);
	}
}

size_t lports_held(__u32 id)
{
	return (size_t)subject_keys(t.dp->learned_ports_fd, sizeof(struct fw_port_rule_key), id);
}

void scenario_learned_ports(void)
{
	const struct port_probe v1[] = {
		{"learned ports: 443 of the teaching rule passes",
		 TCP4(RHO4, "192.0.2.91", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: udp 443 passes too", UDP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_OK, 0},
		{"learned ports: port 80 drops (learned-port)", TCP4(RHO4, "192.0.2.91", 40000, 80),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: icmp drops (no port)", ICMP4(RHO4, "192.0.2.91", ICMP4_ECHO),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: a rule without ports teaches every port",
		 TCP4(RHO4, "192.0.2.92", 40000, 80), TC_ACT_OK, 0},
		{"learned ports: ...and icmp", ICMP4(RHO4, "192.0.2.92", ICMP4_ECHO), TC_ACT_OK, 0},
		{"learned ports: a port-limited cidr's port passes as the cidr",
		 TCP4(RHO4, "192.0.2.97", 40000, 22), TC_ACT_OK, 0},
		{"learned ports: the learned port there passes",
		 TCP4(RHO4, "192.0.2.97", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: neither the cidr's nor the learned port drops",
		 TCP4(RHO4, "192.0.2.97", 40000, 80), TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	const struct port_probe u[] = {
		{"learned ports: a second rule's ports are added (8080)",
		 TCP4(RHO4, "192.0.2.91", 40000, 8080), TC_ACT_OK, 0},
		{"learned ports: union keeps the first rule's 443",
		 TCP4(RHO4, "192.0.2.91", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: udp 53 of the second rule", UDP4(RHO4, "192.0.2.91", 40000, 53),
		 TC_ACT_OK, 0},
		{"learned ports: still not 80", TCP4(RHO4, "192.0.2.91", 40000, 80), TC_ACT_SHOT,
		 FW_DROP_LEARNED_PORT},
		{"learned ports: every port wins a union", TCP4(RHO4, "192.0.2.92", 40000, 9999),
		 TC_ACT_OK, 0},
	};
	const struct port_probe v2[] = {
		{"learned ports: after the policy change the new port 8443 passes",
		 TCP4(RHO4, "192.0.2.91", 40000, 8443), TC_ACT_OK, 0},
		{"learned ports: the old 443 drops", TCP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: the revoked rule's 8080 drops",
		 TCP4(RHO4, "192.0.2.91", 40000, 8080), TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	const struct port_probe adopted[] = {
		{"learned ports: after a restart the adopted lease keeps 8443",
		 TCP4(RHO4, "192.0.2.91", 40000, 8443), TC_ACT_OK, 0},
		{"learned ports: ...and still drops 443", TCP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_ip a91 = ip_of("192.0.2.91");
	__u32 id;
	int err;

	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&rho_v1) || fw_learn_new(&lc, &t.reg, &l)) {
		result(false, "learned ports: setup", NULL);
		return;
	}
	id = id_of("rho");
	err = answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.91");
	err = err ? err : answer_for(l, "rho", RHO4, "open.example.com", "192.0.2.92");
	err = err ? err : answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.97");
	result(!err, "learned ports: answers learned", "err %d", err);
	probe_all("v1", v1, sizeof(v1) / sizeof(v1[0]));
	answer_for(l, "rho", RHO4, "alt.example.com", "192.0.2.91");
	answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.92");
	probe_all("union", u, sizeof(u) / sizeof(u[0]));
	if (subject_put(&rho_v2)) {
		result(false, "learned ports: policy change", NULL);
		fw_learn_free(l);
		return;
	}
	probe_all("v2", v2, sizeof(v2) / sizeof(v2[0]));
	/* .91 on {8443}, .97 on {8443}: one set; .92 every port */
	result(lports_held(id) == 1, "learned ports: sets no lease names are deleted",
	       "%zu port entries", lports_held(id));

	/* a restart of the table: the kernel's sets are read back */
	fw_learn_free(l);
	l = NULL;
	if (fw_learn_new(&lc, &t.reg, &l) || fw_learn_adopt(l, false)) {
		result(false, "learned ports: restart", NULL);
		fw_learn_free(l);
		return;
	}
	probe_all("adopted", adopted, sizeof(adopted) / sizeof(adopted[0]));
	fw_learn_add(l, id, &a91, NULL, 600); /* extended: ports unchanged */
	probe_all("adopted, extended", adopted, sizeof(adopted) / sizeof(adopted[0]));
	result(lports_held(id) == 1, "learned ports: an adopted set stays while leases name it",
	       "%zu port entries", lports_held(id));

	/* the names were kept where the restart found them */
	{
		struct fw_learn_info info;
		struct fw_ip a92 = ip_of("192.0.2.92");
		int e1 = fw_learn_lookup(l, id, &a91, &info);

		result(!e1 && !info.adopted && info.nnames == 1 &&
			       !strcmp(info.names[0], "api.example.com"),
		       "names: after a restart the adopted address knows its name",
		       "err %d adopted %d names %zu", e1, info.adopted, info.nnames);
		e1 = fw_learn_lookup(l, id, &a92, &info);
		result(!e1 && info.nnames == 2, "names: ...both names of a shared one",
		       "err %d names %zu", e1, info.nnames);
	}
	if (subject_put(&rho_v3)) {
		result(false, "names: policy change after the restart", NULL);
		fw_learn_free(l);
		return;
	}
	result(kernel_expiry(id, "192.0.2.91") == 0 &&
		       run_frame(prog_fd(FROM_SANDBOX),
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.91", 40000, 8443)) ==
			       TC_ACT_SHOT,
	       "names: an adopted address whose name is denied now is revoked at once", NULL);
	result(kernel_expiry(id, "192.0.2.92") != 0 &&
		       run_frame(prog_fd(FROM_SANDBOX),
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.92", 40000, 80)) ==
			       TC_ACT_OK,
	       "names: one another allowed name also taught stays", NULL);
	{
		struct fw_learned_key k = {.subject = id, .addr = a91};
		struct fw_lease_names ln;

		result(bpf_map_lookup_elem(t.dp->learned_names_fd, &k, &ln) && errno == ENOENT,
		       "names: the revoked address's names record is gone", NULL);
	}
	fw_learn_free(l);
}

/* A subject's port sets are unions of its own rules' ports, chosen by the
 * names it resolves: it gets a share of fastwall_learned_ports, no more. */
void scenario_learned_ports_share(void)
{
	static char rules[12][160];
	struct subject_def sigma = {
		.name = "sigma", .addrs = {"10.42.15.10"}, .default_action = "deny"};
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	int refused = 0, learned = 0, err;
	__u32 id;

	for (int r = 0; r < 12; r++) {
		int off = snprintf(rules[r], sizeof(rules[r]), "allow n%d.share.test ports=", r);

		for (int k = 0; k < 16; k++)
			off += snprintf(rules[r] + off, sizeof(rules[r]) - (size_t)off, "%s%d",
					k ? "," : "", 1000 + r * 100 + k);
		sigma.rules[r] = rules[r];
	}
	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&sigma) || fw_learn_new(&lc, &t.reg, &l)) {
		result(false, "port share: setup", NULL);
		return;
	}
	id = id_of("sigma");
	/* address a: taught by the 8 names of the a-th 8-of-12 subset of the
	 * rules (subject_put keeps the first dozen ports of each: it reads 63
	 * characters), a union of about 96; 60 distinct sets exceed 4096 */
	for (unsigned int mask = 0, a = 0; mask < 4096 && a < 60; mask++) {
		char addr[32];

		if (__builtin_popcount(mask) != 8)
			continue;
		snprintf(addr, sizeof(addr), "198.51.100.%u", 100 + a++);
		for (int r = 0; r < 12; r++) {
			char name[32];

			if (!(mask & (1u << r)))
				continue;
			snprintf(name, sizeof(name), "n%d.share.test", r);
			err = answer_for(l, "sigma", "10.42.15.10", name, addr);
			refused += err == -ENOSPC;
			learned += !err;
		}
	}
	result(refused > 0 && lports_held(id) <= 4096,
	       "port share: a subject's port sets stop at its share of 4096 entries",
	       "%d refused, %d learned, %zu entries", refused, learned, lports_held(id));
	err = subject_put(&rho_v2);
	err = err ? err : answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.94");
	result(!err && run_frame(prog_fd(FROM_SANDBOX),
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.94", 40000, 8443)) ==
			       TC_ACT_OK,
	       "port share: a sibling still learns addresses with ports", "err %d", err);
	fw_learn_free(l);
}

void scenario_learned_leases(void)
{
	static const char *const api[] = {"192.0.2.77", "2001:db8:77::1", NULL};
	static const char *const pypi[] = {"192.0.2.78", "192.0.2.79", NULL};
	static const char *const shared[] = {"192.0.2.79", NULL};
	static const char *const more[] = {"198.51.100.71", "198.51.100.72", "198.51.100.73", NULL};
	static const char *const one_more[] = {"198.51.100.74", NULL};
	struct fw_learn_config lc;
	struct fw_learn_info info;
	struct fw_learn *l = NULL;
	__u64 now, exp, exp2;
	__u32 id;
	int v, err;

	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&nu_v1) || (err = fw_learn_new(&lc, &t.reg, &l))) {
		result(false, "learn: setup", "subject or learn table failed");
		return;
	}
	id = id_of("nu");

	/* decide */
	result(decide(l, NU4, "api.example.com") == -1, "learn: allowed wildcard name is forwarded",
	       NULL);
	result(decide(l, NU4, "API.Example.COM.") == -1,
	       "learn: case and trailing dot do not matter", NULL);
	result(decide(l, NU4, "example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: the wildcard does not cover its own suffix", NULL);
	result(decide(l, NU4, "bad.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: an earlier deny rule wins (NXDOMAIN)", NULL);
	result(decide(l, NU4, "github.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: no rule, default deny (NXDOMAIN)", NULL);
	result(decide(l, STRANGER4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: unknown source (NXDOMAIN)", NULL);
	result(decide(l, GAMMA4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: denying subject (NXDOMAIN)", NULL);
	result(decide(l, BETA4, "anything.org") == -1, "learn: default-allow subject forwards",
	       NULL);

	/* learn before the answer: the first connect passes */
	v = verdict_to(NU4, "192.0.2.77", 42000, TH_SYN);
	result(v == TC_ACT_SHOT, "learn: before the answer the address drops", "verdict %d", v);
	now = fw_now_ns();
	err = answer(l, "api.example.com", api, 30);
	v = verdict_to(NU4, "192.0.2.77", 42000, TH_SYN);
	result(!err && v == TC_ACT_OK, "learn: after the answer the first connect passes",
	       "err %d verdict %d", err, v);
	exp = kernel_expiry(id, "192.0.2.77");
	result(exp >= now + 89 * FW_NSEC_PER_SEC && exp <= fw_now_ns() + 91 * FW_NSEC_PER_SEC,
	       "learn: ttl 30 gives a 90 s lease in the kernel", "expires in %lld ms",
	       (long long)(exp - now) / 1000000);
	result(kernel_expiry(id, "2001:db8:77::1") != 0, "learn: AAAA learned too", NULL);
	answer(l, "api.example.com", api, 5);
	result(kernel_expiry(id, "192.0.2.77") == exp,
	       "learn: a shorter answer never shortens a lease", NULL);
	answer(l, "x.example.com", api, 86400);
	exp2 = kernel_expiry(id, "192.0.2.77");
	result(exp2 > exp && exp2 <= fw_now_ns() + 361 * FW_NSEC_PER_SEC,
	       "learn: ttl 24 h is capped at 360 s", "expires in %lld s",
	       (long long)(exp2 - fw_now_ns()) / (long long)FW_NSEC_PER_SEC);
	{
		struct fw_ip nowhere = ip_of(NOWHERE4);

		result(fw_learn_lookup(l, id, &nowhere, &info) == -ENOENT,
		       "learn: lookup of an address never learned", NULL);
	}
	{
		struct fw_ip a77 = ip_of("192.0.2.77");

		err = fw_learn_lookup(l, id, &a77, &info);
		result(!err && info.nnames == 2, "learn: both names that taught it are kept",
		       "err %d names %zu", err, info.nnames);
	}

	/* revocation: *.example.com goes; pypi.org stays */
	answer(l, "pypi.org", pypi, 60);
	answer(l, "files.example.com", shared, 60);
	if (subject_put(&nu_v2)) {
		result(false, "learn: policy update", "subject_put failed");
		goto out;
	}
	result(id_of("nu") == id, "learn: the policy update keeps the id", NULL);
	v = verdict_to(NU4, "192.0.2.77", 42001, TH_SYN);
	result(v == TC_ACT_SHOT && kernel_expiry(id, "192.0.2.77") == 0,
	       "learn: revoked at once when its names are no longer allowed", "verdict %d", v);
	v = verdict_to(NU4, "192.0.2.78", 42002, TH_SYN);
	result(v == TC_ACT_OK, "learn: an address of a still-allowed name stays", "verdict %d", v);
	v = verdict_to(NU4, "192.0.2.79", 42003, TH_SYN);
	result(v == TC_ACT_OK, "learn: an address with one name still allowed stays", "verdict %d",
	       v);
	result(decide(l, NU4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: the revoked name is now NXDOMAIN", NULL);
	result(answer(l, "api.example.com", api, 30) != 0 && kernel_expiry(id, "192.0.2.77") == 0,
	       "learn: an answer that raced the revocation is not learned", NULL);

	/* the cap: 4 addresses max; the oldest without a connection goes */
	lc.max_per_subject = 4;
	fw_learn_set_config(l, &lc);
	/* 78 has an open connection (42002 above); a tick records it */
	fw_learn_tick(l);
	answer(l, "pypi.org", more, 60); /* 78, 79 + 71, 72 fill it; 73 evicts */
	result(fw_learn_count(l, id) == 4, "learn: the cap holds the count", "count %zu",
	       fw_learn_count(l, id));
	/* 78 and 79 both carry a connection (42002, 42003 above) */
	result(kernel_expiry(id, "192.0.2.78") != 0 && kernel_expiry(id, "192.0.2.79") != 0,
	       "learn: addresses with an open connection are not evicted", NULL);
	result(kernel_expiry(id, "198.51.100.71") == 0 && kernel_expiry(id, "198.51.100.73") != 0,
	       "learn: the oldest address without one is", NULL);
	answer(l, "pypi.org", one_more, 60);
	result(kernel_expiry(id, "198.51.100.72") == 0 && kernel_expiry(id, "198.51.100.74") != 0,
	       "learn: and the next oldest after it", NULL);

	/* refresh: short leases, an open connection's lease is extended */
	lc.max_per_subject = 0;
	lc.lease_add_s = 0;
	lc.lease_min_s = 2;
	lc.lease_max_s = 4;
	lc.refresh_interval_ns = FW_NSEC_PER_SEC;
	lc.gc_grace_ns = 0;
	fw_learn_set_config(l, &lc);
	{
		static const char *const r[] = {"203.0.113.101", "203.0.113.102", "203.0.113.103",
						NULL};

		answer(l, "pypi.org", r, 1);
	}
	exp = kernel_expiry(id, "203.0.113.101");
	verdict_to(NU4, "203.0.113.101", 42010, TH_SYN);
	verdict_to(NU4, "203.0.113.102", 42011, TH_SYN);
	verdict_to(NU4, "203.0.113.102", 42011, TH_FIN | TH_ACK);
	usleep(1100 * 1000);
	fw_learn_tick(l);
	exp2 = kernel_expiry(id, "203.0.113.101");
	result(exp2 > exp, "learn: an open connection renews its destination's lease",
	       "before %llu after %llu", (unsigned long long)exp, (unsigned long long)exp2);
	{
		struct fw_conn c;

		result(!conn_of("nu", "203.0.113.102", 42011, 443, &c) && c.renewed &&
			       kernel_expiry(id, "203.0.113.102") > exp,
		       "learn: a closed connection gets one last renewal", NULL);
	}
	for (int i = 0; i < 3; i++) {
		verdict_to(NU4, "203.0.113.101", 42010, TH_ACK);
		usleep(1100 * 1000);
		fw_learn_tick(l);
	}
	v = verdict_to(NU4, "203.0.113.101", 42010, TH_ACK);
	result(v == TC_ACT_OK, "learn: the connection outlives lease.max (4 s) through renewals",
	       "verdict %d", v);
	v = verdict_to(NU4, "203.0.113.103", 42012, TH_SYN);
	result(v == TC_ACT_SHOT && kernel_expiry(id, "203.0.113.103") == 0,
	       "learn: without a connection the lease ran out and was collected", "verdict %d", v);

	/* release: the subject goes, so do its leases */
	{
		struct fw_entry *e = fw_reg_get(&t.reg, "nu", false);

		if (e) {
			fw_reg_unbind(&t.reg, e);
			fw_reg_put(&t.reg, e);
		}
		result(fw_learn_count(l, id) == 0 && fw_reg_id_state(&t.reg, id, NULL) < 0,
		       "learn: removing the subject drops its leases from the learner and retires "
		       "its id",
		       "count %zu, id state %d", fw_learn_count(l, id),
		       fw_reg_id_state(&t.reg, id, NULL));
		v = verdict_to(NU4, "192.0.2.78", 42020, TH_SYN);
		result(v == TC_ACT_SHOT, "learn: a retired subject's lease lets nothing through",
		       "verdict %d", v);
		/* the id is not handed out again before the reaper ran */
		if (subject_put(&nu_v1) == 0) {
			e = fw_reg_find(&t.reg, "nu");
			result(e && e->id && e->id != id,
			       "learn: a subject added before the reap gets a fresh id",
			       "id %u (retired %u)", e ? e->id : 0, id);
			e = fw_reg_get(&t.reg, "nu", false);
			if (e) {
				fw_reg_unbind(&t.reg, e);
				fw_reg_put(&t.reg, e);
			}
		} else {
			result(false, "learn: a subject added before the reap gets a fresh id",
			       "can't add it");
		}
		result(fw_reg_reap(&t.reg, 60 * FW_NSEC_PER_SEC) == 0 &&
			       kernel_expiry(id, "192.0.2.78") != 0,
		       "learn: the reaper leaves ids retired less than min_age ago", NULL);
		int reaped = fw_reg_reap(&t.reg, 0);
		__u32 key = id;
		struct fw_subject_meta m;

		result(reaped >= 2 && kernel_expiry(id, "192.0.2.78") == 0 &&
			       fw_reg_id_state(&t.reg, id, NULL) == 0 &&
			       bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) != 0,
		       "learn: the reaper deletes the retired ids' leases and metadata, then frees "
		       "them",
		       "reaped %d, expiry %llu, state %d", reaped,
		       (unsigned long long)kernel_expiry(id, "192.0.2.78"),
		       fw_reg_id_state(&t.reg, id, NULL));
	}
out:
	fw_learn_free(l);
}
