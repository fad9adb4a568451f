// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Signed member records between gateways (see cluster_sig.h). The
 * signature header is untrusted input: parsed with every length bounded,
 * canonical only (one spelling per signature), before any key is used. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway/cluster_sig.h"

static const char *const csig_errors[FW_CSIG_E_MAX] = {
#define FW_CSIG_TEXT(name, num, text) [num] = text,
	FW_CSIG_ERRORS(FW_CSIG_TEXT)
#undef FW_CSIG_TEXT
};

const char *fw_csig_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code <= 0 || code >= FW_CSIG_E_MAX || !csig_errors[code])
		return "unknown error";
	return csig_errors[code];
}

static int key_index(char id)
{
	if (id >= '0' && id <= '9')
		return id - '0';
	if (id >= 'a' && id <= 'z')
		return 10 + id - 'a';
	return -1;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return 10 + c - 'a';
	return -1;
}

int fw_csig_parse(const char *text, size_t len, struct fw_csig *out)
{
	size_t i, digits;
	uint64_t ts = 0;

	if (!text || !out)
		return -FW_CSIG_E_ARG;
	memset(out, 0, sizeof(*out));
	/* v1.K.  then digits, '.', 64 hex */
	if (len < 5 || len > FW_CSIG_TEXT_MAX || memcmp(text, "v1.", 3) != 0 || text[4] != '.')
		return -FW_CSIG_E_FORMAT;
	if (key_index(text[3]) < 0)
		return -FW_CSIG_E_KEY_ID;
	out->key_id = text[3];
	for (i = 5, digits = 0; i < len && text[i] != '.'; i++, digits++) {
		if (text[i] < '0' || text[i] > '9' || digits >= 19)
			return -FW_CSIG_E_FORMAT;
		/* no leading zero: one spelling per time */
		if (digits == 0 && text[i] == '0')
			return -FW_CSIG_E_FORMAT;
		ts = ts * 10 + (uint64_t)(text[i] - '0');
	}
	if (digits == 0 || i >= len || len - i - 1 != 2 * FW_CSIG_MAC_LEN)
		return -FW_CSIG_E_FORMAT;
	for (i++, digits = 0; digits < FW_CSIG_MAC_LEN; digits++, i += 2) {
		int hi = hex_value(text[i]), lo = hex_value(text[i + 1]);

		if (hi < 0 || lo < 0)
			return -FW_CSIG_E_FORMAT;
		out->mac[digits] = (unsigned char)(hi << 4 | lo);
	}
	out->ts_ms = ts;
	return 0;
}

int fw_csig_mac(const unsigned char *key, size_t key_len, const char *from, size_t from_len,
		const char *to, size_t to_len, uint64_t ts_ms, const char *body, size_t body_len,
		unsigned char out[FW_CSIG_MAC_LEN])
{
	/* tag \n from \n to \n ts \n body: the ids and the time hold no
	 * newline, so the fields cannot slide into each other */
	unsigned char msg[sizeof(FW_CSIG_TAG) + 2 * 64 + 24 + 4 + 1024];
	size_t n;
	int rc;

	if (from_len > 63 || to_len > 63 || body_len > 1024 || memchr(from, '\n', from_len) ||
	    memchr(to, '\n', to_len))
		return -FW_CSIG_E_ARG;
	n = (size_t)snprintf((char *)msg, sizeof(msg), "%s\n%.*s\n%.*s\n%llu\n", FW_CSIG_TAG,
			     (int)from_len, from, (int)to_len, to, (unsigned long long)ts_ms);
	if (body_len)
		memcpy(msg + n, body, body_len);
	rc = fw_hmac_sha256(key, key_len, msg, n + body_len, out);
	OPENSSL_cleanse(msg, sizeof(msg));
	return rc ? -FW_CSIG_E_CRYPTO : 0;
}

static const struct fw_scope_key *ring_key(const struct fw_scope_keyring *kr, char key_id)
{
	int idx = key_index(key_id);

	if (idx < 0 || !kr || kr->keys[idx].len == 0)
		return NULL;
	return &kr->keys[idx];
}

int fw_csig_sign(const struct fw_scope_keyring *kr, char key_id, const char *from, size_t from_len,
		 const char *to, size_t to_len, uint64_t ts_ms, const char *body, size_t body_len,
		 char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char mac[FW_CSIG_MAC_LEN];
	const struct fw_scope_key *k;
	int n, rc;
	size_t i;

	if (key_index(key_id) < 0)
		return -FW_CSIG_E_KEY_ID;
	k = ring_key(kr, key_id);
	if (!k)
		return -FW_CSIG_E_UNKNOWN_KEY;
	if (ts_ms == 0 || !out || outlen < FW_CSIG_TEXT_MAX + 1)
		return -FW_CSIG_E_ARG;
	rc = fw_csig_mac(k->secret, k->len, from, from_len, to, to_len, ts_ms, body, body_len, mac);
	if (rc)
		return rc;
	n = snprintf(out, outlen, "v1.%c.%llu.", key_id, (unsigned long long)ts_ms);
	if (n < 0 || (size_t)n + 2 * FW_CSIG_MAC_LEN + 1 > outlen)
		return -FW_CSIG_E_ARG;
	for (i = 0; i < FW_CSIG_MAC_LEN; i++) {
		out[n + 2 * i] = hex[mac[i] >> 4];
		out[n + 2 * i + 1] = hex[mac[i] & 15];
	}
	out[n + 2 * FW_CSIG_MAC_LEN] = '\0';
	return n + 2 * FW_CSIG_MAC_LEN;
}

int fw_csig_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
		   const char *from, size_t from_len, const char *to, size_t to_len,
		   const char *body, size_t body_len, struct fw_csig *out)
{
	unsigned char want[FW_CSIG_MAC_LEN];
	const struct fw_scope_key *k;
	struct fw_csig sig;
	int rc;

	rc = fw_csig_parse(text, len, &sig);
	if (rc)
		return rc;
	k = ring_key(kr, sig.key_id);
	if (!k)
		return -FW_CSIG_E_UNKNOWN_KEY;
	rc = fw_csig_mac(k->secret, k->len, from, from_len, to, to_len, sig.ts_ms, body, body_len,
			 want);
	if (rc)
		return rc;
	rc = CRYPTO_memcmp(want, sig.mac, sizeof(want)) ? -FW_CSIG_E_BAD_MAC : 0;
	OPENSSL_cleanse(want, sizeof(want));
	if (out)
		*out = sig;
	return rc;
}

int fw_csig_fresh(uint64_t ts_ms, uint64_t now_ms, uint64_t ttl_ms, uint64_t skew_ms)
{
	if (ts_ms > now_ms && ts_ms - now_ms > skew_ms)
		return -FW_CSIG_E_FUTURE;
	if (ts_ms <= now_ms && now_ms - ts_ms > ttl_ms)
		return -FW_CSIG_E_STALE;
	return 0;
}

int fw_csig_newer(uint64_t ts_ms, uint64_t last_ms)
{
	return ts_ms > last_ms ? 0 : -FW_CSIG_E_REPLAY;
}
