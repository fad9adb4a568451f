// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Service hostnames: the two published hash vectors, the name and routing
 * name grammar, base domains from wildcard names, and every rule of the
 * host parser (port dropped, first matching domain decides, the "--"
 * splits, Host before :authority). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gateway/hostname.h"

static struct fw_hostname_domains doms;

static void setup(void)
{
	memset(&doms, 0, sizeof(doms));
	cr_assert_eq(fw_hostname_domains_add_wildcard(&doms, "*.apps.example.com", 18), 0);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&doms, "*.example.com", 13), 0);
}

TestSuite(hostname, .init = setup);

static char label[FW_HOSTNAME_LABEL_LEN + 1];

static const char *hash(const char *gw, const char *ws, const char *sb, const char *svc)
{
	struct fw_hostname_target t;

	cr_assert_eq(fw_hostname_target_set(&t, ws, sb, svc), 0);
	cr_assert_eq(fw_hostname_hash(gw, strlen(gw), &t, label), 0);
	return label;
}

static int parse(const char *host, int hashed, struct fw_hostname_parsed *p)
{
	return fw_hostname_parse(&doms, hashed, host, strlen(host), p);
}

Test(hostname, published_vector_named_service)
{
	cr_assert_str_eq(hash("gateway-a", "default", "my-sandbox", "web"), "enh47uqyj7bpyttz");
}

Test(hostname, published_vector_unnamed_service)
{
	cr_assert_str_eq(hash("gateway-a", "default", "my-sandbox", NULL), "eiud2z5apv3yeucg");
	cr_assert_str_eq(hash("gateway-a", "default", "my-sandbox", ""), "eiud2z5apv3yeucg");
}

Test(hostname, hash_depends_on_every_field)
{
	char a[FW_HOSTNAME_LABEL_LEN + 1];

	strcpy(a, hash("gateway-a", "default", "my-sandbox", "web"));
	cr_assert_str_neq(hash("gateway-b", "default", "my-sandbox", "web"), a);
	cr_assert_str_neq(hash("gateway-a", "defaulx", "my-sandbox", "web"), a);
	cr_assert_str_neq(hash("gateway-a", "default", "my-sandboy", "web"), a);
	cr_assert_str_neq(hash("gateway-a", "default", "my-sandbox", "wec"), a);
	/* the NUL separators keep "a","bc" apart from "ab","c" */
	strcpy(a, hash("gw", "ab", "c", "d"));
	cr_assert_str_neq(hash("gw", "a", "bc", "d"), a);
	cr_assert(fw_hostname_is_hash_label(a, strlen(a)));
}

Test(hostname, hash_refuses_a_bad_routing_name)
{
	struct fw_hostname_target t;

	cr_assert_eq(fw_hostname_target_set(&t, "default", "sb", NULL), 0);
	cr_assert_eq(fw_hostname_hash("Gateway", 7, &t, label), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_assert_eq(fw_hostname_hash("", 0, &t, label), -FW_HOSTNAME_E_ROUTING_NAME);
}

Test(hostname, names)
{
	static const char *const good[] = {"a",	    "default", "my-sandbox",
					   "a-b-c", "0",       "abcdefghij123456789"};
	static const char *const bad[] = {
		"", "-a", "a-", "a--b", "A", "my_sb", "a.b", "abcdefghij1234567890", "é"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect_eq(fw_hostname_name_ok(good[i], strlen(good[i])), 0, "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(fw_hostname_name_ok(bad[i], strlen(bad[i])), -FW_HOSTNAME_E_NAME, "%s",
			     bad[i]);
}

Test(hostname, routing_names)
{
	char long63[64], long64[65];

	memset(long63, 'a', 63);
	long63[63] = '\0';
	memset(long64, 'a', 64);
	long64[64] = '\0';
	cr_expect_eq(fw_hostname_routing_name_ok("gateway-a", 9), 0);
	cr_expect_eq(fw_hostname_routing_name_ok("g--w", 4), 0, "a DNS label may hold --");
	cr_expect_eq(fw_hostname_routing_name_ok(long63, 63), 0);
	cr_expect_eq(fw_hostname_routing_name_ok(long64, 64), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_expect_eq(fw_hostname_routing_name_ok("", 0), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_expect_eq(fw_hostname_routing_name_ok("-gw", 3), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_expect_eq(fw_hostname_routing_name_ok("gw-", 3), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_expect_eq(fw_hostname_routing_name_ok("Gw", 2), -FW_HOSTNAME_E_ROUTING_NAME);
	cr_expect_eq(fw_hostname_routing_name_ok("g.w", 3), -FW_HOSTNAME_E_ROUTING_NAME);
}

Test(hostname, readable_label)
{
	struct fw_hostname_target t;
	char out[FW_HOSTNAME_READABLE_MAX];

	cr_assert_eq(fw_hostname_target_set(&t, "default", "my-sandbox", "web"), 0);
	cr_assert_eq(fw_hostname_readable(&t, out, sizeof(out)), 24);
	cr_assert_str_eq(out, "default--my-sandbox--web");
	cr_assert_eq(fw_hostname_target_set(&t, "default", "my-sandbox", NULL), 0);
	cr_assert_eq(fw_hostname_readable(&t, out, sizeof(out)), 19);
	cr_assert_str_eq(out, "default--my-sandbox");
	cr_assert_eq(fw_hostname_target_set(&t, "default", "My", NULL), -FW_HOSTNAME_E_NAME);
	cr_assert_eq(fw_hostname_target_set(&t, "a--b", "sb", NULL), -FW_HOSTNAME_E_NAME);
}

Test(hostname, longest_readable_label_fits_one_dns_label)
{
	struct fw_hostname_target t;
	char out[FW_HOSTNAME_READABLE_MAX];

	cr_assert_eq(fw_hostname_target_set(&t, "aaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbb",
					    "ccccccccccccccccccc"),
		     0);
	cr_assert_eq(fw_hostname_readable(&t, out, sizeof(out)), 61);
	cr_assert_eq(fw_hostname_readable(&t, out, 61), -FW_HOSTNAME_E_NAME, "no room for the NUL");
}

Test(hostname, base_domains_from_wildcards)
{
	struct fw_hostname_domains d = {0};

	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.Apps.Example.COM", 18), 0);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.other.test", 12), 0);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.apps.example.com", 18), 0);
	cr_assert_eq(d.count, 2, "lowercased and deduplicated");
	cr_assert_str_eq(d.d[0].name, "apps.example.com");
	cr_assert_str_eq(d.d[1].name, "other.test");
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "apps.example.com", 16),
		     -FW_HOSTNAME_E_WILDCARD);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.", 2), -FW_HOSTNAME_E_WILDCARD);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.a..b", 6), -FW_HOSTNAME_E_DOMAIN);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.*.b", 5), -FW_HOSTNAME_E_DOMAIN);
	cr_assert_eq(fw_hostname_domains_add_wildcard(&d, "*.-a.b", 6), -FW_HOSTNAME_E_DOMAIN);
	cr_assert_eq(fw_hostname_domains_add(&d, "plain.test", 10), 0);
	cr_assert_eq(d.count, 3);
}

Test(hostname, domain_list_is_bounded)
{
	struct fw_hostname_domains d = {0};
	char name[16];
	int i, n;

	for (i = 0; i < FW_HOSTNAME_DOMAINS_MAX; i++) {
		n = snprintf(name, sizeof(name), "d%d.test", i);
		cr_assert_eq(fw_hostname_domains_add(&d, name, (size_t)n), 0);
	}
	cr_assert_eq(fw_hostname_domains_add(&d, "one-more.test", 13), -FW_HOSTNAME_E_DOMAINS_FULL);
	cr_assert_eq(fw_hostname_domains_add(&d, "d0.test", 7), 0, "a duplicate is no addition");
}

Test(hostname, parse_named_and_unnamed)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("default--my-sandbox--web.apps.example.com", 0, &p), 0);
	cr_assert_eq(p.kind, FW_HOSTNAME_READABLE);
	cr_assert_str_eq(p.target.workspace, "default");
	cr_assert_str_eq(p.target.sandbox, "my-sandbox");
	cr_assert_str_eq(p.target.service, "web");
	cr_assert_eq(p.domain, 0);
	cr_assert_eq(parse("default--my-sandbox.apps.example.com", 0, &p), 0);
	cr_assert_str_eq(p.target.sandbox, "my-sandbox");
	cr_assert_str_eq(p.target.service, "");
}

Test(hostname, parse_drops_the_port)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("ws--sb--api.apps.example.com:8443", 0, &p), 0);
	cr_assert_str_eq(p.target.service, "api");
	cr_assert_eq(parse("ws--sb.apps.example.com:", 0, &p), 0);
	cr_assert_eq(parse(":80", 0, &p), -FW_HOSTNAME_E_HOST);
}

Test(hostname, parse_ignores_case)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("WS--Sb.APPS.example.Com", 0, &p), 0);
	cr_assert_str_eq(p.target.workspace, "ws");
	cr_assert_str_eq(p.target.sandbox, "sb");
}

Test(hostname, first_matching_domain_decides)
{
	struct fw_hostname_parsed p;

	/* under both: apps.example.com comes first, and its label is good */
	cr_assert_eq(parse("ws--sb.apps.example.com", 0, &p), 0);
	cr_assert_eq(p.domain, 0);
	/* only example.com matches */
	cr_assert_eq(parse("ws--sb.example.com", 0, &p), 0);
	cr_assert_eq(p.domain, 1);
	/* apps.example.com decides: two labels before it are refused */
	cr_assert_eq(parse("x.ws--sb.apps.example.com", 0, &p), -FW_HOSTNAME_E_NOT_ONE_LABEL);
}

Test(hostname, no_fallthrough_to_a_later_domain)
{
	struct fw_hostname_domains d = {0};
	struct fw_hostname_parsed p;
	const char *h = "ws--sb.apps.example.com";

	/* example.com first: its label "ws--sb.apps" is two labels, refused,
	 * though apps.example.com would have taken the host */
	cr_assert_eq(fw_hostname_domains_add(&d, "example.com", 11), 0);
	cr_assert_eq(fw_hostname_domains_add(&d, "apps.example.com", 16), 0);
	cr_assert_eq(fw_hostname_parse(&d, 0, h, strlen(h), &p), -FW_HOSTNAME_E_NOT_ONE_LABEL);
	cr_assert_eq(p.domain, 0);
}

Test(hostname, parse_needs_a_base_domain_suffix)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("ws--sb.apps.example.org", 0, &p), -FW_HOSTNAME_E_NO_DOMAIN);
	cr_assert_eq(parse("example.com", 0, &p), -FW_HOSTNAME_E_NO_DOMAIN);
	/* example.com decides: its label "apps" is no service */
	cr_assert_eq(parse("apps.example.com", 0, &p), -FW_HOSTNAME_E_NO_SEPARATOR);
	/* "apps.example.com" is no suffix of "sbapps.example.com" with its dot */
	cr_assert_eq(parse("ws--sbapps.example.com", 0, &p), 0);
	cr_assert_eq(p.domain, 1);
	cr_assert_str_eq(p.target.sandbox, "sbapps");
	cr_assert_eq(parse("ws--sb.notexample.com", 0, &p), -FW_HOSTNAME_E_NO_DOMAIN);
	cr_assert_eq(parse(".apps.example.com", 0, &p), -FW_HOSTNAME_E_NOT_ONE_LABEL);
}

Test(hostname, parse_splits_at_the_first_separators)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("plain.apps.example.com", 0, &p), -FW_HOSTNAME_E_NO_SEPARATOR);
	cr_assert_eq(parse("a-b.apps.example.com", 0, &p), -FW_HOSTNAME_E_NO_SEPARATOR);
	cr_assert_eq(parse("--sb.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws--.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws----svc.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws--sb--.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws--sb--svc--x.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws---sb.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("ws--sb-.apps.example.com", 0, &p), -FW_HOSTNAME_E_BAD_PART);
	cr_assert_eq(parse("abcdefghij1234567890--sb.apps.example.com", 0, &p),
		     -FW_HOSTNAME_E_BAD_PART, "a 20-byte workspace");
	cr_assert_str_eq(p.target.workspace, "", "a refused host leaves no target");
}

Test(hostname, parse_refuses_odd_bytes)
{
	struct fw_hostname_parsed p;
	char big[400];

	cr_assert_eq(parse("", 0, &p), -FW_HOSTNAME_E_HOST);
	cr_assert_eq(parse("ws--s_b.apps.example.com", 0, &p), -FW_HOSTNAME_E_HOST);
	cr_assert_eq(parse("[::1]:80", 0, &p), -FW_HOSTNAME_E_HOST);
	cr_assert_eq(fw_hostname_parse(&doms, 0, "ws--sb\0.apps.example.com", 24, &p),
		     -FW_HOSTNAME_E_HOST);
	memset(big, 'a', sizeof(big));
	cr_assert_eq(fw_hostname_parse(&doms, 0, big, sizeof(big), &p), -FW_HOSTNAME_E_HOST);
}

Test(hostname, hashed_labels_only_with_a_routing_name)
{
	struct fw_hostname_parsed p;

	cr_assert_eq(parse("enh47uqyj7bpyttz.apps.example.com:443", 1, &p), 0);
	cr_assert_eq(p.kind, FW_HOSTNAME_HASHED);
	cr_assert_str_eq(p.label, "enh47uqyj7bpyttz");
	/* unset: exactly the readable grammar, which has no such label */
	cr_assert_eq(parse("enh47uqyj7bpyttz.apps.example.com", 0, &p),
		     -FW_HOSTNAME_E_NO_SEPARATOR);
	/* readable hosts stay accepted with a routing name */
	cr_assert_eq(parse("default--my-sandbox--web.apps.example.com", 1, &p), 0);
	cr_assert_eq(p.kind, FW_HOSTNAME_READABLE);
	/* not the shape of a hash: 15 or 17 characters, a 1, a hyphen */
	cr_assert_eq(parse("enh47uqyj7bpytt.apps.example.com", 1, &p), -FW_HOSTNAME_E_NO_SEPARATOR);
	cr_assert_eq(parse("enh47uqyj7bpyttza.apps.example.com", 1, &p),
		     -FW_HOSTNAME_E_NO_SEPARATOR);
	cr_assert_eq(parse("enh47uqyj7bpytt1.apps.example.com", 1, &p),
		     -FW_HOSTNAME_E_NO_SEPARATOR);
	cr_assert_eq(parse("ENH47UQYJ7BPYTTZ.apps.example.com", 1, &p), 0, "DNS ignores case");
	cr_assert_str_eq(p.label, "enh47uqyj7bpyttz");
}

Test(hostname, host_before_authority)
{
	size_t n;

	cr_assert_str_eq(fw_hostname_request_host("a.test", 6, "b.test", 6, &n), "a.test");
	cr_assert_eq(n, 6);
	cr_assert_str_eq(fw_hostname_request_host(NULL, 0, "b.test", 6, &n), "b.test");
	cr_assert_eq(n, 6);
	cr_assert_null(fw_hostname_request_host(NULL, 0, NULL, 0, &n));
	cr_assert_eq(n, 0);
}

Test(hostname, every_reason_has_text)
{
	for (int i = 1; i < FW_HOSTNAME_E_MAX; i++)
		cr_expect_str_neq(fw_hostname_strerror(-i), "unknown error", "%d", i);
	cr_expect_str_eq(fw_hostname_strerror(FW_HOSTNAME_E_MAX), "unknown error");
}
