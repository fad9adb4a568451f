/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The gateway's service cookie: what a browser keeps after one visit to a
 * service host with a verified route scope, so later requests to that host
 * need no scope. Its value is v1.<expiry>.<key id>.<b64url(mac)>, the mac an
 * HMAC-SHA256 under the scope key ring's key of that id over the host, the
 * service, the port and the expiry (so it names one host of one service of
 * one sandbox, and dies with its key). Also the Cookie header's parsing:
 * finding every copy of a cookie and dropping them before the upstream.
 * Plain C on libc and OpenSSL, like scope.c. Functions return 0 (or a
 * length) or a negative FW_SVC_COOKIE_E* code. */
#ifndef FW_SERVICE_COOKIE_H
#define FW_SERVICE_COOKIE_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/scope.h"

#define FW_SVC_COOKIE_NAME	    "fastwall_service_auth"
#define FW_SVC_COOKIE_TAG	    "fastwall-service-cookie-v1"
#define FW_SVC_COOKIE_MAC_TEXT	    43 /* base64url of 32 bytes, unpadded */
#define FW_SVC_COOKIE_EXPIRY_DIGITS 12
/* v1. expiry . key id . mac, NUL */
#define FW_SVC_COOKIE_TEXT_MAX (3 + FW_SVC_COOKIE_EXPIRY_DIGITS + 3 + FW_SVC_COOKIE_MAC_TEXT + 1)

#define FW_SVC_COOKIE_ERRORS(X)                                                                    \
	X(FORMAT, 1, "not v1.<expiry>.<key id>.<mac>")                                             \
	X(EXPIRED, 2, "expired")                                                                   \
	X(UNKNOWN_KEY, 3, "unknown key id")                                                        \
	X(BAD_MAC, 4, "mac does not match (another host, service, port or expiry, or forged)")     \
	X(CRYPTO, 5, "the crypto library failed (nothing is accepted then)")                       \
	X(BINDING, 6, "host, workspace, sandbox or service too long or holding a newline")

enum fw_svc_cookie_err {
#define FW_SVC_COOKIE_ENUM(name, num, text) FW_SVC_COOKIE_E_##name = num,
	FW_SVC_COOKIE_ERRORS(FW_SVC_COOKIE_ENUM)
#undef FW_SVC_COOKIE_ENUM
		FW_SVC_COOKIE_E_MAX
};

/* What one cookie is good for: a host (lowercase, without port), the
 * service it names and the port behind it. */
struct fw_svc_binding {
	const char *host;
	size_t host_len;
	const char *workspace;
	const char *sandbox;
	const char *service; /* "" for an unnamed service */
	unsigned int port;
};

const char *fw_svc_cookie_strerror(int code);

/* Writes the value for binding b, valid until expires (unix seconds), under
 * key key_id of kr into out (at least FW_SVC_COOKIE_TEXT_MAX bytes,
 * NUL-terminated); returns its length or a negative code. */
int fw_svc_cookie_sign(const struct fw_scope_keyring *kr, char key_id,
		       const struct fw_svc_binding *b, int64_t expires, char *out, size_t outlen);
/* 0 when text is a value sign() made for b that has not expired at now. */
int fw_svc_cookie_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
			 const struct fw_svc_binding *b, int64_t now);

/* The next cookie named name in a Cookie header value (pairs separated by
 * ';', blanks around them ignored), starting at *pos: 1 with its value in
 * val/vlen and *pos past it, 0 when there is none. */
int fw_cookie_next(const char *hdr, size_t len, const char *name, size_t *pos, const char **val,
		   size_t *vlen);
/* Copies hdr into out (at least 2 * len bytes) without any pair named name,
 * the others joined by "; "; returns the new length (0: nothing left). */
size_t fw_cookie_strip(const char *hdr, size_t len, const char *name, char *out);

#endif /* FW_SERVICE_COOKIE_H */
