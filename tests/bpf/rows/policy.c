// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The subject's policy: CIDR rules, deny beating allow, default
 * actions, learned destinations, per-rule ports, and whole-set swaps of
 * a policy in one slot. */
#include "verdicts.h"

/* kappa after a policy swap: port 22 no longer denied, 443 -> 8443 */
static const struct subject_def kappa_v2 = {
	.name = "kappa",
	.addrs = {KAPPA4},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.0/25 ports=8443",
			"allow 198.51.100.0/24",
			"allow 203.0.113.0/24 ports=53,443",
			"deny 203.0.113.7 ports=443",
		},
};

/* mu: three whole-set changes; the third reuses the trie of the first */
static const struct subject_def mu_v1 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25", "allow 198.51.100.0/26", "deny 192.0.2.66"},
};

static const struct subject_def mu_v2 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 203.0.113.0/24", "allow 198.51.100.64/26"},
};

static const struct subject_def mu_v3 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.128/25", "allow 198.51.100.128/26", "deny 192.0.2.130"},
};

static int kappa_learned(void)
{
	return learn("kappa", "192.0.2.50", 60);
}

/* Swaps kappa's policy and checks that fastwall_ports holds exactly the
 * live generation's exceptions of kappa: none of the old set is left. */
static int kappa_swapped(void)
{
	struct fw_port_rule_key k, *prev = NULL;
	struct fw_entry *e;
	size_t live = 0, stale = 0;
	__u32 id, gen;

	if (subject_put(&kappa_v2))
		return -1;
	/* the old generation's exceptions go one grace period later */
	fw_dp_rules_settle(t.dp);
	e = fw_reg_find(&t.reg, "kappa");
	id = e ? e->id : 0;
	gen = e ? e->meta.port_state & FW_PORTSET_GEN : 0;
	while (bpf_map_get_next_key(t.dp->ports_fd, prev, &k) == 0) {
		prev = &k;
		if (k.subject != id)
			continue;
		if ((k.portset & FW_PORTSET_GEN) == gen)
			live++;
		else
			stale++;
	}
	/* 203.0.113.0/24 {53,443 allow} and 203.0.113.7 {53 allow, 443 deny}
	 * and 192.0.2.0/25 {8443 allow}: 5 exceptions */
	if (stale || live != 5) {
		printf("kappa's port exceptions after the swap: %zu live (want 5), %zu stale\n",
		       live, stale);
		return -1;
	}
	return 0;
}

/* mu v1 -> v2 -> v3: every swap writes a new generation into the trie
 * the slot has held since the first start; the slot itself never changes. */
static int mu_three_swaps(void)
{
	__u32 id, t1, t2, t3;

	if (subject_put(&mu_v1))
		return -1;
	id = id_of("mu");
	t1 = trie_of(id);
	if (subject_put(&mu_v2))
		return -1;
	t2 = trie_of(id);
	if (subject_put(&mu_v3))
		return -1;
	t3 = trie_of(id);
	if (!t1 || t2 != t1 || t3 != t1) {
		printf("mu's tries: v1 %u, v2 %u, v3 %u (want one trie throughout)\n", t1, t2, t3);
		return -1;
	}
	return 0;
}

const struct row policy_rows[] = {
	/* policy CIDRs: alpha is default deny */
	{"v4 udp to allow cidr", .pkt = UDP4(ALPHA4, OK4, 40000, 5000), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 tcp syn to allow cidr", .pkt = TCP4(ALPHA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 tcp to allow cidr", .pkt = TCP6(ALPHA6, OK6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 udp to allow cidr", .pkt = UDP6(ALPHA6, OK6, 40000, 5000), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 tcp to deny cidr", .pkt = TCP4(ALPHA4, BAD4, 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 udp to deny cidr", .pkt = UDP6(ALPHA6, BAD6, 40000, 5000), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 allow /24: outside the deny /25 passes",
	 .pkt = TCP4(ALPHA4, "198.51.100.10", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 allow /24 + deny /25 inside: deny wins",
	 .pkt = TCP4(ALPHA4, "198.51.100.200", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 allow /48: outside the deny /64 passes",
	 .pkt = TCP6(ALPHA6, "2001:db8:a:1::1", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 allow /48 + deny /64 inside: deny wins",
	 .pkt = TCP6(ALPHA6, "2001:db8:a:bad::1", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 deny /24 + allow /26 inside: still denied",
	 .pkt = TCP4(ALPHA4, "203.0.113.70", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 deny /48 + allow /64 inside: still denied",
	 .pkt = TCP6(ALPHA6, "2001:db8:dead:1::1", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 no rule matches: default deny", .pkt = TCP4(ALPHA4, NOWHERE4, 40000, 80),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"v6 no rule matches: default deny", .pkt = UDP6(ALPHA6, NOWHERE6, 40000, 5000),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"v4 icmp echo to allow cidr", .pkt = ICMP4(ALPHA4, OK4, ICMP4_ECHO),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v4 icmp echo to deny cidr", .pkt = ICMP4(ALPHA4, BAD4, ICMP4_ECHO),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"v6 icmp echo to allow cidr", .pkt = ICMP6(ALPHA6, OK6, ICMP6_ECHO),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},

	/* beta is default allow */
	{"default-allow subject: v4 unknown dst passes", .pkt = TCP4(BETA4, NOWHERE4, 40000, 80),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"default-allow subject: v6 unknown dst passes", .pkt = UDP6(BETA6, NOWHERE6, 40000, 5000),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"default-allow subject: v4 deny cidr still drops", .pkt = TCP4(BETA4, BAD4, 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "beta"},
	{"default-allow subject: v6 deny cidr still drops", .pkt = TCP6(BETA6, BAD6, 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "beta"},

	/* DNS-learned destinations of alpha */
	{"v4 udp to learned address, live lease", .pkt = UDP4(ALPHA4, LEARNED4, 40000, 5000),
	 PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"v4 tcp to learned address, live lease",
	 .pkt = TCP4(ALPHA4, LEARNED4, 40001, 443, .tcp_flags = TH_ACK), PASS(FW_PASS_LEARNED),
	 .subject = "alpha"},
	{"v6 tcp to learned address, live lease", .pkt = TCP6(ALPHA6, LEARNED6, 40000, 443),
	 PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"v4 learned address, lease expired", .pkt = TCP4(ALPHA4, EXPIRED4, 40000, 443),
	 DROP(FW_DROP_LEASE_EXPIRED), .subject = "alpha"},
	{"v6 learned address, lease expired", .pkt = TCP6(ALPHA6, EXPIRED6, 40000, 443),
	 DROP(FW_DROP_LEASE_EXPIRED), .subject = "alpha"},
	{"learned address inside a deny cidr: deny wins",
	 .pkt = TCP4(ALPHA4, LEARNED_BAD4, 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"address another subject learned does not pass", .pkt = TCP4(ALPHA4, BETAS4, 40000, 443),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},

	/* per-rule ports: an entry's exceptions decide listed ports, others
	 * fall to the entry's verdict for every port, then learned and default */
	{"ports: tcp 443 to a port-limited allow", .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 443),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "kappa"},
	{"ports: udp 443 to a port-limited allow", .pkt = UDP4(KAPPA4, "192.0.2.10", 40000, 443),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "kappa"},
	{"ports: tcp 80 to a port-limited allow falls to default deny",
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports: icmp to a port-limited allow falls to default deny",
	 .pkt = ICMP4(KAPPA4, "192.0.2.10", ICMP4_ECHO), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports: tcp 22 denied inside an allow-all cidr",
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 22), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: tcp 80 inside the same cidr passes",
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: deny host port beats allow cidr port",
	 .pkt = TCP4(KAPPA4, "203.0.113.7", 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: other allowed port of that host passes",
	 .pkt = UDP4(KAPPA4, "203.0.113.7", 40000, 53), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: allowed port of a neighbour host passes",
	 .pkt = TCP4(KAPPA4, "203.0.113.8", 40000, 443), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: a listed allow port under a deny for every port drops",
	 .pkt = TCP4(KAPPA4, "192.0.2.200", 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: udp to that listed port drops too", .pkt = UDP4(KAPPA4, "192.0.2.200", 40000, 443),
	 DROP(FW_DROP_DENY_CIDR), .subject = "kappa"},
	{"ports: an unlisted port there drops", .pkt = TCP4(KAPPA4, "192.0.2.200", 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "kappa"},
	{"ports: learned address inside a port-limited allow passes other ports",
	 .setup = kappa_learned, .pkt = TCP4(KAPPA4, "192.0.2.50", 40000, 80),
	 PASS(FW_PASS_LEARNED), .subject = "kappa"},
	{"ports swap: the old deny port 22 is gone", .then = true, .setup = kappa_swapped,
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 22), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports swap: 443 no longer listed falls to default deny", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 443), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports swap: the new port 8443 passes", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 8443), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports swap: learned address survived the swap", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.50", 40000, 80), PASS(FW_PASS_LEARNED), .subject = "kappa"},
	/* three swaps in one slot trie: the live generation holds exactly v3 */
	{"three swaps: v3 allow passes", .setup = mu_three_swaps,
	 .pkt = TCP4(MU4, "192.0.2.200", 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "mu"},
	{"three swaps: v3 deny host", .then = true, .pkt = TCP4(MU4, "192.0.2.130", 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "mu"},
	{"three swaps: v3 second allow", .then = true,
	 .pkt = UDP4(MU4, "198.51.100.150", 40000, 53), PASS(FW_PASS_ALLOW_CIDR), .subject = "mu"},
	{"three swaps: v1-only allow is gone", .then = true,
	 .pkt = TCP4(MU4, "192.0.2.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v1-only deny host is gone", .then = true,
	 .pkt = TCP4(MU4, "192.0.2.66", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v1-only second allow is gone", .then = true,
	 .pkt = TCP4(MU4, "198.51.100.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v2-only allow is gone", .then = true,
	 .pkt = TCP4(MU4, "203.0.113.5", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"ports: default allow with deny 0.0.0.0/0 port 25",
	 .pkt = TCP4(LAMBDA4, "203.0.113.9", 40000, 25), DROP(FW_DROP_DENY_CIDR),
	 .subject = "lambda"},
	{"ports: default allow, other ports pass", .pkt = TCP4(LAMBDA4, "203.0.113.9", 40000, 587),
	 PASS(FW_PASS_DEFAULT), .subject = "lambda"},

};
const size_t policy_rows_n = sizeof(policy_rows) / sizeof(policy_rows[0]);
