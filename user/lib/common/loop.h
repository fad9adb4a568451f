/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One epoll event loop per thread: fd watches (a callback per descriptor)
 * and timers whose callback returns its next delay, on the monotonic clock
 * of common/clock.h. Functions return 0 or a negative errno.
 *
 * Threading: a loop belongs to the one thread that runs fw_loop_run; every
 * function here is called on that thread (from a callback, or before the
 * loop runs), except fw_loop_wake and fw_loop_stop, which any thread (or
 * a signal handler) may call. Any module holding the loop may add its own
 * watches and timers: fastwalld's loop takes the reaper, the lease refresh
 * and the signals, and is where a metrics listener, a monitor socket or an
 * RPC client plug in with a watch and a timer of their own. */
#ifndef FW_LOOP_H
#define FW_LOOP_H

#include <signal.h>
#include <stdbool.h>

#include <linux/types.h>

struct fw_loop;
struct fw_loop_watch;
struct fw_loop_timer;

/* events: what epoll reported (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP). */
typedef void (*fw_loop_fd_fn)(struct fw_loop *l, int fd, __u32 events, void *ctx);
/* Returns the delay in ns to the timer's next run; 0 stops it. After a 0
 * the loop does not touch t again, so the callback may free it (or re-arm
 * it itself). */
typedef __u64 (*fw_loop_timer_fn)(struct fw_loop *l, struct fw_loop_timer *t, void *ctx);
typedef void (*fw_loop_hook_fn)(struct fw_loop *l, void *ctx);

/* A timer lives in its owner's memory (no allocation per arm): thousands
 * of query timeouts are one heap of pointers, O(log n) to arm or cancel.
 * Fields are the loop's. */
struct fw_loop_timer {
	__u64 deadline;
	__u64 seq;	  /* arming order: equal deadlines fire first armed, first run */
	unsigned int idx; /* heap position + 1; 0: not armed */
	fw_loop_timer_fn fn;
	void *ctx;
};

int fw_loop_new(struct fw_loop **out);
/* Frees the loop and its watches; closes none of the watched descriptors
 * (the signal watch's own signalfd excepted). NULL is fine. */
void fw_loop_free(struct fw_loop *l);

/* Runs until fw_loop_stop: due timers, the before-sleep hook, a wait,
 * the fd callbacks. Returns 0 when stopped, or epoll_wait's -errno. */
int fw_loop_run(struct fw_loop *l);
/* Makes fw_loop_run return at the end of the round (the fd events of the
 * current batch are still dispatched; no further timer runs). From another
 * thread it wakes the loop. Thread-safe, async-signal-safe. A stop before
 * fw_loop_run is kept: that run returns at once. */
void fw_loop_stop(struct fw_loop *l);
/* Wakes the loop from its wait, so the before-sleep hook runs again
 * (another thread handing it work). Thread-safe, async-signal-safe. */
void fw_loop_wake(struct fw_loop *l);
bool fw_loop_stopped(struct fw_loop *l);

/* Liveness: fw_loop_turned is the loop's now (fw_now_ns's clock) when
 * its last round began, readable from any thread; 0 until it runs.
 * fw_loop_heartbeat wakes an idle loop every interval_ns so that a loop
 * that turns is seen to (0 stops it). A loop stuck in a callback stops
 * turning: a health check compares fw_loop_turned with fw_now_ns. */
void fw_loop_heartbeat(struct fw_loop *l, __u64 interval_ns);
#define FW_LOOP_BEAT_NS 1000000000ull /* fastwalld's loops: one a second */
__u64 fw_loop_turned(const struct fw_loop *l);

/* The loop's time: read once per wake-up, so every callback of one round
 * sees the same now and deadlines are computed from it. */
__u64 fw_loop_now(const struct fw_loop *l);

/* Called each round after the timers, just before the wait: deferred
 * frees, batched sends. One per loop; fn NULL removes it. */
void fw_loop_set_before_sleep(struct fw_loop *l, fw_loop_hook_fn fn, void *ctx);

/* Watches fd for events (EPOLLIN, EPOLLOUT; 0 = none for now). The watch
 * is the loop's; removing it is safe from any callback, including fd's own
 * and another descriptor's in the same round: an event still queued for a
 * removed watch is dropped. Remove a watch before closing its fd. */
int fw_loop_watch_add(struct fw_loop *l, int fd, __u32 events, fw_loop_fd_fn fn, void *ctx,
		      struct fw_loop_watch **out);
int fw_loop_watch_mod(struct fw_loop *l, struct fw_loop_watch *w, __u32 events);
/* NULL is fine. */
void fw_loop_watch_del(struct fw_loop *l, struct fw_loop_watch *w);

/* SIGTERM and the like through a signalfd: blocks mask in the calling
 * thread (do it before starting other threads, which inherit the mask)
 * and calls fn once per signal delivered. */
int fw_loop_signals(struct fw_loop *l, const sigset_t *mask,
		    void (*fn)(struct fw_loop *l, int signo, void *ctx), void *ctx);

void fw_loop_timer_init(struct fw_loop_timer *t, fw_loop_timer_fn fn, void *ctx);
/* (Re-)arms t to run delay_ns from the loop's now (0: in the next round).
 * Arming an armed timer moves it. */
void fw_loop_timer_arm(struct fw_loop *l, struct fw_loop_timer *t, __u64 delay_ns);
/* Not armed: nothing. */
void fw_loop_timer_cancel(struct fw_loop *l, struct fw_loop_timer *t);
static inline bool fw_loop_timer_armed(const struct fw_loop_timer *t)
{
	return t->idx != 0;
}
/* A one-shot timer the loop allocates and frees: fn runs once, delay_ns
 * from now (freed unrun by fw_loop_free). */
int fw_loop_once(struct fw_loop *l, __u64 delay_ns, void (*fn)(struct fw_loop *l, void *ctx),
		 void *ctx);

/* The earliest deadline armed, UINT64_MAX for none. */
__u64 fw_loop_next_deadline(const struct fw_loop *l);
/* Sets the loop's now (never backwards) and runs the timers due by then,
 * as a round of fw_loop_run would; returns how many ran. For a caller
 * that drives time itself: a simulation, a test. */
unsigned int fw_loop_expire(struct fw_loop *l, __u64 now);

#endif /* FW_LOOP_H */
