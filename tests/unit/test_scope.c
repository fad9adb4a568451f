// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Route scopes: the published vector verifies, every malformed or tampered
 * form is refused with its reason, the older tag is refused, signing gives
 * back the vector, and the key ring parser names the bad line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gateway/scope.h"

#define VECTOR "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA"

static struct fw_scope_keyring kr;

static void setup(void)
{
	static const char ring[] = "# the published vector's key\n"
				   "k=c2hhcmVkLXNlY3JldA==\n"
				   "\n"
				   "a=b3RoZXIta2V5\n";
	char err[256];

	cr_assert_eq(fw_scope_keyring_parse(&kr, ring, strlen(ring), err, sizeof(err)), 0, "%s",
		     err);
}

static int verify(const char *s)
{
	struct fw_scope sc;

	return fw_scope_verify(&kr, s, strlen(s), &sc);
}

TestSuite(scope, .init = setup);

Test(scope, published_vector_verifies)
{
	struct fw_scope sc;

	cr_assert_eq(fw_scope_verify(&kr, VECTOR, strlen(VECTOR), &sc), 0);
	cr_assert_str_eq(sc.ns, "tenant-a");
	cr_assert_str_eq(sc.sandbox, "sandbox-123");
	cr_assert_eq(sc.port, 44772);
	cr_assert_eq(sc.key_id, 'k');
}

Test(scope, signing_gives_the_vector)
{
	char out[FW_SCOPE_TEXT_MAX];
	int n = fw_scope_sign(&kr, 'k', "tenant-a", 8, "sandbox-123", 11, 44772, out, sizeof(out));

	cr_assert_eq(n, (int)strlen(VECTOR));
	cr_assert_str_eq(out, VECTOR);
}

Test(scope, sign_then_verify_round_trips_utf8)
{
	char out[FW_SCOPE_TEXT_MAX];
	struct fw_scope sc;
	const char *ns = "équipe-ü", *sb = "沙箱-1";

	cr_assert_gt(fw_scope_sign(&kr, 'a', ns, strlen(ns), sb, strlen(sb), 1, out, sizeof(out)),
		     0);
	cr_assert_eq(fw_scope_verify(&kr, out, strlen(out), &sc), 0);
	cr_assert_str_eq(sc.ns, ns);
	cr_assert_str_eq(sc.sandbox, sb);
	cr_assert_eq(sc.port, 1);
}

Test(scope, older_tag_is_refused)
{
	static const unsigned char key[] = "shared-secret";
	unsigned char mac[FW_SCOPE_MAC_LEN];
	char s[128], *p;
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned int acc = 0, bits = 0;

	fw_scope_mac(key, 13, FW_SCOPE_TAG_FLEETS, "tenant-a", 8, "sandbox-123", 11, 44772, mac);
	p = s + sprintf(s, "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.");
	for (int i = 0; i < FW_SCOPE_MAC_LEN; i++) {
		acc = (acc << 8) | mac[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*p++ = b64[(acc >> bits) & 63];
		}
	}
	*p++ = b64[(acc << (6 - bits)) & 63];
	*p = '\0';
	cr_assert_eq(strlen(s), strlen(VECTOR));
	cr_assert_str_neq(s, VECTOR);
	cr_assert_eq(verify(s), -FW_SCOPE_E_BAD_MAC);
}

struct bad_case {
	const char *desc, *scope;
	int err;
};

static const struct bad_case bad[] = {
	{"empty", "", FW_SCOPE_E_NOT_SCOPE},
	{"unsigned legacy route", "sandbox-123-44772", FW_SCOPE_E_NOT_SCOPE},
	{"other version", "f2.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NOT_SCOPE},
	{"upper-case prefix", "F1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NOT_SCOPE},
	{"five parts", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PARTS},
	{"seven parts", VECTOR ".x", FW_SCOPE_E_PARTS},
	{"trailing dot", VECTOR ".", FW_SCOPE_E_PARTS},
	{"expiry part", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.1700000000.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PARTS},
	{"non-canonical mac (last char)",
	 "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfB", FW_SCOPE_E_BASE64},
	{"non-canonical namespace", "f1.dGVuYW50LWF.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BASE64},
	{"padded namespace", "f1.dGVuYW50LWE=.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BASE64},
	{"standard alphabet in mac",
	 "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO+kStxh2GPfA", FW_SCOPE_E_BASE64},
	{"namespace of 4k+1 chars", "f1.dGVuY.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BASE64},
	{"empty namespace", "f1..c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_NAME},
	{"empty sandbox", "f1.dGVuYW50LWE..44772.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_NAME},
	/* "a\nb" */
	{"control character", "f1.YQpi.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* 0xff 0xfe */
	{"invalid utf-8", "f1._-4.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_NAME},
	/* C0 80: an overlong NUL */
	{"overlong utf-8", "f1.wIA.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* ED A0 80: a surrogate */
	{"utf-8 surrogate", "f1.7aCA.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* "a" DEL "b" */
	{"DEL character", "f1.YX9i.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* F4 90 80 80: U+110000, past the last code point */
	{"code point past U+10FFFF", "f1.9JCAgA.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* "a" C3: a sequence cut by the field's end */
	{"utf-8 cut at the end", "f1.YcM.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_NAME},
	/* C2 85: NEL, a C1 control */
	{"C1 control", "f1.woU.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_NAME},
	{"port with leading zero", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.044772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"short port with leading zero",
	 "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.080.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_PORT},
	{"five-digit port with leading zero",
	 "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.04477.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_PORT},
	{"port zero", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.0.k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_PORT},
	{"port 65536", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.65536.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"port 99999", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.99999.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"port with plus", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.+44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"negative port", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.-1.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"port six digits", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.000080.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"port hex", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.0x50.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"empty port", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM..k.gtJzW337dCO-kStxh2GPfA", FW_SCOPE_E_PORT},
	{"port with space", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM. 4477.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_PORT},
	{"upper-case key id", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.K.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_KEY_ID},
	{"two-character key id", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.kk.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_KEY_ID},
	{"empty key id", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772..gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_KEY_ID},
	{"truncated mac", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GP",
	 FW_SCOPE_E_MAC_LEN},
	{"mac one char short", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPf",
	 FW_SCOPE_E_MAC_LEN},
	{"full 32-byte mac",
	 "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfAAAAAAAAAAAAAAAAAAAAA",
	 FW_SCOPE_E_MAC_LEN},
	{"empty mac", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.", FW_SCOPE_E_MAC_LEN},
	{"unknown key id", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.z.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_UNKNOWN_KEY},
	{"other key's id", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.a.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BAD_MAC},
	{"tampered mac", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfQ",
	 FW_SCOPE_E_BAD_MAC},
	{"tampered port", "f1.dGVuYW50LWE.c2FuZGJveC0xMjM.44773.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BAD_MAC},
	/* tenant-b */
	{"tampered namespace", "f1.dGVuYW50LWI.c2FuZGJveC0xMjM.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BAD_MAC},
	/* sandbox-124 */
	{"tampered sandbox", "f1.dGVuYW50LWE.c2FuZGJveC0xMjQ.44772.k.gtJzW337dCO-kStxh2GPfA",
	 FW_SCOPE_E_BAD_MAC},
};

Test(scope, malformed_and_tampered_forms_are_refused)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = verify(bad[i].scope);

		cr_expect_eq(rc, -bad[i].err, "%s: %s: got %d (%s), want %d (%s)", bad[i].desc,
			     bad[i].scope, rc, fw_scope_strerror(rc), -bad[i].err,
			     fw_scope_strerror(bad[i].err));
	}
}

/* A port is one decimal form: a scope signed for port 80 does not verify
 * as "080" or "0080", though the MAC covers the same number (a second
 * spelling of one scope is a second cache key and log line for it). */
Test(scope, a_signed_port_with_leading_zeros_is_refused)
{
	char out[FW_SCOPE_TEXT_MAX], alt[FW_SCOPE_TEXT_MAX + 4];
	const char *dot;
	struct fw_scope sc;
	int n;

	n = fw_scope_sign(&kr, 'k', "tenant-a", 8, "sandbox-123", 11, 80, out, sizeof(out));
	cr_assert_gt(n, 0);
	cr_assert_eq(verify(out), 0);
	dot = strstr(out, ".80.");
	cr_assert_not_null(dot);
	for (int zeros = 1; zeros <= 3; zeros++) {
		snprintf(alt, sizeof(alt), "%.*s.%.*s80%s", (int)(dot - out), out, zeros, "000",
			 dot + 3);
		cr_expect_eq(fw_scope_verify(&kr, alt, strlen(alt), &sc), -FW_SCOPE_E_PORT, "%s",
			     alt);
	}
}

Test(scope, a_nul_inside_the_text_is_refused)
{
	struct fw_scope sc;
	char s[sizeof(VECTOR)];

	memcpy(s, VECTOR, sizeof(s));
	s[5] = '\0';
	cr_assert_neq(fw_scope_verify(&kr, s, sizeof(VECTOR) - 1, &sc), 0);
}

Test(scope, field_length_bound)
{
	char big[FW_SCOPE_FIELD_MAX + 2], out[FW_SCOPE_TEXT_MAX];
	struct fw_scope sc;

	memset(big, 'x', sizeof(big));
	cr_assert_eq(
		fw_scope_sign(&kr, 'k', big, FW_SCOPE_FIELD_MAX + 1, "s", 1, 80, out, sizeof(out)),
		-FW_SCOPE_E_TOO_LONG);
	cr_assert_gt(fw_scope_sign(&kr, 'k', big, FW_SCOPE_FIELD_MAX, "s", 1, 80, out, sizeof(out)),
		     0);
	cr_assert_eq(fw_scope_verify(&kr, out, strlen(out), &sc), 0);
	cr_assert_eq(sc.ns_len, FW_SCOPE_FIELD_MAX);
}

Test(scope, sign_refuses_what_verify_would)
{
	char out[FW_SCOPE_TEXT_MAX];

	/* the name's length ends it: a continuation byte past it (here the
	 * caller's buffer goes on) does not complete a cut sequence */
	cr_assert_eq(fw_scope_sign(&kr, 'k', "a\xc3\x80", 2, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_NAME);
	cr_assert_eq(fw_scope_sign(&kr, 'k', "n", 1, "\xe2\x82\xac", 2, 80, out, sizeof(out)),
		     -FW_SCOPE_E_NAME);
	cr_assert_gt(fw_scope_sign(&kr, 'k', "a\xc3\x80", 3, "\xf4\x8f\xbf\xbf", 4, 80, out,
				   sizeof(out)),
		     0, "U+10FFFF is the last code point, and allowed");
	cr_assert_eq(fw_scope_sign(&kr, 'k', "a\x7f", 2, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_NAME);

	cr_assert_eq(fw_scope_sign(&kr, 'k', "", 0, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_NAME);
	cr_assert_eq(fw_scope_sign(&kr, 'k', "a\tb", 3, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_NAME);
	cr_assert_eq(fw_scope_sign(&kr, 'k', "n", 1, "s", 1, 0, out, sizeof(out)),
		     -FW_SCOPE_E_PORT);
	cr_assert_eq(fw_scope_sign(&kr, 'k', "n", 1, "s", 1, 65536, out, sizeof(out)),
		     -FW_SCOPE_E_PORT);
	cr_assert_eq(fw_scope_sign(&kr, 'Z', "n", 1, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_KEY_ID);
	cr_assert_eq(fw_scope_sign(&kr, 'q', "n", 1, "s", 1, 80, out, sizeof(out)),
		     -FW_SCOPE_E_UNKNOWN_KEY);
}

/* RFC 4231 test cases 1 and 6 (a key longer than the block) */
Test(scope, hmac_sha256_rfc4231)
{
	static const unsigned char want1[32] = {0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53,
						0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
						0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7,
						0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
	static const unsigned char want6[32] = {0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f,
						0x0d, 0x8a, 0x26, 0xaa, 0xcb, 0xf5, 0xb7, 0x7f,
						0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28, 0xc5, 0x14,
						0x05, 0x46, 0x04, 0x0f, 0x0e, 0xe3, 0x7f, 0x54};
	static const char msg6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	unsigned char key[131], out[32];

	memset(key, 0x0b, 20);
	fw_hmac_sha256(key, 20, (const unsigned char *)"Hi There", 8, out);
	cr_assert_arr_eq(out, want1, 32);
	memset(key, 0xaa, sizeof(key));
	fw_hmac_sha256(key, sizeof(key), (const unsigned char *)msg6, strlen(msg6), out);
	cr_assert_arr_eq(out, want6, 32);
}

struct ring_case {
	const char *desc, *text, *err;
};

static const struct ring_case bad_rings[] = {
	{"empty", "", "no key"},
	{"comments only", "# nothing\n\n", "no key"},
	{"no equals sign", "kc2hhcmVk\n", "line 1: not id=BASE64"},
	{"upper-case id", "K=c2hhcmVk\n", "line 1: not id=BASE64"},
	{"long id", "kk=c2hhcmVk\n", "line 1: not id=BASE64"},
	{"empty secret", "k=\n", "line 1: not id=BASE64"},
	{"bad base64", "a=b3RoZXI\nk=c2hh*mVk\n", "line 2: key 'k': not base64"},
	{"url alphabet", "k=c2h-cmVk\n", "line 1: key 'k': not base64"},
	{"short padding", "k=c2hhcmVkLXNlY3JldA=\n", "line 1: key 'k': bad base64 padding"},
	{"twice", "k=c2hhcmVk\nk=b3RoZXI\n", "line 2: key id 'k' given twice"},
};

Test(scope, keyring_refusals_name_the_line)
{
	struct fw_scope_keyring r;
	char err[256];

	for (size_t i = 0; i < sizeof(bad_rings) / sizeof(bad_rings[0]); i++) {
		const char *t = bad_rings[i].text;

		err[0] = '\0';
		cr_expect_eq(fw_scope_keyring_parse(&r, t, strlen(t), err, sizeof(err)), -1, "%s",
			     bad_rings[i].desc);
		cr_expect(strstr(err, bad_rings[i].err) != NULL, "%s: got '%s', want '%s'",
			  bad_rings[i].desc, err, bad_rings[i].err);
		/* the secret never appears in the error */
		cr_expect(strstr(err, "c2h") == NULL, "%s: '%s' shows the secret",
			  bad_rings[i].desc, err);
		cr_expect_eq(r.count, 0);
	}
}

Test(scope, keyring_unpadded_and_crlf)
{
	static const char t[] = "  k=c2hhcmVkLXNlY3JldA\r\n";
	struct fw_scope_keyring r;
	struct fw_scope sc;
	char err[256];

	cr_assert_eq(fw_scope_keyring_parse(&r, t, strlen(t), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fw_scope_verify(&r, VECTOR, strlen(VECTOR), &sc), 0);
}

Test(scope, keyring_load_names_the_file)
{
	struct fw_scope_keyring r;
	char path[] = "/tmp/fw-scope-ring-XXXXXX", err[512];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "k=c2hhcmVkLXNlY3JldA==\n", 23), 23);
	close(fd);
	cr_assert_eq(fw_scope_keyring_load(&r, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.count, 1);
	unlink(path);
	cr_assert_eq(fw_scope_keyring_load(&r, path, err, sizeof(err)), -1);
	cr_assert(strstr(err, path) && strstr(err, "No such file"), "%s", err);
}
