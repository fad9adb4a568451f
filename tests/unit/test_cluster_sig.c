// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Signed member records between gateways: the signature header's
 * grammar, signing and verification under a key ring (a retired key id
 * refused, a staged one accepted before it signs), a changed byte of the
 * record, sender or receiver refused, and the freshness and replay
 * rules. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gateway/cluster_sig.h"

#define REC "cluster=east&namespace=team-a&env=python&pool=py&idle=3"
#define TS  1765000000123ULL

static void ring(struct fw_scope_keyring *kr, const char *text)
{
	char err[128];

	cr_assert_eq(fw_scope_keyring_parse(kr, text, strlen(text), err, sizeof(err)), 0, "%s",
		     err);
}

static int sign(const struct fw_scope_keyring *kr, char kid, const char *body, char *out)
{
	return fw_csig_sign(kr, kid, "east", 4, "west", 4, TS, body, strlen(body), out,
			    FW_CSIG_TEXT_MAX + 1);
}

static int verify(const struct fw_scope_keyring *kr, const char *sig, const char *from,
		  const char *to, const char *body)
{
	return fw_csig_verify(kr, sig, strlen(sig), from, strlen(from), to, strlen(to), body,
			      strlen(body), NULL);
}

Test(cluster_sig, sign_then_verify)
{
	struct fw_scope_keyring kr;
	char sig[FW_CSIG_TEXT_MAX + 1];
	struct fw_csig parsed;
	int n;

	ring(&kr, "a=c2lnbmluZy1rZXktYQ==\n");
	n = sign(&kr, 'a', REC, sig);
	cr_assert_gt(n, 0);
	cr_expect_eq((size_t)n, strlen(sig));
	cr_expect_eq(strncmp(sig, "v1.a.1765000000123.", 19), 0, "%s", sig);
	cr_expect_eq(fw_csig_verify(&kr, sig, strlen(sig), "east", 4, "west", 4, REC, strlen(REC),
				    &parsed),
		     0);
	cr_expect_eq(parsed.key_id, 'a');
	cr_expect_eq(parsed.ts_ms, TS);
}

Test(cluster_sig, any_change_refused)
{
	struct fw_scope_keyring kr;
	char sig[FW_CSIG_TEXT_MAX + 1], bad[FW_CSIG_TEXT_MAX + 1];
	size_t i;

	ring(&kr, "a=c2lnbmluZy1rZXktYQ==\n");
	cr_assert_gt(sign(&kr, 'a', REC, sig), 0);
	/* the record altered (more idle pods), another sender, another receiver */
	cr_expect_eq(verify(&kr, sig, "east", "west", REC "0"), -FW_CSIG_E_BAD_MAC);
	cr_expect_eq(verify(&kr, sig, "south", "west", REC), -FW_CSIG_E_BAD_MAC);
	cr_expect_eq(verify(&kr, sig, "east", "north", REC), -FW_CSIG_E_BAD_MAC);
	/* every hex digit of the mac flipped in turn */
	for (i = strlen(sig) - 64; i < strlen(sig); i++) {
		memcpy(bad, sig, sizeof(bad));
		bad[i] = bad[i] == '0' ? '1' : '0';
		cr_expect_eq(verify(&kr, bad, "east", "west", REC), -FW_CSIG_E_BAD_MAC, "%s", bad);
	}
	/* the time changed: the mac covers it */
	memcpy(bad, sig, sizeof(bad));
	bad[10] = bad[10] == '9' ? '8' : '9';
	cr_expect_eq(verify(&kr, bad, "east", "west", REC), -FW_CSIG_E_BAD_MAC, "%s", bad);
}

Test(cluster_sig, rotation)
{
	struct fw_scope_keyring old, both, next;
	char sig_a[FW_CSIG_TEXT_MAX + 1], sig_b[FW_CSIG_TEXT_MAX + 1];

	ring(&old, "a=c2lnbmluZy1rZXktYQ==\n");
	ring(&both, "a=c2lnbmluZy1rZXktYQ==\nb=bmV4dC1rZXktYg==\n");
	ring(&next, "b=bmV4dC1rZXktYg==\n");
	cr_assert_gt(sign(&both, 'a', REC, sig_a), 0);
	cr_assert_gt(sign(&both, 'b', REC, sig_b), 0);
	/* staged: b is held before anyone signs with it */
	cr_expect_eq(verify(&both, sig_a, "east", "west", REC), 0);
	cr_expect_eq(verify(&both, sig_b, "east", "west", REC), 0);
	/* retired: a is gone from the ring */
	cr_expect_eq(verify(&next, sig_a, "east", "west", REC), -FW_CSIG_E_UNKNOWN_KEY);
	cr_expect_eq(verify(&next, sig_b, "east", "west", REC), 0);
	cr_expect_eq(verify(&old, sig_b, "east", "west", REC), -FW_CSIG_E_UNKNOWN_KEY);
	/* the same key under another id is another signature */
	cr_expect_eq(sign(&old, 'b', REC, sig_b), -FW_CSIG_E_UNKNOWN_KEY);
	cr_expect_eq(sign(&old, 'A', REC, sig_b), -FW_CSIG_E_KEY_ID);
}

Test(cluster_sig, grammar)
{
	static const char mac[] =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	static const char *const bad[] = {
		"",
		"v1",
		"v2.a.1."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.ab.1."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.a.."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.a.01."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.a.+1."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.a.12345678901234567890."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"v1.a.1."
		"00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff",
		"v1.a.1."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddee",
		"v1.a.1."
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",
		"v1.a.1 "
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
	};
	struct fw_csig s;
	char ok[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_lt(fw_csig_parse(bad[i], strlen(bad[i]), &s), 0, "accepted '%s'", bad[i]);
	cr_expect_eq(fw_csig_parse("v1.A.1.x", 8, &s), -FW_CSIG_E_KEY_ID);
	snprintf(ok, sizeof(ok), "v1.z.9.%s", mac);
	cr_expect_eq(fw_csig_parse(ok, strlen(ok), &s), 0);
	cr_expect_eq(s.key_id, 'z');
	cr_expect_eq(s.ts_ms, 9);
	cr_expect_eq(s.mac[31], 0xff);
}

Test(cluster_sig, freshness_and_replay)
{
	/* within the 30 s TTL, at most 5 s ahead */
	cr_expect_eq(fw_csig_fresh(TS, TS, 30000, FW_CSIG_SKEW_MS), 0);
	cr_expect_eq(fw_csig_fresh(TS - 30000, TS, 30000, FW_CSIG_SKEW_MS), 0);
	cr_expect_eq(fw_csig_fresh(TS - 30001, TS, 30000, FW_CSIG_SKEW_MS), -FW_CSIG_E_STALE);
	cr_expect_eq(fw_csig_fresh(TS + 5000, TS, 30000, FW_CSIG_SKEW_MS), 0);
	cr_expect_eq(fw_csig_fresh(TS + 5001, TS, 30000, FW_CSIG_SKEW_MS), -FW_CSIG_E_FUTURE);
	/* never back, never the same one twice */
	cr_expect_eq(fw_csig_newer(TS, 0), 0);
	cr_expect_eq(fw_csig_newer(TS + 1, TS), 0);
	cr_expect_eq(fw_csig_newer(TS, TS), -FW_CSIG_E_REPLAY);
	cr_expect_eq(fw_csig_newer(TS - 1, TS), -FW_CSIG_E_REPLAY);
	cr_expect_str_eq(fw_csig_strerror(-FW_CSIG_E_REPLAY),
			 "not newer than a record already taken (a replay)");
}
