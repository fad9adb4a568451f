// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The JSON reader of the request path: every text of the table is read
 * exactly as jansson's json_loadb(text, len, 0) reads it (both accept it
 * with the same values, or both refuse it), duplicate keys give the last
 * value, errors name a position and never the input, and the limits hold. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jtree_oracle.h"

#define S(lit) lit, sizeof(lit) - 1

static const struct {
	const char *text;
	size_t len;
	bool ok;
} table[] = {
	/* containers and blanks */
	{S("{}"), true},
	{S("[]"), true},
	{S(" \t\r\n{ \"a\" : [ 1 , 2 ] }\n"), true},
	{S("[[[[[]]]]]"), true},
	{S("{\"a\":{\"b\":{\"c\":null}}}"), true},
	{S("[1,]"), false},
	{S("{\"a\":1,}"), false},
	{S("[,1]"), false},
	{S("{,}"), false},
	{S("{\"a\" 1}"), false},
	{S("{1:2}"), false},
	{S("{'a':1}"), false},
	{S("[1 2]"), false},
	{S("{\"a\":1}}"), false},
	{S("{\"a\":1} x"), false},
	{S("{}{}"), false},
	{S("{"), false},
	{S("["), false},
	{S("[1"), false},
	{S("{\"a\""), false},
	{S("{\"a\":"), false},
	{S(""), false},
	{S("   "), false},
	/* the top level is an object or an array */
	{S("1"), false},
	{S("\"{}\""), false},
	{S("null"), false},
	{S("true"), false},
	/* literals */
	{S("[true,false,null]"), true},
	{S("[tru]"), false},
	{S("[nul]"), false},
	{S("[truex]"), false},
	{S("[True]"), false},
	{S("[NaN]"), false},
	{S("[Infinity]"), false},
	/* numbers */
	{S("[0,-0,1,-1,10,123456789]"), true},
	{S("[9223372036854775807,-9223372036854775808]"), true},
	{S("[9223372036854775808]"), false},
	{S("[-9223372036854775809]"), false},
	{S("[18446744073709551616]"), false},
	{S("[99999999999999999999999999]"), false},
	{S("[0.5,-0.5,1e3,1E3,1e+3,1e-3,1.5e-7,0e0]"), true},
	{S("[1e-400,1e308]"), true},
	{S("[1e309]"), false},
	{S("[-1e400]"), false},
	{S("[1234567890123e99999]"), false},
	{S("[01]"), false},
	{S("[-01]"), false},
	{S("[00]"), false},
	{S("[1.]"), false},
	{S("[.5]"), false},
	{S("[+1]"), false},
	{S("[-]"), false},
	{S("[1e]"), false},
	{S("[1e+]"), false},
	{S("[1.e3]"), false},
	{S("[0x10]"), false},
	{S("[1_000]"), false},
	/* strings and escapes */
	{S("[\"\",\"a\",\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]"), true},
	{S("[\"\\u0041\\u00e9\\u20ac\\uD83D\\uDE00\"]"), true},
	{S("[\"\\u00E9\\uFFFF\"]"), true},
	{S("[\"\\u0000\"]"), false},
	{S("{\"a\\u0000b\":1}"), false},
	{S("[\"\\uD83D\"]"), false},
	{S("[\"\\uD83Dx\"]"), false},
	{S("[\"\\uD83D\\u0041\"]"), false},
	{S("[\"\\uDE00\"]"), false},
	{S("[\"\\u12\"]"), false},
	{S("[\"\\u12g4\"]"), false},
	{S("[\"\\x41\"]"), false},
	{S("[\"\\'\"]"), false},
	{S("[\"a\nb\"]"), false},
	{S("[\"a\tb\"]"), false},
	{S("[\"\x01\"]"), false},
	{S("[\"\x7f\"]"), true},
	{S("[\"abc]"), false},
	{S("[\"abc\\"), false},
	/* UTF-8 */
	{S("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]"), true},
	{S("[\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"]"), true},
	{S("[\"\xff\"]"), false},
	{S("[\"\xc0\xaf\"]"), false},	      /* overlong '/' */
	{S("[\"\xe0\x80\xaf\"]"), false},     /* overlong, three bytes */
	{S("[\"\xf0\x80\x80\xaf\"]"), false}, /* overlong, four bytes */
	{S("[\"\xed\xa0\x80\"]"), false},     /* U+D800 */
	{S("[\"\xf4\x90\x80\x80\"]"), false}, /* U+110000 */
	{S("[\"\xc3\"]"), false},	      /* cut short */
	{S("[\"\xe2\x82\"]"), false},
	{S("[\"\x80\"]"), false},
	{S("{\"\xff\":1}"), false},
	{S("[\xc3\xa9]"), false},
	{S("\xef\xbb\xbf{}"), false}, /* a byte-order mark */
	/* NUL bytes in the text */
	{"[\"a\0b\"]", 7, false},
	{"{}\0", 3, false},
	{"[2\0]", 5, false}, /* jansson's lexer takes this NUL for the token's end */
	{"[true\0]", 7, false},
	/* duplicates: accepted, the last one wins */
	{S("{\"a\":1,\"a\":2}"), true},
	{S("{\"a\":{\"x\":1},\"b\":0,\"a\":[true]}"), true},
};

Test(jtree, reads_every_text_as_jansson_does)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		char err[128] = "";
		int r = jtree_vs_jansson(table[i].text, table[i].len, err, sizeof(err));

		cr_expect_geq(r, 0, "case %zu (%.*s): jansson and the reader disagree (%s)", i,
			      (int)table[i].len, table[i].text, err);
		cr_expect_eq(r == 1, table[i].ok, "case %zu (%.*s): %s, want %s (%s)", i,
			     (int)table[i].len, table[i].text, r == 1 ? "read" : "refused",
			     table[i].ok ? "read" : "refused", err);
	}
}

static struct fw_jtree tree;
static char err[128];

static const struct fw_jval *parse(const char *text)
{
	err[0] = '\0';
	cr_assert_eq(fw_jtree_parse(&tree, text, strlen(text), err, sizeof(err)), 0, "%s: %s", text,
		     err);
	return fw_jroot(&tree);
}

static void teardown(void)
{
	fw_jtree_free(&tree);
}

TestSuite(jtree, .fini = teardown);

Test(jtree, values_and_members)
{
	const struct fw_jval *root = parse("{\"s\":\"x\\ny\",\"n\":-42,\"a\":[1,\"two\",null],"
					   "\"o\":{},\"t\":true,\"r\":2.5}");
	const struct fw_jval *a, *m;

	cr_assert(fw_jis(root, FW_J_OBJECT));
	cr_assert_eq(root->n, 6);
	cr_assert_str_eq(fw_jstr(&tree, fw_jget(&tree, root, "s")), "x\ny");
	cr_assert_eq(fw_jget(&tree, root, "s")->n, 3);
	cr_assert_eq(fw_jget(&tree, root, "n")->i, -42);
	cr_assert(fw_jis(fw_jget(&tree, root, "t"), FW_J_TRUE));
	cr_assert(fw_jis(fw_jget(&tree, root, "r"), FW_J_REAL));
	cr_assert(fw_jis(fw_jget(&tree, root, "o"), FW_J_OBJECT));
	cr_assert_null(fw_jfirst(&tree, fw_jget(&tree, root, "o")));
	cr_assert_null(fw_jget(&tree, root, "missing"));
	cr_assert_null(fw_jget(&tree, root, "S"), "keys are case-sensitive");
	cr_assert_null(fw_jget(&tree, fw_jget(&tree, root, "a"), "s"), "an array has no keys");
	cr_assert_null(fw_jstr(&tree, fw_jget(&tree, root, "n")), "a number is not a string");
	a = fw_jget(&tree, root, "a");
	cr_assert_eq(a->n, 3);
	m = fw_jfirst(&tree, a);
	cr_assert_eq(m->i, 1);
	m = fw_jnext(&tree, m);
	cr_assert_str_eq(fw_jstr(&tree, m), "two");
	m = fw_jnext(&tree, m);
	cr_assert(fw_jis(m, FW_J_NULL));
	cr_assert_null(fw_jnext(&tree, m));
	/* members in document order, with their keys */
	m = fw_jfirst(&tree, root);
	cr_assert_str_eq(fw_jkey(&tree, m), "s");
	cr_assert_str_eq(fw_jkey(&tree, fw_jnext(&tree, m)), "n");
}

Test(jtree, the_last_duplicate_wins)
{
	const struct fw_jval *root = parse("{\"k\":\"first\",\"x\":0,\"k\":\"last\"}");

	cr_assert_eq(root->n, 3, "every member is kept in order");
	cr_assert_str_eq(fw_jstr(&tree, fw_jget(&tree, root, "k")), "last");
}

Test(jtree, escapes_decode_to_utf8)
{
	const struct fw_jval *root = parse("[\"\\u00e9\\u20AC\\ud83d\\ude00\\/\"]");

	cr_assert_str_eq(fw_jstr(&tree, fw_jfirst(&tree, root)),
			 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/");
}

static void refused(const char *text, size_t len, const char *want)
{
	err[0] = '\0';
	cr_assert_eq(fw_jtree_parse(&tree, text, len, err, sizeof(err)), -EINVAL, "%.*s", (int)len,
		     text);
	cr_assert_str_eq(err, want, "%.*s", (int)len, text);
	cr_assert_null(fw_jroot(&tree), "nothing is left after an error");
}

Test(jtree, errors_name_the_first_bad_byte)
{
	refused(S("{\n\"a\":tru}"), "invalid syntax at line 2 column 8");
	refused(S("[1,2,]"), "invalid syntax at line 1 column 6");
	refused(S("{\"a\":1 \"b\":2}"), "',' or '}' expected at line 1 column 8");
	refused(S("[\"ab"), "premature end of input at line 1 column 5");
	refused(S(""), "premature end of input at line 1 column 1");
	refused(S("{} []"), "end of input expected at line 1 column 4");
	refused(S("\"x\""), "'{' or '[' expected at line 1 column 1");
	refused(S("[\"\\u0000\"]"), "\\u0000 is not allowed at line 1 column 3");
	refused(S("[\"\xff\"]"), "invalid UTF-8 at line 1 column 3");
	refused(S("[123456789012345678901]"), "too big integer at line 1 column 2");
	refused(S("[1e999]"), "too big number at line 1 column 2");
	refused(S("[01]"), "',' or ']' expected at line 1 column 3");
}

/* a secret pasted into the wrong place is never echoed: jansson's own
 * messages quote the text near the error ("near 'hunter2...'") */
Test(jtree, errors_never_quote_the_text)
{
	static const char *const texts[] = {
		"{\"token\":\"ghp_SECRETSECRET",
		"{\"token\":ghp_SECRETSECRET}",
		"{\"token\":\"ghp_SECRETSECRET\\q\"}",
		"{\"token\":\"ghp_SECRETSECRET\"}x",
		"[1234SECRETSECRET]",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cr_assert_eq(fw_jtree_parse(&tree, texts[i], strlen(texts[i]), err, sizeof(err)),
			     -EINVAL);
		cr_assert_null(strstr(err, "SECRET"), "%s", err);
		cr_assert_null(strstr(err, "ghp"), "%s", err);
	}
}

static char *nested(unsigned int depth)
{
	char *s = malloc(2 * depth + 1);

	cr_assert_not_null(s);
	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = '\0';
	return s;
}

Test(jtree, nesting_is_bounded)
{
	char *ok = nested(FW_JTREE_MAX_DEPTH), *deep = nested(FW_JTREE_MAX_DEPTH + 1);
	char *very = nested(100000);

	cr_assert_eq(fw_jtree_parse(&tree, ok, strlen(ok), err, sizeof(err)), 0, "%s", err);
	fw_jtree_free(&tree);
	cr_assert_eq(fw_jtree_parse(&tree, deep, strlen(deep), err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "nested too deeply at line 1 column 513");
	/* far beyond the limit: refused before the stack is at risk */
	cr_assert_eq(fw_jtree_parse(&tree, very, strlen(very), err, sizeof(err)), -EINVAL);
	free(ok);
	free(deep);
	free(very);
}

/* the string pool is sized once from the text: texts made only of the
 * shortest strings and keys fill it to the byte */
Test(jtree, strings_fill_the_pool_exactly)
{
	size_t n = 100000, len;
	char *s = malloc(6 * n + 8), *p = s;
	const struct fw_jval *root, *m;
	size_t count = 0;

	cr_assert_not_null(s);
	*p++ = '{';
	for (size_t i = 0; i < n; i++) {
		memcpy(p, i ? ",\"\":\"\"" : "\"\":\"\"", i ? 6 : 5);
		p += i ? 6 : 5;
	}
	*p++ = '}';
	len = (size_t)(p - s);
	cr_assert_eq(fw_jtree_parse(&tree, s, len, err, sizeof(err)), 0, "%s", err);
	root = fw_jroot(&tree);
	cr_assert_eq(root->n, n);
	for (m = fw_jfirst(&tree, root); m; m = fw_jnext(&tree, m))
		count += m->klen == 0 && fw_jstr(&tree, m)[0] == '\0';
	cr_assert_eq(count, n);
	cr_assert_leq(tree.npool, len);
	free(s);
}

/* a megabyte of members, as a request body at its cap could be */
Test(jtree, a_large_text)
{
	size_t n = 1 << 20, len;
	char *s = malloc(n + 16), *p = s;

	cr_assert_not_null(s);
	*p++ = '[';
	while ((size_t)(p - s) < n) {
		memcpy(p, "12,", 3);
		p += 3;
	}
	memcpy(p, "0]", 2);
	p += 2;
	len = (size_t)(p - s);
	cr_assert_eq(jtree_vs_jansson(s, len, err, sizeof(err)), 1, "%s", err);
	free(s);
}
