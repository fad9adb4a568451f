// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The event loop: timers run in deadline order (equal deadlines in arming
 * order) and re-arm by their return value, cancel and removal inside a
 * callback are safe, a busy descriptor does not starve timers, stop works
 * from a callback, a signal and another thread. Order and counts only: no
 * assertion on how long anything took. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/loop.h"

#define MS FW_NSEC_PER_MSEC

struct rec {
	int order[64];
	int n;
};

struct tctx {
	struct rec *r;
	int id;
	int runs;		      /* how many times it ran */
	int again;		      /* re-arm this many times */
	__u64 every;		      /* by returning this */
	bool stop_after;	      /* stop the loop on its last run */
	struct fw_loop_timer *cancel; /* cancels this one when it runs */
};

static __u64 tfn(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct tctx *c = ctx;

	(void)t;
	c->r->order[c->r->n++] = c->id;
	c->runs++;
	if (c->cancel)
		fw_loop_timer_cancel(l, c->cancel);
	if (c->runs <= c->again)
		return c->every;
	if (c->stop_after)
		fw_loop_stop(l);
	return 0;
}

static struct fw_loop *new_loop(void)
{
	struct fw_loop *l = NULL;

	cr_assert_eq(fw_loop_new(&l), 0);
	return l;
}

Test(loop, timers_run_in_deadline_order, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct rec r = {0};
	struct tctx c[4] = {
		{.r = &r, .id = 0}, {.r = &r, .id = 1}, {.r = &r, .id = 2}, {.r = &r, .id = 3}};
	struct fw_loop_timer t[4];
	/* armed out of order; 1 and 3 share a deadline: armed first, run first */
	__u64 delay[4] = {3 * MS, 1 * MS, 0, 1 * MS};

	for (int i = 0; i < 4; i++) {
		fw_loop_timer_init(&t[i], tfn, &c[i]);
		fw_loop_timer_arm(l, &t[i], delay[i]);
	}
	c[0].stop_after = true;
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(r.n, 4);
	cr_assert_eq(r.order[0], 2);
	cr_assert_eq(r.order[1], 1);
	cr_assert_eq(r.order[2], 3);
	cr_assert_eq(r.order[3], 0);
	for (int i = 0; i < 4; i++)
		cr_assert_not(fw_loop_timer_armed(&t[i]));
	fw_loop_free(l);
}

Test(loop, return_value_rearms, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct rec r = {0};
	struct tctx a = {.r = &r, .id = 1, .again = 4, .every = 1 * MS};
	struct tctx b = {.r = &r, .id = 2, .stop_after = true};
	struct fw_loop_timer ta, tb;

	fw_loop_timer_init(&ta, tfn, &a);
	fw_loop_timer_init(&tb, tfn, &b);
	fw_loop_timer_arm(l, &ta, 0);
	/* far past a's five runs (1 ms apart), whatever the scheduler does */
	fw_loop_timer_arm(l, &tb, 200 * MS);
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(a.runs, 5, "a ran %d times", a.runs);
	cr_assert_eq(b.runs, 1);
	cr_assert_eq(r.order[5], 2);
	cr_assert_not(fw_loop_timer_armed(&ta)); /* its last run returned 0 */
	fw_loop_free(l);
}

Test(loop, cancel_before_and_inside_a_callback, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct rec r = {0};
	struct tctx c[3] = {
		{.r = &r, .id = 0}, {.r = &r, .id = 1}, {.r = &r, .id = 2, .stop_after = true}};
	struct fw_loop_timer t[3];

	for (int i = 0; i < 3; i++)
		fw_loop_timer_init(&t[i], tfn, &c[i]);
	fw_loop_timer_arm(l, &t[0], 1 * MS);
	fw_loop_timer_arm(l, &t[1], 2 * MS);
	fw_loop_timer_arm(l, &t[2], 3 * MS);
	c[0].cancel = &t[1]; /* 0 cancels 1, due after it */
	fw_loop_timer_cancel(l, &t[2]);
	fw_loop_timer_cancel(l, &t[2]); /* twice: nothing */
	cr_assert_not(fw_loop_timer_armed(&t[2]));
	fw_loop_timer_arm(l, &t[2], 5 * MS); /* moved, not doubled */
	fw_loop_timer_arm(l, &t[2], 4 * MS);
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.order[0], 0);
	cr_assert_eq(r.order[1], 2);
	cr_assert_eq(c[1].runs, 0);
	cr_assert_eq(c[2].runs, 1);
	fw_loop_free(l);
}

Test(loop, many_timers_in_order, .timeout = 30)
{
	enum { N = 10000 };
	struct fw_loop *l = new_loop();
	struct fw_loop_timer *t = calloc(N, sizeof(*t));
	unsigned int *perm = calloc(N, sizeof(*perm));
	unsigned int ran;
	__u64 last = 0, base;

	cr_assert(t && perm);
	for (unsigned int i = 0; i < N; i++)
		perm[i] = i;
	srand(7);
	for (unsigned int i = N - 1; i > 0; i--) {
		unsigned int j = (unsigned int)rand() % (i + 1), x = perm[i];

		perm[i] = perm[j];
		perm[j] = x;
	}
	base = fw_loop_now(l);
	for (unsigned int i = 0; i < N; i++) {
		fw_loop_timer_init(&t[perm[i]], NULL, NULL);
		/* several share a deadline */
		fw_loop_timer_arm(l, &t[perm[i]], (perm[i] / 4 + 1) * 1000);
	}
	/* every third cancelled, in an order unlike the heap's */
	for (unsigned int i = 0; i < N; i += 3)
		fw_loop_timer_cancel(l, &t[perm[i]]);
	for (ran = 0; fw_loop_next_deadline(l) != UINT64_MAX; ran++) {
		__u64 d = fw_loop_next_deadline(l);

		cr_assert_geq(d, last);
		last = d;
		/* pop one at a time through cancel, checking the heap's head */
		for (unsigned int i = 0; i < N; i++)
			if (fw_loop_timer_armed(&t[i]) && t[i].deadline == d) {
				cr_assert_eq(t[i].deadline, base + (i / 4 + 1) * 1000);
				fw_loop_timer_cancel(l, &t[i]);
				break;
			}
	}
	cr_assert_eq(ran, N - (N + 2) / 3);
	fw_loop_free(l);
	free(t);
	free(perm);
}

struct seqrec {
	struct fw_loop_timer *base;
	unsigned int *seen;
	unsigned int n;
};

static __u64 seqfn(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct seqrec *r = ctx;

	(void)l;
	r->seen[r->n++] = (unsigned int)(t - r->base);
	return 0;
}

Test(loop, many_timers_fire_in_order, .timeout = 30)
{
	enum { N = 10000 };
	struct fw_loop *l = new_loop();
	struct fw_loop_timer *t = calloc(N, sizeof(*t));
	struct seqrec r = {.base = t, .seen = calloc(N, sizeof(unsigned int))};
	__u64 base = fw_loop_now(l);

	cr_assert(t && r.seen);
	/* armed in a scrambled order (7919 is prime to N), timer i due at
	 * base + (i / 2 + 1) us: pairs share a deadline, and the one armed
	 * first runs first */
	for (unsigned int k = 0; k < N; k++) {
		unsigned int i = (k * 7919u) % N;

		fw_loop_timer_init(&t[i], seqfn, &r);
		fw_loop_timer_arm(l, &t[i], (__u64)(i / 2 + 1) * 1000);
	}
	/* half the time first: only the first half runs */
	cr_assert_eq(fw_loop_expire(l, base + (N / 4) * 1000), N / 2);
	cr_assert_eq(fw_loop_expire(l, base + (__u64)N * 1000), N / 2);
	cr_assert_eq(fw_loop_next_deadline(l), UINT64_MAX);
	cr_assert_eq(r.n, N);
	for (unsigned int k = 1; k < N; k++) {
		unsigned int a = r.seen[k - 1], b = r.seen[k];

		cr_assert_leq(a / 2, b / 2, "%u ran before %u", a, b);
		if (a / 2 == b / 2) /* same deadline: arming order */
			cr_assert_lt((a * 7679u) % N, (b * 7679u) % N, "%u, %u", a, b);
	}
	fw_loop_free(l);
	free(t);
	free(r.seen);
}

struct wctx {
	struct fw_loop_watch *self, *other;
	int other_fd[2];
	int runs;
};

/* Whichever of the two runs first removes the other, closes its pipe and
 * opens a new one, which may take the same descriptor numbers: the event
 * already queued for the removed watch must not reach anyone. */
static void wfn(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct wctx *c = ctx;
	char b;

	(void)events;
	c->runs++;
	cr_assert_eq(read(fd, &b, 1), 1);
	if (!c->other)
		return;
	fw_loop_watch_del(l, c->other);
	close(c->other_fd[0]);
	close(c->other_fd[1]);
	cr_assert_eq(pipe2(c->other_fd, O_NONBLOCK), 0);
	c->other = NULL;
	fw_loop_stop(l);
}

Test(loop, removing_another_watch_inside_a_callback, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct wctx a = {0}, b = {0};
	int pa[2], pb[2];

	cr_assert_eq(pipe2(pa, O_NONBLOCK), 0);
	cr_assert_eq(pipe2(pb, O_NONBLOCK), 0);
	cr_assert_eq(write(pa[1], "x", 1), 1);
	cr_assert_eq(write(pb[1], "x", 1), 1);
	cr_assert_eq(fw_loop_watch_add(l, pa[0], EPOLLIN, wfn, &a, &a.self), 0);
	cr_assert_eq(fw_loop_watch_add(l, pb[0], EPOLLIN, wfn, &b, &b.self), 0);
	a.other = b.self;
	a.other_fd[0] = pb[0];
	a.other_fd[1] = pb[1];
	b.other = a.self;
	b.other_fd[0] = pa[0];
	b.other_fd[1] = pa[1];
	/* both are readable: one wait returns both events */
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(a.runs + b.runs, 1, "a %d, b %d", a.runs, b.runs);
	fw_loop_free(l);
}

struct busy {
	int fd_runs, timer_runs;
};

static void busy_fd(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	(void)l;
	(void)fd;
	(void)events;
	((struct busy *)ctx)->fd_runs++; /* never drained: always ready */
}

static __u64 busy_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct busy *b = ctx;

	(void)t;
	if (++b->timer_runs == 3) {
		fw_loop_stop(l);
		return 0;
	}
	return 1 * MS;
}

Test(loop, timers_fire_while_an_fd_is_always_ready, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct busy b = {0};
	struct fw_loop_timer t;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(fw_loop_watch_add(l, p[0], EPOLLIN, busy_fd, &b, NULL), 0);
	fw_loop_timer_init(&t, busy_timer, &b);
	fw_loop_timer_arm(l, &t, 1 * MS);
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(b.timer_runs, 3);
	cr_assert_gt(b.fd_runs, 0);
	fw_loop_free(l);
	close(p[0]);
	close(p[1]);
}

struct sig {
	int signo, runs;
};

static void on_sig(struct fw_loop *l, int signo, void *ctx)
{
	struct sig *s = ctx;

	s->signo = signo;
	s->runs++;
	fw_loop_stop(l);
}

static void raise_usr1(struct fw_loop *l, void *ctx)
{
	(void)l;
	(void)ctx;
	raise(SIGUSR1);
}

Test(loop, a_signal_stops_it, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	struct sig s = {0};
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	cr_assert_eq(fw_loop_signals(l, &mask, on_sig, &s), 0);
	cr_assert_eq(fw_loop_signals(l, &mask, on_sig, &s), -EBUSY);
	cr_assert_eq(fw_loop_once(l, 0, raise_usr1, NULL), 0);
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(s.runs, 1);
	cr_assert_eq(s.signo, SIGUSR1);
	fw_loop_free(l);
}

static void *stopper(void *arg)
{
	usleep(2000);
	fw_loop_stop(arg);
	return NULL;
}

Test(loop, another_thread_stops_it, .timeout = 30)
{
	struct fw_loop *l = new_loop();
	pthread_t th;

	/* nothing armed, nothing watched: only the wake-up ends the wait */
	cr_assert_eq(pthread_create(&th, NULL, stopper, l), 0);
	cr_assert_eq(fw_loop_run(l), 0);
	pthread_join(th, NULL);
	/* a stop before the run is kept: it returns at once */
	fw_loop_stop(l);
	cr_assert_eq(fw_loop_run(l), 0);
	fw_loop_free(l);
}

static int once_runs;

static void once_fn(struct fw_loop *l, void *ctx)
{
	once_runs++;
	if (ctx)
		fw_loop_stop(l);
}

Test(loop, one_shot_timers_run_once, .timeout = 30)
{
	struct fw_loop *l = new_loop();

	cr_assert_eq(fw_loop_once(l, 1 * MS, once_fn, NULL), 0);
	cr_assert_eq(fw_loop_once(l, 2 * MS, once_fn, l), 0);
	cr_assert_eq(fw_loop_once(l, 3600 * FW_NSEC_PER_SEC, once_fn, NULL), 0); /* freed unrun */
	cr_assert_eq(fw_loop_run(l), 0);
	cr_assert_eq(once_runs, 2);
	fw_loop_free(l);
}
