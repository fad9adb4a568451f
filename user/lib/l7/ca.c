// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layer-7 proxy's CA (ca.h), with OpenSSL. Keys pass through
 * OpenSSL's own memory (its BIOs free with OPENSSL_clear_free) and end in
 * secmem; every file is written to a new temporary name (O_EXCL, so no
 * link planted in the directory is followed) and renamed into place. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/secmem.h"
#include "l7/ca.h"

/* never a prompt for a passphrase: an encrypted key does not load */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* --- files ---------------------------------------------------------------- */

/* path written whole with mode, owned by uid:gid (-1: unchanged). */
static int write_file(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
		      gid_t gid, char *err, size_t errlen)
{
	char tmp[600];
	size_t off = 0;
	mode_t old;
	int fd, ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		fw_set_err(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	old = umask(077);
	fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT | O_EXCL, 0600 */
	umask(old);
	if (fd < 0) {
		ret = -errno;
		fw_set_err(err, errlen, "can't create a file beside %s: %s", path, strerror(-ret));
		return ret;
	}
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!ret && ((uid != (uid_t)-1 && fchown(fd, uid, gid)) || fchmod(fd, mode) || fsync(fd)))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		fw_set_err(err, errlen, "can't write %s: %s", path, strerror(-ret));
	}
	return ret;
}

/* A whole small file into malloc'd (secret: secmem) memory, NUL ended. */
static int read_file(const char *path, bool secret, const char *what, char **out, size_t *len,
		     char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t off = 0;
	int fd, ret = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		fw_set_err(err, errlen, "%s %s: %s", what, path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		fw_set_err(err, errlen, "%s %s: %s", what, path, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fw_set_err(err, errlen, "%s %s: not a regular file", what, path);
		ret = -EINVAL;
		goto out;
	}
	if (secret && st.st_uid != 0) {
		fw_set_err(err, errlen, "%s %s: owned by uid %u, not root: refused", what, path,
			   (unsigned int)st.st_uid);
		ret = -EPERM;
		goto out;
	}
	if (secret && (st.st_mode & 077)) {
		fw_set_err(err, errlen,
			   "%s %s: mode %04o lets its group or others at it: refused (chmod 0600)",
			   what, path, (unsigned int)(st.st_mode & 07777));
		ret = -EPERM;
		goto out;
	}
	if (st.st_size > FW_L7_CA_KEY_MAX * (secret ? 1 : 64)) {
		fw_set_err(err, errlen, "%s %s: larger than %d bytes", what, path,
			   FW_L7_CA_KEY_MAX * (secret ? 1 : 64));
		ret = -EFBIG;
		goto out;
	}
	buf = secret ? fw_secmem_alloc((size_t)st.st_size + 1) : malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		fw_set_err(err, errlen, "%s %s: out of memory", what, path);
		goto out;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		off += (size_t)n;
	}
	buf[off] = '\0';
	if (ret)
		fw_set_err(err, errlen, "%s %s: %s", what, path, strerror(-ret));
out:
	close(fd);
	if (ret) {
		if (secret)
			fw_secmem_free(buf);
		else
			free(buf);
		return ret;
	}
	*out = buf;
	*len = off;
	return 0;
}

/* --- PEM -------------------------------------------------------------------- */

static time_t asn1_time(const ASN1_TIME *t)
{
	struct tm tm = {0};

	if (!ASN1_TIME_to_tm(t, &tm))
		return 0;
	return timegm(&tm);
}

int fw_l7_pem_certs(const char *text, size_t len, time_t *not_after)
{
	BIO *b = BIO_new_mem_buf(text, (int)len);
	X509 *x;
	int n = 0;

	if (!b)
		return -ENOMEM;
	while ((x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
		if (!n && not_after)
			*not_after = asn1_time(X509_get0_notAfter(x));
		X509_free(x);
		n++;
	}
	BIO_free(b);
	ERR_clear_error();
	return n ? n : -EINVAL;
}

/* The PEM text of a BIO's contents, into malloc'd or secmem memory. */
static char *bio_text(BIO *b, bool secret, size_t *len)
{
	char *data, *out;
	long n = BIO_get_mem_data(b, &data);

	if (n <= 0)
		return NULL;
	out = secret ? fw_secmem_alloc((size_t)n + 1) : malloc((size_t)n + 1);
	if (!out)
		return NULL;
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	*len = (size_t)n;
	return out;
}

static char *key_pem(EVP_PKEY *k, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;

	if (b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL))
		out = bio_text(b, true, len);
	BIO_free(b); /* BUF_MEM_free: OPENSSL_clear_free */
	return out;
}

static char *cert_pem(X509 *x, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;

	if (b && PEM_write_bio_X509(b, x))
		out = bio_text(b, false, len);
	BIO_free(b);
	return out;
}

/* The certificates of text, written anew (malloc'd, NUL ended): whatever
 * else the file holds (a private key put there by mistake) is left out of
 * the files fastwalld publishes. *n: how many (0: NULL returned). */
static char *certs_only(const char *text, size_t len, size_t *outlen, int *n)
{
	BIO *in = BIO_new_mem_buf(text, (int)len), *out = BIO_new(BIO_s_mem());
	char *res = NULL;
	X509 *x;

	*n = 0;
	*outlen = 0;
	if (!in || !out)
		goto done;
	while ((x = PEM_read_bio_X509(in, NULL, no_passphrase, NULL))) {
		int ok = PEM_write_bio_X509(out, x);

		X509_free(x);
		if (!ok)
			goto done;
		(*n)++;
	}
	if (*n)
		res = bio_text(out, false, outlen);
done:
	BIO_free(in);
	BIO_free(out);
	ERR_clear_error();
	if (!res)
		*n = 0;
	return res;
}

/* --- making certificates -------------------------------------------------- */

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (!e)
		return 0;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A self-signed certificate for key k: a CA (basicConstraints and key
 * usage as ca.h says) or the placeholder (no extensions but the key ids). */
static X509 *self_signed(EVP_PKEY *k, const char *cn, long days, bool ca)
{
	unsigned char serial[16];
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX ctx;
	BIGNUM *bn = NULL;
	bool ok = false;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto out;
	serial[0] &= 0x7f; /* positive */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	name = X509_get_subject_name(x);
	if (!bn || !X509_set_version(x, 2) || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) ||
	    !X509_set_pubkey(x, k) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
					-1, 0) ||
	    !X509_set_issuer_name(x, name))
		goto out;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	if (ca && (!add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
		   !add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign")))
		goto out;
	if (!add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
	    !add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always"))
		goto out;
	ok = X509_sign(x, k, EVP_sha256()) > 0;
out:
	BN_free(bn);
	if (!ok) {
		X509_free(x);
		x = NULL;
	}
	return x;
}

static int generate(const char *dir, const char *crt_path, const char *key_path,
		    struct fw_l7_ca *ca, char *err, size_t errlen)
{
	char host[64] = "", cn[64];
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = NULL;
	int ret = -EIO;

	if (!k) {
		fw_set_err(err, errlen, "l7 CA: can't generate a key");
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(cn, sizeof(cn), "%s %.43s", FW_L7_CA_CN, host[0] ? host : "node");
	x = self_signed(k, cn, FW_L7_CA_DAYS, true);
	ca->key_pem = key_pem(k, &ca->key_len);
	ca->cert_pem = x ? cert_pem(x, &ca->cert_len) : NULL;
	if (!x || !ca->key_pem || !ca->cert_pem) {
		fw_set_err(err, errlen, "l7 CA: can't make its certificate");
		goto out;
	}
	/* the key first: a certificate never stands without its key */
	ret = write_file(key_path, ca->key_pem, ca->key_len, 0600, 0, 0, err, errlen);
	if (!ret)
		ret = write_file(crt_path, ca->cert_pem, ca->cert_len, 0644, 0, 0, err, errlen);
	if (ret)
		goto out;
	ca->not_after = asn1_time(X509_get0_notAfter(x));
	ca->generated = true;
	fw_info("l7 CA: generated %s (%s) in %s", cn, "EC P-256", dir);
out:
	X509_free(x);
	EVP_PKEY_free(k);
	ERR_clear_error();
	return ret;
}

/* --- loading -------------------------------------------------------------- */

static int load(const char *crt_path, const char *key_path, const char *what, struct fw_l7_ca *ca,
		char *err, size_t errlen)
{
	char kwhat[64], cwhat[64];
	char *key = NULL, *crt = NULL;
	size_t klen, clen;
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	BIO *b = NULL;
	uint32_t ext;
	int ret;

	snprintf(kwhat, sizeof(kwhat), "%s key", what);
	snprintf(cwhat, sizeof(cwhat), "%s certificate", what);
	ret = read_file(key_path, true, kwhat, &key, &klen, err, errlen);
	if (ret)
		return ret;
	ret = read_file(crt_path, false, cwhat, &crt, &clen, err, errlen);
	if (ret)
		goto out;
	ret = -EINVAL;
	b = BIO_new_mem_buf(key, (int)klen);
	k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!k) {
		fw_set_err(err, errlen, "%s %s: no private key in it (or an encrypted one)", kwhat,
			   key_path);
		goto out;
	}
	b = BIO_new_mem_buf(crt, (int)clen);
	x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!x) {
		fw_set_err(err, errlen, "%s %s: no certificate in it", cwhat, crt_path);
		goto out;
	}
	ext = X509_get_extension_flags(x);
	if (!(ext & EXFLAG_CA) ||
	    ((ext & EXFLAG_KUSAGE) && !(X509_get_key_usage(x) & KU_KEY_CERT_SIGN))) {
		fw_set_err(err, errlen,
			   "%s %s: not a CA certificate (basicConstraints CA:TRUE and "
			   "keyCertSign needed)",
			   cwhat, crt_path);
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		fw_set_err(err, errlen, "%s %s does not belong to the key %s", cwhat, crt_path,
			   key_path);
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		fw_set_err(err, errlen, "%s %s: expired", cwhat, crt_path);
		goto out;
	}
	ca->key_pem = key_pem(k, &ca->key_len);
	ca->cert_pem = cert_pem(x, &ca->cert_len);
	if (!ca->key_pem || !ca->cert_pem) {
		fw_set_err(err, errlen, "%s: out of memory", what);
		ret = -ENOMEM;
		goto out;
	}
	ca->not_after = asn1_time(X509_get0_notAfter(x));
	ret = 0;
out:
	X509_free(x);
	EVP_PKEY_free(k);
	fw_secmem_free(key);
	free(crt);
	ERR_clear_error();
	return ret;
}

static int mkdirs(const char *dir, mode_t mode)
{
	char path[512], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int fw_l7_ca_load(const char *dir, const char *cert, const char *key, struct fw_l7_ca *ca,
		  char *err, size_t errlen)
{
	char crt_path[512], key_path[512];
	bool has_crt, has_key;
	int ret;

	memset(ca, 0, sizeof(*ca));
	err[0] = '\0';
	if ((cert && cert[0]) != (key && key[0])) {
		fw_set_err(err, errlen, "l7.ca.cert and l7.ca.key: both or neither");
		return -EINVAL;
	}
	if (cert && cert[0])
		ret = load(cert, key, "l7.ca", ca, err, errlen);
	else {
		ret = mkdirs(dir, 0700);
		if (ret) {
			fw_set_err(err, errlen, "l7.ca.dir %s: %s", dir, strerror(-ret));
			return ret;
		}
		snprintf(crt_path, sizeof(crt_path), "%s/ca.crt", dir);
		snprintf(key_path, sizeof(key_path), "%s/ca.key", dir);
		has_crt = access(crt_path, F_OK) == 0;
		has_key = access(key_path, F_OK) == 0;
		if (has_crt != has_key) {
			fw_set_err(err, errlen,
				   "l7.ca.dir %s holds %s without %s: restore it, or remove both "
				   "for a new CA",
				   dir, has_crt ? "ca.crt" : "ca.key",
				   has_crt ? "ca.key" : "ca.crt");
			return -EINVAL;
		}
		ret = has_crt ? load(crt_path, key_path, "l7.ca.dir", ca, err, errlen)
			      : generate(dir, crt_path, key_path, ca, err, errlen);
	}
	if (ret)
		fw_l7_ca_free(ca);
	return ret;
}

void fw_l7_ca_free(struct fw_l7_ca *ca)
{
	free(ca->cert_pem);
	fw_secmem_free(ca->key_pem);
	memset(ca, 0, sizeof(*ca));
}

/* --- what is published beside it ------------------------------------------ */

int fw_l7_ca_bundle(const struct fw_l7_ca *ca, const char *dir, const char *const *publish,
		    size_t n, char **out, size_t *len, char *err, size_t errlen)
{
	char path[512], *text = NULL;
	size_t tlen = ca->cert_len;
	int ret;

	*out = NULL;
	/* with the operator's CA nothing made the directory yet */
	ret = mkdirs(dir, 0700);
	if (ret) {
		fw_set_err(err, errlen, "l7.ca.dir %s: %s", dir, strerror(-ret));
		return ret;
	}
	text = malloc(ca->cert_len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, ca->cert_pem, ca->cert_len);
	for (size_t i = 0; i < n; i++) {
		char *f, *certs, *grown;
		size_t flen, clen;
		int ncerts;

		ret = read_file(publish[i], false, "l7.ca.publish", &f, &flen, err, errlen);
		if (ret)
			goto fail;
		certs = certs_only(f, flen, &clen, &ncerts);
		free(f);
		if (!certs) {
			fw_set_err(err, errlen, "l7.ca.publish %s: no certificate in it",
				   publish[i]);
			ret = -EINVAL;
			goto fail;
		}
		grown = realloc(text, tlen + clen + 1);
		if (!grown) {
			free(certs);
			ret = -ENOMEM;
			goto fail;
		}
		text = grown;
		memcpy(text + tlen, certs, clen);
		tlen += clen;
		free(certs);
	}
	text[tlen] = '\0';
	snprintf(path, sizeof(path), "%s/bundle.crt", dir);
	ret = write_file(path, text, tlen, 0644, 0, 0, err, errlen);
	if (ret)
		goto fail;
	*out = text;
	*len = tlen;
	return 0;
fail:
	free(text);
	return ret;
}

int fw_l7_placeholder(const char *crt, const char *key, uid_t uid, gid_t gid, char *err,
		      size_t errlen)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = k ? self_signed(k, "fastwall placeholder (never served)", 365, false) : NULL;
	char *kp = NULL, *cp = NULL;
	size_t klen = 0, clen = 0;
	int ret = -EIO;

	if (x) {
		kp = key_pem(k, &klen);
		cp = cert_pem(x, &clen);
	}
	if (!kp || !cp)
		fw_set_err(err, errlen, "l7 proxy: can't make its placeholder certificate");
	else {
		ret = write_file(key, kp, klen, 0640, uid, gid, err, errlen);
		if (!ret)
			ret = write_file(crt, cp, clen, 0640, uid, gid, err, errlen);
	}
	fw_secmem_free(kp);
	free(cp);
	X509_free(x);
	EVP_PKEY_free(k);
	ERR_clear_error();
	return ret;
}

int fw_l7_upstream_cas(const char *out, const char *system, const char *extra, char *err,
		       size_t errlen)
{
	char *sys = NULL, *ext = NULL, *scerts = NULL, *ecerts = NULL, *all;
	size_t slen = 0, elen = 0, sclen = 0, eclen = 0;
	int ret, nsys = 0, next = 0;

	if (system && access(system, F_OK) == 0) {
		ret = read_file(system, false, "the system trust store", &sys, &slen, err, errlen);
		if (ret)
			return ret;
		scerts = certs_only(sys, slen, &sclen, &nsys);
	}
	if (extra && extra[0]) {
		ret = read_file(extra, false, "l7.upstream_ca", &ext, &elen, err, errlen);
		if (ret)
			goto out;
		ecerts = certs_only(ext, elen, &eclen, &next);
		if (!ecerts) {
			fw_set_err(err, errlen, "l7.upstream_ca %s: no certificate in it", extra);
			ret = -EINVAL;
			goto out;
		}
	} else if (!scerts) {
		fw_set_err(err, errlen,
			   "no certificate to verify upstream servers with: %s has none and "
			   "l7.upstream_ca is not set",
			   system);
		ret = -ENOENT;
		goto out;
	}
	ret = -ENOMEM;
	all = malloc(sclen + eclen + 1);
	if (!all)
		goto out;
	memcpy(all, scerts ? scerts : "", sclen);
	memcpy(all + sclen, ecerts ? ecerts : "", eclen);
	ret = write_file(out, all, sclen + eclen, 0644, (uid_t)-1, (gid_t)-1, err, errlen);
	free(all);
out:
	free(sys);
	free(ext);
	free(scerts);
	free(ecerts);
	return ret;
}
