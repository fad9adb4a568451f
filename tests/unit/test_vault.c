// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Credential vaults: what a push is refused with (exact texts), which
 * binding hosts the subject's policy admits, merge/replace/delete, and that
 * a secret never comes back in a GET, an error or an ETag. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "policy/policy.h"
#include "common/secmem.h"
#include "fastwall/l7vault.h"
#include "protocol/vault.h"

#define SECRET	"sk-live-0123456789abcdef"
#define SECRET2 "sk-live-fedcba9876543210"

static char err[512];
static struct fw_policy pol;

/* deny rules placed where first-match order makes them bite */
static void setup(void)
{
	static const char *const rules[][2] = {
		{"deny", "*.internal.example.com"}, {"deny", "evil.example.com"},
		{"allow", "*.example.com"},	    {"allow", "api.github.com"},
		{"allow", "203.0.113.0/24"},	    {"deny", "203.0.113.7"},
		{"allow", "2001:db8::/32"},
	};

	fw_policy_init(&pol);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		cr_assert_eq(fw_policy_add_rule(&pol, rules[i][0], rules[i][1], NULL, 0, err,
						sizeof(err)),
			     0, "%s", err);
}

static void teardown(void)
{
	fw_policy_free(&pol);
}

TestSuite(vault, .init = setup, .fini = teardown);

/* a one-credential, one-binding body */
static char *body1(const char *cred, const char *value, const char *host, const char *ref)
{
	char *b;

	cr_assert(asprintf(&b,
			   "{\"credentials\":[{\"name\":\"%s\",\"source\":{\"type\":\"inline\","
			   "\"value\":\"%s\"}}],"
			   "\"bindings\":[{\"name\":\"b-%s\",\"match\":{\"schemes\":[\"https\"],"
			   "\"ports\":[443],\"hosts\":[\"%s\"],\"methods\":[\"GET\"],"
			   "\"paths\":[\"/v1/\"]},\"auth\":{\"type\":\"apiKey\",\"name\":"
			   "\"X-Api-Key\",\"credential\":\"%s\"}}]}",
			   cred, value, cred, host, ref) > 0);
	return b;
}

static int parse(const char *body, unsigned int flags, struct fw_vault **v)
{
	err[0] = '\0';
	return fw_vault_parse(body, strlen(body), &pol, flags, v, err, sizeof(err));
}

static struct fw_vault *must_parse(const char *body, unsigned int flags)
{
	struct fw_vault *v;
	int ret = parse(body, flags, &v);

	cr_assert_eq(ret, 0, "parse: %d %s", ret, err);
	cr_assert(v);
	return v;
}

Test(vault, accepts_full_body)
{
	char *b = body1("gh", SECRET, "api.github.com", "gh");
	struct fw_vault *v = must_parse(b, 0);
	char *json = fw_vault_redacted_json(v);

	cr_assert(json);
	cr_assert_str_eq(json,
			 "{\"credentials\":[{\"name\":\"gh\",\"source\":{\"type\":\"inline\","
			 "\"value\":\"***\"}}],\"bindings\":[{\"name\":\"b-gh\",\"match\":{"
			 "\"schemes\":[\"https\"],\"ports\":[443],\"hosts\":[\"api.github.com\"],"
			 "\"methods\":[\"GET\"],\"paths\":[\"/v1/\"]},\"auth\":{\"type\":"
			 "\"apiKey\",\"name\":\"X-Api-Key\",\"credential\":\"gh\"}}]}");
	cr_assert_null(strstr(json, SECRET));
	free(json);
	fw_vault_free(v);
	free(b);
}

Test(vault, empty_body_is_an_empty_vault)
{
	struct fw_vault *v = must_parse("{}", 0);
	char *json = fw_vault_redacted_json(v);

	cr_assert_str_eq(json, "{\"credentials\":[],\"bindings\":[]}");
	free(json);
	fw_vault_free(v);
}

Test(vault, canonicalises_match_lists)
{
	struct fw_vault *v = must_parse(
		"{\"credentials\":[{\"name\":\"k\",\"source\":{\"type\":\"inline\",\"value\":\"v\"}"
		"}],"
		"\"bindings\":[{\"name\":\"b\",\"extra\":1,\"match\":{\"schemes\":[\"HTTPS\","
		"\"http\"],"
		"\"hosts\":[\"API.GitHub.com.\",\"*.API.Example.com\",\"203.0.113.5\",\"2001:DB8::"
		"1\"],"
		"\"methods\":[\"post\"]},\"auth\":{\"type\":\"apiKey\",\"name\":\"Authorization\","
		"\"credential\":\"k\"}}]}",
		0);
	char *json = fw_vault_redacted_json(v);

	cr_assert(strstr(json, "\"match\":{\"schemes\":[\"https\",\"http\"],\"hosts\":["
			       "\"api.github.com\",\"*.api.example.com\",\"203.0.113.5\","
			       "\"2001:db8::1\"],\"methods\":[\"POST\"]}"),
		  "%s", json);
	cr_assert_null(strstr(json, "extra"));
	free(json);
	fw_vault_free(v);
}

struct bad_case {
	const char *desc;
	const char *body;
	const char *err;
};

#define CRED(name, type, value)                                                                    \
	"{\"name\":" name ",\"source\":{\"type\":" type ",\"value\":" value "}}"
#define GOOD_CRED		CRED("\"k\"", "\"inline\"", "\"" SECRET "\"")
#define BIND(name, match, auth) "{\"name\":" name ",\"match\":" match ",\"auth\":" auth "}"
#define GOOD_MATCH		"{\"hosts\":[\"api.github.com\"]}"
#define GOOD_AUTH		"{\"type\":\"apiKey\",\"name\":\"X-Api-Key\",\"credential\":\"k\"}"
#define WITH_BINDING(b)		"{\"credentials\":[" GOOD_CRED "],\"bindings\":[" b "]}"
#define WITH_MATCH(m)		WITH_BINDING(BIND("\"b\"", m, GOOD_AUTH))
#define WITH_AUTH(a)		WITH_BINDING(BIND("\"b\"", GOOD_MATCH, a))

static const struct bad_case bad_cases[] = {
	{"not json", "{", "invalid JSON at line 1 column 1"},
	{"secret in truncated json", "{\"credentials\":[" CRED("\"k\"", "\"inline\"", "\"" SECRET),
	 "invalid JSON at line 1 column 89"},
	{"duplicate key", "{\"bindings\":[],\"bindings\":[]}", "invalid JSON at line 1 column 25"},
	{"array body", "[]", "vault body must be a JSON object"},
	{"credentials not array", "{\"credentials\":{}}", "credentials must be an array"},
	{"bindings not array", "{\"bindings\":\"x\"}", "bindings must be an array"},
	{"credential not object", "{\"credentials\":[1]}", "credentials[0] must be an object"},
	{"credential without name", "{\"credentials\":[{\"source\":{}}]}",
	 "credentials[0]: name must be a string of 1 to 128 printable characters"},
	{"credential name with quote",
	 "{\"credentials\":[" CRED("\"a\\\"b\"", "\"inline\"", "\"x\"") "]}",
	 "credentials[0]: name must be a string of 1 to 128 printable characters"},
	{"duplicate credential", "{\"credentials\":[" GOOD_CRED "," GOOD_CRED "]}",
	 "duplicate credential \"k\""},
	{"source missing", "{\"credentials\":[{\"name\":\"k\"}]}",
	 "credential \"k\": source must be an object"},
	{"source type missing", "{\"credentials\":[{\"name\":\"k\",\"source\":{\"value\":\"x\"}}]}",
	 "credential \"k\": source.type must be a string"},
	{"unknown source type",
	 "{\"credentials\":[" CRED("\"k\"", "\"env\"", "\"" SECRET "\"") "]}",
	 "credential \"k\": unsupported source type \"env\""},
	{"value not string", "{\"credentials\":[" CRED("\"k\"", "\"inline\"", "42") "]}",
	 "credential \"k\": source.value must be a string"},
	{"value empty", "{\"credentials\":[" CRED("\"k\"", "\"inline\"", "\"\"") "]}",
	 "credential \"k\": source.value is empty"},
	{"binding not object", "{\"bindings\":[null]}", "bindings[0] must be an object"},
	{"binding without name", WITH_BINDING(BIND("\"\"", GOOD_MATCH, GOOD_AUTH)),
	 "bindings[0]: name must be a string of 1 to 128 printable characters"},
	{"duplicate binding",
	 WITH_BINDING(
		 BIND("\"b\"", GOOD_MATCH, GOOD_AUTH) "," BIND("\"b\"", GOOD_MATCH, GOOD_AUTH)),
	 "duplicate binding \"b\""},
	{"match missing", WITH_BINDING("{\"name\":\"b\",\"auth\":" GOOD_AUTH "}"),
	 "binding \"b\": match must be an object"},
	{"auth missing", WITH_BINDING("{\"name\":\"b\",\"match\":" GOOD_MATCH "}"),
	 "binding \"b\": auth must be an object"},
	{"auth type unknown",
	 WITH_AUTH("{\"type\":\"digest\",\"name\":\"X\",\"credential\":\"k\"}"),
	 "binding \"b\": unsupported auth type \"digest\" (apiKey, bearer or basic)"},
	{"api key in Host",
	 WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"host\",\"credential\":\"k\"}"),
	 "binding \"b\": auth.name host routes or frames the request: not a credential's header"},
	{"api key in Transfer-Encoding",
	 WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"Transfer-Encoding\",\"credential\":\"k\"}"),
	 "binding \"b\": auth.name Transfer-Encoding routes or frames the request: not a "
	 "credential's header"},
	{"bearer with another header",
	 WITH_AUTH("{\"type\":\"bearer\",\"name\":\"X-Api-Key\",\"credential\":\"k\"}"),
	 "binding \"b\": auth type bearer sets Authorization: auth.name must be absent or "
	 "Authorization"},
	{"basic without a colon", WITH_AUTH("{\"type\":\"basic\",\"credential\":\"k\"}"),
	 "binding \"b\": auth type basic needs credential \"k\" to be user:password"},
	{"value with CR",
	 "{\"credentials\":[" CRED("\"k\"", "\"inline\"", "\"" SECRET "\\r\"") "]}",
	 "credential \"k\": source.value contains CR, LF or NUL"},
	{"value with LF",
	 "{\"credentials\":[" CRED("\"k\"", "\"inline\"", "\"" SECRET "\\nX-Evil: 1\"") "]}",
	 "credential \"k\": source.value contains CR, LF or NUL"},
	{"auth type missing", WITH_AUTH("{\"name\":\"X\",\"credential\":\"k\"}"),
	 "binding \"b\": auth.type must be a string"},
	{"auth header name bad",
	 WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"X Key\",\"credential\":\"k\"}"),
	 "binding \"b\": auth.name must be an HTTP header name"},
	{"auth credential missing", WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"X\"}"),
	 "binding \"b\": auth.credential must name a credential"},
	{"auth credential unknown",
	 WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"X\",\"credential\":\"nope\"}"),
	 "binding \"b\": unknown credential \"nope\""},
	{"hosts missing", WITH_MATCH("{}"), "binding \"b\": match.hosts is required"},
	{"hosts empty", WITH_MATCH("{\"hosts\":[]}"),
	 "binding \"b\": match.hosts must be a non-empty array"},
	{"hosts not strings", WITH_MATCH("{\"hosts\":[1]}"),
	 "binding \"b\": hosts must be strings"},
	{"host cidr", WITH_MATCH("{\"hosts\":[\"203.0.113.0/24\"]}"),
	 "binding \"b\": invalid host \"203.0.113.0/24\": expected a domain name, \"*.domain\" or "
	 "an IP address"},
	{"host with space", WITH_MATCH("{\"hosts\":[\" api.github.com\"]}"),
	 "binding \"b\": invalid host \" api.github.com\": expected a domain name, \"*.domain\" or "
	 "an IP address"},
	{"host bad label", WITH_MATCH("{\"hosts\":[\"a..example.com\"]}"),
	 "binding \"b\": invalid host \"a..example.com\": expected a domain name, \"*.domain\" or "
	 "an IP address"},
	{"host bare star", WITH_MATCH("{\"hosts\":[\"*\"]}"),
	 "binding \"b\": invalid host \"*\": expected a domain name, \"*.domain\" or an IP "
	 "address"},
	{"host outside policy", WITH_MATCH("{\"hosts\":[\"api.github.com\",\"pypi.org\"]}"),
	 "binding \"b\": host \"pypi.org\" is outside the subject's policy"},
	{"schemes not array", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"schemes\":\"https\"}"),
	 "binding \"b\": match.schemes must be an array"},
	{"scheme unknown", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"schemes\":[\"ftp\"]}"),
	 "binding \"b\": invalid scheme \"ftp\", expected http or https"},
	{"port zero", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"ports\":[443,0]}"),
	 "binding \"b\": match.ports[1] must be an integer 1-65535"},
	{"port string", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"ports\":[\"443\"]}"),
	 "binding \"b\": match.ports[0] must be an integer 1-65535"},
	{"method bad", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"methods\":[\"GE T\"]}"),
	 "binding \"b\": invalid method \"GE T\""},
	{"method not string", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"methods\":[true]}"),
	 "binding \"b\": match.methods[0] must be a string"},
	{"path relative", WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"paths\":[\"v1\"]}"),
	 "binding \"b\": invalid path \"v1\", expected \"/\" and printable characters without "
	 "spaces"},
};

Test(vault, rejects_with_exact_errors)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct fw_vault *v = (struct fw_vault *)1;
		int ret = parse(c->body, 0, &v);

		cr_expect_eq(ret, -EINVAL, "%s: ret %d", c->desc, ret);
		cr_expect_null(v, "%s: vault returned on error", c->desc);
		cr_expect_str_eq(err, c->err, "%s:\n  body %s\n  got  %s\n  want %s", c->desc,
				 c->body, err, c->err);
		cr_expect_null(strstr(err, SECRET), "%s: secret in error", c->desc);
	}
}

/* over the limits by one, and at them */
Test(vault, bounds)
{
	struct fw_vault *v;
	char *b, *val, *name, *list;
	size_t n;
	FILE *f;

	val = malloc(FW_VAULT_MAX_VALUE + 2);
	memset(val, 'z', FW_VAULT_MAX_VALUE + 1);
	val[FW_VAULT_MAX_VALUE + 1] = '\0';
	b = body1("k", val, "api.github.com", "k");
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "credential \"k\": source.value longer than 65536 bytes");
	cr_assert_null(strstr(err, "zzzz"));
	free(b);
	val[FW_VAULT_MAX_VALUE] = '\0';
	b = body1("k", val, "api.github.com", "k");
	fw_vault_free(must_parse(b, 0));
	free(b);
	free(val);

	name = malloc(FW_VAULT_MAX_NAME + 2);
	memset(name, 'n', FW_VAULT_MAX_NAME + 1);
	name[FW_VAULT_MAX_NAME + 1] = '\0';
	b = body1(name, "v", "api.github.com", name);
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "credentials[0]: name must be a string of 1 to 128 printable "
			      "characters");
	free(b);
	name[FW_VAULT_MAX_NAME] = '\0';
	b = body1(name, "v", "api.github.com", name);
	/* binding name is "b-" + 128: one over */
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "bindings[0]: name must be a string of 1 to 128 printable "
			      "characters");
	free(b);
	free(name);

	f = open_memstream(&b, &n);
	fprintf(f, "{\"credentials\":[");
	for (int i = 0; i <= FW_VAULT_MAX_CREDS; i++)
		fprintf(f, "%s{\"name\":\"c%d\",\"source\":{\"type\":\"inline\",\"value\":\"v\"}}",
			i ? "," : "", i);
	fprintf(f, "]}");
	fclose(f);
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "too many credentials (at most 256)");
	free(b);

	f = open_memstream(&b, &n);
	fprintf(f, "{\"bindings\":[");
	for (int i = 0; i <= FW_VAULT_MAX_BINDINGS; i++)
		fprintf(f, "%s{}", i ? "," : "");
	fprintf(f, "]}");
	fclose(f);
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "too many bindings (at most 256)");
	free(b);

	f = open_memstream(&list, &n);
	for (int i = 0; i <= FW_VAULT_MAX_LIST; i++)
		fprintf(f, "%s%d", i ? "," : "", i + 1);
	fclose(f);
	cr_assert(asprintf(&b, WITH_MATCH("{\"hosts\":[\"api.github.com\"],\"ports\":[%s]}"),
			   list) > 0);
	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	cr_assert_str_eq(err, "binding \"b\": too many ports (at most 64)");
	free(b);
	free(list);

	b = calloc(1, FW_VAULT_MAX_BODY + 1);
	memset(b, ' ', FW_VAULT_MAX_BODY);
	b[0] = '{';
	b[FW_VAULT_MAX_BODY - 1] = '}';
	fw_vault_free(must_parse(b, 0));
	cr_assert_eq(fw_vault_parse(b, FW_VAULT_MAX_BODY + 1, &pol, 0, &v, err, sizeof(err)),
		     -EINVAL);
	cr_assert_str_eq(err, "vault body larger than 1048576 bytes");
	free(b);
}

struct host_case {
	const char *host;
	bool allowed;
};

static const struct host_case host_cases[] = {
	{"api.github.com", true},
	{"API.GITHUB.COM.", true},
	{"x.example.com", true},
	{"a.b.example.com", true},
	{"example.com", false}, /* "*.example.com" does not match the apex */
	{"evil.example.com", false},
	{"a.internal.example.com", false},
	{"github.com", false},
	{"*.api.example.com", true},
	{"*.example.com", false},	   /* would cover evil.example.com */
	{"*.internal.example.com", false}, /* denied outright */
	{"*.x.internal.example.com", false},
	{"*.github.com", false}, /* only one name under it is allowed */
	{"203.0.113.5", true},
	{"203.0.113.7", false}, /* deny beats the earlier, wider allow */
	{"198.51.100.1", false},
	{"2001:db8::1", true},
	{"2001:db9::1", false},
};

Test(vault, binding_hosts_checked_against_policy)
{
	for (size_t i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		const struct host_case *c = &host_cases[i];
		char *b = body1("k", SECRET, c->host, "k"), want[256];
		struct fw_vault *v = NULL;
		int ret = parse(b, 0, &v);

		snprintf(want, sizeof(want),
			 "binding \"b-k\": host \"%s\" is outside the subject's policy", c->host);
		if (c->allowed) {
			cr_expect_eq(ret, 0, "%s: %s", c->host, err);
		} else {
			cr_expect_eq(ret, -EINVAL, "%s: accepted", c->host);
			cr_expect_str_eq(err, want, "%s", c->host);
		}
		fw_vault_free(v);
		free(b);
	}
}

Test(vault, default_allow_policy_and_family)
{
	struct fw_policy p;
	struct fw_vault *v;
	char *b;

	fw_policy_init(&p);
	cr_assert_eq(fw_policy_set_default(&p, "allow", err, sizeof(err)), 0);
	cr_assert_eq(fw_policy_add_rule(&p, "deny", "10.0.0.0/8", NULL, 0, err, sizeof(err)), 0);
	cr_assert_eq(fw_policy_add_rule(&p, "deny", "bad.org", NULL, 0, err, sizeof(err)), 0);
	b = body1("k", "v", "*.anything.net", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), &p, 0, &v, err, sizeof(err)), 0, "%s", err);
	fw_vault_free(v);
	free(b);
	b = body1("k", "v", "10.1.2.3", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), &p, 0, &v, err, sizeof(err)), -EINVAL);
	free(b);
	b = body1("k", "v", "*.org", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), &p, 0, &v, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "binding \"b-k\": host \"*.org\" is outside the subject's policy");
	free(b);
	fw_policy_free(&p);

	/* an IPv6 ::/0 allow says nothing about IPv4 */
	fw_policy_init(&p);
	cr_assert_eq(fw_policy_add_rule(&p, "allow", "::/0", NULL, 0, err, sizeof(err)), 0);
	b = body1("k", "v", "198.51.100.1", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), &p, 0, &v, err, sizeof(err)), -EINVAL);
	free(b);
	b = body1("k", "v", "2001:db8::5", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), &p, 0, &v, err, sizeof(err)), 0, "%s", err);
	fw_vault_free(v);
	free(b);
	fw_policy_free(&p);

	/* no policy: fail closed */
	b = body1("k", "v", "api.github.com", "k");
	cr_assert_eq(fw_vault_parse(b, strlen(b), NULL, 0, &v, err, sizeof(err)), -EINVAL);
	free(b);
}

Test(vault, check_policy_after_policy_change)
{
	char *b = body1("k", SECRET, "api.github.com", "k");
	struct fw_vault *v = must_parse(b, 0);
	struct fw_policy p;

	cr_assert_eq(fw_vault_check_policy(v, &pol, err, sizeof(err)), 0);
	fw_policy_init(&p);
	cr_assert_eq(fw_vault_check_policy(v, &p, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "binding \"b-k\": host \"api.github.com\" is outside the subject's "
			      "policy");
	fw_policy_free(&p);
	fw_vault_free(v);
	free(b);
}

Test(vault, patch_parse_defers_reference_check)
{
	const char *b = WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"X\",\"credential\":\"old\"}");
	struct fw_vault *v;

	cr_assert_eq(parse(b, 0, &v), -EINVAL);
	fw_vault_free(must_parse(b, FW_VAULT_PARSE_PATCH));
}

/* --- store ---------------------------------------------------------- */

static struct fw_vault_store *st;

static void store_setup(void)
{
	setup();
	st = fw_vault_store_new();
	cr_assert(st);
}

static void store_teardown(void)
{
	fw_vault_store_free(st);
	teardown();
}

static struct fw_ip ip_of(const char *s)
{
	struct fw_ip ip;

	cr_assert_eq(fw_addr_parse(s, &ip, NULL), 0);
	return ip;
}

static char *active(const char *ip, char etag[FW_VAULT_ETAG_LEN])
{
	struct fw_ip a = ip_of(ip);
	char *json;
	int ret = fw_vault_store_active_by_ip(st, &a, &json, etag);

	cr_assert_eq(ret, 0, "active %s: %d", ip, ret);
	return json;
}

static char *get(const char *uid)
{
	char *json;
	int ret = fw_vault_store_get_redacted_json(st, uid, &json);

	cr_assert_eq(ret, 0, "get %s: %d", uid, ret);
	return json;
}

TestSuite(store, .init = store_setup, .fini = store_teardown);

Test(store, put_get_active_delete)
{
	char *b = body1("gh", SECRET, "api.github.com", "gh"), *json, *g;
	struct fw_ip ip = ip_of("10.200.0.2");
	char etag[FW_VAULT_ETAG_LEN];

	cr_assert_eq(fw_vault_store_get_redacted_json(st, "sb-1", &json), -ENOENT);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &ip), 0);

	g = get("sb-1");
	cr_assert_null(strstr(g, SECRET), "GET leaks the secret: %s", g);
	cr_assert_null(strstr(g, "sk-live"), "GET leaks a prefix: %s", g);
	cr_assert(strstr(g, "\"value\":\"***\""));

	json = active("10.200.0.2", etag);
	cr_assert(strstr(json, "\"value\":\"" SECRET "\""), "%s", json);
	cr_assert_eq(strlen(etag), 18);
	cr_assert_eq(etag[0], '"');
	cr_assert_eq(etag[17], '"');
	cr_assert_null(strstr(etag, "sk"));
	fw_secmem_free(json);

	cr_assert_eq(fw_vault_store_del(st, "sb-1"), 0);
	cr_assert_eq(fw_vault_store_del(st, "sb-1"), -ENOENT);
	cr_assert_eq(fw_vault_store_get_redacted_json(st, "sb-1", &json), -ENOENT);
	cr_assert_eq(fw_vault_store_active_by_ip(st, &ip, &json, etag), -ENOENT);
	free(g);
	free(b);
}

Test(store, active_unknown_ip_and_no_vault)
{
	struct fw_ip a = ip_of("10.200.0.9"), b6 = ip_of("fd00::9");
	char *json, etag[FW_VAULT_ETAG_LEN];

	cr_assert_eq(fw_vault_store_active_by_ip(st, &a, &json, etag), -ENOENT);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &a), 0);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &b6), 0);
	cr_assert_eq(fw_vault_store_active_by_ip(st, &a, &json, etag), -ENOENT);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse("{}", 0)), 0);
	json = active("fd00::9", etag);
	cr_assert_str_eq(json, "{\"credentials\":[],\"bindings\":[]}");
	fw_secmem_free(json);

	/* the address moves to another subject */
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-2", &a), 0);
	cr_assert_eq(fw_vault_store_active_by_ip(st, &a, &json, etag), -ENOENT);
	cr_assert_eq(fw_vault_store_clear_ip(st, &b6), 0);
	cr_assert_eq(fw_vault_store_clear_ip(st, &b6), -ENOENT);
	cr_assert_eq(fw_vault_store_active_by_ip(st, &b6, &json, etag), -ENOENT);
}

Test(store, clear_uid_drops_vault_and_addresses)
{
	char *b = body1("gh", SECRET, "api.github.com", "gh"), *json;
	struct fw_ip a = ip_of("10.200.0.2"), other = ip_of("10.200.0.3");
	char etag[FW_VAULT_ETAG_LEN];

	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	cr_assert_eq(fw_vault_store_put(st, "sb-2", must_parse(b, 0)), 0);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &a), 0);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-2", &other), 0);
	fw_vault_store_clear_uid(st, "sb-1");
	cr_assert_eq(fw_vault_store_active_by_ip(st, &a, &json, etag), -ENOENT);
	cr_assert_eq(fw_vault_store_get_redacted_json(st, "sb-1", &json), -ENOENT);
	/* re-registering the uid does not resurrect the old address */
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	cr_assert_eq(fw_vault_store_active_by_ip(st, &a, &json, etag), -ENOENT);
	json = active("10.200.0.3", etag);
	fw_secmem_free(json);
	free(b);
}

/* Removing a subject finds its addresses through the uid index, not a
 * scan: with thousands of subjects sharing index buckets, and addresses
 * that moved between subjects, removing some takes exactly theirs. */
Test(store, clear_uid_among_thousands)
{
	enum { N = 9000 };
	char uid[32], ipbuf[48], etag[FW_VAULT_ETAG_LEN], *json;
	struct fw_ip a, b;

	for (unsigned int i = 0; i < N; i++) {
		snprintf(uid, sizeof(uid), "sb-%u", i);
		snprintf(ipbuf, sizeof(ipbuf), "10.%u.%u.1", 100 + i / 256, i % 256);
		a = ip_of(ipbuf);
		snprintf(ipbuf, sizeof(ipbuf), "fd00::%x", i + 1);
		b = ip_of(ipbuf);
		cr_assert_eq(fw_vault_store_put(st, uid, must_parse("{}", 0)), 0);
		cr_assert_eq(fw_vault_store_set_ip(st, uid, &a), 0);
		cr_assert_eq(fw_vault_store_set_ip(st, uid, &b), 0);
	}
	/* every third subject's v6 address moves to the next subject */
	for (unsigned int i = 0; i + 1 < N; i += 3) {
		snprintf(uid, sizeof(uid), "sb-%u", i + 1);
		snprintf(ipbuf, sizeof(ipbuf), "fd00::%x", i + 1);
		b = ip_of(ipbuf);
		cr_assert_eq(fw_vault_store_set_ip(st, uid, &b), 0);
	}
	for (unsigned int i = 0; i < N; i += 2) {
		snprintf(uid, sizeof(uid), "sb-%u", i);
		fw_vault_store_clear_uid(st, uid);
	}
	/* registered again, a removed subject must not get its old
	 * addresses back */
	for (unsigned int i = 0; i < N; i += 2) {
		snprintf(uid, sizeof(uid), "sb-%u", i);
		cr_assert_eq(fw_vault_store_put(st, uid, must_parse("{}", 0)), 0);
	}
	for (unsigned int i = 0; i < N; i++) {
		bool moved = i % 3 == 0 && i + 1 < N;
		unsigned int owner = moved ? i + 1 : i;
		int v4, v6;

		snprintf(ipbuf, sizeof(ipbuf), "10.%u.%u.1", 100 + i / 256, i % 256);
		a = ip_of(ipbuf);
		snprintf(ipbuf, sizeof(ipbuf), "fd00::%x", i + 1);
		b = ip_of(ipbuf);
		v4 = fw_vault_store_active_by_ip(st, &a, &json, etag);
		if (!v4)
			fw_secmem_free(json);
		v6 = fw_vault_store_active_by_ip(st, &b, &json, etag);
		if (!v6)
			fw_secmem_free(json);
		cr_assert_eq(v4, i % 2 ? 0 : -ENOENT, "subject %u, v4: %d", i, v4);
		cr_assert_eq(v6, owner % 2 ? 0 : -ENOENT, "subject %u, v6 of %u: %d", i, owner, v6);
	}
}

Test(store, post_replaces)
{
	char *b1 = body1("a", SECRET, "api.github.com", "a");
	char *b2 = body1("b", SECRET2, "x.example.com", "b");
	char *g;

	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b1, 0)), 0);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b2, 0)), 0);
	g = get("sb-1");
	cr_assert_null(strstr(g, "\"name\":\"a\""), "%s", g);
	cr_assert(strstr(g, "\"name\":\"b\""), "%s", g);
	free(g);
	free(b1);
	free(b2);
}

Test(store, patch_merges_by_name)
{
	struct fw_ip ip = ip_of("10.200.0.2");
	char etag[FW_VAULT_ETAG_LEN], *json, *exp;
	const char *base = "{\"credentials\":[" CRED("\"a\"", "\"inline\"", "\"" SECRET "\"") "," CRED(
		"\"b\"", "\"inline\"",
		"\"bee\"") "],\"bindings\":[" BIND("\"ba\"", GOOD_MATCH,
						   "{\"type\":\"apiKey\",\"name\":\"X-A\","
						   "\"credential\":\"a\"}") "," BIND("\"bb\"",
										     GOOD_MATCH,
										     "{\"type\":"
										     "\"apiKey\","
										     "\"name\":"
										     "\"X-B\","
										     "\"credential"
										     "\":"
										     "\"b\"}") "]}";
	const char *patch = "{\"credentials\":[" CRED("\"c\"", "\"inline\"", "\"sea\"") "," CRED(
		"\"a\"", "\"inline\"",
		"\"" SECRET2 "\"") "],\"bindings\":[" BIND("\"bb\"", GOOD_MATCH,
							   "{\"type\":\"apiKey\","
							   "\"name\":"
							   "\"X-B2\",\"credential\":"
							   "\"a\"}") "," BIND("\"bc"
									      "\"",
									      GOOD_MATCH,
									      "{\"typ"
									      "e\":"
									      "\"apiK"
									      "ey\","
									      "\"name"
									      "\":"
									      "\"X-"
									      "C\","
									      "\"cred"
									      "ential"
									      "\":"
									      "\"b\""
									      "}") "]"
										   "}";

	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(base, 0)), 0);
	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &ip), 0);
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(patch, FW_VAULT_PARSE_PATCH), err,
					  sizeof(err)),
		     0, "%s", err);
	json = active("10.200.0.2", etag);
	/* same-name entries replaced in place, new ones appended */
	cr_assert(asprintf(&exp,
			   "{\"credentials\":["
			   "{\"name\":\"a\",\"source\":{\"type\":\"inline\",\"value\":\"%s\"}},"
			   "{\"name\":\"b\",\"source\":{\"type\":\"inline\",\"value\":\"bee\"}},"
			   "{\"name\":\"c\",\"source\":{\"type\":\"inline\",\"value\":\"sea\"}}],"
			   "\"bindings\":["
			   "{\"name\":\"ba\",\"match\":{\"hosts\":[\"api.github.com\"]},\"auth\":"
			   "{\"type\":\"apiKey\",\"name\":\"X-A\",\"credential\":\"a\"}},"
			   "{\"name\":\"bb\",\"match\":{\"hosts\":[\"api.github.com\"]},\"auth\":"
			   "{\"type\":\"apiKey\",\"name\":\"X-B2\",\"credential\":\"a\"}},"
			   "{\"name\":\"bc\",\"match\":{\"hosts\":[\"api.github.com\"]},\"auth\":"
			   "{\"type\":\"apiKey\",\"name\":\"X-C\",\"credential\":\"b\"}}]}",
			   SECRET2) > 0);
	cr_assert_str_eq(json, exp);
	cr_assert_null(strstr(json, SECRET), "old value survived the patch");
	fw_secmem_free(json);
	free(exp);
}

Test(store, patch_with_dangling_reference_keeps_old)
{
	char *b = body1("a", SECRET, "api.github.com", "a"), *before, *after;
	const char *patch = WITH_AUTH("{\"type\":\"apiKey\",\"name\":\"X\",\"credential\":\"zz\"}");

	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	before = get("sb-1");
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(patch, FW_VAULT_PARSE_PATCH), err,
					  sizeof(err)),
		     -EINVAL);
	cr_assert_str_eq(err, "binding \"b\": unknown credential \"zz\"");
	after = get("sb-1");
	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	free(b);
}

Test(store, patch_without_vault_creates_if_self_contained)
{
	const char *dangling = "{\"bindings\":[" BIND(
		"\"b\"", GOOD_MATCH,
		"{\"type\":\"apiKey\",\"name\":\"X\",\"credential\":\"k\"}") "]}";
	char *b = body1("k", SECRET, "api.github.com", "k"), *json;

	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(dangling, FW_VAULT_PARSE_PATCH),
					  err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(fw_vault_store_get_redacted_json(st, "sb-1", &json), -ENOENT);
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(b, FW_VAULT_PARSE_PATCH), err,
					  sizeof(err)),
		     0, "%s", err);
	free(get("sb-1"));
	/* and now a binding-only patch can lean on the stored credential */
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(dangling, FW_VAULT_PARSE_PATCH),
					  err, sizeof(err)),
		     0, "%s", err);
	free(b);
}

Test(store, patch_over_caps)
{
	char *b, *p;
	size_t n;
	FILE *f;

	f = open_memstream(&b, &n);
	fprintf(f, "{\"credentials\":[");
	for (int i = 0; i < FW_VAULT_MAX_CREDS; i++)
		fprintf(f, "%s{\"name\":\"c%d\",\"source\":{\"type\":\"inline\",\"value\":\"v\"}}",
			i ? "," : "", i);
	fprintf(f, "]}");
	fclose(f);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	p = body1("c0", "new", "api.github.com", "c0");
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(p, FW_VAULT_PARSE_PATCH), err,
					  sizeof(err)),
		     0, "%s", err);
	free(p);
	p = body1("extra", "new", "api.github.com", "extra");
	cr_assert_eq(fw_vault_store_patch(st, "sb-1", must_parse(p, FW_VAULT_PARSE_PATCH), err,
					  sizeof(err)),
		     -EINVAL);
	cr_assert_str_eq(err, "too many credentials after merge (at most 256)");
	free(p);
	free(b);
}

Test(store, etag_stable_and_changes)
{
	char *b = body1("a", SECRET, "api.github.com", "a"), *json;
	char *b2 = body1("a", SECRET2, "api.github.com", "a");
	char e1[FW_VAULT_ETAG_LEN], e2[FW_VAULT_ETAG_LEN], e3[FW_VAULT_ETAG_LEN];
	struct fw_ip ip = ip_of("10.200.0.2");

	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &ip), 0);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	fw_secmem_free(active("10.200.0.2", e1));
	/* a fresh parse of the same body: same ETag */
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	fw_secmem_free(active("10.200.0.2", e2));
	cr_assert_str_eq(e1, e2);
	/* only the secret changed: the ETag must still change */
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b2, 0)), 0);
	json = active("10.200.0.2", e3);
	cr_assert_str_neq(e1, e3);
	fw_secmem_free(json);
	free(b);
	free(b2);
}

Test(store, active_json_is_secmem)
{
	char *b = body1("a", SECRET, "api.github.com", "a"), *json;
	struct fw_ip ip = ip_of("10.200.0.2");

	cr_assert_eq(fw_vault_store_set_ip(st, "sb-1", &ip), 0);
	cr_assert_eq(fw_vault_store_put(st, "sb-1", must_parse(b, 0)), 0);
	json = active("10.200.0.2", NULL);
	extern bool test_secmem_vmflag(const void *p, const char *flag);
	cr_assert(test_secmem_vmflag(json, "dd"));
	fw_secmem_free(json);
	free(b);
}

Test(store, rejects_bad_uid)
{
	char long_uid[FW_UID_MAX + 2], *json;

	memset(long_uid, 'u', sizeof(long_uid) - 1);
	long_uid[sizeof(long_uid) - 1] = '\0';
	cr_assert_eq(fw_vault_store_put(st, long_uid, must_parse("{}", 0)), -EINVAL);
	cr_assert_eq(fw_vault_store_put(st, "", must_parse("{}", 0)), -EINVAL);
	cr_assert_eq(fw_vault_store_get_redacted_json(st, long_uid, &json), -EINVAL);
}

struct hammer_arg {
	int id;
	const char *body;
};

static void *hammer(void *p)
{
	const struct hammer_arg *a = p;
	char uid[16], ipstr[32], e[FW_VAULT_ETAG_LEN], *json, herr[256];
	struct fw_vault *v;

	for (int i = 0; i < 400; i++) {
		struct fw_ip ip;

		snprintf(uid, sizeof(uid), "sb-%d", i % 5);
		snprintf(ipstr, sizeof(ipstr), "10.200.0.%d", i % 5);
		fw_addr_parse(ipstr, &ip, NULL);
		switch ((i + a->id) % 7) {
		case 0:
			if (!fw_vault_parse(a->body, strlen(a->body), &pol, 0, &v, herr,
					    sizeof(herr)))
				fw_vault_store_put(st, uid, v);
			break;
		case 1:
			if (!fw_vault_parse(a->body, strlen(a->body), &pol, FW_VAULT_PARSE_PATCH,
					    &v, herr, sizeof(herr)))
				fw_vault_store_patch(st, uid, v, herr, sizeof(herr));
			break;
		case 2:
			if (!fw_vault_store_get_redacted_json(st, uid, &json)) {
				if (strstr(json, SECRET))
					return (void *)1;
				free(json);
			}
			break;
		case 3:
			if (!fw_vault_store_active_by_ip(st, &ip, &json, e)) {
				if (!strstr(json, SECRET))
					return (void *)1;
				fw_secmem_free(json);
			}
			break;
		case 4:
			fw_vault_store_set_ip(st, uid, &ip);
			break;
		case 5:
			fw_vault_store_del(st, uid);
			break;
		case 6:
			if (i % 3 == 0)
				fw_vault_store_clear_uid(st, uid);
			break;
		}
	}
	return NULL;
}

Test(store, threads)
{
	char *b = body1("a", SECRET, "api.github.com", "a");
	struct hammer_arg args[4];
	pthread_t t[4];
	void *r;

	for (int i = 0; i < 4; i++) {
		args[i] = (struct hammer_arg){.id = i, .body = b};
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		cr_assert_null(r, "thread %d saw a secret where it should not be, or none", i);
	}
	free(b);
}

static int maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, ch;

	cr_assert(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* A node full of vaults: 8,191 subjects with 8 credentials each. With a
 * mapping per secret the pushes past about 65k credentials failed with
 * ENOMEM (vm.max_map_count); the arena holds them in a few slabs. */
Test(store, many_vaults_fit, .timeout = 120)
{
	int before = maps_count(), after;
	char uid[32], *b;

	for (int s = 0; s < 8191; s++) {
		size_t len = 0;
		FILE *f = open_memstream(&b, &len);

		cr_assert(f);
		fputs("{\"credentials\":[", f);
		for (int c = 0; c < 8; c++)
			fprintf(f,
				"%s{\"name\":\"c%d\",\"source\":{\"type\":\"inline\",\"value\":"
				"\"ghp_%05d_%d_0123456789abcdefghij\"}}",
				c ? "," : "", c, s, c);
		fputs("]}", f);
		fclose(f);
		snprintf(uid, sizeof(uid), "sb-%d", s);
		cr_assert_eq(fw_vault_store_put(st, uid, must_parse(b, 0)), 0, "vault %d", s);
		free(b);
	}
	after = maps_count();
	cr_assert_lt(after - before, 300, "%d mappings for 65,528 credentials", after - before);
	/* and one more push still works */
	b = body1("gh", SECRET, "api.github.com", "gh");
	cr_assert_eq(fw_vault_store_put(st, "sb-last", must_parse(b, 0)), 0);
	free(b);
}

/* --- the layer-7 proxy's encoding, read back by hand per l7vault.h --------- */

struct cursor {
	const unsigned char *p;
	size_t off, len;
};

static const void *take(struct cursor *c, size_t n)
{
	const void *at = c->p + c->off;

	cr_assert_leq(c->off + n, c->len, "read past the end at %zu + %zu", c->off, n);
	c->off += n;
	return at;
}

static __u16 take_u16(struct cursor *c)
{
	__u16 v;

	memcpy(&v, take(c, 2), 2);
	return v;
}

static void expect_bytes(struct cursor *c, size_t n, const char *want)
{
	cr_assert_eq(n, strlen(want), "length %zu, want %zu (%s)", n, strlen(want), want);
	cr_assert_eq(memcmp(take(c, n), want, n), 0, "bytes differ from %s", want);
}

static void expect_strings(struct cursor *c, unsigned int n, const char *const *want)
{
	for (unsigned int i = 0; i < n; i++) {
		__u16 l = take_u16(c);

		expect_bytes(c, l, want[i]);
	}
}

/* one record: its head, then ports, name, header, value, the lists */
static void expect_rec(struct cursor *c, __u8 auth, __u8 schemes, const __u16 *ports,
		       unsigned int nports, const char *name, const char *header, const char *value,
		       const char *const *hosts, unsigned int nhosts, const char *const *methods,
		       unsigned int nmethods, const char *const *paths, unsigned int npaths)
{
	struct fw_l7_vault_rec r;
	size_t start = c->off;

	memcpy(&r, take(c, sizeof(r)), sizeof(r));
	cr_expect_eq(r.auth, auth);
	cr_expect_eq(r.schemes, schemes);
	cr_assert_eq(r.nports, nports);
	cr_assert_eq(r.nhosts, nhosts);
	cr_assert_eq(r.nmethods, nmethods);
	cr_assert_eq(r.npaths, npaths);
	for (unsigned int i = 0; i < nports; i++)
		cr_expect_eq(take_u16(c), ports[i]);
	expect_bytes(c, r.name_len, name);
	expect_bytes(c, r.header_len, header);
	expect_bytes(c, r.value_len, value);
	expect_strings(c, nhosts, hosts);
	expect_strings(c, nmethods, methods);
	expect_strings(c, npaths, paths);
	cr_expect_eq(r.size, c->off - start, "rec.size %u, the record took %zu", r.size,
		     c->off - start);
}

#define L7_BODY                                                                                    \
	"{\"credentials\":[" CRED("\"k1\"", "\"inline\"", "\"sk-1\"") "," CRED(                    \
		"\"up\"", "\"inline\"",                                                            \
		"\"user:pa ss\"") "],"                                                             \
				  "\"bindings\":["                                                 \
				  "{\"name\":\"b1\",\"match\":{\"schemes\":[\"http\",\"https\"],"  \
				  "\"ports\":[443,8443],"                                          \
				  "\"hosts\":[\"API.github.com\",\"*.api.example.com\"],"          \
				  "\"methods\":[\"post\"],"                                        \
				  "\"paths\":[\"/v1/"                                              \
				  "*\"]},\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Api-Key\","    \
				  "\"credential\":\"k1\"}},"                                       \
				  "{\"name\":\"b2\",\"match\":{\"hosts\":[\"api.github.com\"]},"   \
				  "\"auth\":{\"type\":"                                            \
				  "\"basic\",\"credential\":\"up\"}},"                             \
				  "{\"name\":\"b3\",\"match\":{\"hosts\":[\"api.github.com\"],"    \
				  "\"schemes\":[\"http\"]},"                                       \
				  "\"auth\":{\"type\":\"bearer\",\"name\":\"authorization\","      \
				  "\"credential\":\"k1\"}}]}"

Test(vault, l7_encoding_by_hand)
{
	static const __u16 ports[] = {443, 8443};
	static const char *const hosts1[] = {"api.github.com", "*.api.example.com"};
	static const char *const methods1[] = {"POST"};
	static const char *const paths1[] = {"/v1/*"};
	static const char *const hosts2[] = {"api.github.com"};
	struct fw_vault *v = must_parse(L7_BODY, 0);
	unsigned char *buf = fw_secmem_alloc(FW_L7_VAULT_DATA);
	struct fw_l7_vault_head h;
	size_t len = 0, measured = 0;
	struct cursor c;

	cr_assert_eq(fw_vault_l7_encode(v, NULL, 0, &measured), 0);
	cr_assert_eq(fw_vault_l7_encode(v, buf, FW_L7_VAULT_DATA, &len), 0);
	cr_assert_eq(len, measured, "measured %zu, wrote %zu", measured, len);
	c = (struct cursor){.p = buf, .len = len};
	memcpy(&h, take(&c, sizeof(h)), sizeof(h));
	cr_expect_eq(h.magic, FW_L7_VAULT_MAGIC);
	cr_expect_eq(h.version, FW_L7_VAULT_VERSION);
	cr_assert_eq(h.nbindings, 3);
	expect_rec(&c, FW_L7_AUTH_API_KEY, FW_L7_SCHEME_HTTP | FW_L7_SCHEME_HTTPS, ports, 2, "b1",
		   "X-Api-Key", "sk-1", hosts1, 2, methods1, 1, paths1, 1);
	/* no schemes: https only; no ports, methods, paths: any */
	expect_rec(&c, FW_L7_AUTH_BASIC, FW_L7_SCHEME_HTTPS, NULL, 0, "b2", "Authorization",
		   "Basic dXNlcjpwYSBzcw==", hosts2, 1, NULL, 0, NULL, 0);
	expect_rec(&c, FW_L7_AUTH_BEARER, FW_L7_SCHEME_HTTP, NULL, 0, "b3", "Authorization",
		   "Bearer sk-1", hosts2, 1, NULL, 0, NULL, 0);
	cr_expect_eq(c.off, len, "%zu trailing bytes", len - c.off);

	/* too small a buffer: refused, with the length it needs */
	cr_expect_eq(fw_vault_l7_encode(v, buf, len - 1, &measured), -E2BIG);
	cr_expect_eq(measured, len);
	fw_secmem_free(buf);
	fw_vault_free(v);
}

Test(vault, l7_empty_vault_is_a_head)
{
	struct fw_vault *v = must_parse("{}", 0);
	unsigned char buf[64];
	struct fw_l7_vault_head h;
	size_t len;

	cr_assert_eq(fw_vault_l7_encode(v, buf, sizeof(buf), &len), 0);
	cr_assert_eq(len, sizeof(h));
	memcpy(&h, buf, sizeof(h));
	cr_expect_eq(h.nbindings, 0);
	fw_vault_free(v);
}

Test(vault, nul_in_a_value_is_refused)
{
	struct fw_vault *v = (struct fw_vault *)1;

	cr_expect_eq(parse("{\"credentials\":[" CRED("\"k\"", "\"inline\"",
						     "\"" SECRET "\\u0000x\"") "]}",
			   0, &v),
		     -EINVAL);
	cr_expect_null(v);
	cr_expect_null(strstr(err, SECRET));
}

Test(store, l7_bound_refuses_post_and_patch)
{
	struct fw_vault *v = must_parse(L7_BODY, 0), *p;
	size_t len;
	char want[160];

	fw_vault_l7_encode(v, NULL, 0, &len);
	fw_vault_store_set_l7_max(st, len);
	cr_expect_eq(fw_vault_store_check_l7(st, v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fw_vault_store_put(st, "u", v), 0);
	/* one more binding: over the bound, and the vault as it was */
	p = must_parse("{\"bindings\":[{\"name\":\"b4\",\"match\":{\"hosts\":[\"api.github.com\"]},"
		       "\"auth\":{\"type\":\"bearer\",\"credential\":\"k1\"}}]}",
		       FW_VAULT_PARSE_PATCH);
	cr_expect_eq(fw_vault_store_patch(st, "u", p, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "in the layer-7 proxy's encoding, more than its"), "%s", err);
	cr_expect_eq(fw_vault_store_l7_encode(st, "u", NULL, 0, &len), 0);
	fw_vault_store_set_l7_max(st, len - 1);
	v = must_parse(L7_BODY, 0);
	cr_expect_eq(fw_vault_store_check_l7(st, v, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
		 "the vault takes %zu bytes in the layer-7 proxy's encoding, more than its %zu",
		 len, len - 1);
	cr_expect_str_eq(err, want);
	fw_vault_free(v);
	cr_expect_eq(fw_vault_store_l7_encode(st, "nobody", NULL, 0, &len), -ENOENT);
}
