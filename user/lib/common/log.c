// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

enum fw_log_level fw_log_level = FW_LOG_INFO;
enum fw_log_format fw_log_format = FW_LOG_TEXT;
bool fw_log_journal;

/* NULL: stderr; audit_off: nothing */
static FILE *audit_out;
static bool audit_off;
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {
	[FW_LOG_ERROR] = "error",
	[FW_LOG_WARN] = "warn",
	[FW_LOG_INFO] = "info",
	[FW_LOG_DEBUG] = "debug",
};

/* syslog(3) priorities, the journal's: err, warning, info, debug */
static const char *const level_prio[] = {
	[FW_LOG_ERROR] = "<3>",
	[FW_LOG_WARN] = "<4>",
	[FW_LOG_INFO] = "<6>",
	[FW_LOG_DEBUG] = "<7>",
};
#define FW_LOG_PRIO_AUDIT "<5>" /* notice */

bool fw_log_journal_detect(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	fw_log_journal = false;
	/* "DEV:INO" of the stream systemd connected; stderr redirected
	 * elsewhere (a child told 2>file) no longer matches */
	if (js && sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) == 2 && !fstat(STDERR_FILENO, &st) &&
	    (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
		fw_log_journal = true;
	return fw_log_journal;
}

/* Bytes of one log record before escaping; longer ones are cut. */
#define FW_LOG_LINE_MAX 4096

/* The length of the UTF-8 sequence at s (at most n bytes) that may be
 * written as it is: 0 for an invalid one, a C1 control (U+0080-U+009F) or
 * a bidirectional override (U+202A-U+202E, U+2066-U+2069), which a
 * terminal or a log viewer would act on or reorder. */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned int cp;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0; /* overlong or a surrogate */
	if (cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return len;
}

size_t fw_log_escape(char *out, size_t outlen, const char *in, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;

	if (!outlen)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t len = s[i] >= 0x80 ? utf8_printable(s + i, n - i) : 1;
		bool plain = s[i] >= 0x80 ? len > 0 : s[i] >= 0x20 && s[i] != 0x7f && s[i] != '\\';

		if (plain) {
			if (o + len >= outlen)
				break;
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
			continue;
		}
		if (o + 4 >= outlen)
			break;
		if (s[i] == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[s[i] >> 4];
			out[o++] = hex[s[i] & 0xf];
		}
		i++;
	}
	out[o] = '\0';
	return o;
}

/* "2026-12-01T18:00:00.123Z" */
static void log_stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", stamp, ts.tv_nsec / 1000000);
}

/* Escaped text (no control bytes left) as the body of a JSON string: only
 * '"' and '\\' need a backslash. */
static void json_put(FILE *f, const char *esc)
{
	for (; *esc; esc++) {
		if (*esc == '"' || *esc == '\\')
			fputc('\\', f);
		fputc(*esc, f);
	}
}

void fw_log_write(enum fw_log_level level, const char *fmt, ...)
{
	/* every escape is at most 4 bytes for 1 */
	char line[FW_LOG_LINE_MAX], esc[4 * FW_LOG_LINE_MAX + 1];
	bool cut;
	char stamp[64];
	va_list ap;
	int n;

	log_stamp(stamp, sizeof(stamp));
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	cut = (size_t)n >= sizeof(line);
	/* Untrusted text (uids, names, DNS names, interface names) reaches
	 * many of these lines: escaping the whole record here, rather than
	 * at each call, keeps a newline or a terminal escape from forging a
	 * record whoever wrote the call. */
	fw_log_escape(esc, sizeof(esc), line, cut ? sizeof(line) - 1 : (size_t)n);

	flockfile(stderr);
	if (fw_log_journal) {
		/* the journal stamps the line and files it by the prefix */
		fputs(level_prio[level], stderr);
		if (fw_log_format == FW_LOG_JSON) {
			fprintf(stderr, "{\"level\":\"%s\",\"msg\":\"", level_names[level]);
			json_put(stderr, esc);
			fprintf(stderr, "%s\"}\n", cut ? "...(truncated)" : "");
		} else {
			fprintf(stderr, "%-5s %s%s\n", level_names[level], esc,
				cut ? "...(truncated)" : "");
		}
	} else if (fw_log_format == FW_LOG_JSON) {
		fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
			level_names[level]);
		json_put(stderr, esc);
		fprintf(stderr, "%s\"}\n", cut ? "...(truncated)" : "");
	} else {
		fprintf(stderr, "%s %-5s %s%s\n", stamp, level_names[level], esc,
			cut ? "...(truncated)" : "");
	}
	funlockfile(stderr);
}

int fw_log_format_parse(const char *s, enum fw_log_format *out)
{
	if (!strcmp(s, "text"))
		*out = FW_LOG_TEXT;
	else if (!strcmp(s, "json"))
		*out = FW_LOG_JSON;
	else
		return -EINVAL;
	return 0;
}

int fw_audit_open(const char *dest, char *err, size_t errlen)
{
	FILE *f = NULL, *old;
	bool off = false;
	int fd;

	if (!strcmp(dest, "off")) {
		off = true;
	} else if (!strcmp(dest, "stdout")) {
		f = stdout;
	} else if (strcmp(dest, "stderr") != 0) {
		fd = dest[0] == '/' ? open(dest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)
				    : -1;
		if (dest[0] != '/')
			errno = EINVAL;
		f = fd >= 0 ? fdopen(fd, "a") : NULL;
		if (!f) {
			int e = errno;

			if (fd >= 0)
				close(fd);
			fw_set_err(err, errlen, "can't open the audit destination %s: %s", dest,
				   strerror(e));
			return -e;
		}
		setvbuf(f, NULL, _IOLBF, 0);
	}
	pthread_mutex_lock(&audit_lock);
	old = audit_out;
	audit_out = f;
	audit_off = off;
	pthread_mutex_unlock(&audit_lock);
	if (old && old != stdout)
		fclose(old);
	return 0;
}

#define FW_AUDIT_PAIRS 16

void fw_audit(const char *event, const char *const *in)
{
	char line[FW_LOG_LINE_MAX], esc[4 * FW_LOG_LINE_MAX + 1], stamp[64];
	const char *kv[2 * FW_AUDIT_PAIRS];
	size_t n = 0, o = 0;
	bool journal;
	FILE *f;

	for (; n < 2 * FW_AUDIT_PAIRS && in[n]; n += 2) {
		kv[n] = in[n];
		kv[n + 1] = in[n + 1] ? in[n + 1] : "";
	}
	log_stamp(stamp, sizeof(stamp));

	pthread_mutex_lock(&audit_lock);
	if (audit_off) {
		pthread_mutex_unlock(&audit_lock);
		return;
	}
	f = audit_out ? audit_out : stderr;
	/* a file of its own keeps its stamps; stderr into the journal does not */
	journal = fw_log_journal && f == stderr;
	flockfile(f);
	if (journal)
		fputs(FW_LOG_PRIO_AUDIT, f);
	if (fw_log_format == FW_LOG_JSON) {
		if (journal)
			fputs("{\"level\":\"audit\",\"event\":\"", f);
		else
			fprintf(f, "{\"time\":\"%s\",\"level\":\"audit\",\"event\":\"", stamp);
		fw_log_escape(esc, sizeof(esc), event, strlen(event));
		json_put(f, esc);
		for (size_t i = 0; i < n; i += 2) {
			fputs("\",\"", f);
			fw_log_escape(esc, sizeof(esc), kv[i], strlen(kv[i]));
			json_put(f, esc);
			fputs("\":\"", f);
			fw_log_escape(esc, sizeof(esc), kv[i + 1], strlen(kv[i + 1]));
			json_put(f, esc);
		}
		fputs("\"}\n", f);
	} else {
		o = (size_t)snprintf(line, sizeof(line), "%s", event);
		for (size_t i = 0; i < n && o < sizeof(line); i += 2)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %s=%s", kv[i],
					      kv[i + 1][0] ? kv[i + 1] : "-");
		if (o >= sizeof(line))
			o = sizeof(line) - 1;
		fw_log_escape(esc, sizeof(esc), line, o);
		if (journal)
			fprintf(f, "audit %s\n", esc);
		else
			fprintf(f, "%s audit %s\n", stamp, esc);
	}
	funlockfile(f);
	pthread_mutex_unlock(&audit_lock);
}

int fw_log_level_parse(const char *s, enum fw_log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum fw_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void fw_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
