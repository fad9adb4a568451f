// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The DNS proxy engine as a client sees it: real sockets on loopback, the
 * engine on port 0, and in-process fake upstreams (a thread with a UDP and
 * a TCP socket serving canned answers, told per test to delay, drop, fail,
 * truncate, lie about the id or answer big). The fakes are the only mock.
 * Timeouts are generous: the machine is small and shared. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "dns/wire.h"
#include "dns/proxy.h"

#define WAIT_MS		5000 /* an answer that must come */
#define QUIET_MS	400  /* an answer that must not come (yet) */
#define SHORT_NS	(200 * 1000000ULL)
#define LONG_TIMEOUT_NS (1000 * 1000000ULL) /* a timeout a loaded machine's fake meets */
#define TEST_NET_1	0xc0000200u	    /* 192.0.2.0 */
#define TEST_NET_2	0xc6336400u	    /* 198.51.100.0 */

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* ---- messages ---- */

struct msg {
	__u8 b[8192];
	size_t len;
};

static void m_u8(struct msg *m, __u8 v)
{
	cr_assert_lt(m->len, sizeof(m->b));
	m->b[m->len++] = v;
}

static void m_u16(struct msg *m, __u16 v)
{
	m_u8(m, v >> 8);
	m_u8(m, v & 0xff);
}

static void m_u32(struct msg *m, __u32 v)
{
	m_u16(m, v >> 16);
	m_u16(m, v & 0xffff);
}

static void m_name(struct msg *m, const char *name)
{
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		m_u8(m, (__u8)l);
		for (size_t i = 0; i < l; i++)
			m_u8(m, (__u8)name[i]);
		name += l + (dot ? 1 : 0);
	}
	m_u8(m, 0);
}

static void m_opt(struct msg *m, __u16 size)
{
	m_u8(m, 0);
	m_u16(m, FW_DNS_TYPE_OPT);
	m_u16(m, size);
	m_u32(m, 0);
	m_u16(m, 0);
}

/* a query as a stub resolver sends it; edns 0 = no OPT RR */
static struct msg query(__u16 id, const char *name, __u16 type, __u16 edns)
{
	struct msg m = {.len = 0};

	m_u16(&m, id);
	m_u16(&m, FW_DNS_F_RD);
	m_u16(&m, 1);
	m_u16(&m, 0);
	m_u16(&m, 0);
	m_u16(&m, edns ? 1 : 0);
	m_name(&m, name);
	m_u16(&m, type);
	m_u16(&m, FW_DNS_CLASS_IN);
	if (edns)
		m_opt(&m, edns);
	return m;
}

static __u16 hdr(const struct msg *m, int field)
{
	return (__u16)(m->b[2 * field] << 8 | m->b[2 * field + 1]);
}

#define H_ID	0
#define H_FLAGS 1
#define H_QD	2
#define H_AN	3
#define H_NS	4
#define H_AR	5

/* what a client makes of an answer to its query */
static int answer_of(const struct msg *q, const struct msg *a, struct fw_dns_answer *out)
{
	struct fw_dns_query pq;

	cr_assert_eq(fw_dns_parse_query(q->b, q->len, &pq), 0);
	return fw_dns_parse_answer(a->b, a->len, &pq, out);
}

/* ---- the fake upstream ---- */

struct fake {
	int udp, tcp, stop;
	__u16 port;
	pthread_t thread;
	pthread_mutex_t lock;
	/* behaviour, set by the test */
	bool drop;
	int rcode;
	unsigned int delay_ms;
	bool tc;		   /* header + question with TC */
	bool cut;		   /* the answer cut short mid-record, no TC */
	bool wrong_id_first;	   /* a decoy with another id before the answer */
	bool wrong_question_first; /* a decoy for another name first */
	bool forge;		   /* forgeries of every kind before the answer */
	bool lower_echo;	   /* the question comes back lowercased */
	unsigned int cross;	   /* collect this many queries, cross-forge, then answer all */
	unsigned int naddrs;	   /* A records in each answer */
	__u32 ttl;
	__u32 net; /* addresses are net + 1 + i */
	/* observations */
	unsigned int udp_queries, tcp_queries;
	__u16 ports[1024]; /* source ports of the first UDP queries */
	__u16 ids[1024];   /* and their ids */
	unsigned int nports;
	char last_name[FW_DNS_NAME_BUF]; /* the last question name as sent (wire labels, dots) */
	bool last_had_opt;
	__u16 last_opt_size;
};

static struct fake *fake_new(__u32 net);

static void fake_answer(struct fake *f, const __u8 *q, size_t qlen, struct msg *out, bool decoy)
{
	struct fw_dns_query pq;
	unsigned int n;

	out->len = 0;
	if (fw_dns_parse_query(q, qlen, &pq))
		return;
	pthread_mutex_lock(&f->lock);
	f->last_had_opt = pq.has_edns;
	f->last_opt_size = pq.edns_udp_size;
	n = f->tc ? 0 : f->naddrs;
	m_u16(out, decoy && f->wrong_id_first ? (__u16)(pq.id ^ 0x5a5a) : pq.id);
	m_u16(out, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA | (f->tc ? FW_DNS_F_TC : 0) |
			   (__u16)f->rcode);
	m_u16(out, 1);
	m_u16(out, (__u16)n);
	m_u16(out, 0);
	m_u16(out, pq.has_edns ? 1 : 0);
	if (decoy && f->wrong_question_first) {
		m_name(out, "decoy.example");
		m_u16(out, pq.qtype);
		m_u16(out, pq.qclass);
	} else {
		for (size_t i = FW_DNS_HDR_LEN; i < pq.question_end; i++)
			m_u8(out, f->lower_echo && q[i] >= 'A' && q[i] <= 'Z' ? q[i] | 0x20 : q[i]);
		/* as it came, case included ("" for the root) */
		f->last_name[0] = '\0';
		for (size_t i = FW_DNS_HDR_LEN + 1, k = 0; i + 5 < pq.question_end; i++, k++) {
			f->last_name[k] = q[i] < 64 ? '.' : (char)q[i];
			f->last_name[k + 1] = '\0';
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		m_u16(out, 0xc00c); /* the question name */
		m_u16(out, FW_DNS_TYPE_A);
		m_u16(out, FW_DNS_CLASS_IN);
		m_u32(out, f->ttl);
		m_u16(out, 4);
		/* a decoy teaches other addresses: they must never be seen */
		m_u32(out, (decoy ? 0x0a000000u : f->net) + 1 + (i % 250));
	}
	if (pq.has_edns)
		m_opt(out, 4096);
	if (f->cut && out->len > pq.question_end + 4)
		out->len = pq.question_end + 4;
	pthread_mutex_unlock(&f->lock);
}

static bool fake_decoys(struct fake *f)
{
	bool d;

	pthread_mutex_lock(&f->lock);
	d = f->wrong_id_first || f->wrong_question_first;
	pthread_mutex_unlock(&f->lock);
	return d;
}

static void fake_wait(struct fake *f)
{
	unsigned int ms;

	pthread_mutex_lock(&f->lock);
	ms = f->delay_ms;
	pthread_mutex_unlock(&f->lock);
	if (ms)
		usleep(ms * 1000);
}

/* What an off-path attacker who guessed the port (or the id) sends: each
 * teaches 10.0.0.x, which must never be learned or answered. With the
 * right id: no question, two questions, another type, another name; from
 * another port of the upstream's address, everything right; and to the
 * right port, everything right but the id. */
static void fake_forge(struct fake *f, const __u8 *q, size_t qlen, const struct sockaddr *to,
		       socklen_t tl)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct fw_dns_query pq;
	int other;

	if (fw_dns_parse_query(q, qlen, &pq))
		return;
	other = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(other, 0);
	cr_assert_eq(bind(other, (struct sockaddr *)&a, sizeof(a)), 0);
	for (int kind = 0; kind < 6; kind++) {
		struct msg m = {.len = 0};

		m_u16(&m, kind == 5 ? (__u16)(pq.id ^ 0x0101) : pq.id);
		m_u16(&m, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA);
		m_u16(&m, kind == 0 ? 0 : kind == 1 ? 2 : 1);
		m_u16(&m, 1);
		m_u16(&m, 0);
		m_u16(&m, 0);
		if (kind != 0) {
			m_name(&m, kind == 3 ? "forged.example" : pq.name);
			m_u16(&m, kind == 2 ? FW_DNS_TYPE_AAAA : pq.qtype);
			m_u16(&m, FW_DNS_CLASS_IN);
		}
		if (kind == 1) {
			m_name(&m, "forged.example");
			m_u16(&m, pq.qtype);
			m_u16(&m, FW_DNS_CLASS_IN);
		}
		m_name(&m, pq.name);
		m_u16(&m, FW_DNS_TYPE_A);
		m_u16(&m, FW_DNS_CLASS_IN);
		m_u32(&m, 60);
		m_u16(&m, 4);
		m_u32(&m, 0x0a000001u + (__u32)kind);
		sendto(kind == 4 ? other : f->udp, m.b, m.len, 0, to, tl);
	}
	close(other);
}

/* A forged answer: id, the question of q (its bytes as sent), one A
 * record of 10.0.0.9. */
static void fake_forged(struct msg *m, __u16 id, const __u8 *q, const struct fw_dns_query *pq)
{
	m->len = 0;
	m_u16(m, id);
	m_u16(m, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA);
	m_u16(m, 1);
	m_u16(m, 1);
	m_u16(m, 0);
	m_u16(m, 0);
	for (size_t i = FW_DNS_HDR_LEN; i < pq->question_end; i++)
		m_u8(m, q[i]);
	m_u16(m, 0xc00c);
	m_u16(m, FW_DNS_TYPE_A);
	m_u16(m, FW_DNS_CLASS_IN);
	m_u32(m, 60);
	m_u16(m, 4);
	m_u32(m, 0x0a000009u);
}

/* The cross mode: takes the first query (q) and up to f->cross - 1 more
 * (1 s at most), then sends what an attacker who saw them all would:
 * each query's id with each other query's question, to both their ports
 * (on a shared socket: another attempt's question under an id in flight
 * there), and each query's whole answer, forged, to every other query's
 * port (an answer on the wrong socket); then, 20 ms later, the real
 * answers. */
static void fake_cross(struct fake *f, const __u8 *first, size_t flen,
		       const struct sockaddr_in *ffrom)
{
	static __thread struct {
		__u8 b[1024];
		size_t len;
		struct sockaddr_in from;
		struct fw_dns_query pq;
	} q[32];
	unsigned int n = 0, want;
	struct msg m;

	pthread_mutex_lock(&f->lock);
	want = f->cross < 32 ? f->cross : 32;
	pthread_mutex_unlock(&f->lock);
	if (flen <= sizeof(q[0].b) && !fw_dns_parse_query(first, flen, &q[0].pq)) {
		memcpy(q[0].b, first, flen);
		q[0].len = flen;
		q[0].from = *ffrom;
		n = 1;
	}
	while (n < want) {
		struct pollfd pfd = {.fd = f->udp, .events = POLLIN};
		socklen_t fl = sizeof(q[n].from);
		ssize_t r;

		if (poll(&pfd, 1, 1000) <= 0)
			break;
		r = recvfrom(f->udp, q[n].b, sizeof(q[n].b), 0, (struct sockaddr *)&q[n].from, &fl);
		if (r <= 0 || fw_dns_parse_query(q[n].b, (size_t)r, &q[n].pq))
			continue;
		q[n].len = (size_t)r;
		pthread_mutex_lock(&f->lock);
		f->udp_queries++;
		if (f->nports < sizeof(f->ports) / sizeof(f->ports[0])) {
			f->ids[f->nports] = q[n].pq.id;
			f->ports[f->nports++] = ntohs(q[n].from.sin_port);
		}
		pthread_mutex_unlock(&f->lock);
		n++;
	}
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int j = 0; j < n; j++) {
			if (i == j)
				continue;
			fake_forged(&m, q[i].pq.id, q[j].b, &q[j].pq);
			sendto(f->udp, m.b, m.len, 0, (struct sockaddr *)&q[i].from,
			       sizeof(q[i].from));
			sendto(f->udp, m.b, m.len, 0, (struct sockaddr *)&q[j].from,
			       sizeof(q[j].from));
			if (q[i].from.sin_port != q[j].from.sin_port) {
				fake_forged(&m, q[j].pq.id, q[j].b, &q[j].pq);
				sendto(f->udp, m.b, m.len, 0, (struct sockaddr *)&q[i].from,
				       sizeof(q[i].from));
			}
		}
	}
	usleep(20 * 1000);
	for (unsigned int i = 0; i < n; i++) {
		fake_answer(f, q[i].b, q[i].len, &m, false);
		if (m.len)
			sendto(f->udp, m.b, m.len, 0, (struct sockaddr *)&q[i].from,
			       sizeof(q[i].from));
	}
}

static bool fake_drops(struct fake *f)
{
	bool d;

	pthread_mutex_lock(&f->lock);
	d = f->drop;
	pthread_mutex_unlock(&f->lock);
	return d;
}

static void fake_udp(struct fake *f)
{
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	static __thread __u8 buf[65536];
	struct msg out;
	ssize_t n;

	n = recvfrom(f->udp, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	if (n <= 0)
		return;
	pthread_mutex_lock(&f->lock);
	f->udp_queries++;
	if (f->nports < sizeof(f->ports) / sizeof(f->ports[0])) {
		f->ids[f->nports] = n >= 2 ? (__u16)(buf[0] << 8 | buf[1]) : 0;
		f->ports[f->nports++] = ntohs(((struct sockaddr_in *)&from)->sin_port);
	}
	if (f->cross) {
		pthread_mutex_unlock(&f->lock);
		fake_cross(f, buf, (size_t)n, (struct sockaddr_in *)&from);
		return;
	}
	pthread_mutex_unlock(&f->lock);
	if (fake_drops(f))
		return;
	fake_wait(f);
	pthread_mutex_lock(&f->lock);
	if (f->forge) {
		pthread_mutex_unlock(&f->lock);
		fake_forge(f, buf, (size_t)n, (struct sockaddr *)&from, fl);
		/* let the proxy read them before the real answer */
		usleep(20 * 1000);
	} else {
		pthread_mutex_unlock(&f->lock);
	}
	if (fake_decoys(f)) {
		fake_answer(f, buf, (size_t)n, &out, true);
		sendto(f->udp, out.b, out.len, 0, (struct sockaddr *)&from, fl);
	}
	fake_answer(f, buf, (size_t)n, &out, false);
	if (out.len)
		sendto(f->udp, out.b, out.len, 0, (struct sockaddr *)&from, fl);
}

static bool read_full(int fd, __u8 *b, size_t len, int ms)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, ms) <= 0)
			return false;
		n = recv(fd, b + got, len - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* The peer closed (EOF or reset) within ms; false on a timeout. */
static bool closed_by_peer(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	__u8 b;

	if (poll(&pfd, 1, ms) <= 0)
		return false;
	return recv(fd, &b, 1, 0) <= 0;
}

static void send_frame(int fd, const __u8 *b, size_t len)
{
	__u8 l[2] = {len >> 8, len & 0xff};

	cr_assert_eq(send(fd, l, 2, MSG_NOSIGNAL), 2);
	cr_assert_eq(send(fd, b, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* one query per connection, as the proxy asks */
static void fake_tcp(struct fake *f)
{
	static __thread __u8 buf[65536];
	struct msg out;
	__u8 l[2];
	int fd = accept(f->tcp, NULL, NULL);

	if (fd < 0)
		return;
	if (!read_full(fd, l, 2, WAIT_MS) ||
	    !read_full(fd, buf, (size_t)(l[0] << 8 | l[1]), WAIT_MS))
		goto out;
	pthread_mutex_lock(&f->lock);
	f->tcp_queries++;
	pthread_mutex_unlock(&f->lock);
	if (fake_drops(f)) {
		/* silent, not closed: the proxy must time out */
		read_full(fd, l, 1, WAIT_MS);
		goto out;
	}
	fake_wait(f);
	fake_answer(f, buf, (size_t)(l[0] << 8 | l[1]), &out, false);
	if (out.len) {
		l[0] = out.len >> 8;
		l[1] = out.len & 0xff;
		if (send(fd, l, 2, MSG_NOSIGNAL) == 2)
			send(fd, out.b, out.len, MSG_NOSIGNAL);
	}
	/* let the proxy close first: no TIME_WAIT pile-up on our side */
	read_full(fd, l, 1, 1000);
out:
	close(fd);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;

	for (;;) {
		struct pollfd pfd[3] = {
			{.fd = f->udp, .events = POLLIN},
			{.fd = f->tcp, .events = POLLIN},
			{.fd = f->stop, .events = POLLIN},
		};

		if (poll(pfd, 3, -1) < 0)
			continue;
		if (pfd[2].revents)
			return NULL;
		if (pfd[0].revents)
			fake_udp(f);
		if (pfd[1].revents)
			fake_tcp(f);
	}
}

static struct fake *fake_new(__u32 net)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	struct fake *f = calloc(1, sizeof(*f));
	int t;

	cr_assert(f);
	pthread_mutex_init(&f->lock, NULL);
	f->naddrs = 2;
	f->ttl = 60;
	f->net = net;
	/* UDP picks a port, TCP must get the same one: parallel tests may
	 * hold it, so try a few */
	for (t = 0; t < 50; t++) {
		a.sin_port = 0;
		f->udp = socket(AF_INET, SOCK_DGRAM, 0);
		cr_assert_eq(bind(f->udp, (struct sockaddr *)&a, sizeof(a)), 0);
		cr_assert_eq(getsockname(f->udp, (struct sockaddr *)&a, &al), 0);
		f->tcp = socket(AF_INET, SOCK_STREAM, 0);
		if (!bind(f->tcp, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(f->udp);
		close(f->tcp);
	}
	cr_assert_lt(t, 50, "no port free for both UDP and TCP");
	f->port = ntohs(a.sin_port);
	cr_assert_eq(listen(f->tcp, 64), 0);
	f->stop = eventfd(0, 0);
	cr_assert_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
	return f;
}

static void fake_free(struct fake *f)
{
	__u64 one = 1;

	if (!f)
		return;
	cr_assert_eq(write(f->stop, &one, sizeof(one)), sizeof(one));
	pthread_join(f->thread, NULL);
	close(f->udp);
	close(f->tcp);
	close(f->stop);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

#define FAKE_SET(f, field, v)                                                                      \
	do {                                                                                       \
		pthread_mutex_lock(&(f)->lock);                                                    \
		(f)->field = (v);                                                                  \
		pthread_mutex_unlock(&(f)->lock);                                                  \
	} while (0)

static unsigned int fake_get(struct fake *f, unsigned int *field)
{
	unsigned int v;

	pthread_mutex_lock(&f->lock);
	v = *field;
	pthread_mutex_unlock(&f->lock);
	return v;
}

static struct fw_dnsp_upstream upstream_of(const struct fake *f)
{
	struct fw_dnsp_upstream u;
	char s[32];

	snprintf(s, sizeof(s), "127.0.0.1:%u", f->port);
	cr_assert_eq(fw_dnsp_upstream_parse(s, &u), 0);
	return u;
}

/* ---- hooks ---- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int decide_ret;
	int learn_ret;
	bool learn_block;
	unsigned int ndecide, nlearn;
	unsigned int nforged; /* addresses in 10.0.0.0/8 learned: forgeries */
	struct fw_ip client;
	char name[FW_DNS_NAME_BUF];
	__u64 token;
	__u32 naddrs;
	struct fw_dns_addr addrs[FW_DNS_MAX_ADDRS];
	__u8 rcode;
} H = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.decide_ret = FW_DNSP_FORWARD,
};

static int hook_decide(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		       __u64 *token)
{
	int ret;

	cr_assert_eq(ctx, &H);
	pthread_mutex_lock(&H.lock);
	H.ndecide++;
	H.client = *client;
	snprintf(H.name, sizeof(H.name), "%s", q->name);
	*token = 0xfeed0000u + H.ndecide;
	ret = H.decide_ret;
	pthread_mutex_unlock(&H.lock);
	return ret;
}

static int hook_learn(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		      __u64 token, const struct fw_dns_answer *a)
{
	int ret;

	(void)q;
	cr_assert_eq(ctx, &H);
	pthread_mutex_lock(&H.lock);
	H.nlearn++;
	H.client = *client;
	H.token = token;
	H.rcode = a->rcode;
	H.naddrs = a->naddrs;
	memcpy(H.addrs, a->addrs, a->naddrs * sizeof(a->addrs[0]));
	for (__u32 i = 0; i < a->naddrs; i++)
		H.nforged += a->addrs[i].ip.b[12] == 10;
	pthread_cond_broadcast(&H.cond);
	while (H.learn_block)
		pthread_cond_wait(&H.cond, &H.lock);
	ret = H.learn_ret;
	pthread_mutex_unlock(&H.lock);
	return ret;
}

#define HOOK_SET(field, v)                                                                         \
	do {                                                                                       \
		pthread_mutex_lock(&H.lock);                                                       \
		H.field = (v);                                                                     \
		pthread_cond_broadcast(&H.cond);                                                   \
		pthread_mutex_unlock(&H.lock);                                                     \
	} while (0)

static unsigned int hook_count(unsigned int *field)
{
	unsigned int v;

	pthread_mutex_lock(&H.lock);
	v = *field;
	pthread_mutex_unlock(&H.lock);
	return v;
}

static const struct fw_dnsp_hooks hooks = {.ctx = &H, .decide = hook_decide, .learn = hook_learn};

/* ---- the engine and its clients ---- */

static void cfg_base(struct fw_dnsp_config *c)
{
	fw_dnsp_config_init(c);
	c->port = 0;
	c->loopback = true;
	c->ipv6 = false;
	c->workers = 1;
	c->probe_interval_ns = 0;
}

static void cfg_add(struct fw_dnsp_config *c, const struct fake *f)
{
	c->upstreams[c->nupstreams++] = upstream_of(f);
}

static struct fw_dnsp *proxy_start(const struct fw_dnsp_config *c)
{
	struct fw_dnsp *p = NULL;

	cr_assert_eq(fw_dnsp_start(c, &hooks, &p), 0);
	cr_assert_neq(fw_dnsp_port(p), 0);
	return p;
}

static int udp_client(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void udp_send(int fd, struct fw_dnsp *p, const __u8 *b, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(fw_dnsp_port(p)),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	cr_assert_eq(sendto(fd, b, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

/* Receives one answer; false on timeout. The source must be the address
 * the query went to. */
static bool udp_recv(int fd, struct fw_dnsp *p, struct msg *m, int ms)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&pfd, 1, ms) <= 0)
		return false;
	n = recvfrom(fd, m->b, sizeof(m->b), 0, (struct sockaddr *)&from, &fl);
	cr_assert_gt(n, 0);
	cr_assert_eq(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	cr_assert_eq(ntohs(from.sin_port), fw_dnsp_port(p));
	m->len = (size_t)n;
	return true;
}

static struct msg udp_ask(struct fw_dnsp *p, const struct msg *q)
{
	int fd = udp_client();
	struct msg a;

	udp_send(fd, p, q->b, q->len);
	cr_assert(udp_recv(fd, p, &a, WAIT_MS), "no answer within %d ms", WAIT_MS);
	close(fd);
	return a;
}

static int tcp_client(struct fw_dnsp *p)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(fw_dnsp_port(p)),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static bool tcp_recv(int fd, struct msg *m, int ms)
{
	__u8 l[2];

	if (!read_full(fd, l, 2, ms))
		return false;
	m->len = (size_t)(l[0] << 8 | l[1]);
	return read_full(fd, m->b, m->len, ms);
}

static struct fw_dnsp_stats stats(struct fw_dnsp *p)
{
	struct fw_dnsp_stats s;

	fw_dnsp_get_stats(p, &s);
	return s;
}

static void assert_addr(const struct fw_dns_addr *a, __u32 host)
{
	struct fw_ip want;
	char x[FW_ADDR_STRLEN], y[FW_ADDR_STRLEN];

	fw_addr_from_v4(&want, htonl(host));
	cr_assert(!memcmp(&a->ip, &want, sizeof(want)), "address %s, want %s",
		  fw_addr_str(&a->ip, x, sizeof(x)), fw_addr_str(&want, y, sizeof(y)));
}

/* a broken engine must fail a test, not hang the run */
TestSuite(dnsproxy, .timeout = 60);

/* ---- forwarding ---- */

Test(dnsproxy, forwards_and_learns)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(0x4242, "Allowed.Example", FW_DNS_TYPE_A, 0), r;
	struct fw_ip lo;
	struct fw_dnsp_stats s;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.id, 0x4242);
	cr_assert_eq(a.rcode, FW_DNS_RCODE_NOERROR);
	cr_assert_eq(a.naddrs, 2);
	assert_addr(&a.addrs[0], TEST_NET_1 + 1);
	assert_addr(&a.addrs[1], TEST_NET_1 + 2);

	/* the hooks saw the client, the lowercased name and the same
	 * addresses, with decide's token */
	fw_addr_from_v4(&lo, htonl(INADDR_LOOPBACK));
	cr_assert_eq(hook_count(&H.ndecide), 1);
	cr_assert_eq(hook_count(&H.nlearn), 1);
	cr_assert(!memcmp(&H.client, &lo, sizeof(lo)));
	cr_assert_str_eq(H.name, "allowed.example");
	cr_assert_eq(H.token, 0xfeed0001u);
	cr_assert_eq(H.naddrs, 2);
	assert_addr(&H.addrs[1], TEST_NET_1 + 2);

	s = stats(p);
	cr_assert_eq(s.queries_udp, 1);
	cr_assert_eq(s.forwarded, 1);
	cr_assert_eq(s.answered, 1);
	cr_assert_eq(s.servfail, 0);
	cr_assert_eq(fake_get(f, &f->udp_queries), 1);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, learn_runs_before_the_client_reads)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(7, "a.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	HOOK_SET(learn_block, true);
	fd = udp_client();
	udp_send(fd, p, q.b, q.len);

	/* learn() has the answer but holds it: nothing may reach the client */
	{
		struct timespec until;
		int err = 0;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += WAIT_MS / 1000;
		pthread_mutex_lock(&H.lock);
		while (!H.nlearn && !err)
			err = pthread_cond_timedwait(&H.cond, &H.lock, &until);
		pthread_mutex_unlock(&H.lock);
		cr_assert_eq(err, 0, "learn() was never called");
	}
	cr_assert(!udp_recv(fd, p, &r, QUIET_MS), "answer sent before learn() returned");

	HOOK_SET(learn_block, false);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_ID), 7);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, decide_rcode_answers_at_once)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(0xbeef, "denied.example", FW_DNS_TYPE_AAAA, 0), r;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	HOOK_SET(decide_ret, FW_DNS_RCODE_NXDOMAIN);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_ID), 0xbeef);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NXDOMAIN);
	cr_assert(hdr(&r, H_FLAGS) & FW_DNS_F_QR);
	cr_assert_eq(hdr(&r, H_QD), 1);
	cr_assert_eq(hdr(&r, H_AN), 0);
	/* the question is echoed byte for byte */
	cr_assert_eq(r.len, q.len);
	cr_assert(!memcmp(r.b + FW_DNS_HDR_LEN, q.b + FW_DNS_HDR_LEN, q.len - FW_DNS_HDR_LEN));
	cr_assert_eq(stats(p).refused_by_hook, 1);
	cr_assert_eq(stats(p).forwarded, 0);
	cr_assert_eq(fake_get(f, &f->udp_queries), 0);
	cr_assert_eq(hook_count(&H.nlearn), 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, silent_upstream_gives_servfail)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(99, "slow.example", FW_DNS_TYPE_A, 0), r;
	__u64 t0;

	FAKE_SET(f, drop, true);
	cfg_base(&c);
	cfg_add(&c, f);
	c.timeout_ns = SHORT_NS;
	p = proxy_start(&c);
	cr_assert(fw_dnsp_upstream_healthy(p, 0));
	t0 = now_ns();
	r = udp_ask(p, &q);
	/* not before the timeout */
	cr_assert_geq(now_ns() - t0, SHORT_NS - 20 * 1000000ULL);
	cr_assert_eq(hdr(&r, H_ID), 99);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	cr_assert_eq(stats(p).upstream_timeouts, 1);
	cr_assert_eq(stats(p).servfail, 1);
	cr_assert_eq(hook_count(&H.nlearn), 0);
	cr_assert(!fw_dnsp_upstream_healthy(p, 0));
	fw_dnsp_stop(p);
	fake_free(f);
}

static void failover_on_rcode(int rcode)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(5, "x.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f1, rcode, rcode);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.rcode, FW_DNS_RCODE_NOERROR);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	cr_assert_eq(fake_get(f1, &f1->udp_queries), 1);
	cr_assert_eq(fake_get(f2, &f2->udp_queries), 1);
	cr_assert_eq(stats(p).upstream_errors, 1);
	cr_assert_eq(hook_count(&H.nlearn), 1);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, failover_on_servfail)
{
	failover_on_rcode(FW_DNS_RCODE_SERVFAIL);
}

Test(dnsproxy, failover_on_refused)
{
	failover_on_rcode(FW_DNS_RCODE_REFUSED);
}

Test(dnsproxy, nxdomain_is_final)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(5, "gone.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f1, rcode, FW_DNS_RCODE_NXDOMAIN);
	FAKE_SET(f1, naddrs, 0);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NXDOMAIN);
	cr_assert_eq(fake_get(f2, &f2->udp_queries), 0);
	/* learn() sees NXDOMAIN answers too */
	cr_assert_eq(hook_count(&H.nlearn), 1);
	cr_assert_eq(H.rcode, FW_DNS_RCODE_NXDOMAIN);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, failover_on_timeout)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(6, "y.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f1, drop, true);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	/* not SHORT_NS: the same timeout applies to f2, whose thread a loaded
	 * machine may not run within 200 ms (then f2 timed out too, both
	 * were down and the client got SERVFAIL) */
	c.timeout_ns = LONG_TIMEOUT_NS;
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	cr_assert_eq(stats(p).upstream_timeouts, 1);
	cr_assert(!fw_dnsp_upstream_healthy(p, 0));
	cr_assert(fw_dnsp_upstream_healthy(p, 1));

	/* the next query goes to the healthy one first: no timeout to wait */
	q = query(7, "z.example", FW_DNS_TYPE_A, 0);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	cr_assert_eq(fake_get(f1, &f1->udp_queries), 1);
	cr_assert_eq(stats(p).upstream_timeouts, 1);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, failover_on_malformed_answer)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(9, "cut.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f1, cut, true);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	cr_assert_eq(stats(p).upstream_errors, 1);
	cr_assert_eq(hook_count(&H.nlearn), 1, "nothing learned from the broken answer");
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, every_upstream_failing_gives_servfail)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(8, "bad.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f1, rcode, FW_DNS_RCODE_SERVFAIL);
	FAKE_SET(f2, drop, true);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	c.timeout_ns = SHORT_NS;
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	cr_assert_eq(hdr(&r, H_ID), 8);
	cr_assert_eq(stats(p).servfail, 1);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, learn_failure_gives_servfail)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(11, "a.example", FW_DNS_TYPE_A, 0), r;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	HOOK_SET(learn_ret, -ENOSPC);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_ID), 11);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	cr_assert_eq(hdr(&r, H_AN), 0, "no address may leak past a failed learn()");
	cr_assert_eq(stats(p).servfail, 1);
	cr_assert_eq(stats(p).answered, 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, ttl_capped_for_client_and_learn)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(12, "long.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f, ttl, 86400);
	cfg_base(&c);
	cfg_add(&c, f);
	c.ttl_cap = 120;
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.naddrs, 2);
	cr_assert_eq(a.addrs[0].ttl, 120);
	cr_assert_eq(a.addrs[1].ttl, 120);
	cr_assert_eq(H.addrs[0].ttl, 120);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* a reload's dns.lease.max: the next answer is capped at the new value */
Test(dnsproxy, ttl_cap_set_while_running)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(13, "long.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f, ttl, 86400);
	cfg_base(&c);
	cfg_add(&c, f);
	c.ttl_cap = 120;
	p = proxy_start(&c);
	fw_dnsp_set_ttl_cap(p, 30);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.naddrs, 2);
	cr_assert_eq(a.addrs[0].ttl, 30);
	cr_assert_eq(H.addrs[0].ttl, 30);
	fw_dnsp_set_ttl_cap(p, 0); /* ignored: 0 would zero every TTL */
	q = query(14, "long.example", FW_DNS_TYPE_A, 0);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.addrs[0].ttl, 30);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, edns_added_upstream_and_stripped_back)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(13, "e.example", FW_DNS_TYPE_A, 0), r;

	cfg_base(&c);
	cfg_add(&c, f);
	c.edns_size = 1400;
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert(f->last_had_opt, "no OPT RR upstream");
	cr_assert_eq(f->last_opt_size, 1400);
	cr_assert_eq(hdr(&r, H_AR), 0, "the client sent no OPT and must get none");
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.naddrs, 2);

	/* a client with its own OPT: passed on as it is, and answered with one */
	q = query(14, "e.example", FW_DNS_TYPE_A, 1232);
	r = udp_ask(p, &q);
	cr_assert_eq(f->last_opt_size, 1232);
	cr_assert_eq(hdr(&r, H_AR), 1);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, big_answer_truncated_for_plain_udp)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(15, "big.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	FAKE_SET(f, naddrs, 60); /* 60 * 16 bytes: well over 512 */
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_leq(r.len, 512);
	cr_assert(hdr(&r, H_FLAGS) & FW_DNS_F_TC);
	cr_assert_eq(hdr(&r, H_ID), 15);
	cr_assert_eq(hdr(&r, H_QD), 1);
	cr_assert_eq(hdr(&r, H_AN), 0);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(stats(p).truncated, 1);

	/* the client's retry over TCP gets everything */
	fd = tcp_client(p);
	send_frame(fd, q.b, q.len);
	cr_assert(tcp_recv(fd, &r, WAIT_MS));
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert_eq(a.naddrs, 60);
	cr_assert_eq(hdr(&r, H_AR), 0);
	close(fd);

	/* an EDNS client that takes 4096 gets it over UDP */
	q = query(16, "big.example", FW_DNS_TYPE_A, 4096);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	cr_assert(!a.truncated);
	cr_assert_eq(a.naddrs, 60);
	cr_assert_eq(stats(p).truncated, 1);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, upstream_tc_relayed)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(17, "tc.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f, tc, true);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert(hdr(&r, H_FLAGS) & FW_DNS_F_TC);
	cr_assert_eq(hdr(&r, H_ID), 17);
	cr_assert_eq(fake_get(f, &f->udp_queries), 1, "a TC answer is final over UDP");
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, decoys_ignored)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(18, "d.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f, wrong_id_first, true);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_1 + 1);

	FAKE_SET(f, wrong_id_first, false);
	FAKE_SET(f, wrong_question_first, true);
	q = query(19, "d.example", FW_DNS_TYPE_A, 0);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_1 + 1);
	cr_assert_eq(H.naddrs, 2);
	assert_addr(&H.addrs[0], TEST_NET_1 + 1);
	cr_assert_eq(stats(p).upstream_errors, 0);
	cr_assert_eq(stats(p).answered, 2);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* RFC 5452: a fresh source port per query (and a fresh id), so a forger
 * has to guess both for every single query. */
Test(dnsproxy, upstream_source_port_per_query)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	unsigned int distinct = 0;
	const unsigned int n = 200;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	for (unsigned int i = 0; i < n; i++) {
		struct msg q = query((__u16)(100 + i), "port.example", FW_DNS_TYPE_A, 0), r;

		r = udp_ask(p, &q);
		cr_assert_eq(hdr(&r, H_ID), 100 + i);
	}
	cr_assert_eq(fake_get(f, &f->nports), n);
	pthread_mutex_lock(&f->lock);
	for (unsigned int i = 0; i < n; i++) {
		bool seen = false;

		for (unsigned int j = 0; j < i && !seen; j++)
			seen = f->ports[j] == f->ports[i];
		distinct += !seen;
	}
	pthread_mutex_unlock(&f->lock);
	/* ~28k ephemeral ports: a collision or two among 200 is chance */
	cr_assert_geq(distinct, n - 5, "%u distinct source ports over %u queries", distinct, n);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* The pool of upstream sockets: attempts share sockets, never an id on
 * one; an answer under one attempt's id with another's question, and an
 * attempt's whole answer arriving on another socket, are not answers. */
Test(dnsproxy, pooled_sockets_cross_answers_ignored)
{
	struct fake *f = fake_new(TEST_NET_1);
	enum { N = 12 };
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q[N], r;
	int fd[N];
	unsigned int shared = 0, apart = 0;

	FAKE_SET(f, cross, N);
	cfg_base(&c);
	cfg_add(&c, f);
	c.max_pending = 16; /* a pool of 8 sockets: 12 attempts at once share some */
	p = proxy_start(&c);
	for (int i = 0; i < N; i++) {
		struct timespec gap = {0, 30 * 1000 * 1000};
		char name[32];

		/* pairs in rounds of their own: a round's attempts share a
		 * socket, and six rounds all on one of 8 is 1 in 32,768 */
		if (i && !(i % 2))
			nanosleep(&gap, NULL);
		snprintf(name, sizeof(name), "cross-%d.example", i);
		q[i] = query((__u16)(400 + i), name, FW_DNS_TYPE_A, 0);
		fd[i] = udp_client();
		udp_send(fd[i], p, q[i].b, q[i].len);
	}
	for (int i = 0; i < N; i++) {
		cr_assert(udp_recv(fd[i], p, &r, WAIT_MS), "query %d: no answer", i);
		cr_assert_eq(answer_of(&q[i], &r, &a), 0, "query %d: not its answer", i);
		cr_assert_eq(a.naddrs, 2, "query %d: %u addresses", i, a.naddrs);
		assert_addr(&a.addrs[0], TEST_NET_1 + 1);
		assert_addr(&a.addrs[1], TEST_NET_1 + 2);
		close(fd[i]);
	}
	pthread_mutex_lock(&f->lock);
	cr_assert_eq(f->nports, N);
	for (unsigned int i = 0; i < N; i++)
		for (unsigned int j = i + 1; j < N; j++)
			if (f->ports[i] == f->ports[j]) {
				shared++;
				cr_assert_neq(f->ids[i], f->ids[j], "one id twice on port %u",
					      f->ports[i]);
			} else {
				apart++;
			}
	pthread_mutex_unlock(&f->lock);
	cr_assert_gt(shared, 0, "no two attempts shared a socket: the test tests nothing");
	cr_assert_gt(apart, 0, "every attempt on one socket: no answer went to a wrong one");
	cr_assert_eq(hook_count(&H.nlearn), N);
	cr_assert_eq(hook_count(&H.nforged), 0, "a forged address was learned");
	cr_assert_eq(stats(p).answered, N);
	cr_assert_eq(stats(p).upstream_errors, 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* The pool turns over: a socket carries at most DNSP_POOL_USES attempts,
 * then a new one (a new random port) takes its place. */
Test(dnsproxy, pooled_sockets_retired_after_their_uses)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	const unsigned int n = 600;
	unsigned int distinct = 0, most = 0;

	cfg_base(&c);
	cfg_add(&c, f);
	c.max_pending = 16; /* 8 sockets: 75 attempts each, more than any may carry */
	p = proxy_start(&c);
	for (unsigned int i = 0; i < n; i++) {
		struct msg q = query((__u16)i, "turn.example", FW_DNS_TYPE_A, 0), r;

		r = udp_ask(p, &q);
		cr_assert_eq(hdr(&r, H_ID), i);
	}
	pthread_mutex_lock(&f->lock);
	cr_assert_eq(f->nports, n);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int same = 0, seen = 0;

		for (unsigned int j = 0; j < n; j++) {
			same += f->ports[j] == f->ports[i];
			seen += j < i && f->ports[j] == f->ports[i];
		}
		distinct += !seen;
		most = same > most ? same : most;
	}
	pthread_mutex_unlock(&f->lock);
	cr_assert_leq(most, 64, "one port carried %u attempts", most);
	cr_assert_geq(distinct, n / 64, "%u ports over %u attempts", distinct, n);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* An ICMP port unreachable for a pooled socket fails its attempts over at
 * once (not after the timeout) and marks the upstream down. */
Test(dnsproxy, icmp_unreachable_fails_over_at_once)
{
	struct fake *f2 = fake_new(TEST_NET_2);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	struct fw_dnsp_upstream closed;
	struct fw_dnsp_config c;
	struct fw_dns_answer ans;
	struct fw_dnsp *p;
	struct msg q = query(9, "icmp.example", FW_DNS_TYPE_A, 0), r;
	struct timespec t0, t1;
	char s[32];
	int hole = socket(AF_INET, SOCK_DGRAM, 0);

	/* a port nobody listens on: loopback answers it with port unreachable */
	cr_assert_eq(bind(hole, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(hole, (struct sockaddr *)&a, &al), 0);
	close(hole);
	snprintf(s, sizeof(s), "127.0.0.1:%u", ntohs(a.sin_port));
	cr_assert_eq(fw_dnsp_upstream_parse(s, &closed), 0);
	cfg_base(&c);
	c.upstreams[c.nupstreams++] = closed;
	cfg_add(&c, f2);
	c.timeout_ns = 10 * 1000000000ULL;
	p = proxy_start(&c);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = udp_ask(p, &q);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(answer_of(&q, &r, &ans), 0);
	assert_addr(&ans.addrs[0], TEST_NET_2 + 1);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 5, "failed over only after %ld s",
		     (long)(t1.tv_sec - t0.tv_sec));
	cr_assert(!fw_dnsp_upstream_healthy(p, 0));
	cr_assert_eq(stats(p).upstream_timeouts, 0);
	fw_dnsp_stop(p);
	fake_free(f2);
}

Test(dnsproxy, forged_answers_ignored)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;

	FAKE_SET(f, forge, true);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	for (int i = 0; i < 4; i++) {
		struct msg q = query((__u16)(300 + i), i & 1 ? "Forge.Example" : "forge.example",
				     FW_DNS_TYPE_A, i & 2 ? 1232 : 0),
			   r;

		r = udp_ask(p, &q);
		cr_assert_eq(answer_of(&q, &r, &a), 0);
		cr_assert_eq(a.naddrs, 2, "answer %d: %u addresses", i, a.naddrs);
		assert_addr(&a.addrs[0], TEST_NET_1 + 1);
		assert_addr(&a.addrs[1], TEST_NET_1 + 2);
		/* what was learned is the real answer, nothing forged */
		cr_assert_eq(H.naddrs, 2);
		assert_addr(&H.addrs[0], TEST_NET_1 + 1);
		assert_addr(&H.addrs[1], TEST_NET_1 + 2);
	}
	cr_assert_eq(hook_count(&H.nlearn), 4);
	cr_assert_eq(stats(p).answered, 4);
	cr_assert_eq(stats(p).upstream_errors, 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* 0x20: the name goes upstream in a random case per attempt, only an
 * answer in that very case is taken, and the client reads its own case. */
Test(dnsproxy, case_randomized_upstream)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	unsigned int upper = 0, lower = 0;
	char seen[FW_DNS_NAME_BUF];

	cfg_base(&c);
	cfg_add(&c, f);
	c.case_randomize = true;
	c.timeout_ns = 3 * SHORT_NS;
	p = proxy_start(&c);
	for (int i = 0; i < 8; i++) {
		struct msg q = query((__u16)(500 + i), "case.example.com", FW_DNS_TYPE_A, 0), r;

		r = udp_ask(p, &q);
		cr_assert_eq(answer_of(&q, &r, &a), 0);
		cr_assert_eq(a.naddrs, 2);
		/* the client's question, byte for byte */
		cr_assert(!memcmp(r.b + FW_DNS_HDR_LEN, q.b + FW_DNS_HDR_LEN,
				  q.len - FW_DNS_HDR_LEN));
		pthread_mutex_lock(&f->lock);
		snprintf(seen, sizeof(seen), "%s", f->last_name);
		pthread_mutex_unlock(&f->lock);
		cr_assert(!strcasecmp(seen, "case.example.com"), "upstream saw %s", seen);
		for (const char *x = seen; *x; x++) {
			upper += *x >= 'A' && *x <= 'Z';
			lower += *x >= 'a' && *x <= 'z';
		}
	}
	/* 8 x 14 letters: all in one case would be chance of 2^-111 */
	cr_assert(upper && lower, "%u upper, %u lower", upper, lower);

	/* an answer that does not echo the case is not taken: a forger
	 * who hit port and id must also hit every letter's case */
	FAKE_SET(f, lower_echo, true);
	{
		struct msg q = query(600, "case.example.com", FW_DNS_TYPE_A, 0), r;

		r = udp_ask(p, &q);
		cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
		cr_assert(
			!memcmp(r.b + FW_DNS_HDR_LEN, q.b + FW_DNS_HDR_LEN, q.len - FW_DNS_HDR_LEN),
			"the SERVFAIL echoes the client's case");
	}
	cr_assert_eq(hook_count(&H.nlearn), 8);
	fw_dnsp_stop(p);

	/* off (the default): the name goes as the client sent it */
	FAKE_SET(f, lower_echo, false);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	{
		struct msg q = query(601, "CaSe.Example.com", FW_DNS_TYPE_A, 0), r;

		r = udp_ask(p, &q);
		cr_assert_eq(answer_of(&q, &r, &a), 0);
		pthread_mutex_lock(&f->lock);
		cr_assert_str_eq(f->last_name, "CaSe.Example.com");
		pthread_mutex_unlock(&f->lock);
	}
	fw_dnsp_stop(p);
	fake_free(f);
}

/* ---- TCP clients ---- */

Test(dnsproxy, tcp_pipelined)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	bool seen[8] = {false};
	struct msg all = {.len = 0}, r;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	/* eight queries in one write, then the answers in any order */
	for (int i = 0; i < 8; i++) {
		char name[32];
		struct msg q;

		snprintf(name, sizeof(name), "p%d.example", i);
		q = query((__u16)(0x100 + i), name, FW_DNS_TYPE_A, 0);
		m_u16(&all, (__u16)q.len);
		memcpy(all.b + all.len, q.b, q.len);
		all.len += q.len;
	}
	fd = tcp_client(p);
	cr_assert_eq(send(fd, all.b, all.len, MSG_NOSIGNAL), (ssize_t)all.len);
	for (int i = 0; i < 8; i++) {
		unsigned int id;

		cr_assert(tcp_recv(fd, &r, WAIT_MS), "answer %d missing", i);
		id = hdr(&r, H_ID);
		cr_assert(id >= 0x100 && id < 0x108 && !seen[id - 0x100], "id %#x", id);
		seen[id - 0x100] = true;
		cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NOERROR);
		cr_assert_eq(hdr(&r, H_AN), 2);
	}
	cr_assert_eq(stats(p).queries_tcp, 8);
	cr_assert_eq(fake_get(f, &f->tcp_queries), 8, "TCP clients are forwarded over TCP");
	cr_assert_eq(fake_get(f, &f->udp_queries), 0);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, tcp_failover)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(20, "t.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	FAKE_SET(f1, rcode, FW_DNS_RCODE_SERVFAIL);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	p = proxy_start(&c);
	fd = tcp_client(p);
	send_frame(fd, q.b, q.len);
	cr_assert(tcp_recv(fd, &r, WAIT_MS));
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	cr_assert_eq(fake_get(f1, &f1->tcp_queries), 1);
	cr_assert_eq(fake_get(f2, &f2->tcp_queries), 1);

	/* and to a silent one, over TCP too: SERVFAIL after the timeouts */
	fw_dnsp_stop(p);
	FAKE_SET(f1, drop, true);
	FAKE_SET(f2, drop, true);
	c.timeout_ns = SHORT_NS;
	p = proxy_start(&c);
	close(fd);
	fd = tcp_client(p);
	send_frame(fd, q.b, q.len);
	cr_assert(tcp_recv(fd, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	cr_assert_eq(stats(p).upstream_timeouts, 2);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, tcp_denied_answered_on_the_connection)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(21, "no.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	HOOK_SET(decide_ret, FW_DNS_RCODE_NXDOMAIN);
	fd = tcp_client(p);
	/* split in odd pieces: the framing must not care */
	send(fd, q.b, 0, MSG_NOSIGNAL);
	{
		__u8 l[2] = {0, (__u8)q.len};

		cr_assert_eq(send(fd, l, 1, MSG_NOSIGNAL), 1);
		usleep(20000);
		cr_assert_eq(send(fd, l + 1, 1, MSG_NOSIGNAL), 1);
		cr_assert_eq(send(fd, q.b, 5, MSG_NOSIGNAL), 5);
		usleep(20000);
		cr_assert_eq(send(fd, q.b + 5, q.len - 5, MSG_NOSIGNAL), (ssize_t)q.len - 5);
	}
	cr_assert(tcp_recv(fd, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_ID), 21);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NXDOMAIN);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, tcp_client_limit)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(22, "l.example", FW_DNS_TYPE_A, 0), r;
	int fd[3];

	cfg_base(&c);
	cfg_add(&c, f);
	c.max_tcp_clients = 2;
	p = proxy_start(&c);
	for (int i = 0; i < 2; i++) {
		fd[i] = tcp_client(p);
		send_frame(fd[i], q.b, q.len);
		cr_assert(tcp_recv(fd[i], &r, WAIT_MS));
	}
	/* the third is accepted and closed at once */
	fd[2] = tcp_client(p);
	cr_assert(closed_by_peer(fd[2], WAIT_MS));
	cr_assert_eq(stats(p).tcp_rejected, 1);
	/* the others still work */
	send_frame(fd[1], q.b, q.len);
	cr_assert(tcp_recv(fd[1], &r, WAIT_MS));

	/* a slot frees up when a client leaves */
	close(fd[0]);
	close(fd[2]);
	for (int t = 0;; t++) {
		int x = tcp_client(p);
		bool ok;

		send_frame(x, q.b, q.len);
		ok = tcp_recv(x, &r, 1000);
		close(x);
		if (ok)
			break;
		cr_assert_lt(t, 20, "the limit never went back down");
	}
	close(fd[1]);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, tcp_idle_closed)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	c.tcp_idle_ns = SHORT_NS;
	p = proxy_start(&c);
	fd = tcp_client(p);
	cr_assert(closed_by_peer(fd, WAIT_MS), "the idle connection stayed open");
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* A connection from the given loopback address (127.0.0.x). */
static int tcp_client_from(struct fw_dnsp *p, __u8 x)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000u | x)};
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(fw_dnsp_port(p)),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* One byte of a query every 50 ms does not keep a connection: only a
 * complete query restarts its clock. */
Test(dnsproxy, tcp_trickle_closed_at_the_deadline)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(40, "t.example", FW_DNS_TYPE_A, 0), r;
	__u64 t0;
	bool closed = false;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	c.tcp_idle_ns = 3 * SHORT_NS;
	p = proxy_start(&c);
	fd = tcp_client(p);
	t0 = now_ns();
	for (int i = 0; i < 60 && !closed; i++) {
		/* the frame says 256 bytes follow; they never all come */
		__u8 b = i == 0 ? 0x01 : 'x';

		if (send(fd, &b, 1, MSG_NOSIGNAL) != 1)
			closed = true;
		else
			closed = closed_by_peer(fd, 50);
	}
	cr_assert(closed, "a trickling connection stayed open for 3 s");
	cr_assert_lt(now_ns() - t0, 2000 * 1000000ULL);
	close(fd);

	/* one that completes its queries stays */
	fd = tcp_client(p);
	for (int i = 0; i < 6; i++) {
		send_frame(fd, q.b, q.len);
		cr_assert(tcp_recv(fd, &r, WAIT_MS), "query %d on a live connection", i);
		usleep(200 * 1000);
	}
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* One client address can't hold every connection: over its own limit it
 * is refused, and when all are taken a newcomer evicts one of the biggest
 * holder's. */
Test(dnsproxy, tcp_per_client_limit_and_eviction)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(41, "e.example", FW_DNS_TYPE_A, 0), r;
	int hog[8], other, n = 0;

	cfg_base(&c);
	cfg_add(&c, f);
	c.max_tcp_clients = 8;
	c.max_tcp_per_client = 6;
	p = proxy_start(&c);
	for (int i = 0; i < 8; i++)
		hog[i] = tcp_client_from(p, 2);
	/* the first 6 are served, the last 2 closed at once */
	for (int i = 0; i < 6; i++) {
		send_frame(hog[i], q.b, q.len);
		cr_assert(tcp_recv(hog[i], &r, WAIT_MS), "hog connection %d", i);
	}
	cr_assert(closed_by_peer(hog[6], WAIT_MS));
	cr_assert(closed_by_peer(hog[7], WAIT_MS));
	cr_assert_eq(stats(p).tcp_rejected, 2);

	/* a second address fills the rest */
	for (int i = 6; i < 8; i++) {
		close(hog[i]);
		hog[i] = tcp_client_from(p, 3);
		send_frame(hog[i], q.b, q.len);
		cr_assert(tcp_recv(hog[i], &r, WAIT_MS), "second client's connection %d", i);
	}
	/* all 8 taken: a third address evicts one of 127.0.0.2's (6 > 2) */
	other = tcp_client_from(p, 4);
	send_frame(other, q.b, q.len);
	cr_assert(tcp_recv(other, &r, WAIT_MS), "the newcomer was not served");
	cr_assert_eq(hdr(&r, H_ID), 41);
	for (int i = 0; i < 6; i++)
		n += closed_by_peer(hog[i], 100);
	cr_assert_eq(n, 1, "%d of the biggest holder's connections closed", n);
	cr_assert_eq(stats(p).tcp_evicted, 1);
	/* the second address's connections are untouched */
	for (int i = 6; i < 8; i++) {
		send_frame(hog[i], q.b, q.len);
		cr_assert(tcp_recv(hog[i], &r, WAIT_MS));
	}
	for (int i = 0; i < 8; i++)
		close(hog[i]);
	close(other);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, tcp_close_with_queries_in_flight)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(23, "gone.example", FW_DNS_TYPE_A, 0), r;

	FAKE_SET(f, delay_ms, 150);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	for (int i = 0; i < 4; i++) {
		int fd = tcp_client(p);

		send_frame(fd, q.b, q.len);
		send_frame(fd, q.b, q.len);
		if (i & 1)
			shutdown(fd, SHUT_RDWR);
		close(fd);
	}
	/* and one that half-closes still gets its answer */
	{
		int fd = tcp_client(p);

		send_frame(fd, q.b, q.len);
		shutdown(fd, SHUT_WR);
		cr_assert(tcp_recv(fd, &r, WAIT_MS));
		cr_assert_eq(hdr(&r, H_ID), 23);
		close(fd);
	}
	FAKE_SET(f, delay_ms, 0);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_ID), 23);
	fw_dnsp_stop(p);
	fake_free(f);
}

static __u64 cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((__u64)ru.ru_utime.tv_sec + (__u64)ru.ru_stime.tv_sec) * 1000000000ULL +
	       ((__u64)ru.ru_utime.tv_usec + (__u64)ru.ru_stime.tv_usec) * 1000ULL;
}

Test(dnsproxy, tcp_accept_out_of_descriptors)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct rlimit rl = {.rlim_cur = 256, .rlim_max = 256};
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(29, "fd.example", FW_DNS_TYPE_A, 0), r;
	int fds[256], n = 0, fd;
	__u64 spent;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_cur < 256 ? rl.rlim_cur : 256;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while (n < 256 && (fd = open("/dev/null", O_RDONLY)) >= 0)
		fds[n++] = fd;
	cr_assert_gt(n, 1);
	close(fds[--n]); /* one left: the client's, none for accept() */
	fd = tcp_client(p);

	/* the engine cannot accept: it must wait, not spin */
	usleep(50000);
	spent = cpu_ns();
	usleep(300000);
	spent = cpu_ns() - spent;
	while (n)
		close(fds[--n]);
	cr_assert_lt(spent, 150000000ULL, "%llu ms of CPU in 300 ms", spent / 1000000);

	/* and takes the connection once descriptors are back */
	send_frame(fd, q.b, q.len);
	cr_assert(tcp_recv(fd, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_ID), 29);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* Each exchange in flight holds a descriptor: a flood to a silent
 * upstream stops at the budget, and the process keeps descriptors for
 * everything else. */
Test(dnsproxy, pending_within_descriptor_budget)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct rlimit rl;
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	static int fds[1100];
	int n = 0, fd = udp_client();

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_geq(rl.rlim_max, 1400);
	rl.rlim_cur = 1400;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	FAKE_SET(f, drop, true);
	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	for (int i = 0; i < 1000; i++) {
		struct msg q = query((__u16)i, "flood.example", FW_DNS_TYPE_A, 0);

		udp_send(fd, p, q.b, q.len);
	}
	for (int t = 0; t < 100 && stats(p).forwarded + stats(p).overload < 1000; t++)
		usleep(20000);
	cr_assert_eq(stats(p).forwarded + stats(p).overload, 1000);
	cr_assert_gt(stats(p).overload, 0, "every query of the flood is in flight");
	cr_assert_eq(stats(p).upstream_errors, 0, "the proxy ran out of descriptors");
	while (n < 1100 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	cr_assert_geq(n, 1000, "only %d descriptors left beside the flood", n);
	while (n)
		close(fds[--n]);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* ---- hostile clients ---- */

Test(dnsproxy, malformed_queries)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(24, "ok.example", FW_DNS_TYPE_A, 0), r, bad;
	unsigned int seed = 1;
	int fd;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	fd = udp_client();

	/* runts and answers: nothing comes back */
	udp_send(fd, p, q.b, 5);
	bad = q;
	bad.b[2] |= FW_DNS_F_QR >> 8;
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(!udp_recv(fd, p, &r, QUIET_MS));

	/* a broken question: FORMERR with the header echoed */
	bad = q;
	bad.b[12] = 63; /* label runs past the end */
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_ID), 24);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_FORMERR);
	cr_assert_eq(hdr(&r, H_QD), 0);

	/* another opcode (STATUS): NOTIMP, never REFUSED */
	bad = q;
	bad.b[2] |= (2 << 11) >> 8;
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NOTIMP);
	cr_assert_eq(hdr(&r, H_QD), 1);

	/* two questions: FORMERR, nothing forwarded (an answer to the
	 * second would teach what the policy never saw) */
	bad = q;
	bad.b[5] = 2;
	memcpy(bad.b + bad.len, q.b + FW_DNS_HDR_LEN, q.len - FW_DNS_HDR_LEN);
	bad.len += q.len - FW_DNS_HDR_LEN;
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_FORMERR);
	cr_assert_eq(fake_get(f, &f->udp_queries), 0);

	/* no question: FORMERR, nothing forwarded (the policy decides on
	 * the question) */
	bad = q;
	bad.b[5] = 0;
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_FORMERR);
	bad.len = FW_DNS_HDR_LEN;
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_FORMERR);
	cr_assert_eq(fake_get(f, &f->udp_queries), 0);

	/* bigger than any query we take */
	bad = q;
	bad.len = 3000;
	memset(bad.b + q.len, 0, bad.len - q.len);
	udp_send(fd, p, bad.b, bad.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_FORMERR);

	/* noise: whatever comes back is an error answer, nothing forwarded */
	for (int i = 0; i < 300; i++) {
		bad.len = (size_t)(rand_r(&seed) % 64);
		for (size_t j = 0; j < bad.len; j++)
			bad.b[j] = (__u8)rand_r(&seed);
		if (bad.len > 2)
			bad.b[2] &= 0x7f; /* queries, not answers */
		udp_send(fd, p, bad.b, bad.len);
	}
	while (udp_recv(fd, p, &r, QUIET_MS)) {
		cr_assert_geq(r.len, FW_DNS_HDR_LEN);
		cr_assert(hdr(&r, H_FLAGS) & FW_DNS_F_QR);
		cr_assert_neq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NOERROR);
	}
	cr_assert_geq(stats(p).malformed, 300);

	/* and over TCP: an empty frame, garbage, then a good query */
	{
		int t = tcp_client(p);
		__u8 junk[40];

		for (size_t j = 0; j < sizeof(junk); j++)
			junk[j] = (__u8)rand_r(&seed);
		junk[2] &= 0x7f;
		send_frame(t, junk, 0);
		send_frame(t, junk, sizeof(junk));
		send_frame(t, q.b, q.len);
		for (int k = 0; k < 2; k++) {
			cr_assert(tcp_recv(t, &r, WAIT_MS));
			if (hdr(&r, H_ID) == 24 && (hdr(&r, H_FLAGS) & FW_DNS_F_RCODE) == 0)
				break;
		}
		cr_assert_eq(hdr(&r, H_ID), 24);
		cr_assert_eq(hdr(&r, H_AN), 2);
		close(t);
	}

	/* still serving */
	udp_send(fd, p, q.b, q.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(hdr(&r, H_ID), 24);
	cr_assert_eq(hdr(&r, H_AN), 2);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, overload_drops)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(25, "o.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	FAKE_SET(f, delay_ms, 500);
	cfg_base(&c);
	cfg_add(&c, f);
	c.max_pending = 1;
	p = proxy_start(&c);
	fd = udp_client();
	for (int i = 0; i < 3; i++)
		udp_send(fd, p, q.b, q.len);
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert(!udp_recv(fd, p, &r, QUIET_MS));
	cr_assert_eq(stats(p).overload, 2);
	cr_assert_eq(stats(p).forwarded, 1);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* ---- configuration at run time ---- */

Test(dnsproxy, set_upstreams_takes_effect)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_upstream u;
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(26, "s.example", FW_DNS_TYPE_A, 0), r;

	cfg_base(&c);
	cfg_add(&c, f1);
	c.workers = 2;
	p = proxy_start(&c);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_1 + 1);

	u = upstream_of(f2);
	cr_assert_eq(fw_dnsp_set_upstreams(p, &u, 1), 0);
	for (int i = 0; i < 6; i++) {
		r = udp_ask(p, &q);
		cr_assert_eq(answer_of(&q, &r, &a), 0);
		assert_addr(&a.addrs[0], TEST_NET_2 + 1);
	}
	cr_assert_eq(fake_get(f1, &f1->udp_queries), 1);

	/* bad lists are refused and change nothing */
	u.addr.ss_family = AF_UNIX;
	cr_assert_eq(fw_dnsp_set_upstreams(p, &u, 1), -EINVAL);
	cr_assert_eq(fw_dnsp_set_upstreams(p, &u, FW_DNSP_MAX_UPSTREAMS + 1), -EINVAL);
	r = udp_ask(p, &q);
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_2 + 1);

	/* no upstream at all: SERVFAIL, at once */
	cr_assert_eq(fw_dnsp_set_upstreams(p, NULL, 0), 0);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, set_upstreams_while_in_flight)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_upstream u;
	struct fw_dnsp_config c;
	struct fw_dns_answer a;
	struct fw_dnsp *p;
	struct msg q = query(27, "f.example", FW_DNS_TYPE_A, 0), r;
	int fd;

	FAKE_SET(f1, delay_ms, 300);
	cfg_base(&c);
	cfg_add(&c, f1);
	p = proxy_start(&c);
	fd = udp_client();
	udp_send(fd, p, q.b, q.len);
	while (!fake_get(f1, &f1->udp_queries))
		usleep(1000);
	u = upstream_of(f2);
	cr_assert_eq(fw_dnsp_set_upstreams(p, &u, 1), 0);
	/* the exchange in flight finishes against the old list */
	cr_assert(udp_recv(fd, p, &r, WAIT_MS));
	cr_assert_eq(answer_of(&q, &r, &a), 0);
	assert_addr(&a.addrs[0], TEST_NET_1 + 1);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, probes_mark_health)
{
	struct fake *f1 = fake_new(TEST_NET_1), *f2 = fake_new(TEST_NET_2);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	int t;

	FAKE_SET(f1, drop, true);
	cfg_base(&c);
	cfg_add(&c, f1);
	cfg_add(&c, f2);
	c.timeout_ns = SHORT_NS;
	c.probe_interval_ns = 100 * 1000000ULL;
	p = proxy_start(&c);
	for (t = 0; t < 100 && fw_dnsp_upstream_healthy(p, 0); t++)
		usleep(50000);
	cr_assert(!fw_dnsp_upstream_healthy(p, 0), "a silent upstream stayed healthy");
	cr_assert(fw_dnsp_upstream_healthy(p, 1));
	cr_assert_geq(fake_get(f2, &f2->udp_queries), 1, "the healthy one was probed too");

	FAKE_SET(f1, drop, false);
	for (t = 0; t < 100 && !fw_dnsp_upstream_healthy(p, 0); t++)
		usleep(50000);
	cr_assert(fw_dnsp_upstream_healthy(p, 0), "an answering upstream stayed down");
	cr_assert(!fw_dnsp_upstream_healthy(p, 7));
	fw_dnsp_stop(p);
	fake_free(f1);
	fake_free(f2);
}

Test(dnsproxy, ipv6_loopback)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	struct sockaddr_in6 from;
	socklen_t fl = sizeof(from);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(28, "six.example", FW_DNS_TYPE_AAAA, 0), r;
	struct pollfd pfd;
	int fd;

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		cr_log_warn("no ::1 here, skipped");
		fake_free(f);
		return;
	}
	cfg_base(&c);
	cfg_add(&c, f);
	c.ipv6 = true;
	p = proxy_start(&c);
	a.sin6_port = htons(fw_dnsp_port(p));
	cr_assert_eq(sendto(fd, q.b, q.len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)q.len);
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1);
	r.len = (size_t)recvfrom(fd, r.b, sizeof(r.b), 0, (struct sockaddr *)&from, &fl);
	cr_assert_eq(hdr(&r, H_ID), 28);
	cr_assert(IN6_IS_ADDR_LOOPBACK(&from.sin6_addr));
	cr_assert_eq(ntohs(from.sin6_port), fw_dnsp_port(p));
	/* the client as the hooks saw it: ::1, not v4-mapped */
	cr_assert(IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)H.client.b));
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, many_queries_two_workers)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg r;
	bool seen[200] = {false};
	int fd, got = 0;

	cfg_base(&c);
	cfg_add(&c, f);
	c.workers = 2;
	p = proxy_start(&c);
	fd = udp_client();
	for (int i = 0; i < 200; i++) {
		struct msg q = query((__u16)i, "m.example", FW_DNS_TYPE_A, 0);

		udp_send(fd, p, q.b, q.len);
		if (i % 20 == 19)
			usleep(5000); /* stay under the socket buffers */
	}
	while (got < 200 && udp_recv(fd, p, &r, WAIT_MS)) {
		cr_assert_lt(hdr(&r, H_ID), 200);
		cr_assert(!seen[hdr(&r, H_ID)]);
		seen[hdr(&r, H_ID)] = true;
		got++;
	}
	cr_assert_eq(got, 200);
	cr_assert_eq(stats(p).answered, 200);
	close(fd);
	fw_dnsp_stop(p);
	fake_free(f);
}

Test(dnsproxy, start_errors)
{
	struct fw_dnsp_config c;
	struct fw_dnsp *p = NULL, *q = NULL;

	cfg_base(&c);
	c.workers = FW_DNSP_MAX_WORKERS + 1;
	cr_assert_eq(fw_dnsp_start(&c, &hooks, &p), -EINVAL);
	cfg_base(&c);
	c.nupstreams = FW_DNSP_MAX_UPSTREAMS + 1;
	cr_assert_eq(fw_dnsp_start(&c, &hooks, &p), -EINVAL);

	/* a busy port fails at start */
	cfg_base(&c);
	c.workers = 2;
	p = proxy_start(&c);
	c.port = fw_dnsp_port(p);
	cr_assert_eq(fw_dnsp_start(&c, &hooks, &q), -EADDRINUSE);
	fw_dnsp_stop(p);
	fw_dnsp_stop(NULL);
}

/* ---- upstream addresses ---- */

/* fw_dnsp_simulate (the fuzz target's way in) runs the real paths: a
 * forged record is ignored, the answer learned, then relayed; over TCP a
 * silent upstream ends in SERVFAIL after both upstreams time out. */
Test(dnsproxy, simulate_without_sockets)
{
	static __u8 out[65536];
	struct msg q = query(0x5151, "sim.example", FW_DNS_TYPE_A, 0), a = {.len = 0},
		   up = {.len = 0};
	struct fw_dns_answer pa;
	struct msg f;
	size_t n;

	/* the answer, as a fake would give it: id replaced by the sim */
	m_u16(&a, 0);
	m_u16(&a, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA);
	m_u16(&a, 1);
	m_u16(&a, 1);
	m_u16(&a, 0);
	m_u16(&a, 1);
	m_name(&a, "sim.example");
	m_u16(&a, FW_DNS_TYPE_A);
	m_u16(&a, FW_DNS_CLASS_IN);
	m_u16(&a, 0xc00c);
	m_u16(&a, FW_DNS_TYPE_A);
	m_u16(&a, FW_DNS_CLASS_IN);
	m_u32(&a, 60);
	m_u16(&a, 4);
	m_u32(&a, TEST_NET_2 + 7);
	m_opt(&a, 4096);
	/* first a forgery without a question (QDCOUNT 0), then the answer */
	f.len = 0;
	m_u16(&f, 0);
	m_u16(&f, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA);
	m_u16(&f, 0);
	m_u16(&f, 1);
	m_u16(&f, 0);
	m_u16(&f, 0);
	m_name(&f, "sim.example");
	m_u16(&f, FW_DNS_TYPE_A);
	m_u16(&f, FW_DNS_CLASS_IN);
	m_u32(&f, 60);
	m_u16(&f, 4);
	m_u32(&f, TEST_NET_2 + 66);
	m_u16(&up, (__u16)f.len);
	for (size_t i = 0; i < f.len; i++)
		m_u8(&up, f.b[i]);
	m_u16(&up, (__u16)a.len);
	for (size_t i = 0; i < a.len; i++)
		m_u8(&up, a.b[i]);

	cr_assert_eq(fw_dnsp_simulate(&hooks, false, q.b, q.len, false, up.b, up.len, out,
				      sizeof(out), &n),
		     0);
	cr_assert_gt(n, 2);
	cr_assert_eq((size_t)(out[0] << 8 | out[1]), n - 2, "one message to the client");
	{
		struct msg r = {.len = n - 2};

		memcpy(r.b, out + 2, r.len);
		cr_assert_eq(answer_of(&q, &r, &pa), 0);
		cr_assert_eq(hdr(&r, H_AR), 0, "the OPT record added upstream is gone");
	}
	cr_assert_eq(pa.naddrs, 1);
	assert_addr(&pa.addrs[0], TEST_NET_2 + 7);
	cr_assert_eq(hook_count(&H.nlearn), 1);
	assert_addr(&H.addrs[0], TEST_NET_2 + 7);

	/* TCP, no upstream answers: SERVFAIL once both timed out */
	{
		struct msg t = {.len = 0};

		m_u16(&t, (__u16)q.len);
		for (size_t i = 0; i < q.len; i++)
			m_u8(&t, q.b[i]);
		cr_assert_eq(fw_dnsp_simulate(&hooks, true, t.b, t.len, true, NULL, 0, out,
					      sizeof(out), &n),
			     0);
		cr_assert_geq(n, 2 + FW_DNS_HDR_LEN);
		cr_assert_eq(out[2] << 8 | out[3], 0x5151);
		cr_assert_eq(out[5] & FW_DNS_F_RCODE, FW_DNS_RCODE_SERVFAIL);
	}
}

Test(dnsproxy, upstream_parse)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{"192.0.2.1", "192.0.2.1:53"},	       {"192.0.2.1:5353", "192.0.2.1:5353"},
		{"2001:db8::1", "[2001:db8::1]:53"},   {"[2001:db8::1]:5353", "[2001:db8::1]:5353"},
		{"[2001:db8::1]", "[2001:db8::1]:53"}, {"::1", "[::1]:53"},
		{"10.0.0.1:65535", "10.0.0.1:65535"},
	};
	static const char *const bad[] = {
		"",
		"192.0.2.1:",
		"192.0.2.1:0",
		"192.0.2.1:65536",
		"192.0.2.1:53x",
		"192.0.2.1:+53",
		":53",
		"[2001:db8::1",
		"[2001:db8::1]5353",
		"[2001:db8::1]:",
		"[192.0.2.1]:53",
		"dns.example",
		"192.0.2",
		" 192.0.2.1",
		"2001:db8::1:53:x",
		"192.0.2.1:53:53",
		"fe80::1%",
		"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd",
	};
	struct fw_dnsp_upstream u;
	char s[64];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(fw_dnsp_upstream_parse(ok[i].in, &u), 0, "%s", ok[i].in);
		fw_dnsp_upstream_str(&u, s, sizeof(s));
		cr_assert_str_eq(s, ok[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(fw_dnsp_upstream_parse(bad[i], &u), -EINVAL, "'%s' accepted", bad[i]);
	cr_assert_eq(fw_dnsp_upstream_parse("fe80::1%1", &u), 0);
	cr_assert_eq(((struct sockaddr_in6 *)&u.addr)->sin6_scope_id, 1);
	cr_assert_eq(fw_dnsp_upstream_parse(NULL, &u), -EINVAL);
	/* a short buffer is cut, not overrun */
	cr_assert_eq(fw_dnsp_upstream_parse("192.0.2.1", &u), 0);
	fw_dnsp_upstream_str(&u, s, 6);
	cr_assert_str_eq(s, "192.0");
}

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/fw-resolv-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(dnsproxy, resolv_conf)
{
	struct fw_dnsp_upstream u[FW_DNSP_MAX_UPSTREAMS + 2];
	char s[64], *path;
	size_t n = 99;

	path = write_tmp("# generated\n"
			 "search example.com\n"
			 "options edns0 trust-ad\n"
			 "nameserver 127.0.0.53\n"
			 "  nameserver\t192.0.2.1   # the first real one\n"
			 "; nameserver 192.0.2.99\n"
			 "#nameserver 192.0.2.98\n"
			 "nameserver ::1\n"
			 "nameserver 2001:db8::53\n"
			 "nameserver not-an-address\n"
			 "nameserver\n"
			 "nameservers 192.0.2.97\n"
			 "nameserver 198.51.100.7");
	cr_assert_eq(fw_dnsp_upstreams_from_resolv(path, u, FW_DNSP_MAX_UPSTREAMS, &n), 0);
	cr_assert_eq(n, 5);
	{
		static const char *const want[] = {"192.0.2.1:53", "[2001:db8::53]:53",
						   "198.51.100.7:53", "127.0.0.53:53", "[::1]:53"};

		for (size_t i = 0; i < n; i++) {
			fw_dnsp_upstream_str(&u[i], s, sizeof(s));
			cr_assert_str_eq(s, want[i], "entry %zu", i);
		}
	}
	/* cap cuts the loopback ones first */
	cr_assert_eq(fw_dnsp_upstreams_from_resolv(path, u, 2, &n), 0);
	cr_assert_eq(n, 2);
	fw_dnsp_upstream_str(&u[1], s, sizeof(s));
	cr_assert_str_eq(s, "[2001:db8::53]:53");
	unlink(path);

	/* at most ten, whatever cap says */
	{
		char text[2048] = "";

		for (int i = 0; i < 14; i++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text),
				 "nameserver 192.0.2.%d\n", i + 1);
		path = write_tmp(text);
		cr_assert_eq(fw_dnsp_upstreams_from_resolv(path, u, sizeof(u) / sizeof(u[0]), &n),
			     0);
		cr_assert_eq(n, 10);
		fw_dnsp_upstream_str(&u[9], s, sizeof(s));
		cr_assert_str_eq(s, "192.0.2.10:53");
		unlink(path);
	}

	path = write_tmp("search example.com\n# nameserver 192.0.2.1\n");
	cr_assert_eq(fw_dnsp_upstreams_from_resolv(path, u, 3, &n), -ENOENT);
	unlink(path);
	cr_assert_eq(fw_dnsp_upstreams_from_resolv("/nonexistent/resolv.conf", u, 3, &n), -ENOENT);
}

/* ---- the wire-format helpers the proxy added to dns.c ---- */

Test(dnsproxy, dns_strip_opt)
{
	struct msg m = query(1, "a.example", FW_DNS_TYPE_A, 0);
	size_t plain = m.len, n;

	cr_assert_eq(fw_dns_add_edns0(m.b, m.len, sizeof(m.b), &m.len, 4096), 0);
	cr_assert_eq(m.len, plain + FW_DNS_OPT_LEN);
	cr_assert_eq(fw_dns_strip_opt(m.b, m.len, &n), 0);
	cr_assert_eq(n, plain);
	cr_assert_eq(hdr(&m, H_AR), 0);
	/* nothing to strip */
	cr_assert_eq(fw_dns_strip_opt(m.b, n, &n), 0);
	cr_assert_eq(n, plain);

	/* an OPT followed by another RR stays */
	m = query(1, "a.example", FW_DNS_TYPE_A, 512);
	m_u8(&m, 0);
	m_u16(&m, 16 /* TXT */);
	m_u16(&m, FW_DNS_CLASS_IN);
	m_u32(&m, 0);
	m_u16(&m, 0);
	m.b[11] = 2;
	cr_assert_eq(fw_dns_strip_opt(m.b, m.len, &n), -EOPNOTSUPP);
	cr_assert_eq(hdr(&m, H_AR), 2);
	/* malformed */
	cr_assert_eq(fw_dns_strip_opt(m.b, m.len - 1, &n), -EINVAL);
	cr_assert_eq(fw_dns_strip_opt(m.b, 5, &n), -EINVAL);
}

Test(dnsproxy, dns_truncate)
{
	struct msg m = query(3, "t.example", FW_DNS_TYPE_A, 0);
	size_t qend = m.len, n;

	m.b[2] |= FW_DNS_F_QR >> 8;
	m.b[7] = 1; /* one A record */
	m_u16(&m, 0xc00c);
	m_u16(&m, FW_DNS_TYPE_A);
	m_u16(&m, FW_DNS_CLASS_IN);
	m_u32(&m, 60);
	m_u16(&m, 4);
	m_u32(&m, TEST_NET_1 + 1);
	cr_assert_eq(fw_dns_truncate(m.b, m.len, &n), 0);
	cr_assert_eq(n, qend);
	cr_assert(hdr(&m, H_FLAGS) & FW_DNS_F_TC);
	cr_assert_eq(hdr(&m, H_AN), 0);
	cr_assert_eq(hdr(&m, H_QD), 1);
	/* queries and question-less messages are refused */
	m = query(3, "t.example", FW_DNS_TYPE_A, 0);
	cr_assert_eq(fw_dns_truncate(m.b, m.len, &n), -EINVAL);
	m.b[2] |= FW_DNS_F_QR >> 8;
	m.b[5] = 0;
	cr_assert_eq(fw_dns_truncate(m.b, m.len, &n), -EINVAL);
	cr_assert_eq(fw_dns_truncate(m.b, 11, &n), -EINVAL);
}

Test(dnsproxy, dns_build_reject)
{
	struct msg m = query(0x77, "r.example", FW_DNS_TYPE_A, 0), bad;
	__u8 out[512];
	size_t n;

	/* another opcode: question kept */
	bad = m;
	bad.b[2] |= (4 << 11) >> 8; /* NOTIFY */
	cr_assert_eq(fw_dns_build_reject(bad.b, bad.len, FW_DNS_RCODE_NOTIMP, out, sizeof(out), &n),
		     0);
	cr_assert_eq(n, m.len);
	cr_assert_eq(out[0] << 8 | out[1], 0x77);
	cr_assert_eq((out[2] << 8 | out[3]) & FW_DNS_F_OPCODE, 4 << 11);
	cr_assert_eq(out[3] & FW_DNS_F_RCODE, FW_DNS_RCODE_NOTIMP);
	/* a broken name: header only */
	bad = m;
	bad.b[12] = 0xc0; /* a pointer in the first name */
	cr_assert_eq(
		fw_dns_build_reject(bad.b, bad.len, FW_DNS_RCODE_FORMERR, out, sizeof(out), &n), 0);
	cr_assert_eq(n, FW_DNS_HDR_LEN);
	cr_assert_eq(out[5], 0);
	/* in place, and never to an answer or a runt */
	cr_assert_eq(fw_dns_build_reject(m.b, m.len, FW_DNS_RCODE_FORMERR, m.b, m.len, &n), 0);
	cr_assert_eq(n, m.len);
	cr_assert_eq(fw_dns_build_reject(m.b, m.len, FW_DNS_RCODE_FORMERR, out, sizeof(out), &n),
		     -EINVAL);
	cr_assert_eq(fw_dns_build_reject(m.b, 11, FW_DNS_RCODE_FORMERR, out, sizeof(out), &n),
		     -EINVAL);
	m = query(0x77, "r.example", FW_DNS_TYPE_A, 0);
	cr_assert_eq(fw_dns_build_reject(m.b, m.len, FW_DNS_RCODE_FORMERR, out, 12, &n), -ENOSPC);
}

/* ---- what the metrics read ---- */

static __u64 lat_count(const struct fw_dnsp_stats *s)
{
	__u64 n = 0;

	for (unsigned int b = 0; b <= FW_LAT_BUCKETS; b++)
		n += s->latency[b];
	return n;
}

Test(dnsproxy, responses_by_rcode_and_upstream_latency)
{
	struct fake *f = fake_new(TEST_NET_1);
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(1, "fast.example", FW_DNS_TYPE_A, 0), r;
	struct fw_dnsp_stats s;
	unsigned int b;

	cfg_base(&c);
	cfg_add(&c, f);
	p = proxy_start(&c);
	r = udp_ask(p, &q); /* NOERROR from the upstream */
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NOERROR);
	HOOK_SET(decide_ret, FW_DNS_RCODE_NXDOMAIN);
	q = query(2, "denied.example", FW_DNS_TYPE_A, 0);
	r = udp_ask(p, &q); /* NXDOMAIN from the hook, no exchange */
	HOOK_SET(decide_ret, FW_DNSP_FORWARD);
	s = stats(p);
	cr_assert_eq(s.rcodes[FW_DNS_RCODE_NOERROR], 1);
	cr_assert_eq(s.rcodes[FW_DNS_RCODE_NXDOMAIN], 1);
	cr_assert_eq(s.rcodes[FW_DNS_RCODE_SERVFAIL], 0);
	/* one exchange, answered at once: in the histogram, well under 150 ms */
	cr_assert_eq(lat_count(&s), 1);
	cr_assert_lt(s.latency_sum_ns, 150000000ull);

	/* a 150 ms upstream lands in the (100 ms, 250 ms] bucket */
	FAKE_SET(f, delay_ms, 150);
	q = query(3, "slow.example", FW_DNS_TYPE_A, 0);
	r = udp_ask(p, &q);
	cr_assert_eq(hdr(&r, H_FLAGS) & FW_DNS_F_RCODE, FW_DNS_RCODE_NOERROR);
	s = stats(p);
	cr_assert_eq(lat_count(&s), 2);
	for (b = 0; b < FW_LAT_BUCKETS && fw_lat_bounds_ns[b] != 250000000ull; b++)
		;
	cr_assert_eq(s.latency[b], 1, "bucket %u of %llu ns", b,
		     (unsigned long long)fw_lat_bounds_ns[b]);
	cr_assert_geq(s.latency_sum_ns, 150000000ull);
	cr_assert_eq(s.rcodes[FW_DNS_RCODE_NOERROR], 2);
	FAKE_SET(f, delay_ms, 0);
	fw_dnsp_stop(p);
	fake_free(f);
}

/* ---- attribution by the address a query arrived on ---- */

#define ALIAS_9 0x7ffe0009u /* 127.254.0.9: a process sandbox's proxy address */

/* A network namespace of this test's own (criterion runs each test in a
 * process of its own) with lo up, so the engine may listen on every
 * address; false when not allowed (not root). */
static bool private_netns(void)
{
	struct ifreq ifr = {0};
	int fd;

	if (unshare(CLONE_NEWNET))
		return false;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	cr_assert_eq(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	cr_assert_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
	return true;
}

static void sin_of(struct sockaddr_in *a, __u32 host, __u16 port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(host);
	a->sin_port = htons(port);
}

static void assert_client(__u32 host)
{
	struct fw_ip want;
	char x[FW_ADDR_STRLEN], y[FW_ADDR_STRLEN];

	fw_addr_from_v4(&want, htonl(host));
	pthread_mutex_lock(&H.lock);
	cr_assert(!memcmp(&H.client, &want, sizeof(want)), "client %s, want %s",
		  fw_addr_str(&H.client, x, sizeof(x)), fw_addr_str(&want, y, sizeof(y)));
	pthread_mutex_unlock(&H.lock);
}

/* One UDP query from src (0: unbound) to dst; the answer must come from
 * dst. */
static void udp_exchange(struct fw_dnsp *p, __u32 src, __u32 dst, const struct msg *q)
{
	struct sockaddr_in a, from;
	socklen_t fl = sizeof(from);
	struct pollfd pfd;
	struct msg r;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	if (src) {
		sin_of(&a, src, 0);
		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	sin_of(&a, dst, fw_dnsp_port(p));
	cr_assert_eq(sendto(fd, q->b, q->len, 0, (struct sockaddr *)&a, sizeof(a)),
		     (ssize_t)q->len);
	pfd.fd = fd;
	pfd.events = POLLIN;
	cr_assert_gt(poll(&pfd, 1, WAIT_MS), 0, "no answer within %d ms", WAIT_MS);
	cr_assert_gt(recvfrom(fd, r.b, sizeof(r.b), 0, (struct sockaddr *)&from, &fl), 0);
	cr_assert_eq(from.sin_addr.s_addr, htonl(dst), "the answer is not from the address asked");
	close(fd);
}

/* The same over TCP: a connection to dst, one query, its answer. */
static void tcp_exchange(struct fw_dnsp *p, __u32 src, __u32 dst, const struct msg *q)
{
	struct sockaddr_in a;
	struct msg r;
	__u8 l[2] = {(__u8)(q->len >> 8), (__u8)q->len};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	if (src) {
		sin_of(&a, src, 0);
		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	sin_of(&a, dst, fw_dnsp_port(p));
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(write(fd, l, 2), 2);
	cr_assert_eq(write(fd, q->b, q->len), (ssize_t)q->len);
	cr_assert(tcp_recv(fd, &r, WAIT_MS), "no TCP answer within %d ms", WAIT_MS);
	close(fd);
}

/* A query to 127.254.0.0/16 is that address's, whatever its source; a
 * query from such a source to another address is nobody's (127.0.0.1):
 * what process sandboxes rely on, their DNS sent to their own address by
 * the cgroup programs from a socket that may be bound to anything. */
Test(dnsproxy, attributes_by_the_address_a_query_arrived_on)
{
	struct fw_dnsp_config c;
	struct fw_dnsp *p;
	struct msg q = query(0x5151, "who.example", FW_DNS_TYPE_A, 0);

	if (!private_netns())
		cr_skip_test("no network namespace of our own (not root)");
	HOOK_SET(decide_ret, FW_DNS_RCODE_NXDOMAIN);
	cfg_base(&c);
	c.loopback = false;
	p = proxy_start(&c);

	udp_exchange(p, 0, ALIAS_9, &q);
	assert_client(ALIAS_9);
	udp_exchange(p, INADDR_LOOPBACK, ALIAS_9, &q);
	assert_client(ALIAS_9);
	udp_exchange(p, 0x7ffe0021u, ALIAS_9, &q); /* another alias as the source */
	assert_client(ALIAS_9);
	udp_exchange(p, ALIAS_9, INADDR_LOOPBACK, &q);
	assert_client(INADDR_LOOPBACK);
	udp_exchange(p, 0x7f000005u, INADDR_LOOPBACK, &q); /* unchanged elsewhere */
	assert_client(0x7f000005u);

	tcp_exchange(p, 0, ALIAS_9, &q);
	assert_client(ALIAS_9);
	tcp_exchange(p, 0x7ffe0021u, ALIAS_9, &q);
	assert_client(ALIAS_9);
	tcp_exchange(p, ALIAS_9, INADDR_LOOPBACK, &q);
	assert_client(INADDR_LOOPBACK);
	cr_assert_eq(hook_count(&H.ndecide), 8);
	fw_dnsp_stop(p);
}
