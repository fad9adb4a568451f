/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Leveled logging to stderr, one record a line, as text or JSON lines. The
 * level is checked before formatting, so a disabled debug line costs one
 * comparison. Every record is escaped as a whole (control bytes, invalid
 * UTF-8, C1 controls and bidi overrides as \xNN, a backslash as \\), so
 * untrusted text can be passed with %s. Never pass secrets.
 *
 * The audit trail (denies, subject changes) is a stream of its own that
 * the level never silences: fw_audit writes to the destination
 * fw_audit_open chose (stderr unless told otherwise). */
#ifndef FW_LOG_H
#define FW_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum fw_log_level {
	FW_LOG_ERROR = 0,
	FW_LOG_WARN,
	FW_LOG_INFO,
	FW_LOG_DEBUG,
};

extern enum fw_log_level fw_log_level;

enum fw_log_format {
	FW_LOG_TEXT = 0, /* "TIME LEVEL message" */
	FW_LOG_JSON,	 /* {"time":..,"level":..,"msg":..} */
};

extern enum fw_log_format fw_log_format;

/* stderr is a journal stream (systemd's JOURNAL_STREAM names its device
 * and inode): each record starts with its syslog priority, "<3>" for an
 * error to "<7>" for debug ("<5>" audit), which journald strips and files
 * (journalctl -p err), and carries no time of its own (the journal's
 * stamp is the one). Set by fw_log_journal_detect, which returns it. */
extern bool fw_log_journal;
bool fw_log_journal_detect(void);
/* Parses "text", "json"; returns 0 or -EINVAL. */
int fw_log_format_parse(const char *s, enum fw_log_format *out);

/* dest: "stderr", "stdout", "off", or an absolute file path (appended,
 * created 0600). Replaces the previous destination; -errno and err when
 * the file can't be opened (the previous one stays). */
int fw_audit_open(const char *dest, char *err, size_t errlen);
/* One audit record: event, then kv: key, value string pairs ending at a
 * NULL key (at most 16 pairs). Text: "TIME audit EVENT key=value ...",
 * JSON: the pairs as members beside time, level "audit" and event. */
void fw_audit(const char *event, const char *const *kv);

void fw_log_write(enum fw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Writes in[0..n) escaped as a log record is into out (always
 * NUL-terminated, cut at a whole character); returns the bytes written. */
size_t fw_log_escape(char *out, size_t outlen, const char *in, size_t n);
/* Parses "error", "warn", "info", "debug"; returns 0 or -EINVAL. */
int fw_log_level_parse(const char *s, enum fw_log_level *out);

/* Formats an error text into err (NULL or 0-length: nothing). */
void fw_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define fw_log(level, ...)                                                                         \
	do {                                                                                       \
		if ((level) <= fw_log_level)                                                       \
			fw_log_write((level), __VA_ARGS__);                                        \
	} while (0)
#define fw_err(...)   fw_log(FW_LOG_ERROR, __VA_ARGS__)
#define fw_warn(...)  fw_log(FW_LOG_WARN, __VA_ARGS__)
#define fw_info(...)  fw_log(FW_LOG_INFO, __VA_ARGS__)
#define fw_debug(...) fw_log(FW_LOG_DEBUG, __VA_ARGS__)

#endif /* FW_LOG_H */
