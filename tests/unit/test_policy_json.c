// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The policy JSON of binding.input and of policy pushes (egress-policy.md):
 * what parses and what an error says, the JSON fastwall shows back, and
 * the merge and removal a push does (credential-push.md). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "protocol/envelope.h"

static char err[512];

static int from(const char *s, struct fw_policy *p)
{
	err[0] = '\0';
	return fw_policy_from_json(s, s ? strlen(s) : 0, p, err, sizeof(err));
}

static void from_ok(const char *s, struct fw_policy *p)
{
	int ret = from(s, p);

	cr_assert_eq(ret, 0, "%s: %d %s", s, ret, err);
}

/* the policy's JSON, for comparing whole policies in one line */
static void assert_json(const struct fw_policy *p, const char *want)
{
	char *got = fw_policy_to_json(p);

	cr_assert_not_null(got);
	cr_assert_str_eq(got, want);
	free(got);
}

static bool rules_equal(const struct fw_policy_rule *a, const struct fw_policy_rule *b)
{
	if (a->action != b->action || a->kind != b->kind || a->plen != b->plen ||
	    memcmp(&a->addr, &b->addr, sizeof(a->addr)) || a->nports != b->nports)
		return false;
	if ((a->domain == NULL) != (b->domain == NULL) ||
	    (a->domain && strcmp(a->domain, b->domain)))
		return false;
	if (strcmp(a->target, b->target))
		return false;
	return a->nports == 0 || memcmp(a->ports, b->ports, a->nports * sizeof(*a->ports)) == 0;
}

static bool policies_equal(const struct fw_policy *a, const struct fw_policy *b)
{
	if (a->default_action != b->default_action || a->nrules != b->nrules)
		return false;
	for (size_t i = 0; i < a->nrules; i++) {
		if (!rules_equal(&a->rules[i], &b->rules[i]))
			return false;
	}
	return true;
}

Test(policy_json, empty_forms_mean_default_deny)
{
	static const char *const empty[] = {"",
					    "   ",
					    " \t\n\r ",
					    "null",
					    "  null\n",
					    "{}",
					    "\t{}\n",
					    "{ }",
					    "{\"egress\":null}",
					    "{\"defaultAction\":null,\"egress\":[]}"};
	struct fw_policy p;

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		p.default_action = FW_ACTION_ALLOW;
		from_ok(empty[i], &p);
		cr_expect_eq(p.default_action, FW_ACTION_DENY, "%s", empty[i]);
		cr_expect_eq(p.nrules, 0, "%s", empty[i]);
		fw_policy_free(&p);
	}
	cr_assert_eq(fw_policy_from_json(NULL, 0, &p, err, sizeof(err)), 0);
	cr_assert_eq(p.nrules, 0);
}

Test(policy_json, reference_example)
{
	struct fw_policy p;
	char buf[FW_ADDR_STRLEN];

	from_ok("{\"defaultAction\":\"deny\",\n"
		" \"egress\":[{\"action\":\"allow\",\"target\":\"*.example.com\"},\n"
		"           {\"action\":\"allow\",\"target\":\"api.github.com\"},\n"
		"           {\"action\":\"allow\",\"target\":\"203.0.113.0/24\"},\n"
		"           {\"action\":\"deny\",\"target\":\"203.0.113.7\"}]}",
		&p);
	cr_assert_eq(p.default_action, FW_ACTION_DENY);
	cr_assert_eq(p.nrules, 4);
	cr_assert_eq(p.rules[0].kind, FW_TARGET_WILDCARD);
	cr_assert_str_eq(p.rules[0].domain, "example.com");
	cr_assert_str_eq(p.rules[0].target, "*.example.com");
	cr_assert_eq(p.rules[1].kind, FW_TARGET_DOMAIN);
	cr_assert_eq(p.rules[2].kind, FW_TARGET_CIDR);
	cr_assert_str_eq(fw_prefix_str(&p.rules[2].addr, p.rules[2].plen, buf, sizeof(buf)),
			 "203.0.113.0/24");
	cr_assert_eq(p.rules[3].kind, FW_TARGET_IP);
	cr_assert_eq(p.rules[3].action, FW_ACTION_DENY);
	fw_policy_free(&p);
}

Test(policy_json, fields)
{
	struct fw_policy p;

	from_ok("{\"defaultAction\":\" ALLOW \",\"egress\":[{\"target\":\"x.io\"},"
		"{\"action\":null,\"target\":\"y.io\"},{\"action\":\"\",\"target\":\"z.io\"},"
		"{\"action\":\"Allow\",\"target\":\" Example.COM. \",\"ports\":[443,80]},"
		"{\"action\":\"allow\",\"target\":\"10.0.0.5/24\",\"ports\":null,\"note\":1}],"
		"\"version\":3}",
		&p);
	cr_assert_eq(p.default_action, FW_ACTION_ALLOW);
	cr_assert_eq(p.nrules, 5);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(p.rules[i].action, FW_ACTION_DENY, "rule %d", i);
	/* the target is kept as written, trimmed; the domain is normalised */
	cr_assert_str_eq(p.rules[3].target, "Example.COM.");
	cr_assert_str_eq(p.rules[3].domain, "example.com");
	cr_assert_eq(p.rules[3].nports, 2);
	cr_assert_eq(p.rules[3].ports[0], 443);
	cr_assert_eq(p.rules[3].ports[1], 80);
	cr_assert_str_eq(p.rules[4].target, "10.0.0.5/24");
	cr_assert_eq(p.rules[4].nports, 0);
	assert_json(&p, "{\"defaultAction\":\"allow\",\"egress\":["
			"{\"action\":\"deny\",\"target\":\"x.io\"},"
			"{\"action\":\"deny\",\"target\":\"y.io\"},"
			"{\"action\":\"deny\",\"target\":\"z.io\"},"
			"{\"action\":\"allow\",\"target\":\"Example.COM.\",\"ports\":[443,80]},"
			"{\"action\":\"allow\",\"target\":\"10.0.0.5/24\"}]}");
	fw_policy_free(&p);

	from_ok("{\"defaultAction\":\"\"}", &p);
	cr_assert_eq(p.default_action, FW_ACTION_DENY);
	fw_policy_free(&p);
}

struct bad_policy {
	const char *json;
	const char *err; /* exact, or a prefix when ending in '*' */
};

static const struct bad_policy bad_policies[] = {
	{"nul", "malformed policy JSON: *"},
	{"{\"egress\":[}", "malformed policy JSON: *"},
	{"{} x", "malformed policy JSON: *"},
	{"{}{}", "malformed policy JSON: *"},
	{"\"{}\"", "malformed policy JSON: *"},
	{"{\"egress\":[{\"target\":\"a\\u0000b\"}]}", "malformed policy JSON: *"},
	{"[]", "policy must be a JSON object"},
	{"[{\"action\":\"allow\",\"target\":\"x.io\"}]", "policy must be a JSON object"},
	{"{\"defaultAction\":1}", "defaultAction must be a string"},
	{"{\"defaultAction\":[\"allow\"]}", "defaultAction must be a string"},
	{"{\"defaultAction\":\"permit\"}", "defaultAction: invalid action \"permit\"*"},
	{"{\"egress\":{}}", "egress must be an array"},
	{"{\"egress\":\"x.io\"}", "egress must be an array"},
	{"{\"egress\":[\"x.io\"]}", "egress[0] must be an object"},
	{"{\"egress\":[{\"target\":\"a.io\"},null]}", "egress[1] must be an object"},
	{"{\"egress\":[{\"action\":1,\"target\":\"a.io\"}]}", "egress[0].action must be a string"},
	{"{\"egress\":[{\"action\":\"allow\"}]}", "egress[0].target is empty"},
	{"{\"egress\":[{\"target\":\"a.io\"},{\"target\":\"b.io\"},{\"target\":\"c.io\"},"
	 "{\"action\":\"allow\",\"target\":\"\"}]}",
	 "egress[3].target is empty"},
	{"{\"egress\":[{\"target\":\"  \\t\"}]}", "egress[0].target is empty"},
	{"{\"egress\":[{\"target\":null}]}", "egress[0].target is empty"},
	{"{\"egress\":[{\"target\":42}]}", "egress[0].target must be a string"},
	{"{\"egress\":[{\"target\":\"a.io\"},{\"target\":\"b.io\"},"
	 "{\"action\":\"permit\",\"target\":\"c.io\"}]}",
	 "egress[2]: invalid action \"permit\"*"},
	{"{\"egress\":[{\"target\":\"*\"}]}", "egress[0]: invalid target \"*\"*"},
	{"{\"egress\":[{\"target\":\"a b.io\"}]}", "egress[0]: invalid target \"a b.io\"*"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":443}]}",
	 "egress[0].ports must be an array of integers"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[\"443\"]}]}",
	 "egress[0].ports must be an array of integers"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[443.0]}]}",
	 "egress[0].ports must be an array of integers"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[0]}]}", "egress[0]: invalid port 0*"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[65536]}]}",
	 "egress[0]: invalid port 65536*"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[-443]}]}", "egress[0]: invalid port -443*"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[9223372036854775807]}]}",
	 "egress[0]: invalid port 9223372036854775807*"},
	{"{\"egress\":[{\"target\":\"x.io\",\"ports\":[443,443]}]}",
	 "egress[0]: duplicate port 443"},
};

static bool err_matches(const char *want, const char *got)
{
	size_t n = strlen(want);

	if (n && want[n - 1] == '*')
		return strncmp(want, got, n - 1) == 0;
	return strcmp(want, got) == 0;
}

Test(policy_json, errors_table)
{
	for (size_t i = 0; i < sizeof(bad_policies) / sizeof(bad_policies[0]); i++) {
		const struct bad_policy *c = &bad_policies[i];
		struct fw_policy p;
		int ret;

		ret = from(c->json, &p);
		cr_expect_eq(ret, -EINVAL, "%s: %d", c->json, ret);
		cr_expect(err_matches(c->err, err), "%s:\n  want %s\n  got  %s", c->json, c->err,
			  err);
		/* nothing is left behind on an error */
		cr_expect_eq(p.nrules, 0, "%s", c->json);
		cr_expect_null(p.rules, "%s", c->json);
	}
}

/* a JSON policy with n rules "rN.example" and 'ports' text appended to
 * the first rule */
static char *many_rules(size_t n, const char *first_extra)
{
	size_t cap = 64 + n * 48 + strlen(first_extra);
	char *s = malloc(cap), *w = s;

	cr_assert_not_null(s);
	w += sprintf(w, "{\"egress\":[");
	for (size_t i = 0; i < n; i++)
		w += sprintf(w, "%s{\"action\":\"allow\",\"target\":\"r%zu.example\"%s}",
			     i ? "," : "", i, i ? "" : first_extra);
	sprintf(w, "]}");
	return s;
}

Test(policy_json, bounds)
{
	struct fw_policy p;
	char ports[8 * 260], *w = ports;
	char *s;

	s = many_rules(FW_POLICY_MAX_RULES, "");
	from_ok(s, &p);
	cr_assert_eq(p.nrules, FW_POLICY_MAX_RULES);
	fw_policy_free(&p);
	free(s);

	s = many_rules(FW_POLICY_MAX_RULES + 1, "");
	cr_assert_eq(from(s, &p), -EINVAL);
	cr_assert_str_eq(err, "egress has 4097 rules, at most 4096");
	free(s);

	w += sprintf(w, ",\"ports\":[");
	for (int i = 1; i <= FW_POLICY_MAX_PORTS; i++)
		w += sprintf(w, "%s%d", i > 1 ? "," : "", i);
	sprintf(w, "]");
	s = many_rules(1, ports);
	from_ok(s, &p);
	cr_assert_eq(p.rules[0].nports, FW_POLICY_MAX_PORTS);
	fw_policy_free(&p);
	free(s);

	sprintf(w, ",257]");
	s = many_rules(1, ports);
	cr_assert_eq(from(s, &p), -EINVAL);
	cr_assert_str_eq(err, "egress[0]: too many ports (257, at most 256)");
	free(s);

	/* over 1 MiB is refused before parsing, even if it is mostly blanks */
	s = malloc((1 << 20) + 3);
	memset(s, ' ', (1 << 20) + 2);
	s[0] = '{';
	s[(1 << 20) + 1] = '}';
	s[(1 << 20) + 2] = '\0';
	cr_assert_eq(from(s, &p), -EINVAL);
	cr_assert_str_eq(err, "policy larger than 1048576 bytes");
	free(s);

	s = malloc(100001);
	memset(s, '[', 100000);
	s[100000] = '\0';
	cr_assert_eq(from(s, &p), -EINVAL);
	cr_assert(strncmp(err, "malformed policy JSON", 21) == 0, "%s", err);
	free(s);
}

Test(policy_json, to_json)
{
	struct fw_policy p;

	fw_policy_init(&p);
	assert_json(&p, "{\"defaultAction\":\"deny\",\"egress\":[]}");
	from_ok("{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\","
		"\"target\":\"2001:db8::/32\",\"ports\":[53]},{\"target\":\"*.Corp.example\"}]}",
		&p);
	assert_json(&p, "{\"defaultAction\":\"allow\",\"egress\":["
			"{\"action\":\"deny\",\"target\":\"2001:db8::/32\",\"ports\":[53]},"
			"{\"action\":\"deny\",\"target\":\"*.Corp.example\"}]}");
	fw_policy_free(&p);
}

Test(policy_json, round_trip)
{
	static const char *const inputs[] = {
		"",
		"{\"defaultAction\":\"allow\"}",
		"{\"egress\":[{\"action\":\"allow\",\"target\":\"*.example.com\"},"
		"{\"action\":\"allow\",\"target\":\" API.github.com \",\"ports\":[443,8443]},"
		"{\"action\":\"allow\",\"target\":\"203.0.113.9/24\"},"
		"{\"action\":\"deny\",\"target\":\"203.0.113.7\"},"
		"{\"action\":\"deny\",\"target\":\"::ffff:10.0.0.1\"},"
		"{\"action\":\"allow\",\"target\":\"fd00::/8\",\"ports\":[1,65535]},"
		"{\"target\":\"under_score.example.\"}]}",
	};

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		struct fw_policy a, b;
		char *js;

		from_ok(inputs[i], &a);
		js = fw_policy_to_json(&a);
		cr_assert_not_null(js);
		from_ok(js, &b);
		cr_expect(policies_equal(&a, &b), "round trip of %s through %s", inputs[i], js);
		free(js);
		fw_policy_free(&a);
		fw_policy_free(&b);
	}
}

Test(policy_json, copy_keeps_targets)
{
	struct fw_policy a, b;

	from_ok("{\"egress\":[{\"target\":\" X.io \"},{\"target\":\"10.1.2.3\"}]}", &a);
	cr_assert_eq(fw_policy_copy(&b, &a), 0);
	cr_assert(policies_equal(&a, &b));
	cr_assert_neq(a.rules[0].target, b.rules[0].target);
	fw_policy_free(&a);
	cr_assert_str_eq(b.rules[0].target, "X.io");
	cr_assert_str_eq(b.rules[1].target, "10.1.2.3");
	fw_policy_free(&b);
}

struct merge_case {
	const char *desc;
	const char *dst, *patch;
	const char *want;
};

#define R(a, t)	    "{\"action\":\"" a "\",\"target\":\"" t "\"}"
#define P(d, rules) "{\"defaultAction\":\"" d "\",\"egress\":[" rules "]}"

static const struct merge_case merge_cases[] = {
	{"empty patch keeps all", P("allow", R("deny", "a.io")), "", P("allow", R("deny", "a.io"))},
	{"into empty", "", P("allow", R("allow", "a.io")), P("deny", R("allow", "a.io"))},
	{"replace in place",
	 P("deny", R("allow", "a.io") "," R("allow", "b.io") "," R("allow", "c.io")),
	 P("deny", R("deny", "b.io")),
	 P("deny", R("allow", "a.io") "," R("deny", "b.io") "," R("allow", "c.io"))},
	{"new targets appended in patch order", P("deny", R("allow", "a.io")),
	 P("deny", R("allow", "z.io") "," R("deny", "10.0.0.0/8") "," R("allow", "m.io")),
	 P("deny", R("allow", "a.io") "," R("allow", "z.io") "," R("deny", "10.0.0.0/8") "," R(
			   "allow", "m.io"))},
	{"first rule per target in the patch wins", P("deny", R("allow", "a.io")),
	 P("deny",
	   R("deny", "a.io") "," R("allow", "a.io") "," R("allow", "n.io") "," R("deny", "n.io")),
	 P("deny", R("deny", "a.io") "," R("allow", "n.io"))},
	{"defaultAction of dst kept", P("allow", R("deny", "a.io")), P("deny", R("allow", "b.io")),
	 P("allow", R("deny", "a.io") "," R("allow", "b.io"))},
	{"ports replaced with the rule",
	 "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.io\",\"ports\":[443]}]}",
	 "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.io\",\"ports\":[80,81]}]}",
	 "{\"defaultAction\":\"deny\",\"egress\":[{\"action\":\"allow\",\"target\":\"a.io\","
	 "\"ports\":[80,81]}]}"},
	{"same target means same text", P("deny", R("allow", "A.io") "," R("allow", "10.0.0.5/24")),
	 P("deny", R("deny", "a.io") "," R("deny", "10.0.0.0/24")),
	 P("deny", R("allow", "A.io") "," R("allow", "10.0.0.5/24") "," R("deny", "a.io") "," R(
			   "deny", "10.0.0.0/24"))},
	{"target compared trimmed", P("deny", R("allow", "a.io")), P("deny", R("deny", " a.io\\t")),
	 P("deny", R("deny", "a.io"))},
	{"a target named twice in dst: the pushed rule alone remains",
	 P("deny", R("allow", "a.io") "," R("allow", "b.io") "," R("deny", "a.io")),
	 P("deny", R("deny", "a.io")), P("deny", R("deny", "a.io") "," R("allow", "b.io"))},
};

Test(policy_json, merge_table)
{
	for (size_t i = 0; i < sizeof(merge_cases) / sizeof(merge_cases[0]); i++) {
		const struct merge_case *c = &merge_cases[i];
		struct fw_policy dst, patch, want;
		char *got, *want_js;

		from_ok(c->dst, &dst);
		from_ok(c->patch, &patch);
		from_ok(c->want, &want);
		cr_assert_eq(fw_policy_merge(&dst, &patch), 0, "%s", c->desc);
		got = fw_policy_to_json(&dst);
		want_js = fw_policy_to_json(&want);
		cr_expect_str_eq(got, want_js, "%s", c->desc);
		cr_expect(policies_equal(&dst, &want), "%s", c->desc);
		/* the patch stays the caller's */
		cr_assert_eq(fw_policy_merge(&dst, &patch), 0);
		free(got);
		got = fw_policy_to_json(&dst);
		cr_expect_str_eq(got, want_js, "%s: merging twice changed it", c->desc);
		free(got);
		free(want_js);
		fw_policy_free(&dst);
		fw_policy_free(&patch);
		fw_policy_free(&want);
	}
}

Test(policy_json, merge_over_the_limit_changes_nothing)
{
	struct fw_policy dst, patch;
	char *s, *before, *after;

	s = many_rules(FW_POLICY_MAX_RULES, "");
	from_ok(s, &dst);
	free(s);
	/* replacing is fine at the limit, a new target is not */
	from_ok(P("deny", R("deny", "r7.example")), &patch);
	cr_assert_eq(fw_policy_merge(&dst, &patch), 0);
	cr_assert_eq(dst.rules[7].action, FW_ACTION_DENY);
	fw_policy_free(&patch);

	before = fw_policy_to_json(&dst);
	from_ok(P("deny", R("deny", "r8.example") "," R("allow", "new.example")), &patch);
	cr_assert_eq(fw_policy_merge(&dst, &patch), -E2BIG);
	after = fw_policy_to_json(&dst);
	cr_assert_str_eq(before, after);
	cr_assert_eq(dst.rules[8].action, FW_ACTION_ALLOW);
	free(before);
	free(after);
	fw_policy_free(&patch);
	fw_policy_free(&dst);
}

struct remove_case {
	const char *desc;
	const char *policy;
	const char *targets[4];
	size_t n;
	const char *want;
};

static const struct remove_case remove_cases[] = {
	{"one target",
	 P("allow", R("deny", "a.io") "," R("deny", "b.io") "," R("deny", "c.io")),
	 {"b.io"},
	 1,
	 P("allow", R("deny", "a.io") "," R("deny", "c.io"))},
	{"every rule of the target",
	 P("deny", R("allow", "a.io") "," R("allow", "b.io") "," R("deny", "a.io")),
	 {"a.io"},
	 1,
	 P("deny", R("allow", "b.io"))},
	{"several, trimmed",
	 P("deny", R("allow", "a.io") "," R("allow", "10.0.0.0/8") "," R("allow", "c.io")),
	 {" 10.0.0.0/8\n", "c.io"},
	 2,
	 P("deny", R("allow", "a.io"))},
	{"unknown target is a no-op",
	 P("deny", R("allow", "a.io")),
	 {"b.io", "A.io"},
	 2,
	 P("deny", R("allow", "a.io"))},
	{"all",
	 P("deny", R("allow", "a.io") "," R("allow", "b.io")),
	 {"b.io", "a.io"},
	 2,
	 P("deny", "")},
	{"from empty", "", {"a.io"}, 1, P("deny", "")},
	{"no targets", P("deny", R("allow", "a.io")), {NULL}, 0, P("deny", R("allow", "a.io"))},
	{"NULL entries skipped", P("deny", R("allow", "a.io")), {NULL, "a.io"}, 2, P("deny", "")},
};

Test(policy_json, remove_table)
{
	for (size_t i = 0; i < sizeof(remove_cases) / sizeof(remove_cases[0]); i++) {
		const struct remove_case *c = &remove_cases[i];
		struct fw_policy p;
		char *once;

		from_ok(c->policy, &p);
		cr_assert_eq(fw_policy_remove_targets(&p, c->targets, c->n), 0, "%s", c->desc);
		once = fw_policy_to_json(&p);
		cr_expect_str_eq(once, c->want, "%s", c->desc);
		/* idempotent */
		cr_assert_eq(fw_policy_remove_targets(&p, c->targets, c->n), 0);
		assert_json(&p, once);
		free(once);
		fw_policy_free(&p);
	}
}

/* Whether err holds any 6-byte run of secret. */
static bool leaks(const char *e, const char *secret)
{
	size_t n = strlen(secret);

	for (size_t i = 0; i + 6 <= n; i++)
		if (memmem(e, strlen(e), secret + i, 6))
			return true;
	return false;
}

#define LEAKY	 "sk-live-0123456789abcdef"
#define VAULT_AT "{\"credentials\":[{\"name\":\"gh\",\"source\":{\"type\":\"inline\",\"value\":"

/* Vault bodies gone wrong in the ways a hand-edited push goes wrong, with
 * the secret where jansson's "near '...'" quotes the input. */
static const struct {
	const char *body, *secret;
} broken_vaults[] = {
	{VAULT_AT "\"" LEAKY, LEAKY},
	{VAULT_AT "\"" LEAKY "\n\"}}]}", LEAKY},
	{VAULT_AT "\"" LEAKY "\\q\"}}]}", LEAKY},
	{VAULT_AT "\"" LEAKY "\xff\"}}]}", LEAKY},
	{VAULT_AT "\"" LEAKY "\"}}]}}", LEAKY},
	{VAULT_AT "\"x\" \"" LEAKY "\"}}]}", LEAKY},
	/* unquoted: jansson quotes these tokens whole */
	{VAULT_AT "nullSecretabcdef}}]}", "Secretabcdef"},
	{VAULT_AT "9876543210abcdef0123}}]}", "abcdef0123"},
	{VAULT_AT "1234567890123e99999}}]}", "1234567890123e99999"},
};

Test(policy_json, errors_never_quote_a_secret)
{
	struct fw_policy p;

	for (size_t i = 0; i < sizeof(broken_vaults) / sizeof(broken_vaults[0]); i++) {
		cr_assert_eq(from(broken_vaults[i].body, &p), -EINVAL, "case %zu parsed", i);
		cr_assert(strncmp(err, "malformed policy JSON: ", 23) == 0, "%s", err);
		cr_assert_not(leaks(err, broken_vaults[i].secret), "case %zu: %s", i, err);
	}
}

Test(policy_json, envelope_errors_never_quote_a_secret)
{
	struct fw_envelope env;

	for (size_t i = 0; i < sizeof(broken_vaults) / sizeof(broken_vaults[0]); i++) {
		const char *b = broken_vaults[i].body;

		err[0] = '\0';
		cr_assert_eq(fw_envelope_parse(b, strlen(b), &env, err, sizeof(err)), -EINVAL);
		cr_assert(strncmp(err, "malformed JSON: ", 16) == 0, "%s", err);
		cr_assert_not(leaks(err, broken_vaults[i].secret), "case %zu: %s", i, err);
	}
}

/* fastwallBandwidth, fastwall's extension: {rate, burst} or "off", kept by
 * a push that does not say it, bounded, refused whole when wrong. */
Test(policy_json, fastwall_bandwidth_extension)
{
	struct fw_policy p, patch;
	char warn[256];
	char *s;

	const char *in = "{\"fastwallBandwidth\":{\"rate\":1250000,\"burst\":65536}}";

	cr_assert_eq(
		fw_policy_from_json_warn(in, strlen(in), &p, err, sizeof(err), warn, sizeof(warn)),
		0, "%s", err);
	cr_expect_str_eq(warn, "", "a known key, no warning");
	cr_expect_eq(p.bw, FW_POLICY_BW_ON);
	cr_expect_eq(p.bw_rate, 1250000);
	cr_expect_eq(p.bw_burst, 65536);
	s = fw_policy_to_json(&p);
	cr_expect_str_eq(s, "{\"defaultAction\":\"deny\",\"egress\":[],"
			    "\"fastwallBandwidth\":{\"rate\":1250000,\"burst\":65536}}");
	free(s);
	/* a push without it keeps it; "off" removes it; a new one replaces it */
	cr_assert_eq(from("{\"defaultAction\":\"allow\"}", &patch), 0);
	cr_assert_eq(fw_policy_merge(&p, &patch), 0);
	cr_expect_eq(fw_policy_bw_rate(&p), 1250000);
	fw_policy_free(&patch);
	cr_assert_eq(from("{\"fastwallBandwidth\":{\"rate\":2000}}", &patch), 0, "%s", err);
	cr_expect_eq(patch.bw_burst, 1 << 20, "the default burst's floor");
	cr_assert_eq(fw_policy_merge(&p, &patch), 0);
	cr_expect_eq(fw_policy_bw_rate(&p), 2000);
	fw_policy_free(&patch);
	cr_assert_eq(from("{\"fastwallBandwidth\":\"off\"}", &patch), 0, "%s", err);
	cr_assert_eq(fw_policy_merge(&p, &patch), 0);
	cr_expect_eq(fw_policy_bw_rate(&p), 0);
	fw_policy_free(&patch);
	fw_policy_free(&p);
	cr_assert_eq(from("{\"fastwallBandwidth\":null}", &p), 0);
	cr_expect_eq(p.bw, FW_POLICY_BW_DEFAULT);
	s = fw_policy_to_json(&p);
	cr_expect_null(strstr(s, "fastwallBandwidth"), "not said, not written: %s", s);
	free(s);
	fw_policy_free(&p);

	static const struct {
		const char *json, *err;
	} bad[] = {
		{"{\"fastwallBandwidth\":{\"rate\":-5}}", "rate -5 out of range"},
		{"{\"fastwallBandwidth\":{\"rate\":0}}", "rate 0 out of range"},
		{"{\"fastwallBandwidth\":{\"rate\":999}}", "rate 999 out of range"},
		{"{\"fastwallBandwidth\":{\"rate\":99999999999999999999}}", "too big integer"},
		{"{\"fastwallBandwidth\":{\"rate\":12500000001}}", "out of range"},
		{"{\"fastwallBandwidth\":{\"rate\":1.5e6}}", "must be integers"},
		{"{\"fastwallBandwidth\":{\"rate\":\"10mbit\"}}", "must be integers"},
		{"{\"fastwallBandwidth\":{\"burst\":65536}}", "must be integers"},
		{"{\"fastwallBandwidth\":{\"rate\":1000000,\"burst\":1}}", "burst 1 out of range"},
		{"{\"fastwallBandwidth\":{\"rate\":1000000,\"ceil\":1}}", "unknown key"},
		{"{\"fastwallBandwidth\":\"on\"}", "must be {"},
		{"{\"fastwallBandwidth\":[1000000]}", "must be {"},
		{"{\"fastwallBandwidth\":{\"rate\":1000000}", "malformed policy JSON"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(from(bad[i].json, &p), -EINVAL, "%s accepted", bad[i].json);
		cr_expect(strstr(err, bad[i].err) != NULL, "%s: %s", bad[i].json, err);
		cr_expect_eq(p.bw, FW_POLICY_BW_DEFAULT, "%s: nothing kept", bad[i].json);
	}
}

/* fastwallL7, fastwall's extension of the policy object: "on"/"off" (or
 * true/false), kept by a push that does not say it, written back only
 * when said. */
Test(policy_json, fastwall_l7_extension)
{
	struct fw_policy p, patch;
	char warn[256];
	char *s;

	cr_assert_eq(fw_policy_from_json_warn("{\"fastwallL7\":\" OFF \"}", 22, &p, err,
					      sizeof(err), warn, sizeof(warn)),
		     0, "%s", err);
	cr_expect_eq(p.l7, FW_POLICY_L7_OFF);
	cr_expect_str_eq(warn, "", "a known key, no warning");
	s = fw_policy_to_json(&p);
	cr_expect_str_eq(s, "{\"defaultAction\":\"deny\",\"egress\":[],\"fastwallL7\":\"off\"}");
	free(s);
	fw_policy_free(&p);

	cr_assert_eq(from("{\"fastwallL7\":true}", &p), 0, "%s", err);
	cr_expect_eq(p.l7, FW_POLICY_L7_ON);
	/* a push without it keeps it; one with it changes it */
	cr_assert_eq(from("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.example\"}]}", &patch),
		     0);
	cr_assert_eq(fw_policy_merge(&p, &patch), 0);
	cr_expect_eq(p.l7, FW_POLICY_L7_ON);
	fw_policy_free(&patch);
	cr_assert_eq(from("{\"fastwallL7\":\"off\"}", &patch), 0);
	cr_assert_eq(fw_policy_merge(&p, &patch), 0);
	cr_expect_eq(p.l7, FW_POLICY_L7_OFF);
	cr_expect_eq(p.nrules, 1);
	fw_policy_free(&patch);
	fw_policy_free(&p);

	cr_assert_eq(from("{\"defaultAction\":\"allow\"}", &p), 0);
	cr_expect_eq(p.l7, FW_POLICY_L7_DEFAULT);
	s = fw_policy_to_json(&p);
	cr_expect_null(strstr(s, "fastwallL7"), "not said, not written: %s", s);
	free(s);
	fw_policy_free(&p);

	cr_expect_eq(from("{\"fastwallL7\":\"maybe\"}", &p), -EINVAL);
	cr_expect_str_eq(err, "fastwallL7: invalid l7 \"maybe\", expected on or off");
	cr_expect_eq(from("{\"fastwallL7\":1}", &p), -EINVAL);
	cr_expect(strstr(err, "fastwallL7") != NULL, "%s", err);
}
