// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layer-7 proxy's CA: generated once with the modes and extensions
 * ca.h promises, kept on later loads, refused with a clear message (and
 * never its key) when its key is exposed, half missing, no CA or not the
 * certificate's; the bundle, the placeholder and the upstream store. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/secmem.h"
#include "l7/ca.h"

static char root[64], dir[128], err[640];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/fw-l7ca-XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/var/lib/l7-ca", root);
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(l7_ca, .init = setup, .fini = teardown);

static char *path_in(const char *d, const char *name)
{
	static char p[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", d, name);
	return p[i];
}

static X509 *cert_of(const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	cr_assert(x);
	return x;
}

static void expect_mode(const char *path, unsigned int mode)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s", path);
	cr_expect_eq(st.st_mode & 07777, mode, "%s: mode %o, want %o", path, st.st_mode & 07777,
		     mode);
	cr_expect_eq(st.st_uid, 0u, "%s: owner %u", path, st.st_uid);
}

Test(l7_ca, generated_once_then_kept)
{
	struct fw_l7_ca ca, again;
	char cn[128] = "";
	X509 *x;
	BASIC_CONSTRAINTS *bc;
	int crit = 0;
	time_t now = time(NULL);

	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &ca, err, sizeof(err)), 0, "%s", err);
	cr_expect(ca.generated);
	expect_mode(path_in(dir, "ca.key"), 0600);
	expect_mode(path_in(dir, "ca.crt"), 0644);
	expect_mode(dir, 0700);
	cr_expect(strstr(ca.key_pem, "-----BEGIN PRIVATE KEY-----"));
	x = cert_of(ca.cert_pem, ca.cert_len);
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
	cr_expect_eq(strncmp(cn, "fastwall layer-7 CA ", 20), 0, "CN %s", cn);
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	cr_assert(bc);
	cr_expect(bc->ca && crit, "CA:TRUE, critical");
	cr_expect(bc->pathlen && ASN1_INTEGER_get(bc->pathlen) == 0, "pathlen 0");
	BASIC_CONSTRAINTS_free(bc);
	cr_expect_eq(X509_get_key_usage(x), (uint32_t)(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
	cr_expect(ca.not_after > now + 3649L * 86400 && ca.not_after < now + 3651L * 86400,
		  "ten years: %ld", (long)(ca.not_after - now));
	X509_free(x);

	/* the next start loads the same */
	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &again, err, sizeof(err)), 0, "%s", err);
	cr_expect_not(again.generated);
	cr_expect_eq(again.cert_len, ca.cert_len);
	cr_expect_eq(memcmp(again.cert_pem, ca.cert_pem, ca.cert_len), 0);
	cr_expect_eq(again.key_len, ca.key_len);
	cr_expect_eq(memcmp(again.key_pem, ca.key_pem, ca.key_len), 0);
	fw_l7_ca_free(&again);
	fw_l7_ca_free(&ca);
}

/* what every refusal must hold to: a message, never the key */
static void expect_refused(int ret, const char *want, const char *key_pem)
{
	cr_expect_lt(ret, 0);
	cr_expect(strstr(err, want), "error: %s\nwant: %s", err, want);
	cr_expect_null(strstr(err, "PRIVATE KEY"));
	if (key_pem)
		cr_expect_null(strstr(err, key_pem + 28));
}

Test(l7_ca, exposed_key_refused)
{
	struct fw_l7_ca ca, out;
	char *key;

	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &ca, err, sizeof(err)), 0, "%s", err);
	key = path_in(dir, "ca.key");
	cr_assert_eq(chmod(key, 0640), 0);
	expect_refused(fw_l7_ca_load(dir, NULL, NULL, &out, err, sizeof(err)),
		       "mode 0640 lets its group or others at it: refused", ca.key_pem);
	cr_assert_eq(chmod(key, 0604), 0);
	expect_refused(fw_l7_ca_load(dir, NULL, NULL, &out, err, sizeof(err)), "mode 0604",
		       ca.key_pem);
	cr_assert_eq(chmod(key, 0600), 0);
	cr_assert_eq(chown(key, 65534, 65534), 0);
	expect_refused(fw_l7_ca_load(dir, NULL, NULL, &out, err, sizeof(err)),
		       "owned by uid 65534, not root: refused", ca.key_pem);
	/* the operator's files are held to the same */
	expect_refused(fw_l7_ca_load(dir, path_in(dir, "ca.crt"), key, &out, err, sizeof(err)),
		       "l7.ca key", ca.key_pem);
	fw_l7_ca_free(&ca);
}

Test(l7_ca, half_a_ca_refused)
{
	struct fw_l7_ca ca, out;

	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &ca, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(unlink(path_in(dir, "ca.crt")), 0);
	expect_refused(fw_l7_ca_load(dir, NULL, NULL, &out, err, sizeof(err)),
		       "holds ca.key without ca.crt", ca.key_pem);
	/* nothing was generated over it */
	cr_expect_neq(access(path_in(dir, "ca.crt"), F_OK), 0);
	expect_refused(fw_l7_ca_load(dir, path_in(dir, "ca.key"), NULL, &out, err, sizeof(err)),
		       "l7.ca.cert and l7.ca.key: both or neither", NULL);
	fw_l7_ca_free(&ca);
}

Test(l7_ca, operator_files)
{
	struct fw_l7_ca ca, out;
	char pcrt[256], pkey[256];

	snprintf(pcrt, sizeof(pcrt), "%s/p.crt", root);
	snprintf(pkey, sizeof(pkey), "%s/p.key", root);

	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &ca, err, sizeof(err)), 0, "%s", err);
	/* the operator's own CA: the generated one, elsewhere */
	cr_assert_eq(fw_l7_ca_load(path_in(root, "unused"), path_in(dir, "ca.crt"),
				   path_in(dir, "ca.key"), &out, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_not(out.generated);
	cr_expect_eq(memcmp(out.cert_pem, ca.cert_pem, ca.cert_len), 0);
	cr_expect_neq(access(path_in(root, "unused"), F_OK), 0, "no directory made for it");
	{
		/* its bundle still goes to l7.ca.dir, made for it */
		char *bundle;
		size_t len;

		cr_assert_eq(fw_l7_ca_bundle(&out, path_in(root, "other/ca"), NULL, 0, &bundle,
					     &len, err, sizeof(err)),
			     0, "%s", err);
		cr_expect_eq(len, ca.cert_len);
		free(bundle);
		expect_mode(path_in(root, "other/ca/bundle.crt"), 0644);
	}
	fw_l7_ca_free(&out);
	/* a certificate that is no CA */
	cr_assert_eq(fw_l7_placeholder(pcrt, pkey, 0, 0, err, sizeof(err)), 0, "%s", err);
	/* an operator's key is 0600 (the placeholder's is 0640) */
	cr_assert_eq(chmod(pkey, 0600), 0);
	expect_refused(fw_l7_ca_load(dir, pcrt, pkey, &out, err, sizeof(err)),
		       "not a CA certificate", NULL);
	/* a CA with another's key */
	expect_refused(fw_l7_ca_load(dir, path_in(dir, "ca.crt"), pkey, &out, err, sizeof(err)),
		       "does not belong to the key", NULL);
	fw_l7_ca_free(&ca);
}

/* a file fastwalld publishes: certs certificates and no key */
static void expect_no_key(const char *path, int certs)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;

	cr_assert(f, "%s", path);
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	cr_assert_gt(n, 0);
	cr_expect_eq(fw_l7_pem_certs(text, (size_t)n, NULL), certs, "%s", path);
	cr_expect_null(strstr(text, "PRIVATE"), "a key in %s", path);
	free(text);
}

Test(l7_ca, bundle_placeholder_upstreams)
{
	struct fw_l7_ca ca;
	char pcrt[300], pkey[256], empty[256], *bundle;
	const char *pub[2] = {pcrt, empty};
	size_t len;
	FILE *f;

	snprintf(pcrt, sizeof(pcrt), "%s/p.crt", root);
	snprintf(pkey, sizeof(pkey), "%s/p.key", root);
	snprintf(empty, sizeof(empty), "%s/empty.pem", root);

	cr_assert_eq(fw_l7_ca_load(dir, NULL, NULL, &ca, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fw_l7_placeholder(pcrt, pkey, 65534, 65534, err, sizeof(err)), 0, "%s", err);
	{
		struct stat st;

		cr_assert_eq(stat(pkey, &st), 0);
		cr_expect_eq(st.st_mode & 07777, 0640u);
		cr_expect_eq(st.st_uid, 65534u);
		cr_assert_eq(stat(pcrt, &st), 0);
		cr_expect_eq(st.st_uid, 65534u);
	}
	/* a file holding a key beside its certificate: only the certificate
	 * is published */
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "cat '%s' '%s' > '%s.both'", pcrt, pkey, pcrt);
		cr_assert_eq(system(cmd), 0);
		strcat(pcrt, ".both");
	}
	cr_assert_eq(fw_l7_ca_bundle(&ca, dir, pub, 1, &bundle, &len, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_eq(fw_l7_pem_certs(bundle, len, NULL), 2);
	cr_expect_eq(strncmp(bundle, ca.cert_pem, ca.cert_len), 0, "the signing one first");
	cr_expect_null(strstr(bundle, "PRIVATE"));
	expect_no_key(path_in(dir, "bundle.crt"), 2);
	expect_mode(path_in(dir, "bundle.crt"), 0644);
	free(bundle);
	f = fopen(empty, "w");
	cr_assert(f);
	fputs("not a certificate\n", f);
	fclose(f);
	expect_refused(fw_l7_ca_bundle(&ca, dir, pub, 2, &bundle, &len, err, sizeof(err)),
		       "l7.ca.publish", NULL);

	cr_assert_eq(
		fw_l7_upstream_cas(path_in(root, "up.crt"), "/nonexistent", pcrt, err, sizeof(err)),
		0, "%s", err);
	expect_mode(path_in(root, "up.crt"), 0644);
	expect_no_key(path_in(root, "up.crt"), 1);
	expect_refused(fw_l7_upstream_cas(path_in(root, "up2.crt"), "/nonexistent", NULL, err,
					  sizeof(err)),
		       "no certificate to verify upstream servers with", NULL);
	expect_refused(fw_l7_upstream_cas(path_in(root, "up2.crt"), "/nonexistent", empty, err,
					  sizeof(err)),
		       "l7.upstream_ca", NULL);
	fw_l7_ca_free(&ca);
}
