/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Signed member records between gateways: the signature a publishing
 * gateway sends with each record (the X-Fastwall-Cluster-Signature
 * header, "v1.<key id>.<unix ms>.<64 hex>") and its verification under a
 * key ring of the route scopes' format. The MAC is HMAC-SHA256 (OpenSSL)
 * over the tag, the publishing cluster, the receiving cluster, the time
 * and the record, so a record signed for one peer is refused by another
 * and no byte of it can change. Freshness is a separate check: the
 * caller gives the clock. Functions return 0 or a negative FW_CSIG_E*
 * code that fw_csig_strerror() names. */
#ifndef FW_CLUSTER_SIG_H
#define FW_CLUSTER_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/scope.h"

#define FW_CSIG_TAG	"fastwall-cluster-record-v1"
#define FW_CSIG_MAC_LEN 32
/* "v1." key id "." up to 20 digits "." 64 hex digits */
#define FW_CSIG_TEXT_MAX (3 + 1 + 1 + 20 + 1 + 2 * FW_CSIG_MAC_LEN)
#define FW_CSIG_SKEW_MS	 5000 /* how far ahead of our clock a record may be */

#define FW_CSIG_ERRORS(X)                                                                          \
	X(FORMAT, 1, "signature is not v1.<key id>.<unix ms>.<64 lowercase hex>")                  \
	X(KEY_ID, 2, "key id is not one character of [0-9a-z]")                                    \
	X(UNKNOWN_KEY, 3, "signed with a key id this gateway does not hold (retired or unknown)")  \
	X(BAD_MAC, 4, "signature does not match the record")                                       \
	X(STALE, 5, "signed longer ago than the record TTL")                                       \
	X(FUTURE, 6, "signed in the future (beyond the allowed clock skew)")                       \
	X(REPLAY, 7, "not newer than a record already taken (a replay)")                           \
	X(CRYPTO, 8, "the crypto library failed (nothing is accepted then)")                       \
	X(ARG, 9, "bad argument")

enum fw_csig_err {
#define FW_CSIG_ENUM(name, num, text) FW_CSIG_E_##name = num,
	FW_CSIG_ERRORS(FW_CSIG_ENUM)
#undef FW_CSIG_ENUM
		FW_CSIG_E_MAX
};

struct fw_csig {
	char key_id;
	uint64_t ts_ms; /* unix milliseconds of the signing */
	unsigned char mac[FW_CSIG_MAC_LEN];
};

const char *fw_csig_strerror(int code);

/* Splits a signature header value; checks nothing of the MAC. */
int fw_csig_parse(const char *text, size_t len, struct fw_csig *out);

/* The MAC of one record sent by cluster from to cluster to at ts_ms. */
int fw_csig_mac(const unsigned char *key, size_t key_len, const char *from, size_t from_len,
		const char *to, size_t to_len, uint64_t ts_ms, const char *body, size_t body_len,
		unsigned char out[FW_CSIG_MAC_LEN]);

/* Writes the header value (NUL-terminated) into out; returns its length
 * or a negative code (-FW_CSIG_E_UNKNOWN_KEY for a key id not in kr). */
int fw_csig_sign(const struct fw_scope_keyring *kr, char key_id, const char *from, size_t from_len,
		 const char *to, size_t to_len, uint64_t ts_ms, const char *body, size_t body_len,
		 char *out, size_t outlen);

/* Parses text and checks its MAC in constant time; out (may be NULL)
 * gets the parsed signature. Says nothing of its age. */
int fw_csig_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
		   const char *from, size_t from_len, const char *to, size_t to_len,
		   const char *body, size_t body_len, struct fw_csig *out);

/* 0 when a record signed at ts_ms may be taken at now_ms: not older than
 * ttl_ms, not further ahead than skew_ms; else -FW_CSIG_E_STALE or
 * -FW_CSIG_E_FUTURE. */
int fw_csig_fresh(uint64_t ts_ms, uint64_t now_ms, uint64_t ttl_ms, uint64_t skew_ms);

/* 0 when a record signed at ts_ms may replace one signed at last_ms (0:
 * none, or one the local control plane posted), else -FW_CSIG_E_REPLAY:
 * an equal or older signature never rolls a record back. */
int fw_csig_newer(uint64_t ts_ms, uint64_t last_ms);

#endif /* FW_CLUSTER_SIG_H */
