// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The monitor socket (monitor.h). Publishing formats an event once, as a
 * reference-counted line, and queues it to each reader whose filter takes
 * it, under one lock that is never held across a blocking call; the loop
 * thread is woken through an eventfd and writes the queues out with
 * non-blocking sends, waiting for EPOLLOUT on a reader that is behind. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "monitor.h"

struct mon_line {
	unsigned int refs; /* atomic: a reader being freed drops its lines unlocked */
	size_t len;
	char text[];
};

struct mon_reader {
	struct mon_reader *next;
	struct fw_monitor *m;
	int fd;
	struct fw_loop_watch *w;
	bool active;   /* its request was read: events flow */
	bool want_out; /* EPOLLOUT armed */
	bool dead;
	struct fw_mon_filter f;
	char req[FW_MON_REQ_MAX + 1];
	size_t reqlen;
	/* the queue: a ring of qcap lines, the first sent up to off */
	struct mon_line **q;
	size_t qhead, qlen, off;
	__u64 lost; /* dropped since the reader was last told */
};

struct fw_monitor {
	struct fw_loop *loop;
	int lfd, efd;
	struct fw_loop_watch *lw, *ew;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	ino_t ino; /* of the socket we bound: stop unlinks only that one */
	size_t qcap;
	pthread_mutex_t lock;
	struct mon_reader *readers; /* under lock */
	unsigned int kinds;	    /* union of the active readers' kinds; atomic */
	__u64 nreaders;		    /* atomic */
	__u64 dropped;		    /* atomic */
};

static struct mon_line *line_new(char *text, size_t len)
{
	struct mon_line *l = malloc(sizeof(*l) + len);

	if (l) {
		l->refs = 1;
		l->len = len;
		memcpy(l->text, text, len);
	}
	free(text);
	return l;
}

static void line_put(struct mon_line *l)
{
	if (l && __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(l);
}

static void kick(struct fw_monitor *m)
{
	__u64 one = 1;

	/* a full counter still wakes the loop: the write may fail */
	if (write(m->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fw_debug("monitor: eventfd write: %s", strerror(errno));
}

/* lock held */
static bool push(struct mon_reader *r, struct mon_line *l)
{
	if (r->qlen == r->m->qcap)
		return false;
	__atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
	r->q[(r->qhead + r->qlen++) % r->m->qcap] = l;
	return true;
}

/* lock held: tells r how many it lost, once there is room for the line */
static void push_lost(struct mon_reader *r)
{
	struct mon_line *l;
	size_t len = 0;
	char *text;

	if (!r->lost || r->qlen == r->m->qcap)
		return;
	text = fw_mon_lost_json(r->lost, &len);
	l = text ? line_new(text, len) : NULL;
	if (l && push(r, l))
		r->lost = 0;
	line_put(l);
}

static void drain(struct mon_reader *r);

/* lock held */
static void recompute_kinds(struct fw_monitor *m)
{
	unsigned int k = 0;

	for (struct mon_reader *r = m->readers; r; r = r->next)
		if (r->active && !r->dead)
			k |= r->f.kinds ? r->f.kinds : FW_MON_ALL;
	__atomic_store_n(&m->kinds, k, __ATOMIC_RELAXED);
}

bool fw_monitor_wants(const struct fw_monitor *m, enum fw_mon_kind kind)
{
	return m && (__atomic_load_n(&m->kinds, __ATOMIC_RELAXED) & kind);
}

void fw_monitor_publish(struct fw_monitor *m, const struct fw_mon_event *ev)
{
	struct mon_line *l = NULL;
	bool queued = false;

	if (!fw_monitor_wants(m, ev->kind))
		return;
	pthread_mutex_lock(&m->lock);
	for (struct mon_reader *r = m->readers; r; r = r->next) {
		if (!r->active || r->dead || !fw_mon_match(&r->f, ev))
			continue;
		if (!l) {
			size_t len = 0;
			char *text = fw_mon_event_json(ev, &len);

			l = text ? line_new(text, len) : NULL;
			if (!l)
				break;
		}
		/* full: what the socket takes now makes room */
		if (r->qlen == m->qcap)
			drain(r);
		push_lost(r);
		if (!r->lost && push(r, l)) {
			queued = true;
			continue;
		}
		r->lost++;
		__atomic_add_fetch(&m->dropped, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&m->lock);
	/* the loop thread sends the rest, arms EPOLLOUT, reaps the dead */
	if (queued || l)
		kick(m);
	line_put(l);
}

static void reader_free(struct fw_monitor *m, struct mon_reader *r)
{
	fw_loop_watch_del(m->loop, r->w);
	close(r->fd);
	for (size_t i = 0; i < r->qlen; i++)
		line_put(r->q[(r->qhead + i) % m->qcap]);
	free(r->q);
	free(r);
}

/* Loop thread: unlinks and frees the dead readers. */
static void reap(struct fw_monitor *m)
{
	struct mon_reader *dead = NULL;

	pthread_mutex_lock(&m->lock);
	for (struct mon_reader **pp = &m->readers; *pp;) {
		struct mon_reader *r = *pp;

		if (!r->dead) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = dead;
		dead = r;
		__atomic_sub_fetch(&m->nreaders, 1, __ATOMIC_RELAXED);
	}
	recompute_kinds(m);
	pthread_mutex_unlock(&m->lock);
	while (dead) {
		struct mon_reader *next = dead->next;

		reader_free(m, dead);
		dead = next;
	}
}

/* Lock held, any thread: sends what r has queued until the socket is full
 * (non-blocking, so a publisher never waits for a reader). */
static void drain(struct mon_reader *r)
{
	struct fw_monitor *m = r->m;

	if (r->dead)
		return;
	if (!r->qlen)
		push_lost(r);
	while (r->qlen) {
		struct mon_line *l = r->q[r->qhead];
		ssize_t n =
			send(r->fd, l->text + r->off, l->len - r->off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			r->dead = true;
			return;
		}
		r->off += (size_t)n;
		if (r->off < l->len)
			continue;
		line_put(l);
		r->off = 0;
		r->qhead = (r->qhead + 1) % m->qcap;
		r->qlen--;
		if (!r->qlen)
			push_lost(r);
	}
}

/* Loop thread, lock held: drains r and waits for EPOLLOUT while it is
 * behind. */
static void flush(struct mon_reader *r)
{
	bool want;

	drain(r);
	if (r->dead)
		return;
	want = r->qlen != 0;
	if (want != r->want_out &&
	    !fw_loop_watch_mod(r->m->loop, r->w, EPOLLIN | (want ? EPOLLOUT : 0)))
		r->want_out = want;
}

static void flush_all(struct fw_monitor *m)
{
	bool dead = false;

	pthread_mutex_lock(&m->lock);
	for (struct mon_reader *r = m->readers; r; r = r->next) {
		flush(r);
		dead |= r->dead;
	}
	pthread_mutex_unlock(&m->lock);
	if (dead)
		reap(m);
}

static void on_kick(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	__u64 v;

	(void)l;
	(void)events;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		fw_debug("monitor: eventfd read: %s", strerror(errno));
	flush_all(ctx);
}

/* A one-line answer before closing or streaming; the socket is new and
 * empty, so a short line fits. */
static void reply(int fd, const char *text)
{
	if (send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		fw_debug("monitor: reply: %s", strerror(errno));
}

static void refuse(struct mon_reader *r, const char *why)
{
	json_t *o;
	char *s;

	fw_warn("monitor: refused a reader: %s", why);
	o = json_pack("{s:s}", "error", why);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s) {
		reply(r->fd, s);
		reply(r->fd, "\n");
	}
	free(s);
	r->dead = true;
}

/* Loop thread: the request line, then anything else is read and ignored
 * (EOF closes). */
static void on_reader(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct mon_reader *r = ctx;
	struct fw_monitor *m = r->m;
	char buf[1024], err[160];
	ssize_t n;

	(void)l;
	if (events & EPOLLOUT) {
		pthread_mutex_lock(&m->lock);
		flush(r);
		pthread_mutex_unlock(&m->lock);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		char *dst = r->active ? buf : r->req + r->reqlen;
		size_t room = r->active ? sizeof(buf) : sizeof(r->req) - 1 - r->reqlen;

		n = room ? recv(fd, dst, room, MSG_DONTWAIT) : 0;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			n = -2;
		if (n == 0 || n == -1) {
			if (!room && !r->active)
				refuse(r, "request longer than 4096 bytes");
			pthread_mutex_lock(&m->lock);
			r->dead = true;
			pthread_mutex_unlock(&m->lock);
		} else if (n > 0 && !r->active) {
			char *nl;

			r->reqlen += (size_t)n;
			r->req[r->reqlen] = '\0';
			nl = memchr(r->req, '\n', r->reqlen);
			if (nl && fw_mon_request_parse(r->req, (size_t)(nl - r->req), &r->f, err,
						       sizeof(err))) {
				refuse(r, err);
			} else if (nl) {
				reply(fd, "{\"ok\":true}\n");
				pthread_mutex_lock(&m->lock);
				r->active = true;
				recompute_kinds(m);
				pthread_mutex_unlock(&m->lock);
				fw_info("monitor: a reader connected (%zu bytes of filters)",
					(size_t)(nl - r->req));
			} else if (r->reqlen == sizeof(r->req) - 1) {
				refuse(r, "request longer than 4096 bytes");
			}
		}
	}
	if (r->dead)
		reap(m);
}

static void on_accept(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_monitor *m = ctx;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct mon_reader *r;
	int cfd;

	(void)events;
	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	r = calloc(1, sizeof(*r));
	if (r)
		r->q = calloc(m->qcap, sizeof(*r->q));
	if (!r || !r->q) {
		free(r);
		close(cfd);
		return;
	}
	r->m = m;
	r->fd = cfd;
	/* the socket's mode keeps others out; this keeps them out too if the
	 * mode was widened, or between bind and chmod */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.uid != 0) {
		refuse(r, "fastwall monitor is for root only");
		close(cfd);
		free(r->q);
		free(r);
		return;
	}
	if (__atomic_load_n(&m->nreaders, __ATOMIC_RELAXED) >= FW_MON_MAX_READERS) {
		refuse(r, "too many readers");
		close(cfd);
		free(r->q);
		free(r);
		return;
	}
	if (fw_loop_watch_add(l, cfd, EPOLLIN, on_reader, r, &r->w)) {
		close(cfd);
		free(r->q);
		free(r);
		return;
	}
	pthread_mutex_lock(&m->lock);
	r->next = m->readers;
	m->readers = r;
	__atomic_add_fetch(&m->nreaders, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->lock);
}

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *c = dir + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int fw_monitor_start(struct fw_loop *loop, const char *path, size_t queue, struct fw_monitor **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fw_monitor *m;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path) || !queue)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->qcap = queue;
	m->lfd = m->efd = -1;
	pthread_mutex_init(&m->lock, NULL);
	snprintf(m->path, sizeof(m->path), "%s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	err = mkdir_parent(path);
	if (err) {
		fw_err("can't create the directory of %s: %s", path, strerror(-err));
		goto fail;
	}
	m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->efd < 0 || m->lfd < 0) {
		err = -errno;
		goto fail;
	}
	unlink(path);
	if (bind(m->lfd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0600) ||
	    listen(m->lfd, 16)) {
		err = -errno;
		fw_err("can't listen on %s: %s", path, strerror(-err));
		goto fail;
	}
	{
		struct stat st;

		if (!stat(path, &st))
			m->ino = st.st_ino;
	}
	err = fw_loop_watch_add(loop, m->efd, EPOLLIN, on_kick, m, &m->ew);
	if (!err)
		err = fw_loop_watch_add(loop, m->lfd, EPOLLIN, on_accept, m, &m->lw);
	if (err)
		goto fail;
	*out = m;
	return 0;
fail:
	fw_monitor_stop(m);
	return err;
}

void fw_monitor_stop(struct fw_monitor *m)
{
	if (!m)
		return;
	while (m->readers) {
		struct mon_reader *r = m->readers;

		m->readers = r->next;
		reader_free(m, r);
	}
	fw_loop_watch_del(m->loop, m->lw);
	fw_loop_watch_del(m->loop, m->ew);
	if (m->lfd >= 0) {
		struct stat st;

		close(m->lfd);
		/* another fastwalld may have taken the path since */
		if (m->ino && !stat(m->path, &st) && st.st_ino == m->ino)
			unlink(m->path);
	}
	if (m->efd >= 0)
		close(m->efd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void fw_monitor_get_stats(const struct fw_monitor *m, struct fw_monitor_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	out->readers = __atomic_load_n(&m->nreaders, __ATOMIC_RELAXED);
	out->dropped = __atomic_load_n(&m->dropped, __ATOMIC_RELAXED);
}
