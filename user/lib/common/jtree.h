/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A strict JSON reader for the request path: one pass over the text into a
 * flat array of values and one buffer of decoded strings, read-only
 * afterwards. It accepts what jansson's json_loadb(text, len, 0) accepts
 * (RFC 8259 with an object or an array at the top, valid UTF-8, no
 * "\u0000", integers that fit a long long), and reads duplicate keys the
 * way that call and Go's decoder do: the last one wins. It is several
 * times faster than building jansson objects, which allocate every value
 * and copy every string byte by byte; the actions envelope and the policy
 * inside it are parsed on every SET_BINDING. */
#ifndef FW_COMMON_JTREE_H
#define FW_COMMON_JTREE_H

#include <stdbool.h>
#include <stddef.h>

/* deeper nesting is refused ("nested too deeply"); the recursion it
 * bounds runs on the HTTP worker's stack */
#define FW_JTREE_MAX_DEPTH 512

enum fw_jtype {
	FW_J_NULL,
	FW_J_FALSE,
	FW_J_TRUE,
	FW_J_INT,  /* no fraction, no exponent: the value is in i */
	FW_J_REAL, /* the value is not kept: no caller reads one */
	FW_J_STRING,
	FW_J_ARRAY,
	FW_J_OBJECT,
};

/* One value. Indexes name other values of the same tree; 0 is none (the
 * root is value 1). */
struct fw_jval {
	enum fw_jtype type;
	unsigned int next;  /* the next member of the parent array or object */
	unsigned int key;   /* a member of an object: its key, an offset in the pool */
	unsigned int klen;  /* the key's length in bytes */
	unsigned int n;	    /* string: its length in bytes; array, object: members */
	unsigned int first; /* array, object: the first member; string: its offset */
	long long i;
};

struct fw_jtree {
	struct fw_jval *v; /* v[0] unused */
	size_t nv, cap;
	char *pool; /* every key and string, decoded and NUL-terminated */
	size_t npool, poolcap;
};

/* Parses text (not NUL-terminated). 0, or -EINVAL with "WHAT at line L
 * column C" in err (a fixed phrase and the position of the first byte
 * that cannot belong to a valid document: the input is never quoted, it
 * may be a secret), or -ENOMEM. The tree is empty after an error;
 * fw_jtree_free is safe either way. */
int fw_jtree_parse(struct fw_jtree *t, const char *text, size_t len, char *err, size_t errlen);
/* Wipes the strings and values before freeing them: a body may hold a
 * secret (a credential push sent to the wrong endpoint), and the heap
 * would keep it after the request. */
void fw_jtree_free(struct fw_jtree *t);

static inline const struct fw_jval *fw_jroot(const struct fw_jtree *t)
{
	return t->nv > 1 ? &t->v[1] : NULL;
}

/* The member of object o named key, the last one of that name; NULL when
 * o is NULL or not an object, or has no such member. */
const struct fw_jval *fw_jget(const struct fw_jtree *t, const struct fw_jval *o, const char *key);

/* Iteration over an array's or object's members, in document order. */
static inline const struct fw_jval *fw_jfirst(const struct fw_jtree *t, const struct fw_jval *c)
{
	return c && (c->type == FW_J_ARRAY || c->type == FW_J_OBJECT) && c->first ? &t->v[c->first]
										  : NULL;
}

static inline const struct fw_jval *fw_jnext(const struct fw_jtree *t, const struct fw_jval *m)
{
	return m->next ? &t->v[m->next] : NULL;
}

/* A string's bytes (NUL-terminated; no NUL inside), or NULL if v is not a
 * string. */
static inline const char *fw_jstr(const struct fw_jtree *t, const struct fw_jval *v)
{
	return v && v->type == FW_J_STRING ? t->pool + v->first : NULL;
}

/* An object member's key. */
static inline const char *fw_jkey(const struct fw_jtree *t, const struct fw_jval *m)
{
	return t->pool + m->key;
}

static inline bool fw_jis(const struct fw_jval *v, enum fw_jtype type)
{
	return v && v->type == type;
}

#endif /* FW_COMMON_JTREE_H */
