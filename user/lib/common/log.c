// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

enum fw_log_level fw_log_level = FW_LOG_INFO;

static const char *const level_names[] = {
	[FW_LOG_ERROR] = "error",
	[FW_LOG_WARN] = "warn",
	[FW_LOG_INFO] = "info",
	[FW_LOG_DEBUG] = "debug",
};

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

void fw_log_write(enum fw_log_level level, const char *fmt, ...)
{
	/* every escape is at most 4 bytes for 1 */
	char line[FW_LOG_LINE_MAX], esc[4 * FW_LOG_LINE_MAX + 1];
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	/* Untrusted text (uids, names, DNS names, interface names) reaches
	 * many of these lines: escaping the whole record here, rather than
	 * at each call, keeps a newline or a terminal escape from forging a
	 * record whoever wrote the call. */
	fw_log_escape(esc, sizeof(esc), line,
		      (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);

	flockfile(stderr);
	fprintf(stderr, "%s.%03ldZ %-5s %s%s\n", stamp, ts.tv_nsec / 1000000, level_names[level],
		esc, (size_t)n >= sizeof(line) ? "...(truncated)" : "");
	funlockfile(stderr);
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
