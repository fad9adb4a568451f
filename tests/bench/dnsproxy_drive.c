// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A hand-run driver for the DNS proxy engine, not a test: starts the engine
 * with trivial hooks (forward everything, learn nothing) on loopback, with
 * an in-process responder as its upstream unless -u names real ones, so
 * dnsperf can load it:
 *
 *   build/tests/dnsproxy_drive -p 5300 -w 2 -t 30 &
 *   dnsperf -s 127.0.0.1 -p 5300 -d queries.txt -l 20 -c 20 -q 500
 *
 * The responder answers over UDP and TCP (one query per connection).
 * -R runs the responder alone, as the upstream of another forwarder
 * (dnsmasq, unbound) for a side-by-side figure; -m measures the latency
 * the proxy adds with sequential queries (p50/p99, proxy and direct). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dns/wire.h"
#include "dns/proxy.h"

#define RESP_BATCH 64
#define RESP_BUF   4096
#define MEASURE_MS 2000

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* ---- the responder: one A record for any query, batched ---- */

struct responder {
	int fd, tcp;
	__u16 port;
	pthread_t thread;
	__u64 answered;
};

/* Rewrites a query into its answer in place: question kept, one A
 * record (192.0.2.1, TTL 60) after it, the OPT RR kept if there was one. */
static size_t respond(__u8 *b, size_t len)
{
	static const __u8 rr[] = {
		0xc0, 0x0c, 0, FW_DNS_TYPE_A, 0, FW_DNS_CLASS_IN, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1};
	struct fw_dns_query q;
	size_t n;

	if (fw_dns_parse_query(b, len, &q) ||
	    q.question_end + sizeof(rr) + FW_DNS_OPT_LEN > RESP_BUF)
		return 0;
	b[2] |= (FW_DNS_F_QR | FW_DNS_F_RA) >> 8;
	b[3] = (__u8)FW_DNS_F_RA;
	b[5] = 1;
	b[6] = 0;
	b[7] = 1;
	b[8] = b[9] = b[10] = b[11] = 0;
	memcpy(b + q.question_end, rr, sizeof(rr));
	n = q.question_end + sizeof(rr);
	if (q.has_edns && fw_dns_add_edns0(b, n, RESP_BUF, &n, FW_DNS_EDNS_UDP))
		return 0;
	return n;
}

/* One query per connection, as the proxy asks over TCP: read a frame,
 * answer, close. Sequential, which is enough for a sanity figure. */
static void responder_tcp(struct responder *r)
{
	__u8 b[2 + RESP_BUF];
	size_t got = 0, want = 2, n;
	int fd = accept(r->tcp, NULL, NULL);

	if (fd < 0)
		return;
	while (got < want) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t k;

		if (poll(&pfd, 1, 1000) != 1)
			goto out;
		k = recv(fd, b + got, want - got, 0);
		if (k <= 0)
			goto out;
		got += (size_t)k;
		if (got == 2) {
			want = 2 + (size_t)(b[0] << 8 | b[1]);
			if (want > sizeof(b))
				goto out;
		}
	}
	n = respond(b + 2, want - 2);
	if (n) {
		b[0] = (__u8)(n >> 8);
		b[1] = (__u8)n;
		if (send(fd, b, n + 2, MSG_NOSIGNAL) == (ssize_t)(n + 2))
			__atomic_add_fetch(&r->answered, 1, __ATOMIC_RELAXED);
	}
out:
	close(fd);
}

static void *responder_main(void *arg)
{
	static __u8 buf[RESP_BATCH][RESP_BUF];
	struct sockaddr_storage from[RESP_BATCH];
	struct mmsghdr m[RESP_BATCH];
	struct iovec iov[RESP_BATCH];
	struct responder *r = arg;

	while (!stop) {
		struct pollfd pfd[2] = {{.fd = r->fd, .events = POLLIN},
					{.fd = r->tcp, .events = POLLIN}};
		int n, k = 0;

		if (poll(pfd, 2, 200) <= 0)
			continue;
		if (pfd[1].revents)
			responder_tcp(r);
		if (!pfd[0].revents)
			continue;
		for (int i = 0; i < RESP_BATCH; i++) {
			iov[i] = (struct iovec){buf[i], RESP_BUF};
			m[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
						       .msg_namelen = sizeof(from[i]),
						       .msg_iov = &iov[i],
						       .msg_iovlen = 1};
		}
		n = recvmmsg(r->fd, m, RESP_BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++) {
			size_t len = respond(buf[i], m[i].msg_len);

			if (!len)
				continue;
			iov[i].iov_len = len;
			if (k != i)
				m[k] = m[i];
			k++;
		}
		for (int sent = 0; sent < k;) {
			int s = sendmmsg(r->fd, m + sent, (unsigned int)(k - sent), 0);

			if (s <= 0)
				break;
			sent += s;
		}
		__atomic_add_fetch(&r->answered, (__u64)k, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int responder_start(struct responder *r, __u16 port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int big = 4 << 20;

	r->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (r->fd < 0)
		return -errno;
	setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (bind(r->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(r->fd, (struct sockaddr *)&a, &al))
		return -errno;
	r->port = ntohs(a.sin_port);
	r->tcp = socket(AF_INET, SOCK_STREAM, 0);
	if (r->tcp < 0 || bind(r->tcp, (struct sockaddr *)&a, sizeof(a)) || listen(r->tcp, 1024))
		return -errno;
	return -pthread_create(&r->thread, NULL, responder_main, r);
}

/* ---- trivial hooks ---- */

static int decide(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q, __u64 *token)
{
	(void)ctx;
	(void)client;
	(void)q;
	*token = 0;
	return FW_DNSP_FORWARD;
}

static int learn(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q, __u64 token,
		 const struct fw_dns_answer *a)
{
	(void)client;
	(void)q;
	(void)token;
	__atomic_add_fetch((__u64 *)ctx, a->naddrs, __ATOMIC_RELAXED);
	return 0;
}

/* ---- latency: one query at a time ---- */

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Sequential round trips to 127.0.0.1:port; fills ns[] and returns how
 * many came back. */
static int measure(__u16 port, __u64 *ns, int n)
{
	static const __u8 q[] = {0,   0,   1,	0,   0,	  1, 0,	  0,   0,   0, 0, 0, 7, 'e', 'x',
				 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1};
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	__u8 b[RESP_BUF], m[sizeof(q)];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), got = 0;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return 0;
	memcpy(m, q, sizeof(q));
	for (int i = 0; i < n; i++) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		__u64 t0;

		m[0] = (__u8)(i >> 8);
		m[1] = (__u8)i;
		t0 = now_ns();
		if (send(fd, m, sizeof(m), 0) != (ssize_t)sizeof(m))
			break;
		if (poll(&pfd, 1, MEASURE_MS) != 1 || recv(fd, b, sizeof(b), 0) < FW_DNS_HDR_LEN)
			continue;
		ns[got++] = now_ns() - t0;
	}
	close(fd);
	qsort(ns, (size_t)got, sizeof(*ns), cmp_u64);
	return got;
}

static void report(const char *what, __u64 *ns, int got)
{
	if (!got) {
		printf("%-8s no answers\n", what);
		return;
	}
	printf("%-8s %d answers  p50 %.1f us  p99 %.1f us\n", what, got, ns[got / 2] / 1e3,
	       ns[(got * 99) / 100] / 1e3);
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p PORT] [-w WORKERS] [-u UPSTREAM]... [-t SECONDS] [-m COUNT]\n"
		"       %s -R PORT [-t SECONDS]\n"
		"  -p  proxy port on 127.0.0.1 (default 5300, 0 = any)\n"
		"  -w  worker threads (default 2)\n"
		"  -u  upstream IP[:port]; without it an in-process responder answers\n"
		"  -t  stop after SECONDS (default: at SIGINT or SIGTERM)\n"
		"  -m  measure COUNT sequential queries, through the proxy and direct\n"
		"  -R  run only the responder on 127.0.0.1:PORT\n",
		prog, prog);
}

int main(int argc, char **argv)
{
	struct fw_dnsp_hooks hooks = {.decide = decide, .learn = learn};
	struct responder resp = {.fd = -1, .tcp = -1};
	struct fw_dnsp_config c;
	struct fw_dnsp_stats s;
	struct fw_dnsp *p = NULL;
	__u64 learned = 0, t0;
	int opt, seconds = 0, count = 0, only = -1, err;

	fw_dnsp_config_init(&c);
	c.port = 5300;
	c.workers = 2;
	c.loopback = true;
	c.ipv6 = false;
	while ((opt = getopt(argc, argv, "p:w:u:t:m:R:h")) != -1) {
		switch (opt) {
		case 'p':
			c.port = (__u16)atoi(optarg);
			break;
		case 'w':
			c.workers = (unsigned int)atoi(optarg);
			break;
		case 'u':
			if (c.nupstreams == FW_DNSP_MAX_UPSTREAMS ||
			    fw_dnsp_upstream_parse(optarg, &c.upstreams[c.nupstreams])) {
				fprintf(stderr, "can't use upstream %s\n", optarg);
				return 2;
			}
			c.nupstreams++;
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 'm':
			count = atoi(optarg);
			break;
		case 'R':
			only = atoi(optarg);
			break;
		default:
			usage(argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (only >= 0 || !c.nupstreams) {
		err = responder_start(&resp, only >= 0 ? (__u16)only : 0);
		if (err) {
			fprintf(stderr, "can't start the responder: %s\n", strerror(-err));
			return 1;
		}
		printf("responder on 127.0.0.1:%u\n", resp.port);
	}
	if (only < 0) {
		char up[64];

		if (!c.nupstreams) {
			snprintf(up, sizeof(up), "127.0.0.1:%u", resp.port);
			fw_dnsp_upstream_parse(up, &c.upstreams[c.nupstreams++]);
		}
		hooks.ctx = &learned;
		err = fw_dnsp_start(&c, &hooks, &p);
		if (err) {
			fprintf(stderr, "can't start the proxy on port %u: %s\n", c.port,
				strerror(-err));
			stop = 1;
			goto out;
		}
		fw_dnsp_upstream_str(&c.upstreams[0], up, sizeof(up));
		printf("proxy on 127.0.0.1:%u, %u workers, upstream %s\n", fw_dnsp_port(p),
		       c.workers, up);
	}
	fflush(stdout);

	if (count > 0 && p) {
		__u64 *a = calloc((size_t)count, sizeof(*a)),
		      *b = calloc((size_t)count, sizeof(*b));
		int ga, gb;

		if (!a || !b)
			return 1;
		measure(fw_dnsp_port(p), a, count / 10 + 1); /* warm up */
		ga = measure(fw_dnsp_port(p), a, count);
		gb = resp.fd >= 0 ? measure(resp.port, b, count) : 0;
		report("proxy", a, ga);
		if (gb) {
			report("direct", b, gb);
			printf("added    p50 %.1f us\n",
			       ((double)a[ga / 2] - (double)b[gb / 2]) / 1e3);
		}
		free(a);
		free(b);
		if (!seconds)
			stop = 1;
	}

	t0 = now_ns();
	while (!stop && (!seconds || now_ns() - t0 < (__u64)seconds * 1000000000ULL))
		usleep(100000);
	stop = 1;
out:
	if (p) {
		fw_dnsp_get_stats(p, &s);
		fw_dnsp_stop(p);
		printf("queries %llu udp %llu tcp, forwarded %llu, answered %llu, servfail %llu, "
		       "timeouts %llu, errors %llu, overload %llu, truncated %llu, addresses "
		       "learned %llu\n",
		       s.queries_udp, s.queries_tcp, s.forwarded, s.answered, s.servfail,
		       s.upstream_timeouts, s.upstream_errors, s.overload, s.truncated, learned);
	}
	if (resp.fd >= 0) {
		pthread_join(resp.thread, NULL);
		close(resp.fd);
		close(resp.tcp);
		printf("responder answered %llu\n", resp.answered);
	}
	return p || only >= 0 ? 0 : 1;
}
