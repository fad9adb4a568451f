// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The vault blob's reader and the binding matcher (vault.h). Every
 * length is checked against what is left of its record, every record
 * against what is left of the blob, before a byte it covers is read. */
#include <errno.h>
#include <string.h>

#include "l7/vault.h"

_Static_assert(sizeof(struct fw_l7_vault_head) == 8, "the blob's head is 8 bytes");
_Static_assert(sizeof(struct fw_l7_vault_rec) == 18, "a record's head is 18 bytes");

/* header fields that frame the message or the connection: a credential
 * in one of them would change what the request is, not who sends it */
static const char *const reserved_headers[] = {
	"host",	   "connection", "keep-alive",	      "proxy-connection", "te",
	"trailer", "upgrade",	 "transfer-encoding", "content-length",	  "expect",
};

struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cursor *c, size_t n, const uint8_t **out)
{
	if (n > c->left)
		return false;
	*out = c->p;
	c->p += n;
	c->left -= n;
	return true;
}

static bool take16(struct cursor *c, uint16_t *v)
{
	const uint8_t *p;

	if (!take(c, sizeof(*v), &p))
		return false;
	memcpy(v, p, sizeof(*v));
	return true;
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* ASCII case ignored, every byte compared (a NUL too) */
static bool same_nocase(const char *a, const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return false;
	return true;
}

static bool eq_nocase(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && same_nocase(a, b, alen);
}

static bool is_reserved(const char *h, size_t len)
{
	for (size_t i = 0; i < sizeof(reserved_headers) / sizeof(reserved_headers[0]); i++)
		if (eq_nocase(h, len, reserved_headers[i], strlen(reserved_headers[i])))
			return true;
	return false;
}

/* n strings of a list: each a __u16 length and its bytes */
static int take_list(struct cursor *c, unsigned int n, const uint8_t **first, char kind,
		     const char **why)
{
	*first = c->p;
	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *s;
		uint16_t len;

		if (!take16(c, &len) || !take(c, len, &s)) {
			*why = "a list entry runs past its record";
			return -EINVAL;
		}
		if (!len) {
			*why = "an empty list entry";
			return -EINVAL;
		}
		if (kind == 'm' && !is_token((const char *)s, len)) {
			*why = "a method that is no token";
			return -EINVAL;
		}
		if (kind == 'p' && s[0] != '/') {
			*why = "a path that does not start with /";
			return -EINVAL;
		}
	}
	return 0;
}

static int decode_rec(struct cursor *blob, struct fw_l7_binding *b, const char **why)
{
	struct fw_l7_vault_rec rec;
	struct cursor c;
	const uint8_t *p;
	int err;

	if (blob->left < sizeof(rec)) {
		*why = "a record's head runs past the blob";
		return -EINVAL;
	}
	memcpy(&rec, blob->p, sizeof(rec));
	if (rec.size < sizeof(rec) || rec.size > blob->left) {
		*why = "a record's size is short of its head or past the blob";
		return -EINVAL;
	}
	memset(b, 0, sizeof(*b));
	b->rec = blob->p;
	b->size = rec.size;
	c.p = blob->p + sizeof(rec);
	c.left = rec.size - sizeof(rec);
	blob->p += rec.size;
	blob->left -= rec.size;

	if (rec.auth < FW_L7_AUTH_API_KEY || rec.auth > FW_L7_AUTH_BASIC) {
		*why = "an unknown auth type";
		return -EINVAL;
	}
	if (rec.schemes & ~(FW_L7_SCHEME_HTTP | FW_L7_SCHEME_HTTPS)) {
		*why = "an unknown scheme";
		return -EINVAL;
	}
	if (rec.nports > FW_L7_VAULT_MAX_LIST || rec.nhosts > FW_L7_VAULT_MAX_LIST ||
	    rec.nmethods > FW_L7_VAULT_MAX_LIST || rec.npaths > FW_L7_VAULT_MAX_LIST) {
		*why = "a list longer than FW_L7_VAULT_MAX_LIST";
		return -EINVAL;
	}
	b->auth = rec.auth;
	b->schemes = rec.schemes;
	b->nports = rec.nports;
	b->nhosts = rec.nhosts;
	b->nmethods = rec.nmethods;
	b->npaths = rec.npaths;
	b->name_len = rec.name_len;
	b->header_len = rec.header_len;
	b->value_len = rec.value_len;

	if (!take(&c, (size_t)rec.nports * sizeof(uint16_t), &b->ports) ||
	    !take(&c, rec.name_len, &p)) {
		*why = "the ports or the name run past their record";
		return -EINVAL;
	}
	b->name = (const char *)p;
	if (!take(&c, rec.header_len, &p)) {
		*why = "the header name runs past its record";
		return -EINVAL;
	}
	b->header = (const char *)p;
	if (!is_token(b->header, b->header_len)) {
		*why = "a header name that is no field name";
		return -EINVAL;
	}
	if (is_reserved(b->header, b->header_len)) {
		*why = "a header the proxy does not set (it frames the request)";
		return -EINVAL;
	}
	if (!take(&c, rec.value_len, &p)) {
		*why = "the value runs past its record";
		return -EINVAL;
	}
	b->value = (const char *)p;
	for (uint32_t i = 0; i < rec.value_len; i++) {
		if (p[i] == '\r' || p[i] == '\n' || p[i] == '\0') {
			*why = "a value with CR, LF or NUL";
			return -EINVAL;
		}
	}
	err = take_list(&c, rec.nhosts, &b->hosts, 'h', why);
	if (!err)
		err = take_list(&c, rec.nmethods, &b->methods, 'm', why);
	if (!err)
		err = take_list(&c, rec.npaths, &b->paths, 'p', why);
	if (err)
		return err;
	/* what a later version adds at a record's end is skipped */
	b->tail = (uint32_t)c.left;
	return 0;
}

int fw_l7_vault_count(const uint8_t *data, size_t len)
{
	struct fw_l7_vault_head head;

	if (!data || len < sizeof(head))
		return -EINVAL;
	memcpy(&head, data, sizeof(head));
	if (head.magic != FW_L7_VAULT_MAGIC || head.version != FW_L7_VAULT_VERSION)
		return -EINVAL;
	return head.nbindings;
}

int fw_l7_vault_decode(const uint8_t *data, size_t len, struct fw_l7_vault *v, unsigned int room,
		       const char **why)
{
	const char *ignored;
	struct cursor c;
	int n, err;

	if (!why)
		why = &ignored;
	*why = NULL;
	v->nbindings = 0;
	n = fw_l7_vault_count(data, len);
	if (n < 0) {
		*why = "not a vault of this version (size, magic or version)";
		return n;
	}
	if ((size_t)n > (len - sizeof(struct fw_l7_vault_head)) / sizeof(struct fw_l7_vault_rec)) {
		*why = "more bindings than the blob has room for";
		return -EINVAL;
	}
	if ((unsigned int)n > room) {
		*why = "more bindings than room for them";
		return -ENOSPC;
	}
	c.p = data + sizeof(struct fw_l7_vault_head);
	c.left = len - sizeof(struct fw_l7_vault_head);
	for (int i = 0; i < n; i++) {
		err = decode_rec(&c, &v->bindings[i], why);
		if (err)
			return err;
	}
	if (c.left) {
		*why = "bytes after the last record";
		return -EINVAL;
	}
	v->nbindings = (unsigned int)n;
	return 0;
}

const char *fw_l7_vault_next(const uint8_t **at, size_t *len)
{
	uint16_t l;

	memcpy(&l, *at, sizeof(l));
	*len = l;
	*at += sizeof(l) + l;
	return (const char *)(*at - l);
}

uint16_t fw_l7_vault_port(const struct fw_l7_binding *b, unsigned int i)
{
	uint16_t port;

	memcpy(&port, b->ports + (size_t)i * sizeof(port), sizeof(port));
	return port;
}

/* "*.domain": host strictly under domain; anything else: equal */
static bool host_matches(const char *rule, size_t rlen, const char *host, size_t hlen)
{
	if (rlen > 2 && rule[0] == '*' && rule[1] == '.') {
		size_t dlen = rlen - 1; /* ".domain" */

		return hlen > dlen && host[0] != '.' &&
		       same_nocase(host + hlen - dlen, rule + 1, dlen);
	}
	return eq_nocase(rule, rlen, host, hlen);
}

static bool path_matches(const char *rule, size_t rlen, const char *path, size_t plen)
{
	if (rule[rlen - 1] == '*')
		return plen >= rlen - 1 && memcmp(rule, path, rlen - 1) == 0;
	return rlen == plen && memcmp(rule, path, plen) == 0;
}

static bool any_path(const struct fw_l7_binding *b, const char *path, size_t plen)
{
	const uint8_t *at = b->paths;

	for (unsigned int i = 0; i < b->npaths; i++) {
		size_t len;
		const char *rule = fw_l7_vault_next(&at, &len);

		if (path_matches(rule, len, path, plen))
			return true;
	}
	return false;
}

/* A path a server may resolve to another than nginx matched: a segment
 * that is "." or ".." before its parameters (";...": Tomcat, Jetty and
 * Spring drop them, then resolve the dots, where nginx sees a name), or
 * a backslash (a separator to some servers). */
static bool path_ambiguous(const char *path, size_t len)
{
	size_t seg = 0;

	for (size_t i = 0; i <= len; i++) {
		const char *s = path + seg, *semi;

		if (i < len && path[i] == '\\')
			return true;
		if (i < len && path[i] != '/')
			continue;
		semi = memchr(s, ';', i - seg);
		if (semi && ((semi - s == 1 && s[0] == '.') ||
			     (semi - s == 2 && s[0] == '.' && s[1] == '.')))
			return true;
		seg = i + 1;
	}
	return false;
}

bool fw_l7_binding_names(const struct fw_l7_binding *b, const char *host, size_t host_len,
			 unsigned int scheme, uint16_t port)
{
	unsigned int schemes = b->schemes ? b->schemes : FW_L7_SCHEME_HTTPS;
	const uint8_t *at = b->hosts;
	bool found = false;

	if (!(schemes & scheme) || !host_len)
		return false;
	for (unsigned int i = 0; i < b->nports && !found; i++)
		found = fw_l7_vault_port(b, i) == port;
	if (b->nports && !found)
		return false;
	for (unsigned int i = 0; i < b->nhosts; i++) {
		size_t len;
		const char *rule = fw_l7_vault_next(&at, &len);

		if (host_matches(rule, len, host, host_len))
			return true;
	}
	return false;
}

bool fw_l7_binding_matches(const struct fw_l7_binding *b, const struct fw_l7_request *r)
{
	if (!fw_l7_binding_names(b, r->host, r->host_len, r->scheme, r->port))
		return false;
	if (b->nmethods) {
		const uint8_t *at = b->methods;
		bool found = false;

		for (unsigned int i = 0; i < b->nmethods && !found; i++) {
			size_t len;
			const char *m = fw_l7_vault_next(&at, &len);

			found = eq_nocase(m, len, r->method, r->method_len);
		}
		if (!found)
			return false;
	}
	if (!b->npaths)
		return true;
	if (path_ambiguous(r->path, r->path_len) ||
	    (r->raw_path && path_ambiguous(r->raw_path, r->raw_path_len)))
		return false;
	if (!any_path(b, r->path, r->path_len))
		return false;
	return !r->raw_path || any_path(b, r->raw_path, r->raw_path_len);
}

const struct fw_l7_binding *fw_l7_vault_match(const struct fw_l7_vault *v,
					      const struct fw_l7_request *r)
{
	for (unsigned int i = 0; i < v->nbindings; i++)
		if (fw_l7_binding_matches(&v->bindings[i], r))
			return &v->bindings[i];
	return NULL;
}

bool fw_l7_vault_names(const struct fw_l7_vault *v, const char *host, size_t host_len,
		       unsigned int scheme, uint16_t port)
{
	for (unsigned int i = 0; i < v->nbindings; i++)
		if (fw_l7_binding_names(&v->bindings[i], host, host_len, scheme, port))
			return true;
	return false;
}
