// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

enum fw_log_level fw_log_level = FW_LOG_INFO;

static const char *const level_names[] = {
	[FW_LOG_ERROR] = "error",
	[FW_LOG_WARN] = "warn",
	[FW_LOG_INFO] = "info",
	[FW_LOG_DEBUG] = "debug",
};

void fw_log_write(enum fw_log_level level, const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

	flockfile(stderr);
	fprintf(stderr, "%s.%03ldZ %-5s ", stamp, ts.tv_nsec / 1000000, level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
