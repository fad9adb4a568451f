// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The DNS proxy's upstream side (dns/proxy.h): answers read from the
 * per-attempt upstream sockets, UDP and TCP, and the upstream addresses of
 * the configuration and resolv.conf. */
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

/* ---- upstream UDP ---- */

static bool dnsp_same_addr(const struct sockaddr_storage *a, socklen_t alen,
			   const struct fw_dnsp_upstream *u)
{
	if (a->ss_family != u->addr.ss_family || alen < u->len)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)&u->addr;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	{
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)&u->addr;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
}

/* One datagram (msg) on the socket of s's attempt, which carries s's id.
 * The kernel only delivers those from the address and port the socket is
 * connected to (checked again anyway); what does not carry the attempt's
 * question is ignored, and the exchange keeps waiting for the real answer
 * until its timeout. False when the slot has moved on (answered, failed
 * over). */
bool dnsp_udp_up_datagram(struct dnsp_worker *w, struct dnsp_slot *s, __u8 *msg, size_t n,
			  const struct sockaddr_storage *from, socklen_t fromlen, int flags)
{
	const struct fw_dnsp_upstream *u = &s->ws->set->u[s->order[s->tried]];
	enum dnsp_verdict v;

	if (!dnsp_same_addr(from, fromlen, u) || n < FW_DNS_HDR_LEN || get16(msg) != s->up_id)
		return true;
	if (flags & MSG_TRUNC) {
		DNSP_COUNT(w, upstream_errors);
		dnsp_exch_failover(w, s);
		return false;
	}
	v = dnsp_exch_answer(w, s, msg, n, DNSP_UP_BUF);
	if (v == DNSP_WAIT)
		return true;
	dnsp_exch_verdict(w, s, v);
	return false;
}

/* ---- the upstream socket pool ---- */

/* Off its pool and its events; closed before the next wait (a callback
 * of this round may still hold it). */
static void dnsp_usock_kill(struct dnsp_worker *w, struct dnsp_usock *us)
{
	fw_loop_watch_del(w->loop, us->watch);
	us->watch = NULL;
	us->pool = NULL;
	us->dnext = w->udead;
	w->udead = us;
}

/* No new attempts; closed once those in flight end. */
static void dnsp_usock_retire(struct dnsp_worker *w, struct dnsp_usock *us)
{
	us->pool = NULL;
	if (!us->inflight)
		dnsp_usock_kill(w, us);
}

/* An ICMP error (port unreachable) on the socket: every attempt on it
 * went to its upstream, which refused; they fail over at once. */
static void dnsp_usock_refused(struct dnsp_worker *w, struct dnsp_usock *us)
{
	struct dnsp_pool *pool = us->pool;

	for (unsigned int j = 0; pool && j < pool->size; j++)
		if (pool->ring[j] == us)
			pool->ring[j] = NULL;
	dnsp_usock_retire(w, us);
	dnsp_mark(us->ws, us->up, false);
	while (us->slots) {
		DNSP_COUNT(w, upstream_errors);
		dnsp_exch_failover(w, us->slots); /* takes it off us */
	}
}

/* Answers, DNSP_UP_BATCH per read; each goes to the attempt on this
 * socket with its id, if there is one. Read once per event: the queued
 * answers point into the buffers until the flush. */
static void dnsp_usock_watch(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct dnsp_usock *us = ctx;
	struct dnsp_worker *w = us->w;
	int n;

	(void)l;
	(void)events;
	for (int k = 0; k < DNSP_UP_BATCH; k++) {
		w->uprm[k].msg_hdr.msg_namelen = sizeof(w->upfrom[k]);
		w->uprm[k].msg_hdr.msg_flags = 0;
	}
	n = recvmmsg(fd, w->uprm, DNSP_UP_BATCH, MSG_DONTWAIT, NULL);
	if (n < 0 && errno == ECONNREFUSED)
		dnsp_usock_refused(w, us);
	for (int k = 0; k < n; k++) {
		const struct msghdr *mh = &w->uprm[k].msg_hdr;
		__u8 *msg = w->uprv[k].iov_base;
		size_t len = w->uprm[k].msg_len;
		struct dnsp_slot *s;

		if (len < FW_DNS_HDR_LEN)
			continue;
		for (s = us->slots; s && s->up_id != get16(msg); s = s->unext)
			;
		if (s)
			dnsp_udp_up_datagram(w, s, msg, len, &w->upfrom[k], mh->msg_namelen,
					     mh->msg_flags);
	}
	dnsp_tx_flush(w);
}

static int dnsp_usock_open(struct dnsp_worker *w, struct dnsp_wset *ws, unsigned int i,
			   struct dnsp_pool *pool, struct dnsp_usock **out)
{
	const struct fw_dnsp_upstream *u = &ws->set->u[i];
	struct dnsp_usock *us = calloc(1, sizeof(*us));
	__u16 r = 0;
	int err;

	if (!us)
		return -ENOMEM;
	/* connect() binds it: a random port of ip_local_port_range */
	us->fd = socket(u->addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (us->fd < 0) {
		err = -errno;
		free(us);
		return err;
	}
	if (connect(us->fd, (const struct sockaddr *)&u->addr, u->len)) {
		err = -errno;
		goto fail;
	}
	err = fw_loop_watch_add(w->loop, us->fd, EPOLLIN, dnsp_usock_watch, us, &us->watch);
	if (err)
		goto fail;
	err = dnsp_rand16(w, &r);
	if (err) {
		fw_loop_watch_del(w->loop, us->watch);
		goto fail;
	}
	us->w = w;
	us->pool = pool;
	us->ws = ws;
	us->up = i;
	us->max_uses = DNSP_POOL_USES / 2 + r % (DNSP_POOL_USES / 2 + 1);
	us->opened_ns = dnsp_now(w);
	*out = us;
	return 0;
fail:
	close(us->fd);
	free(us);
	return err;
}

static bool dnsp_usock_spent(const struct dnsp_worker *w, const struct dnsp_usock *us)
{
	return us->uses >= us->max_uses || us->inflight >= DNSP_POOL_INFLIGHT ||
	       dnsp_now(w) - us->opened_ns >= DNSP_POOL_AGE_NS;
}

/* A socket for the next attempt to upstream i: the one this round's
 * attempts use, else one of the least recently used at random, or a new
 * one in its place when it is spent. */
static int dnsp_pool_pick(struct dnsp_worker *w, struct dnsp_wset *ws, unsigned int i,
			  struct dnsp_usock **out)
{
	struct dnsp_pool *pool = ws->pool[i];
	unsigned int k, j, pick;
	struct dnsp_usock *us;
	__u16 r;
	int err;

	if (!pool) {
		pool = calloc(1, sizeof(*pool) + w->pool_size * sizeof(pool->ring[0]));
		if (!pool)
			return -ENOMEM;
		pool->size = w->pool_size;
		ws->pool[i] = pool;
	}
	/* seq first: a socket is freed only after a flush */
	if (pool->round && pool->round_seq == w->tx_seq && pool->round->pool == pool &&
	    !dnsp_usock_spent(w, pool->round)) {
		*out = pool->round;
		return 0;
	}
	err = dnsp_rand16(w, &r);
	if (err)
		return err;
	pick = pool->size < DNSP_POOL_PICK ? pool->size : DNSP_POOL_PICK;
	k = pool->cursor;
	j = (k + r % pick) % pool->size;
	us = pool->ring[j];
	pool->ring[j] = pool->ring[k];
	pool->ring[k] = us;
	pool->cursor = (k + 1) % pool->size;
	if (us && dnsp_usock_spent(w, us)) {
		pool->ring[k] = NULL;
		dnsp_usock_retire(w, us);
		us = NULL;
	}
	if (!us) {
		err = dnsp_usock_open(w, ws, i, pool, &us);
		if (err)
			return err;
		pool->ring[k] = us;
	}
	pool->round = us;
	pool->round_seq = w->tx_seq;
	*out = us;
	return 0;
}

static bool dnsp_usock_has_id(const struct dnsp_usock *us, __u16 id)
{
	for (const struct dnsp_slot *o = us->slots; o; o = o->unext)
		if (o->up_id == id)
			return true;
	return false;
}

int dnsp_pool_send(struct dnsp_worker *w, struct dnsp_slot *s, unsigned int i)
{
	struct dnsp_usock *us;
	int err = dnsp_pool_pick(w, s->ws, i, &us);

	if (err)
		return err;
	/* ids are unique per socket: an answer names one attempt */
	while (dnsp_usock_has_id(us, s->up_id))
		if (dnsp_rand16(w, &s->up_id))
			return -EAGAIN;
	us->uses++;
	us->inflight++;
	s->usock = us;
	s->uprev = NULL;
	s->unext = us->slots;
	if (us->slots)
		us->slots->uprev = s;
	us->slots = s;
	put16(s->qbuf, (__u16)s->qlen);
	put16(s->qbuf + 2, s->up_id);
	/* qbuf stays put until the flush: the slot waits for this answer */
	dnsp_tx_add(w, us->fd, NULL, s->qbuf + 2, s->qlen, false);
	return 0;
}

void dnsp_pool_detach(struct dnsp_worker *w, struct dnsp_slot *s)
{
	struct dnsp_usock *us = s->usock;

	if (s->uprev)
		s->uprev->unext = s->unext;
	else
		us->slots = s->unext;
	if (s->unext)
		s->unext->uprev = s->uprev;
	s->usock = NULL;
	s->uprev = s->unext = NULL;
	if (!--us->inflight && !us->pool && us->watch)
		dnsp_usock_kill(w, us);
}

void dnsp_pool_free(struct dnsp_worker *w, struct dnsp_pool *pool)
{
	if (!pool)
		return;
	for (unsigned int j = 0; j < pool->size; j++)
		if (pool->ring[j])
			dnsp_usock_retire(w, pool->ring[j]);
	free(pool);
}

void dnsp_pool_reap(struct dnsp_worker *w)
{
	while (w->udead) {
		struct dnsp_usock *us = w->udead;

		w->udead = us->dnext;
		close(us->fd);
		free(us);
	}
}

/* Sockets past their age leave the pool even when no attempt comes to
 * spend them: a port stays open only while it is in use. */
__u64 dnsp_pool_sweep(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct dnsp_worker *w = ctx;

	(void)l;
	(void)t;
	for (unsigned int i = 0; w->ws && i < FW_DNSP_MAX_UPSTREAMS; i++) {
		struct dnsp_pool *pool = w->ws->pool[i];

		for (unsigned int j = 0; pool && j < pool->size; j++) {
			struct dnsp_usock *us = pool->ring[j];

			if (us && dnsp_now(w) - us->opened_ns >= DNSP_POOL_AGE_NS) {
				pool->ring[j] = NULL;
				dnsp_usock_retire(w, us);
			}
		}
	}
	return DNSP_POOL_SWEEP_NS;
}
/* ---- upstream TCP (for TCP clients) ---- */

/* A whole message read from an upstream TCP connection (s->ans). One
 * exchange per connection: anything but our answer is a failure. */
void dnsp_tcp_up_answer(struct dnsp_worker *w, struct dnsp_slot *s)
{
	enum dnsp_verdict v = DNSP_WAIT;

	if (get16(s->ans) == s->up_id)
		v = dnsp_exch_answer(w, s, s->ans, s->ans_len, s->ans_len);
	if (v == DNSP_DONE) {
		dnsp_slot_put(w, s);
		return;
	}
	if (v == DNSP_WAIT) /* not the answer: NEXT was counted already */
		DNSP_COUNT(w, upstream_errors);
	dnsp_exch_failover(w, s);
}

static void dnsp_up_event(struct dnsp_worker *w, struct dnsp_slot *s, __u32 events)
{
	ssize_t n;

	if (!s->used || s->up_fd < 0)
		return;
	/* while connecting, SO_ERROR says why */
	if ((events & EPOLLERR) && s->io != DNSP_IO_CONNECT)
		goto fail;
	if (s->io == DNSP_IO_CONNECT) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (getsockopt(s->up_fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
			if (soerr == ECONNREFUSED)
				dnsp_mark(s->ws, s->order[s->tried], false);
			goto fail;
		}
		s->io = DNSP_IO_WRITE;
		s->io_off = 0;
	}
	if (s->io == DNSP_IO_WRITE) {
		n = send(s->up_fd, s->qbuf + s->io_off, s->qlen + 2 - s->io_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			goto fail;
		}
		s->io_off += (size_t)n;
		if (s->io_off < s->qlen + 2)
			return;
		s->io = DNSP_IO_READ;
		s->io_off = 0;
		if (fw_loop_watch_mod(w->loop, s->up_watch, EPOLLIN))
			goto fail;
		return;
	}
	if (s->io != DNSP_IO_READ)
		return;
	for (;;) {
		if (s->io_off < 2) {
			n = recv(s->up_fd, s->lenbuf + s->io_off, 2 - s->io_off, MSG_DONTWAIT);
		} else {
			n = recv(s->up_fd, s->ans + (s->io_off - 2), s->ans_len - (s->io_off - 2),
				 MSG_DONTWAIT);
		}
		if (n == 0)
			goto fail;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			goto fail;
		}
		s->io_off += (size_t)n;
		if (s->io_off == 2) {
			s->ans_len = get16(s->lenbuf);
			if (s->ans_len < FW_DNS_HDR_LEN)
				goto fail;
			s->ans = malloc(s->ans_len);
			if (!s->ans)
				goto fail;
		}
		if (s->io_off > 2 && s->io_off == s->ans_len + 2)
			break;
	}
	dnsp_tcp_up_answer(w, s);
	return;
fail:
	DNSP_COUNT(w, upstream_errors);
	dnsp_exch_failover(w, s);
}

void dnsp_up_watch(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct dnsp_slot *s = ctx;
	struct dnsp_worker *w = s->w;

	(void)l;
	(void)fd;
	dnsp_up_event(w, s, events);
	dnsp_tx_flush(w);
}
/* ---- upstream addresses ---- */

static int dnsp_parse_port(const char *s, __u16 *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (!v || v > 65535)
		return -EINVAL;
	*port = (__u16)v;
	return 0;
}

/* "2001:db8::1" or "fe80::1%eth0" (a resolv.conf may carry a scope) */
static int dnsp_parse_v6(char *s, struct sockaddr_in6 *a)
{
	char *pct = strchr(s, '%');

	if (pct) {
		*pct++ = '\0';
		if (!*pct)
			return -EINVAL;
		a->sin6_scope_id = if_nametoindex(pct);
		if (!a->sin6_scope_id) {
			__u16 idx;

			if (dnsp_parse_port(pct, &idx))
				return -EINVAL;
			a->sin6_scope_id = idx;
		}
	}
	return inet_pton(AF_INET6, s, &a->sin6_addr) == 1 ? 0 : -EINVAL;
}

int fw_dnsp_upstream_parse(const char *s, struct fw_dnsp_upstream *u)
{
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 8];
	__u16 port = 53;
	char *colon;

	if (!s || !u || strlen(s) >= sizeof(buf))
		return -EINVAL;
	memset(u, 0, sizeof(*u));
	strcpy(buf, s);
	if (buf[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&u->addr;
		char *end = strchr(buf, ']');

		if (!end || (end[1] && (end[1] != ':' || dnsp_parse_port(end + 2, &port))))
			return -EINVAL;
		*end = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		if (dnsp_parse_v6(buf + 1, a))
			return -EINVAL;
		u->len = sizeof(*a);
		return 0;
	}
	colon = strchr(buf, ':');
	if (colon && strchr(colon + 1, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&u->addr;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		if (dnsp_parse_v6(buf, a))
			return -EINVAL;
		u->len = sizeof(*a);
		return 0;
	}
	if (colon) {
		*colon = '\0';
		if (dnsp_parse_port(colon + 1, &port))
			return -EINVAL;
	}
	{
		struct sockaddr_in *a = (struct sockaddr_in *)&u->addr;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		if (inet_pton(AF_INET, buf, &a->sin_addr) != 1)
			return -EINVAL;
		u->len = sizeof(*a);
	}
	return 0;
}

static bool dnsp_upstream_loopback(const struct fw_dnsp_upstream *u)
{
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&u->addr;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&u->addr;

	if (u->addr.ss_family == AF_INET)
		return (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	if (IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr))
		return true;
	return IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr) && a6->sin6_addr.s6_addr[12] == 127;
}

int fw_dnsp_upstreams_from_resolv(const char *path, struct fw_dnsp_upstream *u, size_t cap,
				  size_t *n)
{
	struct fw_dnsp_upstream far[FW_DNSP_MAX_UPSTREAMS], lo[FW_DNSP_MAX_UPSTREAMS];
	size_t nfar = 0, nlo = 0, max;
	char line[512];
	FILE *f;

	if (!path || !u || !n || !cap)
		return -EINVAL;
	max = cap < FW_DNSP_MAX_UPSTREAMS ? cap : FW_DNSP_MAX_UPSTREAMS;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct fw_dnsp_upstream one;
		char *save = NULL, *key, *val;
		bool whole = strchr(line, '\n') || feof(f);

		/* a line longer than the buffer: skip its rest, use none of it */
		if (!whole) {
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			continue;
		}
		key = strtok_r(line, " \t\r\n", &save);
		if (!key || key[0] == '#' || key[0] == ';' || strcmp(key, "nameserver"))
			continue;
		val = strtok_r(NULL, " \t\r\n#;", &save);
		if (!val || fw_dnsp_upstream_parse(val, &one))
			continue;
		if (dnsp_upstream_loopback(&one)) {
			if (nlo < max)
				lo[nlo++] = one;
		} else if (nfar < max) {
			far[nfar++] = one;
		}
	}
	fclose(f);
	*n = 0;
	for (size_t i = 0; i < nfar && *n < max; i++)
		u[(*n)++] = far[i];
	for (size_t i = 0; i < nlo && *n < max; i++)
		u[(*n)++] = lo[i];
	return *n ? 0 : -ENOENT;
}

void fw_dnsp_upstream_str(const struct fw_dnsp_upstream *u, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!buf || !len)
		return;
	if (u && u->addr.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)&u->addr;

		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s->sin_port));
	} else if (u && u->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&u->addr;

		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

void fw_dnsp_upstreams_build(const struct fw_dnsp_addr *cfg, size_t ncfg, const char *resolv_conf,
			     struct fw_dnsp_upstream *u, size_t *n)
{
	char text[FW_ADDR_STRLEN];

	*n = 0;
	for (size_t i = 0; i < ncfg && i < FW_DNSP_MAX_UPSTREAMS; i++) {
		const struct fw_dnsp_addr *c = &cfg[i];
		struct fw_dnsp_upstream *o = &u[(*n)++];

		memset(o, 0, sizeof(*o));
		if (fw_addr_family(&c->ip) == FW_FAM_V4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(c->port);
			memcpy(&sin->sin_addr, &c->ip.b[12], 4);
			o->len = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->addr;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(c->port);
			memcpy(&sin6->sin6_addr, c->ip.b, 16);
			o->len = sizeof(*sin6);
		}
	}
	if (*n)
		return;
	if (fw_dnsp_upstreams_from_resolv(resolv_conf, u, FW_DNSP_MAX_UPSTREAMS, n)) {
		fw_warn("dns: no upstreams configured and none in %s: every allowed query gets "
			"SERVFAIL",
			resolv_conf);
		*n = 0;
		return;
	}
	for (size_t i = 0; i < *n; i++) {
		fw_dnsp_upstream_str(&u[i], text, sizeof(text));
		fw_debug("dns: upstream %s from %s", text, resolv_conf);
	}
}
