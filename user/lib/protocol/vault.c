// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Credential vaults. A parsed vault keeps each secret value in its own
 * secmem allocation and each binding as a canonical jansson object (no
 * secrets in it). jansson's allocator is swapped for one that wipes on
 * free (fw_secmem_wipe_json), because its lexer and string nodes hold
 * copies of every value. */
#include <errno.h>

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fastwall/l7vault.h"
#include "common/addr.h"
#include "common/secmem.h"
#include "common/log.h"
#include "protocol/vault.h"

#define ECHO_MAX 64 /* bytes of user text repeated in an error */

struct vault_cred {
	char *name;  /* malloc'd */
	char *value; /* secmem, NUL-terminated */
	size_t vlen;
};

struct vault_binding {
	char *name;	  /* malloc'd */
	char *credential; /* malloc'd, auth.credential */
	json_t *json;	  /* canonical binding object */
	__u8 auth;	  /* enum fw_l7_auth */
};

struct fw_vault {
	struct vault_cred *creds;
	size_t ncreds;
	struct vault_binding *bindings;
	size_t nbindings;
};

/* User text repeated in an error: bounded, printable, no quotes, so the
 * message stays one readable line whatever the input. */
static const char *echo(const char *s, char buf[ECHO_MAX + 4])
{
	size_t i;

	for (i = 0; i < ECHO_MAX && s[i]; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\') ? s[i] : '?';
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

/* --- jansson allocator ---------------------------------------------- */

static pthread_once_t json_alloc_once = PTHREAD_ONCE_INIT;

/* Also called by the daemon at startup; doing it here too means no vault
 * is ever parsed without it (tests, fuzzing, other embedders). */
static void json_alloc_init(void)
{
	fw_secmem_wipe_json();
}

/* --- freeing -------------------------------------------------------- */

static void cred_free(struct vault_cred *c)
{
	free(c->name);
	fw_secmem_free(c->value);
}

static void binding_free(struct vault_binding *b)
{
	free(b->name);
	free(b->credential);
	json_decref(b->json);
}

void fw_vault_free(struct fw_vault *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->ncreds; i++)
		cred_free(&v->creds[i]);
	for (size_t i = 0; i < v->nbindings; i++)
		binding_free(&v->bindings[i]);
	free(v->creds);
	free(v->bindings);
	free(v);
}

/* --- validation ----------------------------------------------------- */

/* Names are shown back in errors and GET, so printable ASCII only. */
static bool name_ok(const json_t *j)
{
	const char *s = json_string_value(j);
	size_t len;

	if (!s)
		return false;
	len = json_string_length(j);
	if (len == 0 || len > FW_VAULT_MAX_NAME)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

static const struct vault_cred *cred_find(const struct vault_cred *c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			return &c[i];
	return NULL;
}

static int cred_parse(const json_t *j, size_t idx, struct fw_vault *v, char *err, size_t errlen)
{
	const json_t *name = json_object_get(j, "name");
	const json_t *src, *type, *value;
	struct vault_cred *c = &v->creds[v->ncreds];
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4];
	const char *n;

	if (!json_is_object(j)) {
		fw_set_err(err, errlen, "credentials[%zu] must be an object", idx);
		return -EINVAL;
	}
	if (!name_ok(name)) {
		fw_set_err(
			err, errlen,
			"credentials[%zu]: name must be a string of 1 to %d printable characters",
			idx, FW_VAULT_MAX_NAME);
		return -EINVAL;
	}
	n = json_string_value(name);
	echo(n, e1);
	if (cred_find(v->creds, v->ncreds, n)) {
		fw_set_err(err, errlen, "duplicate credential \"%s\"", e1);
		return -EINVAL;
	}
	src = json_object_get(j, "source");
	if (!json_is_object(src)) {
		fw_set_err(err, errlen, "credential \"%s\": source must be an object", e1);
		return -EINVAL;
	}
	type = json_object_get(src, "type");
	if (!json_is_string(type)) {
		fw_set_err(err, errlen, "credential \"%s\": source.type must be a string", e1);
		return -EINVAL;
	}
	if (strcmp(json_string_value(type), "inline") != 0) {
		fw_set_err(err, errlen, "credential \"%s\": unsupported source type \"%s\"", e1,
			   echo(json_string_value(type), e2));
		return -EINVAL;
	}
	/* never show the value, not even a prefix: it may be short */
	value = json_object_get(src, "value");
	if (!json_is_string(value)) {
		fw_set_err(err, errlen, "credential \"%s\": source.value must be a string", e1);
		return -EINVAL;
	}
	if (json_string_length(value) == 0) {
		fw_set_err(err, errlen, "credential \"%s\": source.value is empty", e1);
		return -EINVAL;
	}
	if (json_string_length(value) > FW_VAULT_MAX_VALUE) {
		fw_set_err(err, errlen, "credential \"%s\": source.value longer than %d bytes", e1,
			   FW_VAULT_MAX_VALUE);
		return -EINVAL;
	}
	/* a header value may not hold them: the proxy sends the value as one
	 * header line (never say where: that would tell part of it) */
	if (memchr(json_string_value(value), '\r', json_string_length(value)) ||
	    memchr(json_string_value(value), '\n', json_string_length(value)) ||
	    memchr(json_string_value(value), '\0', json_string_length(value))) {
		fw_set_err(err, errlen, "credential \"%s\": source.value contains CR, LF or NUL",
			   e1);
		return -EINVAL;
	}
	c->name = strdup(n);
	c->vlen = json_string_length(value);
	c->value = fw_secmem_alloc(c->vlen + 1);
	if (!c->name || !c->value) {
		cred_free(c);
		fw_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(c->value, json_string_value(value), c->vlen);
	v->ncreds++;
	return 0;
}

static bool subdomain_of(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	return la > lb + 1 && a[la - lb - 1] == '.' && memcmp(a + la - lb, b, lb) == 0;
}

/* "*.x" is inside the policy only if every name under x is allowed: the
 * first rule covering all of them decides, and any earlier rule that
 * denies some of them (an exact name or a narrower wildcard) refuses. */
static bool wildcard_allowed(const struct fw_policy *p, const char *x)
{
	for (size_t i = 0; i < p->nrules; i++) {
		const struct fw_policy_rule *r = &p->rules[i];

		if (r->kind == FW_TARGET_DOMAIN) {
			if (subdomain_of(r->domain, x) && r->action != FW_ACTION_ALLOW)
				return false;
		} else if (r->kind == FW_TARGET_WILDCARD) {
			if (strcmp(r->domain, x) == 0 || subdomain_of(x, r->domain))
				return r->action == FW_ACTION_ALLOW;
			if (subdomain_of(r->domain, x) && r->action != FW_ACTION_ALLOW)
				return false;
		}
	}
	return p->default_action == FW_ACTION_ALLOW;
}

/* As the data plane decides: a deny prefix beats any allow, whatever the
 * order; a rule of the other family never decides (::/0 is not IPv4). */
static bool ip_allowed(const struct fw_policy *p, const struct fw_ip *ip)
{
	enum fw_family fam = fw_addr_family(ip);
	bool allowed = false;

	for (size_t i = 0; i < p->nrules; i++) {
		const struct fw_policy_rule *r = &p->rules[i];

		if (r->kind != FW_TARGET_IP && r->kind != FW_TARGET_CIDR)
			continue;
		if (fw_addr_family(&r->addr) != fam || !fw_prefix_contains(&r->addr, r->plen, ip))
			continue;
		if (r->action != FW_ACTION_ALLOW)
			return false;
		allowed = true;
	}
	return allowed || p->default_action == FW_ACTION_ALLOW;
}

static bool host_allowed(const struct fw_policy *p, const struct fw_policy_rule *h)
{
	__u8 action;

	switch (h->kind) {
	case FW_TARGET_DOMAIN:
		fw_policy_match_domain(p, h->domain, &action);
		return action == FW_ACTION_ALLOW;
	case FW_TARGET_WILDCARD:
		return wildcard_allowed(p, h->domain);
	case FW_TARGET_IP:
		return ip_allowed(p, &h->addr);
	default:
		return false;
	}
}

/* Classifies host with the policy's own target parser (so a host means
 * exactly what the same text would as a policy target) and returns its
 * canonical form: lowercased domain, "*.domain", or the address text. */
static int host_parse(const char *bname, const json_t *j, const struct fw_policy *policy,
		      json_t *out, char *err, size_t errlen)
{
	const char *h = json_string_value(j);
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4], canon[FW_DOMAIN_MAX + 3];
	char perr[160];
	struct fw_policy scratch;
	const struct fw_policy_rule *r;
	size_t len;
	int ret = -EINVAL;

	if (!h) {
		fw_set_err(err, errlen, "binding \"%s\": hosts must be strings", echo(bname, e1));
		return -EINVAL;
	}
	len = json_string_length(j);
	if (len == 0 || len > FW_DOMAIN_MAX + 2)
		goto invalid;
	/* the target parser would trim spaces; a host must not have any */
	for (size_t i = 0; i < len; i++)
		if (h[i] <= 0x20 || h[i] >= 0x7f)
			goto invalid;
	fw_policy_init(&scratch);
	if (fw_policy_add_rule(&scratch, "allow", h, NULL, 0, perr, sizeof(perr)))
		goto invalid_free;
	r = &scratch.rules[0];
	switch (r->kind) {
	case FW_TARGET_DOMAIN:
		snprintf(canon, sizeof(canon), "%s", r->domain);
		break;
	case FW_TARGET_WILDCARD:
		snprintf(canon, sizeof(canon), "*.%s", r->domain);
		break;
	case FW_TARGET_IP:
		fw_addr_str(&r->addr, canon, sizeof(canon));
		break;
	default:
		goto invalid_free; /* a CIDR is not a host */
	}
	if (!host_allowed(policy, r)) {
		fw_set_err(err, errlen,
			   "binding \"%s\": host \"%s\" is outside the subject's policy",
			   echo(bname, e1), echo(h, e2));
		goto out;
	}
	ret = json_array_append_new(out, json_string(canon)) ? -ENOMEM : 0;
	if (ret)
		fw_set_err(err, errlen, "out of memory");
out:
	fw_policy_free(&scratch);
	return ret;
invalid_free:
	fw_policy_free(&scratch);
invalid:
	fw_set_err(err, errlen,
		   "binding \"%s\": invalid host \"%s\": expected a domain name, \"*.domain\" or "
		   "an IP address",
		   echo(bname, e1), echo(h, e2));
	return -EINVAL;
}

static bool method_ok(const char *s, size_t len)
{
	if (len == 0 || len > 16)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
			return false;
	return true;
}

static bool path_ok(const char *s, size_t len)
{
	if (len == 0 || len > 2048 || s[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

/* RFC 9110 tchar: a header field name */
static bool header_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > FW_VAULT_MAX_NAME)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr("!#$%&'*+-.^_`|~", c))))
			return false;
	}
	return true;
}

/* Headers the proxy routes or frames a request by: a binding that set
 * one would send the request elsewhere than the name it checked (Host)
 * or split it (a length, a connection option). */
static bool framing_header(const char *s)
{
	static const char *const names[] = {
		"Host",	   "Content-Length", "Transfer-Encoding", "Connection",
		"Upgrade", "Keep-Alive",     "Proxy-Connection",  "TE",
		"Trailer",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i]))
			return true;
	return false;
}

/* One match list: absent is fine (matches anything) except for hosts,
 * which pin the binding to names the policy allows. */
static int list_parse(const char *bname, const json_t *match, const char *key,
		      const struct fw_policy *policy, json_t *cmatch, char *err, size_t errlen)
{
	const json_t *list = json_object_get(match, key);
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4];
	bool hosts = strcmp(key, "hosts") == 0;
	json_t *out;
	size_t i;
	const json_t *it;
	int ret;

	echo(bname, e1);
	if (!list) {
		if (!hosts)
			return 0;
		fw_set_err(err, errlen, "binding \"%s\": match.hosts is required", e1);
		return -EINVAL;
	}
	if (!json_is_array(list) || (hosts && json_array_size(list) == 0)) {
		fw_set_err(err, errlen, "binding \"%s\": match.%s must be a%s array", e1, key,
			   hosts ? " non-empty" : "n");
		return -EINVAL;
	}
	if (json_array_size(list) > FW_VAULT_MAX_LIST) {
		fw_set_err(err, errlen, "binding \"%s\": too many %s (at most %d)", e1, key,
			   FW_VAULT_MAX_LIST);
		return -EINVAL;
	}
	out = json_array();
	if (!out || json_object_set_new(cmatch, key, out))
		goto nomem;
	json_array_foreach(list, i, it)
	{
		const char *s = json_string_value(it);
		size_t len = s ? json_string_length(it) : 0;
		char buf[32];

		if (hosts) {
			ret = host_parse(bname, it, policy, out, err, errlen);
			if (ret)
				return ret;
			continue;
		}
		if (strcmp(key, "ports") == 0) {
			json_int_t port = json_integer_value(it);

			if (!json_is_integer(it) || port < 1 || port > 65535) {
				fw_set_err(err, errlen,
					   "binding \"%s\": match.ports[%zu] must be an integer "
					   "1-65535",
					   e1, i);
				return -EINVAL;
			}
			if (json_array_append_new(out, json_integer(port)))
				goto nomem;
			continue;
		}
		if (!s || strlen(s) != len) {
			fw_set_err(err, errlen, "binding \"%s\": match.%s[%zu] must be a string",
				   e1, key, i);
			return -EINVAL;
		}
		if (strcmp(key, "schemes") == 0) {
			if (strcasecmp(s, "http") && strcasecmp(s, "https")) {
				fw_set_err(
					err, errlen,
					"binding \"%s\": invalid scheme \"%s\", expected http or "
					"https",
					e1, echo(s, e2));
				return -EINVAL;
			}
			snprintf(buf, sizeof(buf), "%s", s);
			for (char *c = buf; *c; c++)
				*c = (char)(*c | 0x20);
			s = buf;
		} else if (strcmp(key, "methods") == 0) {
			if (!method_ok(s, len)) {
				fw_set_err(err, errlen, "binding \"%s\": invalid method \"%s\"", e1,
					   echo(s, e2));
				return -EINVAL;
			}
			snprintf(buf, sizeof(buf), "%s", s);
			for (char *c = buf; *c; c++)
				*c = (char)(*c & ~0x20);
			s = buf;
		} else if (!path_ok(s, len)) {
			fw_set_err(
				err, errlen,
				"binding \"%s\": invalid path \"%s\", expected \"/\" and printable "
				"characters without spaces",
				e1, echo(s, e2));
			return -EINVAL;
		}
		if (json_array_append_new(out, json_string(s)))
			goto nomem;
	}
	return 0;
nomem:
	fw_set_err(err, errlen, "out of memory");
	return -ENOMEM;
}

static const char *const match_keys[] = {"schemes", "ports", "hosts", "methods", "paths"};

static int binding_parse(const json_t *j, size_t idx, const struct fw_policy *policy,
			 struct fw_vault *v, char *err, size_t errlen)
{
	const json_t *name = json_object_get(j, "name");
	const json_t *match, *auth, *type, *hname, *cred;
	struct vault_binding *b = &v->bindings[v->nbindings];
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4];
	const char *n, *auth_type;
	json_t *cmatch;
	int ret;

	if (!json_is_object(j)) {
		fw_set_err(err, errlen, "bindings[%zu] must be an object", idx);
		return -EINVAL;
	}
	if (!name_ok(name)) {
		fw_set_err(err, errlen,
			   "bindings[%zu]: name must be a string of 1 to %d printable characters",
			   idx, FW_VAULT_MAX_NAME);
		return -EINVAL;
	}
	n = json_string_value(name);
	echo(n, e1);
	for (size_t i = 0; i < v->nbindings; i++) {
		if (strcmp(v->bindings[i].name, n) == 0) {
			fw_set_err(err, errlen, "duplicate binding \"%s\"", e1);
			return -EINVAL;
		}
	}
	match = json_object_get(j, "match");
	if (!json_is_object(match)) {
		fw_set_err(err, errlen, "binding \"%s\": match must be an object", e1);
		return -EINVAL;
	}
	auth = json_object_get(j, "auth");
	if (!json_is_object(auth)) {
		fw_set_err(err, errlen, "binding \"%s\": auth must be an object", e1);
		return -EINVAL;
	}
	type = json_object_get(auth, "type");
	if (!json_is_string(type)) {
		fw_set_err(err, errlen, "binding \"%s\": auth.type must be a string", e1);
		return -EINVAL;
	}
	auth_type = json_string_value(type);
	if (!strcmp(auth_type, "apiKey"))
		b->auth = FW_L7_AUTH_API_KEY;
	else if (!strcmp(auth_type, "bearer"))
		b->auth = FW_L7_AUTH_BEARER;
	else if (!strcmp(auth_type, "basic"))
		b->auth = FW_L7_AUTH_BASIC;
	else {
		fw_set_err(err, errlen,
			   "binding \"%s\": unsupported auth type \"%s\" (apiKey, bearer or basic)",
			   e1, echo(auth_type, e2));
		return -EINVAL;
	}
	hname = json_object_get(auth, "name");
	if (b->auth == FW_L7_AUTH_API_KEY) {
		if (!json_is_string(hname) ||
		    !header_name_ok(json_string_value(hname), json_string_length(hname))) {
			fw_set_err(err, errlen,
				   "binding \"%s\": auth.name must be an HTTP header name", e1);
			return -EINVAL;
		}
		if (framing_header(json_string_value(hname))) {
			fw_set_err(err, errlen,
				   "binding \"%s\": auth.name %s routes or frames the request: "
				   "not a credential's header",
				   e1, json_string_value(hname));
			return -EINVAL;
		}
	} else if (hname && (!json_is_string(hname) ||
			     strcasecmp(json_string_value(hname), "Authorization"))) {
		/* bearer and basic set Authorization: another name is a mistake */
		fw_set_err(err, errlen,
			   "binding \"%s\": auth type %s sets Authorization: auth.name must be "
			   "absent or Authorization",
			   e1, auth_type);
		return -EINVAL;
	}
	cred = json_object_get(auth, "credential");
	if (!name_ok(cred)) {
		fw_set_err(err, errlen, "binding \"%s\": auth.credential must name a credential",
			   e1);
		return -EINVAL;
	}

	if (b->auth == FW_L7_AUTH_API_KEY)
		b->json = json_pack("{s:s, s:{}, s:{s:s, s:s, s:s}}", "name", n, "match", "auth",
				    "type", auth_type, "name", json_string_value(hname),
				    "credential", json_string_value(cred));
	else
		b->json = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "name", n, "match", "auth", "type",
				    auth_type, "credential", json_string_value(cred));
	b->name = strdup(n);
	b->credential = strdup(json_string_value(cred));
	if (!b->json || !b->name || !b->credential) {
		ret = -ENOMEM;
		fw_set_err(err, errlen, "out of memory");
		goto fail;
	}
	cmatch = json_object_get(b->json, "match");
	for (size_t i = 0; i < sizeof(match_keys) / sizeof(match_keys[0]); i++) {
		ret = list_parse(n, match, match_keys[i], policy, cmatch, err, errlen);
		if (ret)
			goto fail;
	}
	v->nbindings++;
	return 0;
fail:
	binding_free(b);
	return ret;
}

static int check_refs(const struct fw_vault *v, char *err, size_t errlen)
{
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4];

	for (size_t i = 0; i < v->nbindings; i++) {
		const struct vault_binding *b = &v->bindings[i];
		const struct vault_cred *c = cred_find(v->creds, v->ncreds, b->credential);

		if (!c) {
			fw_set_err(err, errlen, "binding \"%s\": unknown credential \"%s\"",
				   echo(b->name, e1), echo(b->credential, e2));
			return -EINVAL;
		}
		if (b->auth == FW_L7_AUTH_BASIC && !memchr(c->value, ':', c->vlen)) {
			fw_set_err(err, errlen,
				   "binding \"%s\": auth type basic needs credential \"%s\" to be "
				   "user:password",
				   echo(b->name, e1), echo(b->credential, e2));
			return -EINVAL;
		}
	}
	return 0;
}

/* Fetches an optional array member, bounded before anything is read. */
static int array_get(const json_t *root, const char *key, size_t max, const json_t **out, char *err,
		     size_t errlen)
{
	const json_t *a = json_object_get(root, key);

	*out = a;
	if (!a)
		return 0;
	if (!json_is_array(a)) {
		fw_set_err(err, errlen, "%s must be an array", key);
		return -EINVAL;
	}
	if (json_array_size(a) > max) {
		fw_set_err(err, errlen, "too many %s (at most %zu)", key, max);
		return -EINVAL;
	}
	return 0;
}

static const struct fw_policy *policy_or_deny(const struct fw_policy *p, struct fw_policy *deny)
{
	if (p)
		return p;
	fw_policy_init(deny);
	return deny;
}

int fw_vault_parse(const char *body, size_t len, const struct fw_policy *policy, unsigned int flags,
		   struct fw_vault **out, char *err, size_t errlen)
{
	const json_t *creds, *bindings, *it;
	struct fw_policy deny;
	struct fw_vault *v = NULL;
	json_error_t jerr;
	json_t *root;
	size_t i;
	int ret;

	*out = NULL;
	pthread_once(&json_alloc_once, json_alloc_init);
	policy = policy_or_deny(policy, &deny);
	if (len > FW_VAULT_MAX_BODY) {
		fw_set_err(err, errlen, "vault body larger than %d bytes", FW_VAULT_MAX_BODY);
		return -EINVAL;
	}
	/* jerr.text can quote the input near the error, which may be a
	 * secret: only the position is reported */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		fw_set_err(err, errlen, "invalid JSON at line %d column %d", jerr.line,
			   jerr.column);
		return -EINVAL;
	}
	ret = -EINVAL;
	if (!json_is_object(root)) {
		fw_set_err(err, errlen, "vault body must be a JSON object");
		goto out;
	}
	ret = array_get(root, "credentials", FW_VAULT_MAX_CREDS, &creds, err, errlen);
	if (!ret)
		ret = array_get(root, "bindings", FW_VAULT_MAX_BINDINGS, &bindings, err, errlen);
	if (ret)
		goto out;

	ret = -ENOMEM;
	v = calloc(1, sizeof(*v));
	if (!v)
		goto nomem;
	v->creds = calloc(json_array_size(creds) + 1, sizeof(*v->creds));
	v->bindings = calloc(json_array_size(bindings) + 1, sizeof(*v->bindings));
	if (!v->creds || !v->bindings)
		goto nomem;
	json_array_foreach(creds, i, it)
	{
		ret = cred_parse(it, i, v, err, errlen);
		if (ret)
			goto out;
	}
	json_array_foreach(bindings, i, it)
	{
		ret = binding_parse(it, i, policy, v, err, errlen);
		if (ret)
			goto out;
	}
	ret = (flags & FW_VAULT_PARSE_PATCH) ? 0 : check_refs(v, err, errlen);
	if (ret)
		goto out;
	*out = v;
	v = NULL;
	goto out;
nomem:
	fw_set_err(err, errlen, "out of memory");
out:
	fw_vault_free(v);
	json_decref(root);
	return ret;
}

int fw_vault_check_policy(const struct fw_vault *v, const struct fw_policy *policy, char *err,
			  size_t errlen)
{
	char e1[ECHO_MAX + 4], e2[ECHO_MAX + 4];
	struct fw_policy deny, scratch;
	const json_t *it;
	size_t i;
	int ret = 0;

	policy = policy_or_deny(policy, &deny);
	for (size_t b = 0; b < v->nbindings && !ret; b++) {
		const json_t *hosts =
			json_object_get(json_object_get(v->bindings[b].json, "match"), "hosts");

		json_array_foreach(hosts, i, it)
		{
			const char *h = json_string_value(it);

			/* canonical already, so this cannot fail on syntax */
			fw_policy_init(&scratch);
			ret = fw_policy_add_rule(&scratch, "allow", h, NULL, 0, NULL, 0);
			if (!ret && !host_allowed(policy, &scratch.rules[0])) {
				fw_set_err(err, errlen,
					   "binding \"%s\": host \"%s\" is outside the subject's "
					   "policy",
					   echo(v->bindings[b].name, e1), echo(h, e2));
				ret = -EINVAL;
			}
			fw_policy_free(&scratch);
			if (ret)
				break;
		}
	}
	return ret;
}

/* --- output --------------------------------------------------------- */

static json_t *vault_json(const struct fw_vault *v, bool redact)
{
	json_t *root, *creds, *bindings;

	root = json_object();
	creds = json_array();
	bindings = json_array();
	if (!root || json_object_set_new(root, "credentials", creds) ||
	    json_object_set_new(root, "bindings", bindings))
		goto fail;
	for (size_t i = 0; i < v->ncreds; i++) {
		const struct vault_cred *c = &v->creds[i];
		json_t *value = redact ? json_string("***") : json_stringn(c->value, c->vlen);

		if (json_array_append_new(creds,
					  json_pack("{s:s, s:{s:s, s:o}}", "name", c->name,
						    "source", "type", "inline", "value", value)))
			goto fail;
	}
	for (size_t i = 0; i < v->nbindings; i++)
		if (json_array_append(bindings, v->bindings[i].json))
			goto fail;
	return root;
fail:
	json_decref(root);
	return NULL;
}

char *fw_vault_redacted_json(const struct fw_vault *v)
{
	json_t *root;
	char *s;

	pthread_once(&json_alloc_once, json_alloc_init);
	root = vault_json(v, true);
	if (!root)
		return NULL;
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}

/* The ETag is a keyed hash (HMAC-SHA256 from OpenSSL's libcrypto, cut to
 * 64 bits) of the vault's text, so it says nothing about the values to
 * anyone without the per-process key. */
static unsigned char etag_key[32];
static pthread_once_t etag_once = PTHREAD_ONCE_INIT;

static void etag_key_init(void)
{
	size_t got = 0;

	while (got < sizeof(etag_key)) {
		ssize_t n = getrandom((char *)etag_key + got, sizeof(etag_key) - got, 0);

		if (n < 0 && errno != EINTR)
			abort(); /* no entropy source at all: nothing sane to do */
		if (n > 0)
			got += (size_t)n;
	}
}

char *fw_vault_active_json(const struct fw_vault *v, char etag[FW_VAULT_ETAG_LEN])
{
	json_t *root;
	size_t len;
	char *s;

	pthread_once(&json_alloc_once, json_alloc_init);
	pthread_once(&etag_once, etag_key_init);
	root = vault_json(v, false);
	if (!root)
		return NULL;
	/* sized first, so the text is only ever written into secmem */
	len = json_dumpb(root, NULL, 0, JSON_COMPACT);
	s = len ? fw_secmem_alloc(len + 1) : NULL;
	if (s && json_dumpb(root, s, len, JSON_COMPACT) != len) {
		fw_secmem_free(s);
		s = NULL;
	}
	json_decref(root);
	if (s && etag) {
		unsigned char mac[32];
		unsigned int n = 0;
		__u64 h = 0;

		if (!HMAC(EVP_sha256(), etag_key, sizeof(etag_key), (unsigned char *)s, len, mac,
			  &n) ||
		    n != sizeof(mac)) {
			/* no ETag is no answer: never one that says nothing */
			fw_secmem_free(s);
			return NULL;
		}
		for (int i = 0; i < 8; i++)
			h = h << 8 | mac[i];
		OPENSSL_cleanse(mac, sizeof(mac));
		snprintf(etag, FW_VAULT_ETAG_LEN, "\"%016llx\"", (unsigned long long)h);
	}
	return s;
}

/* --- the layer-7 proxy's encoding (fastwall/l7vault.h) -------------- */

/* Output that only counts when p is NULL or the next bytes do not fit. */
struct enc {
	unsigned char *p;
	size_t len, cap;
};

static bool enc_room(const struct enc *e, size_t n)
{
	return e->p && e->len + n <= e->cap;
}

static void enc_put(struct enc *e, const void *src, size_t n)
{
	if (enc_room(e, n))
		memcpy(e->p + e->len, src, n);
	e->len += n;
}

static void enc_u16(struct enc *e, __u16 v)
{
	enc_put(e, &v, sizeof(v));
}

static void enc_strings(struct enc *e, const json_t *list)
{
	size_t i;
	const json_t *it;

	json_array_foreach(list, i, it)
	{
		enc_u16(e, (__u16)json_string_length(it));
		enc_put(e, json_string_value(it), json_string_length(it));
	}
}

static __u8 enc_schemes(const json_t *list)
{
	__u8 m = 0;
	size_t i;
	const json_t *it;

	if (!list)
		return FW_L7_SCHEME_HTTPS; /* absent: https only */
	json_array_foreach(list, i, it) m |=
		strcmp(json_string_value(it), "http") ? FW_L7_SCHEME_HTTPS : FW_L7_SCHEME_HTTP;
	return m;
}

/* The header's whole value: the key, "Bearer key" or "Basic base64(key)",
 * written straight into the output (no other copy of the secret). */
static void enc_value(struct enc *e, __u8 auth, const struct vault_cred *c)
{
	size_t b64 = 4 * ((c->vlen + 2) / 3);

	switch (auth) {
	case FW_L7_AUTH_BEARER:
		enc_put(e, "Bearer ", 7);
		enc_put(e, c->value, c->vlen);
		break;
	case FW_L7_AUTH_BASIC:
		enc_put(e, "Basic ", 6);
		/* EVP_EncodeBlock ends with a NUL: one byte more of room */
		if (enc_room(e, b64 + 1))
			EVP_EncodeBlock(e->p + e->len, (const unsigned char *)c->value,
					(int)c->vlen);
		e->len += b64;
		break;
	default:
		enc_put(e, c->value, c->vlen);
	}
}

static size_t value_len(__u8 auth, const struct vault_cred *c)
{
	switch (auth) {
	case FW_L7_AUTH_BEARER:
		return 7 + c->vlen;
	case FW_L7_AUTH_BASIC:
		return 6 + 4 * ((c->vlen + 2) / 3);
	default:
		return c->vlen;
	}
}

int fw_vault_l7_encode(const struct fw_vault *v, void *buf, size_t cap, size_t *len)
{
	struct enc e = {.p = buf, .cap = cap};
	struct fw_l7_vault_head head = {
		.magic = FW_L7_VAULT_MAGIC,
		.version = FW_L7_VAULT_VERSION,
		.nbindings = (__u16)v->nbindings,
	};

	enc_put(&e, &head, sizeof(head));
	for (size_t i = 0; i < v->nbindings; i++) {
		const struct vault_binding *b = &v->bindings[i];
		const struct vault_cred *c = cred_find(v->creds, v->ncreds, b->credential);
		const json_t *match = json_object_get(b->json, "match");
		const json_t *ports = json_object_get(match, "ports");
		const json_t *hosts = json_object_get(match, "hosts");
		const json_t *methods = json_object_get(match, "methods");
		const json_t *paths = json_object_get(match, "paths");
		const char *header = b->auth == FW_L7_AUTH_API_KEY
					     ? json_string_value(json_object_get(
						       json_object_get(b->json, "auth"), "name"))
					     : "Authorization";
		struct fw_l7_vault_rec rec = {
			.auth = b->auth,
			.schemes = enc_schemes(json_object_get(match, "schemes")),
			.nports = (__u8)json_array_size(ports),
			.nhosts = (__u8)json_array_size(hosts),
			.nmethods = (__u8)json_array_size(methods),
			.npaths = (__u8)json_array_size(paths),
			.name_len = (__u16)strlen(b->name),
			.header_len = (__u16)strlen(header),
		};
		size_t start = e.len, k;
		const json_t *it;

		if (!c) /* a merge checks references: never */
			return -EINVAL;
		rec.value_len = (__u32)value_len(b->auth, c);
		enc_put(&e, &rec, sizeof(rec));
		json_array_foreach(ports, k, it) enc_u16(&e, (__u16)json_integer_value(it));
		enc_put(&e, b->name, rec.name_len);
		enc_put(&e, header, rec.header_len);
		enc_value(&e, b->auth, c);
		enc_strings(&e, hosts);
		enc_strings(&e, methods);
		enc_strings(&e, paths);
		rec.size = (__u32)(e.len - start);
		if (e.p && e.len <= e.cap)
			memcpy(e.p + start, &rec.size, sizeof(rec.size));
	}
	*len = e.len;
	return buf && e.len > cap ? -E2BIG : 0;
}

/* --- merge ---------------------------------------------------------- */

/* With the layer-7 proxy injecting, a vault must fit its map's value. */
static int l7_fits(const struct fw_vault *v, size_t l7_max, char *err, size_t errlen)
{
	size_t len;

	if (!l7_max)
		return 0;
	fw_vault_l7_encode(v, NULL, 0, &len);
	if (len <= l7_max)
		return 0;
	fw_set_err(err, errlen,
		   "the vault takes %zu bytes in the layer-7 proxy's encoding, more than its %zu",
		   len, l7_max);
	return -EINVAL;
}

/* Builds the merged vault from shallow copies, so nothing is allocated in
 * secmem and a failed merge leaves old untouched. On success old and
 * patch are consumed. */
static int vault_merge(struct fw_vault *old, struct fw_vault *patch, size_t l7_max,
		       struct fw_vault **out, char *err, size_t errlen)
{
	struct fw_vault *m;
	bool *cred_gone = NULL, *bind_gone = NULL;
	int ret = -ENOMEM;

	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	m->creds = calloc(old->ncreds + patch->ncreds + 1, sizeof(*m->creds));
	m->bindings = calloc(old->nbindings + patch->nbindings + 1, sizeof(*m->bindings));
	cred_gone = calloc(old->ncreds + 1, sizeof(bool));
	bind_gone = calloc(old->nbindings + 1, sizeof(bool));
	if (!m->creds || !m->bindings || !cred_gone || !bind_gone)
		goto nomem;
	if (old->ncreds)
		memcpy(m->creds, old->creds, old->ncreds * sizeof(*m->creds));
	m->ncreds = old->ncreds;
	for (size_t i = 0; i < patch->ncreds; i++) {
		const struct vault_cred *c = cred_find(m->creds, old->ncreds, patch->creds[i].name);

		if (c) {
			cred_gone[c - m->creds] = true;
			m->creds[c - m->creds] = patch->creds[i];
		} else {
			m->creds[m->ncreds++] = patch->creds[i];
		}
	}
	if (old->nbindings)
		memcpy(m->bindings, old->bindings, old->nbindings * sizeof(*m->bindings));
	m->nbindings = old->nbindings;
	for (size_t i = 0; i < patch->nbindings; i++) {
		size_t j;

		for (j = 0; j < old->nbindings; j++)
			if (strcmp(m->bindings[j].name, patch->bindings[i].name) == 0)
				break;
		if (j < old->nbindings)
			bind_gone[j] = true;
		m->bindings[j < old->nbindings ? j : m->nbindings++] = patch->bindings[i];
	}
	ret = -EINVAL;
	if (m->ncreds > FW_VAULT_MAX_CREDS) {
		fw_set_err(err, errlen, "too many credentials after merge (at most %d)",
			   FW_VAULT_MAX_CREDS);
		goto fail;
	}
	if (m->nbindings > FW_VAULT_MAX_BINDINGS) {
		fw_set_err(err, errlen, "too many bindings after merge (at most %d)",
			   FW_VAULT_MAX_BINDINGS);
		goto fail;
	}
	ret = check_refs(m, err, errlen);
	if (ret)
		goto fail;
	ret = l7_fits(m, l7_max, err, errlen);
	if (ret)
		goto fail;

	for (size_t i = 0; i < old->ncreds; i++)
		if (cred_gone[i])
			cred_free(&old->creds[i]);
	for (size_t i = 0; i < old->nbindings; i++)
		if (bind_gone[i])
			binding_free(&old->bindings[i]);
	old->ncreds = old->nbindings = patch->ncreds = patch->nbindings = 0;
	fw_vault_free(old);
	fw_vault_free(patch);
	free(cred_gone);
	free(bind_gone);
	*out = m;
	return 0;
nomem:
	fw_set_err(err, errlen, "out of memory");
fail:
	if (m) {
		free(m->creds);
		free(m->bindings);
		free(m);
	}
	free(cred_gone);
	free(bind_gone);
	return ret;
}

/* --- store ---------------------------------------------------------- */

#define UID_BUCKETS 4096
#define IP_BUCKETS  8192

struct uid_entry {
	struct uid_entry *next;
	struct fw_vault *vault;
	char uid[FW_UID_MAX + 1];
};

/* An address and the subject it belongs to, chained twice: by address
 * (the lookup of a request) and by the uid's bucket (so that removing a
 * subject finds its addresses without a scan of the store). */
struct ip_entry {
	struct ip_entry *next, *uid_next;
	struct fw_ip ip;
	char uid[FW_UID_MAX + 1];
};

struct fw_vault_store {
	pthread_mutex_t lock;
	size_t nvaults, nips;
	size_t l7_max; /* encoded bytes a vault may take; 0: no bound */
	struct uid_entry *uids[UID_BUCKETS];
	struct ip_entry *ips[IP_BUCKETS];
	struct ip_entry *ips_by_uid[UID_BUCKETS];
};

static __u32 fnv1a(const void *p, size_t len)
{
	const unsigned char *b = p;
	__u32 h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static bool uid_ok(const char *uid)
{
	size_t len = uid ? strnlen(uid, FW_UID_MAX + 1) : 0;

	return len > 0 && len <= FW_UID_MAX;
}

static struct uid_entry **uid_slot(struct fw_vault_store *s, const char *uid)
{
	struct uid_entry **pp = &s->uids[fnv1a(uid, strlen(uid)) % UID_BUCKETS];

	while (*pp && strcmp((*pp)->uid, uid) != 0)
		pp = &(*pp)->next;
	return pp;
}

static struct ip_entry **ip_slot(struct fw_vault_store *s, const struct fw_ip *ip)
{
	struct ip_entry **pp = &s->ips[fnv1a(ip, sizeof(*ip)) % IP_BUCKETS];

	while (*pp && memcmp(&(*pp)->ip, ip, sizeof(*ip)) != 0)
		pp = &(*pp)->next;
	return pp;
}

static struct ip_entry **uid_chain(struct fw_vault_store *s, const char *uid)
{
	return &s->ips_by_uid[fnv1a(uid, strlen(uid)) % UID_BUCKETS];
}

static void uid_chain_add(struct fw_vault_store *s, struct ip_entry *e)
{
	struct ip_entry **head = uid_chain(s, e->uid);

	e->uid_next = *head;
	*head = e;
}

static void uid_chain_del(struct fw_vault_store *s, struct ip_entry *e)
{
	struct ip_entry **pp = uid_chain(s, e->uid);

	while (*pp && *pp != e)
		pp = &(*pp)->uid_next;
	if (*pp)
		*pp = e->uid_next;
}

struct fw_vault_store *fw_vault_store_new(void)
{
	struct fw_vault_store *s = calloc(1, sizeof(*s));

	if (s)
		pthread_mutex_init(&s->lock, NULL);
	return s;
}

void fw_vault_store_free(struct fw_vault_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < UID_BUCKETS; i++) {
		for (struct uid_entry *e = s->uids[i], *n; e; e = n) {
			n = e->next;
			fw_vault_free(e->vault);
			free(e);
		}
	}
	for (size_t i = 0; i < IP_BUCKETS; i++) {
		for (struct ip_entry *e = s->ips[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Callers hold s->lock. Takes v; *pp is the slot uid_slot found. */
static int put_locked(struct fw_vault_store *s, struct uid_entry **pp, const char *uid,
		      struct fw_vault *v)
{
	struct uid_entry *e;

	if (*pp) {
		fw_vault_free((*pp)->vault);
		(*pp)->vault = v;
		return 0;
	}
	if (s->nvaults >= FW_VAULT_MAX_SUBJECTS) {
		fw_vault_free(v);
		return -ENOSPC;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		fw_vault_free(v);
		return -ENOMEM;
	}
	strcpy(e->uid, uid);
	e->vault = v;
	*pp = e;
	s->nvaults++;
	return 0;
}

void fw_vault_store_set_l7_max(struct fw_vault_store *s, size_t max)
{
	pthread_mutex_lock(&s->lock);
	s->l7_max = max;
	pthread_mutex_unlock(&s->lock);
}

int fw_vault_store_check_l7(struct fw_vault_store *s, const struct fw_vault *v, char *err,
			    size_t errlen)
{
	size_t max;

	pthread_mutex_lock(&s->lock);
	max = s->l7_max;
	pthread_mutex_unlock(&s->lock);
	return l7_fits(v, max, err, errlen);
}

int fw_vault_store_l7_encode(struct fw_vault_store *s, const char *uid, void *buf, size_t cap,
			     size_t *len)
{
	struct uid_entry *e;
	int ret = -ENOENT;

	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = *uid_slot(s, uid);
	if (e)
		ret = fw_vault_l7_encode(e->vault, buf, cap, len);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int fw_vault_store_put(struct fw_vault_store *s, const char *uid, struct fw_vault *v)
{
	int ret;

	if (!uid_ok(uid) || !v) {
		fw_vault_free(v);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	ret = put_locked(s, uid_slot(s, uid), uid, v);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int fw_vault_store_patch(struct fw_vault_store *s, const char *uid, struct fw_vault *patch,
			 char *err, size_t errlen)
{
	struct fw_vault *empty = NULL, *merged;
	struct uid_entry **pp;
	int ret;

	if (!uid_ok(uid) || !patch) {
		fw_vault_free(patch);
		fw_set_err(err, errlen, "invalid subject uid");
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	pp = uid_slot(s, uid);
	if (*pp) {
		ret = vault_merge((*pp)->vault, patch, s->l7_max, &merged, err, errlen);
		if (!ret)
			(*pp)->vault = merged;
	} else {
		/* no vault yet: the patch is the whole vault, if it stands
		 * alone (its bindings name only its own credentials) */
		empty = calloc(1, sizeof(*empty));
		ret = empty ? vault_merge(empty, patch, s->l7_max, &merged, err, errlen) : -ENOMEM;
		if (!ret) {
			empty = NULL; /* consumed by the merge */
			ret = put_locked(s, pp, uid, merged);
			patch = NULL;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (ret == -ENOMEM || ret == -ENOSPC)
		fw_set_err(err, errlen, "%s",
			   ret == -ENOMEM ? "out of memory" : "vault store full");
	free(empty);
	if (ret)
		fw_vault_free(patch);
	return ret;
}

int fw_vault_store_del(struct fw_vault_store *s, const char *uid)
{
	struct uid_entry **pp, *e = NULL;

	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	pp = uid_slot(s, uid);
	if (*pp) {
		e = *pp;
		*pp = e->next;
		s->nvaults--;
	}
	pthread_mutex_unlock(&s->lock);
	if (!e)
		return -ENOENT;
	fw_vault_free(e->vault);
	free(e);
	return 0;
}

int fw_vault_store_get_redacted_json(struct fw_vault_store *s, const char *uid, char **json)
{
	struct uid_entry *e;
	int ret = -ENOENT;

	*json = NULL;
	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = *uid_slot(s, uid);
	if (e) {
		*json = fw_vault_redacted_json(e->vault);
		ret = *json ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int fw_vault_store_active_by_ip(struct fw_vault_store *s, const struct fw_ip *ip, char **json,
				char etag[FW_VAULT_ETAG_LEN])
{
	return fw_vault_store_active_for(s, ip, NULL, json, etag);
}

int fw_vault_store_active_for(struct fw_vault_store *s, const struct fw_ip *ip, const char *uid,
			      char **json, char etag[FW_VAULT_ETAG_LEN])
{
	struct ip_entry *ie;
	struct uid_entry *e = NULL;
	int ret = -ENOENT;

	*json = NULL;
	pthread_mutex_lock(&s->lock);
	ie = *ip_slot(s, ip);
	if (ie && (!uid || !strcmp(ie->uid, uid)))
		e = *uid_slot(s, ie->uid);
	if (e) {
		*json = fw_vault_active_json(e->vault, etag);
		ret = *json ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int fw_vault_store_set_ip(struct fw_vault_store *s, const char *uid, const struct fw_ip *ip)
{
	struct ip_entry **pp, *e;
	int ret = 0;

	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	pp = ip_slot(s, ip);
	if (*pp) {
		uid_chain_del(s, *pp);
		strcpy((*pp)->uid, uid);
		uid_chain_add(s, *pp);
	} else if (s->nips >= 2 * FW_VAULT_MAX_SUBJECTS) {
		ret = -ENOSPC;
	} else if (!(e = calloc(1, sizeof(*e)))) {
		ret = -ENOMEM;
	} else {
		e->ip = *ip;
		strcpy(e->uid, uid);
		*pp = e;
		uid_chain_add(s, e);
		s->nips++;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int fw_vault_store_clear_ip(struct fw_vault_store *s, const struct fw_ip *ip)
{
	struct ip_entry **pp, *e = NULL;

	pthread_mutex_lock(&s->lock);
	pp = ip_slot(s, ip);
	if (*pp) {
		e = *pp;
		*pp = e->next;
		uid_chain_del(s, e);
		s->nips--;
	}
	pthread_mutex_unlock(&s->lock);
	free(e);
	return e ? 0 : -ENOENT;
}

void fw_vault_store_clear_uid(struct fw_vault_store *s, const char *uid)
{
	struct uid_entry **pp, *e = NULL;

	if (!uid_ok(uid))
		return;
	pthread_mutex_lock(&s->lock);
	pp = uid_slot(s, uid);
	if (*pp) {
		e = *pp;
		*pp = e->next;
		s->nvaults--;
	}
	/* the uid's addresses, from its bucket of the second chain */
	for (struct ip_entry **ip = uid_chain(s, uid); *ip;) {
		struct ip_entry *dead = *ip, **at;

		if (strcmp(dead->uid, uid) != 0) {
			ip = &dead->uid_next;
			continue;
		}
		*ip = dead->uid_next;
		at = ip_slot(s, &dead->ip);
		if (*at == dead)
			*at = dead->next;
		free(dead);
		s->nips--;
	}
	pthread_mutex_unlock(&s->lock);
	if (e) {
		fw_vault_free(e->vault);
		free(e);
	}
}
