// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The DNS proxy's client TCP connections (dns/proxy.h): admission with the
 * per-client limit and fair eviction, framed reads and pipelined queries,
 * queued writes for slow readers, the idle timer, the accept pause. */
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
#include "dns/proxy_priv.h"

/* ---- writing to a connection ---- */

void dnsp_conn_events(struct dnsp_worker *w, struct dnsp_conn *c)
{
	__u32 events = 0;

	if (!c->paused && !c->eof)
		events |= EPOLLIN;
	if (c->want_out)
		events |= EPOLLOUT;
	if (c->watch)
		fw_loop_watch_mod(w->loop, c->watch, events);
}

static void dnsp_conn_touch(struct dnsp_worker *w, struct dnsp_conn *c)
{
	c->last = dnsp_now(w);
	if (c->closing || c == w->itail)
		return;
	/* unlink, append: the list stays in order of last activity */
	if (c->iprev)
		c->iprev->inext = c->inext;
	else
		w->ihead = c->inext;
	c->inext->iprev = c->iprev;
	c->iprev = w->itail;
	c->inext = NULL;
	w->itail->inext = c;
	w->itail = c;
}

/* One framed message to a client connection: written at once when
 * nothing is queued, else queued up to DNSP_TCP_OUT_MAX; a client that
 * reads slower than that is cut off. */
void dnsp_conn_send(struct dnsp_worker *w, struct dnsp_conn *c, const __u8 *msg, size_t len)
{
	__u8 hdr[2];
	size_t total = len + 2, done = 0;

	if (c->closing || len > 0xffff)
		return;
	if (w->p->sim) {
		dnsp_sim_put(w->p->sim, msg, len);
		dnsp_conn_touch(w, c);
		return;
	}
	put16(hdr, (__u16)len);
	if (c->out_len == c->out_off) {
		struct iovec iov[2] = {{hdr, 2}, {(void *)msg, len}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			dnsp_conn_kill(w, c);
			return;
		}
		if (n > 0)
			done = (size_t)n;
		if (done == total) {
			dnsp_conn_touch(w, c);
			return;
		}
		c->out_off = c->out_len = 0;
	}
	if (c->out_len - c->out_off + total - done > DNSP_TCP_OUT_MAX) {
		dnsp_conn_kill(w, c);
		return;
	}
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_cap - c->out_len < total - done) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		__u8 *nb;

		while (cap - c->out_len < total - done)
			cap *= 2;
		nb = realloc(c->out, cap);
		if (!nb) {
			dnsp_conn_kill(w, c);
			return;
		}
		c->out = nb;
		c->out_cap = cap;
	}
	for (size_t i = done; i < total; i++)
		c->out[c->out_len++] = i < 2 ? hdr[i] : msg[i - 2];
	if (!c->want_out) {
		c->want_out = true;
		dnsp_conn_events(w, c);
	}
}
/* ---- client TCP ---- */

/* Gives the connection's place back (under tcp_lock). */
static void dnsp_conn_release(struct fw_dnsp *p, struct dnsp_conn *c)
{
	p->tcpc[c->ce].n--;
	p->tcp_clients--;
}

static void dnsp_conn_unlink(struct dnsp_worker *w, struct dnsp_conn *c)
{
	c->closing = true;
	fw_loop_timer_cancel(w->loop, &c->idle);
	if (c->iprev)
		c->iprev->inext = c->inext;
	else
		w->ihead = c->inext;
	if (c->inext)
		c->inext->iprev = c->iprev;
	else
		w->itail = c->iprev;
	c->iprev = c->inext = NULL;
	c->dnext = w->closing;
	w->closing = c;
}

/* Closes c in the before-sleep step; its place is free at once. */
void dnsp_conn_kill(struct dnsp_worker *w, struct dnsp_conn *c)
{
	if (c->closing)
		return;
	pthread_mutex_lock(&w->p->tcp_lock);
	dnsp_conn_release(w->p, c);
	pthread_mutex_unlock(&w->p->tcp_lock);
	dnsp_conn_unlink(w, c);
}

/* Runs the complete frames in the read buffer, up to DNSP_TCP_INFLIGHT
 * exchanges at a time; beyond that the connection is paused. */
void dnsp_conn_parse(struct dnsp_worker *w, struct dnsp_conn *c)
{
	size_t off = 0;

	while (!c->closing && c->npending < DNSP_TCP_INFLIGHT && c->in_len - off >= 2) {
		size_t l = get16(c->in + off);
		struct dnsp_src src = {.origin = DNSP_O_TCP, .conn = c, .client = c->client};

		if (c->in_len - off - 2 < l)
			break;
		dnsp_query(w, &src, c->in + off + 2, l);
		off += 2 + l;
	}
	if (c->closing)
		return;
	if (off) {
		/* a complete query restarts the clock, bytes of an unfinished
		 * one do not: a trickle never keeps a connection */
		dnsp_conn_touch(w, c);
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (c->in_len >= 2 && c->in_cap < 2 + (size_t)get16(c->in)) {
		/* the next frame needs a bigger buffer; at most DNSP_TCP_FRAME */
		__u8 *nb = realloc(c->in, DNSP_TCP_FRAME);

		if (!nb) {
			dnsp_conn_kill(w, c);
			return;
		}
		c->in = nb;
		c->in_cap = DNSP_TCP_FRAME;
	}
	if (c->npending >= DNSP_TCP_INFLIGHT && !c->paused) {
		c->paused = true;
		dnsp_conn_events(w, c);
	}
}

static void dnsp_conn_flush(struct dnsp_worker *w, struct dnsp_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				dnsp_conn_kill(w, c);
			return;
		}
		c->out_off += (size_t)n;
	}
	/* only a whole answer counts: a client reading a byte at a time
	 * does not keep its connection */
	dnsp_conn_touch(w, c);
	c->out_off = c->out_len = 0;
	c->want_out = false;
	dnsp_conn_events(w, c);
	if (c->eof && !c->npending)
		dnsp_conn_kill(w, c);
}

static void dnsp_conn_event(struct dnsp_worker *w, struct dnsp_conn *c, __u32 events)
{
	ssize_t n;

	if (c->closing)
		return;
	/* HUP: both directions are gone, nobody will read an answer */
	if (events & (EPOLLERR | EPOLLHUP)) {
		dnsp_conn_kill(w, c);
		return;
	}
	if (events & EPOLLOUT) {
		dnsp_conn_flush(w, c);
		if (c->closing)
			return;
	}
	if (!(events & EPOLLIN) || c->paused || c->eof || c->in_len == c->in_cap)
		return;
	n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			dnsp_conn_kill(w, c);
		return;
	}
	if (n == 0) {
		/* half-closed: answer what is in flight, then close */
		c->eof = true;
		if (!c->npending && c->out_off == c->out_len)
			dnsp_conn_kill(w, c);
		else
			dnsp_conn_events(w, c);
		return;
	}
	c->in_len += (size_t)n;
	dnsp_conn_parse(w, c);
}

static void dnsp_listen_events(struct dnsp_worker *w, __u32 events)
{
	struct dnsp_sock *l[] = {&w->tcp4, &w->tcp6};

	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		if (l[i]->watch)
			fw_loop_watch_mod(w->loop, l[i]->watch, events);
}

static void dnsp_accept_pause(struct dnsp_worker *w)
{
	dnsp_listen_events(w, 0);
	fw_loop_timer_arm(w->loop, &w->accept_timer, DNSP_ACCEPT_PAUSE);
}

__u64 dnsp_accept_resume(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	dnsp_listen_events(ctx, EPOLLIN);
	return 0;
}

/* A connection that has not completed a query (nor had one in flight,
 * nor an answer written out) for tcp_idle_ns is closed. */
__u64 dnsp_conn_idle(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct dnsp_conn *c = ctx;
	__u64 idle = c->w->p->cfg.tcp_idle_ns, now = fw_loop_now(l);

	(void)t;
	if (c->closing)
		return 0;
	if (c->last + idle > now)
		return c->last + idle - now;
	if (c->npending) { /* waiting on us, not idle */
		dnsp_conn_touch(c->w, c);
		return idle;
	}
	dnsp_conn_kill(c->w, c); /* freed in the before-sleep step */
	return 0;
}

static void dnsp_conn_watch(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct dnsp_conn *c = ctx;
	struct dnsp_worker *w = c->w;

	(void)l;
	(void)fd;
	dnsp_conn_event(w, c, events);
	dnsp_tx_flush(w);
}

/* The connection of this worker to evict for a client that holds `have`
 * connections: one of the client holding the most, least recently active
 * first, if that client holds at least two more (so eviction never leaves
 * the newcomer ahead of its victim). Under tcp_lock. Only this worker's
 * connections are candidates; the kernel spreads each client's
 * connections over the workers, so the biggest holder has some here. */
static struct dnsp_conn *dnsp_victim(struct dnsp_worker *w, unsigned int have)
{
	struct dnsp_conn *best = NULL;
	unsigned int most = have + 1;

	for (struct dnsp_conn *c = w->ihead; c; c = c->inext)
		if (w->p->tcpc[c->ce].n > most) {
			most = w->p->tcpc[c->ce].n;
			best = c;
		}
	return best;
}

/* Takes a place for c, all workers counted: at most max_tcp_per_client
 * per client address, and at most max_tcp_clients in all; when full, a
 * connection of the client holding the most goes instead. -EBUSY: c is
 * refused. */
int dnsp_admit(struct dnsp_worker *w, struct dnsp_conn *c)
{
	struct fw_dnsp *p = w->p;
	struct dnsp_conn *victim = NULL;
	unsigned int e = UINT_MAX;
	int err = 0;

	pthread_mutex_lock(&p->tcp_lock);
	for (unsigned int i = 0; i < p->cfg.max_tcp_clients; i++) {
		if (p->tcpc[i].n && !memcmp(&p->tcpc[i].ip, &c->client, sizeof(c->client))) {
			e = i;
			break;
		}
		if (!p->tcpc[i].n && e == UINT_MAX)
			e = i;
	}
	if (e == UINT_MAX || p->tcpc[e].n >= p->cfg.max_tcp_per_client) {
		err = -EBUSY;
	} else if (p->tcp_clients >= p->cfg.max_tcp_clients) {
		victim = dnsp_victim(w, p->tcpc[e].n);
		if (victim)
			dnsp_conn_release(p, victim);
		else
			err = -EBUSY;
	}
	if (!err) {
		p->tcpc[e].ip = c->client;
		p->tcpc[e].n++;
		p->tcp_clients++;
		c->ce = e;
	}
	pthread_mutex_unlock(&p->tcp_lock);
	if (victim) {
		DNSP_COUNT(w, tcp_evicted);
		dnsp_conn_unlink(w, victim);
	}
	return err;
}

void dnsp_accept_event(struct dnsp_worker *w, struct dnsp_sock *sk)
{
	for (int k = 0; k < DNSP_ACCEPTS; k++) {
		struct dnsp_peer pe;
		struct dnsp_conn *c;
		int fd;

		pe.alen = sizeof(pe.addr);
		fd = accept4(sk->fd, &pe.addr.sa, &pe.alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* out of descriptors or memory: the listener would
			 * stay readable and spin the loop; look again later */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				dnsp_accept_pause(w);
			return;
		}
		c = calloc(1, sizeof(*c));
		if (c)
			c->in = malloc(DNSP_TCP_IN);
		if (!c || !c->in || !dnsp_client_ip(&pe, &c->client))
			goto drop;
		{
			struct sockaddr_storage local;
			socklen_t llen = sizeof(local);

			if (getsockname(fd, (struct sockaddr *)&local, &llen))
				goto drop;
			dnsp_attribute((struct sockaddr *)&local, llen, &c->client);
		}
		if (dnsp_admit(w, c)) {
			DNSP_COUNT(w, tcp_rejected);
			goto drop;
		}
		c->fd = fd;
		c->w = w;
		c->in_cap = DNSP_TCP_IN;
		c->last = dnsp_now(w);
		if (fw_loop_watch_add(w->loop, fd, EPOLLIN, dnsp_conn_watch, c, &c->watch)) {
			pthread_mutex_lock(&w->p->tcp_lock);
			dnsp_conn_release(w->p, c);
			pthread_mutex_unlock(&w->p->tcp_lock);
			goto drop;
		}
		c->iprev = w->itail;
		if (w->itail)
			w->itail->inext = c;
		else
			w->ihead = c;
		w->itail = c;
		fw_loop_timer_init(&c->idle, dnsp_conn_idle, c);
		fw_loop_timer_arm(w->loop, &c->idle, w->p->cfg.tcp_idle_ns);
		continue;
	drop:
		if (c)
			free(c->in);
		free(c);
		close(fd);
	}
}
