// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The metrics and health listener. See metrics.h and docs/operations.md
 * ("Metrics") for what each series means. */
#include <bpf/bpf.h>
#include <errno.h>
#include <microhttpd.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/prom.h"
#include "datapath/bandwidth.h"
#include "metrics.h"
#include "dns/proxy.h"
#include "fastwall/version.h"
#include "datapath/attach.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"

#define FW_METRICS_TIMEOUT_S 10
#define FW_METRICS_MAX_CONN  64
#define DNSP_NAME_LEN	     64 /* "[v6 address]:port" */

#define FW_MAP_SCAN_S	30 /* the walk of the hash maps, at most this often */
#define FW_MAP_SCAN_MAX 64

/* A map's fill as the background walk last counted it. */
struct map_scan {
	char name[64]; /* the pin name, whole (the kernel cuts its own to 15) */
	__u64 n, max;
};

struct fw_metrics {
	struct MHD_Daemon *d;
	pthread_mutex_t lock; /* parts: held for a copy, never across a read */
	struct fw_metrics_parts parts;
	/* the map walk: its thread, started with the first parts that have
	 * a data plane; its results under lock */
	pthread_t scan_thread;
	bool scanning, stop;
	pthread_cond_t wake;
	struct map_scan scan[FW_MAP_SCAN_MAX];
	size_t nscan;
	int *ifs; /* attached interfaces, under lock */
	size_t nifs;
	char bpffs[256];
};

static const char *const rcode_names[16] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",	 "REFUSED", "YXDOMAIN", "YXRRSET",
	"NXRRSET", "NOTAUTH", "NOTZONE",  "RCODE11",  "RCODE12", "RCODE13", "RCODE14",	"RCODE15",
};

void fw_round_record(struct fw_round_stats *s, __u64 ns)
{
	unsigned int b = fw_lat_bucket(ns);

	/* one writer: a store is enough, the reader sees whole values */
	__atomic_store_n(&s->last_ns, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->counts[b], s->counts[b] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->sum_ns, s->sum_ns + ns, __ATOMIC_RELAXED);
}

static void render_rounds(struct fw_prom *p, const char *name, const char *last, const char *what,
			  const struct fw_round_stats *s)
{
	__u64 c[FW_LAT_BUCKETS + 1];
	char help[160];

	for (unsigned int b = 0; b <= FW_LAT_BUCKETS; b++)
		c[b] = __atomic_load_n(&s->counts[b], __ATOMIC_RELAXED);
	snprintf(help, sizeof(help), "how long each round of %s took", what);
	fw_prom_family(p, name, "histogram", help);
	fw_prom_latency(p, name, NULL, c, __atomic_load_n(&s->sum_ns, __ATOMIC_RELAXED));
	snprintf(help, sizeof(help), "how long the last round of %s took", what);
	fw_prom_family(p, last, "gauge", help);
	fw_prom_double(p, last, NULL, (double)__atomic_load_n(&s->last_ns, __ATOMIC_RELAXED) / 1e9);
}

static void counter(struct fw_prom *p, const char *name, const char *help, __u64 v)
{
	fw_prom_family(p, name, "counter", help);
	fw_prom_u64(p, name, NULL, v);
}

static void gauge(struct fw_prom *p, const char *name, const char *help, __u64 v)
{
	fw_prom_family(p, name, "gauge", help);
	fw_prom_u64(p, name, NULL, v);
}

void fw_reload_record(struct fw_reload_stats *s, bool ok)
{
	struct timespec ts;

	__atomic_store_n(&s->ok, ok ? 1 : 0, __ATOMIC_RELAXED);
	if (!ok || clock_gettime(CLOCK_REALTIME, &ts))
		return;
	__atomic_store_n(&s->success_ns, (__u64)ts.tv_sec * FW_NSEC_PER_SEC + (__u64)ts.tv_nsec,
			 __ATOMIC_RELAXED);
}

/* The process_* series every Prometheus client library exports, from
 * /proc/self: resident and virtual memory, CPU seconds, open and maximum
 * descriptors, start time. A value that can't be read is left out. */
static void render_process(struct fw_prom *p)
{
	unsigned long long utime, stime, start, vsize;
	long rss, hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	char buf[1024], *c;
	struct rlimit rl;
	FILE *f;
	DIR *dir;

	f = fopen("/proc/self/stat", "re");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		fclose(f);
		buf[n] = '\0';
		/* after the command's closing parenthesis: field 3 on */
		c = strrchr(buf, ')');
		if (c && hz > 0 &&
		    sscanf(c + 2,
			   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			   "%*d %*d %llu %llu %ld",
			   &utime, &stime, &start, &vsize, &rss) == 5) {
			struct timespec now, up;
			double boot;

			fw_prom_family(p, "process_cpu_seconds_total", "counter",
				       "user and system CPU time spent, in seconds");
			fw_prom_double(p, "process_cpu_seconds_total", NULL,
				       (double)(utime + stime) / (double)hz);
			fw_prom_family(p, "process_resident_memory_bytes", "gauge",
				       "resident memory size, in bytes");
			fw_prom_u64(p, "process_resident_memory_bytes", NULL,
				    (__u64)(rss > 0 ? rss : 0) * (__u64)page);
			fw_prom_family(p, "process_virtual_memory_bytes", "gauge",
				       "virtual memory size, in bytes");
			fw_prom_u64(p, "process_virtual_memory_bytes", NULL, vsize);
			if (!clock_gettime(CLOCK_REALTIME, &now) &&
			    !clock_gettime(CLOCK_BOOTTIME, &up)) {
				boot = (double)now.tv_sec + now.tv_nsec / 1e9 -
				       ((double)up.tv_sec + up.tv_nsec / 1e9);
				fw_prom_family(p, "process_start_time_seconds", "gauge",
					       "start time of the process since the Unix epoch, in "
					       "seconds");
				fw_prom_double(p, "process_start_time_seconds", NULL,
					       boot + (double)start / (double)hz);
			}
		}
	}
	dir = opendir("/proc/self/fd");
	if (dir) {
		__u64 n = 0;

		while (readdir(dir))
			n++;
		closedir(dir);
		/* less ".", ".." and the listing's own descriptor */
		gauge(p, "process_open_fds", "number of open file descriptors", n > 3 ? n - 3 : 0);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		gauge(p, "process_max_fds", "maximum number of open file descriptors",
		      (__u64)rl.rlim_cur);
}

static void render_reload(struct fw_prom *p, const struct fw_reload_stats *s)
{
	gauge(p, "fastwall_config_last_reload_successful",
	      "1 when the last configuration load (the start, or a reload on SIGHUP) succeeded, 0 "
	      "when it was rejected or applied with errors",
	      __atomic_load_n(&s->ok, __ATOMIC_RELAXED));
	fw_prom_family(p, "fastwall_config_last_reload_success_timestamp_seconds", "gauge",
		       "when the configuration was last loaded successfully, in seconds since the "
		       "Unix epoch");
	fw_prom_double(p, "fastwall_config_last_reload_success_timestamp_seconds", NULL,
		       (double)__atomic_load_n(&s->success_ns, __ATOMIC_RELAXED) / 1e9);
}

static void render_packets(struct fw_prom *p, struct fw_dp *dp)
{
	static const char *const help_p = "packets by verdict reason and where it applies (hook: "
					  "sandbox or guard), since the "
					  "maps were created";
	static const char *const help_b =
		"bytes by verdict reason and where it applies (hook: sandbox or guard), since the "
		"maps were created";
	struct fw_counter c[FW_REASON_MAX];

	if (fw_dp_stats_read(dp, c))
		return;
	for (int pass = 0; pass < 2; pass++) {
		const char *name = pass ? "fastwall_bytes_total" : "fastwall_packets_total";

		fw_prom_family(p, name, "counter", pass ? help_b : help_p);
		for (__u32 r = 0; r < FW_REASON_MAX; r++) {
			const char *rn = fw_reason_name(r);
			/* where it applies: the port guard on the node's own
			 * links, or a sandbox's traffic (TC and cgroup), so a
			 * sum of drops never mixes the two by accident */
			const char *hook = rn && !strncmp(rn, "guard-", 6) ? "guard" : "sandbox";
			const char *labels[] = {
				"reason", rn,	"verdict", fw_reason_drops(r) ? "drop" : "pass",
				"hook",	  hook, NULL};

			if (fw_reason_meaning(r))
				fw_prom_u64(p, name, labels, pass ? c[r].bytes : c[r].packets);
		}
	}
}

/* The limited subjects' egress on the uplinks: what left (paced: with a
 * departure time ahead of now, a part of sent), and what dropped, by
 * reason (the counters of fastwall_packets_total's bandwidth reasons). */
static void render_bandwidth(struct fw_prom *p, struct fw_dp *dp)
{
	static const __u32 drops[] = {FW_DROP_BW_HORIZON, FW_DROP_BW_POLICE};
	struct fw_counter bw[FW_BW_STAT_MAX], c[FW_REASON_MAX];

	if (dp->bandwidth_stats_fd < 0 || fw_bw_stats_read(dp->bandwidth_stats_fd, bw) ||
	    fw_dp_stats_read(dp, c))
		return;
	for (int pass = 0; pass < 2; pass++) {
		const char *name = pass ? "fastwall_bandwidth_bytes_total"
					: "fastwall_bandwidth_packets_total";

		fw_prom_family(
			p, name, "counter",
			pass ? "bytes of subjects with a bandwidth limit at the uplinks: sent "
			       "(paced: of those, held back by a departure time), dropped by "
			       "reason"
			     : "packets of subjects with a bandwidth limit at the uplinks: "
			       "sent (paced: of those, held back by a departure time), "
			       "dropped by reason");
		fw_prom_u64(p, name, (const char *[]){"outcome", "sent", NULL},
			    pass ? bw[FW_BW_STAT_SENT].bytes : bw[FW_BW_STAT_SENT].packets);
		fw_prom_u64(p, name, (const char *[]){"outcome", "paced", NULL},
			    pass ? bw[FW_BW_STAT_PACED].bytes : bw[FW_BW_STAT_PACED].packets);
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			fw_prom_u64(p, name,
				    (const char *[]){"outcome", "dropped", "reason",
						     fw_reason_name(drops[i]), NULL},
				    pass ? c[drops[i]].bytes : c[drops[i]].packets);
	}
}

/* Only the reasons a subject counted: with subjects churning, a series
 * per subject and reason of the table would be mostly zeros. */
static void render_subjects(struct fw_prom *p, struct fw_dp *dp, struct fw_registry *reg)
{
	static const char *const name = "fastwall_subject_packets_total";
	struct fw_reg_live *live;
	size_t n;

	fw_prom_family(
		p, name, "counter",
		"packets of each registered subject by verdict reason (metrics.per_subject)");
	live = fw_reg_live_subjects(reg, &n);
	for (size_t i = 0; i < n; i++) {
		__u64 c[FW_REASON_MAX];

		if (fw_dp_subject_stats_read(dp, live[i].id, c))
			continue;
		for (__u32 r = 0; r < FW_REASON_MAX; r++) {
			const char *labels[] = {"subject", live[i].name,
						"reason",  fw_reason_name(r),
						"verdict", fw_reason_drops(r) ? "drop" : "pass",
						NULL};

			if (c[r] && fw_reason_meaning(r))
				fw_prom_u64(p, name, labels, c[r]);
		}
	}
	free(live);
}

struct map_fill {
	const char *map;
	__u64 n, max;
};

/* The maps fastwalld keeps a count of: not walked. */
static bool map_counted(const char *name)
{
	return !strcmp(name, "fastwall_learned") || !strcmp(name, "fastwall_conns") ||
	       !strcmp(name, "fastwall_subject_meta");
}

/* Entries of a hash or trie map, key by key (a syscall each: the walk's
 * thread only). Entries deleted meanwhile can restart the walk: capped
 * at max_entries. */
static int map_count(int fd, __u64 *n, __u64 *max)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *base, *a, *b, *t;
	__u64 k = 0;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	switch (info.type) {
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
	case BPF_MAP_TYPE_LPM_TRIE:
		break;
	default:
		return -EOPNOTSUPP; /* arrays are always full, rings have no entries */
	}
	base = calloc(2, info.key_size ? info.key_size : 1);
	if (!base)
		return -ENOMEM;
	a = base;
	b = (char *)base + info.key_size;
	err = bpf_map_get_next_key(fd, NULL, a);
	while (!err && k < info.max_entries) {
		k++;
		err = bpf_map_get_next_key(fd, a, b);
		t = a;
		a = b;
		b = t;
	}
	err = err && errno != ENOENT ? -errno : 0;
	free(base);
	*n = k;
	*max = info.max_entries;
	return err;
}

#define SCAN_ENTRY_(name, field, version, late) {#name, offsetof(struct fw_dp, field)},

static const struct {
	const char *name;
	size_t off;
} scan_maps[] = {FW_DP_MAPS(SCAN_ENTRY_)};

static void scan_maps_once(struct fw_metrics *m, struct fw_dp *dp)
{
	struct map_scan r[FW_MAP_SCAN_MAX];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(scan_maps) / sizeof(scan_maps[0]) && n < FW_MAP_SCAN_MAX;
	     i++) {
		int fd = *(const int *)((const char *)dp + scan_maps[i].off);

		if (fd < 0 || map_counted(scan_maps[i].name) || map_count(fd, &r[n].n, &r[n].max))
			continue;
		snprintf(r[n].name, sizeof(r[n].name), "%s", scan_maps[i].name);
		n++;
	}
	pthread_mutex_lock(&m->lock);
	memcpy(m->scan, r, n * sizeof(r[0]));
	m->nscan = n;
	pthread_mutex_unlock(&m->lock);
}

/* Walks the maps every FW_MAP_SCAN_S, never on a scrape: a scrape reads
 * the last counts. */
static void *scan_main(void *arg)
{
	struct fw_metrics *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		struct fw_dp *dp = m->parts.dp;
		struct timespec ts;

		pthread_mutex_unlock(&m->lock);
		if (dp)
			scan_maps_once(m, dp);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += FW_MAP_SCAN_S;
		pthread_mutex_lock(&m->lock);
		while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void render_maps(struct fw_prom *p, const struct fw_metrics_parts *parts,
			const struct fw_learn_stats *ls, const struct map_scan *scan, size_t nscan)
{
	struct map_fill m[3 + FW_MAP_SCAN_MAX];
	size_t n = 0;
	__u64 *conns = parts->dp ? __atomic_load_n(&parts->dp->conn_count, __ATOMIC_ACQUIRE) : NULL;

	/* only the maps whose fill is known without a scan: the learner's
	 * count of its table, the per-subject connection counts (a mapped
	 * array), the registry's subjects */
	if (ls)
		m[n++] = (struct map_fill){"fastwall_learned", ls->entries, FW_MAX_LEARNED};
	if (conns) {
		__u64 sum = 0;

		for (__u32 i = 0; i < FW_MAX_SUBJECTS; i++)
			sum += __atomic_load_n(&conns[i], __ATOMIC_RELAXED);
		m[n++] = (struct map_fill){"fastwall_conns", sum, FW_MAX_CONNS};
	}
	if (parts->reg)
		m[n++] = (struct map_fill){"fastwall_subject_meta", fw_reg_count(parts->reg),
					   FW_MAX_SUBJECTS - 1};
	for (size_t i = 0; i < nscan; i++)
		m[n++] = (struct map_fill){scan[i].name, scan[i].n, scan[i].max};
	if (!n)
		return;
	fw_prom_family(p, "fastwall_map_entries", "gauge",
		       "entries held in a pinned map: kept by fastwalld, or its hash maps' "
		       "as last walked (every 30 s)");
	for (size_t i = 0; i < n; i++)
		fw_prom_u64(p, "fastwall_map_entries", (const char *[]){"map", m[i].map, NULL},
			    m[i].n);
	fw_prom_family(p, "fastwall_map_max_entries", "gauge", "capacity of a pinned map");
	for (size_t i = 0; i < n; i++)
		fw_prom_u64(p, "fastwall_map_max_entries", (const char *[]){"map", m[i].map, NULL},
			    m[i].max);
}

static void render_learn(struct fw_prom *p, const struct fw_learn_stats *s)
{
	fw_prom_family(p, "fastwall_dns_decisions_total", "counter",
		       "parsed queries by the policy's verdict: allowed (forwarded), denied "
		       "(NXDOMAIN), no-policy (SERVFAIL until the policy is replayed)");
	fw_prom_u64(p, "fastwall_dns_decisions_total", (const char *[]){"verdict", "allowed", NULL},
		    s->allowed);
	fw_prom_u64(p, "fastwall_dns_decisions_total", (const char *[]){"verdict", "denied", NULL},
		    s->denied);
	fw_prom_u64(p, "fastwall_dns_decisions_total",
		    (const char *[]){"verdict", "no-policy", NULL}, s->no_policy);
	gauge(p, "fastwall_learned_addresses", "DNS-learned addresses held now", s->entries);
	counter(p, "fastwall_learned_total", "learned addresses written, new or extended",
		s->learned);
	counter(p, "fastwall_learned_revoked_total",
		"learned addresses removed because no name that taught them is allowed any more",
		s->revoked);
	counter(p, "fastwall_learned_evicted_total",
		"learned addresses pushed out by the per-subject cap", s->evicted);
	counter(p, "fastwall_learned_cap_rejected_total",
		"addresses not learned: the subject's cap is reached and every address it holds "
		"has "
		"a live connection",
		s->cap_rejected);
	counter(p, "fastwall_learned_port_cap_rejected_total",
		"port sets refused: the subject's share of port-set entries is used",
		s->port_cap_rejected);
	counter(p, "fastwall_learned_expired_total", "leases collected after they ran out",
		s->expired);
	fw_prom_family(p, "fastwall_lease_renewals_total", "counter",
		       "leases renewed for an open connection (connection) or given a last renewal "
		       "after it ended (grace)");
	fw_prom_u64(p, "fastwall_lease_renewals_total",
		    (const char *[]){"kind", "connection", NULL}, s->renewed);
	fw_prom_u64(p, "fastwall_lease_renewals_total", (const char *[]){"kind", "grace", NULL},
		    s->grace);
	counter(p, "fastwall_learn_kernel_errors_total", "learned-map writes the kernel refused",
		s->kernel_errors);
}

static void render_dnsp(struct fw_prom *p, struct fw_dnsp *dnsp)
{
	struct fw_dnsp_stats s;

	fw_dnsp_get_stats(dnsp, &s);
	fw_prom_family(p, "fastwall_dns_queries_total", "counter",
		       "client messages the DNS proxy received, by transport");
	fw_prom_u64(p, "fastwall_dns_queries_total", (const char *[]){"transport", "udp", NULL},
		    s.queries_udp);
	fw_prom_u64(p, "fastwall_dns_queries_total", (const char *[]){"transport", "tcp", NULL},
		    s.queries_tcp);
	fw_prom_family(p, "fastwall_dns_responses_total", "counter",
		       "responses the DNS proxy sent to clients, by rcode");
	for (unsigned int r = 0; r < 16; r++) {
		/* the usual ones always, so a query can rate them from zero */
		if (s.rcodes[r] || r <= 5)
			fw_prom_u64(p, "fastwall_dns_responses_total",
				    (const char *[]){"rcode", rcode_names[r], NULL}, s.rcodes[r]);
	}
	fw_prom_family(p, "fastwall_dns_upstream_duration_seconds", "histogram",
		       "time from sending a query upstream to its answer (timeouts are not in it)");
	fw_prom_latency(p, "fastwall_dns_upstream_duration_seconds", NULL, s.latency,
			s.latency_sum_ns);
	{
		struct fw_dnsp_upstream u[FW_DNSP_MAX_UPSTREAMS];
		bool up[FW_DNSP_MAX_UPSTREAMS];
		size_t n = fw_dnsp_upstream_health(dnsp, u, up, FW_DNSP_MAX_UPSTREAMS);
		char name[DNSP_NAME_LEN];

		fw_prom_family(p, "fastwall_dns_upstream_up", "gauge",
			       "1 while an upstream answers (its last probe or exchange), 0 once "
			       "it timed out or failed");
		for (size_t i = 0; i < n; i++) {
			fw_dnsp_upstream_str(&u[i], name, sizeof(name));
			fw_prom_u64(p, "fastwall_dns_upstream_up",
				    (const char *[]){"upstream", name, NULL}, up[i]);
		}
		fw_prom_family(p, "fastwall_dns_probes_total", "counter",
			       "health probes of the upstreams, by result (ok: answered, failed: "
			       "timed out or not sent)");
		fw_prom_u64(p, "fastwall_dns_probes_total", (const char *[]){"result", "ok", NULL},
			    s.probes_ok);
		fw_prom_u64(p, "fastwall_dns_probes_total",
			    (const char *[]){"result", "failed", NULL}, s.probes_failed);
	}
	counter(p, "fastwall_dns_forwarded_total", "queries sent to an upstream", s.forwarded);
	counter(p, "fastwall_dns_upstream_timeouts_total", "upstream exchanges that timed out",
		s.upstream_timeouts);
	counter(p, "fastwall_dns_upstream_errors_total",
		"upstream answers with another rcode than NOERROR or NXDOMAIN, or malformed",
		s.upstream_errors);
	counter(p, "fastwall_dns_malformed_total", "client messages dropped or answered FORMERR",
		s.malformed);
	counter(p, "fastwall_dns_truncated_total", "UDP answers cut to the client's size (TC)",
		s.truncated);
	counter(p, "fastwall_dns_overload_total", "queries dropped with every exchange slot busy",
		s.overload);
	counter(p, "fastwall_dns_tcp_rejected_total", "client TCP connections refused over a limit",
		s.tcp_rejected);
	counter(p, "fastwall_dns_tcp_evicted_total",
		"client TCP connections closed to make room for a newcomer", s.tcp_evicted);
}

static void render_l7(struct fw_prom *p, const struct fw_l7_counters *c)
{
	gauge(p, "fastwall_l7_up",
	      "1 while the layer-7 proxy accepts connections (pinned connections go to it), 0 "
	      "while they drop with l7-proxy-down",
	      __atomic_load_n(&c->up, __ATOMIC_RELAXED));
	fw_prom_family(p, "fastwall_l7_connections_total", "counter",
		       "verdicts of the layer-7 proxy on connections (TLS) and requests (HTTP), by "
		       "reason");
	for (unsigned int r = 0; r < FW_L7_REASON_MAX; r++)
		fw_prom_u64(p, "fastwall_l7_connections_total",
			    (const char *[]){"reason", fw_l7_reason_name(r), NULL},
			    __atomic_load_n(&c->connections[r], __ATOMIC_RELAXED));
	gauge(p, "fastwall_l7_active_connections",
	      "pinned connections the layer-7 proxy holds open now",
	      __atomic_load_n(&c->active, __ATOMIC_RELAXED));
	fw_prom_family(p, "fastwall_l7_bytes_total", "counter",
		       "bytes of pinned connections that ended, by direction (up: sandbox to "
		       "destination)");
	fw_prom_u64(p, "fastwall_l7_bytes_total", (const char *[]){"direction", "up", NULL},
		    __atomic_load_n(&c->bytes_up, __ATOMIC_RELAXED));
	fw_prom_u64(p, "fastwall_l7_bytes_total", (const char *[]){"direction", "down", NULL},
		    __atomic_load_n(&c->bytes_down, __ATOMIC_RELAXED));
	counter(p, "fastwall_l7_restarts_total",
		"times fastwalld started the layer-7 proxy again after it ended",
		__atomic_load_n(&c->restarts, __ATOMIC_RELAXED));
	counter(p, "fastwall_l7_reports_malformed_total",
		"datagrams on the proxy's report socket that were no report",
		__atomic_load_n(&c->reports_malformed, __ATOMIC_RELAXED));
	if (!__atomic_load_n(&c->vaults, __ATOMIC_ACQUIRE))
		return;
	gauge(p, "fastwall_l7_vaults",
	      "subjects whose credential vault is in the layer-7 proxy's map (it injects their "
	      "credentials)",
	      fw_l7_vaults_count(__atomic_load_n(&c->vaults, __ATOMIC_ACQUIRE)));
	gauge(p, "fastwall_l7_ca_expiry_seconds",
	      "when the layer-7 proxy's signing CA certificate expires (notAfter, Unix time)",
	      __atomic_load_n(&c->ca_not_after, __ATOMIC_RELAXED));
}

static void on_requests(void *ctx, const char *path, int code, uint64_t n)
{
	struct fw_prom *p = ctx;
	char c[8];

	snprintf(c, sizeof(c), "%d", code);
	fw_prom_u64(p, "fastwall_actions_requests_total",
		    (const char *[]){"path", path, "code", c, NULL}, n);
}

static void on_ops(void *ctx, const char *op, int code, __u64 n)
{
	struct fw_prom *p = ctx;
	char c[8];

	snprintf(c, sizeof(c), "%d", code);
	fw_prom_u64(p, "fastwall_actions_operations_total",
		    (const char *[]){"operation", op, "code", c, NULL}, n);
}

static void on_op_latency(void *ctx, const char *op, const __u64 *counts, __u64 sum_ns)
{
	fw_prom_latency(ctx, "fastwall_actions_request_duration_seconds",
			(const char *[]){"operation", op, NULL}, counts, sum_ns);
}

static int render(const struct fw_metrics_parts *parts, size_t nattached,
		  const struct map_scan *scan, size_t nscan, char **out, size_t *len)
{
	struct fw_prom p = {};
	struct fw_learn_stats ls;
	char abi[16];

	snprintf(abi, sizeof(abi), "%d", FW_ABI_VERSION);
	fw_prom_family(&p, "fastwall_build_info", "gauge",
		       "the running fastwalld: its version and map ABI");
	fw_prom_u64(&p, "fastwall_build_info",
		    (const char *[]){"version", FW_VERSION, "abi", abi, NULL}, 1);
	render_process(&p);
	if (parts->reload)
		render_reload(&p, parts->reload);
	if (parts->dp) {
		render_packets(&p, parts->dp);
		gauge(&p, "fastwall_interfaces_attached",
		      "sandbox-facing interfaces fastwalld attached the programs to", nattached);
		render_bandwidth(&p, parts->dp);
	}
	if (parts->dp) {
		__u64 lost[FW_EVENT_LOST_SLOTS];

		if (!fw_dp_events_lost_read(parts->dp, lost)) {
			fw_prom_family(
				&p, "fastwall_events_lost_total", "counter",
				"events the data path could not queue because the ring buffer "
				"was full, by type (deny, allow sample)");
			fw_prom_u64(&p, "fastwall_events_lost_total",
				    (const char *[]){"type", "deny", NULL}, lost[FW_EVENT_DROP]);
			fw_prom_u64(&p, "fastwall_events_lost_total",
				    (const char *[]){"type", "allow", NULL}, lost[FW_EVENT_ALLOW]);
		}
	}
	if (parts->events_suppressed)
		counter(&p, "fastwall_events_suppressed_total",
			"events the per-subject rate limit left out, counted when the subject's "
			"next event reports them",
			__atomic_load_n(parts->events_suppressed, __ATOMIC_RELAXED));
	if (parts->reg)
		gauge(&p, "fastwall_subjects",
		      "subjects registered (static, pushed, process sandboxes)",
		      fw_reg_count(parts->reg));
	if (parts->reg && parts->dp && parts->per_subject)
		render_subjects(&p, parts->dp, parts->reg);
	if (parts->learn) {
		fw_learn_get_stats(parts->learn, &ls);
		render_learn(&p, &ls);
	}
	render_maps(&p, parts, parts->learn ? &ls : NULL, scan, nscan);
	if (parts->dnsp)
		render_dnsp(&p, parts->dnsp);
	if (parts->l7)
		render_l7(&p, parts->l7);
	if (parts->http) {
		fw_prom_family(&p, "fastwall_actions_requests_total", "counter",
			       "requests the actions listeners answered, by path and status code");
		fw_http_requests(parts->http, on_requests, &p);
	}
	if (parts->actions) {
		fw_prom_family(&p, "fastwall_actions_operations_total", "counter",
			       "action envelopes answered, by operation (invalid: not a valid "
			       "envelope) and status code");
		fw_actions_op_counts(parts->actions, on_ops, &p);
		fw_prom_family(
			&p, "fastwall_actions_request_duration_seconds", "histogram",
			"time from an action envelope's arrival to its answer, by operation");
		fw_actions_op_latency(parts->actions, on_op_latency, &p);
	}
	if (parts->reaper)
		render_rounds(&p, "fastwall_reaper_round_seconds",
			      "fastwall_reaper_last_round_seconds",
			      "the reaper (what removed subjects left in the maps)", parts->reaper);
	if (parts->refresh)
		render_rounds(&p, "fastwall_refresh_round_seconds",
			      "fastwall_refresh_last_round_seconds",
			      "the lease refresh (renewals, expiries)", parts->refresh);
	if (parts->monitor) {
		struct fw_monitor_stats ms;

		fw_monitor_get_stats(parts->monitor, &ms);
		gauge(&p, "fastwall_monitor_readers", "readers connected to the monitor socket",
		      ms.readers);
		counter(&p, "fastwall_monitor_events_dropped_total",
			"events monitor readers lost because their queue was full", ms.dropped);
	}
	if (p.oom) {
		free(p.buf);
		return -ENOMEM;
	}
	*out = p.buf;
	*len = p.len;
	return 0;
}

int fw_metrics_render(const struct fw_metrics_parts *parts, size_t nattached, char **out,
		      size_t *len)
{
	return render(parts, nattached, NULL, 0, out, len);
}

int fw_metrics_live(const struct fw_metrics_parts *parts, char *why, size_t len)
{
	__u64 now = fw_now_ns(), late = 0, t = parts->loop ? fw_loop_turned(parts->loop) : 0;
	unsigned int w;

	/* 0: not running yet (the start is a readiness matter) */
	if (t && now > t && now - t > FW_HEALTH_STALE_NS) {
		snprintf(why, len, "not live: the main loop has not turned for %.1f s",
			 (double)(now - t) / 1e9);
		return 503;
	}
	w = fw_dnsp_workers_stuck(parts->dnsp, now, FW_HEALTH_STALE_NS, &late);
	if (w) {
		snprintf(why, len, "not live: DNS proxy worker %u has not turned for %.1f s", w - 1,
			 (double)late / 1e9);
		return 503;
	}
	snprintf(why, len, "ok");
	return 200;
}

int fw_metrics_ready(const struct fw_metrics_parts *parts, const char *bpffs, const int *ifindex,
		     size_t nifs, char *why, size_t len)
{
	char path[320], name[IF_NAMESIZE];
	struct stat st;

	if (!parts->started) {
		snprintf(why, len,
			 "not ready: starting (loading, attaching, programming subjects)");
		return 503;
	}
	if (!parts->dp) {
		snprintf(why, len, "not ready: the data plane is not loaded");
		return 503;
	}
	if (parts->dns_wanted && !parts->dnsp) {
		snprintf(why, len, "not ready: the DNS proxy is not serving");
		return 503;
	}
	if (parts->l7 && !__atomic_load_n(&parts->l7->up, __ATOMIC_RELAXED)) {
		snprintf(why, len,
			 "not ready: the layer-7 proxy is not accepting connections (pinned "
			 "connections drop until it does)");
		return 503;
	}
	/* the pins are what a restart picks up: gone, state would be lost */
	snprintf(path, sizeof(path), "%s/fastwall_dispatch", bpffs);
	if (stat(path, &st)) {
		snprintf(why, len, "not ready: the maps are not pinned under %s", bpffs);
		return 503;
	}
	/* one tc query per port: a probe every few seconds can afford it */
	for (size_t i = 0; i < nifs; i++) {
		if (fw_dp_attached(ifindex[i]) || !if_indextoname((unsigned int)ifindex[i], name))
			continue; /* attached, or gone (its removal is on its way) */
		snprintf(why, len, "not ready: the programs are not attached to %s (ifindex %d)",
			 name, ifindex[i]);
		return 503;
	}
	snprintf(why, len, "ready");
	return 200;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, char *body, size_t len,
			     const char *type)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer_with_free_callback(len, body, free);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(c, (unsigned int)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, int status, const char *s)
{
	char *body;

	if (asprintf(&body, "%s\n", s) < 0)
		return MHD_NO;
	return reply(c, status, body, strlen(body), "text/plain; charset=utf-8");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct fw_metrics *m = cls;
	struct fw_metrics_parts parts;
	char why[384], *body;
	int *ifs = NULL;
	size_t len, nifs = 0;
	int status;

	(void)version;
	(void)upload_data;
	if (!*con_cls) {
		*con_cls = m; /* headers only so far */
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* no endpoint takes a body: drained */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text(c, 405, "method not allowed");
	pthread_mutex_lock(&m->lock);
	parts = m->parts;
	pthread_mutex_unlock(&m->lock);
	if (!strcmp(url, "/healthz")) {
		status = fw_metrics_live(&parts, why, sizeof(why));
		return text(c, status, why);
	}
	if (!strcmp(url, "/readyz")) {
		pthread_mutex_lock(&m->lock);
		if (m->nifs && (ifs = malloc(m->nifs * sizeof(*ifs)))) {
			memcpy(ifs, m->ifs, m->nifs * sizeof(*ifs));
			nifs = m->nifs;
		}
		pthread_mutex_unlock(&m->lock);
		status = fw_metrics_ready(&parts, m->bpffs, ifs, nifs, why, sizeof(why));
		free(ifs);
		return text(c, status, why);
	}
	if (!strcmp(url, "/metrics")) {
		struct map_scan *scan = NULL;
		size_t nscan = 0;
		int err;

		pthread_mutex_lock(&m->lock);
		nifs = m->nifs;
		if (m->nscan && (scan = malloc(m->nscan * sizeof(*scan)))) {
			memcpy(scan, m->scan, m->nscan * sizeof(*scan));
			nscan = m->nscan;
		}
		pthread_mutex_unlock(&m->lock);
		err = render(&parts, nifs, scan, nscan, &body, &len);
		free(scan);
		if (err)
			return text(c, 500, "out of memory");
		return reply(c, 200, body, len, FW_PROM_CONTENT_TYPE);
	}
	return text(c, 404, "404 page not found");
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	fw_debug("metrics: %s", line);
}

int fw_metrics_start(struct fw_metrics **out, const char *listen, const char *bpffs)
{
	struct sockaddr_storage ss;
	struct fw_metrics *m;

	if (fw_http_resolve(listen, &ss)) {
		fw_err("can't resolve metrics.listen %s", listen);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	snprintf(m->bpffs, sizeof(m->bpffs), "%s", bpffs);
	/* one thread: a scrape every few seconds, and a slow client must not
	 * cost more than one connection slot */
	m->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)FW_METRICS_TIMEOUT_S,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)FW_METRICS_MAX_CONN,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
	if (!m->d) {
		fw_err("can't listen on %s for metrics: %s", listen,
		       strerror(errno ? errno : EADDRINUSE));
		pthread_cond_destroy(&m->wake);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return -EADDRINUSE;
	}
	fw_info("metrics on http://%s/metrics, health on /healthz and /readyz", listen);
	*out = m;
	return 0;
}

void fw_metrics_publish(struct fw_metrics *m, const struct fw_metrics_parts *parts)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->parts = *parts;
	if (parts->dp && !m->scanning)
		m->scanning = !pthread_create(&m->scan_thread, NULL, scan_main, m);
	pthread_mutex_unlock(&m->lock);
}

int fw_metrics_set_attached(struct fw_metrics *m, const int *ifindex, size_t n)
{
	int *v = NULL;

	if (!m)
		return 0;
	if (n && !(v = malloc(n * sizeof(*v))))
		return -ENOMEM;
	if (n)
		memcpy(v, ifindex, n * sizeof(*v));
	pthread_mutex_lock(&m->lock);
	free(m->ifs);
	m->ifs = v;
	m->nifs = n;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void fw_metrics_stop(struct fw_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	if (m->scanning)
		pthread_join(m->scan_thread, NULL);
	MHD_stop_daemon(m->d);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m->ifs);
	free(m);
}
