// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The configuration key engine: each type's parsing and bounds on a table
 * of its own, defaults, the generated docs and schema; then the real
 * tables through the loader (unknown, duplicate, wrong shape, out of
 * range), the modules' defaults agreeing with the tables, and
 * docs/config.md being what the tables generate. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfgkeys.h"
#include "config/config.h"
#include "config/parse.h"
#include "dns/learn_keys.h"
#include "dns/proxy.h"
#include "dns/proxy_keys.h"

struct demo {
	bool on;
	__u16 port;
	__u32 count;
	__u64 big;
	__u64 wait_ns;
	__u32 wait_s;
	char path[16];
	char name[8];
	int mode;
	bool wipe;
};

static int no_seven(const char *name, const char *s, unsigned long long v, char *msg, size_t msglen)
{
	(void)s;
	if (v == 7) {
		snprintf(msg, msglen, "%s must not be 7", name);
		return -EINVAL;
	}
	return 0;
}

static const struct fw_ck_name modes[] = {{"low", 1}, {"mid", 5}, {"high", 9}, {NULL, 0}};
static const struct fw_ck_name wipes[] = {{"keep", 0}, {"wipe", 1}, {NULL, 0}};

#define F(m) FW_CK_FIELD(struct demo, m)

static const struct fw_cfgkey demo_keys[] = {
	{.key = "on", .type = FW_CK_BOOL, F(on), .def = 1, .doc = "switch", .reload = FW_CK_RELOAD},
	{.key = "port",
	 .type = FW_CK_UINT,
	 F(port),
	 .min = 1,
	 .max = 65535,
	 .def = 80,
	 .check = no_seven},
	{.key = "count",
	 .type = FW_CK_UINT,
	 F(count),
	 .min = 0,
	 .max = 10,
	 .def = 3,
	 .reload = FW_CK_RELOAD},
	{.key = "big", .type = FW_CK_UINT, F(big), .min = 0, .max = ~0ULL, .def = 0},
	{.key = "wait",
	 .type = FW_CK_DURATION,
	 F(wait_ns),
	 .min = 1,
	 .max = 60,
	 .def = 5,
	 .scale = FW_NSEC_PER_SEC},
	{.key = "wait_s", .type = FW_CK_DURATION, F(wait_s), .min = 0, .max = 100, .def = 2},
	{.key = "path", .type = FW_CK_PATH, F(path), .def_str = "/run/x"},
	{.key = "name", .type = FW_CK_STRING, F(name), .def_str = "abc"},
	{.key = "mode", .type = FW_CK_ENUM, F(mode), .names = modes, .def = 5},
	{.key = "wipe", .type = FW_CK_ENUM, F(wipe), .names = wipes, .def = 0},
	{.key = "list",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of things",
	 .def_doc = "none",
	 .doc = "parsed by its owner",
	 .reload = FW_CK_PER_KEY},
};

static const struct fw_cfgtable demo = FW_CK_TABLE("sec", demo_keys);

static struct demo d;
static char msg[256];

/* parses s into key and returns the error, msg holding its text */
static int set(const char *key, const char *s)
{
	const struct fw_cfgkey *k = fw_ck_find(&demo, key);

	cr_assert_not_null(k, "no key %s", key);
	msg[0] = '\0';
	return fw_ck_parse(&demo, k, s, &d, msg, sizeof(msg));
}

static void fresh(void)
{
	memset(&d, 0xa5, sizeof(d));
	fw_ck_defaults(&demo, &d);
}

TestSuite(cfgkeys, .init = fresh);

Test(cfgkeys, defaults)
{
	cr_expect_eq(d.on, true);
	cr_expect_eq(d.port, 80);
	cr_expect_eq(d.count, 3);
	cr_expect_eq(d.big, 0);
	cr_expect_eq(d.wait_ns, 5ULL * 1000000000);
	cr_expect_eq(d.wait_s, 2);
	cr_expect_str_eq(d.path, "/run/x");
	cr_expect_str_eq(d.name, "abc");
	cr_expect_eq(d.mode, 5);
	cr_expect_eq(d.wipe, false);
	cr_expect_null(fw_ck_find(&demo, "nope"));
}

Test(cfgkeys, bool_values)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	static const char *const bad[] = {"yes", "on", "1", "", "tru", "true "};

	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(set("on", no[i]), 0);
		cr_expect_eq(d.on, false, "%s", no[i]);
		cr_expect_eq(set("on", yes[i]), 0);
		cr_expect_eq(d.on, true, "%s", yes[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d.on = false;
		cr_expect_eq(set("on", bad[i]), -EINVAL, "'%s' accepted", bad[i]);
		cr_expect_str_eq(msg, "sec.on must be true or false");
		cr_expect_eq(d.on, false, "a refused value leaves the field");
	}
}

Test(cfgkeys, uint_bounds)
{
	cr_expect_eq(set("port", "1"), 0);
	cr_expect_eq(d.port, 1);
	cr_expect_eq(set("port", "65535"), 0);
	cr_expect_eq(d.port, 65535);
	cr_expect_eq(set("port", "65536"), -EINVAL);
	cr_expect_str_eq(msg, "sec.port must be between 1 and 65535");
	cr_expect_eq(d.port, 65535);
	cr_expect_eq(set("port", "0"), -EINVAL);
	cr_expect_str_eq(msg, "sec.port must be between 1 and 65535");
	cr_expect_eq(set("port", "7"), -EINVAL, "the key's own check runs");
	cr_expect_str_eq(msg, "sec.port must not be 7");
	cr_expect_eq(d.port, 65535);
	cr_expect_eq(set("count", "0"), 0);
	cr_expect_eq(d.count, 0);
	cr_expect_eq(set("count", "10"), 0);
	cr_expect_eq(set("count", "11"), -EINVAL);
	cr_expect_eq(set("count", "010"), 0, "leading zeros are decimal");
	cr_expect_eq(d.count, 10);
	cr_expect_eq(set("big", "18446744073709551615"), 0);
	cr_expect_eq(d.big, ~0ULL);
	cr_expect_eq(set("big", "18446744073709551616"), -EINVAL, "no wrap past 64 bits");
	cr_expect_eq(set("big", "99999999999999999999999"), -EINVAL);
	for (const char *const *s =
		     (const char *const[]){"-1", "+1", " 1", "1 ", "0x10", "1.5", "5s", "", NULL};
	     *s; s++) {
		cr_expect_eq(set("count", *s), -EINVAL, "'%s' accepted", *s);
		cr_expect_str_eq(msg, "sec.count must be a non-negative integer", "'%s'", *s);
	}
}

Test(cfgkeys, duration_scales)
{
	cr_expect_eq(set("wait", "60"), 0);
	cr_expect_eq(d.wait_ns, 60ULL * 1000000000);
	cr_expect_eq(set("wait", "0"), -EINVAL);
	cr_expect_str_eq(msg, "sec.wait must be between 1 and 60");
	cr_expect_eq(set("wait", "61"), -EINVAL);
	cr_expect_eq(set("wait", "5m"), -EINVAL);
	cr_expect_eq(d.wait_ns, 60ULL * 1000000000);
	cr_expect_eq(set("wait_s", "0"), 0, "no scale: stored as written");
	cr_expect_eq(d.wait_s, 0);
	cr_expect_eq(set("wait_s", "100"), 0);
	cr_expect_eq(d.wait_s, 100);
}

Test(cfgkeys, path_and_string_lengths)
{
	cr_expect_eq(set("path", "/a/b/c/d/e/f/g/h"), -EINVAL, "16 bytes do not fit 16");
	cr_expect_str_eq(msg, "sec.path must be an absolute path shorter than 16 bytes");
	cr_expect_eq(set("path", "/a/b/c/d/e/f/gh"), 0);
	cr_expect_str_eq(d.path, "/a/b/c/d/e/f/gh");
	cr_expect_eq(set("path", "relative"), -EINVAL);
	cr_expect_eq(set("path", ""), -EINVAL);
	cr_expect_str_eq(d.path, "/a/b/c/d/e/f/gh");
	cr_expect_eq(set("name", "1234567"), 0);
	cr_expect_str_eq(d.name, "1234567");
	cr_expect_eq(set("name", "12345678"), -EINVAL);
	cr_expect_str_eq(msg, "sec.name must be shorter than 8 bytes");
	cr_expect_str_eq(d.name, "1234567");
}

Test(cfgkeys, enum_names)
{
	cr_expect_eq(set("mode", "high"), 0);
	cr_expect_eq(d.mode, 9);
	cr_expect_eq(set("mode", "HIGH"), -EINVAL, "names are exact");
	cr_expect_str_eq(msg, "invalid sec.mode, expected low, mid or high");
	cr_expect_eq(d.mode, 9);
	cr_expect_eq(set("wipe", "wipe"), 0);
	cr_expect_eq(d.wipe, true);
	cr_expect_eq(set("wipe", "both"), -EINVAL);
	cr_expect_str_eq(msg, "invalid sec.wipe, expected keep or wipe");
}

Test(cfgkeys, section_keys_are_not_scalars)
{
	cr_expect_eq(set("list", "x"), -EINVAL);
}

Test(cfgkeys, format_round_trip)
{
	char buf[64];

	for (size_t i = 0; i < demo.nkeys; i++) {
		const struct fw_cfgkey *k = &demo.keys[i];
		struct demo copy;

		if (k->type == FW_CK_SECTION)
			continue;
		cr_assert_eq(fw_ck_format(k, &d, buf, sizeof(buf)), 0, "%s", k->key);
		memset(&copy, 0, sizeof(copy));
		cr_assert_eq(fw_ck_parse(&demo, k, buf, &copy, msg, sizeof(msg)), 0, "%s: %s",
			     k->key, msg);
		if (k->type == FW_CK_PATH || k->type == FW_CK_STRING)
			cr_expect_str_eq((char *)&copy + k->off, (char *)&d + k->off, "%s", k->key);
		else
			cr_expect_eq(memcmp((char *)&copy + k->off, (char *)&d + k->off, k->size),
				     0, "%s", k->key);
	}
}

static char *capture(void (*fn)(FILE *f, void *arg), void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	fn(f, arg);
	fclose(f);
	return buf;
}

static void demo_md(FILE *f, void *arg)
{
	const struct fw_cfgtable *t[] = {&demo};

	(void)arg;
	fw_ck_markdown(f, t, 1);
}

Test(cfgkeys, markdown_rows)
{
	char *md = capture(demo_md, NULL);

	cr_expect(strstr(md,
			 "| key | type | default | reload | meaning |\n|---|---|---|---|---|\n") ==
			  md,
		  "%s", md);
	cr_expect(strstr(md, "| `on` | bool | `true` | SIGHUP | switch |\n"), "%s", md);
	cr_expect(strstr(md, "| `count` | integer 0-10 | 3 | SIGHUP |"), "%s", md);
	cr_expect(strstr(md, "| `wait` | seconds, 1-60 | 5 | restart |"), "%s", md);
	cr_expect(strstr(md, "| `path` | absolute path, < 16 bytes | `/run/x` | restart |"), "%s",
		  md);
	cr_expect(strstr(md, "| `mode` | `low` \\| `mid` \\| `high` | `mid` | restart |"), "%s",
		  md);
	cr_expect(strstr(md, "| `list` | list of things | none | per key | parsed by its owner |"),
		  "%s", md);
	free(md);
}

struct kept_log {
	char names[512], values[512];
};

static void note_kept(void *ctx, const char *name, const char *running)
{
	struct kept_log *k = ctx;

	snprintf(k->names + strlen(k->names), sizeof(k->names) - strlen(k->names), "%s ", name);
	snprintf(k->values + strlen(k->values), sizeof(k->values) - strlen(k->values), "%s ",
		 running);
}

/* A reload keeps the running value of every restart-only key it
 * changes, says which with the value kept, and applies the others. */
Test(cfgkeys, keep_restart_only_keys)
{
	struct demo run = d, next = d;
	struct kept_log k = {};

	cr_assert_eq(set("port", "8080"), 0, "%s", msg);
	cr_assert_eq(set("path", "/run/y"), 0, "%s", msg);
	cr_assert_eq(set("count", "9"), 0, "%s", msg);
	cr_assert_eq(set("on", "false"), 0, "%s", msg);
	cr_assert_eq(set("mode", "high"), 0, "%s", msg);
	next = d; /* what the file says now; run holds the defaults */
	cr_expect_eq(fw_ck_keep(&demo, &next, &run, note_kept, &k), 3);
	cr_expect_str_eq(k.names, "sec.port sec.path sec.mode ");
	cr_expect_str_eq(k.values, "80 /run/x mid ");
	cr_expect_eq(next.port, 80, "restart only: the running value");
	cr_expect_str_eq(next.path, "/run/x");
	cr_expect_eq(next.mode, 5);
	cr_expect_eq(next.count, 9, "SIGHUP: the new value");
	cr_expect_eq(next.on, false);
	memset(&k, 0, sizeof(k));
	cr_expect_eq(fw_ck_keep(&demo, &next, &run, note_kept, &k), 0,
		     "what runs is what the next reload compares with");
	cr_expect_str_eq(k.names, "");
}

Test(cfgkeys, keep_compares_strings_up_to_their_end)
{
	struct demo run = d, next = d;

	/* the bytes after the NUL are what a longer value left */
	snprintf(run.path, sizeof(run.path), "/run/longer");
	snprintf(run.path, sizeof(run.path), "/run/x");
	cr_expect_eq(fw_ck_keep(&demo, &next, &run, NULL, NULL), 0);
}

static void schema_of(FILE *f, void *arg)
{
	(void)arg;
	fw_cfg_keys_schema(f);
}

Test(cfgkeys, schema_is_json_of_the_tables)
{
	char *text = capture(schema_of, NULL);
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr), *dns, *p;

	cr_assert_not_null(root, "line %d: %s\n%s", jerr.line, jerr.text, text);
	dns = json_object_get(root, "properties");
	cr_assert_not_null(dns);
	cr_expect_str_eq(
		json_string_value(json_object_get(json_object_get(dns, "log_level"), "default")),
		"info");
	dns = json_object_get(json_object_get(dns, "dns"), "properties");
	cr_assert_not_null(dns, "%s", text);
	p = json_object_get(dns, "timeout");
	cr_expect_eq(json_integer_value(json_object_get(p, "minimum")), 1);
	cr_expect_eq(json_integer_value(json_object_get(p, "maximum")), 60);
	cr_expect_eq(json_integer_value(json_object_get(p, "default")), 5);
	p = json_object_get(json_object_get(json_object_get(dns, "lease"), "properties"), "max");
	cr_expect_eq(json_integer_value(json_object_get(p, "default")), 360, "%s", text);
	cr_expect_null(json_object_get(dns, "upstreams"), "lists are not in the schema");
	json_decref(root);
	free(text);
}

/* --- the real tables -------------------------------------------------- */

Test(cfgkeys, modules_take_their_defaults_from_the_tables)
{
	struct fw_dnsp_config pc;
	struct fw_learn_config lc;
	struct fw_cfg cfg;

	fw_dnsp_config_init(&pc);
	fw_learn_config_init(&lc);
	cr_expect_eq(pc.port, fw_ck_find(&fw_dnsp_keys, "port")->def);
	cr_expect_eq(pc.workers, fw_ck_find(&fw_dnsp_keys, "workers")->def);
	cr_expect_eq(pc.timeout_ns, fw_ck_find(&fw_dnsp_keys, "timeout")->def * FW_NSEC_PER_SEC);
	cr_expect_eq(pc.tcp_idle_ns,
		     fw_ck_find(&fw_dnsp_keys, "tcp_query_timeout")->def * FW_NSEC_PER_SEC);
	cr_expect_eq(lc.lease_max_s, fw_ck_find(&fw_learn_lease_keys, "max")->def);
	cr_expect_eq(lc.tcp_idle_ns,
		     fw_ck_find(&fw_learn_keys, "tcp_idle_timeout")->def * FW_NSEC_PER_SEC);
	cr_expect(pc.ipv6, "fields without a key keep the module's own defaults");
	cr_expect_eq(lc.close_linger_ns, 120ULL * 1000000000);

	fw_cfg_init(&cfg);
	cr_expect_eq(memcmp(&cfg.dnsp, &pc, sizeof(pc)), 0, "the daemon's are the module's");
	cr_expect_eq(memcmp(&cfg.learn, &lc, sizeof(lc)), 0);
	cr_expect_str_eq(cfg.actions_listen, "127.0.0.1:18080");
	cr_expect_str_eq(cfg.actions_vault_socket, "/run/fastwall/vault.sock");
	cr_expect_eq(cfg.actions_grace_ns, 10ULL * 1000000000);
	cr_expect_eq(cfg.actions_pending_ttl_ns, 30ULL * 1000000000);
	cr_expect(cfg.actions_bind_host_veth);
	cr_expect_not(cfg.actions_restart_wipe);
	cr_expect_not(cfg.actions_enabled);
	fw_cfg_free(&cfg);
}

static const struct fw_cfgtable *const all_tables[] = {
	&cfg_top_keys,	   &cfg_datapath_keys,	 &cfg_doh_keys,	    &cfg_events_keys,
	&cfg_actions_keys, &cfg_processes_keys,	 &cfg_dns_keys,	    &fw_dnsp_keys,
	&fw_learn_keys,	   &fw_learn_lease_keys, &cfg_metrics_keys, &cfg_guard_keys,
	&cfg_monitor_keys, &cfg_audit_keys,
};

/* fw_ck_keep copies a restart-only key through its field: one without a
 * field (a list, a section of keys) would silently change on reload */
Test(cfgkeys, restart_only_keys_have_a_field)
{
	for (size_t j = 0; j < sizeof(all_tables) / sizeof(all_tables[0]); j++) {
		for (size_t i = 0; i < all_tables[j]->nkeys; i++) {
			const struct fw_cfgkey *k = &all_tables[j]->keys[i];
			char name[96];

			fw_ck_name(all_tables[j], k, name, sizeof(name));
			cr_expect(k->reload != FW_CK_RESTART || k->size,
				  "%s: restart only, no field", name);
			cr_expect(k->reload != FW_CK_PER_KEY || k->type == FW_CK_SECTION,
				  "%s: per key, not a section", name);
		}
	}
}

static struct fw_cfg cfg;
static char err[FW_CFG_ERR_LEN];

static int load(const char *yaml)
{
	fw_cfg_free(&cfg);
	err[0] = '\0';
	return fw_cfg_load_buffer(yaml, strlen(yaml), "k.yaml", &cfg, err, sizeof(err));
}

Test(cfgkeys, loader_errors)
{
	static const struct {
		const char *yaml, *want;
	} bad[] = {
		{"dns:\n  timeout: 0\n",
		 "k.yaml:2: dns.timeout must be between 1 and 60 (value '0')"},
		{"dns:\n  timeout: [1]\n", "k.yaml:2: dns.timeout must be a scalar, not a list"},
		{"dns:\n  timeout: 5\n  timeout: 6\n",
		 "k.yaml:3: duplicate key in dns, first at line 2 (value 'timeout')"},
		{"dns:\n  timeot: 5\n", "k.yaml:2: unknown key in dns (value 'timeot')"},
		{"dns:\n  port: 853\n", "k.yaml:2: dns.port must not be 53 or 853 (value '853')"},
		{"dns:\n  lease:\n    min: 0\n",
		 "k.yaml:3: dns.lease.min must be between 1 and 86400 (value '0')"},
		{"dns:\n  lease: 5\n", "k.yaml:2: dns.lease must be a mapping, not a scalar"},
		{"dns:\n  case_randomize: 1\n",
		 "k.yaml:2: dns.case_randomize must be true or false (value '1')"},
		{"dns:\n  tcp_idle_timeout: 604801\n",
		 "k.yaml:2: dns.tcp_idle_timeout must be between 1 and 604800 (value '604801')"},
		{"actions:\n  restart: never\n",
		 "k.yaml:2: invalid actions.restart, expected keep or wipe (value 'never')"},
		{"actions:\n  listen: 192.0.2.1:80\n",
		 "k.yaml:2: actions.listen must be a loopback address (value '192.0.2.1:80')"},
		{"actions:\n  listen: \"127.0.0.1:000000000000000000000000000000000000000000000000"
		 "0000000080\"\n",
		 "k.yaml:2: actions.listen must be shorter than 64 bytes"},
		{"actions:\n  grace: 3601\n", "k.yaml:2: actions.grace must be between 0 and 3600"},
		{"actions:\n  vault_socket: run/v.sock\n",
		 "k.yaml:2: actions.vault_socket must be an absolute path shorter than 108 bytes"},
		{"datapath:\n  fragment_timeout: 301\n",
		 "k.yaml:2: datapath.fragment_timeout must be between 1 and 300 (value '301')"},
		{"log_level: loud\n",
		 "k.yaml:1: invalid log_level, expected error, warn, info or debug (value 'loud')"},
	};

	fw_cfg_init(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(load(bad[i].yaml), -EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, bad[i].want) == err, "case %zu: want %s\n got %s", i,
			  bad[i].want, err);
		cr_expect_str_eq(cfg.actions_listen, "127.0.0.1:18080", "case %zu", i);
		cr_expect_eq(cfg.dnsp.timeout_ns, 5ULL * 1000000000, "case %zu", i);
	}
	fw_cfg_free(&cfg);
}

Test(cfgkeys, loader_sets_every_module)
{
	fw_cfg_init(&cfg);
	cr_assert_eq(load("actions:\n"
			  "  listen: \"[::1]:9000\"\n"
			  "  restart: wipe\n"
			  "  grace: 0\n"
			  "  bind_host_veth: false\n"
			  "dns:\n"
			  "  timeout: ~\n"
			  "  workers: 3\n"
			  "  lease: {max: 1000}\n"),
		     0, "%s", err);
	cr_expect(cfg.actions_enabled);
	cr_expect_str_eq(cfg.actions_listen, "[::1]:9000");
	cr_expect(cfg.actions_restart_wipe);
	cr_expect_eq(cfg.actions_grace_ns, 0);
	cr_expect_not(cfg.actions_bind_host_veth);
	cr_expect_eq(cfg.dnsp.timeout_ns, 5ULL * 1000000000, "null is absent");
	cr_expect_eq(cfg.dnsp.workers, 3);
	cr_expect_eq(cfg.learn.lease_max_s, 1000);
	cr_expect_eq(cfg.learn.lease_min_s, 60);
	cr_assert_eq(load("actions:\n"), 0, "%s", err);
	cr_expect(cfg.actions_enabled, "an empty actions section turns it on");
	cr_assert_eq(load("log_level: warn\n"), 0, "%s", err);
	cr_expect_not(cfg.actions_enabled);
	fw_cfg_free(&cfg);
}

/* The daemon's reload: the keys it cannot apply keep what runs, in every
 * module's table (the proxy's dns.workers as much as monitor.socket). */
Test(cfgkeys, reload_keeps_what_runs)
{
	struct fw_cfg run;
	struct kept_log k = {};

	fw_cfg_init(&run);
	fw_cfg_init(&cfg);
	cr_assert_eq(load("dns:\n"
			  "  workers: 4\n"
			  "  max_tcp_clients: 100\n"
			  "  redirect_all: false\n"
			  "  lease: {max: 1000}\n"
			  "monitor:\n"
			  "  socket: /run/other.sock\n"
			  "  reader_queue: 10\n"
			  "  allow_sample: 5\n"
			  "actions:\n"
			  "  grace: 3\n"
			  "metrics:\n"
			  "  listen: \"\"\n"),
		     0, "%s", err);
	cr_expect_eq(fw_cfg_keep_restart_keys(&cfg, &run, note_kept, &k), 7, "%s", k.names);
	cr_expect_str_eq(k.names, "actions actions.grace dns.workers dns.max_tcp_clients "
				  "metrics.listen monitor.socket monitor.reader_queue ");
	cr_expect_str_eq(k.values,
			 "absent 10 2 256 127.0.0.1:9464 /run/fastwall/monitor.sock 4096 ");
	cr_expect_eq(cfg.dnsp.workers, 2);
	cr_expect_eq(cfg.dnsp.max_tcp_clients, 256);
	cr_expect_str_eq(cfg.monitor_socket, "/run/fastwall/monitor.sock");
	cr_expect_eq(cfg.monitor_queue, 4096);
	cr_expect_not(cfg.actions_enabled);
	cr_expect_eq(cfg.actions_grace_ns, 10ULL * 1000000000);
	cr_expect_str_eq(cfg.metrics_listen, "127.0.0.1:9464");
	cr_expect_not(cfg.dns_redirect_all, "SIGHUP keys change");
	cr_expect_eq(cfg.learn.lease_max_s, 1000);
	cr_expect_eq(cfg.monitor_allow_sample, 5);
	cr_expect_eq(fw_cfg_keep_restart_keys(&cfg, &run, NULL, NULL), 0);
	fw_cfg_free(&run);
	fw_cfg_free(&cfg);
}

/* docs/config.md's key tables are what the tables generate: after a
 * change to a table, `fastwalld config-keys --doc docs/config.md`. */
Test(cfgkeys, docs_match_the_tables)
{
	char *text = NULL, *out = NULL;
	size_t cap = 0, len = 0;
	FILE *f = fopen("docs/config.md", "r"), *m;
	char e[128] = "";

	cr_assert_not_null(f, "run from the repository root");
	cr_assert_geq(getdelim(&text, &cap, '\0', f), 0);
	fclose(f);
	cr_assert(strstr(text, "<!-- keys: dns -->"), "docs/config.md lost its markers");
	m = open_memstream(&out, &len);
	cr_assert_eq(fw_cfg_keys_doc(text, m, e, sizeof(e)), 0, "%s", e);
	fclose(m);
	cr_expect_str_eq(out, text,
			 "docs/config.md differs from the key tables: run "
			 "build/fastwalld config-keys --doc docs/config.md");
	free(out);
	free(text);
}

Test(cfgkeys, doc_markers_are_checked)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char e[128] = "";

	cr_expect_eq(
		fw_cfg_keys_doc("a\n<!-- keys: nope -->\n<!-- end keys -->\n", m, e, sizeof(e)),
		-EINVAL);
	cr_expect(strstr(e, "line 2: unknown keys section"), "%s", e);
	cr_expect_eq(fw_cfg_keys_doc("<!-- keys: dns -->\n| old |\n", m, e, sizeof(e)), -EINVAL);
	cr_expect(strstr(e, "not closed"), "%s", e);
	fclose(m);
	free(out);
	m = open_memstream(&out, &len);
	cr_expect_eq(fw_cfg_keys_doc("x\n<!-- keys: dns.lease -->\n| old |\n<!-- end keys -->\ny\n",
				     m, e, sizeof(e)),
		     0);
	fclose(m);
	cr_expect(strstr(out, "| `add` | seconds, 0-86400 | 60 |"), "%s", out);
	cr_expect_null(strstr(out, "| old |"));
	cr_expect(strstr(out, "<!-- end keys -->\ny\n"), "%s", out);
	free(out);
}
