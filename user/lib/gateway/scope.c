// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Route scopes: their MAC (HMAC-SHA256 from OpenSSL's libcrypto, which
 * nginx links already), canonical base64url (OpenSSL's base64, with the
 * url alphabet and the canonical form checked around it), and the scope
 * grammar. Everything is bounded by the FW_SCOPE_* sizes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "gateway/scope.h"

/* wipes what the compiler may not drop */
static void wipe(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}

int fw_sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;

	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != 32) {
		wipe(out, 32);
		return -FW_SCOPE_E_CRYPTO;
	}
	return 0;
}

int fw_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *msg,
		   size_t msg_len, unsigned char out[32])
{
	unsigned int n = 0;
	static const unsigned char none;

	/* HMAC() takes a NULL key for "reuse the last one": never that */
	if (!HMAC(EVP_sha256(), key_len ? key : &none, (int)key_len, msg, msg_len, out, &n) ||
	    n != 32) {
		wipe(out, 32);
		return -FW_SCOPE_E_CRYPTO;
	}
	return 0;
}

int fw_scope_mac(const unsigned char *key, size_t key_len, const char *tag, const char *ns,
		 size_t ns_len, const char *sandbox, size_t sandbox_len, unsigned int port,
		 unsigned char mac[FW_SCOPE_MAC_LEN])
{
	/* "tag\nns\nsandbox\nport\n", each field bounded */
	unsigned char msg[64 + 2 * FW_SCOPE_FIELD_MAX + 16], full[32];
	size_t tag_len = strlen(tag), n = 0;
	int err;

	if (tag_len > 64 || ns_len > FW_SCOPE_FIELD_MAX || sandbox_len > FW_SCOPE_FIELD_MAX)
		return -FW_SCOPE_E_TOO_LONG;
	memcpy(msg, tag, tag_len);
	n = tag_len;
	msg[n++] = '\n';
	memcpy(msg + n, ns, ns_len);
	n += ns_len;
	msg[n++] = '\n';
	memcpy(msg + n, sandbox, sandbox_len);
	n += sandbox_len;
	n += (size_t)snprintf((char *)msg + n, sizeof(msg) - n, "\n%u\n", port);
	err = fw_hmac_sha256(key, key_len, msg, n, full);
	memcpy(mac, full, FW_SCOPE_MAC_LEN);
	wipe(full, sizeof(full));
	return err;
}

const char *fw_scope_strerror(int code)
{
	if (code < 0)
		code = -code;
	switch (code) {
	case 0:
		return "ok";
#define FW_SCOPE_TEXT(name, num, text)                                                             \
	case num:                                                                                  \
		return text;
		FW_SCOPE_ERRORS(FW_SCOPE_TEXT)
#undef FW_SCOPE_TEXT
	}
	return "unknown error";
}

/* base64: the url alphabet for scopes, the standard one for key rings;
 * OpenSSL's codec (standard alphabet, padded) does the work, the url
 * alphabet and the missing padding are mapped around it */

/* the longest text decoded: a key ring line's key (FW_SCOPE_KEY_MAX
 * bytes), a scope's field (FW_SCOPE_FIELD_MAX bytes) */
#define B64_TEXT_MAX                                                                               \
	(((FW_SCOPE_KEY_MAX > FW_SCOPE_FIELD_MAX ? FW_SCOPE_KEY_MAX : FW_SCOPE_FIELD_MAX) + 2) /   \
	 3 * 4)

/* Encodes len bytes as unpadded base64 (url: the url alphabet) into out
 * (room for 4 * ceil(len / 3) + 1); returns the characters written. */
static size_t b64_encode(const unsigned char *in, size_t len, int url, char *out)
{
	int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);

	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
	for (int i = 0; url && i < n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return (size_t)n;
}

/* Decodes unpadded base64 of len characters into out (room for max bytes).
 * Canonical only: the bits a short last group leaves over must be zero,
 * so exactly one text maps to each byte string (checked by encoding the
 * bytes again: the same text must come back). Returns the length or -1. */
static long b64_decode(const char *in, size_t len, int url, unsigned char *out, size_t max)
{
	unsigned char text[B64_TEXT_MAX + 4], bytes[B64_TEXT_MAX / 4 * 3 + 3];
	char again[B64_TEXT_MAX + 5];
	size_t pad = (4 - len % 4) % 4, n;
	int got;

	if (len % 4 == 1 || len > B64_TEXT_MAX)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		/* only the alphabet: OpenSSL's decoder would skip blanks */
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == (url ? '-' : '+') || c == (url ? '_' : '/')))
			return -1;
		text[i] = url && c == '-' ? '+' : url && c == '_' ? '/' : c;
	}
	memset(text + len, '=', pad);
	got = EVP_DecodeBlock(bytes, text, (int)(len + pad));
	if (got < 0 || (size_t)got < pad)
		return -1;
	n = (size_t)got - pad;
	if (n > max || b64_encode(bytes, n, url, again) != len || memcmp(again, in, len)) {
		wipe(bytes, sizeof(bytes));
		return -1;
	}
	memcpy(out, bytes, n);
	wipe(bytes, sizeof(bytes));
	wipe(text, sizeof(text));
	return (long)n;
}

static size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	return b64_encode(in, len, 1, out);
}

/* Valid UTF-8 (no overlong form, no surrogate, at most U+10FFFF) without
 * C0, DEL or C1 control characters. */
static int name_ok(const unsigned char *s, size_t len)
{
	size_t i = 0;

	if (!len)
		return 0;
	while (i < len) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t n, k;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f)
				return 0;
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		if (i + n >= len)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
			return 0;
		i += n + 1;
	}
	return 1;
}

static int key_index(char id)
{
	if (id >= '0' && id <= '9')
		return id - '0';
	if (id >= 'a' && id <= 'z')
		return id - 'a' + 10;
	return -1;
}

static int port_parse(const char *s, size_t len, uint16_t *port)
{
	unsigned long v = 0;

	if (len == 0 || len > 5 || s[0] == '0')
		return -FW_SCOPE_E_PORT;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -FW_SCOPE_E_PORT;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -FW_SCOPE_E_PORT;
	*port = (uint16_t)v;
	return 0;
}

static int field_decode(const char *s, size_t len, char *out, size_t *out_len)
{
	long n;

	/* a field longer than the bound is refused before decoding */
	if (len > (FW_SCOPE_FIELD_MAX + 2) / 3 * 4)
		return -FW_SCOPE_E_TOO_LONG;
	n = b64_decode(s, len, 1, (unsigned char *)out, FW_SCOPE_FIELD_MAX);
	if (n < 0)
		return -FW_SCOPE_E_BASE64;
	if (!name_ok((const unsigned char *)out, (size_t)n))
		return -FW_SCOPE_E_NAME;
	out[n] = '\0';
	*out_len = (size_t)n;
	return 0;
}

int fw_scope_parse(const char *text, size_t len, struct fw_scope *out)
{
	const char *part[6];
	size_t plen[6], i, start = 0;
	unsigned int n = 0;
	long m;
	int err;

	memset(out, 0, sizeof(*out));
	if (len < 3 || memcmp(text, "f1.", 3) != 0)
		return -FW_SCOPE_E_NOT_SCOPE;
	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '.')
			continue;
		if (n == 6)
			return -FW_SCOPE_E_PARTS;
		part[n] = text + start;
		plen[n] = i - start;
		n++;
		start = i + 1;
	}
	if (n != 6)
		return -FW_SCOPE_E_PARTS;
	err = field_decode(part[1], plen[1], out->ns, &out->ns_len);
	if (err)
		return err;
	err = field_decode(part[2], plen[2], out->sandbox, &out->sandbox_len);
	if (err)
		return err;
	err = port_parse(part[3], plen[3], &out->port);
	if (err)
		return err;
	if (plen[4] != 1 || key_index(part[4][0]) < 0)
		return -FW_SCOPE_E_KEY_ID;
	out->key_id = part[4][0];
	if (plen[5] != 22)
		return -FW_SCOPE_E_MAC_LEN;
	m = b64_decode(part[5], plen[5], 1, out->mac, FW_SCOPE_MAC_LEN);
	if (m < 0)
		return -FW_SCOPE_E_BASE64;
	if (m != FW_SCOPE_MAC_LEN)
		return -FW_SCOPE_E_MAC_LEN;
	return 0;
}

int fw_scope_verify(const struct fw_scope_keyring *kr, const char *text, size_t len,
		    struct fw_scope *out)
{
	unsigned char want[FW_SCOPE_MAC_LEN], diff = 0;
	const struct fw_scope_key *k;
	int err;

	err = fw_scope_parse(text, len, out);
	if (err)
		return err;
	k = &kr->keys[key_index(out->key_id)];
	if (!k->len)
		return -FW_SCOPE_E_UNKNOWN_KEY;
	err = fw_scope_mac(k->secret, k->len, FW_SCOPE_TAG, out->ns, out->ns_len, out->sandbox,
			   out->sandbox_len, out->port, want);
	if (err)
		return err; /* fail closed */
	for (int i = 0; i < FW_SCOPE_MAC_LEN; i++)
		diff |= (unsigned char)(want[i] ^ out->mac[i]);
	wipe(want, sizeof(want));
	return diff ? -FW_SCOPE_E_BAD_MAC : 0;
}

int fw_scope_sign(const struct fw_scope_keyring *kr, char key_id, const char *ns, size_t ns_len,
		  const char *sandbox, size_t sandbox_len, unsigned long port, char *out,
		  size_t outlen)
{
	unsigned char mac[FW_SCOPE_MAC_LEN];
	const struct fw_scope_key *k;
	size_t o = 0;
	int idx;

	if (ns_len > FW_SCOPE_FIELD_MAX || sandbox_len > FW_SCOPE_FIELD_MAX)
		return -FW_SCOPE_E_TOO_LONG;
	if (!name_ok((const unsigned char *)ns, ns_len) ||
	    !name_ok((const unsigned char *)sandbox, sandbox_len))
		return -FW_SCOPE_E_NAME;
	if (port < 1 || port > 65535)
		return -FW_SCOPE_E_PORT;
	idx = key_index(key_id);
	if (idx < 0)
		return -FW_SCOPE_E_KEY_ID;
	k = &kr->keys[idx];
	if (!k->len)
		return -FW_SCOPE_E_UNKNOWN_KEY;
	if (outlen < FW_SCOPE_TEXT_MAX)
		return -FW_SCOPE_E_TOO_LONG;
	if (fw_scope_mac(k->secret, k->len, FW_SCOPE_TAG, ns, ns_len, sandbox, sandbox_len,
			 (unsigned int)port, mac))
		return -FW_SCOPE_E_CRYPTO;
	memcpy(out, "f1.", 3);
	o = 3;
	o += b64url_encode((const unsigned char *)ns, ns_len, out + o);
	out[o++] = '.';
	o += b64url_encode((const unsigned char *)sandbox, sandbox_len, out + o);
	o += (size_t)snprintf(out + o, outlen - o, ".%lu.%c.", port, key_id);
	o += b64url_encode(mac, sizeof(mac), out + o);
	out[o] = '\0';
	return (int)o;
}

void fw_scope_keyring_wipe(struct fw_scope_keyring *kr)
{
	wipe(kr, sizeof(*kr));
}

static size_t trim_end(const char *s, size_t len)
{
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	return len;
}

int fw_scope_keyring_parse(struct fw_scope_keyring *kr, const char *text, size_t len, char *err,
			   size_t errlen)
{
	size_t pos = 0, lineno = 0;

	memset(kr, 0, sizeof(*kr));
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : len - pos, b64len;
		struct fw_scope_key *k;
		long n;
		int idx;

		pos += ll + (nl ? 1 : 0);
		lineno++;
		while (ll && (*line == ' ' || *line == '\t'))
			line++, ll--;
		ll = trim_end(line, ll);
		if (!ll || line[0] == '#')
			continue;
		if (ll < 3 || line[1] != '=' || (idx = key_index(line[0])) < 0) {
			snprintf(err, errlen, "line %zu: not id=BASE64 with an id of [0-9a-z]",
				 lineno);
			goto fail;
		}
		k = &kr->keys[idx];
		if (k->len) {
			snprintf(err, errlen, "line %zu: key id '%c' given twice", lineno, line[0]);
			goto fail;
		}
		b64len = ll - 2;
		/* padding is optional; what it pads must still be canonical */
		if (b64len >= 1 && line[2 + b64len - 1] == '=')
			b64len--;
		if (b64len >= 1 && line[2 + b64len - 1] == '=')
			b64len--;
		if (b64len != ll - 2 && (ll - 2) % 4 != 0) {
			snprintf(err, errlen, "line %zu: key '%c': bad base64 padding", lineno,
				 line[0]);
			goto fail;
		}
		n = b64_decode(line + 2, b64len, 0, k->secret, sizeof(k->secret));
		if (n <= 0) {
			snprintf(err, errlen,
				 "line %zu: key '%c': not base64 of 1-%d bytes (padding optional)",
				 lineno, line[0], FW_SCOPE_KEY_MAX);
			goto fail;
		}
		k->len = (size_t)n;
		kr->count++;
	}
	if (!kr->count) {
		snprintf(err, errlen, "no key (want id=BASE64 lines)");
		goto fail;
	}
	return 0;
fail:
	fw_scope_keyring_wipe(kr);
	return -1;
}

int fw_scope_keyring_load(struct fw_scope_keyring *kr, const char *path, char *err, size_t errlen)
{
	char buf[FW_SCOPE_KEYS_MAX * 256 + 4096], sub[256];
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "can't open %s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf + len, sizeof(buf) - len)) > 0) {
		len += (size_t)n;
		if (len == sizeof(buf)) {
			close(fd);
			wipe(buf, sizeof(buf));
			snprintf(err, errlen, "%s: larger than %zu bytes", path, sizeof(buf) - 1);
			return -1;
		}
	}
	if (n < 0) {
		snprintf(err, errlen, "can't read %s: %s", path, strerror(errno));
		close(fd);
		wipe(buf, sizeof(buf));
		return -1;
	}
	close(fd);
	rc = fw_scope_keyring_parse(kr, buf, len, sub, sizeof(sub));
	wipe(buf, sizeof(buf));
	if (rc)
		snprintf(err, errlen, "%s: %s", path, sub);
	return rc;
}
