// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The descriptor engine of common/cfgkeys.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/cfgkeys.h"

static void store_uint(void *field, size_t size, unsigned long long v)
{
	switch (size) {
	case 1: {
		uint8_t x = (uint8_t)v;

		memcpy(field, &x, 1);
		break;
	}
	case 2: {
		uint16_t x = (uint16_t)v;

		memcpy(field, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;

		memcpy(field, &x, 4);
		break;
	}
	default:
		memcpy(field, &v, sizeof(v));
		break;
	}
}

static unsigned long long load_uint(const void *field, size_t size)
{
	uint8_t b;
	uint16_t h;
	uint32_t w;
	unsigned long long q;

	switch (size) {
	case 1:
		memcpy(&b, field, 1);
		return b;
	case 2:
		memcpy(&h, field, 2);
		return h;
	case 4:
		memcpy(&w, field, 4);
		return w;
	default:
		memcpy(&q, field, sizeof(q));
		return q;
	}
}

static unsigned long long scale_of(const struct fw_cfgkey *k)
{
	return k->type == FW_CK_DURATION && k->scale ? k->scale : 1;
}

void fw_ck_defaults(const struct fw_cfgtable *t, void *base)
{
	for (size_t i = 0; i < t->nkeys; i++) {
		const struct fw_cfgkey *k = &t->keys[i];
		char *field = (char *)base + k->off;

		switch (k->type) {
		case FW_CK_BOOL:
		case FW_CK_UINT:
		case FW_CK_ENUM:
		case FW_CK_DURATION:
			store_uint(field, k->size, k->def * scale_of(k));
			break;
		case FW_CK_PATH:
		case FW_CK_STRING:
			snprintf(field, k->size, "%s", k->def_str ? k->def_str : "");
			break;
		case FW_CK_SECTION:
			break;
		}
	}
}

const struct fw_cfgkey *fw_ck_find(const struct fw_cfgtable *t, const char *key)
{
	for (size_t i = 0; i < t->nkeys; i++) {
		if (!strcmp(t->keys[i].key, key))
			return &t->keys[i];
	}
	return NULL;
}

/* Damerau-Levenshtein (optimal string alignment) of two short words;
 * longer ones are "far" */
static size_t edit_distance(const char *a, const char *b)
{
	enum { W = 64 };
	size_t la = strlen(a), lb = strlen(b), d[W + 1][W + 1];

	if (la > W || lb > W)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *fw_ck_suggest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3;

	for (size_t i = 0; i < n; i++) {
		size_t dist = edit_distance(word, cands[i]);

		if (dist < best_d && dist * 2 < strlen(word)) {
			best = cands[i];
			best_d = dist;
		}
	}
	return best;
}

void fw_ck_name(const struct fw_cfgtable *t, const struct fw_cfgkey *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", t->section, t->section[0] ? "." : "", k->key);
}

int fw_ck_parse_uint(const char *name, const char *s, unsigned long long min,
		     unsigned long long max, unsigned long long *out, char *msg, size_t msglen)
{
	unsigned long long v = 0;

	if (!*s)
		goto bad;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		if (v > (max - (unsigned long long)(*p - '0')) / 10)
			goto range;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (v < min)
		goto range;
	*out = v;
	return 0;
bad:
	snprintf(msg, msglen, "%s must be a non-negative integer", name);
	return -EINVAL;
range:
	snprintf(msg, msglen, "%s must be between %llu and %llu", name, min, max);
	return -EINVAL;
}

static int parse_bool(const char *name, const char *s, unsigned long long *out, char *msg,
		      size_t msglen)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};

	for (size_t i = 0; i < 3; i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	snprintf(msg, msglen, "%s must be true or false", name);
	return -EINVAL;
}

/* "a, b or c" */
static void names_list(const struct fw_ck_name *n, const char *quote, char *buf, size_t len)
{
	size_t o = 0, cnt = 0;

	buf[0] = '\0';
	while (n[cnt].name)
		cnt++;
	for (size_t i = 0; i < cnt && o < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == cnt ? " or " : ", ";
		int w = snprintf(buf + o, len - o, "%s%s%s%s", sep, quote, n[i].name, quote);

		if (w < 0)
			break;
		o += (size_t)w;
	}
}

static int parse_enum(const char *name, const struct fw_ck_name *names, const char *s,
		      unsigned long long *out, char *msg, size_t msglen)
{
	char list[128];

	for (const struct fw_ck_name *n = names; n->name; n++) {
		if (!strcmp(s, n->name)) {
			*out = n->value;
			return 0;
		}
	}
	names_list(names, "", list, sizeof(list));
	snprintf(msg, msglen, "invalid %s, expected %s", name, list);
	return -EINVAL;
}

int fw_ck_parse(const struct fw_cfgtable *t, const struct fw_cfgkey *k, const char *s, void *base,
		char *msg, size_t msglen)
{
	char *field = (char *)base + k->off;
	unsigned long long v = 0;
	char name[96];
	int err = 0;

	fw_ck_name(t, k, name, sizeof(name));
	switch (k->type) {
	case FW_CK_BOOL:
		err = parse_bool(name, s, &v, msg, msglen);
		break;
	case FW_CK_UINT:
	case FW_CK_DURATION:
		err = fw_ck_parse_uint(name, s, k->min, k->max, &v, msg, msglen);
		break;
	case FW_CK_ENUM:
		err = parse_enum(name, k->names, s, &v, msg, msglen);
		break;
	case FW_CK_PATH:
		if (s[0] != '/' || strlen(s) >= k->size) {
			snprintf(msg, msglen, "%s must be an absolute path shorter than %zu bytes",
				 name, k->size);
			err = -EINVAL;
		}
		break;
	case FW_CK_STRING:
		if (strlen(s) >= k->size) {
			snprintf(msg, msglen, "%s must be shorter than %zu bytes", name, k->size);
			err = -EINVAL;
		}
		break;
	case FW_CK_SECTION:
		snprintf(msg, msglen, "%s is not a scalar key", name);
		err = -EINVAL;
		break;
	}
	if (!err && k->check)
		err = k->check(name, s, v, msg, msglen);
	if (err)
		return err;
	if (k->type == FW_CK_PATH || k->type == FW_CK_STRING)
		snprintf(field, k->size, "%s", s);
	else
		store_uint(field, k->size, v * scale_of(k));
	return 0;
}

static bool same_value(const struct fw_cfgkey *k, const char *a, const char *b)
{
	/* a string's bytes after its NUL are whatever an earlier value left */
	if (k->type == FW_CK_PATH || k->type == FW_CK_STRING)
		return strncmp(a, b, k->size) == 0;
	return memcmp(a, b, k->size) == 0;
}

size_t fw_ck_keep(const struct fw_cfgtable *t, void *next, const void *run,
		  void (*kept)(void *ctx, const char *name, const char *running), void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nkeys; i++) {
		const struct fw_cfgkey *k = &t->keys[i];
		char *to = (char *)next + k->off;
		const char *from = (const char *)run + k->off;
		char name[96], value[256];

		if (k->reload != FW_CK_RESTART || !k->size || same_value(k, to, from))
			continue;
		fw_ck_name(t, k, name, sizeof(name));
		if (k->type == FW_CK_SECTION)
			snprintf(value, sizeof(value), "%s",
				 load_uint(from, k->size) ? "present" : "absent");
		else
			fw_ck_format(k, run, value, sizeof(value));
		if (kept)
			kept(ctx, name, value);
		memcpy(to, from, k->size);
		n++;
	}
	return n;
}

const char *fw_ck_reload_name(enum fw_ck_reload r)
{
	switch (r) {
	case FW_CK_RESTART:
		return "restart";
	case FW_CK_RELOAD:
		return "SIGHUP";
	case FW_CK_PER_KEY:
		return "per key";
	}
	return "?";
}

static const char *enum_name(const struct fw_cfgkey *k, unsigned long long v)
{
	for (const struct fw_ck_name *n = k->names; n && n->name; n++) {
		if (n->value == v)
			return n->name;
	}
	return "?";
}

int fw_ck_format(const struct fw_cfgkey *k, const void *base, char *buf, size_t len)
{
	const char *field = (const char *)base + k->off;
	unsigned long long v;

	switch (k->type) {
	case FW_CK_BOOL:
		snprintf(buf, len, "%s", load_uint(field, k->size) ? "true" : "false");
		return 0;
	case FW_CK_UINT:
	case FW_CK_DURATION:
		v = load_uint(field, k->size) / scale_of(k);
		snprintf(buf, len, "%llu", v);
		return 0;
	case FW_CK_ENUM:
		snprintf(buf, len, "%s", enum_name(k, load_uint(field, k->size)));
		return 0;
	case FW_CK_PATH:
	case FW_CK_STRING:
		snprintf(buf, len, "%.*s", (int)k->size, field);
		return 0;
	case FW_CK_SECTION:
		break;
	}
	buf[0] = '\0';
	return -EINVAL;
}

static void type_doc(const struct fw_cfgkey *k, char *buf, size_t len)
{
	if (k->type_doc) {
		snprintf(buf, len, "%s", k->type_doc);
		return;
	}
	switch (k->type) {
	case FW_CK_BOOL:
		snprintf(buf, len, "bool");
		break;
	case FW_CK_UINT:
		snprintf(buf, len, "integer %llu-%llu", k->min, k->max);
		break;
	case FW_CK_DURATION:
		snprintf(buf, len, "seconds, %llu-%llu", k->min, k->max);
		break;
	case FW_CK_PATH:
		snprintf(buf, len, "absolute path, < %zu bytes", k->size);
		break;
	case FW_CK_ENUM: {
		/* a Markdown table cell: the "|" between names is escaped */
		size_t o = 0;

		buf[0] = '\0';
		for (const struct fw_ck_name *n = k->names; n->name && o < len; n++) {
			int w = snprintf(buf + o, len - o, "%s`%s`", n == k->names ? "" : " \\| ",
					 n->name);

			if (w < 0)
				break;
			o += (size_t)w;
		}
		break;
	}
	case FW_CK_STRING:
		snprintf(buf, len, "string, < %zu bytes", k->size);
		break;
	case FW_CK_SECTION:
		snprintf(buf, len, "mapping");
		break;
	}
}

static void def_doc(const struct fw_cfgkey *k, char *buf, size_t len)
{
	char v[256];

	if (k->def_doc) {
		snprintf(buf, len, "%s", k->def_doc);
		return;
	}
	switch (k->type) {
	case FW_CK_BOOL:
		snprintf(buf, len, "`%s`", k->def ? "true" : "false");
		break;
	case FW_CK_UINT:
	case FW_CK_DURATION:
		snprintf(buf, len, "%llu", k->def);
		break;
	case FW_CK_ENUM:
		snprintf(buf, len, "`%s`", enum_name(k, k->def));
		break;
	case FW_CK_PATH:
	case FW_CK_STRING:
		snprintf(v, sizeof(v), "%s", k->def_str ? k->def_str : "");
		snprintf(buf, len, v[0] ? "`%s`" : "%s", v);
		break;
	case FW_CK_SECTION:
		buf[0] = '\0';
		break;
	}
}

void fw_ck_markdown(FILE *f, const struct fw_cfgtable *const *t, size_t n)
{
	char ty[256], def[256];

	fprintf(f, "| key | type | default | reload | meaning |\n|---|---|---|---|---|\n");
	for (size_t j = 0; j < n; j++) {
		for (size_t i = 0; i < t[j]->nkeys; i++) {
			const struct fw_cfgkey *k = &t[j]->keys[i];

			type_doc(k, ty, sizeof(ty));
			def_doc(k, def, sizeof(def));
			fprintf(f, "| `%s` | %s | %s | %s | %s |\n", k->key, ty, def,
				fw_ck_reload_name(k->reload), k->doc ? k->doc : "");
		}
	}
}

/* A JSON string of s: the docs are ASCII, so quotes and backslashes are
 * all there is to escape. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

void fw_ck_schema(FILE *f, const struct fw_cfgtable *t, bool *first)
{
	for (size_t i = 0; i < t->nkeys; i++) {
		const struct fw_cfgkey *k = &t->keys[i];

		if (k->type == FW_CK_SECTION)
			continue;
		fprintf(f, "%s", *first ? "" : ",\n");
		*first = false;
		json_str(f, k->key);
		fprintf(f, ": {");
		switch (k->type) {
		case FW_CK_BOOL:
			fprintf(f, "\"type\": \"boolean\", \"default\": %s",
				k->def ? "true" : "false");
			break;
		case FW_CK_UINT:
		case FW_CK_DURATION:
			fprintf(f,
				"\"type\": \"integer\", \"minimum\": %llu, \"maximum\": %llu, "
				"\"default\": %llu",
				k->min, k->max, k->def);
			break;
		case FW_CK_ENUM:
			fprintf(f, "\"enum\": [");
			for (const struct fw_ck_name *n = k->names; n->name; n++) {
				fprintf(f, "%s", n == k->names ? "" : ", ");
				json_str(f, n->name);
			}
			fprintf(f, "], \"default\": ");
			json_str(f, enum_name(k, k->def));
			break;
		case FW_CK_PATH:
		case FW_CK_STRING:
			fprintf(f, "\"type\": \"string\", \"maxLength\": %zu", k->size - 1);
			if (k->type == FW_CK_PATH)
				fprintf(f, ", \"pattern\": \"^/\"");
			if (k->def_str) {
				fprintf(f, ", \"default\": ");
				json_str(f, k->def_str);
			}
			break;
		case FW_CK_SECTION:
			break;
		}
		if (k->doc) {
			fprintf(f, ", \"description\": ");
			json_str(f, k->doc);
		}
		fprintf(f, "}");
	}
}
