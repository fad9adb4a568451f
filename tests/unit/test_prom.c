// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Prometheus text format as a scraper reads it: HELP and TYPE lines,
 * label values escaped, histogram buckets cumulative and ending in +Inf,
 * numbers in their shortest form; and the metrics.listen key. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/prom.h"
#include "config/config.h"

static struct fw_prom p;

static void reset(void)
{
	free(p.buf);
	memset(&p, 0, sizeof(p));
}

TestSuite(prom, .init = reset, .fini = reset);

Test(prom, family_and_plain_sample)
{
	fw_prom_family(&p, "fastwall_subjects", "gauge", "subjects registered");
	fw_prom_u64(&p, "fastwall_subjects", NULL, 3);
	cr_assert_not(p.oom);
	cr_assert_str_eq(p.buf, "# HELP fastwall_subjects subjects registered\n"
				"# TYPE fastwall_subjects gauge\n"
				"fastwall_subjects 3\n");
	cr_assert_eq(p.len, strlen(p.buf));
}

Test(prom, labels_in_order)
{
	fw_prom_u64(&p, "fastwall_packets_total",
		    (const char *[]){"reason", "default-deny", "verdict", "drop", NULL},
		    18446744073709551615ull);
	cr_assert_str_eq(p.buf, "fastwall_packets_total{reason=\"default-deny\",verdict=\"drop\"} "
				"18446744073709551615\n");
}

Test(prom, label_values_escaped)
{
	fw_prom_u64(&p, "m", (const char *[]){"path", "a\\b\"c\nd", NULL}, 1);
	cr_assert_str_eq(p.buf, "m{path=\"a\\\\b\\\"c\\nd\"} 1\n");
}

Test(prom, help_escapes_backslash_and_newline_only)
{
	fw_prom_family(&p, "m", "counter", "a \"quoted\" \\ word\nnext");
	cr_assert_str_eq(p.buf, "# HELP m a \"quoted\" \\\\ word\\nnext\n# TYPE m counter\n");
}

Test(prom, empty_label_value)
{
	fw_prom_u64(&p, "m", (const char *[]){"x", "", NULL}, 0);
	cr_assert_str_eq(p.buf, "m{x=\"\"} 0\n");
}

Test(prom, histogram_buckets_are_cumulative)
{
	static const double bounds[] = {0.001, 0.01, 0.1};
	static const __u64 counts[] = {2, 0, 3, 1}; /* the last: above 0.1 */

	fw_prom_histogram(&p, "lat_seconds", NULL, bounds, counts, 3, 1.5);
	cr_assert_str_eq(p.buf, "lat_seconds_bucket{le=\"0.001\"} 2\n"
				"lat_seconds_bucket{le=\"0.01\"} 2\n"
				"lat_seconds_bucket{le=\"0.1\"} 5\n"
				"lat_seconds_bucket{le=\"+Inf\"} 6\n"
				"lat_seconds_sum 1.5\n"
				"lat_seconds_count 6\n");
}

Test(prom, histogram_with_labels)
{
	static const double bounds[] = {0.25};
	static const __u64 counts[] = {1, 1};

	fw_prom_histogram(&p, "h", (const char *[]){"upstream", "[2001:db8::53]:53", NULL}, bounds,
			  counts, 1, 0.1);
	cr_assert_str_eq(p.buf, "h_bucket{upstream=\"[2001:db8::53]:53\",le=\"0.25\"} 1\n"
				"h_bucket{upstream=\"[2001:db8::53]:53\",le=\"+Inf\"} 2\n"
				"h_sum{upstream=\"[2001:db8::53]:53\"} 0.1\n"
				"h_count{upstream=\"[2001:db8::53]:53\"} 2\n");
}

Test(prom, doubles_shortest_and_special)
{
	fw_prom_double(&p, "a", NULL, 0.25);
	fw_prom_double(&p, "b", NULL, 1e-9);
	fw_prom_double(&p, "c", NULL, 1.0 / 0.0);
	fw_prom_double(&p, "d", NULL, 0.0 / 0.0);
	cr_assert_str_eq(p.buf, "a 0.25\nb 1e-09\nc +Inf\nd NaN\n");
}

Test(prom, grows_past_the_first_block)
{
	char want[32];

	for (int i = 0; i < 2000; i++)
		fw_prom_u64(&p, "fastwall_some_long_metric_name", NULL, (__u64)i);
	cr_assert_not(p.oom);
	cr_assert_gt(p.cap, 4096);
	snprintf(want, sizeof(want), " 1999\n");
	cr_assert_str_eq(p.buf + p.len - strlen(want), want);
	cr_assert_eq(strncmp(p.buf, "fastwall_some_long_metric_name 0\n", 33), 0);
}

/* --- metrics.listen ------------------------------------------------------ */

static struct fw_cfg cfg;
static char err[FW_CFG_ERR_LEN];

static int load(const char *yaml)
{
	fw_cfg_free(&cfg);
	return fw_cfg_load_buffer(yaml, strlen(yaml), "t.yaml", &cfg, err, sizeof(err));
}

Test(metrics_cfg, default_on_loopback)
{
	fw_cfg_init(&cfg);
	cr_assert_eq(load(""), 0, "%s", err);
	cr_assert_str_eq(cfg.metrics_listen, "127.0.0.1:9464");
	fw_cfg_free(&cfg);
}

Test(metrics_cfg, set_off_and_any_address)
{
	fw_cfg_init(&cfg);
	cr_assert_eq(load("metrics: {listen: \"\"}\n"), 0, "%s", err);
	cr_assert_str_eq(cfg.metrics_listen, "");
	cr_assert_eq(load("metrics: {listen: \"[::]:9090\"}\n"), 0, "%s", err);
	cr_assert_str_eq(cfg.metrics_listen, "[::]:9090");
	cr_assert_eq(load("metrics: {listen: 0.0.0.0:9464}\n"), 0, "%s", err);
	cr_assert_str_eq(cfg.metrics_listen, "0.0.0.0:9464");
	cr_assert_eq(load("metrics:\n"), 0, "%s", err);
	cr_assert_str_eq(cfg.metrics_listen, "127.0.0.1:9464");
	fw_cfg_free(&cfg);
}

Test(metrics_cfg, mistakes_refused)
{
	static const struct {
		const char *yaml, *needle;
	} bad[] = {
		{"metrics: {listen: 9464}\n", "metrics.listen must be ADDRESS:PORT"},
		{"metrics: {listen: \"127.0.0.1:0\"}\n", "metrics.listen has an invalid port"},
		{"metrics: {listen: \"127.0.0.1:70000\"}\n", "metrics.listen has an invalid port"},
		{"metrics: {listen: \"example.com:9464\"}\n",
		 "metrics.listen has an invalid address"},
		{"metrics: {lisen: \"127.0.0.1:9464\"}\n", "lisen"},
		{"metrics: [1]\n", "metrics"},
	};

	fw_cfg_init(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(load(bad[i].yaml), -EINVAL, "case %zu accepted", i);
		cr_expect(strstr(err, "t.yaml:1: ") == err, "case %zu: %s", i, err);
		cr_expect(strstr(err, bad[i].needle), "case %zu: want \"%s\", got: %s", i,
			  bad[i].needle, err);
	}
	fw_cfg_free(&cfg);
}

Test(prom, latency_buckets_shared)
{
	__u64 c[FW_LAT_BUCKETS + 1] = {};

	/* a bound belongs to its own bucket; above the last is the overflow */
	cr_assert_eq(fw_lat_bucket(0), 0);
	cr_assert_eq(fw_lat_bucket(10000), 0);
	cr_assert_eq(fw_lat_bucket(10001), 1);
	cr_assert_eq(fw_lat_bucket(10000000000ull), FW_LAT_BUCKETS - 1);
	cr_assert_eq(fw_lat_bucket(10000000001ull), FW_LAT_BUCKETS);
	for (unsigned int b = 1; b < FW_LAT_BUCKETS; b++)
		cr_assert_gt(fw_lat_bounds_ns[b], fw_lat_bounds_ns[b - 1]);
	c[fw_lat_bucket(150000000ull)]++;
	fw_prom_latency(&p, "d_seconds", NULL, c, 150000000ull);
	cr_assert_not_null(strstr(p.buf, "d_seconds_bucket{le=\"0.1\"} 0\n"
					 "d_seconds_bucket{le=\"0.25\"} 1\n"));
	cr_assert_not_null(strstr(p.buf, "d_seconds_bucket{le=\"1e-05\"} 0\n"));
	cr_assert_not_null(strstr(p.buf, "d_seconds_sum 0.15\nd_seconds_count 1\n"));
}
