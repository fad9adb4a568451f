// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Keys a policy does not know stay accepted (the format is shared and
 * ignores them) but are reported: in the YAML file with file:line, whose
 * policy and which rule, in the policy JSON with the rule's index; both
 * with the known key the typo looks like. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/cfgkeys.h"
#include "config/config.h"
#include "policy/json.h"

static struct fw_cfg cfg;
static char err[FW_CFG_ERR_LEN];

static void setup(void)
{
	fw_cfg_init(&cfg);
	err[0] = '\0';
}

static void teardown(void)
{
	fw_cfg_free(&cfg);
}

static int load(const char *yaml)
{
	fw_cfg_free(&cfg);
	return fw_cfg_load_buffer(yaml, strlen(yaml), "t.yaml", &cfg, err, sizeof(err));
}

TestSuite(typos, .init = setup, .fini = teardown);

Test(typos, suggest_the_closest_known_key)
{
	static const char *const policy[] = {"defaultAction", "egress"};
	static const char *const rule[] = {"action", "target", "ports"};

	cr_assert_str_eq(fw_ck_suggest("egres", policy, 2), "egress");
	cr_assert_str_eq(fw_ck_suggest("egrses", policy, 2), "egress"); /* a swap */
	cr_assert_str_eq(fw_ck_suggest("defaultaction", policy, 2), "defaultAction");
	cr_assert_str_eq(fw_ck_suggest("port", rule, 3), "ports");
	cr_assert_str_eq(fw_ck_suggest("targte", rule, 3), "target");
	cr_assert_null(fw_ck_suggest("comment", rule, 3));
	cr_assert_null(fw_ck_suggest("ab", rule, 3)); /* too short to guess */
	cr_assert_null(fw_ck_suggest("", rule, 3));
}

static const char typo_file[] = "subjects:\n"
				"  - name: sandbox-a\n"
				"    addresses: 10.0.0.2\n"
				"    policy:\n"
				"      defaultAction: deny\n"
				"      egres:\n"
				"        - { action: allow, target: x.example }\n"
				"      egress:\n"
				"        - { action: allow, target: y.example, port: [443] }\n"
				"        - { action: allow, target: z.example, comment: hi }\n";

Test(typos, yaml_unknown_policy_keys_warn_and_load)
{
	cr_assert_eq(load(typo_file), 0, "%s", err);
	/* accepted as before: the unknown keys change nothing */
	cr_assert_eq(cfg.nsubjects, 1);
	cr_assert_eq(cfg.subjects[0].policy.nrules, 2);
	cr_assert_eq(cfg.subjects[0].policy.rules[0].nports, 0);
	cr_assert_eq(cfg.nwarnings, 3);
	cr_assert_str_eq(cfg.warnings[0], "t.yaml:6: unknown key 'egres' in the policy of subject "
					  "sandbox-a, ignored (did you mean 'egress'?)");
	cr_assert_str_eq(cfg.warnings[1],
			 "t.yaml:9: unknown key 'port' in egress rule 1 of subject "
			 "sandbox-a, ignored (did you mean 'ports'?)");
	cr_assert_str_eq(cfg.warnings[2],
			 "t.yaml:10: unknown key 'comment' in egress rule 2 of subject sandbox-a, "
			 "ignored");
}

Test(typos, yaml_no_warning_for_a_clean_file)
{
	cr_assert_eq(load("subjects:\n"
			  "  - name: a\n"
			  "    addresses: 10.0.0.2\n"
			  "    policy: {defaultAction: deny, egress: [{target: x.example, ports: "
			  "[1]}]}\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nwarnings, 0);
	cr_assert_eq(cfg.warnings_lost, 0);
}

Test(typos, yaml_warnings_bounded_and_freed)
{
	char yaml[8192];
	size_t n;

	n = (size_t)snprintf(yaml, sizeof(yaml),
			     "subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n");
	for (int i = 0; i < FW_CFG_MAX_WARNINGS + 5; i++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "      k%d: 1\n", i);
	cr_assert_eq(load(yaml), 0, "%s", err);
	cr_assert_eq(cfg.nwarnings, FW_CFG_MAX_WARNINGS);
	cr_assert_eq(cfg.warnings_lost, 5);
	/* a reload of a file with none leaves none (and no leak under ASan) */
	cr_assert_eq(load(""), 0);
	cr_assert_eq(cfg.nwarnings, 0);
	cr_assert_eq(cfg.warnings_lost, 0);
}

Test(typos, yaml_control_bytes_in_a_key_not_echoed)
{
	cr_assert_eq(load("subjects:\n  - name: a\n    addresses: 10.0.0.2\n"
			  "    policy: {\"a\\nb\\u001b\": 1}\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nwarnings, 1);
	cr_assert_str_eq(cfg.warnings[0], "t.yaml:4: unknown key 'a?b?' in the policy of subject "
					  "a, ignored");
}

Test(typos, yaml_errors_unchanged_and_no_warnings_kept)
{
	cr_assert_eq(load("subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n"
			  "      egres: []\n      egress: [allow]\n"),
		     -22);
	cr_assert(strstr(err, "egress rule must be a mapping"), "%s", err);
	cr_assert_eq(cfg.nwarnings, 0);
	/* strict sections stay strict */
	cr_assert_eq(load("overlay: {denny: [x.example]}\n"), -22);
	cr_assert(strstr(err, "t.yaml:1: unknown key in overlay"), "%s", err);
}

Test(typos, json_unknown_keys_warned)
{
	static const char j[] =
		"{\"defaultAction\":\"deny\",\"egres\":[],"
		"\"egress\":[{\"action\":\"allow\",\"target\":\"x.example\",\"port\":[1]},"
		"{\"target\":\"y.example\",\"note\":\"n\"}]}";
	struct fw_policy p;
	char e[256] = "", w[512] = "x";

	cr_assert_eq(fw_policy_from_json_warn(j, strlen(j), &p, e, sizeof(e), w, sizeof(w)), 0,
		     "%s", e);
	cr_assert_eq(p.nrules, 2);
	cr_assert_eq(p.rules[0].nports, 0);
	cr_assert_str_eq(w,
			 "unknown key 'egres' ignored (did you mean 'egress'?); egress[0]: "
			 "unknown key 'port' ignored (did you mean 'ports'?); egress[1]: unknown "
			 "key 'note' ignored");
	fw_policy_free(&p);
}

Test(typos, json_clean_or_bounded)
{
	static const char ok[] = "{\"defaultAction\":\"allow\",\"egress\":[{\"target\":\"a.b\"}]}";
	static const char bad[] = "{\"egres\":1,\"egress\":[{\"target\":\"a.b\",\"prts\":[1]}],"
				  "\"x\\u001by\":2}";
	struct fw_policy p;
	char e[256] = "", w[24] = "x";

	cr_assert_eq(fw_policy_from_json_warn(ok, strlen(ok), &p, e, sizeof(e), w, sizeof(w)), 0);
	cr_assert_str_eq(w, "");
	fw_policy_free(&p);
	/* cut at the buffer, never past it */
	cr_assert_eq(fw_policy_from_json_warn(bad, strlen(bad), &p, e, sizeof(e), w, sizeof(w)), 0);
	cr_assert_eq(strlen(w), sizeof(w) - 1);
	cr_assert_eq(strncmp(w, "unknown key 'egres'", 19), 0, "%s", w);
	fw_policy_free(&p);
	/* and without a buffer, the old function, unchanged */
	cr_assert_eq(fw_policy_from_json(bad, strlen(bad), &p, e, sizeof(e)), 0);
	fw_policy_free(&p);
}
