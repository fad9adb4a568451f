// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Service hostnames: the name grammar, the hashed label (SHA-256 from
 * scope.c, so nothing else is linked) and the host parser. Every length is
 * bounded by the FW_HOSTNAME_* sizes before a byte is copied. */
#include <string.h>

#include "gateway/hostname.h"
#include "gateway/scope.h"

static const char *const hostname_errors[FW_HOSTNAME_E_MAX] = {
#define FW_HOSTNAME_TEXT(name, num, text) [num] = text,
	FW_HOSTNAME_ERRORS(FW_HOSTNAME_TEXT)
#undef FW_HOSTNAME_TEXT
};

const char *fw_hostname_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code <= 0 || code >= FW_HOSTNAME_E_MAX || !hostname_errors[code])
		return "unknown error";
	return hostname_errors[code];
}

static int is_ldh(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* a lowercase DNS label of 1..max bytes without an edge hyphen */
static int label_ok(const char *s, size_t len, size_t max)
{
	size_t i;

	if (len == 0 || len > max || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (i = 0; i < len; i++)
		if (!is_ldh(s[i]))
			return 0;
	return 1;
}

static const char *find_sep(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++)
		if (s[i] == '-' && s[i + 1] == '-')
			return s + i;
	return NULL;
}

int fw_hostname_name_ok(const char *s, size_t len)
{
	/* "--" separates the parts of a readable label: no name may hold it */
	if (!label_ok(s, len, FW_HOSTNAME_NAME_MAX) || find_sep(s, len))
		return -FW_HOSTNAME_E_NAME;
	return 0;
}

int fw_hostname_routing_name_ok(const char *s, size_t len)
{
	return label_ok(s, len, FW_HOSTNAME_ROUTING_MAX) ? 0 : -FW_HOSTNAME_E_ROUTING_NAME;
}

int fw_hostname_target_set(struct fw_hostname_target *t, const char *workspace, const char *sandbox,
			   const char *service)
{
	size_t wl = strnlen(workspace, FW_HOSTNAME_NAME_MAX + 1);
	size_t sl = strnlen(sandbox, FW_HOSTNAME_NAME_MAX + 1);
	size_t vl = service ? strnlen(service, FW_HOSTNAME_NAME_MAX + 1) : 0;

	if (fw_hostname_name_ok(workspace, wl) || fw_hostname_name_ok(sandbox, sl) ||
	    (vl && fw_hostname_name_ok(service, vl)))
		return -FW_HOSTNAME_E_NAME;
	memset(t, 0, sizeof(*t));
	memcpy(t->workspace, workspace, wl);
	memcpy(t->sandbox, sandbox, sl);
	if (vl)
		memcpy(t->service, service, vl);
	return 0;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

int fw_hostname_domains_add(struct fw_hostname_domains *d, const char *s, size_t len)
{
	char buf[FW_HOSTNAME_DOMAIN_MAX + 1];
	size_t i, start;
	unsigned int k;

	if (len >= 2 && s[0] == '*' && s[1] == '.') {
		s += 2;
		len -= 2;
	}
	if (len == 0 || len > FW_HOSTNAME_DOMAIN_MAX)
		return -FW_HOSTNAME_E_DOMAIN;
	for (i = 0; i < len; i++)
		buf[i] = lower(s[i]);
	buf[len] = '\0';
	/* every dot-separated label a DNS label */
	for (start = 0, i = 0; i <= len; i++) {
		if (i < len && buf[i] != '.')
			continue;
		if (!label_ok(buf + start, i - start, 63))
			return -FW_HOSTNAME_E_DOMAIN;
		start = i + 1;
	}
	for (k = 0; k < d->count; k++)
		if (d->d[k].len == len && memcmp(d->d[k].name, buf, len) == 0)
			return 0;
	if (d->count >= FW_HOSTNAME_DOMAINS_MAX)
		return -FW_HOSTNAME_E_DOMAINS_FULL;
	memcpy(d->d[d->count].name, buf, len + 1);
	d->d[d->count].len = len;
	d->count++;
	return 0;
}

int fw_hostname_domains_add_wildcard(struct fw_hostname_domains *d, const char *s, size_t len)
{
	if (len < 3 || s[0] != '*' || s[1] != '.')
		return -FW_HOSTNAME_E_WILDCARD;
	return fw_hostname_domains_add(d, s, len);
}

int fw_hostname_readable(const struct fw_hostname_target *t, char *out, size_t outlen)
{
	size_t wl = strlen(t->workspace), sl = strlen(t->sandbox), vl = strlen(t->service);
	size_t n = wl + 2 + sl + (vl ? 2 + vl : 0);
	char *p = out;

	if (n + 1 > outlen)
		return -FW_HOSTNAME_E_NAME;
	memcpy(p, t->workspace, wl);
	p += wl;
	memcpy(p, "--", 2);
	p += 2;
	memcpy(p, t->sandbox, sl);
	p += sl;
	if (vl) {
		memcpy(p, "--", 2);
		p += 2;
		memcpy(p, t->service, vl);
		p += vl;
	}
	*p = '\0';
	return (int)n;
}

/* RFC 4648 base32, lowercase, of exactly FW_HOSTNAME_HASH_BYTES bytes:
 * two 5-byte groups of eight characters, so no padding arises */
static void base32_10(const unsigned char in[FW_HOSTNAME_HASH_BYTES],
		      char out[FW_HOSTNAME_LABEL_LEN + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
	int g, i;

	for (g = 0; g < 2; g++) {
		unsigned long long v = 0;

		for (i = 0; i < 5; i++)
			v = v << 8 | in[5 * g + i];
		for (i = 0; i < 8; i++)
			out[8 * g + i] = alphabet[(v >> (35 - 5 * i)) & 31];
	}
	out[FW_HOSTNAME_LABEL_LEN] = '\0';
}

int fw_hostname_hash(const char *routing_name, size_t routing_len,
		     const struct fw_hostname_target *t, char out[FW_HOSTNAME_LABEL_LEN + 1])
{
	/* routing name, then three names, NUL-joined */
	unsigned char buf[FW_HOSTNAME_ROUTING_MAX + 3 * (FW_HOSTNAME_NAME_MAX + 1)];
	unsigned char digest[32];
	size_t n = 0, l;

	if (fw_hostname_routing_name_ok(routing_name, routing_len))
		return -FW_HOSTNAME_E_ROUTING_NAME;
	memcpy(buf, routing_name, routing_len);
	n = routing_len;
	buf[n++] = '\0';
	l = strnlen(t->workspace, FW_HOSTNAME_NAME_MAX + 1);
	if (l > FW_HOSTNAME_NAME_MAX)
		return -FW_HOSTNAME_E_NAME;
	memcpy(buf + n, t->workspace, l);
	n += l;
	buf[n++] = '\0';
	l = strnlen(t->sandbox, FW_HOSTNAME_NAME_MAX + 1);
	if (l > FW_HOSTNAME_NAME_MAX)
		return -FW_HOSTNAME_E_NAME;
	memcpy(buf + n, t->sandbox, l);
	n += l;
	buf[n++] = '\0';
	l = strnlen(t->service, FW_HOSTNAME_NAME_MAX + 1);
	if (l > FW_HOSTNAME_NAME_MAX)
		return -FW_HOSTNAME_E_NAME;
	memcpy(buf + n, t->service, l);
	n += l;
	if (fw_sha256(buf, n, digest))
		return -FW_HOSTNAME_E_NAME; /* no label rather than a wrong one */
	base32_10(digest, out);
	return 0;
}

int fw_hostname_is_hash_label(const char *s, size_t len)
{
	size_t i;

	if (len != FW_HOSTNAME_LABEL_LEN)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '2' && s[i] <= '7')))
			return 0;
	return 1;
}

const char *fw_hostname_request_host(const char *host, size_t host_len, const char *authority,
				     size_t authority_len, size_t *len)
{
	if (host) {
		*len = host_len;
		return host;
	}
	*len = authority ? authority_len : 0;
	return authority;
}

/* copies a part of a readable label into a target field */
static int take_part(char *dst, const char *s, size_t len)
{
	if (fw_hostname_name_ok(s, len))
		return -FW_HOSTNAME_E_BAD_PART;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

int fw_hostname_parse(const struct fw_hostname_domains *d, int hashed, const char *host, size_t len,
		      struct fw_hostname_parsed *out)
{
	char buf[FW_HOSTNAME_HOST_MAX + 1];
	const char *sep, *rest, *sep2;
	size_t i, hl = 0, ll = 0, rl;
	unsigned int k;
	int err;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < len && host[i] != ':'; i++) {
		char c = lower(host[i]);

		if (hl >= FW_HOSTNAME_HOST_MAX || !(is_ldh(c) || c == '.'))
			return -FW_HOSTNAME_E_HOST;
		buf[hl++] = c;
	}
	if (hl == 0)
		return -FW_HOSTNAME_E_HOST;
	buf[hl] = '\0';

	for (k = 0; k < d->count; k++) {
		size_t dl = d->d[k].len;

		if (hl > dl + 1 && buf[hl - dl - 1] == '.' &&
		    memcmp(buf + hl - dl, d->d[k].name, dl) == 0) {
			ll = hl - dl - 1;
			break;
		}
	}
	if (k == d->count)
		return -FW_HOSTNAME_E_NO_DOMAIN;
	/* the first match decides: no other base domain is tried */
	out->domain = k;
	if (memchr(buf, '.', ll))
		return -FW_HOSTNAME_E_NOT_ONE_LABEL;

	if (hashed && fw_hostname_is_hash_label(buf, ll)) {
		memcpy(out->label, buf, ll);
		out->label[ll] = '\0';
		out->kind = FW_HOSTNAME_HASHED;
		return 0;
	}

	sep = find_sep(buf, ll);
	if (!sep)
		return -FW_HOSTNAME_E_NO_SEPARATOR;
	rest = sep + 2;
	rl = (size_t)(buf + ll - rest);
	sep2 = find_sep(rest, rl);
	err = take_part(out->target.workspace, buf, (size_t)(sep - buf));
	if (!err)
		err = take_part(out->target.sandbox, rest, sep2 ? (size_t)(sep2 - rest) : rl);
	if (!err && sep2)
		err = take_part(out->target.service, sep2 + 2, (size_t)(buf + ll - sep2 - 2));
	if (err) {
		memset(&out->target, 0, sizeof(out->target));
		return err;
	}
	out->kind = FW_HOSTNAME_READABLE;
	return 0;
}
