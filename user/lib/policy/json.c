// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The policy JSON (egress-policy format): parsing into a fw_policy,
 * serialising back, and the push semantics of merge and removal. See
 * policy/json.h. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/addr.h"
#include "common/cfgkeys.h"
#include "common/json.h"
#include "common/jtree.h"
#include "policy/json.h"

#define POLICY_JSON_MAX (1 << 20)

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Appends "[egress[i]: ]unknown key 'k' ignored[ (did you mean 'x'?)]" for
 * each key of o not in known to warn (when warn is not NULL), "; " between
 * them; keys are shown without control bytes and cut at 64. */
static void unknown_keys(const struct fw_jtree *t, const struct fw_jval *o,
			 const char *const *known, size_t nknown, const char *in, char *warn,
			 size_t warnlen)
{
	if (!warn || !warnlen)
		return;
	for (const struct fw_jval *m = fw_jfirst(t, o); m; m = fw_jnext(t, m)) {
		const char *like, *key = fw_jkey(t, m);
		char shown[72];
		size_t i, used = strlen(warn);

		if (used + 1 >= warnlen)
			return; /* full: the rest would be cut anyway */
		for (i = 0; i < nknown && strcmp(key, known[i]); i++)
			;
		if (i < nknown || fw_jget(t, o, key) != m)
			continue; /* known, or a duplicate warned of at its last copy */
		for (i = 0; i < 64 && key[i]; i++)
			shown[i] = (unsigned char)key[i] < 0x20 || key[i] == 0x7f ? '?' : key[i];
		snprintf(shown + i, sizeof(shown) - i, "%s", key[i] ? "..." : "");
		like = fw_ck_suggest(key, known, nknown);
		snprintf(warn + used, warnlen - used, "%s%s%sunknown key '%s' ignored%s%s%s",
			 used ? "; " : "", in, in[0] ? ": " : "", shown,
			 like ? " (did you mean '" : "", like ? like : "", like ? "'?)" : "");
	}
}

static int policy_rule_from_json(struct fw_policy *p, size_t i, const struct fw_jtree *tr,
				 const struct fw_jval *r, char *err, size_t errlen, char *warn,
				 size_t warnlen)
{
	static const char *const known[] = {"action", "target", "ports"};
	char in[32];
	long ports[FW_POLICY_MAX_PORTS];
	const char *action = "", *target = "";
	const struct fw_jval *a, *t, *ps, *v;
	char why[256];
	size_t np = 0, k;
	int ret;

	if (!fw_jis(r, FW_J_OBJECT)) {
		fw_set_reason(err, errlen, "egress[%zu] must be an object", i);
		return -EINVAL;
	}
	a = fw_jget(tr, r, "action");
	if (a && !fw_jis(a, FW_J_NULL)) {
		if (!fw_jis(a, FW_J_STRING)) {
			fw_set_reason(err, errlen, "egress[%zu].action must be a string", i);
			return -EINVAL;
		}
		action = fw_jstr(tr, a);
	}
	t = fw_jget(tr, r, "target");
	if (t && !fw_jis(t, FW_J_NULL)) {
		if (!fw_jis(t, FW_J_STRING)) {
			fw_set_reason(err, errlen, "egress[%zu].target must be a string", i);
			return -EINVAL;
		}
		target = fw_jstr(tr, t);
	}
	for (k = 0; isspace((unsigned char)target[k]); k++)
		;
	if (!target[k]) {
		fw_set_reason(err, errlen, "egress[%zu].target is empty", i);
		return -EINVAL;
	}
	ps = fw_jget(tr, r, "ports");
	if (ps && !fw_jis(ps, FW_J_NULL)) {
		if (!fw_jis(ps, FW_J_ARRAY)) {
			fw_set_reason(err, errlen, "egress[%zu].ports must be an array of integers",
				      i);
			return -EINVAL;
		}
		/* bounded before anything is copied: never trust a count */
		if (ps->n > FW_POLICY_MAX_PORTS) {
			fw_set_reason(err, errlen, "egress[%zu]: too many ports (%u, at most %d)",
				      i, ps->n, FW_POLICY_MAX_PORTS);
			return -EINVAL;
		}
		for (v = fw_jfirst(tr, ps); v; v = fw_jnext(tr, v)) {
			long long n;

			if (!fw_jis(v, FW_J_INT)) {
				fw_set_reason(err, errlen,
					      "egress[%zu].ports must be an array of integers", i);
				return -EINVAL;
			}
			/* fw_policy_add_rule range-checks; only keep the
			 * value representable in a long */
			n = v->i;
			ports[np++] = n < LONG_MIN ? LONG_MIN : n > LONG_MAX ? LONG_MAX : (long)n;
		}
	}
	ret = fw_policy_add_rule(p, action, target, np ? ports : NULL, np, why, sizeof(why));
	if (ret) {
		fw_set_reason(err, errlen, "egress[%zu]: %s", i, why);
		return ret;
	}
	snprintf(in, sizeof(in), "egress[%zu]", i);
	unknown_keys(tr, r, known, 3, in, warn, warnlen);
	return 0;
}

/* fastwall's extension "fastwallBandwidth": {"rate": bytes per second,
 * "burst": bytes} (burst optional), or "off". Ours alone, so an unknown
 * key in it is an error, not a warning. */
static int bandwidth_from_json(struct fw_policy *p, const struct fw_jtree *t,
			       const struct fw_jval *bw, char *err, size_t errlen)
{
	const struct fw_jval *rate, *burst;
	char why[160];

	if (fw_jis(bw, FW_J_STRING) && !strcmp(fw_jstr(t, bw), "off")) {
		p->bw = FW_POLICY_BW_OFF;
		return 0;
	}
	if (!fw_jis(bw, FW_J_OBJECT)) {
		fw_set_reason(err, errlen,
			      "fastwallBandwidth must be {\"rate\": N, \"burst\": N} or \"off\"");
		return -EINVAL;
	}
	for (const struct fw_jval *m = fw_jfirst(t, bw); m; m = fw_jnext(t, m)) {
		const char *key = fw_jkey(t, m);

		if (strcmp(key, "rate") && strcmp(key, "burst")) {
			fw_set_reason(err, errlen,
				      "fastwallBandwidth: unknown key (rate and burst only)");
			return -EINVAL;
		}
	}
	rate = fw_jget(t, bw, "rate");
	burst = fw_jget(t, bw, "burst");
	if (!rate || !fw_jis(rate, FW_J_INT) || (burst && !fw_jis(burst, FW_J_INT))) {
		fw_set_reason(err, errlen,
			      "fastwallBandwidth: rate (bytes per second, required) and burst "
			      "(bytes) must be integers");
		return -EINVAL;
	}
	if (fw_policy_bw_set(p, rate->i, burst != NULL, burst ? burst->i : 0, why, sizeof(why))) {
		fw_set_reason(err, errlen, "fastwallBandwidth: %s", why);
		return -EINVAL;
	}
	return 0;
}

int fw_policy_from_json(const char *s, size_t len, struct fw_policy *p, char *err, size_t errlen)
{
	return fw_policy_from_json_warn(s, len, p, err, errlen, NULL, 0);
}

int fw_policy_from_json_warn(const char *s, size_t len, struct fw_policy *p, char *err,
			     size_t errlen, char *warn, size_t warnlen)
{
	static const char *const known[] = {"defaultAction", "egress", "fastwallL7",
					    "fastwallBandwidth"};
	struct fw_policy tmp;
	const struct fw_jval *root, *da, *eg, *r, *l7, *bw;
	struct fw_jtree t;
	char why[256];
	size_t i;
	int ret = 0;

	fw_policy_init(p);
	if (warn && warnlen)
		warn[0] = '\0';
	if (!s)
		s = "";
	if (len > POLICY_JSON_MAX) {
		fw_set_reason(err, errlen, "policy larger than %d bytes", POLICY_JSON_MAX);
		return -EINVAL;
	}
	while (len && is_blank(*s)) {
		s++;
		len--;
	}
	while (len && is_blank(s[len - 1]))
		len--;
	if (len == 0 || (len == 4 && memcmp(s, "null", 4) == 0) ||
	    (len == 2 && memcmp(s, "{}", 2) == 0))
		return 0;

	ret = fw_jtree_parse(&t, s, len, why, sizeof(why));
	if (ret) {
		fw_set_reason(err, errlen, "%s%s",
			      ret == -ENOMEM ? "" : "malformed policy JSON: ", why);
		return ret;
	}
	root = fw_jroot(&t);
	fw_policy_init(&tmp);
	if (!fw_jis(root, FW_J_OBJECT)) {
		fw_set_reason(err, errlen, "policy must be a JSON object");
		ret = -EINVAL;
		goto cleanup;
	}
	unknown_keys(&t, root, known, 4, "", warn, warnlen);
	da = fw_jget(&t, root, "defaultAction");
	if (da && !fw_jis(da, FW_J_NULL)) {
		if (!fw_jis(da, FW_J_STRING)) {
			fw_set_reason(err, errlen, "defaultAction must be a string");
			ret = -EINVAL;
			goto cleanup;
		}
		ret = fw_policy_set_default(&tmp, fw_jstr(&t, da), why, sizeof(why));
		if (ret) {
			fw_set_reason(err, errlen, "defaultAction: %s", why);
			goto cleanup;
		}
	}
	/* fastwall's extension: "on" or "off" (true or false) */
	l7 = fw_jget(&t, root, "fastwallL7");
	if (l7 && fw_jis(l7, FW_J_TRUE)) {
		tmp.l7 = FW_POLICY_L7_ON;
	} else if (l7 && fw_jis(l7, FW_J_FALSE)) {
		tmp.l7 = FW_POLICY_L7_OFF;
	} else if (l7 && !fw_jis(l7, FW_J_NULL)) {
		if (!fw_jis(l7, FW_J_STRING)) {
			fw_set_reason(err, errlen, "fastwallL7 must be \"on\" or \"off\"");
			ret = -EINVAL;
			goto cleanup;
		}
		ret = fw_policy_l7_parse(fw_jstr(&t, l7), &tmp.l7, why, sizeof(why));
		if (ret) {
			fw_set_reason(err, errlen, "fastwallL7: %s", why);
			goto cleanup;
		}
	}
	bw = fw_jget(&t, root, "fastwallBandwidth");
	if (bw && !fw_jis(bw, FW_J_NULL)) {
		ret = bandwidth_from_json(&tmp, &t, bw, err, errlen);
		if (ret)
			goto cleanup;
	}
	eg = fw_jget(&t, root, "egress");
	if (eg && !fw_jis(eg, FW_J_NULL)) {
		if (!fw_jis(eg, FW_J_ARRAY)) {
			fw_set_reason(err, errlen, "egress must be an array");
			ret = -EINVAL;
			goto cleanup;
		}
		if (eg->n > FW_POLICY_MAX_RULES) {
			fw_set_reason(err, errlen, "egress has %u rules, at most %d", eg->n,
				      FW_POLICY_MAX_RULES);
			ret = -EINVAL;
			goto cleanup;
		}
		for (i = 0, r = fw_jfirst(&t, eg); r; i++, r = fw_jnext(&t, r)) {
			ret = policy_rule_from_json(&tmp, i, &t, r, err, errlen, warn, warnlen);
			if (ret)
				goto cleanup;
		}
	}
	*p = tmp;
	fw_policy_init(&tmp);
cleanup:
	fw_policy_free(&tmp);
	fw_jtree_free(&t);
	return ret;
}

/* The text a rule was written as; rules not made by fw_policy_add_rule
 * get their canonical form. */
static const char *rule_target(const struct fw_policy_rule *r, char *buf, size_t len)
{
	if (r->target)
		return r->target;
	switch (r->kind) {
	case FW_TARGET_IP:
		return fw_addr_str(&r->addr, buf, len);
	case FW_TARGET_CIDR:
		return fw_prefix_str(&r->addr, r->plen, buf, len);
	case FW_TARGET_WILDCARD:
		snprintf(buf, len, "*.%s", r->domain ? r->domain : "");
		return buf;
	default:
		return r->domain ? r->domain : "";
	}
}

static const char *action_name(__u8 a)
{
	return a == FW_ACTION_ALLOW ? "allow" : "deny";
}

char *fw_policy_to_json(const struct fw_policy *p)
{
	json_t *root, *eg;
	char *out = NULL;

	root = json_object();
	eg = json_array();
	if (!root || !eg)
		goto cleanup;
	if (json_object_set_new(root, "defaultAction", json_string(action_name(p->default_action))))
		goto cleanup;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct fw_policy_rule *r = &p->rules[i];
		char buf[FW_DOMAIN_MAX + 3 > FW_ADDR_STRLEN ? FW_DOMAIN_MAX + 3 : FW_ADDR_STRLEN];
		json_t *o, *ports;

		o = json_object();
		if (!o || json_array_append_new(eg, o))
			goto cleanup;
		if (json_object_set_new(o, "action", json_string(action_name(r->action))) ||
		    json_object_set_new(o, "target", json_string(rule_target(r, buf, sizeof(buf)))))
			goto cleanup;
		if (!r->nports)
			continue;
		ports = json_array();
		if (!ports || json_object_set_new(o, "ports", ports))
			goto cleanup;
		for (size_t k = 0; k < r->nports; k++) {
			if (json_array_append_new(ports, json_integer(r->ports[k])))
				goto cleanup;
		}
	}
	if (json_object_set(root, "egress", eg))
		goto cleanup;
	if (p->l7 != FW_POLICY_L7_DEFAULT &&
	    json_object_set_new(root, "fastwallL7", json_string(fw_policy_l7_name(p->l7))))
		goto cleanup;
	if (p->bw == FW_POLICY_BW_OFF &&
	    json_object_set_new(root, "fastwallBandwidth", json_string("off")))
		goto cleanup;
	if (p->bw == FW_POLICY_BW_ON &&
	    json_object_set_new(root, "fastwallBandwidth",
				json_pack("{sIsI}", "rate", (json_int_t)p->bw_rate, "burst",
					  (json_int_t)p->bw_burst)))
		goto cleanup;
	out = json_dumps(root, JSON_COMPACT);
cleanup:
	json_decref(eg);
	json_decref(root);
	return out;
}

static bool same_target(const struct fw_policy_rule *a, const struct fw_policy_rule *b)
{
	char ba[FW_DOMAIN_MAX + 3 > FW_ADDR_STRLEN ? FW_DOMAIN_MAX + 3 : FW_ADDR_STRLEN];
	char bb[sizeof(ba)];

	if (a->target && b->target)
		return strcmp(a->target, b->target) == 0;
	return strcmp(rule_target(a, ba, sizeof(ba)), rule_target(b, bb, sizeof(bb))) == 0;
}

int fw_policy_merge(struct fw_policy *dst, const struct fw_policy *patch)
{
	struct fw_policy tmp;
	struct fw_policy_rule *rules;
	size_t cap;
	int err;

	err = fw_policy_copy(&tmp, dst);
	if (err)
		return err;
	/* a push that says fastwallL7 changes it, like defaultAction stays */
	if (patch->l7 != FW_POLICY_L7_DEFAULT)
		tmp.l7 = patch->l7;
	/* and one that says fastwallBandwidth (its "off" removes the limit) */
	if (patch->bw != FW_POLICY_BW_DEFAULT) {
		tmp.bw = patch->bw;
		tmp.bw_rate = patch->bw_rate;
		tmp.bw_burst = patch->bw_burst;
	}
	for (size_t i = 0; i < patch->nrules; i++) {
		const struct fw_policy_rule *r = &patch->rules[i];
		struct fw_policy_rule copy;
		bool seen = false;
		size_t k;

		/* within one patch the first rule per target wins */
		for (size_t j = 0; j < i && !seen; j++)
			seen = same_target(&patch->rules[j], r);
		if (seen)
			continue;
		err = fw_policy_rule_copy(&copy, r);
		if (err)
			goto fail;
		for (k = 0; k < tmp.nrules && !same_target(&tmp.rules[k], r); k++)
			;
		if (k < tmp.nrules) {
			/* replaced in place; a later rule of the same target
			 * (a policy that named it twice) goes, so the pushed
			 * rule alone speaks for its target */
			size_t w = k + 1;

			fw_policy_rule_free(&tmp.rules[k]);
			tmp.rules[k] = copy;
			for (size_t m = k + 1; m < tmp.nrules; m++) {
				if (same_target(&tmp.rules[m], r))
					fw_policy_rule_free(&tmp.rules[m]);
				else
					tmp.rules[w++] = tmp.rules[m];
			}
			tmp.nrules = w;
			continue;
		}
		if (tmp.nrules >= FW_POLICY_MAX_RULES) {
			fw_policy_rule_free(&copy);
			err = -E2BIG;
			goto fail;
		}
		cap = tmp.nrules + 1;
		rules = realloc(tmp.rules, cap * sizeof(*rules));
		if (!rules) {
			fw_policy_rule_free(&copy);
			err = -ENOMEM;
			goto fail;
		}
		tmp.rules = rules;
		tmp.rules[tmp.nrules++] = copy;
	}
	fw_policy_free(dst);
	*dst = tmp;
	return 0;
fail:
	fw_policy_free(&tmp);
	return err;
}

int fw_policy_remove_targets(struct fw_policy *p, const char *const *targets, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < p->nrules; i++) {
		struct fw_policy_rule *r = &p->rules[i];
		char buf[FW_DOMAIN_MAX + 3 > FW_ADDR_STRLEN ? FW_DOMAIN_MAX + 3 : FW_ADDR_STRLEN];
		const char *rt = rule_target(r, buf, sizeof(buf));
		bool hit = false;

		for (size_t j = 0; j < n && !hit; j++) {
			const char *t = targets[j];
			size_t len;

			if (!t)
				continue;
			while (isspace((unsigned char)*t))
				t++;
			len = strlen(t);
			while (len && isspace((unsigned char)t[len - 1]))
				len--;
			hit = strlen(rt) == len && memcmp(rt, t, len) == 0;
		}
		if (hit)
			fw_policy_rule_free(r);
		else
			p->rules[w++] = *r;
	}
	p->nrules = w;
	if (!w) {
		free(p->rules);
		p->rules = NULL;
	}
	return 0;
}
