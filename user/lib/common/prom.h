/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The Prometheus text exposition format (0.0.4) written into a growing
 * buffer: a family's HELP and TYPE lines, samples with escaped label
 * values, histograms with cumulative buckets. A failed allocation is
 * remembered (oom) and every later call does nothing; the caller checks
 * once at the end. */
#ifndef FW_COMMON_PROM_H
#define FW_COMMON_PROM_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#define FW_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct fw_prom {
	char *buf; /* NUL-terminated; free() it when done */
	size_t len, cap;
	bool oom;
};

/* # HELP and # TYPE lines of a family; type is "counter", "gauge" or
 * "histogram". */
void fw_prom_family(struct fw_prom *p, const char *name, const char *type, const char *help);
/* One sample. labels: name, value pairs ending in NULL (NULL alone for
 * none); values are escaped (backslash, double quote, newline). */
void fw_prom_u64(struct fw_prom *p, const char *name, const char *const *labels, __u64 v);
void fw_prom_double(struct fw_prom *p, const char *name, const char *const *labels, double v);
/* A histogram's samples under name: name_bucket{le=...} for each of the n
 * upper bounds and +Inf, then name_sum and name_count. counts holds n + 1
 * per-bucket (not cumulative) counts, the last one above every bound. */
void fw_prom_histogram(struct fw_prom *p, const char *name, const char *const *labels,
		       const double *bounds, const __u64 *counts, size_t n, double sum);

/* Every duration histogram fastwalld exports has the same upper bounds,
 * 10 us to 10 s in 1-2.5-5 steps, so two of them compare bucket for
 * bucket and one change here moves them all. */
#define FW_LAT_BUCKETS 19
extern const __u64 fw_lat_bounds_ns[FW_LAT_BUCKETS];
/* The bucket of a duration: the first bound it does not exceed, or
 * FW_LAT_BUCKETS when it exceeds every one. */
unsigned int fw_lat_bucket(__u64 ns);
/* A duration histogram in seconds: counts holds FW_LAT_BUCKETS + 1
 * per-bucket counts (fw_lat_bucket's), sum_ns their total. */
void fw_prom_latency(struct fw_prom *p, const char *name, const char *const *labels,
		     const __u64 *counts, __u64 sum_ns);

/* Appends s as a label value: \ " and newline escaped. */
void fw_prom_escape(struct fw_prom *p, const char *s);

#endif /* FW_COMMON_PROM_H */
