/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The layer-7 proxy's certificate authority (docs/egress-l7.md,
 * "Credentials"): the CA the proxy mints its leaf certificates with, the
 * bundle sandboxes trust, and the files the proxy's TLS needs beside it.
 * The private key is read into locked memory (common/secmem) and never
 * written anywhere but the CA's own ca.key; no error text holds it.
 * Functions return 0 or a negative errno with a message in err. */
#ifndef FW_L7_CA_H
#define FW_L7_CA_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define FW_L7_CA_KEY_MAX (64 * 1024) /* a key file larger than this is refused */
#define FW_L7_CA_DAYS	 3650	     /* a generated CA's life */
#define FW_L7_SYSTEM_CAS "/etc/ssl/certs/ca-certificates.crt"
#define FW_L7_CA_CN	 "fastwall layer-7 CA"
#define FW_L7_CA_PUB_MAX 8 /* l7.ca.publish entries */

struct fw_l7_ca {
	char *cert_pem; /* malloc'd: the signing certificate, PEM */
	size_t cert_len;
	char *key_pem; /* secmem: its private key, PEM (PKCS #8) */
	size_t key_len;
	time_t not_after;
	bool generated; /* made by this call */
};

/* The signing CA. cert and key are the operator's files (both, or both
 * NULL); without them dir/ca.crt and dir/ca.key, generated when neither
 * exists (EC P-256, CA:TRUE critical, pathlen 0, keyCertSign and cRLSign,
 * FW_L7_CA_DAYS, CN "fastwall layer-7 CA <hostname>"; ca.key 0600 written
 * to a new temporary name and renamed, ca.crt 0644). A key file that is
 * not root's, or that its group or others may read or write, is refused;
 * so are a certificate that is no CA or does not match the key, an
 * expired one, and one of the two files without the other. */
int fw_l7_ca_load(const char *dir, const char *cert, const char *key, struct fw_l7_ca *ca,
		  char *err, size_t errlen);
/* Wipes the key; a zeroed struct is fine. */
void fw_l7_ca_free(struct fw_l7_ca *ca);

/* dir/bundle.crt (0644): ca's certificate, then every certificate of the
 * publish files (each must hold one at least). *out: that text
 * (malloc'd). */
int fw_l7_ca_bundle(const struct fw_l7_ca *ca, const char *dir, const char *const *publish,
		    size_t n, char **out, size_t *len, char *err, size_t errlen);

/* A throwaway self-signed certificate and its key at crt and key, both
 * 0640 and owned by uid:gid (fastwalld: root and the proxy's group, so
 * the proxy reads them and cannot replace them; its TLS server needs one
 * to start; it is never served). */
int fw_l7_placeholder(const char *crt, const char *key, uid_t uid, gid_t gid, char *err,
		      size_t errlen);

/* out (0644): the certificates of system (skipped when it does not exist)
 * and of extra (NULL: none; must hold one at least), for verifying
 * upstream servers. Refused when the two hold none. */
int fw_l7_upstream_cas(const char *out, const char *system, const char *extra, char *err,
		       size_t errlen);

/* The PEM certificates of text (the first one's notAfter in *not_after
 * when not NULL): how many, or -EINVAL. */
int fw_l7_pem_certs(const char *text, size_t len, time_t *not_after);

#endif /* FW_L7_CA_H */
