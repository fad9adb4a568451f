/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Configuration keys as descriptor tables: each module lists the scalar
 * keys of its settings struct (name, type, bounds, default, field, one line
 * of doc) next to that struct, and this engine applies the defaults,
 * parses a scalar into its field, and prints the table as Markdown or a
 * JSON Schema fragment. The file format (YAML) stays with the caller: the
 * engine sees one key and its text. Functions return 0 or a negative
 * errno; a parse error leaves the field untouched and a message in msg
 * ("dns.workers must be between 1 and 16"), without file or line.
 * Whether a SIGHUP may change a key is the key's reload column, read by
 * fw_ck_keep and printed in the docs: never decided in code. */
#ifndef FW_CFGKEYS_H
#define FW_CFGKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum fw_ck_type {
	FW_CK_BOOL,	/* true/false (also True, TRUE, False, FALSE) */
	FW_CK_UINT,	/* plain decimal, min-max */
	FW_CK_DURATION, /* plain decimal in seconds, min-max; stored times scale */
	FW_CK_PATH,	/* absolute path shorter than the field */
	FW_CK_ENUM,	/* one of names[] */
	FW_CK_STRING,	/* shorter than the field, check() decides the rest */
	FW_CK_SECTION,	/* a list or mapping the caller parses; table only documents it */
};

/* What a SIGHUP does with a key. The zero value is the safe one: a key
 * nobody marked is kept at its running value rather than claimed to
 * change. */
enum fw_ck_reload {
	FW_CK_RESTART = 0, /* restart only: a reload keeps the running value and warns */
	FW_CK_RELOAD,	   /* a reload applies the new value */
	FW_CK_PER_KEY,	   /* a SECTION of keys below, each with its own */
};

struct fw_ck_name {
	const char *name;
	unsigned long long value;
};

struct fw_cfgkey {
	const char *key; /* within its section: "timeout" */
	enum fw_ck_type type;
	size_t off, size; /* the field in the owner's struct */
	/* UINT, DURATION: bounds in the file's unit; BOOL, ENUM, UINT,
	 * DURATION: the default (a bool's 0 or 1, an enum's value) */
	unsigned long long min, max, def;
	unsigned long long scale;	/* DURATION: field units per second */
	const char *def_str;		/* PATH, STRING: the default */
	const struct fw_ck_name *names; /* ENUM, ended by a NULL name */
	/* further checks after the type's own: msg and -EINVAL to refuse */
	int (*check)(const char *name, const char *s, unsigned long long v, char *msg,
		     size_t msglen);
	const char *type_doc; /* overrides the generated type column */
	const char *def_doc;  /* overrides the generated default column */
	const char *doc;
	/* RESTART keys need a field (a SECTION's: the bool "is present"),
	 * which fw_ck_keep copies back from the running configuration */
	enum fw_ck_reload reload;
};

struct fw_cfgtable {
	const char *section; /* "dns", "dns.lease"; "" at the top level */
	const struct fw_cfgkey *keys;
	size_t nkeys;
};

#define FW_CK_FIELD(type, member) offsetof(type, member), sizeof(((type *)0)->member)
#define FW_CK_TABLE(sec, arr)                                                                      \
	{                                                                                          \
		.section = (sec), .keys = (arr), .nkeys = sizeof(arr) / sizeof((arr)[0])           \
	}

/* Every key's default into base (SECTION keys are left alone). */
void fw_ck_defaults(const struct fw_cfgtable *t, void *base);
const struct fw_cfgkey *fw_ck_find(const struct fw_cfgtable *t, const char *key);
/* The candidate word is most likely a typo of: the closest by edit
 * distance (insert, delete, replace, swap of neighbours), at most 2 and
 * less than half of word's length; NULL when none is that close. */
const char *fw_ck_suggest(const char *word, const char *const *cands, size_t n);
/* "dns.timeout" for key timeout of section dns */
void fw_ck_name(const struct fw_cfgtable *t, const struct fw_cfgkey *k, char *buf, size_t len);
/* Parses s (a NUL-terminated scalar) into k's field of base. */
int fw_ck_parse(const struct fw_cfgtable *t, const struct fw_cfgkey *k, const char *s, void *base,
		char *msg, size_t msglen);
/* Plain decimal digits (no sign, spaces, units or hex) within min-max:
 * "NAME must be a non-negative integer" / "must be between MIN and MAX". */
int fw_ck_parse_uint(const char *name, const char *s, unsigned long long min,
		     unsigned long long max, unsigned long long *out, char *msg, size_t msglen);
/* A field's value as the file would write it (tests, docs). */
int fw_ck_format(const struct fw_cfgkey *k, const void *base, char *buf, size_t len);
/* For every RESTART key of t whose value in next differs from the one in
 * run (both bases of t's struct): calls kept(ctx, "dns.workers", running
 * value as the file writes it, "2"), then copies the running value into
 * next, so that next says what runs and the next reload compares with
 * that. Returns how many keys were kept. */
size_t fw_ck_keep(const struct fw_cfgtable *t, void *next, const void *run,
		  void (*kept)(void *ctx, const char *name, const char *running), void *ctx);
/* "SIGHUP", "restart" or "per key", as the docs' reload column says */
const char *fw_ck_reload_name(enum fw_ck_reload r);
/* One Markdown "| key | type | default | reload | meaning |" table of the keys of
 * n tables, in order (a section whose keys come from several modules). */
void fw_ck_markdown(FILE *f, const struct fw_cfgtable *const *t, size_t n);
/* "\"key\": {...}" members of a JSON Schema "properties" object for the
 * table's scalar keys, comma-separated; *first tracks the comma. */
void fw_ck_schema(FILE *f, const struct fw_cfgtable *t, bool *first);

#endif /* FW_CFGKEYS_H */
