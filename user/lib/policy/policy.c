// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Egress policy parsing, domain matching and compilation to LPM entries.
 * Input comes from operators and from sandbox controllers, so every text
 * field is bounded before it is copied and every error names the value. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/addr.h"
#include "common/log.h"
#include "fastwall/bandwidth.h"
#include "policy/policy.h"

/* Longest text echoed back in an error, so a megabyte of junk does not
 * become a megabyte of log line. */
#define ECHO_MAX 80

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
	p->l7 = FW_POLICY_L7_DEFAULT;
	p->bw = FW_POLICY_BW_DEFAULT;
	p->bw_rate = p->bw_burst = 0;
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
	tmp.l7 = src->l7;
	tmp.bw = src->bw;
	tmp.bw_rate = src->bw_rate;
	tmp.bw_burst = src->bw_burst;
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
	fw_set_err(err, errlen, "invalid action \"%.*s\", expected allow or deny",
		   (int)(len < ECHO_MAX ? len : ECHO_MAX), t);
	return -EINVAL;
}

int fw_policy_l7_parse(const char *s, __u8 *l7, char *err, size_t errlen)
{
	const char *t;
	size_t len;

	trim(s ? s : "", &t, &len);
	/* true and false: what a YAML 1.1 reader makes of on and off */
	if ((len == 2 && !strncasecmp(t, "on", 2)) || (len == 4 && !strncasecmp(t, "true", 4))) {
		*l7 = FW_POLICY_L7_ON;
		return 0;
	}
	if ((len == 3 && !strncasecmp(t, "off", 3)) || (len == 5 && !strncasecmp(t, "false", 5))) {
		*l7 = FW_POLICY_L7_OFF;
		return 0;
	}
	fw_set_err(err, errlen, "invalid l7 \"%.*s\", expected on or off",
		   (int)(len < ECHO_MAX ? len : ECHO_MAX), t);
	return -EINVAL;
}

const char *fw_policy_l7_name(__u8 l7)
{
	return l7 == FW_POLICY_L7_ON ? "on" : l7 == FW_POLICY_L7_OFF ? "off" : "default";
}

int fw_policy_bw_set(struct fw_policy *p, long long rate, bool has_burst, long long burst,
		     char *err, size_t errlen)
{
	if (rate < (long long)FW_BW_RATE_MIN || (unsigned long long)rate > FW_BW_RATE_MAX) {
		fw_set_err(err, errlen, "rate %lld out of range: %llu to %llu bytes per second",
			   rate, FW_BW_RATE_MIN, FW_BW_RATE_MAX);
		return -EINVAL;
	}
	if (has_burst &&
	    (burst < (long long)FW_BW_BURST_MIN || (unsigned long long)burst > FW_BW_BURST_MAX)) {
		fw_set_err(err, errlen, "burst %lld out of range: %llu to %llu bytes", burst,
			   FW_BW_BURST_MIN, FW_BW_BURST_MAX);
		return -EINVAL;
	}
	p->bw = FW_POLICY_BW_ON;
	p->bw_rate = (__u64)rate;
	p->bw_burst = has_burst ? (__u64)burst : FW_BW_BURST_DEFAULT((__u64)rate);
	return 0;
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
		fw_set_err(err, errlen,
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
		fw_set_err(err, errlen, "invalid target \"%.*s\": empty domain name",
			   (int)shown_len, shown);
		return -EINVAL;
	}
	if (len > FW_DOMAIN_MAX) {
		fw_set_err(err, errlen, "invalid target \"%.*s...\": domain name longer than %d",
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
			fw_set_err(
				err, errlen,
				"invalid target \"%.*s\": '*' is only allowed as a leading \"*.\"",
				(int)shown_len, shown);
			return -EINVAL;
		} else {
			fw_set_err(err, errlen,
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
	fw_set_err(err, errlen, "invalid target \"%.*s\": labels must be 1 to 63 characters",
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
		fw_set_err(err, errlen, "too many ports (%zu, at most %d)", nports,
			   FW_POLICY_MAX_PORTS);
		return -EINVAL;
	}
	for (size_t i = 0; i < nports; i++) {
		if (ports[i] < 1 || ports[i] > 65535) {
			fw_set_err(err, errlen, "invalid port %ld, expected 1-65535", ports[i]);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (ports[j] == ports[i]) {
				fw_set_err(err, errlen, "duplicate port %ld", ports[i]);
				return -EINVAL;
			}
		}
	}
	p = malloc(nports * sizeof(*p));
	if (!p) {
		fw_set_err(err, errlen, "out of memory");
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
		fw_set_err(err, errlen, "too many rules (at most %d)", FW_POLICY_MAX_RULES);
		return -EINVAL;
	}
	ret = fw_action_parse(action, &r.action, err, errlen);
	if (ret)
		return ret;

	trim(target ? target : "", &t, &len);
	if (len == 0) {
		fw_set_err(err, errlen, "empty target");
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
	fw_set_err(err, errlen, "out of memory");
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

static int port_cmp(const void *a, const void *b);

int fw_policy_domain_ports(const struct fw_policy *p, const char *const *names, size_t n,
			   __u16 *out, bool *all)
{
	bool any = false;
	size_t k = 0, m = 0;

	*all = false;
	for (size_t i = 0; i < n; i++) {
		const struct fw_policy_rule *r;
		__u8 action;
		int idx = fw_policy_match_domain(p, names[i], &action);

		if (action != FW_ACTION_ALLOW)
			continue;
		any = true;
		r = idx >= 0 ? &p->rules[idx] : NULL;
		if (!r || !r->nports) {
			*all = true;
			return 0;
		}
		for (size_t j = 0; j < r->nports && j < FW_POLICY_MAX_PORTS; j++)
			out[k++] = r->ports[j];
	}
	if (!any)
		return -EACCES;
	qsort(out, k, sizeof(*out), port_cmp);
	for (size_t i = 0; i < k; i++)
		if (!m || out[m - 1] != out[i])
			out[m++] = out[i];
	return (int)m;
}

static bool rule_is_v4(const struct fw_policy_rule *r)
{
	return r->plen >= FW_V4_PREFIX_BASE && fw_addr_family(&r->addr) == FW_FAM_V4;
}

/* One address rule as the compiler reads it: the fields build_entry()
 * needs, copied out of the rule into one small array, and the prefix's
 * mask made once rather than on every containment test. */
struct indexed_rule {
	struct fw_ip net;  /* masked */
	struct fw_ip mask; /* plen leading one bits */
	const __u16 *ports;
	size_t nports;
	size_t cand; /* the candidate of its prefix */
	__u32 index;
	__u32 plen;
	__u8 action;
	bool v4;
};

#define NO_INDEX SIZE_MAX /* no such candidate */

/* A candidate LPM entry: a rule prefix, the IPv4 block, or ::/0. */
struct candidate {
	struct fw_ip net;  /* masked */
	struct fw_ip mask; /* plen leading one bits */
	__u32 plen;
	bool v4;
	bool drop;	      /* by prune_redundant(): decides as its parent */
	size_t parent;	      /* its longest strict cover, or NO_INDEX */
	size_t first, nrules; /* its rules: by_cand[first .. first + nrules) */
};

/* fw_prefix_contains() with the mask already made: whether addr agrees
 * with net on every bit of mask. All four words at once, no branches. */
static inline bool masked_contains(const struct fw_ip *net, const struct fw_ip *mask,
				   const struct fw_ip *addr)
{
	const fw_ip_word *n = FW_IP_W(net), *m = FW_IP_W(mask), *a = FW_IP_W(addr);

	return !(((n[0] ^ a[0]) & m[0]) | ((n[1] ^ a[1]) & m[1]) | ((n[2] ^ a[2]) & m[2]) |
		 ((n[3] ^ a[3]) & m[3]));
}

/* Whether rule r decides for candidate c: same family, and r's prefix
 * holds c's (plen past 128 holds nothing, as in fw_prefix_contains()).
 * build_entry() only asks it of rules whose prefix holds c, but the whole
 * test keeps it true to its name. & rather than &&: one branch, the
 * tests are cheap. */
static bool covers(const struct indexed_rule *r, const struct candidate *c)
{
	return (r->v4 == c->v4) & (r->plen <= c->plen) & (r->plen <= 128) &
	       masked_contains(&r->net, &r->mask, &c->net);
}

/* Port bitmaps of one candidate: which ports some covering deny / allow
 * rule lists, and the list of ports touched so clearing is cheap. The
 * list has room for cap ports: no more than the policy lists in all, and
 * never more than PORTS_TOUCHED_MAX (past that, overflow). */
#define PORTS_TOUCHED_MAX (2 * FW_POLICY_MAX_RULES)
struct port_acc {
	unsigned char deny[65536 / 8], allow[65536 / 8];
	size_t ntouched, cap;
	bool overflow;
	__u16 touched[];
};

static bool bit(const unsigned char *m, __u16 p)
{
	return m[p / 8] & (1u << (p % 8));
}

static void set_bit(struct port_acc *pa, unsigned char *m, __u16 p)
{
	if (!bit(pa->deny, p) && !bit(pa->allow, p)) {
		if (pa->ntouched < pa->cap)
			pa->touched[pa->ntouched++] = p;
		else
			pa->overflow = true;
	}
	m[p / 8] |= (unsigned char)(1u << (p % 8));
}

static int port_cmp(const void *a, const void *b)
{
	return (int)*(const __u16 *)a - (int)*(const __u16 *)b;
}

struct set_builder {
	struct fw_port_rule *ports;
	size_t nports, cap;
	__u32 nsets;
};

/* Finds or appends the exception set exc[0..n) and returns its id; sets
 * that many entries share (a rule with ports over a CIDR with holes) are
 * stored once. */
static int portset_id(struct set_builder *sb, const struct fw_port_rule *exc, size_t n, __u32 *id)
{
	size_t i = 0;

	while (i < sb->nports) {
		__u32 sid = sb->ports[i].portset;
		size_t j = i, k = 0;

		while (j < sb->nports && sb->ports[j].portset == sid)
			j++;
		if (j - i == n) {
			for (k = 0; k < n; k++)
				if (sb->ports[i + k].port != exc[k].port ||
				    sb->ports[i + k].action != exc[k].action)
					break;
		}
		if (j - i == n && k == n) {
			*id = sid;
			return 0;
		}
		i = j;
	}
	if (sb->nports + n > FW_MAX_PORT_RULES)
		return -E2BIG;
	if (sb->nports + n > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 256;
		struct fw_port_rule *grown;

		while (cap < sb->nports + n)
			cap *= 2;
		grown = realloc(sb->ports, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		sb->ports = grown;
		sb->cap = cap;
	}
	*id = ++sb->nsets;
	for (size_t k = 0; k < n; k++) {
		sb->ports[sb->nports + k] = exc[k];
		sb->ports[sb->nports + k].portset = *id;
	}
	sb->nports += n;
	return 0;
}

/* What compile_set() works from: the address rules, the distinct
 * prefixes among them (the candidate entries) and which rules each has. */
struct compile_input {
	struct indexed_rule *ir;
	size_t nir;
	size_t *by_cand;	/* ir indexes by candidate, ascending within one */
	struct candidate *cand; /* room for the rules and 2 more */
	size_t ncand;
	size_t *order;	  /* room for the candidates: len_groups_build()'s */
	size_t *slot;	  /* the rules' candidates by prefix: index + 1, 0 empty */
	size_t slot_mask; /* slots - 1, a power of two past twice the rules */
	size_t nports;	  /* ports listed by all address rules together */
};

/* What the rules covering one candidate decide together. */
struct verdict_acc {
	bool deny_all, allow_all, any;
	__u32 best_plen, best;
};

/* Adds rule r, which covers the candidate, to v (and its ports to pa). */
static void take_rule(struct verdict_acc *v, struct port_acc *pa, const struct indexed_rule *r)
{
	if (!v->any || r->plen > v->best_plen) {
		v->best_plen = r->plen;
		v->best = r->index;
	}
	v->any = true;
	if (!r->nports) {
		if (r->action == FW_ACTION_DENY)
			v->deny_all = true;
		else
			v->allow_all = true;
		return;
	}
	for (size_t k = 0; k < r->nports; k++)
		set_bit(pa, r->action == FW_ACTION_DENY ? pa->deny : pa->allow, r->ports[k]);
}

/* Builds the entry of candidate ci from every rule that covers it. Those
 * are rules of ci or of the candidates on its chain of parents: the
 * prefixes holding one address nest, and candidates are distinct, so
 * every candidate holding ci is on that chain. The chain runs longest
 * first, and the rules of a candidate in index order: the first rule
 * that covers is the best one (longest, first in the policy), as it was
 * when every rule was tried in order. */
static int build_entry(const struct compile_input *in, size_t ci, __u8 dflt, struct port_acc *pa,
		       struct set_builder *sb, struct fw_port_rule *exc, struct fw_compiled *out)
{
	const struct candidate *c = &in->cand[ci];
	struct verdict_acc v = {.best = FW_RULE_DEFAULT};
	size_t nexc = 0;
	int err = 0;

	if (pa) {
		pa->ntouched = 0;
		pa->overflow = false;
	}
	for (size_t a = ci; a != NO_INDEX; a = in->cand[a].parent) {
		const struct candidate *holder = &in->cand[a];

		for (size_t x = holder->first; x < holder->first + holder->nrules; x++) {
			const struct indexed_rule *r = &in->ir[in->by_cand[x]];

			if (covers(r, c))
				take_rule(&v, pa, r);
		}
	}

	memset(out, 0, sizeof(*out));
	out->key.prefixlen = c->plen;
	out->key.addr = c->net;
	out->rule.dflt = dflt;
	out->rule.rule = v.best;
	out->rule.is_default = !v.any;
	out->rule.action = v.deny_all	 ? FW_ACTION_DENY
			   : v.allow_all ? FW_ACTION_ALLOW
					 : FW_ACTION_NONE;
	if (!v.any)
		out->rule.action = dflt; /* what a reader of the map expects to see */

	if (!pa) /* no rule of the policy lists ports */
		return 0;
	if (!v.deny_all && pa->ntouched) {
		qsort(pa->touched, pa->ntouched, sizeof(pa->touched[0]), port_cmp);
		for (size_t k = 0; k < pa->ntouched; k++) {
			__u16 port = pa->touched[k];

			/* deny for a port beats allow for it; an allow for every
			 * port needs no per-port allow */
			if (bit(pa->deny, port))
				exc[nexc++] = (struct fw_port_rule){.port = port,
								    .action = FW_ACTION_DENY};
			else if (!v.allow_all)
				exc[nexc++] = (struct fw_port_rule){.port = port,
								    .action = FW_ACTION_ALLOW};
		}
		if (nexc)
			err = portset_id(sb, exc, nexc, &out->rule.portset);
	}
	for (size_t k = 0; k < pa->ntouched; k++) {
		__u16 port = pa->touched[k];

		pa->deny[port / 8] = pa->allow[port / 8] = 0;
	}
	if (pa->overflow) {
		memset(pa->deny, 0, sizeof(pa->deny));
		memset(pa->allow, 0, sizeof(pa->allow));
		if (!err)
			err = -E2BIG;
	}
	return err;
}

static bool same_verdict(const struct fw_rule *a, const struct fw_rule *b)
{
	return a->action == b->action && a->is_default == b->is_default && a->portset == b->portset;
}

/* The candidates grouped by prefix length, so that one's longest strict
 * cover is found by trying the longer groups first and stopping at the
 * first prefix that holds it, instead of testing every pair. Prefixes
 * past /128 are in no group (they contain nothing, as in
 * fw_prefix_contains()). */
struct len_groups {
	const size_t *order;   /* candidates by prefix length, ascending index within */
	size_t first[129 + 1]; /* group g is order[first[g] .. first[g + 1]) */
	__u32 len[129];	       /* its prefix length, ascending */
	size_t n;	       /* groups */
};

/* order: room for n candidates. The lengths present are a bitmap, so
 * the groups cost what the candidates have, not a pass over 129 lengths
 * (a policy of 4 rules is compiled on every change too). */
static void len_groups_build(struct len_groups *g, size_t *order, const struct candidate *c,
			     size_t n)
{
	size_t at[129]; /* per length present: how many, then where the next goes */
	__u64 present[3] = {0};
	size_t pos = 0;

	for (size_t i = 0; i < n; i++) {
		__u32 len = c[i].plen;

		if (len > 128)
			continue;
		if (!(present[len / 64] & (1ull << (len % 64)))) {
			present[len / 64] |= 1ull << (len % 64);
			at[len] = 0;
		}
		at[len]++;
	}
	g->n = 0;
	for (__u32 w = 0; w < 3; w++) {
		for (__u64 bits = present[w]; bits; bits &= bits - 1) {
			__u32 len = 64 * w + (__u32)__builtin_ctzll(bits);
			size_t count = at[len];

			g->len[g->n] = len;
			g->first[g->n++] = pos;
			at[len] = pos;
			pos += count;
		}
	}
	g->first[g->n] = pos;
	for (size_t i = 0; i < n; i++)
		if (c[i].plen <= 128)
			order[at[c[i].plen]++] = i;
	g->order = order;
}

/* The longest candidate strictly shorter than c[i] that holds it (the
 * first in c of that length; there is one at most), or NO_INDEX. */
static size_t strict_cover(const struct candidate *c, const struct len_groups *g, size_t i)
{
	size_t grp = g->n;

	while (grp && g->len[grp - 1] >= c[i].plen)
		grp--;
	while (grp--) {
		for (size_t k = g->first[grp]; k < g->first[grp + 1]; k++) {
			size_t j = g->order[k];

			if (masked_contains(&c[j].net, &c[j].mask, &c[i].net))
				return j;
		}
	}
	return NO_INDEX;
}

/* Sets every candidate's parent: the entry the LPM lookup finds for its
 * prefix when it is not there. */
static void find_parents(struct compile_input *in)
{
	struct len_groups g;

	len_groups_build(&g, in->order, in->cand, in->ncand);
	for (size_t i = 0; i < in->ncand; i++)
		in->cand[i].parent = strict_cover(in->cand, &g, i);
}

/* Lists the rules of each candidate in in->by_cand, in index order. */
static void group_rules(struct compile_input *in)
{
	size_t pos = 0;

	for (size_t i = 0; i < in->nir; i++)
		in->cand[in->ir[i].cand].nrules++;
	for (size_t k = 0; k < in->ncand; k++) {
		in->cand[k].first = pos;
		pos += in->cand[k].nrules;
		in->cand[k].nrules = 0;
	}
	for (size_t i = 0; i < in->nir; i++) {
		struct candidate *k = &in->cand[in->ir[i].cand];

		in->by_cand[k->first + k->nrules++] = i;
	}
}

/* Drops every entry that decides exactly as the entry the LPM lookup
 * would find without it (its parent, the longest strict cover): an allow
 * inside a deny, a host inside a CIDR of the same verdict. Fewer
 * entries, smaller tries, same verdicts. c[k] is the entry of cand[k]. */
static size_t prune_redundant(struct fw_compiled *c, struct candidate *cand, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++)
		cand[i].drop = cand[i].parent != NO_INDEX &&
			       same_verdict(&c[i].rule, &c[cand[i].parent].rule);
	for (size_t i = 0; i < n; i++)
		if (!cand[i].drop)
			c[out++] = c[i];
	return out;
}

/* ::ffff:0:0/96, the whole IPv4 space */
static const struct fw_ip v4_block = {.b = {[10] = 0xff, [11] = 0xff}};

static bool ip_equal(const struct fw_ip *a, const struct fw_ip *b)
{
	const fw_ip_word *x = FW_IP_W(a), *y = FW_IP_W(b);

	return !((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]));
}

/* Appends the candidate net/plen (net masked) and returns its index. */
static size_t add_candidate(struct compile_input *in, const struct fw_ip *net, __u32 plen, bool v4)
{
	struct candidate *c = &in->cand[in->ncand];

	*c = (struct candidate){.net = *net, .plen = plen, .v4 = v4, .parent = NO_INDEX};
	fw_prefix_netmask(&c->mask, plen);
	return in->ncand++;
}

static size_t prefix_hash(const struct fw_ip *net, __u32 plen)
{
	__u64 h = plen;

	for (int i = 0; i < 4; i++)
		h = (h ^ FW_IP_W(net)[i]) * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h ^ h >> 29);
}

/* The candidate of the prefix net/plen (net masked), added when it is
 * new: a hash table, open addressing, so a policy of n distinct prefixes
 * costs n probes rather than n^2 comparisons. */
static size_t candidate_of(struct compile_input *in, const struct fw_ip *net, __u32 plen, bool v4)
{
	for (size_t i = prefix_hash(net, plen);; i++) {
		size_t *slot = &in->slot[i & in->slot_mask];
		const struct candidate *c = *slot ? &in->cand[*slot - 1] : NULL;

		if (!c) {
			*slot = add_candidate(in, net, plen, v4) + 1;
			return *slot - 1;
		}
		if (c->plen == plen && ip_equal(&c->net, net))
			return *slot - 1;
	}
}

/* Indexes the address rules of overlay then p (total of them) into in,
 * one candidate per distinct prefix, then the IPv4 block and ::/0 when
 * they are needed. */
static void index_rules(const struct fw_policy *overlay, const struct fw_policy *p, size_t total,
			struct compile_input *in)
{
	static const struct fw_ip zero;
	size_t nover = overlay ? overlay->nrules : 0;
	bool v4_covered = false, v4_block_rule = false, root = false;

	for (size_t i = 0; i < total; i++) {
		const struct fw_policy_rule *r =
			i < nover ? &overlay->rules[i] : &p->rules[i - nover];
		struct indexed_rule *x = &in->ir[in->nir];

		if (r->kind != FW_TARGET_IP && r->kind != FW_TARGET_CIDR)
			continue;
		*x = (struct indexed_rule){.ports = r->ports,
					   .nports = r->nports,
					   .index = (__u32)i,
					   .plen = r->plen,
					   .action = r->action,
					   .v4 = rule_is_v4(r)};
		fw_prefix_netmask(&x->mask, r->plen);
		fw_ip_and(&x->net, &r->addr, &x->mask);
		in->nports += r->nports;
		if (r->plen < FW_V4_PREFIX_BASE && !x->v4 &&
		    fw_prefix_contains(&x->net, r->plen, &v4_block))
			v4_covered = true;
		if (x->v4 && r->plen == FW_V4_PREFIX_BASE)
			v4_block_rule = true;
		x->cand = candidate_of(in, &x->net, r->plen, x->v4);
		in->nir++;
	}
	/* An IPv6 prefix shorter than /96 that contains the v4-mapped block
	 * would decide IPv4 traffic in the LPM lookup: an entry at the block
	 * makes IPv4 see only IPv4 rules (0.0.0.0/0, if there is one). */
	if (v4_covered && !v4_block_rule)
		add_candidate(in, &v4_block, FW_V4_PREFIX_BASE, true);
	/* ::/0: the IPv6 rules at /0 if any, else the default */
	for (size_t k = 0; k < in->ncand; k++)
		root |= in->cand[k].plen == 0;
	if (!root)
		add_candidate(in, &zero, 0, false);
}

/* The port accumulator for a policy listing nports ports in all: the
 * bitmaps cleared, the touched list (and the caller's exception list)
 * only as long as a candidate can need. */
static struct port_acc *port_acc_new(size_t nports)
{
	size_t cap = nports < PORTS_TOUCHED_MAX ? nports : PORTS_TOUCHED_MAX;
	struct port_acc *pa = malloc(sizeof(*pa) + cap * sizeof(pa->touched[0]));

	if (!pa)
		return NULL;
	memset(pa, 0, sizeof(*pa));
	pa->cap = cap;
	return pa;
}

int fw_policy_compile_set(const struct fw_policy *overlay, const struct fw_policy *p,
			  struct fw_compiled_set *out)
{
	size_t total = (overlay ? overlay->nrules : 0) + p->nrules, nc = 0, nslots;
	struct compile_input in = {};
	struct fw_compiled *c = NULL;
	struct fw_port_rule *exc = NULL;
	struct port_acc *pa = NULL;
	struct set_builder sb = {};
	int err = 0;

	memset(out, 0, sizeof(*out));
	for (nslots = 4; nslots < 2 * total; nslots *= 2)
		;
	in.ir = malloc((total ? total : 1) * sizeof(*in.ir));
	in.cand = malloc((total + 2) * sizeof(*in.cand));
	/* by_cand, order and slot: one block of indexes, slot cleared */
	in.by_cand = calloc(total + (total + 2) + nslots, sizeof(size_t));
	c = calloc(total + 2, sizeof(*c));
	if (!in.ir || !in.cand || !in.by_cand || !c) {
		err = -ENOMEM;
		goto cleanup;
	}
	in.order = in.by_cand + total;
	in.slot = in.order + total + 2;
	in.slot_mask = nslots - 1;
	index_rules(overlay, p, total, &in);
	if (in.ncand > FW_MAX_RULES) {
		err = -E2BIG;
		goto cleanup;
	}
	group_rules(&in);
	find_parents(&in);
	/* the port accumulators only for a policy with ports */
	if (in.nports) {
		pa = port_acc_new(in.nports);
		exc = pa ? malloc(pa->cap * sizeof(*exc)) : NULL;
		if (!pa || !exc) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	/* c[k] is the entry of candidate k until prune_redundant() */
	for (size_t k = 0; k < in.ncand; k++) {
		err = build_entry(&in, k, p->default_action, pa, &sb, exc, &c[k]);
		if (err)
			goto cleanup;
	}
	nc = prune_redundant(c, in.cand, in.ncand);
	out->entries = c;
	out->n = nc;
	out->ports = sb.ports;
	out->nports = sb.nports;
	c = NULL;
	sb.ports = NULL;
cleanup:
	free(in.ir);
	free(in.cand);
	free(in.by_cand);
	free(c);
	free(pa);
	free(exc);
	free(sb.ports);
	return err;
}

void fw_compiled_set_free(struct fw_compiled_set *s)
{
	free(s->entries);
	free(s->ports);
	memset(s, 0, sizeof(*s));
}

int fw_policy_compile(const struct fw_policy *overlay, const struct fw_policy *p,
		      struct fw_compiled **out, size_t *n)
{
	struct fw_compiled_set set;
	int err = fw_policy_compile_set(overlay, p, &set);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	*out = set.entries;
	*n = set.n;
	free(set.ports);
	return 0;
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
			h = mix64(h ^ FW_IP_W(&e->key.addr)[w]);
		h = mix64(h ^ ((__u64)e->rule.action << 16 | (__u64)e->rule.dflt << 8 |
			       e->rule.is_default));
		h = mix64(h ^ e->rule.rule);
		h = mix64(h ^ e->rule.portset);
		sum += h;
	}
	return sum;
}

__u64 fw_compiled_set_hash(const struct fw_compiled_set *s)
{
	__u64 h = fw_compiled_hash(s->entries, s->n);

	/* port sets are numbered in a stable order, so a plain sum is enough */
	for (size_t i = 0; i < s->nports; i++) {
		__u64 x = (__u64)s->ports[i].portset << 32 | (__u64)s->ports[i].port << 8 |
			  s->ports[i].action;

		h += mix64(x ^ 0x9e3779b97f4a7c15ULL);
	}
	return h;
}
