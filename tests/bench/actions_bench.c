// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* actions_bench: control-plane benchmark client for fastwalld's Sandbox
 * Actions listener (scripts/bench-actions.sh drives it). Plain sockets,
 * HTTP/1.1 keep-alive, Content-Length framing, one connection per thread.
 * Prints figures; never judges them.
 *
 *   actions_bench [-a ADDR:PORT] setup   -n N [-t THREADS] [-V VARIANT]
 *   actions_bench [-a ADDR:PORT] latency -k ITER -S SBNS -I INETNS -s SRC -d DST:PORT [-g USEC]
 *   actions_bench [-a ADDR:PORT] update  -n N -t THREADS -D SECONDS
 *   actions_bench [-a ADDR:PORT] patch   -n N -t THREADS -D SECONDS
 *   actions_bench [-a ADDR:PORT] churn   -n N -k K -t THREADS
 *   actions_bench [-a ADDR:PORT] replay  -n N -t THREADS [-V V] -L LOG -P PIDFILE -- CMD ARGS...
 *
 * Subject i is uid "bench-i" at 10.64.(1 + i / 200).(10 + i % 200), fence
 * ("rt-bench-i", "att-bench-i"). Its policy: default deny, 16 CIDR rules
 * (allow 203.0.113.0/24 and 14 more allows, one deny) and 4 domain rules;
 * the variant number v changes 8 of the CIDRs, so every update is a real
 * policy change. The latency subjects are "lat-K" on the sandbox's address.
 * churn, with N subjects present: K new subjects "chN-k" at
 * 10.64.(220 + k / 200).(10 + k % 200), each added (SET_BINDING +
 * data-plane-ready), updated (SET_BINDING, another policy, same fence) and
 * removed (REMOVE_BINDING), each call timed. Figures are printed with the
 * targets beside them (met / not met) and as "act ..." lines for scripts;
 * timing never changes the exit status.
 *
 * All times are CLOCK_MONOTONIC, which every network namespace shares: the
 * latency mode opens its UDP sender in the sandbox namespace and its
 * receiver in the internet namespace (setns on the main thread around
 * socket()), so send and arrival times come from one clock. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "gateway/policy_port.h"

#define API	  "sandbox.fast.io/actions/v1"
#define ACT_PATH  "/_fastlet/v1/actions"
#define STAT_PATH "/_fastlet/v1/actions/status"
#define BODY_MAX  16384

static struct sockaddr_in g_addr;
static unsigned g_variant; /* setup/replay: policy variant V, generation V + 1 */

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "actions_bench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

/* --- envelopes ------------------------------------------------------------- */

static void subject_ip(unsigned i, char *ip, size_t len)
{
	snprintf(ip, len, "10.64.%u.%u", 1 + i / 200, 10 + i % 200);
}

/* The policy as it sits inside the JSON string binding.input (escaped). */
static int policy_input(char *out, size_t len, unsigned v)
{
	int n = snprintf(out, len,
			 "{\\\"defaultAction\\\":\\\"deny\\\",\\\"egress\\\":["
			 "{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"203.0.113.0/24\\\"},"
			 "{\\\"action\\\":\\\"deny\\\",\\\"target\\\":\\\"203.0.113.66\\\"}");

	for (unsigned k = 0; k < 14 && n > 0 && (size_t)n < len; k++) {
		/* rules 0-7 move with the variant, 8-13 stay */
		unsigned b = k < 8 ? (v * 8 + k) % 251 : 200 + k;

		n += snprintf(
			out + n, len - (size_t)n,
			",{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"198.%u.%u.0/24\\\"}",
			18 + (k & 1), b);
	}
	if (n > 0 && (size_t)n < len)
		n += snprintf(
			out + n, len - (size_t)n,
			",{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"*.example.com\\\"}"
			",{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"api.github.com\\\"}"
			",{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"pypi.org\\\"}"
			",{\\\"action\\\":\\\"deny\\\",\\\"target\\\":\\\"*.bad.example\\\"}]}");
	return n > 0 && (size_t)n < len ? n : -1;
}

struct subj {
	const char *uid;
	const char *ip;
	const char *fence; /* rt-FENCE / att-FENCE */
	unsigned long long gen;
};

static int envelope(char *out, size_t len, const struct subj *s, const char *op, unsigned v,
		    unsigned long long seq)
{
	char pol[4096];
	char tail[4600];

	if (!strcmp(op, "SET_BINDING")) {
		if (policy_input(pol, sizeof(pol), v) < 0)
			return -1;
		snprintf(tail, sizeof(tail), "\"binding\":{\"input\":\"%s\"}", pol);
	} else if (!strcmp(op, "REMOVE_BINDING")) {
		snprintf(tail, sizeof(tail), "\"binding\":{\"input\":null}");
	} else {
		snprintf(tail, sizeof(tail),
			 "\"hook\":{\"name\":\"sandbox.data-plane-ready\",\"sequence\":2}");
		op = "LIFECYCLE_HOOK";
	}
	int n = snprintf(out, len,
			 "{\"apiVersion\":\"" API "\",\"operation\":\"%s\","
			 "\"invocationId\":\"sha256:%s-%llu\","
			 "\"sandbox\":{\"uid\":\"%s\",\"name\":\"%s\",\"namespace\":\"bench\"},"
			 "\"revision\":{\"specGeneration\":%llu,\"runtimeInstanceId\":\"rt-%s\","
			 "\"attachmentId\":\"att-%s\",\"routeGeneration\":1},"
			 "\"attachment\":{\"network\":{\"ip\":\"%s\",\"gateway\":\"10.64.0.1\","
			 "\"privateCidr\":\"10.64.0.0/16\",\"hostVeth\":\"fwbv-%s\"}},%s}",
			 op, s->uid, seq, s->uid, s->uid, s->gen, s->fence, s->fence, s->ip,
			 s->fence, tail);
	return n > 0 && (size_t)n < len ? n : -1;
}

static int post(struct httpc *c, const struct subj *s, const char *op, unsigned v,
		unsigned long long seq)
{
	char body[BODY_MAX];
	int n = envelope(body, sizeof(body), s, op, v, seq);

	if (n < 0)
		return -1;
	return httpc_request(c, "POST", ACT_PATH, NULL, body, (size_t)n);
}

/* --- statistics -------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *sorted, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

static void print_dist(const char *label, uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("  %-34s n=%-6zu p50 %8.3f ms  p90 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n", label, n,
	       pct(v, n, 50) / 1e6, pct(v, n, 90) / 1e6, pct(v, n, 99) / 1e6,
	       n ? v[n - 1] / 1e6 : 0.0);
}

/* "met" / "not met" beside a figure; never an exit status */
static const char *met(bool ok)
{
	return ok ? "met" : "not met";
}

/* p50 and p99 of v (sorted) against the per-call targets, human and
 * machine-readable ("act N=64 add p50_ms=0.4 p99_ms=1.2 n=200") */
static void print_call_targets(const char *op, unsigned nsubj, const uint64_t *v, size_t n)
{
	double p50 = pct(v, n, 50) / 1e6, p99 = pct(v, n, 99) / 1e6;

	printf("  %-34s p50 %.3f ms (target < 0.5 ms: %s), p99 %.3f ms (target < 2 ms: %s)\n", op,
	       p50, met(p50 < 0.5), p99, met(p99 < 2));
	printf("act N=%u %s p50_ms=%.3f p99_ms=%.3f n=%zu\n", nsubj, op, p50, p99, n);
}

/* --- parallel workers ----------------------------------------------------- */

enum job { JOB_SETUP, JOB_UPDATE, JOB_PATCH, JOB_REPLAY, JOB_CHURN };

struct worker {
	pthread_t th;
	enum job job;
	unsigned id, nthreads, nsubjects;
	uint64_t deadline; /* 0: one pass over the subjects */
	uint64_t *lat;	   /* per-request latency (ns) */
	size_t nlat, caplat;
	/* churn: per-call latencies of add (both calls), update, remove */
	uint64_t *churn[3];
	size_t nchurn;
	unsigned long long ok, fail;
	int first_bad_status;
	char first_bad_body[256];
	struct httpc c;
};

static void record(struct worker *w, uint64_t d)
{
	if (w->nlat == w->caplat) {
		w->caplat = w->caplat ? w->caplat * 2 : 4096;
		w->lat = realloc(w->lat, w->caplat * sizeof(*w->lat));
		if (!w->lat)
			die("%s", "out of memory");
	}
	w->lat[w->nlat++] = d;
}

static void result(struct worker *w, int status)
{
	if (status == 200) {
		w->ok++;
		return;
	}
	if (!w->fail++) {
		w->first_bad_status = status;
		snprintf(w->first_bad_body, sizeof(w->first_bad_body), "%s",
			 status > 0 ? w->c.last_body : "(connection failed)");
	}
}

static unsigned g_churn_n; /* churn: the subjects present (names the new ones) */

/* One thread's share of the churn subjects: add, update, remove each. */
static void churn_main(struct worker *w)
{
	for (unsigned k = w->id; k < w->nsubjects; k += w->nthreads) {
		char uid[48], ip[32];
		struct subj s = {uid, ip, uid, 1};
		unsigned long long seq = 0;
		uint64_t t0, t1, t2, t3;
		int st;

		snprintf(uid, sizeof(uid), "ch%u-%u-%d", g_churn_n, k, getpid());
		snprintf(ip, sizeof(ip), "10.64.%u.%u", 220 + k / 200, 10 + k % 200);
		t0 = bench_now_ns();
		st = post(&w->c, &s, "SET_BINDING", 0, ++seq);
		result(w, st);
		if (st == 200) {
			st = post(&w->c, &s, "HOOK", 0, ++seq);
			result(w, st);
		}
		t1 = bench_now_ns();
		s.gen = 2;
		st = post(&w->c, &s, "SET_BINDING", 1, ++seq);
		result(w, st);
		t2 = bench_now_ns();
		st = post(&w->c, &s, "REMOVE_BINDING", 1, ++seq);
		result(w, st);
		t3 = bench_now_ns();
		w->churn[0][w->nchurn] = t1 - t0;
		w->churn[1][w->nchurn] = t2 - t1;
		w->churn[2][w->nchurn] = t3 - t2;
		w->nchurn++;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char uid[32], ip[32];
	unsigned long long seq = 0;
	char body[4096];

	httpc_init(&w->c, &g_addr);
	if (w->job == JOB_CHURN) {
		churn_main(w);
		httpc_close(&w->c);
		return NULL;
	}
	/* each thread owns the subjects i with i % nthreads == id: calls per
	 * sandbox are serialized, as the Fastlet does */
	for (unsigned round = 1;; round++) {
		for (unsigned i = w->id; i < w->nsubjects; i += w->nthreads) {
			struct subj s = {uid, ip, uid, 1};
			uint64_t t0, t1;
			int st;

			snprintf(uid, sizeof(uid), "bench-%u", i);
			subject_ip(i, ip, sizeof(ip));
			t0 = bench_now_ns();
			switch (w->job) {
			case JOB_SETUP:
			case JOB_REPLAY:
				/* replay sends what setup sent last: same
				 * fences, policy variant and generation */
				s.gen = g_variant + 1;
				st = post(&w->c, &s, "SET_BINDING", g_variant, ++seq);
				result(w, st);
				if (st == 200) {
					st = post(&w->c, &s, "HOOK", g_variant, ++seq);
					result(w, st);
				}
				break;
			case JOB_UPDATE:
				/* generation and policy change on every update */
				s.gen = g_variant + 1 + round;
				st = post(&w->c, &s, "SET_BINDING", round, ++seq);
				result(w, st);
				break;
			default: {
				char hdr[160];
				int n;

				snprintf(hdr, sizeof(hdr), "X-Fast-Sandbox-Uid: %s\r\n", uid);
				n = snprintf(body, sizeof(body),
					     "{\"egress\":[{\"action\":\"%s\",\"target\":\"192.0.2."
					     "%u\"}]}",
					     round & 1 ? "allow" : "deny", i % 250);
				st = httpc_request(&w->c, "PATCH", "/policy", hdr, body, (size_t)n);
				result(w, st);
				break;
			}
			}
			t1 = bench_now_ns();
			record(w, t1 - t0);
			if (w->deadline && t1 >= w->deadline)
				goto done;
		}
		if (!w->deadline)
			break;
	}
done:
	httpc_close(&w->c);
	return NULL;
}

/* Runs nthreads workers; returns wall ns. */
static uint64_t run_workers(struct worker *ws, unsigned nthreads, enum job job, unsigned n,
			    double seconds)
{
	uint64_t t0 = bench_now_ns();

	for (unsigned i = 0; i < nthreads; i++) {
		memset(&ws[i], 0, sizeof(ws[i]));
		ws[i].job = job;
		ws[i].id = i;
		ws[i].nthreads = nthreads;
		ws[i].nsubjects = n;
		ws[i].deadline = seconds > 0 ? t0 + (uint64_t)(seconds * 1e9) : 0;
		for (int k = 0; job == JOB_CHURN && k < 3; k++) {
			ws[i].churn[k] = calloc(n / nthreads + 1, sizeof(uint64_t));
			if (!ws[i].churn[k])
				die("%s", "out of memory");
		}
		if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]))
			die("%s", "pthread_create failed");
	}
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(ws[i].th, NULL);
	return bench_now_ns() - t0;
}

static int summarize(const char *what, struct worker *ws, unsigned nthreads, uint64_t wall,
		     unsigned per_subject)
{
	unsigned long long ok = 0, fail = 0;
	unsigned reconnects = 0;
	size_t n = 0;
	uint64_t *all;
	int rc = 0;

	for (unsigned i = 0; i < nthreads; i++) {
		ok += ws[i].ok;
		fail += ws[i].fail;
		n += ws[i].nlat;
		reconnects += ws[i].c.reconnects;
	}
	all = calloc(n ? n : 1, sizeof(*all));
	if (!all)
		die("%s", "out of memory");
	n = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		memcpy(all + n, ws[i].lat, ws[i].nlat * sizeof(*all));
		n += ws[i].nlat;
		if (ws[i].fail && !rc) {
			fprintf(stderr, "actions_bench: %s: %llu failed calls; first: %d %s\n",
				what, ws[i].fail, ws[i].first_bad_status, ws[i].first_bad_body);
			rc = 1;
		}
		free(ws[i].lat);
	}
	printf("  %-34s %llu calls ok, %llu failed, %u reconnects, %u threads, %.3f s\n", what, ok,
	       fail, reconnects, nthreads, wall / 1e9);
	printf("  %-34s %.0f calls/s", "", ok * 1e9 / (double)wall);
	if (per_subject > 1)
		printf(" (%.0f subjects/s, %u calls each)", ok * 1e9 / (double)wall / per_subject,
		       per_subject);
	printf("\n");
	print_dist(per_subject > 1 ? "latency per subject (both calls)" : "latency per call", all,
		   n);
	{
		struct rusage ru;

		/* this process runs nothing but the workers */
		getrusage(RUSAGE_SELF, &ru);
		printf("  %-34s client CPU %.0f%% of one core\n", "",
		       100.0 *
			       ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
				(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6) /
			       (wall / 1e9));
	}
	free(all);
	return rc;
}

/* --- latency: SET_BINDING + data-plane-ready to the first allowed packet --- */

struct pkt {
	uint64_t sent_ns;
	uint32_t iter;
	uint32_t magic;
};

#define PKT_MAGIC 0xfa57fa57u

static atomic_bool g_send_on;
static atomic_bool g_stop;
static atomic_uint g_iter;
static atomic_ullong g_sent;
static int g_tx, g_rx;
static uint64_t g_gap_ns = 20000;

static void *sender_main(void *arg)
{
	struct pkt p = {.magic = PKT_MAGIC};

	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (!atomic_load(&g_stop)) {
		struct timespec ts = {0, (long)g_gap_ns};

		if (!atomic_load(&g_send_on)) {
			ts.tv_nsec = 200000;
			nanosleep(&ts, NULL);
			continue;
		}
		p.iter = atomic_load(&g_iter);
		p.sent_ns = bench_now_ns();
		if (send(g_tx, &p, sizeof(p), 0) == sizeof(p))
			atomic_fetch_add(&g_sent, 1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int socket_in(const char *ns, int type)
{
	char path[256];
	int self, fd, nsfd, s;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || nsfd < 0)
		die("can't open network namespace %s", ns);
	if (setns(nsfd, CLONE_NEWNET))
		die("setns %s failed", ns);
	s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	fd = errno;
	if (setns(self, CLONE_NEWNET))
		die("%s", "setns back failed");
	close(self);
	close(nsfd);
	if (s < 0) {
		errno = fd;
		die("socket in %s failed", ns);
	}
	return s;
}

/* Drains the receiver; returns the packets of iteration iter. With first:
 * that iteration's earliest-sent packet into *first. */
static unsigned drain(uint32_t iter, uint64_t *first, uint64_t *arrival)
{
	struct pkt p;
	unsigned n = 0;

	for (;;) {
		ssize_t r = recv(g_rx, &p, sizeof(p), MSG_DONTWAIT);

		if (r < 0)
			return n;
		if (r != sizeof(p) || p.magic != PKT_MAGIC || p.iter != iter)
			continue;
		n++;
		if (first && (!*first || p.sent_ns < *first)) {
			*first = p.sent_ns;
			*arrival = bench_now_ns();
		}
	}
}

static int cmd_latency(int argc, char **argv)
{
	const char *sbns = NULL, *inetns = NULL, *src = NULL, *dst = NULL;
	unsigned iters = 200, stray = 0, lost = 0;
	struct sockaddr_in sa_src, sa_dst;
	uint64_t *lat_pkt, *lat_arr, *lat_after, *rt_set, *rt_ready, *rt_remove;
	size_t nok = 0;
	uint64_t on_ns = 0, armed;
	pthread_t th;
	struct httpc c = {.addr = &g_addr, .fd = -1};
	int opt, one = 1;

	while ((opt = getopt(argc, argv, "k:S:I:s:d:g:")) != -1) {
		switch (opt) {
		case 'k':
			iters = (unsigned)atoi(optarg);
			break;
		case 'S':
			sbns = optarg;
			break;
		case 'I':
			inetns = optarg;
			break;
		case 's':
			src = optarg;
			break;
		case 'd':
			dst = optarg;
			break;
		case 'g':
			g_gap_ns = (uint64_t)atoi(optarg) * 1000;
			break;
		default:
			return 2;
		}
	}
	if (!sbns || !inetns || !src || !dst || !bench_parse_hostport(dst, &sa_dst) ||
	    inet_pton(AF_INET, src, &sa_src.sin_addr) != 1)
		die("%s", "latency needs -S SBNS -I INETNS -s SRC -d DST:PORT");
	g_rx = socket_in(inetns, SOCK_DGRAM);
	setsockopt(g_rx, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(g_rx, (struct sockaddr *)&sa_dst, sizeof(sa_dst)))
		die("can't bind the receiver to %s", dst);
	g_tx = socket_in(sbns, SOCK_DGRAM);
	if (connect(g_tx, (struct sockaddr *)&sa_dst, sizeof(sa_dst)))
		die("can't connect the sender to %s", dst);

	lat_pkt = calloc(iters, sizeof(uint64_t));
	lat_arr = calloc(iters, sizeof(uint64_t));
	lat_after = calloc(iters, sizeof(uint64_t));
	rt_set = calloc(iters, sizeof(uint64_t));
	rt_ready = calloc(iters, sizeof(uint64_t));
	rt_remove = calloc(iters, sizeof(uint64_t));
	if (!lat_pkt || !lat_arr || !lat_after || !rt_set || !rt_ready || !rt_remove)
		die("%s", "out of memory");
	if (pthread_create(&th, NULL, sender_main, NULL))
		die("%s", "pthread_create failed");

	for (unsigned k = 0; k < iters; k++) {
		char uid[32], fence[48];
		struct subj s = {uid, src, fence, 1};
		uint64_t t0, t1, t2, first = 0, arrival = 0, deadline;
		int st;

		snprintf(uid, sizeof(uid), "lat-%u", k);
		snprintf(fence, sizeof(fence), "lat-%u-%d", k, getpid());
		/* the address is unbound: prove nothing passes before we start */
		atomic_store(&g_iter, k + 1);
		atomic_store(&g_send_on, true);
		armed = bench_now_ns();
		{
			struct timespec ts = {0, 3000000};

			nanosleep(&ts, NULL);
		}
		stray += drain(k + 1, NULL, NULL);

		t0 = bench_now_ns();
		st = post(&c, &s, "SET_BINDING", 0, 1);
		t1 = bench_now_ns();
		if (st == 200)
			st = post(&c, &s, "HOOK", 0, 2);
		t2 = bench_now_ns();
		if (st != 200) {
			fprintf(stderr, "actions_bench: latency: iteration %u: status %d %s\n", k,
				st, c.last_body);
			return 1;
		}
		deadline = t2 + 500000000ull;
		while (!first && bench_now_ns() < deadline) {
			struct pollfd pf = {g_rx, POLLIN, 0};

			poll(&pf, 1, 10);
			drain(k + 1, &first, &arrival);
		}
		atomic_store(&g_send_on, false);
		on_ns += bench_now_ns() - armed;
		rt_set[k] = t1 - t0;
		rt_ready[k] = t2 - t1;
		if (first) {
			/* packets sent before t0 cannot pass: the address was
			 * unbound; one that did would show as a 0 here */
			lat_pkt[nok] = first > t0 ? first - t0 : 0;
			lat_arr[nok] = arrival - t0;
			/* from sending data-plane-ready, where the kernel is
			 * programmed; a packet that passed before counts as 0 */
			lat_after[nok] = first > t1 ? first - t1 : 0;
			nok++;
		} else {
			lost++;
		}
		/* back to unbound for the next iteration (not timed into the
		 * latency; its round trip is reported) */
		t0 = bench_now_ns();
		st = post(&c, &s, "REMOVE_BINDING", 0, 3);
		rt_remove[k] = bench_now_ns() - t0;
		if (st != 200)
			fprintf(stderr, "actions_bench: REMOVE_BINDING %s: %d\n", uid, st);
		(void)drain(0, NULL, NULL);
	}
	atomic_store(&g_stop, true);
	pthread_join(th, NULL);

	printf("  %u iterations; sender: sleeps %.0f us between packets, %.0f us apart on average "
	       "(%llu sent);\n  %u iterations without a passing packet in 500 ms, %u packets "
	       "passed while the address was unbound\n",
	       iters, g_gap_ns / 1e3,
	       atomic_load(&g_sent) ? on_ns / 1e3 / (double)atomic_load(&g_sent) : 0.0,
	       (unsigned long long)atomic_load(&g_sent), lost, stray);
	print_dist("first passing packet (send time)", lat_pkt, nok);
	{
		/* lat_pkt is measured from SET_BINDING; the target is about the
		 * part from sending data-plane-ready */
		uint64_t *after = calloc(nok ? nok : 1, sizeof(*after));
		size_t na = 0, before = 0;

		if (!after)
			die("%s", "out of memory");
		for (size_t i = 0; i < nok; i++)
			after[na++] = lat_after[i];
		qsort(after, na, sizeof(*after), cmp_u64);
		for (size_t i = 0; i < na; i++)
			before += !after[i];
		printf("  %-34s p50 %.3f ms (target < 1 ms: %s); %zu of %zu passed before "
		       "data-plane-ready was sent (counted as 0)\n",
		       "first packet after data-plane-ready", pct(after, na, 50) / 1e6,
		       met(pct(after, na, 50) / 1e6 < 1), before, na);
		printf("act first_packet p50_ms=%.3f p99_ms=%.3f n=%zu\n", pct(after, na, 50) / 1e6,
		       pct(after, na, 99) / 1e6, na);
		free(after);
	}
	print_dist("first passing packet (arrival)", lat_arr, nok);
	print_dist("SET_BINDING round trip", rt_set, iters);
	print_dist("data-plane-ready round trip", rt_ready, iters);
	print_dist("REMOVE_BINDING round trip", rt_remove, iters);
	httpc_close(&c);
	return lost || stray ? 1 : 0;
}

/* --- replay after a restart ------------------------------------------------ */

static int cmd_replay(int argc, char **argv, unsigned n, unsigned nthreads, const char *log,
		      const char *pidfile)
{
	struct worker *ws;
	uint64_t t0, t_status, wall;
	struct httpc c = {.addr = &g_addr, .fd = -1};
	unsigned polls = 0;
	pid_t pid;
	FILE *f;
	int rc;

	if (!log || !pidfile || optind >= argc)
		die("%s", "replay needs -L LOG -P PIDFILE -- CMD ARGS...");
	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0)
		die("%s", "fork failed");
	if (!pid) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setpgid(0, 0); /* our signals are not the daemon's */
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	f = fopen(pidfile, "w");
	if (f) {
		fprintf(f, "%d\n", pid);
		fclose(f);
	}
	/* poll status until it answers 200 (a refused connect is retried
	 * every 1 ms; the Fastlet probes every 1 s) */
	for (;;) {
		int st;

		if (waitpid(pid, NULL, WNOHANG) == pid)
			die("%s", "the daemon exited during start");
		st = httpc_request(&c, "GET", STAT_PATH, NULL, NULL, 0);
		polls++;
		if (st == 200 && strstr(c.last_body, "\"ready\":true"))
			break;
		httpc_close(&c);
		if (bench_now_ns() - t0 > 30000000000ull)
			die("%s", "status did not answer in 30 s");
		usleep(1000);
	}
	t_status = bench_now_ns();
	httpc_close(&c);
	ws = calloc(nthreads, sizeof(*ws));
	if (!ws)
		die("%s", "out of memory");
	wall = run_workers(ws, nthreads, JOB_REPLAY, n, 0);
	printf("  process start -> status 200 ready     %8.1f ms (%u polls)\n",
	       (t_status - t0) / 1e6, polls);
	printf("  process start -> %u subjects replayed %8.1f ms (replay itself %.1f ms)\n", n,
	       (t_status - t0 + wall) / 1e6, wall / 1e6);
	rc = summarize("replay SET_BINDING + ready", ws, nthreads, wall, 2);
	free(ws);
	return rc;
}

static int cmd_churn(unsigned present, unsigned k, unsigned nthreads)
{
	static const char *const ops[3] = {"add", "update", "remove"};
	static const char *const labels[3] = {"add (SET_BINDING + ready)",
					      "update (SET_BINDING, new policy)",
					      "remove (REMOVE_BINDING)"};
	struct worker *ws = calloc(nthreads, sizeof(*ws));
	unsigned long long fail = 0;
	uint64_t wall;
	int rc = 0;

	if (!ws)
		die("%s", "out of memory");
	g_churn_n = present;
	wall = run_workers(ws, nthreads, JOB_CHURN, k, 0);
	for (unsigned i = 0; i < nthreads; i++) {
		fail += ws[i].fail;
		if (ws[i].fail && !rc) {
			fprintf(stderr, "actions_bench: churn: %llu failed calls; first: %d %s\n",
				ws[i].fail, ws[i].first_bad_status, ws[i].first_bad_body);
			rc = 1;
		}
	}
	printf("  %u new subjects with %u present, %u connections: %.3f s, %llu failed calls\n", k,
	       present, nthreads, wall / 1e9, fail);
	for (int o = 0; o < 3; o++) {
		uint64_t *all = calloc(k ? k : 1, sizeof(*all));
		size_t n = 0;

		if (!all)
			die("%s", "out of memory");
		for (unsigned i = 0; i < nthreads; i++) {
			memcpy(all + n, ws[i].churn[o], ws[i].nchurn * sizeof(*all));
			n += ws[i].nchurn;
		}
		print_dist(labels[o], all, n);
		print_call_targets(ops[o], present, all, n);
		free(all);
	}
	for (unsigned i = 0; i < nthreads; i++)
		for (int o = 0; o < 3; o++)
			free(ws[i].churn[o]);
	free(ws);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: actions_bench [-a ADDR:PORT] setup -n N [-t THREADS] [-V VARIANT]\n"
		"       actions_bench [-a ADDR:PORT] latency -k ITER -S SBNS -I INETNS -s SRC -d "
		"DST:PORT [-g USEC]\n"
		"       actions_bench [-a ADDR:PORT] update|patch -n N -t THREADS -D SECONDS\n"
		"       actions_bench [-a ADDR:PORT] churn -n N -k K [-t THREADS]\n"
		"       actions_bench [-a ADDR:PORT] replay -n N -t THREADS [-V V] -L LOG -P "
		"PIDFILE -- "
		"CMD...\n");
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1:" FW_POLICY_PORT_STR, *cmd, *log = NULL, *pidfile = NULL;
	unsigned n = 1024, nthreads = 4, churn_k = 200;
	double seconds = 10;
	struct worker *ws;
	uint64_t wall;
	int opt, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	while ((opt = getopt(argc, argv, "+a:")) != -1) {
		if (opt != 'a') {
			usage();
			return 2;
		}
		addr = optarg;
	}
	if (optind >= argc) {
		usage();
		return 2;
	}
	if (!bench_parse_hostport(addr, &g_addr))
		die("bad address %s", addr);
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 1;
	if (!strcmp(cmd, "latency"))
		return cmd_latency(argc, argv);
	/* the common options; replay's own follow */
	while ((opt = getopt(argc, argv, "+n:t:D:V:L:P:k:")) != -1) {
		switch (opt) {
		case 'k':
			churn_k = (unsigned)atoi(optarg);
			break;
		case 'V':
			g_variant = (unsigned)atoi(optarg);
			break;
		case 'L':
			log = optarg;
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 'n':
			n = (unsigned)atoi(optarg);
			break;
		case 't':
			nthreads = (unsigned)atoi(optarg);
			break;
		case 'D':
			seconds = atof(optarg);
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!n || !nthreads || nthreads > 64) {
		usage();
		return 2;
	}
	if (!strcmp(cmd, "replay"))
		return cmd_replay(argc, argv, n, nthreads, log, pidfile);
	if (!strcmp(cmd, "churn")) {
		if (!churn_k || churn_k > 6000)
			die("%s", "churn: -k must be 1..6000");
		return cmd_churn(n, churn_k, nthreads);
	}
	ws = calloc(nthreads, sizeof(*ws));
	if (!ws)
		die("%s", "out of memory");
	if (!strcmp(cmd, "setup")) {
		wall = run_workers(ws, nthreads, JOB_SETUP, n, 0);
		rc = summarize("setup SET_BINDING + ready", ws, nthreads, wall, 2);
	} else if (!strcmp(cmd, "update")) {
		unsigned long long ok = 0;

		wall = run_workers(ws, nthreads, JOB_UPDATE, n, seconds);
		for (unsigned i = 0; i < nthreads; i++)
			ok += ws[i].ok;
		rc = summarize("SET_BINDING policy update", ws, nthreads, wall, 1);
		printf("  %-34s %.0f/s (target >= 5000/s: %s)\n", "whole-policy replacement",
		       ok * 1e9 / (double)wall, met(ok * 1e9 / (double)wall >= 5000));
		printf("act N=%u replace per_s=%.0f threads=%u\n", n, ok * 1e9 / (double)wall,
		       nthreads);
	} else if (!strcmp(cmd, "patch")) {
		wall = run_workers(ws, nthreads, JOB_PATCH, n, seconds);
		rc = summarize("PATCH /policy", ws, nthreads, wall, 1);
	} else {
		usage();
		rc = 2;
	}
	free(ws);
	return rc;
}
