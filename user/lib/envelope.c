// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Sandbox Actions envelope and the policy JSON it carries. Parsing is
 * two passes, as the reference's Go decoder does it: first every field is
 * decoded with its type checked (a string where a string is due, a
 * generation a non-negative integer, a string that fits), then the
 * protocol's validation runs in the documented order. Duplicate keys are
 * accepted, the last one winning, as in Go; trailing bytes are an error. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "addr.h"
#include "envelope.h"

/* longest piece of a client's value echoed in a reason */
#define ECHO_MAX	64
#define POLICY_JSON_MAX (1 << 20)

static void set_reason(char *reason, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_reason(char *reason, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!reason || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, len, fmt, ap);
	va_end(ap);
}

/* A client's value made safe to echo: printable ASCII, at most ECHO_MAX
 * characters, quotes and backslashes replaced, so a reason stays one short
 * line whatever the input. */
static const char *echo(const char *s, char buf[ECHO_MAX + 4])
{
	size_t i;

	for (i = 0; i < ECHO_MAX && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[i] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
	}
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* Decoding helpers: return 0 with the value stored (or left as it was when
 * the key is absent or null, as Go leaves a zero value), else -EINVAL. */

static int get_object(json_t *parent, const char *key, const char *field, json_t **out,
		      char *reason, size_t rlen)
{
	json_t *v = parent ? json_object_get(parent, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v)) {
		set_reason(reason, rlen, "%s must be an object", field);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* A string into a fixed buffer of FW_ENV_STR bytes. jansson has already
 * refused "\u0000" (no JSON_ALLOW_NUL), so the length is strlen's. */
static int get_str(json_t *parent, const char *key, const char *field, char *out, size_t outlen,
		   char *reason, size_t rlen)
{
	json_t *v = parent ? json_object_get(parent, key) : NULL;

	out[0] = '\0';
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		set_reason(reason, rlen, "%s must be a string", field);
		return -EINVAL;
	}
	if (json_string_length(v) >= outlen) {
		set_reason(reason, rlen, "%s too long", field);
		return -EINVAL;
	}
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int get_gen(json_t *parent, const char *key, const char *field, __u64 *out, char *reason,
		   size_t rlen)
{
	json_t *v = parent ? json_object_get(parent, key) : NULL;

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	/* jansson refuses integers beyond int64 as malformed JSON; a real
	 * such as 4.0 or 1e3 is not an integer to Go's uint64 either */
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		set_reason(reason, rlen, "%s must be a non-negative integer", field);
		return -EINVAL;
	}
	*out = (__u64)json_integer_value(v);
	return 0;
}

/* apiVersion, operation and hook.name are compared, never kept: a
 * generous buffer so that an over-long value is "unsupported"/"unknown"
 * rather than "too long". */
#define WORD_MAX 128

struct raw_envelope {
	char api_version[WORD_MAX];
	char operation[WORD_MAX];
	char ip[FW_ENV_STR], gateway[FW_ENV_STR], private_cidr[FW_ENV_STR];
	json_t *binding;
	json_t *hook;
	char hook_name[WORD_MAX];
};

static int get_word(json_t *parent, const char *key, const char *field, char *out, char *reason,
		    size_t rlen)
{
	json_t *v = parent ? json_object_get(parent, key) : NULL;
	size_t n;

	out[0] = '\0';
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		set_reason(reason, rlen, "%s must be a string", field);
		return -EINVAL;
	}
	n = json_string_length(v);
	if (n >= WORD_MAX)
		n = WORD_MAX - 1;
	memcpy(out, json_string_value(v), n);
	out[n] = '\0';
	return 0;
}

static int decode(json_t *root, struct fw_envelope *env, struct raw_envelope *raw, char *reason,
		  size_t rlen)
{
	json_t *sandbox, *revision, *attachment, *network;
	int err;

#define TRY(x)                                                                                     \
	do {                                                                                       \
		err = (x);                                                                         \
		if (err)                                                                           \
			return err;                                                                \
	} while (0)
	TRY(get_word(root, "apiVersion", "apiVersion", raw->api_version, reason, rlen));
	TRY(get_word(root, "operation", "operation", raw->operation, reason, rlen));
	TRY(get_str(root, "invocationId", "invocationId", env->invocation_id, FW_ENV_STR, reason,
		    rlen));

	TRY(get_object(root, "sandbox", "sandbox", &sandbox, reason, rlen));
	TRY(get_str(sandbox, "uid", "sandbox.uid", env->uid, FW_ENV_STR, reason, rlen));
	TRY(get_str(sandbox, "name", "sandbox.name", env->name, FW_ENV_STR, reason, rlen));
	TRY(get_str(sandbox, "namespace", "sandbox.namespace", env->ns, FW_ENV_STR, reason, rlen));

	TRY(get_object(root, "revision", "revision", &revision, reason, rlen));
	TRY(get_gen(revision, "specGeneration", "revision.specGeneration", &env->spec_generation,
		    reason, rlen));
	TRY(get_str(revision, "runtimeInstanceId", "revision.runtimeInstanceId",
		    env->runtime_instance_id, FW_ENV_STR, reason, rlen));
	TRY(get_str(revision, "attachmentId", "revision.attachmentId", env->attachment_id,
		    FW_ENV_STR, reason, rlen));
	TRY(get_gen(revision, "routeGeneration", "revision.routeGeneration", &env->route_generation,
		    reason, rlen));

	TRY(get_object(root, "attachment", "attachment", &attachment, reason, rlen));
	TRY(get_object(attachment, "network", "attachment.network", &network, reason, rlen));
	TRY(get_str(network, "ip", "attachment.network.ip", raw->ip, FW_ENV_STR, reason, rlen));
	TRY(get_str(network, "gateway", "attachment.network.gateway", raw->gateway, FW_ENV_STR,
		    reason, rlen));
	TRY(get_str(network, "privateCidr", "attachment.network.privateCidr", raw->private_cidr,
		    FW_ENV_STR, reason, rlen));
	TRY(get_str(network, "hostVeth", "attachment.network.hostVeth", env->host_veth, FW_ENV_STR,
		    reason, rlen));

	/* binding.input is checked by the SET_BINDING step, where the
	 * protocol puts "a string or null" */
	TRY(get_object(root, "binding", "binding", &raw->binding, reason, rlen));

	TRY(get_object(root, "hook", "hook", &raw->hook, reason, rlen));
	TRY(get_word(raw->hook, "name", "hook.name", raw->hook_name, reason, rlen));
	TRY(get_gen(raw->hook, "sequence", "hook.sequence", &env->hook_sequence, reason, rlen));
#undef TRY
	return 0;
}

static int check_ip(const char *s, struct fw_envelope *env, char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];

	if (fw_addr_parse(s, &env->ip, &env->ip_family)) {
		set_reason(reason, rlen, "invalid attachment.network.ip \"%s\"", echo(s, e));
		return -EINVAL;
	}
	env->has_ip = true;
	return 0;
}

static int check_set_binding(struct fw_envelope *env, struct raw_envelope *raw, char *reason,
			     size_t rlen)
{
	json_t *in;

	if (!raw->binding) {
		set_reason(reason, rlen, "binding is required");
		return -EINVAL;
	}
	env->has_binding = true;
	in = json_object_get(raw->binding, "input");
	if (!in) {
		set_reason(reason, rlen, "binding.input is required");
		return -EINVAL;
	}
	if (json_is_null(in)) {
		env->input_null = true;
		return 0;
	}
	if (!json_is_string(in)) {
		set_reason(reason, rlen, "binding.input must be a string or null");
		return -EINVAL;
	}
	if (!raw->ip[0]) {
		set_reason(reason, rlen, "attachment.network.ip is required");
		return -EINVAL;
	}
	if (check_ip(raw->ip, env, reason, rlen))
		return -EINVAL;
	if (!env->host_veth[0]) {
		set_reason(reason, rlen, "attachment.network.hostVeth is required");
		return -EINVAL;
	}
	/* copied last: every error above leaves nothing allocated */
	env->input_len = json_string_length(in);
	env->input = malloc(env->input_len + 1);
	if (!env->input) {
		set_reason(reason, rlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(env->input, json_string_value(in), env->input_len + 1);
	return 0;
}

static int check_hook(struct fw_envelope *env, struct raw_envelope *raw, char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];

	if (!raw->hook) {
		set_reason(reason, rlen, "hook is required");
		return -EINVAL;
	}
	if (!raw->hook_name[0]) {
		set_reason(reason, rlen, "hook.name is required");
		return -EINVAL;
	}
	if (strcmp(raw->hook_name, "sandbox.runtime-ready") == 0) {
		env->hook = FW_HOOK_RUNTIME_READY;
	} else if (strcmp(raw->hook_name, "sandbox.data-plane-ready") == 0) {
		env->hook = FW_HOOK_DATA_PLANE_READY;
	} else {
		set_reason(reason, rlen, "unknown hook \"%s\"", echo(raw->hook_name, e));
		return -EINVAL;
	}
	return 0;
}

static int validate(struct fw_envelope *env, struct raw_envelope *raw, char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];
	int err;

	/* 1 */
	if (strcmp(raw->api_version, FW_API_VERSION) != 0) {
		set_reason(reason, rlen, "unsupported apiVersion \"%s\"",
			   echo(raw->api_version, e));
		return -EINVAL;
	}
	/* 2 */
	if (!env->uid[0]) {
		set_reason(reason, rlen, "sandbox.uid is required");
		return -EINVAL;
	}
	/* a uid names the subject in logs, the CLI and metrics: a newline
	 * or a terminal escape in it has no business there */
	for (const unsigned char *c = (const unsigned char *)env->uid; *c; c++) {
		if (*c < 0x20 || *c == 0x7f) {
			set_reason(reason, rlen, "sandbox.uid must not contain control characters");
			return -EINVAL;
		}
	}
	/* 3 */
	if (strcmp(raw->operation, "SET_BINDING") == 0) {
		env->op = FW_OP_SET_BINDING;
		err = check_set_binding(env, raw, reason, rlen);
	} else if (strcmp(raw->operation, "LIFECYCLE_HOOK") == 0) {
		env->op = FW_OP_LIFECYCLE_HOOK;
		err = check_hook(env, raw, reason, rlen);
	} else if (strcmp(raw->operation, "REMOVE_BINDING") == 0) {
		env->op = FW_OP_REMOVE_BINDING;
		err = 0;
	} else {
		set_reason(reason, rlen, "unknown operation \"%s\"", echo(raw->operation, e));
		err = -EINVAL;
	}
	if (err)
		return err;
	/* 4 */
	if (!env->runtime_instance_id[0]) {
		set_reason(reason, rlen, "revision.runtimeInstanceId is required");
		return -EINVAL;
	}
	if (!env->attachment_id[0]) {
		set_reason(reason, rlen, "revision.attachmentId is required");
		return -EINVAL;
	}
	/* then every address that was given must parse, whatever the
	 * operation: a bad one is a 400, not a silent "absent" */
	if (raw->ip[0] && !env->has_ip && check_ip(raw->ip, env, reason, rlen))
		return -EINVAL;
	if (raw->gateway[0]) {
		if (fw_addr_parse(raw->gateway, &env->gateway, NULL)) {
			set_reason(reason, rlen, "invalid attachment.network.gateway \"%s\"",
				   echo(raw->gateway, e));
			return -EINVAL;
		}
		env->has_gateway = true;
	}
	if (raw->private_cidr[0]) {
		if (fw_prefix_parse(raw->private_cidr, &env->private_cidr.net,
				    &env->private_cidr.plen, NULL)) {
			set_reason(reason, rlen, "invalid attachment.network.privateCidr \"%s\"",
				   echo(raw->private_cidr, e));
			return -EINVAL;
		}
		env->has_private_cidr = true;
	}
	return 0;
}

int fw_envelope_parse(const char *body, size_t len, struct fw_envelope *env, char *reason,
		      size_t reason_len)
{
	struct raw_envelope raw;
	json_error_t jerr;
	char why[128];
	json_t *root;
	int err;

	memset(env, 0, sizeof(*env));
	memset(&raw, 0, sizeof(raw));
	if (len > FW_ENV_BODY_MAX) {
		set_reason(reason, reason_len, "request body too large");
		return -E2BIG;
	}
	if (!body) {
		body = "";
		len = 0;
	}
	/* no JSON_DISABLE_EOF_CHECK: bytes after the object are an error;
	 * no JSON_ALLOW_NUL: "\u0000" in a string is an error; no
	 * JSON_REJECT_DUPLICATES: the last of duplicate keys wins, as in Go */
	root = json_loadb(body, len, 0, &jerr);
	if (!root) {
		set_reason(reason, reason_len, "malformed JSON: %s",
			   fw_json_error(&jerr, why, sizeof(why)));
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		set_reason(reason, reason_len, "body must be a JSON object");
		err = -EINVAL;
		goto cleanup;
	}
	err = decode(root, env, &raw, reason, reason_len);
	if (!err)
		err = validate(env, &raw, reason, reason_len);
cleanup:
	json_decref(root);
	if (err)
		fw_envelope_free(env);
	return err;
}

void fw_envelope_free(struct fw_envelope *env)
{
	free(env->input);
	env->input = NULL;
	env->input_len = 0;
}

/* --- the policy JSON --- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int policy_rule_from_json(struct fw_policy *p, size_t i, json_t *r, char *err, size_t errlen)
{
	long ports[FW_POLICY_MAX_PORTS];
	const char *action = "", *target = "";
	json_t *a, *t, *ps, *v;
	char why[256];
	size_t np = 0, k;
	int ret;

	if (!json_is_object(r)) {
		set_reason(err, errlen, "egress[%zu] must be an object", i);
		return -EINVAL;
	}
	a = json_object_get(r, "action");
	if (a && !json_is_null(a)) {
		if (!json_is_string(a)) {
			set_reason(err, errlen, "egress[%zu].action must be a string", i);
			return -EINVAL;
		}
		action = json_string_value(a);
	}
	t = json_object_get(r, "target");
	if (t && !json_is_null(t)) {
		if (!json_is_string(t)) {
			set_reason(err, errlen, "egress[%zu].target must be a string", i);
			return -EINVAL;
		}
		target = json_string_value(t);
	}
	for (k = 0; isspace((unsigned char)target[k]); k++)
		;
	if (!target[k]) {
		set_reason(err, errlen, "egress[%zu].target is empty", i);
		return -EINVAL;
	}
	ps = json_object_get(r, "ports");
	if (ps && !json_is_null(ps)) {
		if (!json_is_array(ps)) {
			set_reason(err, errlen, "egress[%zu].ports must be an array of integers",
				   i);
			return -EINVAL;
		}
		/* bounded before anything is copied: never trust a count */
		if (json_array_size(ps) > FW_POLICY_MAX_PORTS) {
			set_reason(err, errlen, "egress[%zu]: too many ports (%zu, at most %d)", i,
				   json_array_size(ps), FW_POLICY_MAX_PORTS);
			return -EINVAL;
		}
		json_array_foreach(ps, k, v)
		{
			json_int_t n;

			if (!json_is_integer(v)) {
				set_reason(err, errlen,
					   "egress[%zu].ports must be an array of integers", i);
				return -EINVAL;
			}
			/* fw_policy_add_rule range-checks; only keep the
			 * value representable in a long */
			n = json_integer_value(v);
			ports[np++] = n < LONG_MIN ? LONG_MIN : n > LONG_MAX ? LONG_MAX : (long)n;
		}
	}
	ret = fw_policy_add_rule(p, action, target, np ? ports : NULL, np, why, sizeof(why));
	if (ret)
		set_reason(err, errlen, "egress[%zu]: %s", i, why);
	return ret;
}

const char *fw_json_error(const struct json_error_t *e, char *buf, size_t len)
{
	const char *what;

	switch (json_error_code(e)) {
	case json_error_out_of_memory:
		what = "out of memory";
		break;
	case json_error_stack_overflow:
		what = "nested too deeply";
		break;
	case json_error_invalid_utf8:
		what = "invalid UTF-8";
		break;
	case json_error_premature_end_of_input:
		what = "premature end of input";
		break;
	case json_error_end_of_input_expected:
		what = "end of input expected";
		break;
	case json_error_null_character:
		what = "\\u0000 is not allowed";
		break;
	case json_error_numeric_overflow:
		what = "too big integer";
		break;
	case json_error_duplicate_key:
		what = "duplicate key";
		break;
	default:
		what = "invalid syntax";
		break;
	}
	snprintf(buf, len, "%s at line %d column %d", what, e->line, e->column);
	return buf;
}

int fw_policy_from_json(const char *s, size_t len, struct fw_policy *p, char *err, size_t errlen)
{
	struct fw_policy tmp;
	json_error_t jerr;
	json_t *root, *da, *eg, *r;
	char why[256];
	size_t i;
	int ret = 0;

	fw_policy_init(p);
	if (!s)
		s = "";
	if (len > POLICY_JSON_MAX) {
		set_reason(err, errlen, "policy larger than %d bytes", POLICY_JSON_MAX);
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

	root = json_loadb(s, len, 0, &jerr);
	if (!root) {
		set_reason(err, errlen, "malformed policy JSON: %s",
			   fw_json_error(&jerr, why, sizeof(why)));
		return -EINVAL;
	}
	fw_policy_init(&tmp);
	if (!json_is_object(root)) {
		set_reason(err, errlen, "policy must be a JSON object");
		ret = -EINVAL;
		goto cleanup;
	}
	da = json_object_get(root, "defaultAction");
	if (da && !json_is_null(da)) {
		if (!json_is_string(da)) {
			set_reason(err, errlen, "defaultAction must be a string");
			ret = -EINVAL;
			goto cleanup;
		}
		ret = fw_policy_set_default(&tmp, json_string_value(da), why, sizeof(why));
		if (ret) {
			set_reason(err, errlen, "defaultAction: %s", why);
			goto cleanup;
		}
	}
	eg = json_object_get(root, "egress");
	if (eg && !json_is_null(eg)) {
		if (!json_is_array(eg)) {
			set_reason(err, errlen, "egress must be an array");
			ret = -EINVAL;
			goto cleanup;
		}
		if (json_array_size(eg) > FW_POLICY_MAX_RULES) {
			set_reason(err, errlen, "egress has %zu rules, at most %d",
				   json_array_size(eg), FW_POLICY_MAX_RULES);
			ret = -EINVAL;
			goto cleanup;
		}
		json_array_foreach(eg, i, r)
		{
			ret = policy_rule_from_json(&tmp, i, r, err, errlen);
			if (ret)
				goto cleanup;
		}
	}
	*p = tmp;
	fw_policy_init(&tmp);
cleanup:
	fw_policy_free(&tmp);
	json_decref(root);
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
