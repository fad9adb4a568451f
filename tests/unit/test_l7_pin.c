// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layer-7 proxy's name rules: normalisation (case, one trailing dot,
 * a Host's port), what counts as no name (empty, an address), matching
 * against the names that taught a destination, the nat key of an accepted
 * connection and the upstream text of a nat entry. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "l7/pin.h"

static char out[FW_LEASE_NAME_SZ];

static int norm(const char *s, bool host)
{
	return fw_l7_name_norm(s, strlen(s), host, out);
}

Test(l7_pin, norm_lower_case_and_one_trailing_dot)
{
	cr_assert_eq(norm("API.Example.COM.", false), 15);
	cr_assert_str_eq(out, "api.example.com");
	/* only one dot goes */
	cr_assert_eq(norm("a.example..", false), 10);
	cr_assert_str_eq(out, "a.example.");
}

Test(l7_pin, norm_host_drops_the_port)
{
	cr_assert_eq(norm("Api.Example.com:8443", true), 15);
	cr_assert_str_eq(out, "api.example.com");
	cr_assert_eq(norm("api.example.com.:80", true), 15);
	cr_assert_str_eq(out, "api.example.com");
	cr_assert_eq(norm("[2001:DB8::1]:443", true), 13);
	cr_assert_str_eq(out, "[2001:db8::1]");
	/* an SNI keeps its colon: it is no name a lease has */
	cr_assert_eq(norm("api.example.com:80", false), 18);
}

Test(l7_pin, norm_refuses_bytes_no_name_holds)
{
	cr_assert_eq(fw_l7_name_norm("a\0b", 3, false, out), -EINVAL);
	cr_assert_eq(norm("a b", false), -EINVAL);
	cr_assert_eq(norm("a/b", true), -EINVAL);
	cr_assert_eq(norm("a\tb", true), -EINVAL);
}

Test(l7_pin, norm_length_limit)
{
	char name[300];

	memset(name, 'a', sizeof(name));
	name[253] = '\0';
	cr_assert_eq(norm(name, false), 253);
	name[253] = '.';
	name[254] = '\0';
	cr_assert_eq(norm(name, false), 253);
	name[253] = 'a';
	cr_assert_eq(norm(name, false), -ENAMETOOLONG);
}

Test(l7_pin, addresses)
{
	cr_assert(fw_l7_name_is_addr("192.0.2.1"));
	cr_assert(fw_l7_name_is_addr("2001:db8::1"));
	cr_assert(fw_l7_name_is_addr("[2001:db8::1]"));
	cr_assert(fw_l7_name_is_addr("3221225985")); /* 192.0.2.1 as one number */
	cr_assert(fw_l7_name_is_addr("192.0.2"));
	cr_assert_not(fw_l7_name_is_addr("api.example.com"));
	cr_assert_not(fw_l7_name_is_addr("1.example"));
	cr_assert_not(fw_l7_name_is_addr("[api.example.com]"));
}

static struct fw_lease_name taught[3];

static void setup(void)
{
	memset(taught, 0, sizeof(taught));
	strcpy(taught[0].text, "cdn.example.net");
	strcpy(taught[1].text, "API.example.com."); /* as a query may have asked it */
	strcpy(taught[2].text, "www.example.org");
}

static enum fw_l7_reason verdict(const char *name, bool host, unsigned int n)
{
	return fw_l7_name_verdict(name, strlen(name), host, taught, n, out);
}

Test(l7_pin, verdict_pinned_when_one_of_the_names, .init = setup)
{
	cr_assert_eq(verdict("api.example.com", false, 3), FW_L7_PINNED);
	cr_assert_str_eq(out, "api.example.com");
	cr_assert_eq(verdict("Api.Example.Com.", false, 3), FW_L7_PINNED);
	cr_assert_eq(verdict("api.example.com:443", true, 3), FW_L7_PINNED);
	cr_assert_eq(verdict("www.example.org", false, 3), FW_L7_PINNED);
}

Test(l7_pin, verdict_name_when_not_among_them, .init = setup)
{
	cr_assert_eq(verdict("other.example.com", false, 3), FW_L7_NAME);
	cr_assert_str_eq(out, "other.example.com");
	/* only the first n count */
	cr_assert_eq(verdict("www.example.org", false, 2), FW_L7_NAME);
	/* no suffix or prefix matching */
	cr_assert_eq(verdict("example.com", false, 3), FW_L7_NAME);
	cr_assert_eq(verdict("x.api.example.com", false, 3), FW_L7_NAME);
	cr_assert_eq(verdict("api.example.com.evil", false, 3), FW_L7_NAME);
	/* an SNI with a port is no name that taught anything */
	cr_assert_eq(verdict("api.example.com:443", false, 3), FW_L7_NAME);
	/* nothing taught: nothing passes */
	cr_assert_eq(verdict("api.example.com", false, 0), FW_L7_NAME);
}

Test(l7_pin, verdict_bad_bytes_are_shown_safely, .init = setup)
{
	cr_assert_eq(fw_l7_name_verdict("api\n.example.com", 16, true, taught, 3, out), FW_L7_NAME);
	cr_assert_str_eq(out, "api?.example.com");
}

Test(l7_pin, verdict_no_name, .init = setup)
{
	cr_assert_eq(verdict("", false, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict(".", false, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict(":443", true, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict("192.0.2.1", false, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict("192.0.2.1:80", true, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict("[2001:db8::1]:80", true, 3), FW_L7_NO_NAME);
	cr_assert_eq(verdict("2001:db8::1", false, 3), FW_L7_NO_NAME);
}

Test(l7_pin, nat_key_of_both_families)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(40000)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(40001)};
	struct sockaddr sa = {.sa_family = AF_UNIX};
	struct fw_l7_nat_key k;
	static const __u8 v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};

	inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr);
	cr_assert_eq(fw_l7_nat_key_of((struct sockaddr *)&sin, 15443, &k), 0);
	cr_assert_arr_eq(k.client.b, v4, 16);
	cr_assert_eq(k.client_port, htons(40000));
	cr_assert_eq(k.proxy_port, htons(15443));

	inet_pton(AF_INET6, "2001:db8::7", &sin6.sin6_addr);
	cr_assert_eq(fw_l7_nat_key_of((struct sockaddr *)&sin6, 15080, &k), 0);
	cr_assert_arr_eq(k.client.b, &sin6.sin6_addr, 16);
	cr_assert_eq(k.client_port, htons(40001));
	cr_assert_eq(k.proxy_port, htons(15080));

	cr_assert_eq(fw_l7_nat_key_of(&sa, 1, &k), -EAFNOSUPPORT);
}

static void nat_v4(struct fw_l7_nat *nat)
{
	memset(nat, 0, sizeof(*nat));
	nat->orig_dst.b[10] = 0xff;
	nat->orig_dst.b[11] = 0xff;
	inet_pton(AF_INET, "203.0.113.10", &nat->orig_dst.b[12]);
	nat->orig_port = htons(443);
	nat->proxy_port = htons(15443);
	nat->subject = 5;
	nat->kind = FW_L7_TLS;
	nat->family = FW_FAM_V4;
}

Test(l7_pin, nat_usable_only_for_its_kind_and_port)
{
	struct fw_l7_nat_key k = {.proxy_port = htons(15443)};
	struct fw_l7_nat nat;

	nat_v4(&nat);
	cr_assert(fw_l7_nat_usable(&k, &nat, FW_L7_TLS));
	cr_assert_not(fw_l7_nat_usable(&k, &nat, FW_L7_HTTP));
	k.proxy_port = htons(15080);
	cr_assert_not(fw_l7_nat_usable(&k, &nat, FW_L7_TLS));
	k.proxy_port = htons(15443);
	nat.subject = 0;
	cr_assert_not(fw_l7_nat_usable(&k, &nat, FW_L7_TLS));
	nat_v4(&nat);
	memset(&nat.orig_dst, 0, sizeof(nat.orig_dst));
	cr_assert_not(fw_l7_nat_usable(&k, &nat, FW_L7_TLS));
}

Test(l7_pin, upstream_text)
{
	char buf[FW_L7_UPSTREAM_MAX];
	struct fw_l7_nat nat;

	nat_v4(&nat);
	cr_assert_eq(fw_l7_upstream_text(&nat, buf, sizeof(buf)), 16);
	cr_assert_str_eq(buf, "203.0.113.10:443");
	nat.family = FW_FAM_V6;
	inet_pton(AF_INET6, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", nat.orig_dst.b);
	nat.orig_port = htons(65535);
	fw_l7_upstream_text(&nat, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
}
