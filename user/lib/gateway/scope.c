// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Route scopes: SHA-256 and HMAC (FIPS 180-4, RFC 2104) written out here so
 * the nginx module needs no crypto library, canonical base64url, and the
 * scope grammar. Everything is bounded by the FW_SCOPE_* sizes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gateway/scope.h"

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	unsigned char blk[64];
	size_t fill;
};

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t ror32(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + (ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       w[i - 7] + (ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10));
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) +
		     sha256_k[i] + w[i];
		t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
	s->fill = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	while (len) {
		size_t n = 64 - s->fill;

		if (n > len)
			n = len;
		memcpy(s->blk + s->fill, p, n);
		s->fill += n;
		p += n;
		len -= n;
		if (s->fill == 64) {
			sha256_block(s, s->blk);
			s->fill = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->bytes * 8;
	unsigned char pad = 0x80, zero = 0, len[8];
	int i;

	sha256_update(s, &pad, 1);
	while (s->fill != 56)
		sha256_update(s, &zero, 1);
	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, len, 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

/* wipes what the compiler may not drop: the pads hold the key */
static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
}

struct hmac {
	struct sha256 inner;
	unsigned char opad[64];
};

static void hmac_init(struct hmac *m, const unsigned char *key, size_t key_len)
{
	unsigned char k[64] = {0}, ipad[64];
	struct sha256 kh;

	if (key_len > 64) {
		sha256_init(&kh);
		sha256_update(&kh, key, key_len);
		sha256_final(&kh, k);
		wipe(&kh, sizeof(kh));
	} else if (key_len) {
		memcpy(k, key, key_len);
	}
	for (int i = 0; i < 64; i++) {
		ipad[i] = k[i] ^ 0x36;
		m->opad[i] = k[i] ^ 0x5c;
	}
	sha256_init(&m->inner);
	sha256_update(&m->inner, ipad, 64);
	wipe(k, sizeof(k));
	wipe(ipad, sizeof(ipad));
}

static void hmac_final(struct hmac *m, unsigned char out[32])
{
	unsigned char ih[32];
	struct sha256 outer;

	sha256_final(&m->inner, ih);
	sha256_init(&outer);
	sha256_update(&outer, m->opad, 64);
	sha256_update(&outer, ih, 32);
	sha256_final(&outer, out);
	wipe(m, sizeof(*m));
	wipe(&outer, sizeof(outer));
}

void fw_sha256(const void *data, size_t len, unsigned char out[32])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void fw_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *msg,
		    size_t msg_len, unsigned char out[32])
{
	struct hmac m;

	hmac_init(&m, key, key_len);
	sha256_update(&m.inner, msg, msg_len);
	hmac_final(&m, out);
}

void fw_scope_mac(const unsigned char *key, size_t key_len, const char *tag, const char *ns,
		  size_t ns_len, const char *sandbox, size_t sandbox_len, unsigned int port,
		  unsigned char mac[FW_SCOPE_MAC_LEN])
{
	unsigned char full[32];
	char num[8];
	struct hmac m;
	int n;

	n = snprintf(num, sizeof(num), "%u", port);
	hmac_init(&m, key, key_len);
	sha256_update(&m.inner, tag, strlen(tag));
	sha256_update(&m.inner, "\n", 1);
	sha256_update(&m.inner, ns, ns_len);
	sha256_update(&m.inner, "\n", 1);
	sha256_update(&m.inner, sandbox, sandbox_len);
	sha256_update(&m.inner, "\n", 1);
	sha256_update(&m.inner, num, (size_t)n);
	sha256_update(&m.inner, "\n", 1);
	hmac_final(&m, full);
	memcpy(mac, full, FW_SCOPE_MAC_LEN);
	wipe(full, sizeof(full));
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

/* base64: the url alphabet for scopes, the standard one for key rings */
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64_value(unsigned char c, int url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

/* Decodes unpadded base64 of len characters into out (room for max bytes).
 * Canonical only: the bits a short last group leaves over must be zero, so
 * exactly one text maps to each byte string. Returns the length or -1. */
static long b64_decode(const char *in, size_t len, int url, unsigned char *out, size_t max)
{
	size_t o = 0, i;
	uint32_t acc = 0;
	int bits = 0, v;

	if (len % 4 == 1)
		return -1;
	if ((len / 4) * 3 + (len % 4 ? len % 4 - 1 : 0) > max)
		return -1;
	for (i = 0; i < len; i++) {
		v = b64_value((unsigned char)in[i], url);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)
		return -1;
	return (long)o;
}

static size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	size_t o = 0, i;
	uint32_t acc = 0;
	int bits = 0;

	for (i = 0; i < len; i++) {
		acc = (acc << 8) | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = b64url[(acc >> bits) & 63];
		}
		acc &= (1u << bits) - 1;
	}
	if (bits)
		out[o++] = b64url[(acc << (6 - bits)) & 63];
	return o;
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
	fw_scope_mac(k->secret, k->len, FW_SCOPE_TAG, out->ns, out->ns_len, out->sandbox,
		     out->sandbox_len, out->port, want);
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
	fw_scope_mac(k->secret, k->len, FW_SCOPE_TAG, ns, ns_len, sandbox, sandbox_len,
		     (unsigned int)port, mac);
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
