/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* jansson as the oracle of the JSON reader (common/jtree.h): the unit
 * table and the fuzz target both ask whether a text is read the same way,
 * value for value, as json_loadb(text, len, 0) reads it. */
#ifndef FW_TESTS_JTREE_ORACLE_H
#define FW_TESTS_JTREE_ORACLE_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#include "common/jtree.h"

/* Whether our value v and jansson's j are the same value. Objects: the
 * same set of keys, each with the value of its last duplicate. */
static bool jtree_same(const struct fw_jtree *t, const struct fw_jval *v, json_t *j)
{
	const struct fw_jval *m;
	const char *k;
	json_t *x;
	size_t i;

	switch (v->type) {
	case FW_J_NULL:
		return json_is_null(j);
	case FW_J_TRUE:
		return json_is_true(j);
	case FW_J_FALSE:
		return json_is_false(j);
	case FW_J_INT:
		return json_is_integer(j) && json_integer_value(j) == v->i;
	case FW_J_REAL:
		return json_is_real(j);
	case FW_J_STRING:
		return json_is_string(j) && json_string_length(j) == v->n &&
		       !memcmp(json_string_value(j), fw_jstr(t, v), v->n) && !fw_jstr(t, v)[v->n];
	case FW_J_ARRAY:
		if (!json_is_array(j) || json_array_size(j) != v->n)
			return false;
		for (i = 0, m = fw_jfirst(t, v); m; i++, m = fw_jnext(t, m))
			if (!jtree_same(t, m, json_array_get(j, i)))
				return false;
		return true;
	case FW_J_OBJECT:
		if (!json_is_object(j))
			return false;
		for (m = fw_jfirst(t, v); m; m = fw_jnext(t, m))
			if (strlen(fw_jkey(t, m)) != m->klen || !json_object_get(j, fw_jkey(t, m)))
				return false;
		json_object_foreach(j, k, x)
		{
			m = fw_jget(t, v, k);
			if (!m || !jtree_same(t, m, x))
				return false;
		}
		return true;
	}
	return false;
}

/* 1: both read text and agree; 0: both refuse it; -1: they disagree.
 * Two exceptions, where only the reader is judged: nesting beyond
 * FW_JTREE_MAX_DEPTH (jansson allows 2048) is ours to refuse, and a NUL
 * byte, which no JSON text holds, must be refused although jansson takes
 * one right after a number or a literal for the end of the token. */
static int jtree_vs_jansson(const char *text, size_t len, char *err, size_t errlen)
{
	struct fw_jtree t;
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	int ours = fw_jtree_parse(&t, text, len, err, errlen);
	int ret;

	if (memchr(text, '\0', len))
		ret = ours ? 0 : -1; /* jansson reads "[2\0]" as [2]: a NUL is never valid */
	else if (ours == -EINVAL && strstr(err, "nested too deeply"))
		ret = 0; /* whatever jansson makes of the rest */
	else if (ours || !j)
		ret = (ours == 0) == (j != NULL) ? 0 : -1; /* one refused: both must */
	else
		ret = jtree_same(&t, fw_jroot(&t), j) ? 1 : -1;
	json_decref(j);
	fw_jtree_free(&t);
	return ret;
}

#endif /* FW_TESTS_JTREE_ORACLE_H */
