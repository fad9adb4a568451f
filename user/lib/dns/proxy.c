// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The DNS proxy engine (dns/proxy.h). Client TCP connections are in
 * dns/tcp.c, the reads of upstream sockets and the upstream addresses in
 * dns/upstream.c, what they share in dns/proxy_priv.h.
 *
 * Each worker thread owns one event loop (common/loop.h), its own client
 * sockets (the kernel spreads clients over workers with SO_REUSEPORT) and a fixed array
 * of exchange slots. Every attempt of an exchange gets its own upstream
 * socket, connected to the upstream from a fresh random port, with a fresh
 * random id (RFC 5452): a forger has to guess 16 bits of id and about 15
 * of port per query, not 16 once. The client UDP path takes no lock; it
 * reads and writes in batches (recvmmsg/sendmmsg). TCP is the rare path
 * and allocates per connection.
 *
 * Timers are the loop's: every exchange has its timeout timer, every
 * client connection its idle timer (which, when it fires, looks at the
 * connection's last activity and waits the rest: activity costs no
 * re-arm), worker 0 the health probes, and a worker out of descriptors
 * the end of its accept pause. Timer functions return the delay to their
 * next run, as in redis ae.
 *
 * Lifetimes: a client connection or a retired upstream set is only freed
 * in the before-sleep step, never while a batch of epoll events is being
 * handled, so a later event of the same batch never reaches freed memory.
 * Slots are never freed; the watch of an upstream socket closed earlier in
 * a batch is gone from the loop, which drops its queued events. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "dns/proxy_keys.h"
#include "dns/proxy_priv.h"

static int dnsp_setopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* ---- upstream sets ---- */

static void dnsp_set_put(struct dnsp_set *s)
{
	if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(s);
}

static bool dnsp_upstream_ok(const struct fw_dnsp_upstream *u)
{
	if (u->addr.ss_family == AF_INET)
		return u->len == sizeof(struct sockaddr_in);
	if (u->addr.ss_family == AF_INET6)
		return u->len == sizeof(struct sockaddr_in6);
	return false;
}

static int dnsp_set_new(const struct fw_dnsp_upstream *u, size_t n, struct dnsp_set **out)
{
	struct dnsp_set *s;

	if (n > FW_DNSP_MAX_UPSTREAMS || (n && !u))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!dnsp_upstream_ok(&u[i]))
			return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->n = n;
	if (n)
		memcpy(s->u, u, n * sizeof(*u));
	*out = s;
	return 0;
}

void dnsp_mark(struct dnsp_wset *ws, unsigned int i, bool up)
{
	if (i < ws->set->n)
		__atomic_store_n(&ws->set->down[i], !up, __ATOMIC_RELAXED);
}

static void dnsp_wset_free(struct dnsp_worker *w, struct dnsp_wset *ws)
{
	for (unsigned int i = 0; i < FW_DNSP_MAX_UPSTREAMS; i++)
		dnsp_pool_free(w, ws->pool[i]);
	dnsp_set_put(ws->set);
	free(ws);
}

/* Picks up a list installed by fw_dnsp_set_upstreams; the old one retires
 * and is freed once its last exchange is done. */
static void dnsp_sync_set(struct dnsp_worker *w)
{
	struct fw_dnsp *p = w->p;
	struct dnsp_wset *ws;

	if (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == w->gen)
		return;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return; /* keep the old list, try again next round */
	pthread_mutex_lock(&p->lock);
	ws->set = p->set;
	__atomic_add_fetch(&ws->set->refs, 1, __ATOMIC_RELAXED);
	w->gen = ws->set->gen;
	pthread_mutex_unlock(&p->lock);
	if (w->ws) {
		w->ws->next = w->retired;
		w->retired = w->ws;
	}
	w->ws = ws;
}

/* ---- ids, timeouts, slots ---- */

int dnsp_rand16(struct dnsp_worker *w, __u16 *out)
{
	if (w->p->sim) { /* reproducible runs */
		*out = w->p->sim->next_id += 0x3d09;
		return 0;
	}
	if (!w->nrnd) {
		if (getrandom(w->rnd, sizeof(w->rnd), GRND_NONBLOCK) != (ssize_t)sizeof(w->rnd))
			return -EAGAIN;
		w->nrnd = DNSP_RND;
	}
	*out = w->rnd[--w->nrnd];
	return 0;
}

static void dnsp_timer_remove(struct dnsp_worker *w, struct dnsp_slot *s)
{
	fw_loop_timer_cancel(w->loop, &s->timer);
}

static void dnsp_timer_arm(struct dnsp_worker *w, struct dnsp_slot *s)
{
	fw_loop_timer_arm(w->loop, &s->timer, w->p->cfg.timeout_ns);
}

static struct dnsp_slot *dnsp_slot_get(struct dnsp_worker *w, enum dnsp_origin origin)
{
	struct dnsp_slot *s = w->free_slots;

	/* a list set before the query came applies to it, even when the
	 * wake-up and the query come in one batch */
	dnsp_sync_set(w);
	if (!s || !w->ws)
		return NULL;
	w->free_slots = s->fnext;
	s->fnext = s->cprev = s->cnext = NULL;
	s->conn = NULL;
	s->ws = w->ws;
	s->ws->users++;
	s->token = 0;
	s->up_fd = -1;
	s->usock = NULL;
	s->origin = origin;
	s->io = DNSP_IO_NONE;
	s->used = true;
	s->added_edns = false;
	s->norder = s->tried = 0;
	s->io_off = 0;
	s->ans = NULL;
	s->ans_len = 0;
	return s;
}

static void dnsp_up_close(struct dnsp_worker *w, struct dnsp_slot *s)
{
	if (s->usock)
		dnsp_pool_detach(w, s);
	if (s->up_fd >= 0) {
		fw_loop_watch_del(w->loop,
				  s->up_watch); /* events still queued for it are dropped */
		s->up_watch = NULL;
		close(s->up_fd);
		s->up_fd = -1;
	}
	free(s->ans);
	s->ans = NULL;
	s->io = DNSP_IO_NONE;
	s->io_off = 0;
}

void dnsp_slot_put(struct dnsp_worker *w, struct dnsp_slot *s)
{
	struct dnsp_conn *c = s->conn;

	dnsp_timer_remove(w, s);
	dnsp_up_close(w, s);
	if (c) {
		if (s->cprev)
			s->cprev->cnext = s->cnext;
		else
			c->pending = s->cnext;
		if (s->cnext)
			s->cnext->cprev = s->cprev;
		c->npending--;
		s->conn = NULL;
		if (!c->closing && c->paused && !c->resume) {
			c->resume = true;
			c->rnext = w->resume;
			w->resume = c;
		}
		if (!c->closing && c->eof && !c->npending && c->out_len == c->out_off)
			dnsp_conn_kill(w, c);
	}
	if (s->origin == DNSP_O_PROBE && s->norder)
		s->ws->probing[s->order[0]] = false;
	s->ws->users--;
	s->ws = NULL;
	s->used = false;
	s->fnext = w->free_slots;
	w->free_slots = s;
}

/* ---- sending ---- */

void dnsp_sim_put(struct dnsp_sim *sim, const __u8 *msg, size_t len)
{
	if (len > 0xffff || sim->cap - sim->len < len + 2)
		return;
	put16(sim->out + sim->len, (__u16)len);
	memcpy(sim->out + sim->len + 2, msg, len);
	sim->len += len + 2;
}

void dnsp_tx_flush(struct dnsp_worker *w)
{
	unsigned int i = 0;

	if (w->p->sim) {
		for (i = 0; i < w->ntx; i++)
			dnsp_sim_put(w->p->sim, w->txv[i].iov_base, w->txv[i].iov_len);
		w->ntx = 0;
		return;
	}

	while (i < w->ntx) {
		unsigned int j = i;
		int n;

		while (j < w->ntx && w->tx[j].fd == w->tx[i].fd)
			j++;
		/* UDP is best effort: a datagram the kernel refuses is lost,
		 * as it would be on the wire */
		while (i < j) {
			n = sendmmsg(w->tx[i].fd, &w->txm[i], j - i, MSG_DONTWAIT);
			i += n > 0 ? (unsigned int)n : 1;
		}
	}
	w->ntx = 0;
	w->tx_seq++;
}

/* Queues a datagram. Without to, fd is a connected upstream socket. With
 * copy false, buf must stay valid until the next flush. */
void dnsp_tx_add(struct dnsp_worker *w, int fd, const struct dnsp_peer *to, const __u8 *buf,
		 size_t len, bool copy)
{
	struct dnsp_tx *t;
	struct msghdr *mh;

	if (copy && len > DNSP_TX_SMALL)
		return;
	if (w->ntx == DNSP_TX)
		dnsp_tx_flush(w);
	t = &w->tx[w->ntx];
	mh = &w->txm[w->ntx].msg_hdr;
	memset(mh, 0, sizeof(*mh));
	t->fd = fd;
	if (copy) {
		memcpy(t->own, buf, len);
		buf = t->own;
	}
	w->txv[w->ntx].iov_base = (void *)buf;
	w->txv[w->ntx].iov_len = len;
	mh->msg_iov = &w->txv[w->ntx];
	mh->msg_iovlen = 1;
	if (to) {
		struct cmsghdr *cm;

		t->peer = *to;
		mh->msg_name = &t->peer.addr;
		mh->msg_namelen = to->alen;
		if (to->pi_family == AF_INET) {
			mh->msg_control = t->ctl.buf;
			mh->msg_controllen = CMSG_SPACE(sizeof(struct in_pktinfo));
			cm = CMSG_FIRSTHDR(mh);
			cm->cmsg_level = IPPROTO_IP;
			cm->cmsg_type = IP_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
			memcpy(CMSG_DATA(cm), &to->pi.v4, sizeof(to->pi.v4));
		} else if (to->pi_family == AF_INET6) {
			mh->msg_control = t->ctl.buf;
			mh->msg_controllen = CMSG_SPACE(sizeof(struct in6_pktinfo));
			cm = CMSG_FIRSTHDR(mh);
			cm->cmsg_level = IPPROTO_IPV6;
			cm->cmsg_type = IPV6_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(struct in6_pktinfo));
			memcpy(CMSG_DATA(cm), &to->pi.v6, sizeof(to->pi.v6));
		}
	}
	w->ntx++;
}

/* An upstream answered the attempt of s: into the latency histogram. */
static void dnsp_observe(struct dnsp_worker *w, const struct dnsp_slot *s)
{
	__u64 now = dnsp_now(w), d = now > s->try_ns ? now - s->try_ns : 0;
	DNSP_COUNT(w, latency[fw_lat_bucket(d)]);
	__atomic_store_n(&w->st.latency_sum_ns, w->st.latency_sum_ns + d, __ATOMIC_RELAXED);
}

/* Every response to a client passes here or dnsp_src_reply: counted by
 * the rcode in its header. */
static void dnsp_count_rcode(struct dnsp_worker *w, const __u8 *msg, size_t len)
{
	if (len >= 4)
		DNSP_COUNT(w, rcodes[msg[3] & 0xf]);
}

static void dnsp_slot_reply(struct dnsp_worker *w, struct dnsp_slot *s, const __u8 *msg, size_t len,
			    bool copy)
{
	if (s->origin == DNSP_O_UDP || (s->origin == DNSP_O_TCP && s->conn))
		dnsp_count_rcode(w, msg, len);
	if (s->origin == DNSP_O_UDP)
		dnsp_tx_add(w, s->peer.fd, &s->peer, msg, len, copy);
	else if (s->origin == DNSP_O_TCP && s->conn)
		dnsp_conn_send(w, s->conn, msg, len);
}

/* ---- 0x20: the question name's case as entropy ---- */

static bool dnsp_letter(__u8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Remembers the client's case of the question name (qbuf holds the query;
 * names in a question are never compressed). */
static void dnsp_case_save(struct dnsp_slot *s)
{
	const __u8 *q = s->qbuf + 2;

	memset(s->qupper, 0, sizeof(s->qupper));
	for (size_t i = FW_DNS_HDR_LEN; i + 4 < s->q.question_end; i++)
		if (q[i] >= 'A' && q[i] <= 'Z')
			s->qupper[(i - FW_DNS_HDR_LEN) / 8] |=
				(__u8)(1 << ((i - FW_DNS_HDR_LEN) % 8));
}

/* A fresh random case for every letter of the name, per attempt. */
static int dnsp_case_randomize(struct dnsp_worker *w, struct dnsp_slot *s)
{
	__u8 *q = s->qbuf + 2;
	__u16 bits = 0;
	unsigned int left = 0;

	for (size_t i = FW_DNS_HDR_LEN; i + 4 < s->q.question_end; i++) {
		if (!dnsp_letter(q[i]))
			continue;
		if (!left) {
			if (dnsp_rand16(w, &bits))
				return -EAGAIN;
			left = 16;
		}
		q[i] = (bits & 1) ? (__u8)(q[i] & ~0x20) : (__u8)(q[i] | 0x20);
		bits >>= 1;
		left--;
	}
	return 0;
}

/* The client's own case back in qbuf. */
static void dnsp_case_restore(const struct fw_dnsp *p, struct dnsp_slot *s)
{
	__u8 *q = s->qbuf + 2;

	if (!p->cfg.case_randomize)
		return;
	for (size_t i = FW_DNS_HDR_LEN; i + 4 < s->q.question_end; i++) {
		size_t k = i - FW_DNS_HDR_LEN;

		if (dnsp_letter(q[i]))
			q[i] = (s->qupper[k / 8] >> (k % 8)) & 1 ? (__u8)(q[i] & ~0x20)
								 : (__u8)(q[i] | 0x20);
	}
}

static void dnsp_slot_error(struct dnsp_worker *w, struct dnsp_slot *s, int rcode)
{
	__u8 out[DNSP_TX_SMALL];
	size_t n;

	dnsp_case_restore(w->p, s);
	if (!fw_dns_build_error(s->qbuf + 2, s->qlen, &s->q, rcode, out, sizeof(out), &n))
		dnsp_slot_reply(w, s, out, n, true);
}

/* ---- exchanges ---- */

/* One attempt: a fresh random id, on a socket connected to upstream i, so
 * the kernel drops datagrams from any other address or port. UDP goes out
 * on a pooled socket (dns/upstream.c: its random port changes as the pool
 * turns over), queued for the next flush; TCP opens a new connection. The
 * previous attempt is taken off its socket: a late answer to it matches
 * nothing. */
static int dnsp_try(struct dnsp_worker *w, struct dnsp_slot *s, unsigned int i)
{
	const struct fw_dnsp_upstream *u = &s->ws->set->u[i];
	bool tcp = s->origin == DNSP_O_TCP;
	int fd, err;

	dnsp_up_close(w, s);
	s->try_ns = dnsp_now(w);
	if (dnsp_rand16(w, &s->up_id))
		return -EAGAIN;
	if (w->p->cfg.case_randomize && dnsp_case_randomize(w, s))
		return -EAGAIN;
	if (w->p->sim) { /* the caller hands in the answers */
		put16(s->qbuf, (__u16)s->qlen);
		put16(s->qbuf + 2, s->up_id);
		return 0;
	}
	if (!tcp)
		return dnsp_pool_send(w, s, i);
	fd = socket(u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&u->addr, u->len) && errno != EINPROGRESS) {
		err = -errno;
		close(fd);
		return err;
	}
	err = fw_loop_watch_add(w->loop, fd, EPOLLOUT, dnsp_up_watch, s, &s->up_watch);
	if (err) {
		close(fd);
		return err;
	}
	s->up_fd = fd;
	put16(s->qbuf, (__u16)s->qlen);
	put16(s->qbuf + 2, s->up_id);
	s->io = DNSP_IO_CONNECT;
	s->io_off = 0;
	return 0;
}

/* Asks the next upstream in the slot's order; when none is left the
 * client gets SERVFAIL and the slot is freed. */
static void dnsp_exch_next(struct dnsp_worker *w, struct dnsp_slot *s)
{
	while (s->tried < s->norder) {
		if (!dnsp_try(w, s, s->order[s->tried])) {
			dnsp_timer_arm(w, s);
			return;
		}
		DNSP_COUNT(w, upstream_errors);
		s->tried++;
	}
	if (s->origin != DNSP_O_PROBE) {
		DNSP_COUNT(w, servfail);
		dnsp_slot_error(w, s, FW_DNS_RCODE_SERVFAIL);
	} else {
		DNSP_COUNT(w, probes_failed);
	}
	dnsp_slot_put(w, s);
}

void dnsp_exch_failover(struct dnsp_worker *w, struct dnsp_slot *s)
{
	dnsp_up_close(w, s);
	s->tried++;
	dnsp_exch_next(w, s);
}

/* The answer's question section is ours: QDCOUNT 1 and the question as
 * sent, byte for byte; letters in any case unless exact (0x20: the case
 * sent is part of what a forger must guess). fw_dns_parse_answer checks
 * the same, but for case, on the decoded name. */
static bool dnsp_same_question(const struct dnsp_slot *s, const __u8 *msg, size_t len, bool exact)
{
	const __u8 *q = s->qbuf + 2;

	if (len < s->q.question_end || get16(msg + 4) != 1)
		return false;
	for (size_t i = FW_DNS_HDR_LEN; i < s->q.question_end; i++) {
		__u8 a = msg[i], b = q[i];

		if (!exact && a >= 'A' && a <= 'Z')
			a = (__u8)(a - 'A' + 'a');
		if (!exact && b >= 'A' && b <= 'Z')
			b = (__u8)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}

enum dnsp_verdict dnsp_exch_answer(struct dnsp_worker *w, struct dnsp_slot *s, __u8 *msg,
				   size_t len, size_t cap)
{
	struct fw_dnsp *p = w->p;
	struct fw_dns_answer *a = &w->ans;
	unsigned int up = s->order[s->tried];
	int err;

	/* cap first and learn from the capped bytes: a hostile pointer may
	 * aim into a TTL, and what is learned must be what the client reads */
	err = fw_dns_cap_ttls(msg, len, __atomic_load_n(&p->cfg.ttl_cap, __ATOMIC_RELAXED));
	if (!err) {
		/* upstream knows the query by the id we gave it */
		__u16 client_id = s->q.id;

		s->q.id = s->up_id;
		err = fw_dns_parse_answer(msg, len, &s->q, a);
		s->q.id = client_id;
	}
	if (err == -EPROTO)
		return DNSP_WAIT;
	/* 0x20: the name must come back in the very case it was sent in */
	if (!err && p->cfg.case_randomize && !dnsp_same_question(s, msg, len, true))
		return DNSP_WAIT;
	if (s->origin == DNSP_O_PROBE) {
		if (err)
			return DNSP_WAIT;
		dnsp_mark(s->ws, up, true);
		DNSP_COUNT(w, probes_ok);
		return DNSP_DONE;
	}
	/* an answer, even a refusal: the exchange took this long */
	if (!err)
		dnsp_observe(w, s);
	if (err) {
		/* a truncated UDP answer may end mid-record: the client only
		 * needs the TC bit to retry over TCP */
		if (s->origin == DNSP_O_UDP && len >= FW_DNS_HDR_LEN &&
		    (get16(msg + 2) & FW_DNS_F_TC) && get16(msg) == s->up_id &&
		    dnsp_same_question(s, msg, len, p->cfg.case_randomize)) {
			__u8 out[DNSP_TX_SMALL];
			size_t n;

			dnsp_case_restore(p, s);
			if (fw_dns_build_error(s->qbuf + 2, s->qlen, &s->q, FW_DNS_RCODE_NOERROR,
					       out, sizeof(out), &n))
				return DNSP_NEXT;
			out[2] |= FW_DNS_F_TC >> 8;
			dnsp_observe(w, s);
			dnsp_mark(s->ws, up, true);
			DNSP_COUNT(w, answered);
			dnsp_slot_reply(w, s, out, n, true);
			return DNSP_DONE;
		}
		DNSP_COUNT(w, upstream_errors);
		return DNSP_NEXT;
	}
	dnsp_mark(s->ws, up, true);
	if (a->rcode != FW_DNS_RCODE_NOERROR && a->rcode != FW_DNS_RCODE_NXDOMAIN) {
		DNSP_COUNT(w, upstream_errors);
		return DNSP_NEXT;
	}
	if (p->hooks.learn && p->hooks.learn(p->hooks.ctx, &s->client, &s->q, s->token, a)) {
		DNSP_COUNT(w, servfail);
		dnsp_slot_error(w, s, FW_DNS_RCODE_SERVFAIL);
		return DNSP_DONE;
	}
	put16(msg, s->q.id);
	if (p->cfg.case_randomize) {
		/* the question back in the client's case (same length) */
		dnsp_case_restore(p, s);
		memcpy(msg + FW_DNS_HDR_LEN, s->qbuf + 2 + FW_DNS_HDR_LEN,
		       s->q.question_end - FW_DNS_HDR_LEN);
	}
	if (s->added_edns) {
		size_t n;

		/* left in place when not last (-EOPNOTSUPP): harmless */
		if (!fw_dns_strip_opt(msg, len, &n))
			len = n;
	}
	if (s->origin == DNSP_O_UDP && len > s->climit) {
		size_t n;

		if (fw_dns_truncate(msg, len, &n)) {
			DNSP_COUNT(w, servfail);
			dnsp_slot_error(w, s, FW_DNS_RCODE_SERVFAIL);
			return DNSP_DONE;
		}
		len = n;
		if (s->q.has_edns && !fw_dns_add_edns0(msg, len, cap, &n, p->cfg.edns_size))
			len = n;
		DNSP_COUNT(w, truncated);
	}
	DNSP_COUNT(w, answered);
	/* UDP: msg is a receive buffer, valid until the flush after this
	 * batch; TCP: conn_send copies what it cannot write at once */
	dnsp_slot_reply(w, s, msg, len, false);
	return DNSP_DONE;
}

void dnsp_exch_verdict(struct dnsp_worker *w, struct dnsp_slot *s, enum dnsp_verdict v)
{
	if (v == DNSP_DONE)
		dnsp_slot_put(w, s);
	else if (v == DNSP_NEXT)
		dnsp_exch_failover(w, s);
}

/* Healthy upstreams first in configured order, then those marked down:
 * still tried, as a last resort. */
static void dnsp_order(struct dnsp_slot *s)
{
	const struct dnsp_set *set = s->ws->set;

	s->norder = 0;
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int i = 0; i < set->n; i++)
			if (__atomic_load_n(&set->down[i], __ATOMIC_RELAXED) == (pass == 1))
				s->order[s->norder++] = (__u8)i;
}

/* ---- queries ---- */

static void dnsp_src_reply(struct dnsp_worker *w, const struct dnsp_src *src, const __u8 *msg,
			   size_t len)
{
	dnsp_count_rcode(w, msg, len);
	if (src->origin == DNSP_O_UDP)
		dnsp_tx_add(w, src->peer->fd, src->peer, msg, len, true);
	else
		dnsp_conn_send(w, src->conn, msg, len);
}

static void dnsp_src_error(struct dnsp_worker *w, const struct dnsp_src *src, const __u8 *msg,
			   size_t len, const struct fw_dns_query *q, int rcode)
{
	__u8 out[DNSP_TX_SMALL];
	size_t n;

	if (!fw_dns_build_error(msg, len, q, rcode, out, sizeof(out), &n))
		dnsp_src_reply(w, src, out, n);
}

/* Answers what fw_dns_parse_query refused: NOTIMP for another opcode,
 * FORMERR when there is a header to answer; responses and runts are
 * dropped (answering them could start a loop or reflect garbage). */
static void dnsp_reject(struct dnsp_worker *w, const struct dnsp_src *src, const __u8 *msg,
			size_t len, int err)
{
	__u8 out[DNSP_TX_SMALL];
	int rcode = err == -EOPNOTSUPP ? FW_DNS_RCODE_NOTIMP : FW_DNS_RCODE_FORMERR;
	size_t n;

	DNSP_COUNT(w, malformed);
	if (!fw_dns_build_reject(msg, len, rcode, out, sizeof(out), &n))
		dnsp_src_reply(w, src, out, n);
}

void dnsp_query(struct dnsp_worker *w, const struct dnsp_src *src, __u8 *msg, size_t len)
{
	struct fw_dnsp *p = w->p;
	struct fw_dns_query q;
	struct dnsp_slot *s;
	__u64 token = 0;
	int err, v;

	if (src->origin == DNSP_O_UDP)
		DNSP_COUNT(w, queries_udp);
	else
		DNSP_COUNT(w, queries_tcp);
	if (len > DNSP_QUERY_MAX) {
		dnsp_reject(w, src, msg, len, -EINVAL);
		return;
	}
	err = fw_dns_parse_query(msg, len, &q);
	/* one question: the policy decides on it, and an answer is only
	 * taken when it carries exactly that question */
	if (!err && q.qdcount != 1)
		err = -EINVAL;
	if (err) {
		dnsp_reject(w, src, msg, len, err);
		return;
	}
	v = p->hooks.decide ? p->hooks.decide(p->hooks.ctx, &src->client, &q, &token)
			    : FW_DNSP_FORWARD;
	if (v != FW_DNSP_FORWARD) {
		DNSP_COUNT(w, refused_by_hook);
		if (v < 0 || v > FW_DNS_F_RCODE)
			v = FW_DNS_RCODE_SERVFAIL;
		dnsp_src_error(w, src, msg, len, &q, v);
		return;
	}
	s = dnsp_slot_get(w, src->origin);
	if (!s) {
		DNSP_COUNT(w, overload);
		/* a TCP client would wait for this answer until idle */
		if (src->origin == DNSP_O_TCP)
			dnsp_src_error(w, src, msg, len, &q, FW_DNS_RCODE_SERVFAIL);
		return;
	}
	DNSP_COUNT(w, forwarded);
	s->q = q;
	s->token = token;
	s->client = src->client;
	memcpy(s->qbuf + 2, msg, len);
	s->qlen = len;
	dnsp_case_save(s);
	if (!q.has_edns &&
	    !fw_dns_add_edns0(s->qbuf + 2, len, sizeof(s->qbuf) - 2, &s->qlen, p->cfg.edns_size))
		s->added_edns = true;
	if (src->origin == DNSP_O_UDP) {
		s->peer = *src->peer;
		s->climit = q.has_edns && q.edns_udp_size > 512 ? q.edns_udp_size : 512;
	} else {
		struct dnsp_conn *c = src->conn;

		s->conn = c;
		s->cnext = c->pending;
		if (c->pending)
			c->pending->cprev = s;
		c->pending = s;
		c->npending++;
	}
	dnsp_order(s);
	dnsp_exch_next(w, s);
}

/* ---- client UDP ---- */

static void dnsp_peer_parse(struct dnsp_peer *pe, const struct msghdr *mh)
{
	pe->alen = mh->msg_namelen;
	pe->pi_family = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm;
	     cm = CMSG_NXTHDR((struct msghdr *)mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
			memcpy(&pe->pi.v4, CMSG_DATA(cm), sizeof(pe->pi.v4));
			/* answer from the address the query was sent to; no
			 * interface, the route decides */
			pe->pi.v4.ipi_spec_dst = pe->pi.v4.ipi_addr;
			pe->pi.v4.ipi_ifindex = 0;
			pe->pi_family = AF_INET;
		} else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO &&
			   cm->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo))) {
			/* the interface stays: link-local sources need it */
			memcpy(&pe->pi.v6, CMSG_DATA(cm), sizeof(pe->pi.v6));
			pe->pi_family = AF_INET6;
		}
	}
}

bool dnsp_client_ip(const struct dnsp_peer *pe, struct fw_ip *ip)
{
	if (pe->addr.sa.sa_family == AF_INET && pe->alen >= sizeof(struct sockaddr_in)) {
		fw_addr_from_v4(ip, pe->addr.v4.sin_addr.s_addr);
		return true;
	}
	if (pe->addr.sa.sa_family == AF_INET6 && pe->alen >= sizeof(struct sockaddr_in6)) {
		memcpy(ip->b, &pe->addr.v6.sin6_addr, sizeof(ip->b));
		return true;
	}
	return false;
}

static bool dnsp_is_alias4(__be32 a)
{
	return (ntohl(a) & 0xffff0000u) == FW_CG_DNS_ALIAS_NET;
}

static bool dnsp_ip_is_alias(const struct fw_ip *ip)
{
	__be32 a;

	if (fw_addr_family(ip) != FW_FAM_V4)
		return false;
	memcpy(&a, &ip->b[12], sizeof(a));
	return dnsp_is_alias4(a);
}

void dnsp_attribute(const struct sockaddr *local, socklen_t len, struct fw_ip *client)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)local;
	__be32 a = 0;

	if (local && local->sa_family == AF_INET && len >= sizeof(*sin))
		a = sin->sin_addr.s_addr;
	if (a && dnsp_is_alias4(a)) {
		/* a process sandbox's proxy address: its subject, whoever sent it */
		fw_addr_from_v4(client, a);
		return;
	}
	/* a proxy address as the source proves nothing: no subject */
	if (dnsp_ip_is_alias(client))
		fw_addr_from_v4(client, htonl(INADDR_LOOPBACK));
}

static void dnsp_udp_event(struct dnsp_worker *w, struct dnsp_sock *sk)
{
	int n;

	for (int i = 0; i < DNSP_BATCH; i++) {
		w->rxm[i].msg_hdr.msg_namelen = sizeof(w->rxp[i].addr);
		w->rxm[i].msg_hdr.msg_controllen = sizeof(w->rxc[i]);
		w->rxm[i].msg_hdr.msg_flags = 0;
	}
	n = recvmmsg(sk->fd, w->rxm, DNSP_BATCH, MSG_DONTWAIT, NULL);
	for (int i = 0; i < n; i++) {
		struct msghdr *mh = &w->rxm[i].msg_hdr;
		struct dnsp_src src = {.origin = DNSP_O_UDP, .peer = &w->rxp[i]};
		size_t len = w->rxm[i].msg_len;

		w->rxp[i].fd = sk->fd;
		dnsp_peer_parse(&w->rxp[i], mh);
		if (!dnsp_client_ip(&w->rxp[i], &src.client))
			continue;
		if (w->rxp[i].pi_family == AF_INET) {
			struct sockaddr_in to = {.sin_family = AF_INET,
						 .sin_addr = w->rxp[i].pi.v4.ipi_addr};

			dnsp_attribute((struct sockaddr *)&to, sizeof(to), &src.client);
		} else {
			dnsp_attribute(NULL, 0, &src.client);
		}
		/* a datagram longer than the buffer is over DNSP_QUERY_MAX */
		if (mh->msg_flags & MSG_TRUNC)
			len = DNSP_QUERY_MAX + 1;
		dnsp_query(w, &src, w->rxb + (size_t)i * (DNSP_QUERY_MAX + 1), len);
	}
	dnsp_tx_flush(w);
}

/* ---- timers and the loop ---- */

/* An attempt's time is up: the upstream is marked down and the next one
 * asked (re-arming this timer), or the client gets SERVFAIL. */
static __u64 dnsp_slot_timeout(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct dnsp_slot *s = ctx;
	struct dnsp_worker *w = s->w;

	(void)l;
	(void)t;
	dnsp_mark(s->ws, s->order[s->tried], false);
	if (s->origin == DNSP_O_PROBE) {
		DNSP_COUNT(w, probes_failed);
		dnsp_slot_put(w, s);
		return 0;
	}
	DNSP_COUNT(w, upstream_timeouts);
	dnsp_exch_failover(w, s);
	return 0;
}

static void dnsp_probe(struct dnsp_worker *w, unsigned int i)
{
	static const __u8 probe[] = {
		0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, FW_DNS_TYPE_NS, 0, FW_DNS_CLASS_IN};
	struct dnsp_slot *s = dnsp_slot_get(w, DNSP_O_PROBE);

	if (!s)
		return;
	memcpy(s->qbuf + 2, probe, sizeof(probe));
	s->qlen = sizeof(probe);
	if (fw_dns_parse_query(s->qbuf + 2, s->qlen, &s->q)) {
		dnsp_slot_put(w, s);
		return;
	}
	s->order[0] = (__u8)i;
	s->norder = 1;
	s->ws->probing[i] = true;
	dnsp_exch_next(w, s);
}

/* One worker probes for all: health is shared. */
static __u64 dnsp_probe_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct dnsp_worker *w = ctx;

	(void)l;
	(void)t;
	dnsp_sync_set(w);
	if (!w->ws)
		return w->p->cfg.probe_interval_ns;
	for (unsigned int i = 0; i < w->ws->set->n; i++)
		if (!w->ws->probing[i])
			dnsp_probe(w, i);
	return w->p->cfg.probe_interval_ns;
}

static void dnsp_before_sleep(struct dnsp_worker *w)
{
	struct dnsp_wset **pws;

	dnsp_sync_set(w);
	while (w->resume) {
		struct dnsp_conn *c = w->resume;

		w->resume = c->rnext;
		c->resume = false;
		if (c->closing || !c->paused || c->npending >= DNSP_TCP_INFLIGHT)
			continue;
		c->paused = false;
		dnsp_conn_parse(w, c);
		if (!c->closing && !c->paused)
			dnsp_conn_events(w, c);
	}
	while (w->closing) {
		struct dnsp_conn *c = w->closing;

		w->closing = c->dnext;
		while (c->pending)
			dnsp_slot_put(w, c->pending);
		fw_loop_watch_del(w->loop, c->watch);
		if (c->fd >= 0)
			close(c->fd);
		free(c->in);
		free(c->out);
		free(c);
	}
	for (pws = &w->retired; *pws;) {
		struct dnsp_wset *ws = *pws;

		if (ws->users) {
			pws = &ws->next;
			continue;
		}
		*pws = ws->next;
		dnsp_wset_free(w, ws);
	}
	dnsp_tx_flush(w);
	dnsp_pool_reap(w); /* after the flush: nothing queued names their fds */
	if (w->p->hooks.flush)
		w->p->hooks.flush(w->p->hooks.ctx);
}

static void dnsp_before_sleep_hook(struct fw_loop *l, void *ctx)
{
	(void)l;
	dnsp_before_sleep(ctx);
}

static void dnsp_sock_watch(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct dnsp_sock *sk = ctx;

	(void)l;
	(void)fd;
	(void)events;
	if (sk->listen)
		dnsp_accept_event(sk->w, sk);
	else
		dnsp_udp_event(sk->w, sk);
}

unsigned int fw_dnsp_workers_stuck(struct fw_dnsp *p, __u64 now_ns, __u64 bound_ns, __u64 *late_ns)
{
	for (unsigned int i = 0; p && i < p->nworkers; i++) {
		__u64 t = p->workers[i] ? fw_loop_turned(p->workers[i]->loop) : 0;

		if (t && now_ns > t && now_ns - t > bound_ns) {
			*late_ns = now_ns - t;
			return i + 1;
		}
	}
	return 0;
}

static void *dnsp_worker_main(void *arg)
{
	struct dnsp_worker *w = arg;
	char name[16];
	int err;

	/* top -H, /proc/PID/task/TID/comm: which thread is which */
	snprintf(name, sizeof(name), "fw-dns-%u", w->idx);
	pthread_setname_np(pthread_self(), name);
	fw_loop_timer_arm(w->loop, &w->pool_timer, DNSP_POOL_SWEEP_NS);
	if (!w->idx && w->p->cfg.probe_interval_ns)
		fw_loop_timer_arm(w->loop, &w->probe_timer, w->p->cfg.probe_interval_ns);
	/* here, not at setup: the simulation runs a worker's timers out */
	fw_loop_heartbeat(w->loop, FW_LOOP_BEAT_NS);
	err = fw_loop_run(w->loop);
	if (err)
		fw_err("dns proxy worker %u: epoll_wait: %s", w->idx, strerror(-err));
	return NULL;
}

/* ---- setup and teardown ---- */

/* A client socket on every local address (or loopback) of family at
 * port. exclusive: bound before SO_REUSEPORT is set, so the bind fails if
 * anyone holds the port, even another reuseport user of the same uid
 * (a test or a second daemon); later workers join it with SO_REUSEPORT. */
static int dnsp_open(int family, int type, bool loopback, __u16 port, bool exclusive, int *out)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a;
	socklen_t alen;
	int fd, err;

	memset(&a, 0, sizeof(a));
	if (family == AF_INET) {
		a.v4.sin_family = AF_INET;
		a.v4.sin_port = htons(port);
		a.v4.sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
		alen = sizeof(a.v4);
	} else {
		a.v6.sin6_family = AF_INET6;
		a.v6.sin6_port = htons(port);
		a.v6.sin6_addr = loopback ? in6addr_loopback : in6addr_any;
		alen = sizeof(a.v6);
	}
	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = family == AF_INET6 ? dnsp_setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1) : 0;
	if (!err && !exclusive)
		err = dnsp_setopt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (!err && type == SOCK_STREAM)
		err = dnsp_setopt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (!err && type == SOCK_DGRAM) {
		err = family == AF_INET ? dnsp_setopt(fd, IPPROTO_IP, IP_PKTINFO, 1)
					: dnsp_setopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		/* bursts beyond the default queue are dropped; best effort */
		dnsp_setopt(fd, SOL_SOCKET, SO_RCVBUF, DNSP_RCVBUF);
	}
	if (!err && bind(fd, &a.sa, alen))
		err = -errno;
	if (!err && exclusive)
		err = dnsp_setopt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (!err && type == SOCK_STREAM && listen(fd, DNSP_TCP_BACKLOG))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

static int dnsp_bound_port(int fd, __u16 *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static void dnsp_close_sock(struct dnsp_sock *s)
{
	if (s->watch)
		fw_loop_watch_del(s->w->loop, s->watch);
	s->watch = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* The first worker's sockets decide the port: with port 0, UDP picks one
 * and TCP (and IPv6) must get the same, else try again. */
static int dnsp_bind_first(struct fw_dnsp *p, struct dnsp_worker *w)
{
	const struct fw_dnsp_config *c = &p->cfg;
	bool lo = c->loopback;
	int err = -EADDRINUSE;

	for (int t = 0; t < DNSP_BIND_TRIES && err == -EADDRINUSE; t++) {
		__u16 port = c->port;

		err = dnsp_open(AF_INET, SOCK_DGRAM, lo, port, true, &w->udp4.fd);
		if (err)
			return err;
		err = dnsp_bound_port(w->udp4.fd, &port);
		if (!err)
			err = dnsp_open(AF_INET, SOCK_STREAM, lo, port, true, &w->tcp4.fd);
		if (err) {
			dnsp_close_sock(&w->udp4);
			if (c->port)
				return err;
			continue;
		}
		p->port = port;
		p->v6 = c->ipv6;
		if (!p->v6)
			return 0;
		err = dnsp_open(AF_INET6, SOCK_DGRAM, lo, port, true, &w->udp6.fd);
		if (!err)
			err = dnsp_open(AF_INET6, SOCK_STREAM, lo, port, true, &w->tcp6.fd);
		if (!err)
			return 0;
		dnsp_close_sock(&w->udp6);
		if (err == -EADDRINUSE && !c->port) {
			dnsp_close_sock(&w->udp4);
			dnsp_close_sock(&w->tcp4);
			continue;
		}
		fw_warn("dns proxy: can't listen on [%s]:%u: %s; IPv4 only",
			lo ? "::1" : "::", port, strerror(-err));
		p->v6 = false;
		return 0;
	}
	return err;
}

static int dnsp_bind_more(struct fw_dnsp *p, struct dnsp_worker *w)
{
	bool lo = p->cfg.loopback;
	int err;

	err = dnsp_open(AF_INET, SOCK_DGRAM, lo, p->port, false, &w->udp4.fd);
	if (!err)
		err = dnsp_open(AF_INET, SOCK_STREAM, lo, p->port, false, &w->tcp4.fd);
	if (!err && p->v6)
		err = dnsp_open(AF_INET6, SOCK_DGRAM, lo, p->port, false, &w->udp6.fd);
	if (!err && p->v6)
		err = dnsp_open(AF_INET6, SOCK_STREAM, lo, p->port, false, &w->tcp6.fd);
	return err;
}

static int dnsp_watch_add(struct dnsp_worker *w, struct dnsp_sock *s)
{
	if (s->fd < 0)
		return 0;
	s->w = w;
	return fw_loop_watch_add(w->loop, s->fd, EPOLLIN, dnsp_sock_watch, s, &s->watch);
}

static void dnsp_worker_free(struct dnsp_worker *w)
{
	if (!w)
		return;
	/* every connection is on the idle list or already closing */
	while (w->ihead)
		dnsp_conn_kill(w, w->ihead);
	w->resume = NULL;
	dnsp_before_sleep(w);
	for (unsigned int i = 0; w->slots && i < w->nslots; i++)
		if (w->slots[i].used)
			dnsp_slot_put(w, &w->slots[i]);
	while (w->retired) {
		struct dnsp_wset *ws = w->retired;

		w->retired = ws->next;
		dnsp_wset_free(w, ws);
	}
	if (w->ws)
		dnsp_wset_free(w, w->ws);
	dnsp_pool_reap(w);
	dnsp_close_sock(&w->udp4);
	dnsp_close_sock(&w->udp6);
	dnsp_close_sock(&w->tcp4);
	dnsp_close_sock(&w->tcp6);
	fw_loop_free(w->loop);
	free(w->slots);
	free(w->rxb);
	free(w->urxb);
	free(w->uprxb);
	free(w);
}

static int dnsp_worker_new(struct fw_dnsp *p, unsigned int idx, struct dnsp_worker **out)
{
	struct dnsp_worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->p = p;
	w->idx = idx;
	w->udp4 = w->udp6 = (struct dnsp_sock){.listen = false, .fd = -1};
	w->tcp4 = w->tcp6 = (struct dnsp_sock){.listen = true, .fd = -1};
	*out = w;
	err = fw_loop_new(&w->loop);
	if (err)
		return err;
	fw_loop_set_before_sleep(w->loop, dnsp_before_sleep_hook, w);
	fw_loop_timer_init(&w->probe_timer, dnsp_probe_timer, w);
	fw_loop_timer_init(&w->accept_timer, dnsp_accept_resume, w);
	fw_loop_timer_init(&w->pool_timer, dnsp_pool_sweep, w);
	w->nslots = p->cfg.max_pending;
	/* each pooled socket is a descriptor: the budget of dnsp_fd_budget */
	w->pool_size = DNSP_POOL < w->nslots / 2 ? DNSP_POOL : w->nslots / 2;
	if (!w->pool_size)
		w->pool_size = 1;
	w->slots = calloc(w->nslots, sizeof(*w->slots));
	w->rxb = malloc((size_t)DNSP_BATCH * (DNSP_QUERY_MAX + 1));
	w->urxb = malloc(DNSP_UP_BUF);
	/* untouched pages cost nothing: most answers are small */
	w->uprxb = malloc((size_t)DNSP_UP_BATCH * DNSP_UP_BUF);
	if (!w->slots || !w->rxb || !w->urxb || !w->uprxb)
		return -ENOMEM;
	for (int i = 0; i < DNSP_UP_BATCH; i++) {
		struct msghdr *mh = &w->uprm[i].msg_hdr;

		w->uprv[i].iov_base = w->uprxb + (size_t)i * DNSP_UP_BUF;
		w->uprv[i].iov_len = DNSP_UP_BUF;
		mh->msg_name = &w->upfrom[i];
		mh->msg_iov = &w->uprv[i];
		mh->msg_iovlen = 1;
	}
	for (unsigned int i = w->nslots; i-- > 0;) {
		w->slots[i].index = i;
		w->slots[i].w = w;
		w->slots[i].up_fd = -1;
		fw_loop_timer_init(&w->slots[i].timer, dnsp_slot_timeout, &w->slots[i]);
		w->slots[i].fnext = w->free_slots;
		w->free_slots = &w->slots[i];
	}
	for (int i = 0; i < DNSP_BATCH; i++) {
		struct msghdr *mh = &w->rxm[i].msg_hdr;

		w->rxv[i].iov_base = w->rxb + (size_t)i * (DNSP_QUERY_MAX + 1);
		w->rxv[i].iov_len = DNSP_QUERY_MAX + 1;
		mh->msg_name = &w->rxp[i].addr;
		mh->msg_iov = &w->rxv[i];
		mh->msg_iovlen = 1;
		mh->msg_control = w->rxc[i].buf;
	}
	return 0;
}

static void dnsp_wake(struct fw_dnsp *p)
{
	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i] && p->workers[i]->loop)
			fw_loop_wake(p->workers[i]->loop);
}

void fw_dnsp_config_init(struct fw_dnsp_config *c)
{
	memset(c, 0, sizeof(*c));
	/* the configuration keys' defaults (dns/proxy_keys.c) */
	fw_ck_defaults(&fw_dnsp_keys, c);
	c->ipv6 = true;
	c->max_pending = DNSP_DEF_PENDING;
	c->ttl_cap = DNSP_DEF_TTL_CAP;
	c->edns_size = FW_DNS_EDNS_UDP;
}

/* Zero means the default for every knob but probe_interval_ns (0: no
 * probes) and ttl_cap (0 would zero every TTL: the default instead). */
static int dnsp_config_check(struct fw_dnsp_config *c)
{
	struct fw_dnsp_config def;

	fw_dnsp_config_init(&def);
	if (c->workers > FW_DNSP_MAX_WORKERS || c->nupstreams > FW_DNSP_MAX_UPSTREAMS)
		return -EINVAL;
	if (c->max_pending > DNSP_PENDING_MAX)
		return -EINVAL;
	if (!c->workers)
		c->workers = 1;
	if (!c->timeout_ns)
		c->timeout_ns = def.timeout_ns;
	if (!c->max_tcp_clients)
		c->max_tcp_clients = def.max_tcp_clients;
	if (!c->max_tcp_per_client)
		c->max_tcp_per_client = def.max_tcp_per_client;
	if (!c->tcp_idle_ns)
		c->tcp_idle_ns = def.tcp_idle_ns;
	if (!c->max_pending)
		c->max_pending = DNSP_DEF_PENDING;
	if (!c->ttl_cap)
		c->ttl_cap = DNSP_DEF_TTL_CAP;
	if (c->edns_size < 512)
		c->edns_size = FW_DNS_EDNS_UDP;
	return 0;
}

/* Every exchange in flight holds a descriptor: a flood of queries to a
 * slow upstream must not take the descriptors the rest of the process
 * (maps, links, HTTP clients) needs, so the exchanges of all workers fit
 * in the limit with DNSP_FD_RESERVE and the client sockets left over. */
static void dnsp_fd_budget(struct fw_dnsp_config *c)
{
	struct rlimit rl;
	__u64 need, room, per;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	need = DNSP_FD_RESERVE + c->max_tcp_clients + 8ULL * c->workers;
	room = rl.rlim_cur > need ? rl.rlim_cur - need : 0;
	per = room / c->workers;
	if (per >= c->max_pending)
		return;
	per = per < DNSP_PENDING_MIN ? DNSP_PENDING_MIN : per;
	fw_warn("dns proxy: %llu descriptors allow %llu exchanges in flight per worker, not %u",
		(unsigned long long)rl.rlim_cur, (unsigned long long)per, c->max_pending);
	c->max_pending = (unsigned)per;
}

int fw_dnsp_start(const struct fw_dnsp_config *c, const struct fw_dnsp_hooks *h,
		  struct fw_dnsp **out)
{
	struct fw_dnsp *p;
	int err;

	if (!c || !h || !out)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *c;
	p->hooks = *h;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->tcp_lock, NULL);
	err = dnsp_config_check(&p->cfg);
	if (err)
		goto cleanup;
	dnsp_fd_budget(&p->cfg);
	p->tcpc = calloc(p->cfg.max_tcp_clients, sizeof(*p->tcpc));
	if (!p->tcpc) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = dnsp_set_new(p->cfg.upstreams, p->cfg.nupstreams, &p->set);
	if (err)
		goto cleanup;
	p->set->gen = p->gen = 1;
	for (unsigned int i = 0; i < p->cfg.workers; i++) {
		err = dnsp_worker_new(p, i, &p->workers[i]);
		p->nworkers = i + 1;
		if (err)
			goto cleanup;
		err = i ? dnsp_bind_more(p, p->workers[i]) : dnsp_bind_first(p, p->workers[i]);
		if (err)
			goto cleanup;
		err = dnsp_watch_add(p->workers[i], &p->workers[i]->udp4);
		if (!err)
			err = dnsp_watch_add(p->workers[i], &p->workers[i]->tcp4);
		if (!err)
			err = dnsp_watch_add(p->workers[i], &p->workers[i]->udp6);
		if (!err)
			err = dnsp_watch_add(p->workers[i], &p->workers[i]->tcp6);
		if (err)
			goto cleanup;
	}
	for (unsigned int i = 0; i < p->nworkers; i++) {
		err = -pthread_create(&p->workers[i]->thread, NULL, dnsp_worker_main,
				      p->workers[i]);
		if (err)
			goto cleanup;
		p->workers[i]->started = true;
	}
	*out = p;
	return 0;
cleanup:
	fw_dnsp_stop(p);
	return err;
}

void fw_dnsp_stop(struct fw_dnsp *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i] && p->workers[i]->loop)
			fw_loop_stop(p->workers[i]->loop);
	for (unsigned int i = 0; i < p->nworkers; i++)
		if (p->workers[i] && p->workers[i]->started)
			pthread_join(p->workers[i]->thread, NULL);
	for (unsigned int i = 0; i < p->nworkers; i++)
		dnsp_worker_free(p->workers[i]);
	dnsp_set_put(p->set);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->tcp_lock);
	free(p->tcpc);
	free(p);
}

int fw_dnsp_set_upstreams(struct fw_dnsp *p, const struct fw_dnsp_upstream *u, size_t n)
{
	struct dnsp_set *s, *old;
	int err;

	if (!p)
		return -EINVAL;
	err = dnsp_set_new(u, n, &s);
	if (err)
		return err;
	pthread_mutex_lock(&p->lock);
	old = p->set;
	s->gen = old->gen + 1;
	p->set = s;
	__atomic_store_n(&p->gen, s->gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
	dnsp_set_put(old);
	dnsp_wake(p);
	return 0;
}

void fw_dnsp_set_ttl_cap(struct fw_dnsp *p, __u32 cap)
{
	/* the workers read it per answer: one word, no lock */
	if (p && cap)
		__atomic_store_n(&p->cfg.ttl_cap, cap, __ATOMIC_RELAXED);
}

void fw_dnsp_get_stats(struct fw_dnsp *p, struct fw_dnsp_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	for (unsigned int i = 0; i < p->nworkers && p->workers[i]; i++) {
		const struct fw_dnsp_stats *s = &p->workers[i]->st;

#define DNSP_SUM(f) out->f += __atomic_load_n(&s->f, __ATOMIC_RELAXED)
		DNSP_SUM(queries_udp);
		DNSP_SUM(queries_tcp);
		DNSP_SUM(forwarded);
		DNSP_SUM(answered);
		DNSP_SUM(refused_by_hook);
		DNSP_SUM(servfail);
		DNSP_SUM(upstream_timeouts);
		DNSP_SUM(upstream_errors);
		DNSP_SUM(malformed);
		DNSP_SUM(truncated);
		DNSP_SUM(tcp_rejected);
		DNSP_SUM(tcp_evicted);
		DNSP_SUM(overload);
		for (unsigned int r = 0; r < 16; r++)
			DNSP_SUM(rcodes[r]);
		for (unsigned int b = 0; b <= FW_LAT_BUCKETS; b++)
			DNSP_SUM(latency[b]);
		DNSP_SUM(latency_sum_ns);
		DNSP_SUM(probes_ok);
		DNSP_SUM(probes_failed);
#undef DNSP_SUM
	}
}

__u16 fw_dnsp_port(const struct fw_dnsp *p)
{
	return p ? p->port : 0;
}

bool fw_dnsp_upstream_healthy(struct fw_dnsp *p, size_t i)
{
	bool up = false;

	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	if (i < p->set->n)
		up = !__atomic_load_n(&p->set->down[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&p->lock);
	return up;
}

size_t fw_dnsp_upstream_health(struct fw_dnsp *p, struct fw_dnsp_upstream *u, bool *up, size_t max)
{
	size_t n = 0;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (; n < p->set->n && n < max; n++) {
		u[n] = p->set->u[n];
		up[n] = !__atomic_load_n(&p->set->down[n], __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* ---- without sockets ---- */

/* What an upstream that got the query would put in its answer: the id
 * sent, and the question in the case sent when it matches but for case. */
static void dnsp_sim_fix(const struct dnsp_worker *w, const struct dnsp_slot *s, __u8 *b, size_t n)
{
	put16(b, s->up_id);
	if (w->p->cfg.case_randomize && dnsp_same_question(s, b, n, false))
		memcpy(b + FW_DNS_HDR_LEN, s->qbuf + 2 + FW_DNS_HDR_LEN,
		       s->q.question_end - FW_DNS_HDR_LEN);
}

/* The next upstream record for slot s: UDP as a datagram from the
 * upstream, TCP as a whole message read from the connection. */
static void dnsp_sim_answer(struct dnsp_worker *w, struct dnsp_slot *s, const __u8 *b, size_t n,
			    bool keep_id)
{
	const struct fw_dnsp_upstream *u = &s->ws->set->u[s->order[s->tried]];

	if (s->origin != DNSP_O_TCP) {
		if (n > DNSP_UP_BUF)
			n = DNSP_UP_BUF;
		memcpy(w->urxb, b, n);
		if (n >= 2 && !keep_id)
			dnsp_sim_fix(w, s, w->urxb, n);
		dnsp_udp_up_datagram(w, s, w->urxb, n, &u->addr, u->len, 0);
		return;
	}
	if (n < FW_DNS_HDR_LEN) {
		DNSP_COUNT(w, upstream_errors);
		dnsp_exch_failover(w, s);
		return;
	}
	s->ans = malloc(n);
	if (!s->ans) {
		dnsp_exch_failover(w, s);
		return;
	}
	memcpy(s->ans, b, n);
	s->ans_len = n;
	if (!keep_id)
		dnsp_sim_fix(w, s, s->ans, n);
	dnsp_tcp_up_answer(w, s);
}

static struct dnsp_slot *dnsp_sim_busy(struct dnsp_worker *w)
{
	for (unsigned int i = 0; i < w->nslots; i++)
		if (w->slots[i].used)
			return &w->slots[i];
	return NULL;
}

/* Hands the upstream records out to the exchanges in flight, one record to
 * the first one each; false when none is in flight or none is left. */
static bool dnsp_sim_upstream(struct dnsp_worker *w, const __u8 *up, size_t ulen, size_t *off)
{
	struct dnsp_slot *s;
	bool any = false;

	while (*off + 2 <= ulen && (s = dnsp_sim_busy(w))) {
		__u16 h = get16(up + *off);
		size_t n = h & 0x7fff;

		*off += 2;
		if (n > ulen - *off)
			n = ulen - *off;
		dnsp_sim_answer(w, s, up + *off, n, h & 0x8000);
		*off += n;
		dnsp_tx_flush(w);
		any = true;
	}
	return any;
}

int fw_dnsp_simulate(const struct fw_dnsp_hooks *h, bool case_randomize, const __u8 *client,
		     size_t clen, bool tcp, const __u8 *up, size_t ulen, __u8 *out, size_t outcap,
		     size_t *outlen)
{
	struct dnsp_sim sim = {.out = out, .cap = outcap};
	struct fw_dnsp_config c;
	struct dnsp_worker *w;
	struct fw_dnsp *p;
	struct fw_ip cl;
	size_t uoff = 0;
	int err;

	if ((!client && clen) || (!up && ulen) || !out || !outlen)
		return -EINVAL;
	*outlen = 0;
	fw_dnsp_config_init(&c);
	c.workers = 1;
	c.max_pending = 64;
	c.max_tcp_clients = 1;
	c.max_tcp_per_client = 1;
	c.probe_interval_ns = 0;
	c.case_randomize = case_randomize;
	/* two, so failover runs too */
	if (fw_dnsp_upstream_parse("192.0.2.53", &c.upstreams[0]) ||
	    fw_dnsp_upstream_parse("[2001:db8::53]:5353", &c.upstreams[1]))
		return -EINVAL;
	c.nupstreams = 2;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = c;
	if (h)
		p->hooks = *h;
	p->sim = &sim;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->tcp_lock, NULL);
	err = dnsp_config_check(&p->cfg);
	p->tcpc = err ? NULL : calloc(p->cfg.max_tcp_clients, sizeof(*p->tcpc));
	if (!err && !p->tcpc)
		err = -ENOMEM;
	if (!err)
		err = dnsp_set_new(p->cfg.upstreams, p->cfg.nupstreams, &p->set);
	if (err)
		goto out;
	p->set->gen = p->gen = 1;
	err = dnsp_worker_new(p, 0, &p->workers[0]);
	p->nworkers = 1;
	if (err)
		goto out;
	w = p->workers[0];
	dnsp_sync_set(w);
	fw_addr_from_v4(&cl, htonl(0x0a2a0002)); /* 10.42.0.2 */
	if (!tcp) {
		struct dnsp_peer pe = {.fd = -1, .alen = sizeof(struct sockaddr_in)};
		struct dnsp_src src = {.origin = DNSP_O_UDP, .peer = &pe, .client = cl};
		size_t n = clen > DNSP_QUERY_MAX ? DNSP_QUERY_MAX + 1 : clen;

		pe.addr.v4.sin_family = AF_INET;
		pe.addr.v4.sin_port = htons(40001);
		pe.addr.v4.sin_addr.s_addr = htonl(0x0a2a0002);
		memcpy(w->rxb, client, n);
		dnsp_query(w, &src, w->rxb, n);
		dnsp_tx_flush(w);
	} else {
		struct dnsp_conn *cn = calloc(1, sizeof(*cn));
		size_t off = 0;

		if (cn)
			cn->in = malloc(DNSP_TCP_IN);
		if (!cn || !cn->in) {
			if (cn)
				free(cn->in);
			free(cn);
			err = -ENOMEM;
			goto out;
		}
		cn->fd = -1;
		cn->w = w;
		cn->client = cl;
		cn->in_cap = DNSP_TCP_IN;
		cn->last = dnsp_now(w);
		/* no idle timer: the stream is fed at once, and what is left
		 * runs out by the exchanges' timeouts below */
		fw_loop_timer_init(&cn->idle, dnsp_conn_idle, cn);
		if (dnsp_admit(w, cn)) {
			free(cn->in);
			free(cn);
			err = -EBUSY;
			goto out;
		}
		w->ihead = w->itail = cn;
		/* as reads would come: what fits, run the frames, answer what
		 * is in flight when paused, until the stream and the answers
		 * are used up; then the client closes its side */
		while (!cn->closing) {
			bool moved = false;

			if (!cn->paused && off < clen && cn->in_len < cn->in_cap) {
				size_t n = cn->in_cap - cn->in_len;

				if (n > clen - off)
					n = clen - off;
				memcpy(cn->in + cn->in_len, client + off, n);
				cn->in_len += n;
				off += n;
				dnsp_conn_parse(w, cn);
				moved = true;
			}
			moved |= dnsp_sim_upstream(w, up, ulen, &uoff);
			dnsp_before_sleep(w);
			if (!moved)
				break;
		}
		if (!cn->closing) {
			cn->eof = true;
			if (!cn->npending)
				dnsp_conn_kill(w, cn);
		}
	}
	dnsp_sim_upstream(w, up, ulen, &uoff);
	/* what is still waiting times out, upstream after upstream */
	while (fw_loop_next_deadline(w->loop) != UINT64_MAX) {
		fw_loop_expire(w->loop, fw_loop_next_deadline(w->loop));
		dnsp_tx_flush(w);
	}
	dnsp_before_sleep(w);
out:
	fw_dnsp_stop(p);
	*outlen = sim.len;
	return err;
}
