// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Sandbox Actions envelope. Parsing is
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

#include "common/addr.h"
#include "common/json.h"
#include "common/jtree.h"
#include "protocol/envelope.h"

/* longest piece of a client's value echoed in a reason */
#define ECHO_MAX 64

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

static int get_object(const struct fw_jtree *t, const struct fw_jval *parent, const char *key,
		      const char *field, const struct fw_jval **out, char *reason, size_t rlen)
{
	const struct fw_jval *v = fw_jget(t, parent, key);

	*out = NULL;
	if (!v || fw_jis(v, FW_J_NULL))
		return 0;
	if (!fw_jis(v, FW_J_OBJECT)) {
		fw_set_reason(reason, rlen, "%s must be an object", field);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* A string into a fixed buffer of FW_ENV_STR bytes. The reader has
 * already refused "\u0000", so the length is strlen's. */
static int get_str(const struct fw_jtree *t, const struct fw_jval *parent, const char *key,
		   const char *field, char *out, size_t outlen, char *reason, size_t rlen)
{
	const struct fw_jval *v = fw_jget(t, parent, key);

	out[0] = '\0';
	if (!v || fw_jis(v, FW_J_NULL))
		return 0;
	if (!fw_jis(v, FW_J_STRING)) {
		fw_set_reason(reason, rlen, "%s must be a string", field);
		return -EINVAL;
	}
	if (v->n >= outlen) {
		fw_set_reason(reason, rlen, "%s too long", field);
		return -EINVAL;
	}
	memcpy(out, fw_jstr(t, v), v->n + 1);
	return 0;
}

static int get_gen(const struct fw_jtree *t, const struct fw_jval *parent, const char *key,
		   const char *field, __u64 *out, char *reason, size_t rlen)
{
	const struct fw_jval *v = fw_jget(t, parent, key);

	*out = 0;
	if (!v || fw_jis(v, FW_J_NULL))
		return 0;
	/* the reader refuses integers beyond int64 as malformed JSON; a real
	 * such as 4.0 or 1e3 is not an integer to Go's uint64 either */
	if (!fw_jis(v, FW_J_INT) || v->i < 0) {
		fw_set_reason(reason, rlen, "%s must be a non-negative integer", field);
		return -EINVAL;
	}
	*out = (__u64)v->i;
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
	const struct fw_jval *binding;
	const struct fw_jval *hook;
	char hook_name[WORD_MAX];
};

static int get_word(const struct fw_jtree *t, const struct fw_jval *parent, const char *key,
		    const char *field, char *out, char *reason, size_t rlen)
{
	const struct fw_jval *v = fw_jget(t, parent, key);
	size_t n;

	out[0] = '\0';
	if (!v || fw_jis(v, FW_J_NULL))
		return 0;
	if (!fw_jis(v, FW_J_STRING)) {
		fw_set_reason(reason, rlen, "%s must be a string", field);
		return -EINVAL;
	}
	n = v->n;
	if (n >= WORD_MAX)
		n = WORD_MAX - 1;
	memcpy(out, fw_jstr(t, v), n);
	out[n] = '\0';
	return 0;
}

static int decode(const struct fw_jtree *t, struct fw_envelope *env, struct raw_envelope *raw,
		  char *reason, size_t rlen)
{
	const struct fw_jval *root = fw_jroot(t), *sandbox, *revision, *attachment, *network;
	int err;

#define TRY(x)                                                                                     \
	do {                                                                                       \
		err = (x);                                                                         \
		if (err)                                                                           \
			return err;                                                                \
	} while (0)
	TRY(get_word(t, root, "apiVersion", "apiVersion", raw->api_version, reason, rlen));
	TRY(get_word(t, root, "operation", "operation", raw->operation, reason, rlen));
	TRY(get_str(t, root, "invocationId", "invocationId", env->invocation_id, FW_ENV_STR, reason,
		    rlen));

	TRY(get_object(t, root, "sandbox", "sandbox", &sandbox, reason, rlen));
	TRY(get_str(t, sandbox, "uid", "sandbox.uid", env->uid, FW_ENV_STR, reason, rlen));
	TRY(get_str(t, sandbox, "name", "sandbox.name", env->name, FW_ENV_STR, reason, rlen));
	TRY(get_str(t, sandbox, "namespace", "sandbox.namespace", env->ns, FW_ENV_STR, reason,
		    rlen));

	TRY(get_object(t, root, "revision", "revision", &revision, reason, rlen));
	TRY(get_gen(t, revision, "specGeneration", "revision.specGeneration", &env->spec_generation,
		    reason, rlen));
	TRY(get_str(t, revision, "runtimeInstanceId", "revision.runtimeInstanceId",
		    env->runtime_instance_id, FW_ENV_STR, reason, rlen));
	TRY(get_str(t, revision, "attachmentId", "revision.attachmentId", env->attachment_id,
		    FW_ENV_STR, reason, rlen));
	TRY(get_gen(t, revision, "routeGeneration", "revision.routeGeneration",
		    &env->route_generation, reason, rlen));

	TRY(get_object(t, root, "attachment", "attachment", &attachment, reason, rlen));
	TRY(get_object(t, attachment, "network", "attachment.network", &network, reason, rlen));
	TRY(get_str(t, network, "ip", "attachment.network.ip", raw->ip, FW_ENV_STR, reason, rlen));
	TRY(get_str(t, network, "gateway", "attachment.network.gateway", raw->gateway, FW_ENV_STR,
		    reason, rlen));
	TRY(get_str(t, network, "privateCidr", "attachment.network.privateCidr", raw->private_cidr,
		    FW_ENV_STR, reason, rlen));
	TRY(get_str(t, network, "hostVeth", "attachment.network.hostVeth", env->host_veth,
		    FW_ENV_STR, reason, rlen));

	/* binding.input is checked by the SET_BINDING step, where the
	 * protocol puts "a string or null" */
	TRY(get_object(t, root, "binding", "binding", &raw->binding, reason, rlen));

	TRY(get_object(t, root, "hook", "hook", &raw->hook, reason, rlen));
	TRY(get_word(t, raw->hook, "name", "hook.name", raw->hook_name, reason, rlen));
	TRY(get_gen(t, raw->hook, "sequence", "hook.sequence", &env->hook_sequence, reason, rlen));
#undef TRY
	return 0;
}

static int check_ip(const char *s, struct fw_envelope *env, char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];

	if (fw_addr_parse(s, &env->ip, &env->ip_family)) {
		fw_set_reason(reason, rlen, "invalid attachment.network.ip \"%s\"", echo(s, e));
		return -EINVAL;
	}
	env->has_ip = true;
	return 0;
}

static int check_set_binding(const struct fw_jtree *t, struct fw_envelope *env,
			     struct raw_envelope *raw, char *reason, size_t rlen)
{
	const struct fw_jval *in;

	if (!raw->binding) {
		fw_set_reason(reason, rlen, "binding is required");
		return -EINVAL;
	}
	env->has_binding = true;
	in = fw_jget(t, raw->binding, "input");
	if (!in) {
		fw_set_reason(reason, rlen, "binding.input is required");
		return -EINVAL;
	}
	if (fw_jis(in, FW_J_NULL)) {
		env->input_null = true;
		return 0;
	}
	if (!fw_jis(in, FW_J_STRING)) {
		fw_set_reason(reason, rlen, "binding.input must be a string or null");
		return -EINVAL;
	}
	if (!raw->ip[0]) {
		fw_set_reason(reason, rlen, "attachment.network.ip is required");
		return -EINVAL;
	}
	if (check_ip(raw->ip, env, reason, rlen))
		return -EINVAL;
	if (!env->host_veth[0]) {
		fw_set_reason(reason, rlen, "attachment.network.hostVeth is required");
		return -EINVAL;
	}
	/* copied last: every error above leaves nothing allocated */
	env->input_len = in->n;
	env->input = malloc(env->input_len + 1);
	if (!env->input) {
		fw_set_reason(reason, rlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(env->input, fw_jstr(t, in), env->input_len + 1);
	return 0;
}

static int check_hook(struct fw_envelope *env, struct raw_envelope *raw, char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];

	if (!raw->hook) {
		fw_set_reason(reason, rlen, "hook is required");
		return -EINVAL;
	}
	if (!raw->hook_name[0]) {
		fw_set_reason(reason, rlen, "hook.name is required");
		return -EINVAL;
	}
	if (strcmp(raw->hook_name, "sandbox.runtime-ready") == 0) {
		env->hook = FW_HOOK_RUNTIME_READY;
	} else if (strcmp(raw->hook_name, "sandbox.data-plane-ready") == 0) {
		env->hook = FW_HOOK_DATA_PLANE_READY;
	} else {
		fw_set_reason(reason, rlen, "unknown hook \"%s\"", echo(raw->hook_name, e));
		return -EINVAL;
	}
	return 0;
}

static int validate(const struct fw_jtree *t, struct fw_envelope *env, struct raw_envelope *raw,
		    char *reason, size_t rlen)
{
	char e[ECHO_MAX + 4];
	int err;

	/* 1 */
	if (strcmp(raw->api_version, FW_API_VERSION) != 0) {
		fw_set_reason(reason, rlen, "unsupported apiVersion \"%s\"",
			      echo(raw->api_version, e));
		return -EINVAL;
	}
	/* 2 */
	if (!env->uid[0]) {
		fw_set_reason(reason, rlen, "sandbox.uid is required");
		return -EINVAL;
	}
	/* a uid names the subject in logs, the CLI and metrics: a newline
	 * or a terminal escape in it has no business there */
	for (const unsigned char *c = (const unsigned char *)env->uid; *c; c++) {
		if (*c < 0x20 || *c == 0x7f) {
			fw_set_reason(reason, rlen,
				      "sandbox.uid must not contain control characters");
			return -EINVAL;
		}
	}
	/* 3 */
	if (strcmp(raw->operation, "SET_BINDING") == 0) {
		env->op = FW_OP_SET_BINDING;
		err = check_set_binding(t, env, raw, reason, rlen);
	} else if (strcmp(raw->operation, "LIFECYCLE_HOOK") == 0) {
		env->op = FW_OP_LIFECYCLE_HOOK;
		err = check_hook(env, raw, reason, rlen);
	} else if (strcmp(raw->operation, "REMOVE_BINDING") == 0) {
		env->op = FW_OP_REMOVE_BINDING;
		err = 0;
	} else {
		fw_set_reason(reason, rlen, "unknown operation \"%s\"", echo(raw->operation, e));
		err = -EINVAL;
	}
	if (err)
		return err;
	/* 4 */
	if (!env->runtime_instance_id[0]) {
		fw_set_reason(reason, rlen, "revision.runtimeInstanceId is required");
		return -EINVAL;
	}
	if (!env->attachment_id[0]) {
		fw_set_reason(reason, rlen, "revision.attachmentId is required");
		return -EINVAL;
	}
	/* then every address that was given must parse, whatever the
	 * operation: a bad one is a 400, not a silent "absent" */
	if (raw->ip[0] && !env->has_ip && check_ip(raw->ip, env, reason, rlen))
		return -EINVAL;
	if (raw->gateway[0]) {
		if (fw_addr_parse(raw->gateway, &env->gateway, NULL)) {
			fw_set_reason(reason, rlen, "invalid attachment.network.gateway \"%s\"",
				      echo(raw->gateway, e));
			return -EINVAL;
		}
		env->has_gateway = true;
	}
	if (raw->private_cidr[0]) {
		if (fw_prefix_parse(raw->private_cidr, &env->private_cidr.net,
				    &env->private_cidr.plen, NULL)) {
			fw_set_reason(reason, rlen, "invalid attachment.network.privateCidr \"%s\"",
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
	struct fw_jtree t;
	char why[128];
	int err;

	memset(env, 0, sizeof(*env));
	memset(&raw, 0, sizeof(raw));
	if (len > FW_ENV_BODY_MAX) {
		fw_set_reason(reason, reason_len, "request body too large");
		return -E2BIG;
	}
	if (!body) {
		body = "";
		len = 0;
	}
	/* bytes after the object are an error; "\u0000" in a string is an
	 * error; the last of duplicate keys wins, as in Go */
	err = fw_jtree_parse(&t, body, len, why, sizeof(why));
	if (err) {
		fw_set_reason(reason, reason_len, "%s%s",
			      err == -ENOMEM ? "" : "malformed JSON: ", why);
		return err;
	}
	if (!fw_jis(fw_jroot(&t), FW_J_OBJECT)) {
		fw_set_reason(reason, reason_len, "body must be a JSON object");
		err = -EINVAL;
		goto cleanup;
	}
	err = decode(&t, env, &raw, reason, reason_len);
	if (!err)
		err = validate(&t, env, &raw, reason, reason_len);
cleanup:
	fw_jtree_free(&t);
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
