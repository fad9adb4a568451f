// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The egress policy: parsing per egress-policy.md, domain decisions as the
 * DNS proxy takes them, and the LPM entries the data plane receives. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "policy/policy.h"

static char err[256];

static void add(struct fw_policy *p, const char *action, const char *target)
{
	int ret = fw_policy_add_rule(p, action, target, NULL, 0, err, sizeof(err));

	cr_assert_eq(ret, 0, "add %s %s: %d %s", action, target, ret, err);
}

/* a compiled entry for text prefix, or NULL */
static const struct fw_compiled *find(const struct fw_compiled *c, size_t n, const char *pfx)
{
	struct fw_ip net;
	__u32 plen;

	cr_assert_eq(fw_prefix_parse(pfx, &net, &plen, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		if (c[i].key.prefixlen == plen && !memcmp(&c[i].key.addr, &net, sizeof(net)))
			return &c[i];
	}
	return NULL;
}

Test(policy, action_parse)
{
	__u8 a = 99;

	cr_assert_eq(fw_action_parse("allow", &a, err, sizeof(err)), 0);
	cr_assert_eq(a, FW_ACTION_ALLOW);
	cr_assert_eq(fw_action_parse("  ALLOW\t", &a, err, sizeof(err)), 0);
	cr_assert_eq(a, FW_ACTION_ALLOW);
	cr_assert_eq(fw_action_parse("Deny", &a, err, sizeof(err)), 0);
	cr_assert_eq(a, FW_ACTION_DENY);
	a = 99;
	cr_assert_eq(fw_action_parse("", &a, err, sizeof(err)), 0);
	cr_assert_eq(a, FW_ACTION_DENY);
	a = 99;
	cr_assert_eq(fw_action_parse("   ", &a, err, sizeof(err)), 0);
	cr_assert_eq(a, FW_ACTION_DENY);

	cr_assert_eq(fw_action_parse("permit", &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "invalid action \"permit\""), "%s", err);
	cr_assert_eq(fw_action_parse(" allowed ", &a, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "\"allowed\""), "%s", err);
	cr_assert_eq(fw_action_parse("al low", &a, err, sizeof(err)), -EINVAL);
}

Test(policy, set_default)
{
	struct fw_policy p;

	fw_policy_init(&p);
	cr_assert_eq(p.default_action, FW_ACTION_DENY);
	cr_assert_eq(fw_policy_set_default(&p, " Allow ", err, sizeof(err)), 0);
	cr_assert_eq(p.default_action, FW_ACTION_ALLOW);
	cr_assert_eq(fw_policy_set_default(&p, "maybe", err, sizeof(err)), -EINVAL);
	cr_assert_eq(p.default_action, FW_ACTION_ALLOW, "a failed set must not change it");
	cr_assert_eq(fw_policy_set_default(&p, "", err, sizeof(err)), 0);
	cr_assert_eq(p.default_action, FW_ACTION_DENY);
}

Test(policy, target_classification)
{
	struct fw_policy p;
	char buf[FW_ADDR_STRLEN];

	fw_policy_init(&p);
	add(&p, "allow", " 203.0.113.7 ");
	add(&p, "allow", "2001:db8::7");
	add(&p, "allow", "10.0.0.5/24");
	add(&p, "allow", "2001:db8:1::/48");
	add(&p, "allow", "API.GitHub.com.");
	add(&p, "allow", "*.Example.COM");
	add(&p, "", "_dmarc.my-host.example");
	add(&p, "deny", "localhost");
	cr_assert_eq(p.nrules, 8);

	cr_assert_eq(p.rules[0].kind, FW_TARGET_IP);
	cr_assert_eq(p.rules[0].plen, 128);
	cr_assert_str_eq(fw_prefix_str(&p.rules[0].addr, p.rules[0].plen, buf, sizeof(buf)),
			 "203.0.113.7/32");
	cr_assert_eq(p.rules[1].kind, FW_TARGET_IP);
	cr_assert_eq(p.rules[1].plen, 128);
	cr_assert_eq(p.rules[2].kind, FW_TARGET_CIDR);
	cr_assert_eq(p.rules[2].plen, 120);
	cr_assert_str_eq(fw_prefix_str(&p.rules[2].addr, p.rules[2].plen, buf, sizeof(buf)),
			 "10.0.0.0/24");
	cr_assert_eq(p.rules[3].kind, FW_TARGET_CIDR);
	cr_assert_eq(p.rules[3].plen, 48);
	cr_assert_eq(p.rules[4].kind, FW_TARGET_DOMAIN);
	cr_assert_str_eq(p.rules[4].domain, "api.github.com");
	cr_assert_eq(p.rules[5].kind, FW_TARGET_WILDCARD);
	cr_assert_str_eq(p.rules[5].domain, "example.com");
	cr_assert_eq(p.rules[6].kind, FW_TARGET_DOMAIN);
	cr_assert_eq(p.rules[6].action, FW_ACTION_DENY, "empty action means deny");
	cr_assert_eq(p.rules[7].action, FW_ACTION_DENY);
	for (size_t i = 0; i < p.nrules; i++) {
		cr_assert_null(p.rules[i].ports);
		cr_assert_eq(p.rules[i].nports, 0);
	}
	fw_policy_free(&p);
	cr_assert_eq(p.nrules, 0);
	cr_assert_null(p.rules);
}

Test(policy, bad_targets)
{
	static const struct {
		const char *target;
		const char *msg;
	} bad[] = {
		{"", "empty target"},
		{"   ", "empty target"},
		{"*", "bare wildcard"},
		{"*.", "bare wildcard"},
		{"*.*.example.com", "'*'"},
		{"a.*.example.com", "'*'"},
		{"foo*.example.com", "'*'"},
		{"*example.com", "'*'"},
		{"a..b", "labels"},
		{".example.com", "labels"},
		{"example.com..", "labels"},
		{".", "empty domain"},
		{"exa mple.com", "not an address"},
		{"10.0.0.0/33", "not an address"},
		{"2001:db8::/129", "not an address"},
		{"1.2.3.4/", "not an address"},
		{"http://example.com", "not an address"},
		{"ex\x01mple.com", "not an address"},
		{"b\xc3\xa4r.example", "not an address"},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", "labels"},
	};
	struct fw_policy p;

	fw_policy_init(&p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_expect_eq(
			fw_policy_add_rule(&p, "allow", bad[i].target, NULL, 0, err, sizeof(err)),
			-EINVAL, "accepted \"%s\"", bad[i].target);
		cr_expect(strstr(err, bad[i].msg), "\"%s\": %s", bad[i].target, err);
	}
	cr_assert_eq(p.nrules, 0);
	cr_assert_eq(fw_policy_add_rule(&p, "permit", "example.com", NULL, 0, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "invalid action \"permit\""), "%s", err);
	cr_assert_eq(p.nrules, 0);
}

Test(policy, domain_length_limits)
{
	char name[300], label63[64];
	struct fw_policy p;

	memset(label63, 'a', 63);
	label63[63] = '\0';
	fw_policy_init(&p);
	add(&p, "allow", label63);
	/* 4 * 63 + 3 dots = 255 > 253 */
	snprintf(name, sizeof(name), "%s.%s.%s.%s", label63, label63, label63, label63);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", name, NULL, 0, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "longer than 253"), "%s", err);
	/* 3 * 63 + 61 + 3 = 253 exactly, plus a trailing dot */
	snprintf(name, sizeof(name), "%s.%s.%s.%.61s.", label63, label63, label63, label63);
	add(&p, "allow", name);
	cr_assert_eq(strlen(p.rules[1].domain), 253);
	fw_policy_free(&p);
}

Test(policy, ports)
{
	static const long ok[] = {80, 443, 1, 65535};
	long many[FW_POLICY_MAX_PORTS + 1];
	struct fw_policy p;

	fw_policy_init(&p);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "example.com", ok, 4, err, sizeof(err)), 0);
	cr_assert_eq(p.rules[0].nports, 4);
	cr_assert_eq(p.rules[0].ports[0], 80);
	cr_assert_eq(p.rules[0].ports[3], 65535);

	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", (long[]){80, 0}, 2, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "invalid port 0"), "%s", err);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", (long[]){65536}, 1, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "65536"), "%s", err);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", (long[]){-443}, 1, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "-443"), "%s", err);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", (long[]){443, 80, 443}, 3, err,
					sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "duplicate port 443"), "%s", err);

	for (size_t i = 0; i < FW_POLICY_MAX_PORTS + 1; i++)
		many[i] = (long)i + 1;
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", many, FW_POLICY_MAX_PORTS + 1, err,
					sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "too many ports"), "%s", err);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "x.com", many, FW_POLICY_MAX_PORTS, err,
					sizeof(err)),
		     0);
	cr_assert_eq(p.nrules, 2);
	fw_policy_free(&p);
}

Test(policy, rule_limit)
{
	struct fw_policy p;

	fw_policy_init(&p);
	for (int i = 0; i < FW_POLICY_MAX_RULES; i++)
		cr_assert_eq(fw_policy_add_rule(&p, "deny", "10.0.0.1", NULL, 0, err, sizeof(err)),
			     0);
	cr_assert_eq(fw_policy_add_rule(&p, "deny", "10.0.0.1", NULL, 0, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "too many rules"), "%s", err);
	fw_policy_free(&p);
}

Test(policy, copy_is_deep)
{
	struct fw_policy a, b;

	fw_policy_init(&a);
	a.default_action = FW_ACTION_ALLOW;
	add(&a, "deny", "*.example.com");
	cr_assert_eq(
		fw_policy_add_rule(&a, "allow", "10.0.0.0/8", (long[]){22}, 1, err, sizeof(err)),
		0);
	cr_assert_eq(fw_policy_copy(&b, &a), 0);
	fw_policy_free(&a);
	cr_assert_eq(b.default_action, FW_ACTION_ALLOW);
	cr_assert_eq(b.nrules, 2);
	cr_assert_str_eq(b.rules[0].domain, "example.com");
	cr_assert_eq(b.rules[1].nports, 1);
	cr_assert_eq(b.rules[1].ports[0], 22);
	fw_policy_free(&b);
}

Test(policy, match_domain_table)
{
	static const struct {
		const char *name;
		int rule;
		__u8 action;
	} cases[] = {
		{"api.github.com", 0, FW_ACTION_ALLOW},
		{"API.GITHUB.COM.", 0, FW_ACTION_ALLOW},
		{"github.com", -1, FW_ACTION_DENY},
		{"x.api.github.com", -1, FW_ACTION_DENY},
		{"bad.example.com", 1, FW_ACTION_DENY},
		{"a.example.com", 2, FW_ACTION_ALLOW},
		{"a.b.example.com", 2, FW_ACTION_ALLOW},
		{"example.com", -1, FW_ACTION_DENY},
		{"example.com.", -1, FW_ACTION_DENY},
		{"notexample.com", -1, FW_ACTION_DENY},
		{"x.notexample.com", -1, FW_ACTION_DENY},
		{"a.example.com.evil", -1, FW_ACTION_DENY},
		{".example.com", -1, FW_ACTION_DENY},
		{"mail.corp.internal", 4, FW_ACTION_ALLOW},
		{"corp.internal", 3, FW_ACTION_DENY},
		{"", -1, FW_ACTION_DENY},
		{".", -1, FW_ACTION_DENY},
	};
	struct fw_policy p;

	fw_policy_init(&p);
	add(&p, "allow", "api.github.com");
	add(&p, "deny", "bad.example.com");
	add(&p, "allow", "*.example.com");
	add(&p, "deny", "corp.internal");
	add(&p, "allow", "*.corp.internal");
	add(&p, "allow", "203.0.113.0/24"); /* never matches a name */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u8 action = 99;
		int r = fw_policy_match_domain(&p, cases[i].name, &action);

		cr_expect_eq(r, cases[i].rule, "%s: rule %d, want %d", cases[i].name, r,
			     cases[i].rule);
		cr_expect_eq(action, cases[i].action, "%s: action %u", cases[i].name, action);
	}
	/* first match wins: the wildcard comes before the exact deny */
	fw_policy_free(&p);
	fw_policy_init(&p);
	p.default_action = FW_ACTION_ALLOW;
	add(&p, "allow", "*.example.com");
	add(&p, "deny", "bad.example.com");
	{
		__u8 action;

		cr_assert_eq(fw_policy_match_domain(&p, "bad.example.com", &action), 0);
		cr_assert_eq(action, FW_ACTION_ALLOW);
		cr_assert_eq(fw_policy_match_domain(&p, "other.org", &action), -1);
		cr_assert_eq(action, FW_ACTION_ALLOW, "no match gives the default");
	}
	fw_policy_free(&p);
}

static void add_ports(struct fw_policy *p, const char *action, const char *target,
		      const long *ports, size_t n)
{
	err[0] = '\0';
	cr_assert_eq(fw_policy_add_rule(p, action, target, ports, n, err, sizeof(err)), 0,
		     "%s %s: %s", action, target, err);
}

/* What a learned address may be reached on: the union of the ports of the
 * allow rules its names match, every port when one of them has none. */
Test(policy, domain_ports_union)
{
	static const long api[] = {443}, alt[] = {8080, 443, 53}, denied[] = {22};
	const char *one[] = {"api.example.com"};
	const char *two[] = {"alt.example.com", "API.example.com."};
	const char *open[] = {"api.example.com", "open.example.com"};
	const char *none[] = {"bad.example.com", "github.com"};
	const char *half[] = {"bad.example.com", "api.example.com"};
	__u16 out[8 * FW_POLICY_MAX_PORTS];
	struct fw_policy p;
	bool all;
	int n;

	fw_policy_init(&p);
	add_ports(&p, "deny", "bad.example.com", denied, 1);
	add_ports(&p, "allow", "api.example.com", api, 1);
	add_ports(&p, "allow", "alt.example.com", alt, 3);
	add(&p, "allow", "*.example.com");

	n = fw_policy_domain_ports(&p, one, 1, out, &all);
	cr_assert_eq(n, 1);
	cr_expect(!all);
	cr_expect_eq(out[0], 443);

	n = fw_policy_domain_ports(&p, two, 2, out, &all);
	cr_assert_eq(n, 3, "union of {8080, 443, 53} and {443}, unique");
	cr_expect(!all);
	cr_expect(out[0] == 53 && out[1] == 443 && out[2] == 8080, "ascending");

	n = fw_policy_domain_ports(&p, open, 2, out, &all);
	cr_expect_eq(n, 0);
	cr_expect(all, "a rule without ports allows every port");

	cr_expect_eq(fw_policy_domain_ports(&p, none, 2, out, &all), -EACCES,
		     "a deny rule's ports allow nothing, nor does the default deny");
	n = fw_policy_domain_ports(&p, half, 2, out, &all);
	cr_expect(n == 1 && !all && out[0] == 443, "a denied name adds no ports");

	p.default_action = FW_ACTION_ALLOW;
	n = fw_policy_domain_ports(&p, none + 1, 1, out, &all);
	cr_expect(n == 0 && all, "allowed by the default: every port");
	fw_policy_free(&p);
}

Test(policy, match_domain_long_names)
{
	char name[600];
	struct fw_policy p;
	__u8 action;

	fw_policy_init(&p);
	add(&p, "allow", "*.com");
	memset(name, 'a', sizeof(name));
	memcpy(name + sizeof(name) - 5, ".com", 5);
	cr_assert_eq(fw_policy_match_domain(&p, name, &action), -1);
	cr_assert_eq(action, FW_ACTION_DENY);
	cr_assert_eq(fw_policy_match_domain(&p, "a.com", &action), 0);
	fw_policy_free(&p);
}

Test(policy, compile_deny_inside_allow_keeps_both)
{
	const struct fw_compiled *e;
	struct fw_compiled *c;
	struct fw_policy p;
	size_t n;

	fw_policy_init(&p);
	add(&p, "allow", "10.0.0.0/8");
	add(&p, "deny", "10.1.0.0/16");
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_eq(n, 3);
	e = find(c, n, "10.0.0.0/8");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.action, FW_ACTION_ALLOW);
	cr_assert_eq(e->rule.rule, 0);
	cr_assert_eq(e->rule.is_default, 0);
	cr_assert_eq(e->key.prefixlen, 104);
	e = find(c, n, "10.1.0.0/16");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.action, FW_ACTION_DENY);
	cr_assert_eq(e->rule.rule, 1);
	e = find(c, n, "::/0");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.is_default, 1);
	cr_assert_eq(e->rule.rule, FW_RULE_DEFAULT);
	cr_assert_eq(e->rule.action, FW_ACTION_DENY);
	free(c);
	fw_policy_free(&p);
}

Test(policy, compile_deny_beats_allow)
{
	struct fw_compiled *c;
	struct fw_policy p;
	size_t n;

	fw_policy_init(&p);
	p.default_action = FW_ACTION_ALLOW;
	add(&p, "allow", "10.1.0.0/16"); /* inside the later deny: removed */
	add(&p, "deny", "10.0.0.0/8");
	add(&p, "allow", "10.0.0.0/8"); /* equal to a deny: removed */
	add(&p, "allow", "10.2.3.4");	/* host inside deny: removed */
	add(&p, "allow", "0.0.0.0/0");	/* contains the deny: kept */
	add(&p, "deny", "10.0.0.0/8");	/* duplicate deny: once */
	add(&p, "deny", "10.0.0.77/8"); /* same after masking: once */
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_eq(n, 3, "got %zu entries", n);
	cr_assert_null(find(c, n, "10.1.0.0/16"));
	cr_assert_null(find(c, n, "10.2.3.4"));
	cr_assert_eq(find(c, n, "10.0.0.0/8")->rule.action, FW_ACTION_DENY);
	cr_assert_eq(find(c, n, "10.0.0.0/8")->rule.rule, 1);
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.action, FW_ACTION_ALLOW);
	cr_assert_eq(find(c, n, "::/0")->rule.action, FW_ACTION_ALLOW);
	cr_assert_eq(find(c, n, "::/0")->rule.is_default, 1);
	free(c);
	fw_policy_free(&p);
}

Test(policy, compile_overlay_first_and_mixed_families)
{
	struct fw_policy overlay, p;
	const struct fw_compiled *e;
	struct fw_compiled *c;
	size_t n;

	fw_policy_init(&overlay);
	fw_policy_init(&p);
	add(&overlay, "deny", "*.bad.example"); /* index 0, not compiled */
	add(&overlay, "deny", "2001:db8:bad::/48");
	add(&overlay, "allow", "198.51.100.10");
	add(&p, "allow", "example.com");
	add(&p, "allow", "2001:db8::/32");
	add(&p, "allow", "2001:db8:bad:1::/64"); /* under the overlay deny */
	add(&p, "allow", "198.51.100.10");	 /* same as overlay allow: first kept */
	add(&p, "deny", "203.0.113.7");
	cr_assert_eq(fw_policy_compile(&overlay, &p, &c, &n), 0);
	cr_assert_eq(n, 5, "got %zu", n);

	e = find(c, n, "2001:db8:bad::/48");
	cr_assert_eq(e->rule.rule, 1);
	cr_assert_eq(e->rule.action, FW_ACTION_DENY);
	cr_assert_eq(e->key.prefixlen, 48);
	e = find(c, n, "198.51.100.10");
	cr_assert_eq(e->rule.rule, 2, "overlay's copy comes first");
	cr_assert_eq(e->key.prefixlen, 128);
	e = find(c, n, "2001:db8::/32");
	cr_assert_eq(e->rule.rule, 4);
	cr_assert_eq(e->rule.action, FW_ACTION_ALLOW);
	cr_assert_null(find(c, n, "2001:db8:bad:1::/64"));
	e = find(c, n, "203.0.113.7");
	cr_assert_eq(e->rule.rule, 7);
	cr_assert_eq(e->rule.action, FW_ACTION_DENY);
	cr_assert_eq(find(c, n, "::/0")->rule.rule, FW_RULE_DEFAULT);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(c[i].rule.pad, 0);
	free(c);
	fw_policy_free(&overlay);
	fw_policy_free(&p);
}

Test(policy, compile_empty_and_root_rule)
{
	struct fw_compiled *c;
	struct fw_policy p;
	size_t n;

	fw_policy_init(&p);
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(c[0].key.prefixlen, 0);
	cr_assert_eq(c[0].rule.is_default, 1);
	cr_assert_eq(c[0].rule.action, FW_ACTION_DENY);
	free(c);

	/* an explicit ::/0 rule takes the default's key; both would collide.
	 * It is an IPv6 rule: IPv4 gets a default entry at ::ffff:0:0/96 */
	add(&p, "allow", "::/0");
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(c[0].rule.is_default, 0);
	cr_assert_eq(c[0].rule.action, FW_ACTION_ALLOW);
	cr_assert_eq(c[0].rule.rule, 0);
	cr_assert_not_null(find(c, n, "0.0.0.0/0"));
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.is_default, 1);
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.action, FW_ACTION_DENY);
	free(c);
	fw_policy_free(&p);
}

Test(policy, compile_ipv6_rules_never_decide_ipv4)
{
	struct fw_compiled *c;
	struct fw_policy p;
	size_t n;

	/* deny ::/1 contains the v4-mapped block in the 128-bit space; it must
	 * neither remove the IPv4 allow nor decide IPv4 traffic */
	fw_policy_init(&p);
	add(&p, "deny", "::/1");
	add(&p, "allow", "10.0.0.0/8");
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_not_null(find(c, n, "10.0.0.0/8"), "IPv4 allow removed by an IPv6 deny");
	cr_assert_not_null(find(c, n, "::/1"));
	cr_assert_not_null(find(c, n, "0.0.0.0/0"), "no IPv4 barrier under ::/1");
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.is_default, 1);
	free(c);
	fw_policy_free(&p);

	/* with an IPv4 0.0.0.0/0 rule, that rule is the barrier */
	fw_policy_init(&p);
	add(&p, "allow", "::/0");
	add(&p, "deny", "0.0.0.0/0");
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.is_default, 0);
	cr_assert_eq(find(c, n, "0.0.0.0/0")->rule.action, FW_ACTION_DENY);
	free(c);
	fw_policy_free(&p);

	/* an IPv4 deny does not cover an IPv6 allow either */
	fw_policy_init(&p);
	add(&p, "deny", "0.0.0.0/0");
	add(&p, "allow", "2001:db8::/32");
	cr_assert_eq(fw_policy_compile(NULL, &p, &c, &n), 0);
	cr_assert_not_null(find(c, n, "2001:db8::/32"));
	free(c);
	fw_policy_free(&p);
}

Test(policy, compile_hash)
{
	struct fw_compiled *c1, *c2, *c3, tmp;
	struct fw_policy a, b;
	size_t n1, n2, n3;

	fw_policy_init(&a);
	fw_policy_init(&b);
	add(&a, "allow", "10.0.0.0/8");
	add(&a, "deny", "10.1.0.0/16");
	add(&b, "allow", "10.0.0.0/8");
	add(&b, "deny", "10.1.0.0/16");
	cr_assert_eq(fw_policy_compile(NULL, &a, &c1, &n1), 0);
	cr_assert_eq(fw_policy_compile(NULL, &b, &c2, &n2), 0);
	cr_assert_eq(fw_compiled_hash(c1, n1), fw_compiled_hash(c2, n2));
	/* reordering entries does not change it */
	tmp = c2[0];
	c2[0] = c2[n2 - 1];
	c2[n2 - 1] = tmp;
	cr_assert_eq(fw_compiled_hash(c1, n1), fw_compiled_hash(c2, n2));
	/* a changed verdict, length or default does */
	c2[0].rule.action ^= 1;
	cr_assert_neq(fw_compiled_hash(c1, n1), fw_compiled_hash(c2, n2));
	b.default_action = FW_ACTION_ALLOW;
	cr_assert_eq(fw_policy_compile(NULL, &b, &c3, &n3), 0);
	cr_assert_neq(fw_compiled_hash(c1, n1), fw_compiled_hash(c3, n3));
	cr_assert_neq(fw_compiled_hash(c1, n1), fw_compiled_hash(c1, n1 - 1));
	cr_assert_neq(fw_compiled_hash(NULL, 0), 0);
	free(c1);
	free(c2);
	free(c3);
	fw_policy_free(&a);
	fw_policy_free(&b);
}

static long port_list[] = {443, 8443};

Test(policy, compile_ports_union_and_exceptions)
{
	struct fw_compiled_set set;
	const struct fw_compiled *e;
	struct fw_policy p;

	fw_policy_init(&p);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "10.0.0.0/8", port_list, 2, err, sizeof(err)),
		     0);
	add(&p, "allow", "10.1.0.0/16");
	cr_assert_eq(fw_policy_add_rule(&p, "deny", "10.1.2.0/24", port_list, 1, err, sizeof(err)),
		     0);
	cr_assert_eq(fw_policy_compile_set(NULL, &p, &set), 0);

	/* /8: no rule for every port, exceptions 443 and 8443 allow */
	e = find(set.entries, set.n, "10.0.0.0/8");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.action, FW_ACTION_NONE);
	cr_assert_neq(e->rule.portset, 0);
	/* /16: allow every port; no exceptions needed */
	e = find(set.entries, set.n, "10.1.0.0/16");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.action, FW_ACTION_ALLOW);
	cr_assert_eq(e->rule.portset, 0);
	/* /24: allow every port but 443, which is denied */
	e = find(set.entries, set.n, "10.1.2.0/24");
	cr_assert_not_null(e);
	cr_assert_eq(e->rule.action, FW_ACTION_ALLOW);
	cr_assert_neq(e->rule.portset, 0);
	{
		size_t n443 = 0;

		for (size_t i = 0; i < set.nports; i++) {
			if (set.ports[i].portset != e->rule.portset)
				continue;
			cr_assert_eq(set.ports[i].port, 443);
			cr_assert_eq(set.ports[i].action, FW_ACTION_DENY);
			n443++;
		}
		cr_assert_eq(n443, 1);
	}
	cr_assert_eq(set.nports, 3, "got %zu exceptions", set.nports);
	fw_compiled_set_free(&set);
	fw_policy_free(&p);
}

Test(policy, compile_ports_shared_sets_and_pruning)
{
	struct fw_compiled_set set;
	struct fw_policy p;

	/* two disjoint CIDRs with the same ports share one exception set; a
	 * host inside one with the same rule is redundant and dropped */
	fw_policy_init(&p);
	cr_assert_eq(
		fw_policy_add_rule(&p, "allow", "192.0.2.0/25", port_list, 2, err, sizeof(err)), 0);
	cr_assert_eq(
		fw_policy_add_rule(&p, "allow", "203.0.113.0/24", port_list, 2, err, sizeof(err)),
		0);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "192.0.2.5", port_list, 2, err, sizeof(err)),
		     0);
	cr_assert_eq(fw_policy_compile_set(NULL, &p, &set), 0);
	cr_assert_null(find(set.entries, set.n, "192.0.2.5"));
	cr_assert_eq(find(set.entries, set.n, "192.0.2.0/25")->rule.portset,
		     find(set.entries, set.n, "203.0.113.0/24")->rule.portset);
	cr_assert_eq(set.nports, 2);
	fw_compiled_set_free(&set);
	fw_policy_free(&p);
}

/* The whole compiled set as text, entries in their order, then the port
 * exceptions: "net/len action #rule" (or "default"), the default action
 * when it is not deny, ", ports N" when the entry has exception set N,
 * and " | N:port action" per exception. Pins every field the data plane
 * reads, and the order, so a faster compiler must give the same bytes. */
static const char *render(const struct fw_compiled_set *s)
{
	static const char *const act[] = {"deny", "allow", "none"};
	static char out[4096];
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < s->n && at < sizeof(out); i++) {
		const struct fw_compiled *e = &s->entries[i];
		char pfx[FW_ADDR_STRLEN + 8];

		cr_assert_lt(e->rule.action, 3);
		cr_assert_eq(e->rule.pad, 0);
		fw_prefix_str(&e->key.addr, e->key.prefixlen, pfx, sizeof(pfx));
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%s %s ", i ? "; " : "", pfx,
				       act[e->rule.action]);
		if (e->rule.is_default)
			at += (size_t)snprintf(out + at, sizeof(out) - at, "default");
		else
			at += (size_t)snprintf(out + at, sizeof(out) - at, "#%u", e->rule.rule);
		if (e->rule.dflt != FW_ACTION_DENY)
			at += (size_t)snprintf(out + at, sizeof(out) - at, " (default %s)",
					       act[e->rule.dflt]);
		if (e->rule.portset)
			at += (size_t)snprintf(out + at, sizeof(out) - at, ", ports %u",
					       e->rule.portset);
	}
	for (size_t i = 0; i < s->nports && at < sizeof(out); i++)
		at += (size_t)snprintf(out + at, sizeof(out) - at, " | %u:%u %s",
				       s->ports[i].portset, s->ports[i].port,
				       act[s->ports[i].action]);
	cr_assert_lt(at, sizeof(out));
	return out;
}

static void expect_compiled(const struct fw_policy *overlay, const struct fw_policy *p,
			    const char *want)
{
	struct fw_compiled_set set;

	cr_assert_eq(fw_policy_compile_set(overlay, p, &set), 0);
	cr_assert_str_eq(render(&set), want);
	fw_compiled_set_free(&set);
}

Test(policy, compile_exact_nested_prefixes)
{
	struct fw_policy p;

	/* the best rule is the longest covering one, the first of equal
	 * prefixes; deny for every port wins; what decides as its longest
	 * strict cover is dropped */
	fw_policy_init(&p);
	add(&p, "allow", "10.0.0.0/8");
	add(&p, "deny", "10.1.0.0/16");
	add(&p, "allow", "10.1.2.0/24"); /* allow inside deny: denies, dropped */
	add(&p, "deny", "10.2.0.0/16");
	add(&p, "deny", "10.2.0.0/16");	   /* the same prefix: #3 decides */
	add(&p, "allow", "10.3.0.0/16");   /* as its /8: dropped */
	add(&p, "allow", "10.0.0.0/8");	   /* the same prefix as #0 */
	add(&p, "deny", "10.1.2.3");	   /* as its /24: dropped */
	add(&p, "allow", "172.16.0.0/12"); /* under ::/0 only */
	add(&p, "allow", "172.17.0.0/16"); /* as its /12: dropped */
	expect_compiled(NULL, &p,
			"10.0.0.0/8 allow #0; 10.1.0.0/16 deny #1; 10.2.0.0/16 deny #3; "
			"172.16.0.0/12 allow #8; ::/0 deny default");
	fw_policy_free(&p);
}

Test(policy, compile_exact_ports_down_a_chain)
{
	static const long l443_8443[] = {443, 8443}, l443[] = {443}, l8443[] = {8443}, l22[] = {22};
	struct fw_policy p;

	/* every entry unions the ports of the rules covering it: per-port
	 * deny beats allow, an allow for every port needs no per-port allow;
	 * a host with the same verdict and set as its /24 is dropped */
	fw_policy_init(&p);
	p.default_action = FW_ACTION_ALLOW;
	add_ports(&p, "allow", "10.0.0.0/8", l443_8443, 2);
	add_ports(&p, "deny", "10.1.0.0/16", l443, 1);
	add(&p, "allow", "10.1.2.0/24");
	add_ports(&p, "deny", "10.1.2.3", l8443, 1);
	add_ports(&p, "allow", "10.1.2.4", l443, 1);
	add_ports(&p, "deny", "10.0.0.0/8", l22, 1);
	expect_compiled(NULL, &p,
			"10.0.0.0/8 none #0 (default allow), ports 1; "
			"10.1.0.0/16 none #1 (default allow), ports 2; "
			"10.1.2.0/24 allow #2 (default allow), ports 3; "
			"10.1.2.3/32 allow #3 (default allow), ports 4; "
			"::/0 allow default (default allow)"
			" | 1:22 deny | 1:443 allow | 1:8443 allow"
			" | 2:22 deny | 2:443 deny | 2:8443 allow"
			" | 3:22 deny | 3:443 deny"
			" | 4:22 deny | 4:443 deny | 4:8443 deny");
	fw_policy_free(&p);
}

/* A deny for every port is the verdict under it: a narrower allow that
 * lists ports does not reopen them (deny beats allow, whatever the
 * lengths), so no exception set may hang under the deny. */
Test(policy, compile_exact_ports_under_a_deny_for_every_port)
{
	static const long l443[] = {443}, l22[] = {22};
	struct fw_policy p;

	fw_policy_init(&p);
	add(&p, "deny", "10.0.0.0/8");
	add_ports(&p, "allow", "10.1.0.0/16", l443, 1);
	add_ports(&p, "allow", "2001:db8::/32", l443, 1);
	add(&p, "deny", "2001:db8::/32");
	expect_compiled(NULL, &p, "10.0.0.0/8 deny #0; 2001:db8::/32 deny #2; ::/0 deny default");
	fw_policy_free(&p);

	/* the same under a default allow, and with a listed deny below it */
	fw_policy_init(&p);
	p.default_action = FW_ACTION_ALLOW;
	add(&p, "deny", "10.0.0.0/8");
	add_ports(&p, "allow", "10.1.0.0/16", l443, 1);
	add_ports(&p, "deny", "10.1.2.0/24", l22, 1);
	expect_compiled(NULL, &p,
			"10.0.0.0/8 deny #0 (default allow); ::/0 allow default (default allow)");
	fw_policy_free(&p);
}

Test(policy, compile_exact_families_and_overlay)
{
	static const long l443[] = {443};
	struct fw_policy overlay, p;

	/* overlay rules first; ::/8 holds the v4-mapped block, so IPv4 gets
	 * its own default entry at ::ffff:0:0/96 and ::/8 decides no IPv4
	 * address; IPv6 nests as IPv4 does */
	fw_policy_init(&overlay);
	fw_policy_init(&p);
	add(&overlay, "deny", "10.9.0.0/16");
	add(&p, "deny", "::/8");
	add(&p, "allow", "10.0.0.0/8");
	add(&p, "allow", "2001:db8::/32");
	add(&p, "deny", "2001:db8:1::/48");
	add(&p, "allow", "2001:db8:1:2::/64"); /* allow inside deny: dropped */
	add(&p, "allow", "2001:db8::1");       /* as its /32: dropped */
	add_ports(&p, "allow", "8000::/1", l443, 1);
	expect_compiled(&overlay, &p,
			"10.9.0.0/16 deny #0; ::/8 deny #1; 10.0.0.0/8 allow #2; "
			"2001:db8::/32 allow #3; 2001:db8:1::/48 deny #4; "
			"8000::/1 none #7, ports 1; 0.0.0.0/0 deny default; ::/0 deny default"
			" | 1:443 allow");
	fw_policy_free(&overlay);
	fw_policy_free(&p);
}

Test(policy, compile_exact_many_cidrs)
{
	char want[2048], cidr[64];
	size_t at = 0;
	struct fw_policy p;

	/* cp_kernel's policy shape: one deny host, then /28s in rule order,
	 * a duplicate /28 and a deny host inside one */
	fw_policy_init(&p);
	add(&p, "deny", "203.0.113.66/32");
	at += (size_t)snprintf(want + at, sizeof(want) - at, "203.0.113.66/32 deny #0");
	for (unsigned int k = 1; k < 16; k++) {
		snprintf(cidr, sizeof(cidr), "198.%u.0.%u/28", k <= 8 ? 18u : 19u, k * 16);
		add(&p, "allow", cidr);
		at += (size_t)snprintf(want + at, sizeof(want) - at, "; %s allow #%u", cidr, k);
	}
	add(&p, "allow", "198.18.0.16/28");
	add(&p, "deny", "198.18.0.20");
	snprintf(want + at, sizeof(want) - at, "; 198.18.0.20/32 deny #17; ::/0 deny default");
	expect_compiled(NULL, &p, want);
	fw_policy_free(&p);
}
