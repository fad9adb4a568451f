// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The three forms a compiled policy takes (small sets, range tables,
 * slot tries), chosen by size, and the edges of ranges. */
#include "verdicts.h"

/* 24 single addresses, none adjacent (the compiler would merge them): 25
 * compiled entries with the default, more than a small set holds, so its
 * rules go to the slot's trie. */
static const struct subject_def tau_big = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.100/32", "allow 192.0.2.102/32", "allow 192.0.2.104/32",
			"allow 192.0.2.106/32", "allow 192.0.2.108/32", "allow 192.0.2.110/32",
			"allow 192.0.2.112/32", "allow 192.0.2.114/32", "allow 192.0.2.116/32",
			"allow 192.0.2.118/32", "allow 192.0.2.120/32", "allow 192.0.2.122/32",
			"allow 192.0.2.124/32", "allow 192.0.2.126/32", "allow 192.0.2.128/32",
			"allow 192.0.2.130/32", "allow 192.0.2.132/32", "allow 192.0.2.134/32",
			"allow 192.0.2.136/32", "allow 192.0.2.138/32", "allow 192.0.2.140/32",
			"allow 192.0.2.142/32", "allow 192.0.2.144/32", "allow 192.0.2.146/32",
		},
};

/* 65 entries: more than the chunks of a small set hold */
static const struct subject_def tau_huge = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.100/32", "allow 192.0.2.101/32", "allow 192.0.2.102/32",
			"allow 192.0.2.103/32", "allow 192.0.2.104/32", "allow 192.0.2.105/32",
			"allow 192.0.2.106/32", "allow 192.0.2.107/32", "allow 192.0.2.108/32",
			"allow 192.0.2.109/32", "allow 192.0.2.110/32", "allow 192.0.2.111/32",
			"allow 192.0.2.112/32", "allow 192.0.2.113/32", "allow 192.0.2.114/32",
			"allow 192.0.2.115/32", "allow 192.0.2.116/32", "allow 192.0.2.117/32",
			"allow 192.0.2.118/32", "allow 192.0.2.119/32", "allow 192.0.2.120/32",
			"allow 192.0.2.121/32", "allow 192.0.2.122/32", "allow 192.0.2.123/32",
			"allow 192.0.2.124/32", "allow 192.0.2.125/32", "allow 192.0.2.126/32",
			"allow 192.0.2.127/32", "allow 192.0.2.128/32", "allow 192.0.2.129/32",
			"allow 192.0.2.130/32", "allow 192.0.2.131/32", "allow 192.0.2.132/32",
			"allow 192.0.2.133/32", "allow 192.0.2.134/32", "allow 192.0.2.135/32",
			"allow 192.0.2.136/32", "allow 192.0.2.137/32", "allow 192.0.2.138/32",
			"allow 192.0.2.139/32", "allow 192.0.2.140/32", "allow 192.0.2.141/32",
			"allow 192.0.2.142/32", "allow 192.0.2.143/32", "allow 192.0.2.144/32",
			"allow 192.0.2.145/32", "allow 192.0.2.146/32", "allow 192.0.2.147/32",
			"allow 192.0.2.148/32", "allow 192.0.2.149/32", "allow 192.0.2.150/32",
			"allow 192.0.2.151/32", "allow 192.0.2.152/32", "allow 192.0.2.153/32",
			"allow 192.0.2.154/32", "allow 192.0.2.155/32", "allow 192.0.2.156/32",
			"allow 192.0.2.157/32", "allow 192.0.2.158/32", "allow 192.0.2.159/32",
			"allow 192.0.2.160/32", "allow 192.0.2.161/32", "allow 192.0.2.162/32",
			"allow 192.0.2.163/32",
		},
};

static const struct subject_def tau_small = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules = {"allow 192.0.2.146/32", "allow 192.0.2.64/26"},
};

/* Whether small sets are on in this run (FASTWALL_RULE_SET_MAX=0: off). */
static bool sets_on(void)
{
	const char *v = getenv("FASTWALL_RULE_SET_MAX");

	return !v || strcmp(v, "0") != 0;
}

/* Whether range tables are on in this run (FASTWALL_RULE_RANGE_MAX=0: off). */
static bool ranges_on(void)
{
	const char *v = getenv("FASTWALL_RULE_RANGE_MAX");

	return !v || strcmp(v, "0") != 0;
}

/* Whether gen is the form a compiled set of n entries takes in this run:
 * a small set up to FW_SET_LARGEST entries, a range table up to
 * FW_RANGE_RULES (it fits, for the sets of these tests), else the trie. */
static bool form_is(__u32 gen, size_t n)
{
	if (sets_on() && n <= FW_SET_LARGEST)
		return (gen & FW_GEN_FORMS) == FW_GEN_SET;
	if (ranges_on() && n <= FW_RANGE_RULES)
		return (gen & FW_GEN_FORMS) == FW_GEN_RANGE;
	return (gen & FW_GEN_FORMS) == 0;
}

static const char *form_name(__u32 gen)
{
	return gen & FW_GEN_RANGE ? "a range table" : gen & FW_GEN_SET ? "a small set" : "the trie";
}

/* How many keys of map fd belong to subject id: the keys of
 * fastwall_rule_sets, fastwall_conns and fastwall_learned_ports all start
 * with the subject's id. */
static int subject_keys_masked(int fd, size_t key_size, __u32 id, __u32 mask)
{
	unsigned char buf[2][64];
	void *prev = NULL;
	int n = 0, i = 0;
	__u32 owner;

	if (key_size > sizeof(buf[0]))
		return -1;
	while (!bpf_map_get_next_key(fd, prev, buf[i])) {
		memcpy(&owner, buf[i], sizeof(owner));
		n += (owner & mask) == id;
		prev = buf[i];
		i ^= 1;
	}
	return n;
}

int subject_keys(int fd, size_t key_size, __u32 id)
{
	return subject_keys_masked(fd, key_size, id, ~0u);
}

/* The elements (chunks of small sets) of subject id in fastwall_rule_sets. */
static int sets_held(__u32 id)
{
	return subject_keys_masked(t.dp->rule_sets_fd, sizeof(struct fw_set_key), id,
				   FW_SET_ID(~0u));
}

/* The range tables of subject id in fastwall_rule_ranges. */
static int ranges_held(__u32 id)
{
	struct fw_set_key k, prev;
	bool first = true;
	int n = 0;

	while (bpf_map_get_next_key(t.dp->rule_ranges_fd, first ? NULL : &prev, &k) == 0) {
		n += k.subject == id;
		prev = k;
		first = false;
	}
	return n;
}

static bool dispatch_of(const char *addr, struct fw_subject *s)
{
	struct fw_ip key = ip_of(addr);

	return bpf_map_lookup_elem(t.dp->dispatch_fd, &key, s) == 0;
}

static bool mask_is_zero(const struct fw_ip *m)
{
	static const struct fw_ip zero;

	return memcmp(m, &zero, sizeof(zero)) == 0;
}

/* A compiled set of at most FW_SET_MAX entries is one element of
 * fastwall_rule_sets, longest prefix first and the default last; one of
 * up to FW_SET_LARGEST entries is that many chunks of FW_SET_MAX; a larger
 * one goes to the trie; a subject moves between the forms with its
 * verdicts intact, and the form it left is deleted after a grace period. */
void scenario_rule_forms(void)
{
	const struct pkt_spec last = UDP4("10.42.14.10", "192.0.2.146", 40000, 5000);
	const struct pkt_spec mid = UDP4("10.42.14.10", "192.0.2.130", 40000, 5000);
	const struct pkt_spec wide = UDP4("10.42.14.10", "192.0.2.70", 40000, 5000);
	const struct pkt_spec out = UDP4("10.42.14.10", "192.0.2.147", 40000, 5000);
	const struct pkt_spec odd = UDP4("10.42.14.10", "192.0.2.163", 40000, 5000);
	const struct pkt_spec beyond = UDP4("10.42.14.10", "192.0.2.164", 40000, 5000);
	struct fw_rule_set set;
	struct fw_subject s;
	struct fw_set_key k;
	bool sorted = true;
	int v1, v2, v3, v4;
	__u32 id;

	if (!dispatch_of(ALPHA4, &s)) {
		result(false, "rule forms: alpha's dispatch value", NULL);
		return;
	}
	k = (struct fw_set_key){.subject = s.id, .gen = s.rules_gen};
	if (sets_on()) {
		bool held = !bpf_map_lookup_elem(t.dp->rule_sets_fd, &k, &set);

		for (__u32 i = 1; held && i < set.n && i < FW_SET_MAX; i++)
			sorted = sorted && memcmp(&set.e[i - 1].mask, &set.e[i].mask,
						  sizeof(set.e[i].mask)) >= 0;
		result((s.rules_gen & FW_GEN_SET) && held && set.n >= 2 && sorted &&
			       mask_is_zero(&set.e[set.n - 1].mask) &&
			       set.e[set.n - 1].rule.is_default,
		       "rule forms: a small policy is one set, longest prefix first, default last",
		       "gen %#x, held %d, %u entries, sorted %d", s.rules_gen, held,
		       held ? set.n : 0, sorted);
	} else {
		result(!(s.rules_gen & FW_GEN_SET) && sets_held(s.id) == 0 &&
			       !!(s.rules_gen & FW_GEN_RANGE) == ranges_on(),
		       "rule forms: with FASTWALL_RULE_SET_MAX=0 no policy is a small set (a range "
		       "table, or the trie with FASTWALL_RULE_RANGE_MAX=0 too)",
		       "gen %#x, %d sets", s.rules_gen, sets_held(s.id));
	}

	/* 25 entries: chunk 0 holds the first 20 /32s, chunk 1 the other
	 * four and the default, where "last" and "out" are decided */
	if (subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't put tau");
		return;
	}
	id = s.id;
	v1 = run_frame(prog_fd(FROM_SANDBOX), &last);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &mid);
	v3 = run_frame(prog_fd(FROM_SANDBOX), &out);
	k = (struct fw_set_key){.subject = FW_SET_SUBJECT(id, 1), .gen = s.rules_gen};
	set.n = 0;
	bpf_map_lookup_elem(t.dp->rule_sets_fd, &k, &set);
	result(!!(s.rules_gen & FW_GEN_SET) == sets_on() && v1 == TC_ACT_OK && v2 == TC_ACT_OK &&
		       v3 == TC_ACT_SHOT && sets_held(id) == (sets_on() ? 2 : 0) &&
		       (!sets_on() || (set.n == 5 && set.e[4].rule.is_default)),
	       "rule forms: 25 entries are a set of two chunks (the default last) and decide",
	       "gen %#x, verdicts %d %d %d, %d elements, chunk 1 holds %u", s.rules_gen, v1, v2, v3,
	       sets_held(id), set.n);

	if (subject_put(&tau_small) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't shrink tau's policy");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(prog_fd(FROM_SANDBOX), &last);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &mid);
	v3 = run_frame(prog_fd(FROM_SANDBOX), &wide);
	v4 = run_frame(prog_fd(FROM_SANDBOX), &out);
	result(s.id == id && !!(s.rules_gen & FW_GEN_SET) == sets_on() && v1 == TC_ACT_OK &&
		       v2 == TC_ACT_SHOT && v3 == TC_ACT_OK && v4 == TC_ACT_SHOT &&
		       sets_held(id) == (sets_on() ? 1 : 0),
	       "rule forms: shrunk to one chunk, the set decides as the new one; both old chunks "
	       "are deleted",
	       "id %u -> %u, gen %#x, verdicts %d %d %d %d, %d elements", id, s.id, s.rules_gen, v1,
	       v2, v3, v4, sets_held(id));

	if (subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't grow tau's policy");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(prog_fd(FROM_SANDBOX), &last);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &odd);
	v3 = run_frame(prog_fd(FROM_SANDBOX), &wide);
	v4 = run_frame(prog_fd(FROM_SANDBOX), &beyond);
	result(form_is(s.rules_gen, 65) && v1 == TC_ACT_OK && v2 == TC_ACT_OK &&
		       v3 == TC_ACT_SHOT && v4 == TC_ACT_SHOT && sets_held(id) == 0 &&
		       ranges_held(id) == (ranges_on() ? 1 : 0),
	       "rule forms: 65 entries, more than a set's chunks hold, are one range table (the "
	       "trie with FASTWALL_RULE_RANGE_MAX=0); the retired set is deleted",
	       "gen %#x (%s), verdicts %d %d %d %d, %d elements, %d tables", s.rules_gen,
	       form_name(s.rules_gen), v1, v2, v3, v4, sets_held(id), ranges_held(id));

	if (subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't shrink tau's policy again");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(prog_fd(FROM_SANDBOX), &last);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &odd);
	result(form_is(s.rules_gen, 25) && v1 == TC_ACT_OK && v2 == TC_ACT_SHOT &&
		       sets_held(id) == (sets_on() ? 2 : 0) &&
		       ranges_held(id) == (!sets_on() && ranges_on() ? 1 : 0),
	       "rule forms: from 65 entries back to 25 (a set of two chunks); the retired "
	       "table is deleted",
	       "gen %#x (%s), verdicts %d %d, %d elements, %d tables", s.rules_gen,
	       form_name(s.rules_gen), v1, v2, sets_held(id), ranges_held(id));

	/* a start over reused pins, while the programs of the process before
	 * (an older build) may still be attached: no range table, which they
	 * could not read */
	fw_dp_rules_old_programs(t.dp, true);
	v1 = subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &odd);
	v3 = run_frame(prog_fd(FROM_SANDBOX), &beyond);
	result(!v1 && !(s.rules_gen & FW_GEN_FORMS) && v2 == TC_ACT_OK && v3 == TC_ACT_SHOT &&
		       ranges_held(id) == 0,
	       "rule forms: while older programs may be attached, 65 entries go to the trie",
	       "put %d, gen %#x (%s), verdicts %d %d, %d tables", v1, s.rules_gen,
	       form_name(s.rules_gen), v2, v3, ranges_held(id));
	v1 = subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	result(!v1 && (s.rules_gen & FW_GEN_FORMS) == (sets_on() ? FW_GEN_SET : 0) &&
		       ranges_held(id) == 0,
	       "rule forms: ... and 25 entries still make a small set (the trie without sets)",
	       "put %d, gen %#x (%s)", v1, s.rules_gen, form_name(s.rules_gen));
	fw_dp_rules_old_programs(t.dp, false);
	v1 = subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	v2 = run_frame(prog_fd(FROM_SANDBOX), &odd);
	result(!v1 && form_is(s.rules_gen, 65) && v2 == TC_ACT_OK &&
		       ranges_held(id) == (ranges_on() ? 1 : 0),
	       "rule forms: once this build's programs are attached, 65 entries are a range "
	       "table again",
	       "put %d, gen %#x (%s), verdict %d, %d tables", v1, s.rules_gen,
	       form_name(s.rules_gen), v2, ranges_held(id));
}

/* tau_edges: nested and touching IPv4 prefixes, allow inside deny inside
 * allow, and runs of single addresses that alternate, 70 rules in all */
static char edge_rules[72][40];

static void edges_def(struct subject_def *d)
{
	static const char *fixed[] = {
		"allow 198.51.100.0/24", "deny 198.51.100.0/26",   "allow 198.51.100.0/28",
		"deny 198.51.100.8/29",	 "allow 198.51.100.15/32", "deny 198.51.100.128/25",
		"allow 192.0.2.0/23",	 "deny 192.0.3.255/32",	   "allow 203.0.113.128/25",
		"deny 203.0.113.0/32",
	};
	size_t n = 0;

	memset(d, 0, sizeof(*d));
	d->name = "tau";
	d->addrs[0] = "10.42.14.10";
	d->default_action = "deny";
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++, n++)
		snprintf(edge_rules[n], sizeof(edge_rules[n]), "%s", fixed[i]);
	/* 60 single addresses denied inside the /23's allow, every other
	 * one from 192.0.2.0: 68 compiled entries or more, whatever the
	 * compiler folds of the rules above (an allow inside a deny) */
	for (unsigned int i = 0; i < 60; i++, n++)
		snprintf(edge_rules[n], sizeof(edge_rules[n]), "deny 192.0.2.%u/32", 2 * i);
	for (size_t i = 0; i < n; i++)
		d->rules[i] = edge_rules[i];
}

/* The verdict d's rules give IPv4 dst (host order), as the policy reads
 * them: a deny CIDR that holds it drops, whatever allows a longer prefix
 * of it; else an allow CIDR passes; else the default (deny) drops. */
static int edges_want(const struct subject_def *d, __u32 dst)
{
	bool allowed = false;

	for (size_t i = 0; i < sizeof(d->rules) / sizeof(d->rules[0]) && d->rules[i]; i++) {
		char action[8], target[40];
		unsigned int a, b, c, e, plen;

		if (sscanf(d->rules[i], "%7s %39s", action, target) != 2 ||
		    sscanf(target, "%u.%u.%u.%u/%u", &a, &b, &c, &e, &plen) != 5)
			continue;
		__u32 net = a << 24 | b << 16 | c << 8 | e, mask = plen ? ~0u << (32 - plen) : 0;

		if ((dst & mask) != net)
			continue;
		if (strcmp(action, "allow"))
			return TC_ACT_SHOT;
		allowed = true;
	}
	return allowed ? TC_ACT_OK : TC_ACT_SHOT;
}

/* A destination one past either end of a prefix is where a search over
 * ranges would be off by one: every edge of every rule, and both sides
 * of it, decide as the rules say, in whichever form this
 * run puts the policy (a range table by default, the trie with
 * FASTWALL_RULE_RANGE_MAX=0). */
void scenario_range_edges(void)
{
	struct subject_def d;
	struct fw_subject s;
	int probes = 0, wrong = 0;
	char first_wrong[64] = "";
	size_t nrules = 0;

	edges_def(&d);
	while (nrules < sizeof(d.rules) / sizeof(d.rules[0]) && d.rules[nrules])
		nrules++;
	if (subject_put(&d) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "range edges: fixture", "can't put tau");
		return;
	}
	for (size_t i = 0; i < nrules; i++) {
		unsigned int a, b, c, e, plen;
		__u32 net, last;

		sscanf(strchr(d.rules[i], ' ') + 1, "%u.%u.%u.%u/%u", &a, &b, &c, &e, &plen);
		net = a << 24 | b << 16 | c << 8 | e;
		last = net | (plen ? ~(~0u << (32 - plen)) : ~0u);
		__u32 probe[4] = {net - 1, net, last, last + 1};

		for (int p = 0; p < 4; p++) {
			char dst[16];
			struct pkt_spec spec = UDP4("10.42.14.10", dst, 40000, 5000);
			int got, want = edges_want(&d, probe[p]);

			snprintf(dst, sizeof(dst), "%u.%u.%u.%u", probe[p] >> 24,
				 probe[p] >> 16 & 255, probe[p] >> 8 & 255, probe[p] & 255);
			got = run_frame(prog_fd(FROM_SANDBOX), &spec);
			probes++;
			if (got != want && !wrong++)
				snprintf(first_wrong, sizeof(first_wrong), "%s: %d, want %d", dst,
					 got, want);
		}
	}
	result(form_is(s.rules_gen, 68) && wrong == 0 && probes == 4 * (int)nrules,
	       "range edges: both sides of every edge of 70 nested and touching prefixes decide "
	       "as the rules say",
	       "%s, %d probes, %d wrong (first %s)", form_name(s.rules_gen), probes, wrong,
	       first_wrong);
	subject_put(&tau_small);
	fw_dp_rules_settle(t.dp);
}
