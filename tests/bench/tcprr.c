// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tcprr: TCP request/response and connection-rate load for the nftables
 * comparison (scripts/bench-nft.sh). One epoll thread on each side.
 *
 *   tcprr server -l ADDR:PORT
 *       Echoes whatever arrives on every accepted connection; closes when
 *       the peer does.
 *   tcprr rr  -d ADDR:PORT [-n NETNS,...] [-c CONNS] [-s SIZE] [-w WARMUP] [-t SECONDS] [-p
 * PID,...] CONNS connections, opened round-robin from the network namespaces given (the sandboxes),
 * each with one SIZE-byte request in flight: send, wait for the SIZE-byte echo, send again. Latency
 * is per request/response. tcprr crr -d ADDR:PORT [-n NETNS,...] [-c CONC] [-s SIZE] [-w WARMUP]
 * [-t SECONDS] [-p PID,...] CONC connection slots, each in a loop: connect, one request and its
 *       response, close. Latency is from socket() to close().
 *
 * Prints one line of key=value pairs: transactions (or connections) per
 * second of wall time and per second of CPU time (this process plus the
 * PIDs given with -p, from /proc/PID/schedstat, over the measured window),
 * latency percentiles in microseconds, and errors.
 *
 * A peer that resets a connection ends that connection, never the tool:
 * SIGPIPE is ignored and every write is a send with MSG_NOSIGNAL. The
 * server writes an echo the socket can't take yet once it can (EPOLLOUT).
 * The clients connect with a bound (CONNECT_TRIES, CONNECT_GAP_MS apart:
 * a server still starting, or SYNs lost to a busy machine), rr opens a
 * lost connection again and counts it in errors, and a run in which no
 * transaction completed fails with what went wrong rather than printing
 * a figure of zero. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_CONNS 1024
#define MAX_NS	  16
#define MAX_PIDS  8
#define MAX_SIZE  4096

/* connect attempts before giving up, and the wait between two */
#define CONNECT_TRIES  40
#define CONNECT_GAP_MS 50

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "tcprr: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* --- server ------------------------------------------------------------ */

struct echo {
	int fd;
	bool want_out; /* waiting for room to write pending */
	char buf[MAX_SIZE];
	size_t pending; /* read but not yet written back */
};

static void echo_close(struct echo *e)
{
	close(e->fd); /* closing removes it from epoll */
	free(e);
}

/* Echoes what fd has; false when the connection ended (e is freed). */
static bool echo_serve(int ep, struct echo *e)
{
	for (;;) {
		ssize_t r = e->pending ? 0 : read(e->fd, e->buf, sizeof(e->buf));

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (r <= 0 && !e->pending) {
			echo_close(e); /* closed, or reset by the peer */
			return false;
		}
		if (r > 0)
			e->pending = (size_t)r;
		r = send(e->fd, e->buf, e->pending, MSG_NOSIGNAL);
		if (r < 0 && errno == EAGAIN) {
			struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = e};

			if (!e->want_out && !epoll_ctl(ep, EPOLL_CTL_MOD, e->fd, &ev))
				e->want_out = true;
			return true;
		}
		if (r <= 0) {
			echo_close(e); /* EPIPE, ECONNRESET: the peer is gone */
			return false;
		}
		memmove(e->buf, e->buf + r, e->pending - (size_t)r);
		e->pending -= (size_t)r;
	}
	if (e->want_out && !e->pending) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = e};

		if (!epoll_ctl(ep, EPOLL_CTL_MOD, e->fd, &ev))
			e->want_out = false;
	}
	return true;
}

static int cmd_server(const struct sockaddr_in *addr)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC), one = 1;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	if (lfd < 0 || ep < 0)
		die("socket", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)addr, sizeof(*addr)) || listen(lfd, 4096))
		die("can't listen", strerror(errno));
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	/* the readiness handshake: the driving script waits for this line */
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		if (n < 0 && errno != EINTR)
			die("epoll_wait", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct echo *e = evs[i].data.ptr;

			if (!e) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event cev = {.events = EPOLLIN};

					e = calloc(1, sizeof(*e));
					if (!e) {
						close(fd);
						continue;
					}
					e->fd = fd;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					cev.data.ptr = e;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
				}
				continue;
			}
			echo_serve(ep, e);
		}
	}
	return 0;
}

/* --- client helpers ----------------------------------------------------- */

static int ns_fds[MAX_NS], nns;

static void open_namespaces(const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok && nns < MAX_NS;
	     tok = strtok_r(NULL, ",", &save)) {
		char path[256];

		snprintf(path, sizeof(path), "/run/netns/%s", tok);
		ns_fds[nns] = open(path, O_RDONLY | O_CLOEXEC);
		if (ns_fds[nns] < 0)
			die("can't open network namespace", tok);
		nns++;
	}
	free(copy);
}

/* A TCP socket in namespace k % nns (the current one with no -n). */
static int socket_in(unsigned k)
{
	static int self = -1;
	int fd, saved;

	if (!nns)
		return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (self < 0)
		self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0 || setns(ns_fds[k % (unsigned)nns], CLONE_NEWNET))
		die("setns", strerror(errno));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	saved = errno;
	if (setns(self, CLONE_NEWNET))
		die("setns back", strerror(errno));
	errno = saved;
	return fd;
}

/* A connected non-blocking socket to dst from namespace k % nns. A
 * refused or unanswered connect is tried again, CONNECT_TRIES times in
 * all; then the tool ends, naming dst and the last error. */
static int connect_to(const struct sockaddr_in *dst, unsigned k)
{
	struct timeval limit = {.tv_sec = 1}; /* a blocking connect's bound */
	char ip[INET_ADDRSTRLEN];
	int err = 0, i;

	for (i = 0; i < CONNECT_TRIES; i++) {
		int fd = socket_in(k);

		if (fd < 0)
			die("socket", strerror(errno));
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
		if (!connect(fd, (const struct sockaddr *)dst, sizeof(*dst))) {
			nonblock(fd);
			return fd;
		}
		err = errno;
		close(fd);
		if (err != ECONNREFUSED && err != ETIMEDOUT && err != EINPROGRESS && err != EINTR &&
		    err != EAGAIN && err != ECONNRESET && err != EHOSTUNREACH && err != ENETUNREACH)
			break;
		usleep(CONNECT_GAP_MS * 1000);
	}
	inet_ntop(AF_INET, &dst->sin_addr, ip, sizeof(ip));
	fprintf(stderr,
		"tcprr: can't connect to %s:%u (namespace %u) after %d tries over %d ms: %s\n", ip,
		ntohs(dst->sin_port), nns ? k % (unsigned)nns : 0, i < CONNECT_TRIES ? i + 1 : i,
		i * CONNECT_GAP_MS, strerror(err));
	exit(1);
}

static pid_t pids[MAX_PIDS];
static int npids;

static uint64_t runtime_of(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* CPU time (ns) of this process and of the -p PIDs */
static uint64_t cpu_ns(void)
{
	uint64_t sum = runtime_of("/proc/thread-self/schedstat");

	for (int i = 0; i < npids; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pids[i]);
		sum += runtime_of(path);
	}
	return sum;
}

struct samples {
	uint64_t *v;
	size_t n, cap;
};

static void sample(struct samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 65536;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			die("out of memory", NULL);
	}
	s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const struct samples *s, double p)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
	return s->v[i < s->n ? i : s->n - 1] / 1e3;
}

static void report(const char *mode, struct samples *s, uint64_t wall, uint64_t cpu,
		   unsigned long long errors)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	printf("%s n=%zu secs=%.3f rate=%.0f rate_per_core=%.0f cpu_share=%.3f p50_us=%.1f "
	       "p90_us=%.1f p99_us=%.1f max_us=%.1f errors=%llu\n",
	       mode, s->n, wall / 1e9, s->n * 1e9 / (double)wall,
	       cpu ? s->n * 1e9 / (double)cpu : 0.0, (double)cpu / (double)wall, pct_us(s, 50),
	       pct_us(s, 90), pct_us(s, 99), s->n ? s->v[s->n - 1] / 1e3 : 0.0, errors);
}

/* --- request/response on long-lived connections -------------------------- */

struct rr {
	int fd;
	unsigned k; /* its namespace: k % nns */
	size_t got;
	uint64_t sent_ns;
};

/* Opens c's connection (again) and registers it with ep. */
static void rr_open(int ep, const struct sockaddr_in *dst, struct rr *c)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	int one = 1;

	c->fd = connect_to(dst, c->k);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
		die("epoll_ctl", strerror(errno));
}

/* One request; false when the connection is gone (reset, closed). */
static bool rr_send(struct rr *c, const char *msg, size_t size)
{
	c->got = 0;
	c->sent_ns = bench_now_ns();
	return send(c->fd, msg, size, MSG_NOSIGNAL) == (ssize_t)size;
}

/* A lost connection is opened again and sent a new request until one
 * goes out; each loss counts in *errors. */
static void rr_resend(int ep, const struct sockaddr_in *dst, struct rr *c, const char *msg,
		      size_t size, unsigned long long *errors)
{
	while (!rr_send(c, msg, size)) {
		(*errors)++;
		close(c->fd);
		rr_open(ep, dst, c);
	}
}

static int cmd_rr(const struct sockaddr_in *dst, unsigned conns, size_t size, double warmup,
		  double seconds)
{
	static struct rr cs[MAX_CONNS];
	static char msg[MAX_SIZE], in[MAX_SIZE];
	struct samples s = {0};
	unsigned long long errors = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t start, t_meas, t_end, cpu0 = 0, wall0 = 0;
	bool measuring = false;

	if (ep < 0)
		die("epoll_create1", strerror(errno));
	memset(msg, 'r', sizeof(msg));
	for (unsigned k = 0; k < conns; k++) {
		cs[k].k = k;
		rr_open(ep, dst, &cs[k]);
	}
	start = bench_now_ns();
	t_meas = start + (uint64_t)(warmup * 1e9);
	t_end = t_meas + (uint64_t)(seconds * 1e9);
	for (unsigned k = 0; k < conns; k++)
		rr_resend(ep, dst, &cs[k], msg, size, &errors);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 100);
		uint64_t t = bench_now_ns();

		if (!measuring && t >= t_meas) {
			measuring = true;
			cpu0 = cpu_ns();
			wall0 = t;
		}
		if (t >= t_end)
			break;
		for (int i = 0; i < n; i++) {
			struct rr *c = evs[i].data.ptr;
			ssize_t r = read(c->fd, in, size - c->got);

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				/* reset or closed by the server: this request is
				 * lost, the connection opened again */
				close(c->fd);
				rr_open(ep, dst, c);
				rr_resend(ep, dst, c, msg, size, &errors);
				errors++;
				continue;
			}
			c->got += (size_t)r;
			if (c->got < size)
				continue;
			t = bench_now_ns();
			if (measuring && t < t_end)
				sample(&s, t - c->sent_ns);
			rr_resend(ep, dst, c, msg, size, &errors);
		}
	}
	if (!s.n)
		die("rr: no request got its response in the measured window", NULL);
	report("rr", &s, bench_now_ns() - wall0, cpu_ns() - cpu0, errors);
	for (unsigned k = 0; k < conns; k++)
		close(cs[k].fd);
	return 0;
}

/* --- connect, one request/response, close -------------------------------- */

enum crr_state { C_IDLE, C_CONNECTING, C_WAITING };

struct crr {
	int fd;
	enum crr_state state;
	size_t got;
	uint64_t t0;
	unsigned k;
};

static int cmd_crr(const struct sockaddr_in *dst, unsigned conc, size_t size, double warmup,
		   double seconds)
{
	static struct crr cs[MAX_CONNS];
	static char msg[MAX_SIZE], in[MAX_SIZE];
	struct samples s = {0};
	unsigned long long errors = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC), one = 1, last_err = 0;
	uint64_t start = bench_now_ns(), t_meas, t_end, cpu0 = 0, wall0 = 0;
	bool measuring = false;

	memset(msg, 'c', sizeof(msg));
	t_meas = start + (uint64_t)(warmup * 1e9);
	t_end = t_meas + (uint64_t)(seconds * 1e9);
	for (unsigned k = 0; k < conc; k++) {
		cs[k].k = k;
		cs[k].state = C_IDLE;
	}
	for (;;) {
		struct epoll_event evs[64];
		uint64_t t = bench_now_ns();
		int n;

		if (!measuring && t >= t_meas) {
			measuring = true;
			cpu0 = cpu_ns();
			wall0 = t;
		}
		if (t >= t_end)
			break;
		/* (re)start idle slots; slot k stays in sandbox k % nns */
		for (unsigned k = 0; k < conc; k++) {
			struct crr *c = &cs[k];
			struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};

			if (c->state != C_IDLE)
				continue;
			c->t0 = bench_now_ns();
			c->fd = socket_in(c->k);
			if (c->fd < 0)
				die("socket", strerror(errno));
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			if (connect(c->fd, (const struct sockaddr *)dst, sizeof(*dst)) &&
			    errno != EINPROGRESS) {
				last_err = errno;
				errors++;
				close(c->fd);
				continue; /* e.g. no free port yet: try again next turn */
			}
			c->state = C_CONNECTING;
			c->got = 0;
			epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
		}
		n = epoll_wait(ep, evs, 64, 100);
		for (int i = 0; i < n; i++) {
			struct crr *c = evs[i].data.ptr;
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (c->state == C_CONNECTING) {
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};

				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
				if (soerr ||
				    send(c->fd, msg, size, MSG_NOSIGNAL) != (ssize_t)size) {
					last_err = soerr ? soerr : errno;
					errors++;
					close(c->fd);
					c->state = C_IDLE;
					continue;
				}
				c->state = C_WAITING;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			ssize_t r = read(c->fd, in, size - c->got);

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				last_err = r ? errno : ECONNRESET;
				errors++;
				close(c->fd);
				c->state = C_IDLE;
				continue;
			}
			c->got += (size_t)r;
			if (c->got < size)
				continue;
			close(c->fd);
			c->state = C_IDLE;
			t = bench_now_ns();
			if (measuring && t < t_end)
				sample(&s, t - c->t0);
		}
	}
	if (!s.n) {
		char why[128];

		snprintf(why, sizeof(why), "%llu errors, the last: %s", errors,
			 errors ? strerror(last_err) : "none");
		die("crr: no connection completed in the measured window", why);
	}
	report("crr", &s, bench_now_ns() - wall0, cpu_ns() - cpu0, errors);
	for (unsigned k = 0; k < conc; k++)
		if (cs[k].state != C_IDLE)
			close(cs[k].fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcprr server -l ADDR:PORT\n"
			"       tcprr rr|crr -d ADDR:PORT [-n NETNS,...] [-c CONNS] [-s SIZE] "
			"[-w WARMUP] [-t SECONDS] [-p PID,...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	const char *cmd, *hp = NULL;
	unsigned conns = 8;
	size_t size = 64;
	double warmup = 0.3, seconds = 2;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN); /* a reset peer is an error return, not the end */
	if (argc < 2)
		usage();
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "l:d:n:c:s:w:t:p:")) != -1) {
		switch (opt) {
		case 'l':
		case 'd':
			hp = optarg;
			break;
		case 'n':
			open_namespaces(optarg);
			break;
		case 'c':
			conns = (unsigned)atoi(optarg);
			break;
		case 's':
			size = (size_t)atoi(optarg);
			break;
		case 'w':
			warmup = atof(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'p': {
			char *copy = strdup(optarg), *tok, *save = NULL;

			for (tok = strtok_r(copy, ",", &save); tok && npids < MAX_PIDS;
			     tok = strtok_r(NULL, ",", &save))
				pids[npids++] = (pid_t)atoi(tok);
			free(copy);
			break;
		}
		default:
			usage();
		}
	}
	if (!hp || !bench_parse_hostport(hp, &addr) || !conns || conns > MAX_CONNS || !size ||
	    size > MAX_SIZE || seconds <= 0 || warmup < 0)
		usage();
	if (!strcmp(cmd, "server"))
		return cmd_server(&addr);
	if (!strcmp(cmd, "rr"))
		return cmd_rr(&addr, conns, size, warmup, seconds);
	if (!strcmp(cmd, "crr"))
		return cmd_crr(&addr, conns, size, warmup, seconds);
	usage();
	return 2;
}
