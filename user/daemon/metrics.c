// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The metrics and health listener. See metrics.h and docs/operations.md
 * ("Metrics") for what each series means. */
#include <errno.h>
#include <microhttpd.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/prom.h"
#include "metrics.h"
#include "fastwall/version.h"

#define FW_METRICS_TIMEOUT_S 10
#define FW_METRICS_MAX_CONN  64
#define DNSP_NAME_LEN	     64 /* "[v6 address]:port" */

struct fw_metrics {
	struct MHD_Daemon *d;
	pthread_mutex_t lock; /* parts: held for a copy, never across a read */
	struct fw_metrics_parts parts;
	int *ifs; /* attached interfaces, under lock */
	size_t nifs;
	char bpffs[256];
};

static const char *const rcode_names[16] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",	 "REFUSED", "YXDOMAIN", "YXRRSET",
	"NXRRSET", "NOTAUTH", "NOTZONE",  "RCODE11",  "RCODE12", "RCODE13", "RCODE14",	"RCODE15",
};

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

static void render_packets(struct fw_prom *p, struct fw_dp *dp)
{
	static const char *const help_p = "packets by verdict reason, since the maps were created";
	static const char *const help_b = "bytes by verdict reason, since the maps were created";
	struct fw_counter c[FW_REASON_MAX];

	if (fw_dp_stats_read(dp, c))
		return;
	for (int pass = 0; pass < 2; pass++) {
		const char *name = pass ? "fastwall_bytes_total" : "fastwall_packets_total";

		fw_prom_family(p, name, "counter", pass ? help_b : help_p);
		for (__u32 r = 0; r < FW_REASON_MAX; r++) {
			const char *labels[] = {"reason", fw_reason_name(r), "verdict",
						fw_reason_drops(r) ? "drop" : "pass", NULL};

			if (fw_reason_meaning(r))
				fw_prom_u64(p, name, labels, pass ? c[r].bytes : c[r].packets);
		}
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

static void render_maps(struct fw_prom *p, const struct fw_metrics_parts *parts,
			const struct fw_learn_stats *ls)
{
	struct map_fill m[3];
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
	if (!n)
		return;
	fw_prom_family(p, "fastwall_map_entries", "gauge",
		       "entries held in a pinned map (only maps counted without a scan)");
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
	{
		double bounds[FW_DNSP_LAT_BUCKETS];

		for (unsigned int b = 0; b < FW_DNSP_LAT_BUCKETS; b++)
			bounds[b] = (double)fw_dnsp_latency_bounds_ns[b] / 1e9;
		fw_prom_family(p, "fastwall_dns_upstream_duration_seconds", "histogram",
			       "time from sending a query upstream to its answer (timeouts are not "
			       "in it)");
		fw_prom_histogram(p, "fastwall_dns_upstream_duration_seconds", NULL, bounds,
				  s.latency, FW_DNSP_LAT_BUCKETS, (double)s.latency_sum_ns / 1e9);
	}
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
	double bounds[FW_ACTIONS_LAT_BUCKETS];

	for (unsigned int b = 0; b < FW_ACTIONS_LAT_BUCKETS; b++)
		bounds[b] = (double)fw_actions_latency_bounds_ns[b] / 1e9;
	fw_prom_histogram(ctx, "fastwall_actions_request_duration_seconds",
			  (const char *[]){"operation", op, NULL}, bounds, counts,
			  FW_ACTIONS_LAT_BUCKETS, (double)sum_ns / 1e9);
}

int fw_metrics_render(const struct fw_metrics_parts *parts, size_t nattached, char **out,
		      size_t *len)
{
	struct fw_prom p = {};
	struct fw_learn_stats ls;
	char abi[16];

	snprintf(abi, sizeof(abi), "%d", FW_ABI_VERSION);
	fw_prom_family(&p, "fastwall_build_info", "gauge",
		       "the running fastwalld: its version and map ABI");
	fw_prom_u64(&p, "fastwall_build_info",
		    (const char *[]){"version", FW_VERSION, "abi", abi, NULL}, 1);
	if (parts->dp) {
		render_packets(&p, parts->dp);
		gauge(&p, "fastwall_interfaces_attached",
		      "sandbox-facing interfaces fastwalld attached the programs to", nattached);
	}
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
	render_maps(&p, parts, parts->learn ? &ls : NULL);
	if (parts->dnsp)
		render_dnsp(&p, parts->dnsp);
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
	if (!strcmp(url, "/healthz"))
		return text(c, 200, "ok");
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
		pthread_mutex_lock(&m->lock);
		nifs = m->nifs;
		pthread_mutex_unlock(&m->lock);
		if (fw_metrics_render(&parts, nifs, &body, &len))
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
	MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m->ifs);
	free(m);
}
