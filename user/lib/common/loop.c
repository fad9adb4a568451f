// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The event loop (loop.h).
 *
 * Timers are a binary min-heap of pointers ordered by (deadline, arming
 * sequence), each timer holding its own position, so arming, moving and
 * cancelling are O(log n) and equal deadlines run in the order they were
 * armed. A round runs only the timers armed before it started: one that
 * re-arms itself with a zero delay runs in the next round, after the fds.
 *
 * Watches are allocated by the loop. A removed watch leaves epoll at once
 * but its memory lives until the round's events are all dispatched, so an
 * event of the same batch that points at it is recognised and dropped. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/loop.h"

#define LOOP_EVENTS	64  /* epoll events per wait */
#define LOOP_FREE_CACHE 256 /* removed watches kept for reuse */

struct fw_loop_watch {
	int fd;
	bool dead;
	fw_loop_fd_fn fn;
	void *ctx;
	struct fw_loop_watch *prev, *next; /* live list; next also links dead and free */
};

struct loop_once {
	struct fw_loop_timer t;
	void (*fn)(struct fw_loop *l, void *ctx);
	void *ctx;
	struct loop_once *prev, *next;
};

struct fw_loop {
	int epfd;
	bool stop; /* atomic */
	__u64 now;
	__u64 seq;

	struct fw_loop_timer **heap;
	unsigned int nheap, heap_cap;

	struct fw_loop_watch *live, *dead, *free;
	unsigned int nfree;
	struct fw_loop_watch *wake;
	int wake_fd;

	struct fw_loop_watch *sig;
	int sig_fd;
	void (*sig_fn)(struct fw_loop *l, int signo, void *ctx);
	void *sig_ctx;

	struct loop_once *onces;

	fw_loop_hook_fn before;
	void *before_ctx;

	__u64 turned; /* atomic: the loop's now when its last round began */
	struct fw_loop_timer beat;
	__u64 beat_ns;
};

/* ---- timers ---- */

static bool timer_before(const struct fw_loop_timer *a, const struct fw_loop_timer *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_set(struct fw_loop *l, unsigned int i, struct fw_loop_timer *t)
{
	l->heap[i] = t;
	t->idx = i + 1;
}

static void heap_up(struct fw_loop *l, unsigned int i)
{
	struct fw_loop_timer *t = l->heap[i];

	while (i) {
		unsigned int parent = (i - 1) / 2;

		if (!timer_before(t, l->heap[parent]))
			break;
		heap_set(l, i, l->heap[parent]);
		i = parent;
	}
	heap_set(l, i, t);
}

static void heap_down(struct fw_loop *l, unsigned int i)
{
	struct fw_loop_timer *t = l->heap[i];

	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= l->nheap)
			break;
		if (c + 1 < l->nheap && timer_before(l->heap[c + 1], l->heap[c]))
			c++;
		if (!timer_before(l->heap[c], t))
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

void fw_loop_timer_init(struct fw_loop_timer *t, fw_loop_timer_fn fn, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->ctx = ctx;
}

void fw_loop_timer_cancel(struct fw_loop *l, struct fw_loop_timer *t)
{
	unsigned int i;

	if (!t->idx)
		return;
	i = t->idx - 1;
	t->idx = 0;
	if (--l->nheap == i)
		return;
	{
		struct fw_loop_timer *last = l->heap[l->nheap];

		heap_set(l, i, last);
		heap_down(l, i);
		heap_up(l, last->idx - 1);
	}
}

/* The heap grows by doubling. Arming cannot fail (it is on every query's
 * path, and a timeout that never comes would leak the query): without
 * memory for the heap the process aborts. */
static void heap_reserve(struct fw_loop *l)
{
	struct fw_loop_timer **h;
	unsigned int cap;

	if (l->nheap < l->heap_cap)
		return;
	cap = l->heap_cap ? l->heap_cap * 2 : 64;
	h = realloc(l->heap, (size_t)cap * sizeof(*h));
	if (!h)
		abort();
	l->heap = h;
	l->heap_cap = cap;
}

void fw_loop_timer_arm(struct fw_loop *l, struct fw_loop_timer *t, __u64 delay_ns)
{
	fw_loop_timer_cancel(l, t);
	heap_reserve(l);
	t->deadline = delay_ns > UINT64_MAX - l->now ? UINT64_MAX : l->now + delay_ns;
	t->seq = l->seq++;
	heap_set(l, l->nheap, t);
	l->nheap++;
	heap_up(l, l->nheap - 1);
}

__u64 fw_loop_next_deadline(const struct fw_loop *l)
{
	return l->nheap ? l->heap[0]->deadline : UINT64_MAX;
}

static unsigned int run_timers(struct fw_loop *l)
{
	__u64 limit = l->seq;
	unsigned int ran = 0;

	while (l->nheap && !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		struct fw_loop_timer *t = l->heap[0];
		__u64 next;

		if (t->deadline > l->now || t->seq >= limit)
			break;
		fw_loop_timer_cancel(l, t);
		ran++;
		next = t->fn(l, t, t->ctx);
		if (next)
			fw_loop_timer_arm(l, t, next);
	}
	return ran;
}

unsigned int fw_loop_expire(struct fw_loop *l, __u64 now)
{
	if (now > l->now)
		l->now = now;
	return run_timers(l);
}

static __u64 once_fire(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct loop_once *o = ctx;

	(void)t;
	if (o->prev)
		o->prev->next = o->next;
	else
		l->onces = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->fn(l, o->ctx);
	free(o);
	return 0;
}

int fw_loop_once(struct fw_loop *l, __u64 delay_ns, void (*fn)(struct fw_loop *l, void *ctx),
		 void *ctx)
{
	struct loop_once *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->fn = fn;
	o->ctx = ctx;
	o->next = l->onces;
	if (l->onces)
		l->onces->prev = o;
	l->onces = o;
	fw_loop_timer_init(&o->t, once_fire, o);
	fw_loop_timer_arm(l, &o->t, delay_ns);
	return 0;
}

/* ---- watches ---- */

int fw_loop_watch_add(struct fw_loop *l, int fd, __u32 events, fw_loop_fd_fn fn, void *ctx,
		      struct fw_loop_watch **out)
{
	struct epoll_event ev = {.events = events};
	struct fw_loop_watch *w = l->free;

	if (w) {
		l->free = w->next;
		l->nfree--;
	} else {
		w = malloc(sizeof(*w));
		if (!w)
			return -ENOMEM;
	}
	w->fd = fd;
	w->dead = false;
	w->fn = fn;
	w->ctx = ctx;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = -errno;

		free(w);
		return err;
	}
	w->prev = NULL;
	w->next = l->live;
	if (l->live)
		l->live->prev = w;
	l->live = w;
	if (out)
		*out = w;
	return 0;
}

int fw_loop_watch_mod(struct fw_loop *l, struct fw_loop_watch *w, __u32 events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	if (w->dead)
		return -ENOENT;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) ? -errno : 0;
}

void fw_loop_watch_del(struct fw_loop *l, struct fw_loop_watch *w)
{
	if (!w || w->dead)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	if (w->prev)
		w->prev->next = w->next;
	else
		l->live = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = NULL;
	w->next = l->dead;
	l->dead = w;
}

/* After a round's events: nothing points at the removed watches now. */
static void reap_dead(struct fw_loop *l)
{
	while (l->dead) {
		struct fw_loop_watch *w = l->dead;

		l->dead = w->next;
		if (l->nfree < LOOP_FREE_CACHE) {
			w->next = l->free;
			l->free = w;
			l->nfree++;
		} else {
			free(w);
		}
	}
}

static void free_list(struct fw_loop_watch *w)
{
	while (w) {
		struct fw_loop_watch *next = w->next;

		free(w);
		w = next;
	}
}

static void on_wake(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	__u64 v;

	(void)l;
	(void)events;
	(void)ctx;
	if (read(fd, &v, sizeof(v)) < 0)
		return; /* already drained */
}

static void on_signal(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)ctx;
	while (read(fd, &si, sizeof(si)) == sizeof(si))
		l->sig_fn(l, (int)si.ssi_signo, l->sig_ctx);
}

int fw_loop_signals(struct fw_loop *l, const sigset_t *mask,
		    void (*fn)(struct fw_loop *l, int signo, void *ctx), void *ctx)
{
	int fd, err;

	if (l->sig_fd >= 0)
		return -EBUSY;
	if (sigprocmask(SIG_BLOCK, mask, NULL))
		return -errno;
	fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	l->sig_fn = fn;
	l->sig_ctx = ctx;
	err = fw_loop_watch_add(l, fd, EPOLLIN, on_signal, NULL, &l->sig);
	if (err) {
		close(fd);
		return err;
	}
	l->sig_fd = fd;
	return 0;
}

/* ---- the loop ---- */

int fw_loop_new(struct fw_loop **out)
{
	struct fw_loop *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->sig_fd = -1;
	l->now = fw_now_ns();
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->epfd < 0 || l->wake_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = fw_loop_watch_add(l, l->wake_fd, EPOLLIN, on_wake, NULL, &l->wake);
	if (err)
		goto fail;
	*out = l;
	return 0;
fail:
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l);
	return err;
}

void fw_loop_free(struct fw_loop *l)
{
	if (!l)
		return;
	while (l->onces) {
		struct loop_once *o = l->onces;

		l->onces = o->next;
		free(o);
	}
	free_list(l->live);
	free_list(l->dead);
	free_list(l->free);
	if (l->sig_fd >= 0)
		close(l->sig_fd);
	close(l->wake_fd);
	close(l->epfd);
	free(l->heap);
	free(l);
}

void fw_loop_wake(struct fw_loop *l)
{
	__u64 one = 1;

	if (write(l->wake_fd, &one, sizeof(one)) < 0)
		return; /* the counter is non-zero already: it wakes anyway */
}

void fw_loop_stop(struct fw_loop *l)
{
	__atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
	fw_loop_wake(l);
}

bool fw_loop_stopped(struct fw_loop *l)
{
	return __atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
}

__u64 fw_loop_now(const struct fw_loop *l)
{
	return l->now;
}

void fw_loop_set_before_sleep(struct fw_loop *l, fw_loop_hook_fn fn, void *ctx)
{
	l->before = fn;
	l->before_ctx = ctx;
}

static int wait_ms(const struct fw_loop *l)
{
	__u64 d, now;

	if (!l->nheap)
		return -1;
	now = fw_now_ns();
	if (l->heap[0]->deadline <= now)
		return 0;
	d = l->heap[0]->deadline - now;
	if (d / FW_NSEC_PER_MSEC >= INT_MAX)
		return INT_MAX;
	return (int)((d + FW_NSEC_PER_MSEC - 1) / FW_NSEC_PER_MSEC);
}

static void advance(struct fw_loop *l)
{
	__u64 now = fw_now_ns();

	if (now > l->now)
		l->now = now;
}

static __u64 beat(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	(void)t;
	(void)ctx;
	return l->beat_ns; /* the wake-up is the beat: the round stamps turned */
}

void fw_loop_heartbeat(struct fw_loop *l, __u64 interval_ns)
{
	l->beat_ns = interval_ns;
	if (!interval_ns) {
		fw_loop_timer_cancel(l, &l->beat);
		return;
	}
	fw_loop_timer_init(&l->beat, beat, NULL);
	fw_loop_timer_arm(l, &l->beat, interval_ns);
}

__u64 fw_loop_turned(const struct fw_loop *l)
{
	return __atomic_load_n(&l->turned, __ATOMIC_RELAXED);
}

int fw_loop_run(struct fw_loop *l)
{
	struct epoll_event evs[LOOP_EVENTS];
	int err = 0;

	while (!fw_loop_stopped(l)) {
		int n;

		advance(l);
		__atomic_store_n(&l->turned, l->now, __ATOMIC_RELAXED);
		run_timers(l);
		if (l->before && !fw_loop_stopped(l))
			l->before(l, l->before_ctx);
		if (fw_loop_stopped(l))
			break;
		n = epoll_wait(l->epfd, evs, LOOP_EVENTS, wait_ms(l));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		advance(l);
		for (int i = 0; i < n; i++) {
			struct fw_loop_watch *w = evs[i].data.ptr;

			if (!w->dead)
				w->fn(l, w->fd, evs[i].events, w->ctx);
		}
		reap_dead(l);
	}
	__atomic_store_n(&l->stop, false, __ATOMIC_RELEASE);
	return err;
}
