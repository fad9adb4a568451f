// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Reading fastwalld's YAML tree: errors with file:line and the value,
 * typed access to nodes, mappings sorted into known keys (by hand or by
 * descriptor tables), and the leaf parsers the sections share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "config/parse.h"

/* --- error reporting ---------------------------------------------------- */

const char *kind_name(const yaml_node_t *node)
{
	switch (node->type) {
	case YAML_SCALAR_NODE:
		return "scalar";
	case YAML_SEQUENCE_NODE:
		return "list";
	case YAML_MAPPING_NODE:
		return "mapping";
	default:
		return "nothing";
	}
}

/* Copies at most CFG_ECHO_MAX bytes of a scalar, control bytes replaced,
 * so the message stays one printable line whatever the file holds. */
static void echo_value(const yaml_node_t *node, char *out, size_t outlen)
{
	const unsigned char *v = node->data.scalar.value;
	size_t n = node->data.scalar.length, o = 0;

	for (size_t i = 0; i < n && o + 4 < outlen; i++) {
		if (o >= CFG_ECHO_MAX) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		out[o++] = (v[i] < 0x20 || v[i] == 0x7f) ? '?' : (char)v[i];
	}
	out[o] = '\0';
}

int cfg_fail(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
{
	char msg[FW_CFG_ERR_LEN], val[CFG_ECHO_MAX + 8];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ctx->err || !ctx->errlen)
		return -EINVAL;
	if (node && node->type == YAML_SCALAR_NODE) {
		echo_value(node, val, sizeof(val));
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s (value '%s')", ctx->name,
			 node->start_mark.line + 1, msg, val);
	} else {
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s", ctx->name,
			 node ? node->start_mark.line + 1 : 1, msg);
	}
	return -EINVAL;
}

void cfg_warn(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
{
	struct fw_cfg *cfg = ctx->cfg;
	char msg[FW_CFG_ERR_LEN];
	va_list ap;
	char *w;

	if (cfg->nwarnings == FW_CFG_MAX_WARNINGS) {
		cfg->warnings_lost++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (asprintf(&w, "%s:%zu: %s", ctx->name, node ? node->start_mark.line + 1 : 1, msg) < 0) {
		cfg->warnings_lost++;
		return;
	}
	cfg->warnings[cfg->nwarnings++] = w;
}

int cfg_nomem(struct cfg_ctx *ctx, const yaml_node_t *node)
{
	cfg_fail(ctx, node, "out of memory");
	return -ENOMEM;
}

/* --- typed node access -------------------------------------------------- */

yaml_node_t *node_at(struct cfg_ctx *ctx, int idx)
{
	return yaml_document_get_node(&ctx->doc, idx);
}

/* An empty plain scalar, "~" or "null": the key is as good as absent. */
bool is_null(const yaml_node_t *node)
{
	const char *v;

	if (!node)
		return true;
	if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)node->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

int cfg_scalar(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, const char **out)
{
	const char *v;

	*out = "";
	if (node->type != YAML_SCALAR_NODE)
		return cfg_fail(ctx, node, "%s must be a scalar, not a %s", what, kind_name(node));
	v = (const char *)node->data.scalar.value;
	/* "\0" in a double-quoted scalar would silently cut the C string */
	if (strlen(v) != node->data.scalar.length)
		return cfg_fail(ctx, node, "%s contains a NUL byte", what);
	*out = v;
	return 0;
}

/* Decimal, digits only: no sign, no spaces, no units, no hex. */
int cfg_uint(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, unsigned long long min,
	     unsigned long long max, unsigned long long *out)
{
	char msg[FW_CFG_ERR_LEN];
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (fw_ck_parse_uint(what, s, min, max, out, msg, sizeof(msg)))
		return cfg_fail(ctx, node, "%s", msg);
	return 0;
}

/* Number of items of a list node; a scalar counts as a one-item list when
 * scalar_ok, and null as an empty list. Fails beyond max items. */
int cfg_list(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool scalar_ok,
	     size_t max, size_t *n)
{
	size_t len;

	if (is_null(node)) {
		*n = 0;
		return 0;
	}
	if (node->type == YAML_SCALAR_NODE && scalar_ok) {
		len = 1;
	} else if (node->type == YAML_SEQUENCE_NODE) {
		len = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	} else {
		return cfg_fail(ctx, node, "%s must be a list%s, not a %s", what,
				scalar_ok ? " or a scalar" : "", kind_name(node));
	}
	if (len > max)
		return cfg_fail(ctx, node, "too many %s (%zu, at most %zu)", what, len, max);
	*n = len;
	return 0;
}

yaml_node_t *list_item(struct cfg_ctx *ctx, yaml_node_t *node, size_t i)
{
	if (node->type == YAML_SCALAR_NODE)
		return node;
	return node_at(ctx, node->data.sequence.items.start[i]);
}

/* Sorts a mapping's values into keys[] by name. Known keys may appear once;
 * unknown keys are errors when strict and skipped otherwise. */
int cfg_map(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, struct cfg_key *keys,
	    size_t nkeys, bool strict)
{
	yaml_node_pair_t *pair;

	for (size_t i = 0; i < nkeys; i++)
		keys[i].key = keys[i].value = NULL;
	if (is_null(node))
		return 0;
	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "%s must be a mapping, not a %s", what, kind_name(node));
	for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = node_at(ctx, pair->key);
		const char *name;
		size_t i;
		int err;

		err = cfg_scalar(ctx, k, "a key", &name);
		if (err)
			return err;
		for (i = 0; i < nkeys; i++) {
			if (!strcmp(name, keys[i].name))
				break;
		}
		if (i == nkeys) {
			const char *names[CFG_SECTION_KEYS], *like;
			char echo[CFG_ECHO_MAX + 8], in[160];

			if (strict)
				return cfg_fail(ctx, k, "unknown key in %s", what);
			for (i = 0; i < nkeys && i < CFG_SECTION_KEYS; i++)
				names[i] = keys[i].name;
			like = fw_ck_suggest(name, names, i);
			echo_value(k, echo, sizeof(echo));
			/* "egress rule 2 of subject a", "the policy of subject a" */
			if (ctx->rule)
				snprintf(in, sizeof(in), "egress rule %zu", ctx->rule);
			else
				snprintf(in, sizeof(in), "the %s", what);
			cfg_warn(ctx, k, "unknown key '%s' in %s%s%s, ignored%s%s%s", echo, in,
				 ctx->subject ? " of subject " : "",
				 ctx->subject ? ctx->subject : "", like ? " (did you mean '" : "",
				 like ? like : "", like ? "'?)" : "");
			continue;
		}
		if (keys[i].key)
			return cfg_fail(ctx, k, "duplicate key in %s, first at line %zu", what,
					keys[i].key->start_mark.line + 1);
		keys[i].key = k;
		keys[i].value = node_at(ctx, pair->value);
	}
	return 0;
}

/* value of a key, NULL when absent or null */
yaml_node_t *key_value(const struct cfg_key *k)
{
	return is_null(k->value) ? NULL : k->value;
}

static struct cfg_bind *bind_of(struct cfg_bind *b, size_t nb, const char *name, size_t *idx)
{
	for (size_t j = 0; j < nb; j++) {
		const struct fw_cfgkey *k = fw_ck_find(b[j].t, name);

		if (k) {
			*idx = (size_t)(k - b[j].t->keys);
			return &b[j];
		}
	}
	return NULL;
}

int cfg_section(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, struct cfg_bind *b,
		size_t nb)
{
	char msg[FW_CFG_ERR_LEN];
	yaml_node_pair_t *pair;
	int err;

	for (size_t j = 0; j < nb; j++) {
		for (size_t i = 0; i < CFG_SECTION_KEYS; i++)
			b[j].key[i] = b[j].value[i] = NULL;
	}
	if (is_null(node))
		return 0;
	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "%s must be a mapping, not a %s", what, kind_name(node));
	/* every key known and once before any value is read, as cfg_map */
	for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = node_at(ctx, pair->key);
		struct cfg_bind *bb;
		const char *name;
		size_t i;

		err = cfg_scalar(ctx, k, "a key", &name);
		if (err)
			return err;
		bb = bind_of(b, nb, name, &i);
		if (!bb || i >= CFG_SECTION_KEYS)
			return cfg_fail(ctx, k, "unknown key in %s", what);
		if (bb->key[i])
			return cfg_fail(ctx, k, "duplicate key in %s, first at line %zu", what,
					bb->key[i]->start_mark.line + 1);
		bb->key[i] = k;
		bb->value[i] = node_at(ctx, pair->value);
	}
	for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = node_at(ctx, pair->key), *v;
		const struct fw_cfgkey *key;
		struct cfg_bind *bb;
		char full[96];
		const char *s;
		size_t i;

		bb = bind_of(b, nb, (const char *)k->data.scalar.value, &i);
		key = &bb->t->keys[i];
		v = bb->value[i];
		if (key->type == FW_CK_SECTION || is_null(v))
			continue;
		fw_ck_name(bb->t, key, full, sizeof(full));
		err = cfg_scalar(ctx, v, full, &s);
		if (err)
			return err;
		if (fw_ck_parse(bb->t, key, s, bb->base, msg, sizeof(msg)))
			return cfg_fail(ctx, v, "%s", msg);
	}
	return 0;
}

yaml_node_t *cfg_sub(const struct cfg_bind *b, size_t nb, const char *key, bool *present)
{
	for (size_t j = 0; j < nb; j++) {
		const struct fw_cfgkey *k = fw_ck_find(b[j].t, key);
		size_t i;

		if (!k)
			continue;
		i = (size_t)(k - b[j].t->keys);
		if (present)
			*present = b[j].key[i] != NULL;
		return is_null(b[j].value[i]) ? NULL : b[j].value[i];
	}
	if (present)
		*present = false;
	return NULL;
}

/* --- leaf parsers ------------------------------------------------------- */

int cfg_addr(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, struct fw_ip *ip,
	     enum fw_family *fam)
{
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (fw_addr_parse(s, ip, fam))
		return cfg_fail(ctx, node, "invalid %s, expected an IPv4 or IPv6 address", what);
	return 0;
}

int cfg_prefix(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
	       struct fw_prefix *pfx, enum fw_family *fam)
{
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (fw_prefix_parse(s, &pfx->net, &pfx->plen, fam))
		return cfg_fail(ctx, node, "invalid %s, expected an address or CIDR", what);
	return 0;
}

/* Interface names go to if_nametoindex; globs go to fnmatch and may be a
 * little longer than a name. Neither may hold '/' or spaces, which no
 * interface name can contain. */
int cfg_ifname(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool glob_ok,
	       char **out)
{
	const char *s;
	size_t max;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	max = glob_ok && strpbrk(s, "*?[") ? 255 : IF_NAMESIZE - 1;
	if (!*s || strlen(s) > max)
		return cfg_fail(ctx, node, "invalid %s, must be 1 to %zu characters", what, max);
	for (const char *p = s; *p; p++) {
		if (*p == '/' || *p <= ' ' || *p == 0x7f || (!glob_ok && strchr("*?[", *p)))
			return cfg_fail(ctx, node, "invalid %s", what);
	}
	*out = strdup(s);
	if (!*out)
		return cfg_nomem(ctx, node);
	return 0;
}

int cfg_strv(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, bool glob_ok, char ***out,
	     size_t *nout)
{
	size_t n;
	int err;

	err = cfg_list(ctx, node, what, true, CFG_MAX_IFACES, &n);
	if (err || !n)
		return err;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);

		err = cfg_ifname(ctx, item, what, glob_ok, &(*out)[i]);
		if (err)
			return err;
		/* counted as they are filled so fw_cfg_free finds them */
		*nout = i + 1;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp((*out)[j], (*out)[i]))
				return cfg_fail(ctx, item, "duplicate entry in %s", what);
		}
	}
	return 0;
}
