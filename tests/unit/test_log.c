// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Log records: one a line whatever text a caller passes, with control
 * bytes, invalid UTF-8, C1 controls and bidi overrides escaped, so a
 * crafted uid, name or DNS name cannot forge a record or drive a terminal. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

/* What one fw_info(fmt, arg) wrote to stderr. */
static char *logged(const char *arg)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	static char out[32768];
	size_t n;

	cr_assert(tmp && saved >= 0);
	fflush(stderr);
	cr_assert_eq(dup2(fileno(tmp), 2), 2);
	fw_info("subject %s: added", arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(log, forged_record_stays_one_escaped_line)
{
	char *out = logged("sb-1: added\n2026-12-01T00:00:00.000Z info  subject sb-2\x1b[2K\r");

	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert_null(strchr(out, '\x1b'), "%s", out);
	cr_assert_null(strchr(out, '\r'), "%s", out);
	cr_assert(strstr(out, " info  subject sb-1: added\\x0a2026-12-01T00:00:00.000Z info  "
			      "subject sb-2\\x1b[2K\\x0d: added\n"),
		  "%s", out);
}

Test(log, utf8_kept_c1_bidi_and_invalid_escaped)
{
	/* é, then C1 CSI (U+009B), RLO (U+202E), a lone continuation byte,
	 * an overlong slash, a surrogate, a backslash */
	char *out = logged("é\xc2\x9b\xe2\x80\xae\x80\xc0\xaf\xed\xa0\x80\\");

	cr_assert(strstr(out,
			 "subject é\\xc2\\x9b\\xe2\\x80\\xae\\x80\\xc0\\xaf\\xed\\xa0\\x80\\\\: "
			 "added\n"),
		  "%s", out);
}

Test(log, escape_bounds)
{
	char out[8];

	cr_assert_eq(fw_log_escape(out, sizeof(out), "abc\ndef", 7), 7);
	cr_assert_str_eq(out, "abc\\x0a");
	cr_assert_eq(fw_log_escape(out, sizeof(out), "ab\n\n", 4), 6);
	cr_assert_str_eq(out, "ab\\x0a");
	/* a character never split: é does not fit after 6 bytes */
	cr_assert_eq(fw_log_escape(out, sizeof(out), "abcdefé", 8), 6);
	cr_assert_str_eq(out, "abcdef");
	cr_assert_eq(fw_log_escape(out, 1, "abc", 3), 0);
	cr_assert_str_eq(out, "");
}

Test(log, long_record_is_cut_not_split)
{
	char *big = malloc(10000), *out;

	cr_assert(big);
	memset(big, '\n', 9999);
	big[9999] = '\0';
	out = logged(big);
	cr_assert_eq(lines(out), 1);
	cr_assert(strstr(out, "...(truncated)\n"));
	free(big);
}

/* What fn wrote to stderr. */
static char *captured(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	static char out[32768];
	size_t n;

	cr_assert(tmp && saved >= 0);
	fflush(stderr);
	cr_assert_eq(dup2(fileno(tmp), 2), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static void json_info(void)
{
	fw_log_format = FW_LOG_JSON;
	fw_info("subject %s: added", "a\"b\\c\nd");
	fw_log_format = FW_LOG_TEXT;
}

Test(log, json_format_is_one_object_a_line)
{
	const char *out = captured(json_info);

	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert(!strncmp(out, "{\"time\":\"", 9), "%s", out);
	cr_assert(strstr(out, "\",\"level\":\"info\",\"msg\":\"subject a\\\"b\\\\\\\\c\\\\x0ad: "
			      "added\"}\n"),
		  "%s", out);
}

static void audit_quiet_level(void)
{
	enum fw_log_level was = fw_log_level;

	fw_log_level = FW_LOG_ERROR;
	fw_info("not this");
	fw_audit("deny", (const char *[]){"subject", "sb \"x\"", "reason", "default-deny", "empty",
					  "", NULL});
	fw_log_level = was;
}

Test(log, audit_ignores_the_level)
{
	const char *out = captured(audit_quiet_level);

	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert(strstr(out, "Z audit deny subject=sb \"x\" reason=default-deny empty=-\n"), "%s",
		  out);
	cr_assert(!strstr(out, "not this"));
}

static void audit_json(void)
{
	fw_log_format = FW_LOG_JSON;
	fw_audit("subject", (const char *[]){"uid", "u\n1", "change", "added", NULL});
	fw_log_format = FW_LOG_TEXT;
}

Test(log, audit_json_fields)
{
	const char *out = captured(audit_json);

	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert(strstr(out, "\",\"level\":\"audit\",\"event\":\"subject\",\"uid\":\"u\\\\x0a1\","
			      "\"change\":\"added\"}\n"),
		  "%s", out);
}

static void audit_off(void)
{
	cr_assert_eq(fw_audit_open("off", NULL, 0), 0);
	fw_audit("deny", (const char *[]){"subject", "x", NULL});
	cr_assert_eq(fw_audit_open("stderr", NULL, 0), 0);
	fw_audit("deny", (const char *[]){"subject", "y", NULL});
}

Test(log, audit_destinations)
{
	const char *out = captured(audit_off);
	char err[256] = "", path[] = "/tmp/fw-audit-XXXXXX", buf[256] = "";
	FILE *f;
	int fd;

	cr_assert_eq(lines(out), 1, "%s", out);
	cr_assert(strstr(out, "subject=y"));
	cr_assert_eq(fw_audit_open("relative/file", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "can't open the audit destination relative/file"), "%s", err);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(fw_audit_open(path, err, sizeof(err)), 0, "%s", err);
	fw_audit("deny", (const char *[]){"subject", "z", NULL});
	cr_assert_eq(fw_audit_open("stderr", NULL, 0), 0);
	f = fopen(path, "r");
	cr_assert(f && fgets(buf, sizeof(buf), f));
	fclose(f);
	unlink(path);
	cr_assert(strstr(buf, " audit deny subject=z\n"), "%s", buf);
}

Test(log, format_parse)
{
	enum fw_log_format f = FW_LOG_TEXT;

	cr_assert_eq(fw_log_format_parse("json", &f), 0);
	cr_assert_eq(f, FW_LOG_JSON);
	cr_assert_eq(fw_log_format_parse("text", &f), 0);
	cr_assert_eq(f, FW_LOG_TEXT);
	cr_assert_eq(fw_log_format_parse("JSON", &f), -EINVAL);
}

/* Everything one call of fn wrote to stderr, with JOURNAL_STREAM naming
 * the temporary file stderr is then (journal) or another inode (not). */
static char *logged_journal(bool journal, void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	static char out[4096];
	char js[64];
	struct stat st;
	size_t n;

	cr_assert(tmp && saved >= 0);
	fflush(stderr);
	cr_assert_eq(dup2(fileno(tmp), 2), 2);
	cr_assert_eq(fstat(2, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (journal ? 0 : 1));
	setenv("JOURNAL_STREAM", js, 1);
	cr_assert_eq(fw_log_journal_detect(), journal);
	fn();
	fflush(stderr);
	fw_log_journal = false;
	unsetenv("JOURNAL_STREAM");
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static void four_levels(void)
{
	enum fw_log_level was = fw_log_level;
	static const char *const kv[] = {"subject", "sb-1", NULL};

	fw_log_level = FW_LOG_DEBUG;
	fw_err("e");
	fw_warn("w");
	fw_info("i");
	fw_debug("d");
	fw_audit("deny", kv);
	fw_log_level = was;
}

Test(log, journal_stream_gets_priorities_and_no_stamps)
{
	char *out = logged_journal(true, four_levels);

	cr_assert_str_eq(out, "<3>error e\n<4>warn  w\n<6>info  i\n<7>debug d\n"
			      "<5>audit deny subject=sb-1\n");
}

Test(log, journal_stream_json_has_no_time)
{
	char *out;

	fw_log_format = FW_LOG_JSON;
	out = logged_journal(true, four_levels);
	fw_log_format = FW_LOG_TEXT;
	cr_assert(strstr(out, "<3>{\"level\":\"error\",\"msg\":\"e\"}\n"), "%s", out);
	cr_assert(strstr(out, "<5>{\"level\":\"audit\",\"event\":\"deny\",\"subject\":\"sb-1\"}\n"),
		  "%s", out);
	cr_assert_null(strstr(out, "\"time\""), "%s", out);
}

Test(log, stderr_elsewhere_keeps_stamps)
{
	/* JOURNAL_STREAM inherited, but stderr is another file now */
	char *out = logged_journal(false, four_levels);

	cr_assert_null(strchr(out, '<'), "%s", out);
	cr_assert(strstr(out, "Z error e\n"), "%s", out);
}

Test(log, journal_stream_malformed_is_not_the_journal)
{
	setenv("JOURNAL_STREAM", "12:34x", 1);
	cr_assert_not(fw_log_journal_detect());
	setenv("JOURNAL_STREAM", "", 1);
	cr_assert_not(fw_log_journal_detect());
	unsetenv("JOURNAL_STREAM");
	cr_assert_not(fw_log_journal_detect());
}
