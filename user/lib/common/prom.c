// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Prometheus text format. See prom.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/prom.h"

static void put(struct fw_prom *p, const char *s, size_t n)
{
	if (p->oom)
		return;
	if (p->len + n + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		char *b;

		while (cap < p->len + n + 1)
			cap *= 2;
		b = realloc(p->buf, cap);
		if (!b) {
			p->oom = true;
			return;
		}
		p->buf = b;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void puts_(struct fw_prom *p, const char *s)
{
	put(p, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(struct fw_prom *p, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(p, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void fw_prom_escape(struct fw_prom *p, const char *s)
{
	for (; *s; s++) {
		size_t run = strcspn(s, "\\\"\n");

		put(p, s, run);
		s += run;
		if (!*s)
			break;
		puts_(p, *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : "\\n");
	}
}

/* HELP text escapes backslash and newline only */
static void help_escape(struct fw_prom *p, const char *s)
{
	for (; *s; s++) {
		size_t run = strcspn(s, "\\\n");

		put(p, s, run);
		s += run;
		if (!*s)
			break;
		puts_(p, *s == '\\' ? "\\\\" : "\\n");
	}
}

void fw_prom_family(struct fw_prom *p, const char *name, const char *type, const char *help)
{
	putf(p, "# HELP %s ", name);
	help_escape(p, help);
	putf(p, "\n# TYPE %s %s\n", name, type);
}

/* name{a="x",b="y"; the caller adds its own labels and closes */
static void open_labels(struct fw_prom *p, const char *name, const char *const *labels)
{
	puts_(p, name);
	for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
		putf(p, "%c%s=\"", i ? ',' : '{', labels[i]);
		fw_prom_escape(p, labels[i + 1]);
		puts_(p, "\"");
	}
}

static bool has_labels(const char *const *labels)
{
	return labels && labels[0] && labels[1];
}

void fw_prom_u64(struct fw_prom *p, const char *name, const char *const *labels, __u64 v)
{
	open_labels(p, name, labels);
	putf(p, "%s %llu\n", has_labels(labels) ? "}" : "", (unsigned long long)v);
}

static void put_double(struct fw_prom *p, double v)
{
	if (isnan(v))
		puts_(p, "NaN");
	else if (isinf(v))
		puts_(p, v > 0 ? "+Inf" : "-Inf");
	else {
		char t[32];

		/* the shortest text that reads back as v: 0.1, not 0.10000000000000001 */
		snprintf(t, sizeof(t), "%.15g", v);
		if (strtod(t, NULL) != v)
			snprintf(t, sizeof(t), "%.17g", v);
		puts_(p, t);
	}
}

void fw_prom_double(struct fw_prom *p, const char *name, const char *const *labels, double v)
{
	open_labels(p, name, labels);
	puts_(p, has_labels(labels) ? "} " : " ");
	put_double(p, v);
	puts_(p, "\n");
}

void fw_prom_histogram(struct fw_prom *p, const char *name, const char *const *labels,
		       const double *bounds, const __u64 *counts, size_t n, double sum)
{
	char series[128];
	__u64 cum = 0;

	snprintf(series, sizeof(series), "%s_bucket", name);
	for (size_t i = 0; i <= n; i++) {
		cum += counts[i];
		open_labels(p, series, labels);
		puts_(p, has_labels(labels) ? ",le=\"" : "{le=\"");
		if (i < n)
			put_double(p, bounds[i]);
		else
			puts_(p, "+Inf");
		putf(p, "\"} %llu\n", (unsigned long long)cum);
	}
	snprintf(series, sizeof(series), "%s_sum", name);
	fw_prom_double(p, series, labels, sum);
	snprintf(series, sizeof(series), "%s_count", name);
	fw_prom_u64(p, series, labels, cum);
}

const __u64 fw_lat_bounds_ns[FW_LAT_BUCKETS] = {
	10000ull,      25000ull,      50000ull,	     100000ull,	     250000ull,
	500000ull,     1000000ull,    2500000ull,    5000000ull,     10000000ull,
	25000000ull,   50000000ull,   100000000ull,  250000000ull,   500000000ull,
	1000000000ull, 2500000000ull, 5000000000ull, 10000000000ull,
};

unsigned int fw_lat_bucket(__u64 ns)
{
	unsigned int b = 0;

	while (b < FW_LAT_BUCKETS && ns > fw_lat_bounds_ns[b])
		b++;
	return b;
}

void fw_prom_latency(struct fw_prom *p, const char *name, const char *const *labels,
		     const __u64 *counts, __u64 sum_ns)
{
	double bounds[FW_LAT_BUCKETS];

	for (unsigned int b = 0; b < FW_LAT_BUCKETS; b++)
		bounds[b] = (double)fw_lat_bounds_ns[b] / 1e9;
	fw_prom_histogram(p, name, labels, bounds, counts, FW_LAT_BUCKETS, (double)sum_ns / 1e9);
}
