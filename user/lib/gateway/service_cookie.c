// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The gateway's service cookie (see service_cookie.h). The mac is OpenSSL's
 * HMAC-SHA256 (fw_hmac_sha256) and its text OpenSSL's base64, made
 * URL-safe; a value is checked by computing the mac it should carry and
 * comparing the texts in constant time, so nothing is decoded. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "gateway/service_cookie.h"

#define BINDING_MAX 512

static const char *const svc_cookie_errors[] = {
#define FW_SVC_COOKIE_TEXT(name, num, text) [num] = text,
	FW_SVC_COOKIE_ERRORS(FW_SVC_COOKIE_TEXT)
#undef FW_SVC_COOKIE_TEXT
};

const char *fw_svc_cookie_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code <= 0 || code >= FW_SVC_COOKIE_E_MAX)
		return "unknown error";
	return svc_cookie_errors[code];
}

static int key_index(char id)
{
	if (id >= '0' && id <= '9')
		return id - '0';
	if (id >= 'a' && id <= 'z')
		return 10 + id - 'a';
	return -1;
}

static int field_ok(const char *s, size_t len)
{
	return len < 256 && !memchr(s, '\n', len) && !memchr(s, '\0', len);
}

/* the mac's text for (key, binding, expiry) into mac (44 bytes) */
static int mac_text(const struct fw_scope_key *key, const struct fw_svc_binding *b, int64_t expires,
		    char mac[FW_SVC_COOKIE_MAC_TEXT + 1])
{
	char msg[BINDING_MAX + 128];
	unsigned char raw[32];
	char b64[48];
	int n, i, err;

	if (!field_ok(b->host, b->host_len) || !field_ok(b->workspace, strlen(b->workspace)) ||
	    !field_ok(b->sandbox, strlen(b->sandbox)) || !field_ok(b->service, strlen(b->service)))
		return -FW_SVC_COOKIE_E_BINDING;
	n = snprintf(msg, sizeof(msg), FW_SVC_COOKIE_TAG "\n%.*s\n%s\n%s\n%s\n%u\n%lld\n",
		     (int)b->host_len, b->host, b->workspace, b->sandbox, b->service, b->port,
		     (long long)expires);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -FW_SVC_COOKIE_E_BINDING;
	err = fw_hmac_sha256(key->secret, key->len, (const unsigned char *)msg, (size_t)n, raw);
	OPENSSL_cleanse(msg, sizeof(msg));
	if (err)
		return -FW_SVC_COOKIE_E_CRYPTO;
	n = EVP_EncodeBlock((unsigned char *)b64, raw, sizeof(raw));
	OPENSSL_cleanse(raw, sizeof(raw));
	if (n != 44 || b64[43] != '=')
		return -FW_SVC_COOKIE_E_CRYPTO;
	for (i = 0; i < FW_SVC_COOKIE_MAC_TEXT; i++)
		mac[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
	mac[FW_SVC_COOKIE_MAC_TEXT] = '\0';
	return 0;
}

int fw_svc_cookie_sign(const struct fw_scope_keyring *kr, char key_id,
		       const struct fw_svc_binding *b, int64_t expires, char *out, size_t outlen)
{
	char mac[FW_SVC_COOKIE_MAC_TEXT + 1];
	int k = key_index(key_id), n, err;

	if (k < 0 || !kr->keys[k].len)
		return -FW_SVC_COOKIE_E_UNKNOWN_KEY;
	if (expires <= 0 || expires > 999999999999LL)
		return -FW_SVC_COOKIE_E_FORMAT;
	err = mac_text(&kr->keys[k], b, expires, mac);
	if (err)
		return err;
	n = snprintf(out, outlen, "v1.%lld.%c.%s", (long long)expires, key_id, mac);
	if (n < 0 || (size_t)n >= outlen)
		return -FW_SVC_COOKIE_E_FORMAT;
	return n;
}

int fw_svc_cookie_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
			 const struct fw_svc_binding *b, int64_t now)
{
	char mac[FW_SVC_COOKIE_MAC_TEXT + 1];
	int64_t expires = 0;
	size_t i, digits;
	int k, err;

	/* v1. <1-12 digits, no leading zero> . <key id> . <43 characters> */
	if (len < 3 || memcmp(text, "v1.", 3) != 0)
		return -FW_SVC_COOKIE_E_FORMAT;
	for (i = 3; i < len && text[i] >= '0' && text[i] <= '9'; i++)
		expires = expires * 10 + (text[i] - '0');
	digits = i - 3;
	if (digits == 0 || digits > FW_SVC_COOKIE_EXPIRY_DIGITS || text[3] == '0')
		return -FW_SVC_COOKIE_E_FORMAT;
	if (len != i + 3 + FW_SVC_COOKIE_MAC_TEXT || text[i] != '.' || text[i + 2] != '.')
		return -FW_SVC_COOKIE_E_FORMAT;
	k = key_index(text[i + 1]);
	if (k < 0)
		return -FW_SVC_COOKIE_E_FORMAT;
	if (!kr->keys[k].len)
		return -FW_SVC_COOKIE_E_UNKNOWN_KEY;
	err = mac_text(&kr->keys[k], b, expires, mac);
	if (err)
		return err;
	if (CRYPTO_memcmp(mac, text + i + 3, FW_SVC_COOKIE_MAC_TEXT) != 0)
		return -FW_SVC_COOKIE_E_BAD_MAC;
	/* after the mac: an altered expiry is a forgery, not an old cookie */
	if (expires <= now)
		return -FW_SVC_COOKIE_E_EXPIRED;
	return 0;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

/* the pair at *pos: name and value trimmed, *pos past its ';' */
static void pair_at(const char *hdr, size_t len, size_t *pos, size_t *ns, size_t *nl, size_t *vs,
		    size_t *vl)
{
	size_t p = *pos, end, eq;

	while (p < len && (blank(hdr[p]) || hdr[p] == ';'))
		p++;
	end = p;
	while (end < len && hdr[end] != ';')
		end++;
	*pos = end < len ? end + 1 : end;
	for (eq = p; eq < end && hdr[eq] != '='; eq++)
		;
	*ns = p;
	*nl = eq - p;
	while (*nl && blank(hdr[p + *nl - 1]))
		(*nl)--;
	if (eq == end) { /* no '=': a name alone, an empty value */
		*vs = p + *nl;
		*vl = 0;
		return;
	}
	*vs = eq + 1;
	while (*vs < end && blank(hdr[*vs]))
		(*vs)++;
	*vl = end - *vs;
	while (*vl && blank(hdr[*vs + *vl - 1]))
		(*vl)--;
}

int fw_cookie_next(const char *hdr, size_t len, const char *name, size_t *pos, const char **val,
		   size_t *vlen)
{
	size_t want = strlen(name), ns, nl, vs, vl;

	while (*pos < len) {
		pair_at(hdr, len, pos, &ns, &nl, &vs, &vl);
		if (nl == want && memcmp(hdr + ns, name, want) == 0) {
			*val = hdr + vs;
			*vlen = vl;
			return 1;
		}
	}
	return 0;
}

size_t fw_cookie_strip(const char *hdr, size_t len, const char *name, char *out)
{
	size_t want = strlen(name), pos = 0, o = 0, ns, nl, vs, vl, l;

	while (pos < len) {
		pair_at(hdr, len, &pos, &ns, &nl, &vs, &vl);
		if (nl == want && memcmp(hdr + ns, name, want) == 0)
			continue;
		l = vs + vl - ns;
		if (l == 0)
			continue;
		if (o) {
			out[o++] = ';';
			out[o++] = ' ';
		}
		memcpy(out + o, hdr + ns, l);
		o += l;
	}
	return o;
}
