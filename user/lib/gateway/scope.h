/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Signed route scopes (f1.<ns>.<sandbox>.<port>.<key id>.<mac>): the key
 * ring, signing and verification. Plain C on libc alone, so the nginx
 * ingress module and the CLI compile the same file. Functions return 0 or a
 * negative FW_SCOPE_E* code; fw_scope_strerror() names it. */
#ifndef FW_SCOPE_H
#define FW_SCOPE_H

#include <stddef.h>
#include <stdint.h>

#define FW_SCOPE_MAC_LEN   16
#define FW_SCOPE_FIELD_MAX 255 /* bytes of a namespace or a sandbox id */
#define FW_SCOPE_KEY_MAX   128 /* bytes of one secret */
#define FW_SCOPE_KEYS_MAX  36  /* one per key id [0-9a-z] */
/* the longest scope: two encoded fields, the port, the key id, the mac */
#define FW_SCOPE_TEXT_MAX (3 + 2 * 340 + 1 + 5 + 3 + 22 + 1)

#define FW_SCOPE_TAG	    "opensandbox-fsb-route-v1"
#define FW_SCOPE_TAG_FLEETS "opensandbox-fleets-route-v1" /* older, refused */

/* One table of the reasons a scope is refused: code, name, text. */
#define FW_SCOPE_ERRORS(X)                                                                         \
	X(NOT_SCOPE, 1, "not a scope (no f1. prefix)")                                             \
	X(PARTS, 2, "not 6 dot-separated parts")                                                   \
	X(BASE64, 3, "a part is not canonical unpadded base64url")                                 \
	X(NAME, 4, "empty namespace or sandbox id, invalid UTF-8 or a control character")          \
	X(TOO_LONG, 5, "namespace or sandbox id too long")                                         \
	X(PORT, 6, "port is not decimal 1-65535 without sign or leading zero")                     \
	X(KEY_ID, 7, "key id is not one character of [0-9a-z]")                                    \
	X(MAC_LEN, 8, "mac is not 16 bytes")                                                       \
	X(UNKNOWN_KEY, 9, "unknown key id")                                                        \
	X(BAD_MAC, 10, "mac does not match")                                                       \
	X(CRYPTO, 11, "the crypto library failed (nothing is accepted then)")

enum fw_scope_err {
#define FW_SCOPE_ENUM(name, num, text) FW_SCOPE_E_##name = num,
	FW_SCOPE_ERRORS(FW_SCOPE_ENUM)
#undef FW_SCOPE_ENUM
		FW_SCOPE_E_MAX
};

struct fw_scope_key {
	size_t len;
	unsigned char secret[FW_SCOPE_KEY_MAX];
};

/* indexed by key id: 0-9 then a-z; len 0 = no such key */
struct fw_scope_keyring {
	struct fw_scope_key keys[FW_SCOPE_KEYS_MAX];
	unsigned int count;
};

struct fw_scope {
	char ns[FW_SCOPE_FIELD_MAX + 1]; /* NUL-terminated; no NUL inside */
	size_t ns_len;
	char sandbox[FW_SCOPE_FIELD_MAX + 1];
	size_t sandbox_len;
	uint16_t port;
	char key_id;
	unsigned char mac[FW_SCOPE_MAC_LEN];
};

/* text of a refusal (code positive or negative) */
const char *fw_scope_strerror(int code);

/* Parses a key ring: one `id=BASE64` per line (standard base64, padding
 * optional), blank lines and `#` comments skipped. On error writes
 * "line N: ..." to err (never the secret) and returns -1; the ring is
 * then wiped. */
int fw_scope_keyring_parse(struct fw_scope_keyring *kr, const char *text, size_t len, char *err,
			   size_t errlen);
/* reads and parses path; err names the file */
int fw_scope_keyring_load(struct fw_scope_keyring *kr, const char *path, char *err, size_t errlen);
void fw_scope_keyring_wipe(struct fw_scope_keyring *kr);

/* Splits and decodes a scope without checking its mac. */
int fw_scope_parse(const char *text, size_t len, struct fw_scope *out);
/* Parses, then checks the mac under the key ring, in constant time. */
int fw_scope_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
		    struct fw_scope *out);
/* Writes the scope for (ns, sandbox, port) signed with key_id into out
 * (NUL-terminated, at least FW_SCOPE_TEXT_MAX bytes); returns its length or
 * a negative code. */
int fw_scope_sign(const struct fw_scope_keyring *kr, char key_id, const char *ns, size_t ns_len,
		  const char *sandbox, size_t sandbox_len, unsigned long port, char *out,
		  size_t outlen);

/* The 16-byte mac under one tag (FW_SCOPE_TAG, or the older one in tests):
 * 0, or a negative code (too long a field, the crypto library failed). */
int fw_scope_mac(const unsigned char *key, size_t key_len, const char *tag, const char *ns,
		 size_t ns_len, const char *sandbox, size_t sandbox_len, unsigned int port,
		 unsigned char mac[FW_SCOPE_MAC_LEN]);

/* SHA-256 of one buffer (service hostname labels hash with it too), and
 * HMAC-SHA256 (exposed for the unit tests' RFC 4231 vectors), both
 * OpenSSL's: 0, or -FW_SCOPE_E_CRYPTO with out zeroed. */
int fw_sha256(const void *data, size_t len, unsigned char out[32]);
int fw_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *msg,
		   size_t msg_len, unsigned char out[32]);

#endif /* FW_SCOPE_H */
