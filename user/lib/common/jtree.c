// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A strict JSON reader. See common/jtree.h.
 *
 * Recursive descent over the bytes. Values go to a growing array and are
 * named by index (the array moves when it grows); decoded strings go to a
 * pool sized once from the text: a string's decoded bytes and its NUL
 * never outnumber its source bytes with the quotes, so the pool never
 * grows and no string is copied twice. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jtree.h"

/* a real number this long is checked for overflow in a heap copy */
#define NUM_STACK 64

struct reader {
	const unsigned char *text, *p, *end;
	struct fw_jtree *t;
	const char *what; /* the first error, at the byte `at` */
	const unsigned char *at;
	bool nomem;
};

static int fail(struct reader *r, const unsigned char *at, const char *what)
{
	if (!r->what) {
		r->what = what;
		r->at = at;
	}
	return -1;
}

static int premature(struct reader *r)
{
	return fail(r, r->end, "premature end of input");
}

static void skip_blank(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* A new value of this type; its index, or 0 when out of memory. */
static unsigned int new_value(struct reader *r, enum fw_jtype type)
{
	struct fw_jtree *t = r->t;

	if (t->nv == t->cap) {
		size_t cap = t->cap * 2;
		struct fw_jval *v;

		if (cap > UINT_MAX || !(v = realloc(t->v, cap * sizeof(*v)))) {
			r->nomem = true;
			fail(r, r->p, "out of memory");
			return 0;
		}
		t->v = v;
		t->cap = cap;
	}
	memset(&t->v[t->nv], 0, sizeof(t->v[0]));
	t->v[t->nv].type = type;
	return (unsigned int)t->nv++;
}

/* Length of the UTF-8 sequence at p (Unicode's table of well-formed
 * sequences: no overlong form, no surrogate, nothing above U+10FFFF), or 0
 * when it is not one. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xbf;
	int n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (end - p < n || p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned int *out)
{
	unsigned int v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v |= (c | 0x20) - 'a' + 10;
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *put_utf8(char *o, unsigned int cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* "\uXXXX" at p (the backslash), a surrogate pair as one code point;
 * the bytes go to *o. Returns the bytes read, or -1. */
static int unicode_escape(struct reader *r, const unsigned char *p, char **o)
{
	unsigned int cp, lo;

	if (hex4(p + 2, r->end, &cp))
		return r->end - p < 6 ? premature(r) : fail(r, p, "invalid \\u escape");
	if (cp == 0)
		return fail(r, p, "\\u0000 is not allowed");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(r, p, "invalid \\u escape");
	if (cp < 0xd800 || cp > 0xdbff) {
		*o = put_utf8(*o, cp);
		return 6;
	}
	/* a high surrogate: a low one must follow */
	if (r->end - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, r->end, &lo) ||
	    lo < 0xdc00 || lo > 0xdfff)
		return fail(r, p, "invalid \\u escape");
	*o = put_utf8(*o, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
	return 12;
}

/* The string at r->p (its opening quote) into the pool. */
static int read_string(struct reader *r, unsigned int *off, unsigned int *len)
{
	char *start = r->t->pool + r->t->npool, *o = start;
	const unsigned char *p = r->p + 1;

	for (;;) {
		int n;

		if (p >= r->end)
			return premature(r);
		if (*p == '"')
			break;
		if (*p < 0x20)
			return fail(r, p, "control character in a string");
		if (*p < 0x80 && *p != '\\') {
			*o++ = (char)*p++;
			continue;
		}
		if (*p >= 0x80) {
			n = utf8_len(p, r->end);
			if (!n)
				return fail(r, p, "invalid UTF-8");
			memcpy(o, p, (size_t)n);
			o += n;
			p += n;
			continue;
		}
		if (p + 1 >= r->end)
			return premature(r);
		switch (p[1]) {
		case '"':
		case '\\':
		case '/':
			*o++ = (char)p[1];
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			n = unicode_escape(r, p, &o);
			if (n < 0)
				return -1;
			p += n;
			continue;
		default:
			return fail(r, p, "invalid escape");
		}
		p += 2;
	}
	*o = '\0';
	*off = (unsigned int)(start - r->t->pool);
	*len = (unsigned int)(o - start);
	r->t->npool += (size_t)(o - start) + 1;
	r->p = p + 1;
	return 0;
}

static bool digit(struct reader *r, const unsigned char *p)
{
	return p < r->end && *p >= '0' && *p <= '9';
}

/* Whether the real number of these bytes is too big for a double. */
static bool real_overflows(const unsigned char *s, size_t n)
{
	char stack[NUM_STACK], *buf = n < sizeof(stack) ? stack : malloc(n + 1);
	bool inf;

	if (!buf)
		return true; /* refused rather than guessed */
	memcpy(buf, s, n);
	buf[n] = '\0';
	inf = isinf(strtod(buf, NULL));
	if (buf != stack)
		free(buf);
	return inf;
}

static int read_number(struct reader *r, unsigned int idx)
{
	const unsigned char *p = r->p, *s = p;
	bool neg = false, real = false;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p >= r->end)
		return premature(r);
	if (*p == '0')
		p++;
	else if (digit(r, p))
		while (digit(r, p))
			p++;
	else
		return fail(r, p, "invalid number");
	if (p < r->end && *p == '.') {
		real = true;
		if (!digit(r, ++p))
			return p >= r->end ? premature(r) : fail(r, p, "invalid number");
		while (digit(r, p))
			p++;
	}
	if (p < r->end && (*p == 'e' || *p == 'E')) {
		real = true;
		p++;
		if (p < r->end && (*p == '+' || *p == '-'))
			p++;
		if (!digit(r, p))
			return p >= r->end ? premature(r) : fail(r, p, "invalid number");
		while (digit(r, p))
			p++;
	}
	if (real) {
		if (real_overflows(s, (size_t)(p - s)))
			return fail(r, s, "too big number");
		r->t->v[idx].type = FW_J_REAL;
	} else {
		/* accumulated negatively: LLONG_MIN fits, LLONG_MAX + 1 does not */
		long long v = 0;

		for (const unsigned char *d = s + neg; d < p; d++) {
			int k = *d - '0';

			if (v < (LLONG_MIN + k) / 10)
				return fail(r, s, "too big integer");
			v = v * 10 - k;
		}
		if (!neg) {
			if (v == LLONG_MIN)
				return fail(r, s, "too big integer");
			v = -v;
		}
		r->t->v[idx].type = FW_J_INT;
		r->t->v[idx].i = v;
	}
	r->p = p;
	return 0;
}

static int read_literal(struct reader *r, const char *word)
{
	for (size_t i = 0; word[i]; i++) {
		if ((size_t)(r->end - r->p) <= i)
			return premature(r);
		if (r->p[i] != (unsigned char)word[i])
			return fail(r, r->p + i, "invalid syntax");
	}
	r->p += strlen(word);
	return 0;
}

static int read_value(struct reader *r, unsigned int depth, unsigned int *out);

/* An array or an object at r->p (its bracket), members linked in order. */
static int read_container(struct reader *r, unsigned int depth, unsigned int idx)
{
	bool object = r->t->v[idx].type == FW_J_OBJECT;
	unsigned char close = object ? '}' : ']';
	unsigned int last = 0;

	if (depth > FW_JTREE_MAX_DEPTH)
		return fail(r, r->p, "nested too deeply");
	r->p++;
	skip_blank(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		return 0;
	}
	for (;;) {
		unsigned int key = 0, klen = 0, m;

		if (object) {
			skip_blank(r);
			if (r->p >= r->end)
				return premature(r);
			if (*r->p != '"')
				return fail(r, r->p, "object key expected");
			if (read_string(r, &key, &klen))
				return -1;
			skip_blank(r);
			if (r->p >= r->end)
				return premature(r);
			if (*r->p != ':')
				return fail(r, r->p, "':' expected");
			r->p++;
		}
		if (read_value(r, depth, &m))
			return -1;
		r->t->v[m].key = key;
		r->t->v[m].klen = klen;
		if (last)
			r->t->v[last].next = m;
		else
			r->t->v[idx].first = m;
		last = m;
		r->t->v[idx].n++;
		skip_blank(r);
		if (r->p >= r->end)
			return premature(r);
		if (*r->p == close) {
			r->p++;
			return 0;
		}
		if (*r->p != ',')
			return fail(r, r->p,
				    object ? "',' or '}' expected" : "',' or ']' expected");
		r->p++;
	}
}

static int read_value(struct reader *r, unsigned int depth, unsigned int *out)
{
	unsigned int idx;

	skip_blank(r);
	if (r->p >= r->end)
		return premature(r);
	switch (*r->p) {
	case '{':
	case '[':
		idx = new_value(r, *r->p == '{' ? FW_J_OBJECT : FW_J_ARRAY);
		if (!idx || read_container(r, depth + 1, idx))
			return -1;
		break;
	case '"':
		idx = new_value(r, FW_J_STRING);
		if (!idx || read_string(r, &r->t->v[idx].first, &r->t->v[idx].n))
			return -1;
		break;
	case 't':
	case 'f':
	case 'n':
		idx = new_value(r, *r->p == 't'	  ? FW_J_TRUE
				   : *r->p == 'f' ? FW_J_FALSE
						  : FW_J_NULL);
		if (!idx || read_literal(r, *r->p == 't'   ? "true"
					    : *r->p == 'f' ? "false"
							   : "null"))
			return -1;
		break;
	default:
		if (*r->p != '-' && !digit(r, r->p))
			return fail(r, r->p, *r->p >= 0x80 ? "invalid UTF-8" : "invalid syntax");
		idx = new_value(r, FW_J_INT);
		if (!idx || read_number(r, idx))
			return -1;
		break;
	}
	*out = idx;
	return 0;
}

void fw_jtree_free(struct fw_jtree *t)
{
	if (t->v)
		explicit_bzero(t->v, t->nv * sizeof(*t->v));
	if (t->pool)
		explicit_bzero(t->pool, t->poolcap); /* what a failed string left too */
	free(t->v);
	free(t->pool);
	memset(t, 0, sizeof(*t));
}

static void where(const struct reader *r, char *err, size_t errlen)
{
	unsigned long line = 1, column = 1;

	for (const unsigned char *p = r->text; p < r->at; p++) {
		column++;
		if (*p == '\n') {
			line++;
			column = 1;
		}
	}
	if (err && errlen)
		snprintf(err, errlen, "%s at line %lu column %lu", r->what, line, column);
}

int fw_jtree_parse(struct fw_jtree *t, const char *text, size_t len, char *err, size_t errlen)
{
	struct reader r = {.text = (const unsigned char *)text, .t = t};
	unsigned int root;

	memset(t, 0, sizeof(*t));
	if (!text)
		len = 0;
	r.p = r.text;
	r.end = r.text + len;
	t->cap = 64;
	if (len < UINT_MAX) {
		t->v = malloc(t->cap * sizeof(*t->v));
		t->pool = malloc(len + 1);
		t->poolcap = t->pool ? len + 1 : 0;
	}
	if (!t->v || !t->pool) {
		fw_jtree_free(t);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->nv = 1;
	skip_blank(&r);
	if (r.p >= r.end)
		premature(&r);
	else if (*r.p != '{' && *r.p != '[')
		fail(&r, r.p, "'{' or '[' expected");
	else if (!read_value(&r, 0, &root)) {
		skip_blank(&r);
		if (r.p < r.end)
			fail(&r, r.p, "end of input expected");
	}
	if (!r.what)
		return 0;
	where(&r, err, errlen);
	fw_jtree_free(t);
	return r.nomem ? -ENOMEM : -EINVAL;
}

const struct fw_jval *fw_jget(const struct fw_jtree *t, const struct fw_jval *o, const char *key)
{
	const struct fw_jval *found = NULL;
	size_t klen = strlen(key);

	if (!fw_jis(o, FW_J_OBJECT))
		return NULL;
	for (const struct fw_jval *m = fw_jfirst(t, o); m; m = fw_jnext(t, m))
		if (m->klen == klen && !memcmp(t->pool + m->key, key, klen))
			found = m;
	return found;
}
