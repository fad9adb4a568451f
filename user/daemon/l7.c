// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layer-7 proxy (docs/egress-l7.md): fastwalld writes its nginx.conf,
 * starts nginx with fastwall's module as l7.user with CAP_BPF alone, hands
 * it the four maps it reads (opened read-only here) and one end of a
 * datagram socket pair on fixed descriptor numbers, logs its stderr, and
 * starts it again with a growing delay when it ends. FW_CF_L7_UP is set
 * only while both its ports accept a connection (a connect and a close on
 * loopback), and cleared the moment it ends, so a pinned connection's SYN
 * drops (l7-proxy-down) rather than passing unchecked. The proxy's reports
 * (struct fw_l7_report) become counters, monitor events and audit records
 * of its denials. Everything here runs on the event loop's thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "fastwall/l7.h"
#include "common/addr.h"
#include "common/hash.h"
#include "common/log.h"
#include "daemon.h"
#include "datapath/l7.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* the descriptors the proxy finds its maps and report socket on */
#define L7_FD_MAPS   3 /* 3..6: NAT, LEARNED, LEARNED_NAMES, NAMES */
#define L7_FD_REPORT 7
#define L7_FD_VAULTS 8	/* 8, 9: fastwall_l7_vaults, fastwall_l7_vault_gen */
#define L7_FD_CA     10 /* a pipe: the CA's certificate, then its key (PEM) */
#define L7_HIGH_FD   64 /* where the parent parks them before the fork */

#define L7_BACKOFF_MIN_NS  (100 * FW_NSEC_PER_MSEC)
#define L7_BACKOFF_MAX_NS  (30 * FW_NSEC_PER_SEC)
#define L7_STABLE_NS	   (60 * FW_NSEC_PER_SEC)   /* ran this long: the delay starts over */
#define L7_PROBE_FAST_NS   (100 * FW_NSEC_PER_MSEC) /* starting: until it accepts */
#define L7_PROBE_SLOW_NS   (5 * FW_NSEC_PER_SEC)    /* running: still accepting */
#define L7_STOP_GRACE_MS   5000			    /* SIGQUIT, then SIGKILL */
#define L7_GC_NS	   (10 * FW_NSEC_PER_SEC)
#define L7_OPEN_MAX	   (1u << 20)	 /* pinned connections tracked for the gauge */
#define L7_RELEASE_MAX	   FW_MAX_L7_NAT /* no more entries can be marked at once */
#define L7_RELEASE_TICK_NS (250 * FW_NSEC_PER_MSEC)
#define L7_REPORT_PACE_NS  (2 * FW_NSEC_PER_MSEC) /* reports read this often while they come */

static const char *const l7_maps[4] = {"fastwall_l7_nat", "fastwall_learned",
				       "fastwall_learned_names", "fastwall_names"};

#define L7_REASON_NAME_(id, verdict, name, meaning) name,
static const char *const l7_reason_names[] = {FW_L7_REASONS(L7_REASON_NAME_)};
#undef L7_REASON_NAME_

const char *fw_l7_reason_name(unsigned int reason)
{
	return reason < FW_L7_REASON_MAX ? l7_reason_names[reason] : NULL;
}

static void count_add(__u64 *c, __u64 n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

static void set_up(struct fw_daemon *d, bool up)
{
	struct l7_proxy *p = &d->l7;
	int err;

	if (p->counters.up == up)
		return;
	err = fw_dp_l7_set_up(d->dp, up);
	if (err) {
		/* not up in the data plane: its SYNs keep dropping; the next
		 * probe tries again */
		fw_err("l7 proxy: can't %s FW_CF_L7_UP: %s", up ? "set" : "clear", strerror(-err));
		if (up)
			return;
	}
	__atomic_store_n(&p->counters.up, up, __ATOMIC_RELAXED);
	if (up)
		d->kcfg.flags |= FW_CF_L7_UP;
	else
		d->kcfg.flags &= ~FW_CF_L7_UP;
	fw_info("l7 proxy %s",
		up ? "accepting connections: pinned connections go to it"
		   : "down: pinned connections drop (l7-proxy-down) until it is back");
}

/* --- the open pinned connections (the gauge) ----------------------------- */

struct l7_open {
	struct l7_open *next;
	struct fw_ip client;
	__be16 port;
	__u8 kind;
};

static unsigned int open_bucket(const struct fw_ip *client, __be16 port, __u8 kind)
{
	__u64 h = fw_fnv(FW_FNV_BASIS, client, sizeof(*client));

	h = fw_fnv(h, &port, sizeof(port));
	h = fw_fnv(h, &kind, sizeof(kind));
	return (unsigned int)(h % L7_OPEN_BUCKETS);
}

static struct l7_open **open_find(struct l7_proxy *p, const struct fw_l7_report *r)
{
	struct l7_open **e = &p->open[open_bucket(&r->client, r->client_port, r->kind)];

	for (; *e; e = &(*e)->next)
		if ((*e)->port == r->client_port && (*e)->kind == r->kind &&
		    !memcmp(&(*e)->client, &r->client, sizeof(r->client)))
			break;
	return e;
}

static void open_add(struct l7_proxy *p, const struct fw_l7_report *r)
{
	struct l7_open **at = open_find(p, r), *e;

	if (*at || p->nopen >= L7_OPEN_MAX)
		return; /* a second request of a kept-alive connection */
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->client = r->client;
	e->port = r->client_port;
	e->kind = r->kind;
	*at = e;
	p->nopen++;
	__atomic_store_n(&p->counters.active, p->nopen, __ATOMIC_RELAXED);
}

static void open_del(struct l7_proxy *p, const struct fw_l7_report *r)
{
	struct l7_open **at = open_find(p, r), *e = *at;

	if (!e)
		return;
	*at = e->next;
	free(e);
	p->nopen--;
	__atomic_store_n(&p->counters.active, p->nopen, __ATOMIC_RELAXED);
}

/* The proxy is gone: so are its connections. */
static void open_clear(struct l7_proxy *p)
{
	for (size_t i = 0; i < L7_OPEN_BUCKETS; i++) {
		while (p->open[i]) {
			struct l7_open *e = p->open[i];

			p->open[i] = e->next;
			free(e);
		}
	}
	p->nopen = 0;
	__atomic_store_n(&p->counters.active, 0, __ATOMIC_RELAXED);
}

/* --- closed connections' entries ------------------------------------------ */

/* The proxy closed a container's pinned connection (or refused it): its
 * fastwall_l7_nat entry stops counting in the subject's share now and is
 * deleted once its last segments had time to pass. Without this a
 * closed entry held its place until the collector's closed bound, and a
 * sandbox opening more than share / bound connections a second dropped
 * l7-full. A queue that is full leaves the entry to the collector. */
static void release_later(struct fw_daemon *d, const struct fw_l7_report *r)
{
	struct l7_proxy *p = &d->l7;
	struct fw_l7_nat_key k = {.client = r->client, .client_port = r->client_port};
	__u16 port = r->kind == FW_L7_HTTP ? d->cfg.l7_proxy_http_port : d->cfg.l7_proxy_tls_port;
	struct l7_release *e;

	if (!r->subject)
		return;
	k.proxy_port = htons(port);
	if (!p->release) {
		p->release = calloc(L7_RELEASE_MAX, sizeof(*p->release));
		if (!p->release)
			return;
	}
	if (p->release_n == L7_RELEASE_MAX)
		return;
	if (fw_dp_l7_closed(d->dp, &k, r->subject))
		return;
	e = &p->release[(p->release_head + p->release_n++) % L7_RELEASE_MAX];
	e->key = k;
	e->due_ns = fw_loop_now(d->loop) + FW_L7_RELEASE_NS;
}

static __u64 release_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct l7_proxy *p = &d->l7;
	__u64 now = fw_loop_now(l);

	(void)t;
	while (p->release_n && p->release[p->release_head].due_ns <= now) {
		fw_dp_l7_release(d->dp, &p->release[p->release_head].key);
		p->release_head = (p->release_head + 1) % L7_RELEASE_MAX;
		p->release_n--;
	}
	return L7_RELEASE_TICK_NS;
}

/* --- reports -------------------------------------------------------------- */

/* One audit record per denial within the subject's budget (the data
 * path's datapath.events rate and burst); *suppressed: how many the budget
 * left out since the last one. */
static bool audit_budget(struct fw_daemon *d, __u32 subject, __u64 *suppressed)
{
	struct l7_proxy *p = &d->l7;
	struct l7_budget *b;
	__u64 now = fw_loop_now(d->loop), interval;

	*suppressed = 0;
	if (!d->cfg.event_rate)
		return false;
	if (!p->budget) {
		p->budget = calloc(FW_MAX_SUBJECTS, sizeof(*p->budget));
		if (!p->budget)
			return true;
	}
	b = &p->budget[subject % FW_MAX_SUBJECTS];
	interval = FW_NSEC_PER_SEC / d->cfg.event_rate;
	if (!b->last_ns) {
		b->tokens = d->cfg.event_burst;
		b->last_ns = now;
	} else if (now - b->last_ns >= interval) {
		__u64 add = (now - b->last_ns) / interval;

		b->tokens = add + b->tokens > d->cfg.event_burst ? d->cfg.event_burst
								 : (__u32)(b->tokens + add);
		b->last_ns += add * interval;
	}
	if (!b->tokens) {
		b->suppressed++;
		return false;
	}
	b->tokens--;
	*suppressed = b->suppressed;
	b->suppressed = 0;
	return true;
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * FW_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* A probe's connection: the proxy reports it (no redirect recorded it),
 * and nobody should hear of it. */
static bool is_probe(const struct l7_proxy *p, const struct fw_l7_report *r)
{
	static const struct fw_ip lo4 = {.b = {[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1}};

	if (memcmp(&r->client, &lo4, sizeof(lo4)))
		return false;
	for (size_t i = 0; i < L7_PROBE_PORTS; i++)
		if (p->probe_ports[i] && p->probe_ports[i] == ntohs(r->client_port))
			return true;
	return false;
}

static void on_verdict(struct fw_daemon *d, const struct fw_l7_report *r, const char *sni)
{
	struct l7_proxy *p = &d->l7;
	const char *reason = fw_l7_reason_name(r->reason);
	const char *kind = r->kind == FW_L7_HTTP ? "http" : "tls";
	char name[FW_NAME_LEN] = "", src[FW_ADDR_STRLEN], dst[FW_ADDR_STRLEN], sport[8], dport[8];
	struct fw_monitor *m = __atomic_load_n(&d->monitor, __ATOMIC_ACQUIRE);
	bool pass = FW_L7_REASON_PASSES(r->reason);
	__u64 suppressed;

	count_add(&p->counters.connections[r->reason], 1);
	if (pass)
		open_add(p, r);
	else
		open_del(p, r);
	if (r->subject)
		fw_reg_name_of(&d->reg, r->subject, name, sizeof(name));
	if (fw_monitor_wants(m, FW_MON_L7)) {
		struct fw_mon_event me = {
			.kind = FW_MON_L7,
			.time_ns = realtime_ns(),
			.subject = r->subject,
			.name = name,
			.reason = reason,
			.src = r->client,
			.dst = r->dst,
			.sport = ntohs(r->client_port),
			.dport = ntohs(r->dst_port),
			.proto = 6,
			.ifname = kind,
			.qname = sni,
			.allowed = pass,
		};

		fw_monitor_publish(m, &me);
	}
	if (pass || !audit_budget(d, r->subject, &suppressed))
		return;
	fw_addr_str(&r->client, src, sizeof(src));
	/* no original destination (a peer no redirect recorded): none */
	if (memcmp(&r->dst, &(struct fw_ip){}, sizeof(r->dst)))
		fw_addr_str(&r->dst, dst, sizeof(dst));
	else
		snprintf(dst, sizeof(dst), "-");
	snprintf(sport, sizeof(sport), "%u", ntohs(r->client_port));
	snprintf(dport, sizeof(dport), "%u", ntohs(r->dst_port));
	fw_audit("deny", (const char *[]){"subject", name[0] ? name : "-", "reason", reason,
					  "proto", kind, "src", src, "sport", sport, "dst", dst,
					  "dport", dport, "name", sni[0] ? sni : "-", NULL});
	if (suppressed)
		fw_info("events of subject=%s suppressed by rate limit: %llu", name[0] ? name : "-",
			(unsigned long long)suppressed);
}

static void on_report(struct fw_daemon *d, const struct fw_l7_report *r)
{
	struct l7_proxy *p = &d->l7;
	char sni[FW_LEASE_NAME_SZ];

	if (r->version != FW_L7_REPORT_VERSION ||
	    (r->type != FW_L7_REPORT_VERDICT && r->type != FW_L7_REPORT_CLOSE) ||
	    (r->type == FW_L7_REPORT_VERDICT && r->reason >= FW_L7_REASON_MAX)) {
		count_add(&p->counters.reports_malformed, 1);
		return;
	}
	if (r->type == FW_L7_REPORT_CLOSE) {
		open_del(p, r);
		release_later(d, r);
		count_add(&p->counters.bytes_up, r->bytes_up);
		count_add(&p->counters.bytes_down, r->bytes_down);
		return;
	}
	if (is_probe(p, r))
		return;
	memcpy(sni, r->name, sizeof(sni));
	sni[sizeof(sni) - 1] = '\0';
	on_verdict(d, r, sni);
	/* a refused TLS connection is closed at once */
	if (r->kind == FW_L7_TLS && !FW_L7_REASON_PASSES(r->reason))
		release_later(d, r);
}

/* Reads what the proxy reported, a bounded batch (a flood of reports
 * does not starve the loop); the number read. */
static int drain_reports(struct fw_daemon *d)
{
	struct fw_l7_report r;
	int n = 0;

	for (; n < 256; n++) {
		ssize_t len = recv(d->l7.report_fd, &r, sizeof(r), MSG_DONTWAIT | MSG_TRUNC);

		if (len < 0)
			break;
		if ((size_t)len != sizeof(r)) {
			count_add(&d->l7.counters.reports_malformed, 1);
			continue;
		}
		on_report(d, &r);
	}
	return n;
}

/* Paced: while reports keep coming, the socket is read every
 * L7_REPORT_PACE_NS rather than woken for each datagram (two per
 * connection: a wake-up of this loop each cost more than the report);
 * once a round finds none, back to waking on the first. */
static __u64 report_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct l7_proxy *p = &d->l7;

	(void)t;
	if (p->report_fd < 0)
		return 0;
	if (drain_reports(d))
		return L7_REPORT_PACE_NS;
	if (p->report_watch && fw_loop_watch_mod(l, p->report_watch, EPOLLIN))
		return L7_REPORT_PACE_NS; /* keep reading on the timer */
	return 0;
}

static void on_reports(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct l7_proxy *p = &d->l7;

	(void)fd;
	(void)events;
	drain_reports(d);
	if (!fw_loop_watch_mod(l, p->report_watch, 0))
		fw_loop_timer_arm(l, &p->report_timer, L7_REPORT_PACE_NS);
}

/* --- its stderr, into the log --------------------------------------------- */

static void log_line(const char *s)
{
	if (strstr(s, "[emerg]") || strstr(s, "[alert]") || strstr(s, "[crit]") ||
	    strstr(s, "[error]"))
		fw_err("l7 proxy: %s", s);
	else if (strstr(s, "[warn]"))
		fw_warn("l7 proxy: %s", s);
	else
		fw_info("l7 proxy: %s", s);
}

static void on_stderr(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct l7_proxy *p = &d->l7;
	ssize_t n;

	(void)events;
	n = read(fd, p->errbuf + p->errlen, sizeof(p->errbuf) - 1 - p->errlen);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* every writer is gone: what is left is one last line */
		if (p->errlen) {
			p->errbuf[p->errlen] = '\0';
			log_line(p->errbuf);
			p->errlen = 0;
		}
		fw_loop_watch_del(l, p->err_watch);
		p->err_watch = NULL;
		close(fd);
		p->err_fd = -1;
		return;
	}
	p->errlen += (size_t)n;
	p->errbuf[p->errlen] = '\0';
	for (;;) {
		char *nl = strchr(p->errbuf, '\n');

		if (!nl && p->errlen < sizeof(p->errbuf) - 1)
			break;
		if (nl)
			*nl = '\0';
		log_line(p->errbuf);
		if (!nl) {
			p->errlen = 0;
			break;
		}
		p->errlen -= (size_t)(nl + 1 - p->errbuf);
		memmove(p->errbuf, nl + 1, p->errlen + 1);
	}
}

/* --- nginx.conf ------------------------------------------------------------ */

bool l7_ipv6_usable(void)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* The directives of credential injection (nginx.conf's part-2 lines): a
 * module without every one of them gets part 1's configuration alone. */
static const char *const l7_inject_directives[] = {
	"fastwall_l7_vaults", "fastwall_l7_ca",	       "fastwall_l7_terminate_to",
	"fastwall_l7_origin", "fastwall_l7_keepalive", "fastwall_l7_terminate",
	"fastwall_l7_sni",
};

/* nginx names a directive in its module's command table as a
 * NUL-terminated string: the module knows it when the file holds it. */
bool l7_module_injects(const char *path, char *missing, size_t len)
{
	FILE *f = fopen(path, "re");
	char *data = NULL;
	size_t cap = 0, n = 0;
	bool ok = true;

	/* the whole file (a shared object: any byte, 0xff too) */
	while (f) {
		char *more;

		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			more = realloc(data, cap);
			if (!more)
				break;
			data = more;
		}
		n += fread(data + n, 1, cap - n, f);
		if (n < cap)
			break;
	}
	if (!f || ferror(f) || !data) {
		int err = f ? (ferror(f) ? EIO : ENOMEM) : errno;

		if (f)
			fclose(f);
		free(data);
		snprintf(missing, len, "every one (can't read it: %s)", strerror(err));
		return false;
	}
	fclose(f);
	for (size_t i = 0; ok && i < sizeof(l7_inject_directives) / sizeof(l7_inject_directives[0]);
	     i++) {
		const char *d = l7_inject_directives[i];

		if (!memmem(data, n, d, strlen(d) + 1)) {
			snprintf(missing, len, "%s", d);
			ok = false;
		}
	}
	free(data);
	return ok;
}

/* The configuration the proxy runs: generated whole from cfg, never
 * edited by hand (a start rewrites it). With inject, the lines of
 * credential injection (docs/l7-proxy.md). */
int l7_conf_print(FILE *f, const struct fw_cfg *cfg, bool ipv6, bool inject)
{
	__u32 wc = (cfg->l7_max_connections * 2 + cfg->l7_workers - 1) / cfg->l7_workers + 32;
	char var[256], tls[256], tls6[48] = "", http6[48] = "";
	const char *rd = cfg->l7_runtime_dir;

	snprintf(var, sizeof(var), "%s/var", rd);
	snprintf(tls, sizeof(tls), "%s/tls", rd);
	if (ipv6) {
		snprintf(tls6, sizeof(tls6), "        listen [::]:%u;\n", cfg->l7_proxy_tls_port);
		snprintf(http6, sizeof(http6), "        listen [::]:%u;\n",
			 cfg->l7_proxy_http_port);
	}
	fprintf(f,
		"# written by fastwalld from its l7 section at every start; edits are lost\n"
		"load_module %s;\n"
		"load_module %s;\n"
		"daemon off;\n"
		"master_process on;\n"
		"worker_processes %u;\n"
		"pid %s/nginx.pid;\n"
		"error_log stderr notice;\n"
		"fastwall_l7_maps fd:%d,%d,%d,%d;\n"
		"fastwall_l7_report fd:%d;\n"
		"fastwall_l7_ech %s;\n"
		"fastwall_l7_subject_connections %u;\n",
		cfg->l7_stream_module, cfg->l7_module, cfg->l7_workers, var, L7_FD_MAPS,
		L7_FD_MAPS + 1, L7_FD_MAPS + 2, L7_FD_MAPS + 3, L7_FD_REPORT,
		cfg->l7_ech_allow ? "allow" : "deny", cfg->l7_subject_connections);
	if (inject)
		fprintf(f,
			"fastwall_l7_vaults fd:%d,%d;\n"
			"fastwall_l7_ca fd:%d;\n",
			L7_FD_VAULTS, L7_FD_VAULTS + 1, L7_FD_CA);
	fprintf(f,
		"\n"
		"events {\n"
		"    worker_connections %u;\n"
		"}\n"
		"\n"
		"stream {\n"
		"    server {\n"
		"        listen %u;\n"
		"%s"
		"        ssl_preread on;\n"
		"        fastwall_l7_pin tls;\n",
		wc, cfg->l7_proxy_tls_port, tls6);
	if (inject)
		fprintf(f, "        fastwall_l7_terminate_to unix:%s/term.sock;\n", var);
	fprintf(f,
		"        proxy_pass $fastwall_l7_upstream;\n"
		"    }\n"
		"}\n"
		"\n"
		"http {\n"
		"    access_log off;\n"
		"    client_max_body_size 0; # bodies stream through: the destination limits them\n"
		"    client_body_temp_path %s/client_body;\n"
		"    proxy_temp_path %s/proxy;\n"
		"    fastcgi_temp_path %s/fastcgi;\n"
		"    uwsgi_temp_path %s/uwsgi;\n"
		"    scgi_temp_path %s/scgi;\n"
		"    server {\n"
		"        listen %u;\n"
		"%s"
		"        fastwall_l7_pin http;\n"
		"        location / {\n"
		"            proxy_pass http://$fastwall_l7_upstream;\n"
		"            proxy_set_header Host $http_host;\n"
		"            proxy_http_version 1.1;\n"
		"            proxy_set_header Connection \"\";\n"
		"            proxy_buffering off;\n"
		"            proxy_request_buffering off;\n"
		"        }\n"
		"    }\n",
		var, var, var, var, var, cfg->l7_proxy_http_port, http6);
	if (inject)
		fprintf(f,
			"    map $http_upgrade $fastwall_l7_connection { default upgrade; \"\" "
			"\"\"; }\n"
			"    upstream fastwall_l7_origin {\n"
			"        fastwall_l7_origin;\n"
			"        fastwall_l7_keepalive %u;\n"
			"    }\n"
			"    server {\n"
			"        listen unix:%s/term.sock ssl http2 proxy_protocol;\n"
			"        ssl_certificate %s/placeholder.crt;\n"
			"        ssl_certificate_key %s/placeholder.key;\n"
			"        ssl_protocols TLSv1.2 TLSv1.3;\n"
			"        fastwall_l7_terminate on;\n"
			"        location / {\n"
			"            proxy_pass https://fastwall_l7_origin;\n"
			"            proxy_http_version 1.1;\n"
			"            proxy_set_header Host $host;\n"
			"            proxy_set_header Upgrade $http_upgrade;\n"
			"            proxy_set_header Connection $fastwall_l7_connection;\n"
			"            proxy_ssl_server_name on;\n"
			"            proxy_ssl_name $fastwall_l7_sni;\n"
			"            proxy_ssl_verify on;\n"
			"            proxy_ssl_verify_depth 8;\n"
			"            proxy_ssl_trusted_certificate %s/upstream-ca.crt;\n"
			"            proxy_request_buffering off;\n"
			"            proxy_buffering off;\n"
			"        }\n"
			"    }\n",
			cfg->l7_upstream_keepalive, var, tls, tls, tls);
	fprintf(f, "}\n");
	return ferror(f) ? -EIO : 0;
}

int l7_write_conf(const struct fw_cfg *cfg, const char *path, bool ipv6, bool inject)
{
	char tmp[300];
	FILE *f;
	int err;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	err = l7_conf_print(f, cfg, ipv6, inject);
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* --- the process ----------------------------------------------------------- */

static void schedule(struct fw_daemon *d, __u64 delay_ns)
{
	fw_loop_timer_arm(d->loop, &d->l7.timer, delay_ns);
}

/* In the child, between fork and exec: only async-signal-safe calls. The
 * descriptors go to their fixed numbers, every other one is closed, the
 * user changes and keeps CAP_BPF (and CAP_NET_BIND_SERVICE for a port
 * below 1024, CAP_IPC_LOCK when it injects) as its only capabilities, ambient so they survive the
 * exec; it leads a process group of its own (its workers join it), so
 * that what is left of it when the master ends can be killed at once. A
 * failure is written to stderr (fastwalld's log) and ends it. */
static void child(const struct l7_proxy *p, const char *const *argv)
{
	static const char *const envp[] = {NULL};
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct c[2] = {};
	const char *what = "signals";
	sigset_t none;
	int null_fd;

	sigemptyset(&none);
	/* a process group of its own: its workers go with the master */
	if (sigprocmask(SIG_SETMASK, &none, NULL) || signal(SIGPIPE, SIG_DFL) == SIG_ERR ||
	    setsid() < 0)
		goto fail;
	what = "descriptors";
	null_fd = open("/dev/null", O_RDONLY);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(p->child_err, 1) < 0 ||
	    dup2(p->child_err, 2) < 0 || dup2(p->child_report, L7_FD_REPORT) < 0)
		goto fail;
	for (int i = 0; i < 4; i++)
		if (dup2(p->child_maps[i], L7_FD_MAPS + i) < 0)
			goto fail;
	if (p->inject &&
	    (dup2(p->child_vaults[0], L7_FD_VAULTS) < 0 ||
	     dup2(p->child_vaults[1], L7_FD_VAULTS + 1) < 0 || dup2(p->child_ca, L7_FD_CA) < 0))
		goto fail;
	syscall(SYS_close_range, (p->inject ? L7_FD_CA : L7_FD_REPORT) + 1, ~0u, 0);
	what = "user";
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(0, NULL) || setgid(p->gid) ||
	    setuid(p->uid))
		goto fail;
	what = "capabilities";
	c[CAP_BPF / 32].permitted = c[CAP_BPF / 32].effective = c[CAP_BPF / 32].inheritable =
		1u << (CAP_BPF % 32);
	if (p->bind_low)
		c[0].permitted |= c[0].effective |= c[0].inheritable |= 1u << CAP_NET_BIND_SERVICE;
	/* the module locks its memory (the CA's key, the vaults it copied) */
	if (p->inject)
		c[0].permitted |= c[0].effective |= c[0].inheritable |= 1u << CAP_IPC_LOCK;
	if (syscall(SYS_capset, &h, c) ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_BPF, 0, 0) ||
	    (p->bind_low &&
	     prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0)) ||
	    (p->inject && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_IPC_LOCK, 0, 0)))
		goto fail;
	/* fastwalld gone without stopping it: so is the proxy (the credential
	 * change above cleared an earlier setting) */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) || getppid() != p->parent)
		_exit(1);
	what = "exec";
	execve(argv[0], (char *const *)argv, (char *const *)envp);
fail:
	(void)!write(2, "fastwalld: l7 proxy: can't set up its ", 38);
	(void)!write(2, what, strlen(what));
	(void)!write(2, ": ", 2);
	(void)!write(2, strerror(errno), strlen(strerror(errno)));
	(void)!write(2, "\n", 1);
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The four maps, read-only, parked at high numbers for the fork. */
static int open_maps(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	LIBBPF_OPTS(bpf_obj_get_opts, o, .file_flags = BPF_F_RDONLY);
	char path[512];

	for (int i = 0; i < 4; i++) {
		int fd;

		if (p->child_maps[i] >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->dp->pin_root, l7_maps[i]);
		fd = bpf_obj_get_opts(path, &o);
		if (fd < 0) {
			fw_err("l7 proxy: can't open %s read-only: %s", path, strerror(-fd));
			return fd;
		}
		p->child_maps[i] = fcntl(fd, F_DUPFD_CLOEXEC, L7_HIGH_FD);
		close(fd);
		if (p->child_maps[i] < 0)
			return -errno;
	}
	if (p->inject && p->child_vaults[0] < 0) {
		int fds[2], err;

		err = fw_l7_vaults_ro_fds(p->counters.vaults, &fds[0], &fds[1]);
		if (err) {
			fw_err("l7 proxy: can't open the vaults' maps read-only: %s",
			       strerror(-err));
			return err;
		}
		for (int i = 0; i < 2; i++) {
			p->child_vaults[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, L7_HIGH_FD);
			close(fds[i]);
			if (p->child_vaults[i] < 0)
				return -errno;
		}
	}
	return 0;
}

/* This start's CA pipe: the certificate and the key written whole (the
 * pipe holds them: nothing waits on the proxy), the write end closed, the
 * read end parked for the fork. The proxy reads it once, at its start. */
static int ca_pipe(struct l7_proxy *p)
{
	size_t need = p->ca.cert_len + p->ca.key_len;
	int fds[2], err = 0;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if ((size_t)fcntl(fds[1], F_GETPIPE_SZ) < need &&
	    fcntl(fds[1], F_SETPIPE_SZ, (int)need) < 0)
		err = -errno;
	if (!err && (write(fds[1], p->ca.cert_pem, p->ca.cert_len) != (ssize_t)p->ca.cert_len ||
		     write(fds[1], p->ca.key_pem, p->ca.key_len) != (ssize_t)p->ca.key_len))
		err = -EIO;
	close(fds[1]);
	if (!err) {
		p->child_ca = fcntl(fds[0], F_DUPFD_CLOEXEC, L7_HIGH_FD);
		if (p->child_ca < 0)
			err = -errno;
	}
	close(fds[0]);
	return err;
}

/* Every subject's vault into the proxy's map again (a start). */
static void vaults_resync(struct fw_daemon *d)
{
	char(*names)[FW_NAME_LEN];
	size_t n = 0;

	if (!d->actions_on || !d->l7.counters.vaults)
		return;
	names = fw_reg_vault_names(&d->reg, &n);
	for (size_t i = 0; i < n; i++) {
		struct fw_entry *e = fw_reg_get(&d->reg, names[i], false);
		int err;

		if (!e)
			continue;
		if (e->id) {
			err = fw_l7_vaults_sync(d->l7.counters.vaults, e->id, d->actions.vaults,
						names[i]);
			if (err)
				fw_err("l7 proxy: subject %s: its vault is not injected: %s",
				       names[i], strerror(-err));
		}
		fw_reg_put(&d->reg, e);
	}
	free(names);
}

static void on_exit_fd(struct fw_loop *l, int fd, __u32 events, void *ctx);

static int spawn(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	char conf[300];
	const char *argv[] = {d->cfg.l7_nginx, "-e", "stderr", "-p", p->var, "-c", conf, NULL};
	int errp[2] = {-1, -1}, pidfd, err;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/nginx.conf", d->cfg.l7_runtime_dir);
	/* the stderr of the one before, if it is not closed yet: the rest
	 * of it is lost rather than mixed with the new one's */
	if (p->err_fd >= 0) {
		fw_loop_watch_del(d->loop, p->err_watch);
		p->err_watch = NULL;
		close_fd(&p->err_fd);
	}
	err = open_maps(d);
	if (err)
		return err;
	if (p->inject) {
		char sock[sizeof(p->var) + 16];

		/* an nginx that was killed left its socket file: the next one
		 * could not bind it (nginx removes it only when it exits) */
		snprintf(sock, sizeof(sock), "%s/term.sock", p->var);
		if (unlink(sock) && errno != ENOENT)
			fw_warn("l7 proxy: can't remove %s: %s", sock, strerror(errno));
		vaults_resync(d);
		err = ca_pipe(p);
		if (err) {
			fw_err("l7 proxy: can't hand it the CA: %s", strerror(-err));
			close_fd(&p->child_ca);
			return err;
		}
	}
	if (pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		close_fd(&p->child_ca);
		return err;
	}
	p->child_err = fcntl(errp[1], F_DUPFD_CLOEXEC, L7_HIGH_FD);
	close(errp[1]);
	if (p->child_err < 0) {
		err = -errno;
		close(errp[0]);
		close_fd(&p->child_ca);
		return err;
	}
	p->parent = getpid();
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(errp[0]);
		close_fd(&p->child_err);
		close_fd(&p->child_ca);
		return err;
	}
	if (pid == 0)
		child(p, argv);
	close_fd(&p->child_err);
	/* the proxy's alone now: a start that follows gets a pipe of its own */
	close_fd(&p->child_ca);
	p->pid = pid;
	p->started_ns = fw_loop_now(d->loop);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	p->err_fd = errp[0];
	p->errlen = 0;
	if (fw_loop_watch_add(d->loop, p->err_fd, EPOLLIN, on_stderr, d, &p->err_watch))
		close_fd(&p->err_fd);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 ||
	    fw_loop_watch_add(d->loop, pidfd, EPOLLIN, on_exit_fd, d, &p->exit_watch)) {
		/* without it an exit would go unnoticed: stop and say so */
		fw_err("l7 proxy: can't watch pid %d: %s", (int)pid, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		p->pid = 0;
		if (pidfd >= 0)
			close(pidfd);
		return -EIO;
	}
	p->pidfd = pidfd;
	fw_info("l7 proxy started: %s (pid %d) as %s, TLS on port %u, HTTP on port %u",
		d->cfg.l7_nginx, (int)pid, d->cfg.l7_user, d->cfg.l7_proxy_tls_port,
		d->cfg.l7_proxy_http_port);
	schedule(d, L7_PROBE_FAST_NS);
	return 0;
}

/* The proxy ended: FW_CF_L7_UP off at once, then a start after a delay
 * that doubles with each quick end. */
static void reap(struct fw_daemon *d, int status)
{
	struct l7_proxy *p = &d->l7;
	__u64 ran = fw_loop_now(d->loop) - p->started_ns;

	set_up(d, false);
	open_clear(p);
	/* workers of a master that was killed would keep its ports */
	kill(-p->pid, SIGKILL);
	fw_loop_watch_del(d->loop, p->exit_watch);
	p->exit_watch = NULL;
	close_fd(&p->pidfd);
	if (p->stopping)
		fw_info("l7 proxy (pid %d) stopped", (int)p->pid);
	else if (WIFSIGNALED(status))
		fw_err("l7 proxy (pid %d) killed by signal %d", (int)p->pid, WTERMSIG(status));
	else
		fw_err("l7 proxy (pid %d) exited with status %d", (int)p->pid, WEXITSTATUS(status));
	p->pid = 0;
	if (p->stopping)
		return;
	if (ran >= L7_STABLE_NS || !p->backoff_ns)
		p->backoff_ns = L7_BACKOFF_MIN_NS;
	else if ((p->backoff_ns *= 2) > L7_BACKOFF_MAX_NS)
		p->backoff_ns = L7_BACKOFF_MAX_NS;
	fw_info("l7 proxy: starting it again in %llu ms",
		(unsigned long long)(p->backoff_ns / FW_NSEC_PER_MSEC));
	schedule(d, p->backoff_ns);
}

static void on_exit_fd(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;
	int status = 0;

	(void)l;
	(void)fd;
	(void)events;
	if (d->l7.pid && waitpid(d->l7.pid, &status, WNOHANG) == d->l7.pid)
		reap(d, status);
}

/* Connects to port on loopback and closes without a byte: it accepts.
 * The local port is remembered, so the proxy's report of it is dropped. */
static bool probe_port(struct l7_proxy *p, __u16 port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in local;
	socklen_t len = sizeof(local);
	struct pollfd pfd;
	int fd, soerr = 0;
	bool ok = false;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		ok = true;
	} else if (errno == EINPROGRESS) {
		pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
		len = sizeof(soerr);
		ok = poll(&pfd, 1, 200) == 1 &&
		     !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) && !soerr;
	}
	len = sizeof(local);
	if (ok && !getsockname(fd, (struct sockaddr *)&local, &len)) {
		p->probe_ports[p->probe_next++ % L7_PROBE_PORTS] = ntohs(local.sin_port);
	}
	close(fd);
	return ok;
}

static __u64 l7_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct l7_proxy *p = &d->l7;
	bool ok;
	int err;

	(void)l;
	(void)t;
	if (p->stopping)
		return 0;
	if (!p->pid) {
		/* a start that failed or an end: again, after the delay */
		err = spawn(d);
		if (!err) {
			if (p->spawned++)
				count_add(&p->counters.restarts, 1);
			return 0; /* spawn armed the probe */
		}
		fw_err("l7 proxy: can't start it: %s", strerror(-err));
		p->backoff_ns = !p->backoff_ns				? L7_BACKOFF_MIN_NS
				: p->backoff_ns * 2 > L7_BACKOFF_MAX_NS ? L7_BACKOFF_MAX_NS
									: p->backoff_ns * 2;
		return p->backoff_ns;
	}
	ok = probe_port(p, d->cfg.l7_proxy_tls_port) && probe_port(p, d->cfg.l7_proxy_http_port);
	set_up(d, ok);
	return ok ? L7_PROBE_SLOW_NS : L7_PROBE_FAST_NS;
}

static __u64 gc_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	size_t n = 0;
	int err;

	(void)t;
	/* idle_timeout reloads: read it each round */
	err = fw_dp_l7_gc(d->dp, fw_loop_now(l), d->cfg.l7_idle_timeout_ns, FW_DP_L7_CLOSED_NS, &n);
	if (err)
		fw_warn("l7: collecting idle fastwall_l7_nat entries: %s", strerror(-err));
	else if (n)
		fw_debug("l7: %zu idle fastwall_l7_nat entries removed", n);
	return L7_GC_NS;
}

/* --- start, stop, settings ------------------------------------------------- */

void l7_dp_settings(const struct fw_cfg *cfg, struct fw_dp_l7 *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->tls_ports, cfg->l7_tls_ports, cfg->nl7_tls_ports * sizeof(out->tls_ports[0]));
	out->ntls = cfg->nl7_tls_ports;
	memcpy(out->http_ports, cfg->l7_http_ports,
	       cfg->nl7_http_ports * sizeof(out->http_ports[0]));
	out->nhttp = cfg->nl7_http_ports;
	out->proxy_tls_port = cfg->l7_proxy_tls_port;
	out->proxy_http_port = cfg->l7_proxy_http_port;
	out->quic_allowed = cfg->l7_quic_allow;
}

/* mkdir -p of one level, then the owner and mode it must have */
static int own_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	if (mkdir(path, mode) && errno != EEXIST)
		return -errno;
	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (chown(path, uid, gid) || chmod(path, mode))
		return -errno;
	return 0;
}

/* --- credentials ----------------------------------------------------------- */

static void on_vault(void *ctx, const char *uid, __u32 id)
{
	struct fw_daemon *d = ctx;
	struct fw_l7_vaults *m = __atomic_load_n(&d->l7.counters.vaults, __ATOMIC_ACQUIRE);
	int err;

	if (!m || !id)
		return;
	err = fw_l7_vaults_sync(m, id, d->actions.vaults, uid);
	if (err)
		fw_err("l7 proxy: subject %s: its vault is not injected: %s", uid, strerror(-err));
}

void l7_actions_hooks(struct fw_daemon *d)
{
	if (!d->cfg.l7_enabled || !d->cfg.l7_credentials || !d->actions_on)
		return;
	d->actions.vault_ctx = d;
	d->actions.on_vault = on_vault;
	fw_vault_store_set_l7_max(d->actions.vaults, FW_L7_VAULT_DATA);
}

void l7_on_subject(struct fw_daemon *d, const struct fw_reg_change *c)
{
	struct fw_l7_vaults *m = __atomic_load_n(&d->l7.counters.vaults, __ATOMIC_ACQUIRE);
	bool gone = !strcmp(c->what, "removed"), rebound = !strcmp(c->what, "rebound");

	if (!m)
		return;
	/* the old id's blob first: the id may go to another subject */
	if ((gone || rebound) && c->old_id)
		fw_l7_vaults_del(m, c->old_id);
	if ((rebound || !strcmp(c->what, "added")) && c->id && d->actions_on &&
	    c->origin == FW_ORIGIN_ACTIONS)
		on_vault(d, c->name, c->id);
}

/* The CA, the bundle sandboxes trust, the files the proxy's TLS needs,
 * the vaults' maps; whether the module takes them. */
static int credentials_start(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	const struct fw_cfg *cfg = &d->cfg;
	const char *publish[FW_CFG_L7_PUBLISH_MAX];
	char msg[640], crt[300], key[300], missing[64], *bundle = NULL;
	struct fw_l7_vaults *m;
	size_t blen = 0;
	int err;

	p->credentials = true;
	err = fw_l7_ca_load(cfg->l7_ca_dir, cfg->l7_ca_cert[0] ? cfg->l7_ca_cert : NULL,
			    cfg->l7_ca_key[0] ? cfg->l7_ca_key : NULL, &p->ca, msg, sizeof(msg));
	if (err) {
		fw_err("%s", msg);
		return -EPERM;
	}
	__atomic_store_n(&p->counters.ca_not_after, (__u64)p->ca.not_after, __ATOMIC_RELAXED);
	if (p->ca.not_after < time(NULL) + 30 * 86400)
		fw_warn("l7 CA: its certificate expires within 30 days: rotate it "
			"(docs/operations.md, \"The layer-7 CA\")");
	for (size_t i = 0; i < cfg->nl7_ca_publish; i++)
		publish[i] = cfg->l7_ca_publish[i];
	err = fw_l7_ca_bundle(&p->ca, cfg->l7_ca_dir, publish, cfg->nl7_ca_publish, &bundle, &blen,
			      msg, sizeof(msg));
	if (err) {
		fw_err("%s", msg);
		return -EPERM;
	}
	if (d->actions_on)
		fw_actions_set_l7_ca(&d->actions, bundle, blen);
	else
		free(bundle);
	/* root's files the proxy reads and cannot replace (its own VAR it
	 * could: a process of its user would swap the trust store) */
	snprintf(crt, sizeof(crt), "%s/tls", cfg->l7_runtime_dir);
	err = own_dir(crt, 0, 0, 0755);
	if (err) {
		fw_err("l7 proxy: can't prepare %s: %s", crt, strerror(-err));
		return err;
	}
	snprintf(crt, sizeof(crt), "%s/tls/placeholder.crt", cfg->l7_runtime_dir);
	snprintf(key, sizeof(key), "%s/tls/placeholder.key", cfg->l7_runtime_dir);
	err = fw_l7_placeholder(crt, key, 0, p->gid, msg, sizeof(msg));
	if (!err) {
		snprintf(crt, sizeof(crt), "%s/tls/upstream-ca.crt", cfg->l7_runtime_dir);
		err = fw_l7_upstream_cas(crt, FW_L7_SYSTEM_CAS,
					 cfg->l7_upstream_ca[0] ? cfg->l7_upstream_ca : NULL, msg,
					 sizeof(msg));
	}
	if (err) {
		fw_err("%s", msg);
		return -EPERM;
	}
	err = fw_l7_vaults_new(&m);
	if (err) {
		fw_err("l7 proxy: can't create the vaults' maps: %s", strerror(-err));
		return err;
	}
	__atomic_store_n(&p->counters.vaults, m, __ATOMIC_RELEASE);
	p->inject = l7_module_injects(cfg->l7_module, missing, sizeof(missing));
	if (p->inject)
		fw_info("l7 proxy: credentials injected from the vaults; sandboxes trust "
			"%s/bundle.crt (GET /l7/ca.crt)",
			cfg->l7_ca_dir);
	else
		fw_warn("l7 proxy: the module %s lacks %s: credentials are NOT injected (pinned "
			"connections pass through as they are, as with l7.credentials off)",
			cfg->l7_module, missing);
	return 0;
}

void l7_free(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	struct fw_l7_vaults *m = __atomic_exchange_n(&p->counters.vaults, NULL, __ATOMIC_ACQ_REL);

	fw_l7_vaults_free(m);
	fw_l7_ca_free(&p->ca);
}

int l7_start(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	char path[300], parent[256], *slash;
	struct passwd *pw;
	int sp[2], err;

	p->pidfd = p->err_fd = p->report_fd = p->child_report = p->child_err = -1;
	p->child_vaults[0] = p->child_vaults[1] = p->child_ca = -1;
	for (int i = 0; i < 4; i++)
		p->child_maps[i] = -1;
	if (!d->cfg.l7_enabled)
		return 0;
	p->enabled = true;
	/* a proxy of the process before is gone with it: pinned SYNs drop
	 * until this one accepts, whatever the pinned settings said */
	err = fw_dp_l7_set_up(d->dp, false);
	if (err)
		fw_warn("l7 proxy: can't clear FW_CF_L7_UP: %s", strerror(-err));
	errno = 0;
	pw = getpwnam(d->cfg.l7_user);
	if (!pw) {
		char *end;
		unsigned long uid = strtoul(d->cfg.l7_user, &end, 10);

		pw = *end ? NULL : getpwuid((uid_t)uid);
		if (!pw) {
			fw_err("l7.user: no user '%s'", d->cfg.l7_user);
			return -ENOENT;
		}
	}
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
	if (p->uid == 0) {
		fw_err("l7.user: the proxy may not run as root");
		return -EPERM;
	}
	p->bind_low = d->cfg.l7_proxy_tls_port < 1024 || d->cfg.l7_proxy_http_port < 1024;
	/* the runtime directory is root's (the configuration), var/ the
	 * proxy's (its pid and temporary files) */
	snprintf(parent, sizeof(parent), "%s", d->cfg.l7_runtime_dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdir(parent, 0755) && errno != EEXIST) {
			err = -errno;
			fw_err("l7 proxy: can't create %s: %s", parent, strerror(-err));
			return err;
		}
	}
	snprintf(p->var, sizeof(p->var), "%s/var", d->cfg.l7_runtime_dir);
	err = own_dir(d->cfg.l7_runtime_dir, 0, 0, 0755);
	if (!err)
		err = own_dir(p->var, p->uid, p->gid, 0700);
	if (err) {
		fw_err("l7 proxy: can't prepare %s: %s", d->cfg.l7_runtime_dir, strerror(-err));
		return err;
	}
	if (d->cfg.l7_credentials && !d->actions_on)
		fw_info("l7 proxy: no actions section, so no credential vault can arrive: "
			"credentials are not injected (no CA)");
	else if (d->cfg.l7_credentials) {
		err = credentials_start(d);
		if (err)
			return err;
	}
	snprintf(path, sizeof(path), "%s/nginx.conf", d->cfg.l7_runtime_dir);
	if (!err)
		err = l7_write_conf(&d->cfg, path, l7_ipv6_usable(), p->inject);
	if (err) {
		fw_err("l7 proxy: can't prepare %s: %s", d->cfg.l7_runtime_dir, strerror(-err));
		return err;
	}
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp))
		return -errno;
	p->report_fd = sp[0];
	p->child_report = fcntl(sp[1], F_DUPFD_CLOEXEC, L7_HIGH_FD);
	close(sp[1]);
	if (p->child_report < 0)
		return -errno;
	/* the proxy's end never blocks it: a full queue drops reports */
	err = fw_loop_watch_add(d->loop, p->report_fd, EPOLLIN, on_reports, d, &p->report_watch);
	if (err)
		return err;
	fw_loop_timer_init(&p->timer, l7_timer, d);
	fw_loop_timer_init(&p->gc_timer, gc_timer, d);
	fw_loop_timer_arm(d->loop, &p->gc_timer, L7_GC_NS);
	fw_loop_timer_init(&p->report_timer, report_timer, d);
	fw_loop_timer_init(&p->release_timer, release_timer, d);
	fw_loop_timer_arm(d->loop, &p->release_timer, L7_RELEASE_TICK_NS);
	/* a failure (the maps missing, fork) is retried like an end */
	schedule(d, 0);
	return 0;
}

void l7_stop(struct fw_daemon *d)
{
	struct l7_proxy *p = &d->l7;
	int status = 0;

	if (!p->enabled)
		return;
	p->stopping = true;
	if (d->loop) {
		fw_loop_timer_cancel(d->loop, &p->timer);
		fw_loop_timer_cancel(d->loop, &p->gc_timer);
		fw_loop_timer_cancel(d->loop, &p->release_timer);
		fw_loop_timer_cancel(d->loop, &p->report_timer);
	}
	if (p->pid) {
		struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};

		/* graceful: the master closes its listeners and lets workers
		 * finish; what is left after the grace period is killed */
		kill(p->pid, SIGQUIT);
		if (p->pidfd < 0 || poll(&pfd, 1, L7_STOP_GRACE_MS) != 1) {
			fw_warn("l7 proxy (pid %d) still running after %d ms: killing it",
				(int)p->pid, L7_STOP_GRACE_MS);
			kill(-p->pid, SIGKILL);
		}
		if (waitpid(p->pid, &status, 0) == p->pid)
			reap(d, status);
	}
	set_up(d, false);
	if (d->loop) {
		fw_loop_watch_del(d->loop, p->report_watch);
		fw_loop_watch_del(d->loop, p->err_watch);
		fw_loop_watch_del(d->loop, p->exit_watch);
	}
	p->report_watch = p->err_watch = p->exit_watch = NULL;
	close_fd(&p->report_fd);
	close_fd(&p->child_report);
	close_fd(&p->err_fd);
	close_fd(&p->pidfd);
	for (int i = 0; i < 4; i++)
		close_fd(&p->child_maps[i]);
	close_fd(&p->child_vaults[0]);
	close_fd(&p->child_vaults[1]);
	close_fd(&p->child_ca);
	open_clear(p);
	free(p->budget);
	p->budget = NULL;
	/* left to the collector */
	free(p->release);
	p->release = NULL;
	p->release_head = p->release_n = 0;
	p->enabled = false;
}
