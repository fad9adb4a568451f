/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's operator listener: /metrics (Prometheus text format),
 * /healthz and /readyz, on a libmicrohttpd thread of its own. It reads
 * counters the data plane, the DNS proxy, the learner and the actions
 * listener keep: atomics, map lookups, and the learner's and registry's
 * locks only for the copy of a few counters, never across a read. A
 * second thread walks the hash maps every 30 s for their fill; a scrape
 * reads its last counts. Functions return 0 or a negative errno. */
#ifndef FW_METRICS_H
#define FW_METRICS_H

#include <stdbool.h>

#include "datapath/datapath.h"
#include "common/prom.h"
#include "dns/learn.h"
#include "dns/proxy.h"
#include "subjects/registry.h"
#include "http.h"
#include "l7.h"
#include "monitor.h"

/* A loop's round durations: the last one and a histogram. One writer (the
 * loop's thread, fw_round_record), relaxed atomics for the reader. */
struct fw_round_stats {
	__u64 last_ns;
	__u64 counts[FW_LAT_BUCKETS + 1]; /* per bucket (fw_lat_bucket) */
	__u64 sum_ns;
};
void fw_round_record(struct fw_round_stats *s, __u64 ns);

/* The configuration reloads, as Prometheus reports its own: whether the
 * last attempt succeeded (the start counts as one), and when the last
 * success was (CLOCK_REALTIME, ns). One writer, the event loop; relaxed
 * atomics for the reader. */
struct fw_reload_stats {
	__u64 ok;
	__u64 success_ns;
};
void fw_reload_record(struct fw_reload_stats *s, bool ok);

/* What the listener reads, published by the daemon as each part comes
 * up; NULL parts are left out of /metrics. */
struct fw_loop;

struct fw_metrics_parts {
	struct fw_dp *dp;
	struct fw_registry *reg;
	struct fw_learn *learn;
	struct fw_dnsp *dnsp;
	struct fw_http *http;
	struct fw_actions *actions;
	struct fw_monitor *monitor;
	bool dns_wanted;  /* dns.proxy: readiness waits for dnsp */
	bool per_subject; /* metrics.per_subject: packets by subject too */
	/* the event loop's count of rate-limited events (atomic), or NULL */
	const __u64 *events_suppressed;
	const struct fw_round_stats *reaper;  /* fw_reg_reap rounds, or NULL */
	const struct fw_round_stats *refresh; /* fw_learn_tick rounds, or NULL */
	const struct fw_l7_counters *l7;      /* l7.enabled: the proxy, or NULL */
	const struct fw_reload_stats *reload; /* or NULL */
	const struct fw_loop *loop;	      /* the main loop (/healthz), or NULL */
	bool started; /* the daemon is done starting (attached, subjects programmed) */
};

struct fw_metrics;

/* /healthz: 200 while the main loop and every DNS proxy worker turned
 * within FW_HEALTH_STALE_NS (each wakes once a second at least), 503
 * naming the first that did not; why gets the text. */
#define FW_HEALTH_STALE_NS (10ull * 1000000000ull)
int fw_metrics_live(const struct fw_metrics_parts *parts, char *why, size_t len);

/* listen: "ADDRESS:PORT". */
int fw_metrics_start(struct fw_metrics **out, const char *listen, const char *bpffs);
/* Waits for requests in flight; NULL is fine. Call before freeing the
 * parts. */
void fw_metrics_stop(struct fw_metrics *m);
void fw_metrics_publish(struct fw_metrics *m, const struct fw_metrics_parts *parts);
/* The interfaces the daemon attached to (a copy is kept): /readyz checks
 * that the programs are still there. -ENOMEM keeps the previous list. */
int fw_metrics_set_attached(struct fw_metrics *m, const int *ifindex, size_t n);

/* /metrics and /readyz as text: the body written to *out
 * (malloc'd), 0 or -ENOMEM; readiness returns 200 or 503. */
int fw_metrics_render(const struct fw_metrics_parts *parts, size_t nattached, char **out,
		      size_t *len);
int fw_metrics_ready(const struct fw_metrics_parts *parts, const char *bpffs, const int *ifindex,
		     size_t nifs, char *why, size_t len);

#endif /* FW_METRICS_H */
