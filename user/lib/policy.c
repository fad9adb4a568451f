// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Egress policy parsing, domain matching and compilation to LPM entries.
 * Input comes from operators and from sandbox controllers, so every text
 * field is bounded before it is copied and every error names the value. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "policy.h"

/* Longest text echoed back in an error, so a megabyte of junk does not
 * become a megabyte of log line. */
#define ECHO_MAX 80

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Returns the trimmed span [*start, *start + *len) of s. */
static void trim(const char *s, const char **start, size_t *len)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	*start = s;
	*len = n;
}

void fw_policy_init(struct fw_policy *p)
{
	p->default_action = FW_ACTION_DENY;
	p->rules = NULL;
	p->nrules = 0;
}

void fw_policy_rule_free(struct fw_policy_rule *r)
{
	free(r->domain);
	free(r->ports);
	free(r->target);
	r->domain = NULL;
	r->ports = NULL;
	r->target = NULL;
	r->nports = 0;
}

int fw_policy_rule_copy(struct fw_policy_rule *dst, const struct fw_policy_rule *src)
{
	struct fw_policy_rule r = *src;

	r.domain = NULL;
	r.ports = NULL;
	r.target = NULL;
	if (src->domain) {
		r.domain = strdup(src->domain);
		if (!r.domain)
			goto nomem;
	}
	if (src->target) {
		r.target = strdup(src->target);
		if (!r.target)
			goto nomem;
	}
	if (src->nports) {
		r.ports = malloc(src->nports * sizeof(*r.ports));
		if (!r.ports)
			goto nomem;
		memcpy(r.ports, src->ports, src->nports * sizeof(*r.ports));
	}
	*dst = r;
	return 0;
nomem:
	fw_policy_rule_free(&r);
	return -ENOMEM;
}

void fw_policy_free(struct fw_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		fw_policy_rule_free(&p->rules[i]);
	free(p->rules);
	fw_policy_init(p);
}

int fw_policy_copy(struct fw_policy *dst, const struct fw_policy *src)
{
	struct fw_policy tmp;

	fw_policy_init(&tmp);
	tmp.default_action = src->default_action;
	if (src->nrules) {
		tmp.rules = calloc(src->nrules, sizeof(*tmp.rules));
		if (!tmp.rules)
			return -ENOMEM;
	}
	for (size_t i = 0; i < src->nrules; i++) {
		if (fw_policy_rule_copy(&tmp.rules[i], &src->rules[i])) {
			fw_policy_free(&tmp);
			return -ENOMEM;
		}
		/* counted once copied so fw_policy_free releases only that */
		tmp.nrules = i + 1;
	}
	*dst = tmp;
	return 0;
}

int fw_action_parse(const char *s, __u8 *action, char *err, size_t errlen)
{
	char word[8];
	const char *t;
	size_t len;

	if (!s)
		s = "";
	trim(s, &t, &len);
	if (len == 0) {
		*action = FW_ACTION_DENY;
		return 0;
	}
	if (len < sizeof(word)) {
		for (size_t i = 0; i < len; i++)
			word[i] = (char)tolower((unsigned char)t[i]);
		word[len] = '\0';
		if (strcmp(word, "allow") == 0) {
			*action = FW_ACTION_ALLOW;
			return 0;
		}
		if (strcmp(word, "deny") == 0) {
			*action = FW_ACTION_DENY;
			return 0;
		}
	}
	set_err(err, errlen, "invalid action \"%.*s\", expected allow or deny",
		(int)(len < ECHO_MAX ? len : ECHO_MAX), t);
	return -EINVAL;
}

int fw_policy_set_default(struct fw_policy *p, const char *action, char *err, size_t errlen)
{
	__u8 a;
	int ret;

	ret = fw_action_parse(action, &a, err, errlen);
	if (ret)
		return ret;
	p->default_action = a;
	return 0;
}

static bool domain_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Lowercases t[0..len) into out (FW_DOMAIN_MAX + 1 bytes), drops one
 * trailing dot, splits off "*." and validates the labels. */
static int domain_parse(const char *t, size_t len, char *out, bool *wildcard, char *err,
			size_t errlen)
{
	const char *shown = t;
	size_t shown_len = len < ECHO_MAX ? len : ECHO_MAX;
	size_t label = 0;

	if (len && t[len - 1] == '.')
		len--;
	*wildcard = false;
	if (len == 1 && t[0] == '*') {
		set_err(err, errlen,
			"invalid target \"*\": a bare wildcard is not allowed, use a "
			"default action of allow instead");
		return -EINVAL;
	}
	if (len >= 2 && t[0] == '*' && t[1] == '.') {
		*wildcard = true;
		t += 2;
		len -= 2;
	}
	if (len == 0) {
		set_err(err, errlen, "invalid target \"%.*s\": empty domain name", (int)shown_len,
			shown);
		return -EINVAL;
	}
	if (len > FW_DOMAIN_MAX) {
		set_err(err, errlen, "invalid target \"%.*s...\": domain name longer than %d",
			(int)shown_len, shown, FW_DOMAIN_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		char c = (char)tolower((unsigned char)t[i]);

		if (c == '.') {
			if (label == 0)
				goto bad_label;
			label = 0;
		} else if (domain_char_ok(c)) {
			if (++label > 63)
				goto bad_label;
		} else if (c == '*') {
			set_err(err, errlen,
				"invalid target \"%.*s\": '*' is only allowed as a leading \"*.\"",
				(int)shown_len, shown);
			return -EINVAL;
		} else {
			set_err(err, errlen,
				"invalid target \"%.*s\": not an address, CIDR or domain",
				(int)shown_len, shown);
			return -EINVAL;
		}
		out[i] = c;
	}
	if (label == 0)
		goto bad_label;
	out[len] = '\0';
	return 0;
bad_label:
	set_err(err, errlen, "invalid target \"%.*s\": labels must be 1 to 63 characters",
		(int)shown_len, shown);
	return -EINVAL;
}

static int ports_parse(const long *ports, size_t nports, __u16 **out, char *err, size_t errlen)
{
	__u16 *p;

	*out = NULL;
	if (!ports || !nports)
		return 0;
	if (nports > FW_POLICY_MAX_PORTS) {
		set_err(err, errlen, "too many ports (%zu, at most %d)", nports,
			FW_POLICY_MAX_PORTS);
		return -EINVAL;
	}
	for (size_t i = 0; i < nports; i++) {
		if (ports[i] < 1 || ports[i] > 65535) {
			set_err(err, errlen, "invalid port %ld, expected 1-65535", ports[i]);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (ports[j] == ports[i]) {
				set_err(err, errlen, "duplicate port %ld", ports[i]);
				return -EINVAL;
			}
		}
	}
	p = malloc(nports * sizeof(*p));
	if (!p) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < nports; i++)
		p[i] = (__u16)ports[i];
	*out = p;
	return 0;
}

int fw_policy_add_rule(struct fw_policy *p, const char *action, const char *target,
		       const long *ports, size_t nports, char *err, size_t errlen)
{
	struct fw_policy_rule r = {0};
	char domain[FW_DOMAIN_MAX + 1];
	char addr[FW_ADDR_STRLEN];
	struct fw_policy_rule *rules;
	bool wildcard;
	const char *t;
	size_t len;
	int ret;

	if (p->nrules >= FW_POLICY_MAX_RULES) {
		set_err(err, errlen, "too many rules (at most %d)", FW_POLICY_MAX_RULES);
		return -EINVAL;
	}
	ret = fw_action_parse(action, &r.action, err, errlen);
	if (ret)
		return ret;

	trim(target ? target : "", &t, &len);
	if (len == 0) {
		set_err(err, errlen, "empty target");
		return -EINVAL;
	}
	/* the address parsers want a NUL-terminated string without the
	 * surrounding spaces; anything longer than addr cannot be one */
	if (len < sizeof(addr)) {
		memcpy(addr, t, len);
		addr[len] = '\0';
		if (fw_addr_parse(addr, &r.addr, NULL) == 0) {
			r.kind = FW_TARGET_IP;
			r.plen = 128;
		} else if (fw_prefix_parse(addr, &r.addr, &r.plen, NULL) == 0) {
			r.kind = FW_TARGET_CIDR;
		}
	}
	if (!r.kind) {
		ret = domain_parse(t, len, domain, &wildcard, err, errlen);
		if (ret)
			return ret;
		r.kind = wildcard ? FW_TARGET_WILDCARD : FW_TARGET_DOMAIN;
	}

	ret = ports_parse(ports, nports, &r.ports, err, errlen);
	if (ret)
		return ret;
	r.nports = r.ports ? nports : 0;

	if (r.kind == FW_TARGET_DOMAIN || r.kind == FW_TARGET_WILDCARD) {
		r.domain = strdup(domain);
		if (!r.domain)
			goto nomem;
	}
	r.target = strndup(t, len);
	if (!r.target)
		goto nomem;
	rules = realloc(p->rules, (p->nrules + 1) * sizeof(*rules));
	if (!rules)
		goto nomem;
	p->rules = rules;
	p->rules[p->nrules++] = r;
	return 0;
nomem:
	fw_policy_rule_free(&r);
	set_err(err, errlen, "out of memory");
	return -ENOMEM;
}

int fw_policy_match_domain(const struct fw_policy *p, const char *name, __u8 *action)
{
	char q[FW_DOMAIN_MAX + 2];
	size_t len;

	*action = p->default_action;
	if (!name)
		return -1;
	/* one byte over the limit is the trailing dot; anything longer
	 * cannot equal a rule, which is at most FW_DOMAIN_MAX */
	len = strnlen(name, sizeof(q));
	if (len >= sizeof(q))
		return -1;
	for (size_t i = 0; i < len; i++)
		q[i] = (char)tolower((unsigned char)name[i]);
	if (len && q[len - 1] == '.')
		len--;
	q[len] = '\0';
	if (len == 0)
		return -1;

	for (size_t i = 0; i < p->nrules; i++) {
		const struct fw_policy_rule *r = &p->rules[i];
		size_t dlen;

		if (r->kind == FW_TARGET_DOMAIN) {
			if (strcmp(q, r->domain) == 0)
				goto match;
		} else if (r->kind == FW_TARGET_WILDCARD) {
			/* at least one label before the suffix: "*.x" never
			 * matches "x" itself */
			dlen = strlen(r->domain);
			if (len > dlen + 1 && q[len - dlen - 1] == '.' &&
			    memcmp(q + len - dlen, r->domain, dlen) == 0)
				goto match;
		}
		continue;
	match:
		*action = r->action;
		return (int)i;
	}
	return -1;
}

static bool prefix_equal(const struct fw_policy_rule *a, const struct fw_policy_rule *b)
{
	return a->plen == b->plen && memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0;
}

static bool rule_is_v4(const struct fw_policy_rule *r)
{
	return r->plen >= FW_V4_PREFIX_BASE && fw_addr_family(&r->addr) == FW_FAM_V4;
}

/* inner lies inside (or is) outer, within one family: in the 128-bit
 * space a short IPv6 prefix such as ::/0 also contains the v4-mapped
 * block, but an IPv6 rule says nothing about IPv4 */
static bool prefix_covers(const struct fw_policy_rule *outer, const struct fw_policy_rule *inner)
{
	return rule_is_v4(outer) == rule_is_v4(inner) && outer->plen <= inner->plen &&
	       fw_prefix_contains(&outer->addr, outer->plen, &inner->addr);
}

/* ::ffff:0:0/96, the whole IPv4 space */
static const struct fw_ip v4_block = {.b = {[10] = 0xff, [11] = 0xff}};

static bool needs_v4_barrier(const struct fw_compiled *c, size_t nc)
{
	bool covered = false;

	for (size_t i = 0; i < nc; i++) {
		if (c[i].key.prefixlen == FW_V4_PREFIX_BASE &&
		    memcmp(&c[i].key.addr, &v4_block, sizeof(v4_block)) == 0)
			return false;
		if (c[i].key.prefixlen < FW_V4_PREFIX_BASE &&
		    fw_prefix_contains(&c[i].key.addr, c[i].key.prefixlen, &v4_block))
			covered = true;
	}
	return covered;
}

struct indexed_rule {
	const struct fw_policy_rule *r;
	__u32 index;
};

int fw_policy_compile(const struct fw_policy *overlay, const struct fw_policy *p,
		      struct fw_compiled **out, size_t *n)
{
	size_t nover = overlay ? overlay->nrules : 0;
	size_t total = nover + p->nrules;
	struct indexed_rule *ir = NULL;
	struct fw_compiled *c = NULL;
	size_t nir = 0, nc = 0;
	bool has_root = false;
	int err = 0;

	*out = NULL;
	*n = 0;
	ir = calloc(total ? total : 1, sizeof(*ir));
	c = calloc(total + 2, sizeof(*c));
	if (!ir || !c) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < total; i++) {
		const struct fw_policy_rule *r =
			i < nover ? &overlay->rules[i] : &p->rules[i - nover];

		if (r->kind == FW_TARGET_IP || r->kind == FW_TARGET_CIDR) {
			ir[nir].r = r;
			ir[nir].index = (__u32)i;
			nir++;
		}
	}

	for (size_t i = 0; i < nir; i++) {
		const struct fw_policy_rule *r = ir[i].r;
		bool drop = false;

		for (size_t j = 0; j < nir && !drop; j++) {
			const struct fw_policy_rule *o = ir[j].r;

			if (r->action == FW_ACTION_DENY) {
				/* the first of identical denies stands for all */
				drop = j < i && o->action == FW_ACTION_DENY && prefix_equal(o, r);
			} else if (o->action == FW_ACTION_DENY) {
				/* deny beats allow whatever the order: an allow
				 * inside a deny would win the LPM lookup */
				drop = prefix_covers(o, r);
			} else {
				drop = j < i && prefix_equal(o, r);
			}
		}
		if (drop)
			continue;
		c[nc].key.prefixlen = r->plen;
		c[nc].key.addr = r->addr;
		fw_prefix_mask(&c[nc].key.addr, r->plen);
		c[nc].rule.action = r->action;
		c[nc].rule.rule = ir[i].index;
		if (r->plen == 0)
			has_root = true;
		nc++;
	}
	/* An IPv6 prefix shorter than /96 that contains the v4-mapped block
	 * would decide IPv4 traffic in the LPM lookup. Unless an IPv4 0.0.0.0/0
	 * entry already sits at the block, put a default entry there so IPv4
	 * sees only IPv4 rules. */
	if (needs_v4_barrier(c, nc)) {
		c[nc].key.prefixlen = FW_V4_PREFIX_BASE;
		c[nc].key.addr = v4_block;
		c[nc].rule.action = p->default_action;
		c[nc].rule.is_default = 1;
		c[nc].rule.rule = FW_RULE_DEFAULT;
		nc++;
	}
	/* an IPv6 ::/0 rule decides every IPv6 address and would collide with
	 * the default entry's key, so it takes the default's place */
	if (!has_root) {
		c[nc].rule.action = p->default_action;
		c[nc].rule.is_default = 1;
		c[nc].rule.rule = FW_RULE_DEFAULT;
		nc++;
	}
	if (nc > FW_MAX_RULES) {
		err = -E2BIG;
		goto cleanup;
	}
	*out = c;
	*n = nc;
	c = NULL;
cleanup:
	free(ir);
	free(c);
	return err;
}

/* splitmix64's finaliser: every input bit flips about half the output
 * bits, so summing per-entry hashes does not let entries cancel out */
static __u64 mix64(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

__u64 fw_compiled_hash(const struct fw_compiled *c, size_t n)
{
	__u64 sum = mix64(n + 0x9e3779b97f4a7c15ULL);

	for (size_t i = 0; i < n; i++) {
		const struct fw_compiled *e = &c[i];
		__u64 h = mix64(e->key.prefixlen);

		/* fields one by one so padding never reaches the hash */
		for (int w = 0; w < 4; w++)
			h = mix64(h ^ e->key.addr.w[w]);
		h = mix64(h ^ ((__u64)e->rule.action << 8 | e->rule.is_default));
		h = mix64(h ^ e->rule.rule);
		sum += h;
	}
	return sum;
}
