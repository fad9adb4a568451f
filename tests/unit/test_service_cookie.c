// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The gateway's service cookie: signing gives the vector computed with
 * Python's hmac, a value verifies only for its host, service, sandbox and
 * port, until its expiry and under a key still in the ring; every altered
 * form is refused; and the Cookie header parser finds and strips every
 * copy of the cookie and nothing else. */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/service_cookie.h"

/* HMAC-SHA256("shared-secret", "fastwall-service-cookie-v1\n"
 * "default--my-sandbox--web.apps.example.com\ndefault\nmy-sandbox\nweb\n"
 * "8080\n2000000000\n"), base64url without padding (Python's hmac) */
#define VECTOR "v1.2000000000.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U"
#define HOST   "default--my-sandbox--web.apps.example.com"
#define NOW    1900000000

static struct fw_scope_keyring kr;
static struct fw_svc_binding web;

static void setup(void)
{
	static const char ring[] = "k=c2hhcmVkLXNlY3JldA==\na=b3RoZXIta2V5\n";
	char err[256];

	cr_assert_eq(fw_scope_keyring_parse(&kr, ring, strlen(ring), err, sizeof(err)), 0, "%s",
		     err);
	web = (struct fw_svc_binding){HOST, strlen(HOST), "default", "my-sandbox", "web", 8080};
}

static int verify_as(const char *v, const struct fw_svc_binding *b, int64_t now)
{
	return fw_svc_cookie_verify(&kr, v, strlen(v), b, now);
}

TestSuite(service_cookie, .init = setup);

Test(service_cookie, sign_gives_the_vector)
{
	char out[FW_SVC_COOKIE_TEXT_MAX];

	cr_assert_eq(fw_svc_cookie_sign(&kr, 'k', &web, 2000000000, out, sizeof(out)),
		     (int)strlen(VECTOR));
	cr_assert_str_eq(out, VECTOR);
	cr_assert_eq(verify_as(VECTOR, &web, NOW), 0);
}

Test(service_cookie, bound_to_host_service_sandbox_and_port)
{
	struct fw_svc_binding b;
	static const char other_host[] = "default--my-sandbox--api.apps.example.com";

	b = web;
	b.host = other_host;
	b.host_len = strlen(other_host);
	cr_assert_eq(verify_as(VECTOR, &b, NOW), -FW_SVC_COOKIE_E_BAD_MAC);
	b = web;
	b.sandbox = "sibling";
	cr_assert_eq(verify_as(VECTOR, &b, NOW), -FW_SVC_COOKIE_E_BAD_MAC);
	b = web;
	b.workspace = "other";
	cr_assert_eq(verify_as(VECTOR, &b, NOW), -FW_SVC_COOKIE_E_BAD_MAC);
	b = web;
	b.service = "api";
	cr_assert_eq(verify_as(VECTOR, &b, NOW), -FW_SVC_COOKIE_E_BAD_MAC);
	b = web;
	b.port = 8081;
	cr_assert_eq(verify_as(VECTOR, &b, NOW), -FW_SVC_COOKIE_E_BAD_MAC);
}

Test(service_cookie, expiry)
{
	cr_assert_eq(verify_as(VECTOR, &web, 1999999999), 0);
	cr_assert_eq(verify_as(VECTOR, &web, 2000000000), -FW_SVC_COOKIE_E_EXPIRED);
	/* a later expiry written in: the mac covers it */
	cr_assert_eq(
		verify_as("v1.2000000001.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_BAD_MAC);
}

Test(service_cookie, altered_and_malformed)
{
	/* the mac's last character, its first, another key id */
	cr_assert_eq(
		verify_as("v1.2000000000.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2V", &web, NOW),
		-FW_SVC_COOKIE_E_BAD_MAC);
	cr_assert_eq(
		verify_as("v1.2000000000.k.8QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_BAD_MAC);
	cr_assert_eq(
		verify_as("v1.2000000000.a.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_BAD_MAC);
	cr_assert_eq(
		verify_as("v1.2000000000.z.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_UNKNOWN_KEY);
	cr_assert_eq(verify_as("", &web, NOW), -FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(
		verify_as("v2.2000000000.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(verify_as("v1.02000000000.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web,
			       NOW),
		     -FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(verify_as("v1..k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		     -FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(
		verify_as("v1.2000000000.k.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2", &web, NOW),
		-FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(verify_as(VECTOR "=", &web, NOW), -FW_SVC_COOKIE_E_FORMAT);
	cr_assert_eq(
		verify_as("v1.2000000000.K.7QzFrZqmOrWrD98uocdPjG_oyuU_Kf4MOAxReeg5u2U", &web, NOW),
		-FW_SVC_COOKIE_E_FORMAT);
	/* a route scope is not a cookie */
	cr_assert_eq(verify_as("f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
			       &web, NOW),
		     -FW_SVC_COOKIE_E_FORMAT);
}

Test(service_cookie, sign_refuses_unknown_key_and_newline)
{
	char out[FW_SVC_COOKIE_TEXT_MAX];
	struct fw_svc_binding b = web;

	cr_assert_eq(fw_svc_cookie_sign(&kr, 'q', &web, 2000000000, out, sizeof(out)),
		     -FW_SVC_COOKIE_E_UNKNOWN_KEY);
	b.host = "a\nb";
	b.host_len = 3;
	cr_assert_eq(fw_svc_cookie_sign(&kr, 'k', &b, 2000000000, out, sizeof(out)),
		     -FW_SVC_COOKIE_E_BINDING);
	cr_assert_eq(fw_svc_cookie_sign(&kr, 'k', &web, 2000000000, out, 10),
		     -FW_SVC_COOKIE_E_FORMAT);
}

static size_t all_values(const char *hdr, char *out)
{
	const char *v;
	size_t pos = 0, vl, o = 0;

	while (fw_cookie_next(hdr, strlen(hdr), FW_SVC_COOKIE_NAME, &pos, &v, &vl)) {
		memcpy(out + o, v, vl);
		o += vl;
		out[o++] = '|';
	}
	out[o] = '\0';
	return o;
}

Test(service_cookie, cookie_header_finds_every_copy)
{
	char got[256];

	all_values("a=1; fastwall_service_auth=x; b=2;fastwall_service_auth = y ;", got);
	cr_assert_str_eq(got, "x|y|");
	all_values("xfastwall_service_auth=n; fastwall_service_authx=n; a=fastwall_service_auth=n",
		   got);
	cr_assert_str_eq(got, "");
	all_values("fastwall_service_auth", got);
	cr_assert_str_eq(got, "|");
	all_values("", got);
	cr_assert_str_eq(got, "");
}

static const char *strip(const char *in, char *out)
{
	out[fw_cookie_strip(in, strlen(in), FW_SVC_COOKIE_NAME, out)] = '\0';
	return out;
}

Test(service_cookie, strip_keeps_the_others)
{
	char out[512];

	cr_assert_str_eq(strip("a=1; fastwall_service_auth=x; b=2", out), "a=1; b=2");
	cr_assert_str_eq(strip("fastwall_service_auth=x", out), "");
	cr_assert_str_eq(strip("fastwall_service_auth=x;fastwall_service_auth=y", out), "");
	cr_assert_str_eq(strip("a=1;b=2;;c", out), "a=1; b=2; c");
	cr_assert_str_eq(strip("  s=a b ; fastwall_service_auth= v", out), "s=a b");
}
