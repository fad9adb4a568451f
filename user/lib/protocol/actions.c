// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Sandbox Actions handler. See actions.h, and docs/protocol.md for
 * the contract (the actions protocol and the credential push) this follows
 * to the status code. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "protocol/actions.h"
#include "common/addr.h"
#include "common/json.h"
#include "protocol/envelope.h"
#include "common/log.h"
#include "common/secmem.h"

#define ENFORCEMENT_MODE "ebpf"

/* The protocol's view of one subject, hung on its registry entry. */
struct fw_proto {
	char rt[FW_ENV_STR];  /* fence: runtimeInstanceId */
	char att[FW_ENV_STR]; /* fence: attachmentId */
	__u64 spec_generation;
	bool has_pending;
	struct fw_policy pending;	/* parsed SET_BINDING input, while denying */
	struct fw_policy current;	/* in force while active */
	struct fw_subject_spec binding; /* addresses etc.; .policy unused */
};

void fw_reply_free(struct fw_reply *r)
{
	if (r->secret)
		fw_secmem_free(r->body);
	else
		free(r->body);
	r->body = NULL;
	r->len = 0;
}

static void reply_text(struct fw_reply *out, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Errors as the reference's Go handler writes them: text, one line. */
static void reply_text(struct fw_reply *out, int status, const char *fmt, ...)
{
	va_list ap;
	int n;

	out->status = status;
	out->content_type = "text/plain; charset=utf-8";
	va_start(ap, fmt);
	n = vasprintf(&out->body, fmt, ap);
	va_end(ap);
	if (n < 0) {
		out->body = NULL;
		out->len = 0;
		return;
	}
	/* http.Error ends the body with a newline */
	out->body = realloc(out->body, (size_t)n + 2) ?: out->body;
	out->body[n] = '\n';
	out->body[n + 1] = '\0';
	out->len = (size_t)n + 1;
}

/* Takes ownership of j. */
static void reply_json(struct fw_reply *out, int status, json_t *j)
{
	out->status = status;
	out->content_type = "application/json";
	out->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!out->body) {
		reply_text(out, 500, "out of memory");
		return;
	}
	out->len = strlen(out->body);
}

static void reply_empty_json(struct fw_reply *out, int status)
{
	reply_json(out, status, json_object());
}

/* --- subjects ------------------------------------------------------------ */

static struct fw_proto *proto_of(struct fw_entry *e)
{
	struct fw_proto *p = e->priv;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		fw_policy_init(&p->pending);
		fw_policy_init(&p->current);
		e->priv = p;
	}
	return p;
}

static void proto_destroy(void *priv)
{
	struct fw_proto *p = priv;

	fw_policy_free(&p->pending);
	fw_policy_free(&p->current);
	free(p);
}

static void proto_free(struct fw_entry *e)
{
	if (!e->priv)
		return;
	proto_destroy(e->priv);
	e->priv = NULL;
}

static const char *mode_of(const struct fw_policy *p)
{
	if (p->nrules)
		return "enforcing";
	return p->default_action == FW_ACTION_ALLOW ? "allow_all" : "deny_all";
}

/* Builds the binding of env; -EINVAL with reason when it cannot be one. */
static int binding_from_env(const struct fw_actions *a, const struct fw_envelope *env,
			    struct fw_subject_spec *b, char *reason, size_t rlen)
{
	enum fw_family fam;

	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", env->uid);
	if (env->has_ip) {
		b->addrs[0] = env->ip;
		b->naddrs = 1;
	}
	if (a->bind_host_veth && env->host_veth[0]) {
		if (strlen(env->host_veth) >= sizeof(b->ifname)) {
			snprintf(reason, rlen, "attachment.network.hostVeth \"%s\" is too long",
				 env->host_veth);
			return -EINVAL;
		}
		snprintf(b->ifname, sizeof(b->ifname), "%s", env->host_veth);
	}
	if (env->has_gateway) {
		fam = fw_addr_family(&env->gateway);
		if (env->has_ip && fam != env->ip_family) {
			snprintf(reason, rlen,
				 "attachment.network.gateway is not of the family of the ip");
			return -EINVAL;
		}
		b->has_gateway[fam] = true;
		b->gateway[fam] = env->gateway;
	}
	if (env->has_private_cidr) {
		fam = fw_addr_family(&env->private_cidr.net);
		if (env->private_cidr.plen < FW_V4_PREFIX_BASE)
			fam = FW_FAM_V6;
		if (env->has_ip && fam != env->ip_family) {
			snprintf(reason, rlen,
				 "attachment.network.privateCidr is not of the family of the ip");
			return -EINVAL;
		}
		b->has_private[fam] = true;
		b->private_net[fam] = env->private_cidr;
	}
	return 0;
}

/* Writes binding b with policy pol and state to the kernel. */
static int program(struct fw_actions *a, struct fw_entry *e, const struct fw_subject_spec *b,
		   const struct fw_policy *pol, __u8 state, __u64 fence)
{
	struct fw_subject_spec spec = *b;
	int err;

	spec.state = state;
	spec.policy = *pol; /* shallow: borrowed for the call */
	err = fw_reg_apply(a->reg, e, &spec, FW_ORIGIN_ACTIONS, fence, NULL);
	memset(&spec.policy, 0, sizeof(spec.policy));
	return err;
}

static __u8 state_of(const struct fw_entry *e)
{
	return e->id ? e->ksub.state : FW_STATE_ABSENT;
}

/* --- pushes -------------------------------------------------------------- */

/* Header rules of credential-push.md; returns the trimmed uid in buf. */
static bool valid_uid_header(const char *raw, char *buf, size_t len)
{
	const char *s = raw, *end;
	size_t n;

	if (!s)
		return false;
	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	n = (size_t)(end - s);
	if (n == 0 || n > FW_UID_MAX || n >= len)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == '\\' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

/* A value that does not parse is ignored (FW_PENDING_NO_GEN). */
static long long parse_generation(const char *raw)
{
	unsigned long long v = 0;

	if (!raw)
		return FW_PENDING_NO_GEN;
	while (*raw == ' ')
		raw++;
	if (!*raw)
		return FW_PENDING_NO_GEN;
	for (const char *p = raw; *p && *p != ' '; p++) {
		if (*p < '0' || *p > '9' || v > (unsigned long long)(INT64_MAX / 10))
			return FW_PENDING_NO_GEN;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	return v > (unsigned long long)INT64_MAX ? FW_PENDING_NO_GEN : (long long)v;
}

static bool blank(const char *body, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (body[i] != ' ' && body[i] != '\t' && body[i] != '\r' && body[i] != '\n')
			return false;
	return true;
}

/* DELETE /policy body: ["t1","t2"] or {"targets":["t1",...]}. */
static int parse_targets(const char *body, size_t len, char ***out, size_t *n, char *err,
			 size_t errlen)
{
	json_error_t jerr;
	json_t *root, *arr;
	size_t i;
	json_t *v;

	*out = NULL;
	*n = 0;
	root = json_loadb(body, len, 0, &jerr);
	if (!root) {
		char why[128];

		snprintf(err, errlen, "malformed JSON: %s", fw_json_error(&jerr, why, sizeof(why)));
		return -EINVAL;
	}
	arr = json_is_object(root) ? json_object_get(root, "targets") : root;
	if (!json_is_array(arr) || json_array_size(arr) > FW_POLICY_MAX_RULES) {
		snprintf(err, errlen, "expected a list of targets");
		json_decref(root);
		return -EINVAL;
	}
	*out = calloc(json_array_size(arr) + 1, sizeof(char *));
	if (!*out) {
		json_decref(root);
		return -ENOMEM;
	}
	json_array_foreach(arr, i, v)
	{
		const char *t = json_string_value(v);

		if (!t) {
			snprintf(err, errlen, "targets[%zu] must be a string", i);
			goto bad;
		}
		(*out)[(*n)++] = strdup(t);
		if (!(*out)[*n - 1])
			goto bad;
	}
	json_decref(root);
	return 0;
bad:
	for (size_t k = 0; k < *n; k++)
		free((*out)[k]);
	free(*out);
	*out = NULL;
	*n = 0;
	json_decref(root);
	return -EINVAL;
}

/* The new policy a push asks for, from the current one. */
static int pushed_policy(const char *method, const struct fw_policy *cur, const char *body,
			 size_t len, struct fw_policy *out, char *err, size_t errlen, char *warn,
			 size_t warnlen)
{
	struct fw_policy patch;
	char **targets;
	size_t n;
	int ret;

	fw_policy_init(out);
	if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
		if (blank(body, len))
			return 0; /* empty body: back to default deny */
		return fw_policy_from_json_warn(body, len, out, err, errlen, warn, warnlen);
	}
	ret = fw_policy_copy(out, cur);
	if (ret)
		return ret;
	if (!strcmp(method, "PATCH")) {
		fw_policy_init(&patch);
		ret = fw_policy_from_json_warn(body, len, &patch, err, errlen, warn, warnlen);
		if (!ret)
			ret = fw_policy_merge(out, &patch);
		fw_policy_free(&patch);
	} else {
		ret = parse_targets(body, len, &targets, &n, err, errlen);
		if (!ret) {
			ret = fw_policy_remove_targets(out, (const char *const *)targets, n);
			for (size_t i = 0; i < n; i++)
				free(targets[i]);
			free(targets);
		}
	}
	if (ret)
		fw_policy_free(out);
	return ret;
}

static void reply_policy_ok(struct fw_reply *out, const struct fw_policy *p)
{
	reply_json(out, 200,
		   json_pack("{s:s,s:s,s:s}", "status", "ok", "mode", mode_of(p), "enforcementMode",
			     ENFORCEMENT_MODE));
}

/* A policy push for a registered subject (entry lock held). */
static void policy_push_locked(struct fw_actions *a, struct fw_entry *e, const char *method,
			       long long gen, const char *body, size_t len, struct fw_reply *out)
{
	struct fw_proto *p = e->priv;
	struct fw_policy next;
	char err[512], warn[512] = "";
	int ret;

	if (state_of(e) != FW_STATE_ACTIVE || !p) {
		reply_json(out, 202,
			   json_pack("{s:s,s:s}", "status", "pending", "reason",
				     "subject denying; SET_BINDING input is authoritative"));
		return;
	}
	if (gen != FW_PENDING_NO_GEN && (__u64)gen != p->spec_generation) {
		reply_text(out, 409,
			   "generation %lld does not match the binding's %llu; push discarded", gen,
			   (unsigned long long)p->spec_generation);
		return;
	}
	ret = pushed_policy(method, &p->current, body, len, &next, err, sizeof(err), warn,
			    sizeof(warn));
	if (ret == -EINVAL) {
		reply_text(out, 400, "invalid policy: %s", err);
		return;
	}
	if (ret) {
		reply_text(out, ret == -E2BIG ? 400 : 500, "invalid policy: %s", strerror(-ret));
		return;
	}
	ret = program(a, e, &p->binding, &next, FW_STATE_ACTIVE, e->meta.fence_hash);
	if (ret) {
		fw_policy_free(&next);
		reply_text(out, 500, "data plane: %s", strerror(-ret));
		return;
	}
	fw_policy_free(&p->current);
	p->current = next;
	fw_info("subject %s: policy %s (%zu rules, %s)", e->meta.name, method, next.nrules,
		mode_of(&next));
	if (warn[0])
		fw_warn("subject %s: policy %s: %s", e->meta.name, method, warn);
	reply_policy_ok(out, &next);
}

static const struct fw_policy *vault_policy(const struct fw_entry *e)
{
	const struct fw_proto *p = e->priv;

	if (!p)
		return e->run_policy; /* a process sandbox's, or none */
	return state_of(e) == FW_STATE_ACTIVE ? &p->current : &p->pending;
}

/* The layer-7 proxy's copy follows (entry lock held). */
static void vault_changed(struct fw_actions *a, struct fw_entry *e)
{
	if (a->on_vault)
		a->on_vault(a->vault_ctx, e->meta.name, e->id);
}

/* A vault push for a registered subject (entry lock held). */
static void vault_push_locked(struct fw_actions *a, struct fw_entry *e, const char *method,
			      long long gen, const char *body, size_t len, struct fw_reply *out)
{
	const struct fw_proto *p = e->priv;
	struct fw_vault *v = NULL;
	char err[512];
	int ret;

	if (gen != FW_PENDING_NO_GEN && p && (__u64)gen != p->spec_generation) {
		reply_text(out, 409,
			   "generation %lld does not match the binding's %llu; push discarded", gen,
			   (unsigned long long)p->spec_generation);
		return;
	}
	if (!strcmp(method, "DELETE")) {
		ret = fw_vault_store_del(a->vaults, e->meta.name);
		if (ret && ret != -ENOENT) {
			reply_text(out, 500, "vault: %s", strerror(-ret));
			return;
		}
		if (!ret)
			vault_changed(a, e);
		out->status = 204;
		return;
	}
	ret = fw_vault_parse(body, len, vault_policy(e),
			     !strcmp(method, "PATCH") ? FW_VAULT_PARSE_PATCH : 0, &v, err,
			     sizeof(err));
	if (ret) {
		reply_text(out, 400, "invalid credential vault: %s",
			   ret == -EINVAL ? err : strerror(-ret));
		return;
	}
	if (!strcmp(method, "PATCH")) {
		ret = fw_vault_store_patch(a->vaults, e->meta.name, v, err, sizeof(err));
	} else {
		ret = fw_vault_store_check_l7(a->vaults, v, err, sizeof(err));
		if (ret)
			fw_vault_free(v);
		else
			ret = fw_vault_store_put(a->vaults, e->meta.name, v);
	}
	if (ret) {
		reply_text(out, ret == -EINVAL ? 400 : 500, "invalid credential vault: %s",
			   ret == -EINVAL ? err : strerror(-ret));
		return;
	}
	vault_changed(a, e);
	fw_info("subject %s: credential vault %s", e->meta.name,
		!strcmp(method, "PATCH") ? "patched" : "replaced");
	out->status = strcmp(method, "PATCH") ? 201 : 200;
}

struct flush_ctx {
	struct fw_actions *a;
	struct fw_entry *e;
};

static void flush_one(const struct fw_push *push, void *arg)
{
	struct flush_ctx *fc = arg;
	struct fw_reply r = {};

	/* A cached policy push meets the subject as a live one would: a
	 * denying subject answers it 202 and keeps the binding input, which
	 * is authoritative, so the vault pushes after it are checked
	 * against the binding's own policy. */
	if (push->kind == FW_PUSH_POLICY && !fc->e->priv) {
		fw_info("subject %s: cached policy push %s dropped: a process sandbox's policy "
			"is the one it was started with",
			push->uid, push->method);
		return;
	}
	if (push->kind == FW_PUSH_POLICY) {
		policy_push_locked(fc->a, fc->e, push->method, push->generation, push->body,
				   push->len, &r);
	} else {
		vault_push_locked(fc->a, fc->e, push->method, push->generation, push->body,
				  push->len, &r);
	}
	fw_info("subject %s: cached %s push %s %s (%d)", push->uid,
		push->kind == FW_PUSH_POLICY ? "policy" : "vault", push->method,
		r.status == 202	 ? "not stored: the binding input is authoritative"
		: r.status < 300 ? "applied"
				 : "dropped",
		r.status);
	fw_reply_free(&r);
}

/* --- the envelope operations --------------------------------------------- */

static void set_binding(struct fw_actions *a, struct fw_envelope *env, struct fw_reply *out)
{
	struct fw_subject_spec b;
	struct fw_policy pol;
	struct fw_entry *e;
	struct fw_proto *p;
	char reason[512], warn[512] = "";
	__u64 fence;
	bool same_fence;
	int err;

	/* 1. the policy first: invalid means nothing registered or changed */
	fw_policy_init(&pol);
	if (!env->input_null && fw_policy_from_json_warn(env->input, env->input_len, &pol, reason,
							 sizeof(reason), warn, sizeof(warn))) {
		reply_text(out, 400, "invalid action envelope: invalid binding.input: %s", reason);
		return;
	}
	if (warn[0])
		fw_warn("subject %s: binding input: %s", env->uid, warn);
	if (binding_from_env(a, env, &b, reason, sizeof(reason))) {
		fw_policy_free(&pol);
		reply_text(out, 400, "invalid action envelope: %s", reason);
		return;
	}

	e = fw_reg_get(a->reg, env->uid, true);
	if (!e) {
		fw_policy_free(&pol);
		reply_text(out, 500, "out of memory");
		return;
	}
	if (e->id && e->meta.origin == FW_ORIGIN_STATIC) {
		reply_text(out, 409, "sandbox.uid %s names a static subject", env->uid);
		goto out;
	}
	/* the static configuration owns its addresses: a binding never takes
	 * one over (nor would the static subject get it back on removal) */
	for (size_t i = 0; i < b.naddrs; i++) {
		char owner[FW_NAME_LEN], ip[FW_ADDR_STRLEN];
		enum fw_origin origin;

		if (fw_reg_addr_owner(a->reg, &b.addrs[i], owner, sizeof(owner), &origin) == 0 &&
		    origin == FW_ORIGIN_STATIC) {
			reply_text(out, 409, "address %s belongs to static subject %s",
				   fw_addr_str(&b.addrs[i], ip, sizeof(ip)), owner);
			fw_policy_free(&pol);
			goto out;
		}
	}
	p = proto_of(e);
	if (!p) {
		reply_text(out, 500, "out of memory");
		goto out;
	}
	fence = fw_fence_hash(env->runtime_instance_id, env->attachment_id);
	same_fence = e->id && e->meta.fence_hash == fence;

	/* 2. deny-first for a new subject or a new fence (a rebind drops all
	 * policy and learned addresses: the registry gives it a fresh id) */
	if (!same_fence && b.naddrs) {
		struct fw_policy none;

		fw_policy_init(&none);
		err = program(a, e, &b, &none, FW_STATE_DENYING, fence);
		if (err) {
			reply_text(out, 500, "data plane: %s", strerror(-err));
			goto out;
		}
		p->has_pending = false;
		fw_policy_free(&p->current);
		fw_policy_init(&p->current);
	} else if (same_fence && b.naddrs && e->adopted && state_of(e) != FW_STATE_ACTIVE) {
		/* a denying subject adopted after a restart, replayed: confirm
		 * it (an active one is confirmed by step 4's apply below) */
		struct fw_policy none;

		fw_policy_init(&none);
		err = program(a, e, &b, &none, FW_STATE_DENYING, fence);
		if (err) {
			reply_text(out, 500, "data plane: %s", strerror(-err));
			goto out;
		}
	} else if (same_fence && b.naddrs && fw_binding_hash(&b) != fw_binding_hash(&p->binding) &&
		   p->binding.naddrs) {
		/* same fence, new address or network: move dispatch in place */
		err = program(a, e, &b, state_of(e) == FW_STATE_ACTIVE ? &p->current : &p->pending,
			      state_of(e), fence);
		if (err) {
			reply_text(out, 500, "data plane: %s", strerror(-err));
			goto out;
		}
	}
	snprintf(p->rt, sizeof(p->rt), "%s", env->runtime_instance_id);
	snprintf(p->att, sizeof(p->att), "%s", env->attachment_id);
	p->spec_generation = env->spec_generation;
	if (b.naddrs) {
		p->binding = b;
		fw_vault_store_set_ip(a->vaults, env->uid, &b.addrs[0]);
	}

	if (env->input_null) {
		/* 3. the binding was removed from a live sandbox */
		fw_pending_drop(a->pending, env->uid);
		p->has_pending = false;
		fw_policy_free(&p->pending);
		fw_policy_init(&p->pending);
		if (state_of(e) == FW_STATE_ACTIVE) {
			struct fw_policy none;

			fw_policy_init(&none);
			err = program(a, e, &p->binding, &none, FW_STATE_DENYING, fence);
			if (err) {
				reply_text(out, 500, "data plane: %s", strerror(-err));
				goto out;
			}
			fw_policy_free(&p->current);
			fw_policy_init(&p->current);
			fw_info("subject %s: binding input removed, denying", env->uid);
		}
		reply_empty_json(out, 200);
		goto out;
	}

	if (state_of(e) == FW_STATE_ACTIVE) {
		/* 4. active: the new policy in place, atomically */
		err = program(a, e, &p->binding, &pol, FW_STATE_ACTIVE, fence);
		if (err) {
			reply_text(out, 500, "data plane: %s", strerror(-err));
			goto out;
		}
		fw_policy_free(&p->current);
		p->current = pol;
		fw_policy_init(&pol);
	} else {
		/* 5. denying: keep it for data-plane-ready */
		fw_policy_free(&p->pending);
		p->pending = pol;
		p->has_pending = true;
		fw_policy_init(&pol);
	}
	reply_empty_json(out, 200);

	/* 6. pushes that arrived before the binding */
	{
		struct flush_ctx fc = {a, e};

		fw_pending_take(a->pending, env->uid, (long long)env->spec_generation, flush_one,
				&fc);
	}
out:
	fw_policy_free(&pol);
	if (!e->id && e->priv && !((struct fw_proto *)e->priv)->binding.naddrs) {
		/* nothing was registered: no reason to keep protocol state */
		proto_free(e);
	}
	fw_reg_put(a->reg, e);
}

static void lifecycle_hook(struct fw_actions *a, struct fw_envelope *env, struct fw_reply *out)
{
	struct fw_entry *e = fw_reg_get(a->reg, env->uid, false);
	struct fw_proto *p;
	int err;

	if (!e || !e->id || e->meta.origin != FW_ORIGIN_ACTIONS) {
		reply_text(out, 409, "subject %s is not registered", env->uid);
		goto out;
	}
	if (e->meta.fence_hash != fw_fence_hash(env->runtime_instance_id, env->attachment_id)) {
		reply_text(out, 409, "stale hook: fence does not match subject %s", env->uid);
		goto out;
	}
	if (env->hook == FW_HOOK_RUNTIME_READY) {
		reply_empty_json(out, 200);
		goto out;
	}
	if (state_of(e) == FW_STATE_ACTIVE) {
		/* a duplicate: responses get lost, the Fastlet re-sends */
		reply_empty_json(out, 200);
		goto out;
	}
	p = e->priv;
	if (!p || !p->has_pending) {
		reply_text(out, 409, "subject %s has no pending policy", env->uid);
		goto out;
	}
	err = program(a, e, &p->binding, &p->pending, FW_STATE_ACTIVE, e->meta.fence_hash);
	if (err) {
		reply_text(out, 500, "data plane: %s", strerror(-err));
		goto out;
	}
	fw_policy_free(&p->current);
	p->current = p->pending;
	fw_policy_init(&p->pending);
	p->has_pending = false;
	fw_info("subject %s: active (%zu rules, %s)", env->uid, p->current.nrules,
		mode_of(&p->current));
	reply_empty_json(out, 200);
out:
	if (e)
		fw_reg_put(a->reg, e);
}

static void remove_binding(struct fw_actions *a, struct fw_envelope *env, struct fw_reply *out)
{
	struct fw_entry *e = fw_reg_get(a->reg, env->uid, false);
	int err;

	if (!e || (!e->id && !e->priv)) {
		fw_pending_drop(a->pending, env->uid);
		reply_empty_json(out, 200);
		goto out;
	}
	if (e->id && e->meta.origin != FW_ORIGIN_ACTIONS) {
		reply_empty_json(out, 200);
		goto out;
	}
	if (e->id &&
	    e->meta.fence_hash != fw_fence_hash(env->runtime_instance_id, env->attachment_id)) {
		/* a stale removal must not tear down the new binding */
		fw_info("subject %s: stale REMOVE_BINDING ignored", env->uid);
		reply_empty_json(out, 200);
		goto out;
	}
	err = fw_reg_unbind(a->reg, e);
	if (err) {
		reply_text(out, 500, "data plane: %s", strerror(-err));
		goto out;
	}
	proto_free(e);
	fw_pending_drop(a->pending, env->uid);
	fw_vault_store_clear_uid(a->vaults, env->uid);
	reply_empty_json(out, 200);
out:
	if (e)
		fw_reg_put(a->reg, e);
}

static const char *const op_names[FW_ACTIONS_OPS] = {
	[0] = "invalid",
	[FW_OP_SET_BINDING] = "SET_BINDING",
	[FW_OP_LIFECYCLE_HOOK] = "LIFECYCLE_HOOK",
	[FW_OP_REMOVE_BINDING] = "REMOVE_BINDING",
};

/* start: when the envelope arrived (fw_now_ns) */
static void op_count(struct fw_actions *a, unsigned int op, int status, __u64 start)
{
	__u64 d = fw_now_ns() - start;
	unsigned int b = fw_lat_bucket(d);

	if (op >= FW_ACTIONS_OPS)
		return;
	if (status > 0 && status < FW_ACTIONS_CODES)
		__atomic_add_fetch(&a->op_replies[op][status], 1, __ATOMIC_RELAXED);
	/* envelopes run on several listener threads at once: atomic adds,
	 * no lock */
	__atomic_add_fetch(&a->op_latency[op][b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->op_latency_sum_ns[op], d, __ATOMIC_RELAXED);
}

void fw_actions_op_latency(struct fw_actions *a,
			   void (*fn)(void *ctx, const char *op, const __u64 *counts, __u64 sum_ns),
			   void *ctx)
{
	for (unsigned int op = 0; op < FW_ACTIONS_OPS; op++) {
		__u64 c[FW_LAT_BUCKETS + 1];

		for (unsigned int b = 0; b <= FW_LAT_BUCKETS; b++)
			c[b] = __atomic_load_n(&a->op_latency[op][b], __ATOMIC_RELAXED);
		fn(ctx, op_names[op], c,
		   __atomic_load_n(&a->op_latency_sum_ns[op], __ATOMIC_RELAXED));
	}
}

void fw_actions_op_counts(struct fw_actions *a,
			  void (*fn)(void *ctx, const char *op, int code, __u64 n), void *ctx)
{
	for (unsigned int op = 0; op < FW_ACTIONS_OPS; op++)
		for (int code = 0; code < FW_ACTIONS_CODES; code++) {
			__u64 n = __atomic_load_n(&a->op_replies[op][code], __ATOMIC_RELAXED);

			if (n)
				fn(ctx, op_names[op], code, n);
		}
}

void fw_actions_post(struct fw_actions *a, const char *body, size_t len, struct fw_reply *out)
{
	struct fw_envelope env;
	__u64 start = fw_now_ns();
	char reason[512];
	int err;

	memset(out, 0, sizeof(*out));
	err = fw_envelope_parse(body, len, &env, reason, sizeof(reason));
	if (err) {
		reply_text(out, 400, "invalid action envelope: %s",
			   err == -EINVAL || err == -E2BIG ? reason : strerror(-err));
		op_count(a, 0, out->status, start);
		return;
	}
	if (strlen(env.uid) > FW_UID_MAX) {
		reply_text(out, 400, "invalid action envelope: sandbox.uid is longer than %d",
			   FW_UID_MAX);
		goto out;
	}
	switch (env.op) {
	case FW_OP_SET_BINDING:
		set_binding(a, &env, out);
		break;
	case FW_OP_LIFECYCLE_HOOK:
		lifecycle_hook(a, &env, out);
		break;
	case FW_OP_REMOVE_BINDING:
		remove_binding(a, &env, out);
		break;
	}
	fw_debug("actions: %s uid=%s invocation=%s -> %d",
		 env.op == FW_OP_SET_BINDING	  ? "SET_BINDING"
		 : env.op == FW_OP_LIFECYCLE_HOOK ? "LIFECYCLE_HOOK"
						  : "REMOVE_BINDING",
		 env.uid, env.invocation_id, out->status);
out:
	op_count(a, env.op, out->status, start);
	fw_envelope_free(&env);
}

/* --- status, pushes, the active vault ------------------------------------ */

void fw_actions_status(struct fw_actions *a, struct fw_reply *out)
{
	memset(out, 0, sizeof(*out));
	reply_json(out, 200,
		   json_pack("{s:s,s:b,s:s}", "apiVersion", FW_API_VERSION, "ready", 1,
			     "instanceId", a->instance_id));
}

static bool method_is(const char *m, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(m, *set))
			return true;
	return false;
}

/* What every push starts with: the method, then the uid header. */
static bool push_prologue(const char *method, const char *const *methods, const char *allow,
			  const char *uid_hdr, char uid[FW_UID_MAX + 1], struct fw_reply *out)
{
	memset(out, 0, sizeof(*out));
	if (!method_is(method, methods)) {
		out->allow = allow;
		reply_text(out, 405, "method not allowed");
		return false;
	}
	if (!valid_uid_header(uid_hdr, uid, FW_UID_MAX + 1)) {
		reply_text(out, 400, "missing or invalid X-Fast-Sandbox-Uid");
		return false;
	}
	return true;
}

/* A push for a uid with no binding yet is kept for the next SET_BINDING. */
static bool cache_push(struct fw_actions *a, const char *uid, enum fw_push_kind kind,
		       const char *method, const char *body, size_t len, long long gen,
		       struct fw_reply *out)
{
	int err = fw_pending_add(a->pending, uid, kind, method, body, len, gen);

	if (err)
		reply_text(out, err == -ENOSPC ? 503 : 400, "push not cached: %s", strerror(-err));
	return !err;
}

void fw_actions_policy(struct fw_actions *a, const char *method, const char *uid_hdr,
		       const char *gen_hdr, const char *body, size_t len, struct fw_reply *out)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", NULL};
	char uid[FW_UID_MAX + 1];
	long long gen = parse_generation(gen_hdr);
	struct fw_entry *e;

	if (!push_prologue(method, methods, "GET, POST, PUT, PATCH, DELETE", uid_hdr, uid, out))
		return;
	e = fw_reg_get(a->reg, uid, false);
	if (!strcmp(method, "GET")) {
		struct fw_proto *p = e ? e->priv : NULL;
		const struct fw_policy *pol;
		json_t *pj;
		char *s;

		if (!e || !e->id || !p) {
			reply_text(out, 404, "subject %s not found", uid);
			goto out;
		}
		pol = state_of(e) == FW_STATE_ACTIVE ? &p->current : &p->pending;
		s = fw_policy_to_json(pol);
		pj = s ? json_loads(s, 0, NULL) : NULL;
		free(s);
		reply_json(out, 200,
			   json_pack("{s:s,s:s,s:s,s:o*}", "mode", mode_of(pol), "enforcementMode",
				     ENFORCEMENT_MODE, "state",
				     state_of(e) == FW_STATE_ACTIVE ? "active" : "denying",
				     "policy", pj));
		goto out;
	}
	if (!e || !e->id || !e->priv) {
		if (!cache_push(a, uid, FW_PUSH_POLICY, method, body, len, gen, out))
			goto out;
		reply_json(out, 202,
			   json_pack("{s:s,s:s}", "status", "pending", "reason",
				     "subject not registered yet; push cached"));
		goto out;
	}
	policy_push_locked(a, e, method, gen, body, len, out);
out:
	if (e)
		fw_reg_put(a->reg, e);
}

void fw_actions_vault(struct fw_actions *a, const char *method, const char *uid_hdr,
		      const char *gen_hdr, const char *body, size_t len, struct fw_reply *out)
{
	static const char *const methods[] = {"GET", "POST", "PATCH", "DELETE", NULL};
	char uid[FW_UID_MAX + 1];
	long long gen = parse_generation(gen_hdr);
	struct fw_entry *e;
	int err;

	if (!push_prologue(method, methods, "GET, POST, PATCH, DELETE", uid_hdr, uid, out))
		return;
	e = fw_reg_get(a->reg, uid, false);
	if (!strcmp(method, "GET")) {
		char *json = NULL;

		err = e && e->id ? fw_vault_store_get_redacted_json(a->vaults, uid, &json)
				 : -ENOENT;
		if (err) {
			reply_text(out, 404, "no credential vault for subject %s", uid);
			goto out;
		}
		out->status = 200;
		out->content_type = "application/json";
		out->body = json;
		out->len = strlen(json);
		goto out;
	}
	if (e && e->id && !e->priv && e->meta.origin == FW_ORIGIN_PROCESS) {
		/* a process sandbox: root's runs take vaults (run_policy) */
		if (!e->run_policy) {
			reply_text(out, 403,
				   "subject %s is a process sandbox that takes no credential vault "
				   "(started by a user other than root, or before fastwalld "
				   "restarted)",
				   uid);
			goto out;
		}
		vault_push_locked(a, e, method, gen, body, len, out);
		goto out;
	}
	if (!e || !e->id || !e->priv) {
		if (cache_push(a, uid, FW_PUSH_VAULT, method, body, len, gen, out))
			out->status = 202;
		goto out;
	}
	vault_push_locked(a, e, method, gen, body, len, out);
out:
	if (e)
		fw_reg_put(a->reg, e);
}

void fw_actions_run_added(struct fw_actions *a, struct fw_entry *e)
{
	struct flush_ctx fc = {a, e};

	if (a->pending)
		fw_pending_take(a->pending, e->meta.name, FW_PENDING_NO_GEN, flush_one, &fc);
}

void fw_actions_vault_active(struct fw_actions *a, const char *client_ip, const char *if_none_match,
			     struct fw_reply *out)
{
	struct fw_ip ip;
	char *json = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	if (!client_ip || !*client_ip || fw_addr_parse(client_ip, &ip, NULL)) {
		reply_text(out, 400, "missing or malformed clientIp");
		return;
	}
	{
		/* served only while the vault's subject owns the address: a
		 * static subject may have taken it over on a reload */
		char owner[FW_NAME_LEN];
		enum fw_origin origin;

		err = fw_reg_addr_owner(a->reg, &ip, owner, sizeof(owner), &origin);
		if (!err && origin != FW_ORIGIN_ACTIONS)
			err = -ENOENT;
		if (!err)
			err = fw_vault_store_active_for(a->vaults, &ip, owner, &json, out->etag);
	}
	if (err) {
		reply_text(out, 404, "no credential vault for %s", client_ip);
		return;
	}
	if (if_none_match && !strcmp(if_none_match, out->etag)) {
		fw_secmem_free(json);
		out->status = 304;
		return;
	}
	out->status = 200;
	out->content_type = "application/json";
	out->body = json;
	out->len = strlen(json);
	out->secret = true;
}

void fw_actions_set_l7_ca(struct fw_actions *a, char *pem, size_t len)
{
	a->l7_ca_len = len;
	free(__atomic_exchange_n(&a->l7_ca, pem, __ATOMIC_ACQ_REL));
}

void fw_actions_l7_ca(struct fw_actions *a, struct fw_reply *out)
{
	const char *pem = __atomic_load_n(&a->l7_ca, __ATOMIC_ACQUIRE);

	memset(out, 0, sizeof(*out));
	if (!pem) {
		reply_text(out, 404, "layer-7 credential injection is off: no CA");
		return;
	}
	out->body = malloc(a->l7_ca_len + 1);
	if (!out->body) {
		reply_text(out, 500, "out of memory");
		return;
	}
	memcpy(out->body, pem, a->l7_ca_len + 1);
	out->len = a->l7_ca_len;
	out->status = 200;
	out->content_type = "application/x-pem-file";
}

/* --- life of the handler ------------------------------------------------- */

int fw_actions_init(struct fw_actions *a, struct fw_registry *reg,
		    const struct fw_actions_opts *opts)
{
	unsigned char rnd[6];
	int n;

	memset(a, 0, sizeof(*a));
	a->reg = reg;
	reg->priv_free = proto_destroy;
	a->restart_wipe = opts->restart_wipe;
	a->bind_host_veth = opts->bind_host_veth;
	a->grace_ns = opts->grace_ns;
	a->started_ns = fw_now_ns();
	a->last_sweep_ns = a->started_ns;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	n = snprintf(a->instance_id, sizeof(a->instance_id), "fastwall-%d-", (int)getpid());
	for (size_t i = 0; i < sizeof(rnd); i++)
		n += snprintf(a->instance_id + n, sizeof(a->instance_id) - (size_t)n, "%02x",
			      rnd[i]);
	a->vaults = fw_vault_store_new();
	a->pending = fw_pending_new(opts->pending_ttl_ns / 1000000ull, NULL);
	if (!a->vaults || !a->pending) {
		fw_actions_fini(a);
		return -ENOMEM;
	}
	if (a->restart_wipe) {
		int removed = fw_reg_prune_adopted(reg, FW_ORIGIN_ACTIONS);

		if (removed > 0)
			fw_info("restart: wipe: removed %d subjects; waiting for the replay",
				removed);
		a->grace_over = true;
	}
	fw_info("actions handler: instance %s, restart %s, grace %llus", a->instance_id,
		a->restart_wipe ? "wipe" : "keep",
		(unsigned long long)(a->grace_ns / FW_NSEC_PER_SEC));
	return 0;
}

void fw_actions_fini(struct fw_actions *a)
{
	free(__atomic_exchange_n(&a->l7_ca, NULL, __ATOMIC_ACQ_REL));
	fw_vault_store_free(a->vaults);
	fw_pending_free(a->pending);
	a->vaults = NULL;
	a->pending = NULL;
}

void fw_actions_reclaim(struct fw_actions *a)
{
	char(*names)[FW_NAME_LEN];
	size_t n;

	names = fw_reg_protocol_names(a->reg, &n);
	for (size_t i = 0; i < n; i++) {
		struct fw_entry *e = fw_reg_get(a->reg, names[i], false);
		struct fw_proto *p;
		struct fw_policy none;
		int err;

		if (!e)
			continue;
		p = e->priv;
		if (e->id && e->meta.origin == FW_ORIGIN_ACTIONS && p &&
		    e->naddrs < p->binding.naddrs) {
			size_t before = e->naddrs;

			fw_policy_init(&none);
			err = program(a, e, &p->binding,
				      state_of(e) == FW_STATE_ACTIVE ? &p->current : &none,
				      state_of(e), e->meta.fence_hash);
			if (err)
				fw_err("subject %s: can't take its addresses back: %s", names[i],
				       strerror(-err));
			else if (e->naddrs > before)
				fw_info("subject %s: took back %zu of its addresses", names[i],
					e->naddrs - before);
		}
		fw_reg_put(a->reg, e);
	}
	free(names);
}

void fw_actions_tick(struct fw_actions *a)
{
	__u64 now = fw_now_ns();

	if (!a->grace_over && now - a->started_ns >= a->grace_ns) {
		int removed = fw_reg_prune_adopted(a->reg, FW_ORIGIN_ACTIONS);

		a->grace_over = true;
		fw_info("restart grace over: %d unconfirmed subjects removed",
			removed > 0 ? removed : 0);
	}
	if (now - a->last_sweep_ns >= FW_PENDING_SWEEP_MS * 1000000ull) {
		a->last_sweep_ns = now;
		fw_pending_sweep(a->pending);
	}
}
