/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The pending push cache (credential-push.md): policy and vault pushes for a
 * uid with no binding yet, kept for a TTL and replayed in arrival order.
 * Thread-safe. Functions return 0 (or a count) or a negative errno. */
#ifndef FW_PENDING_H
#define FW_PENDING_H

#include <stddef.h>

#include <linux/types.h>

#include "fastwall/abi.h"

#define FW_PENDING_TTL_MS      30000
#define FW_PENDING_SWEEP_MS    10000 /* how often the owner calls sweep */
#define FW_PENDING_MAX	       4096  /* entries in all */
#define FW_PENDING_MAX_PER_UID 64
#define FW_PENDING_MAX_BYTES   (64u << 20) /* bodies in all */
#define FW_PENDING_MAX_BODY    (1u << 20)
#define FW_PENDING_NO_GEN      (-1LL)

enum fw_push_kind {
	FW_PUSH_POLICY = 1,
	FW_PUSH_VAULT, /* body holds secrets: kept in secmem, wiped on drop */
};

struct fw_push {
	const char *uid;
	enum fw_push_kind kind;
	const char *method; /* "POST", "PATCH", ... as received */
	const char *body;   /* NUL-terminated after len bytes; may be "" */
	size_t len;
	long long generation; /* FW_PENDING_NO_GEN when the push had none */
	__u64 arrival_ms;
};

struct fw_pending;
/* Monotonic milliseconds; tests inject their own clock. */
typedef __u64 (*fw_clock_fn)(void);
typedef void (*fw_push_fn)(const struct fw_push *push, void *arg);

/* clock NULL = CLOCK_MONOTONIC; ttl_ms 0 = FW_PENDING_TTL_MS. */
struct fw_pending *fw_pending_new(__u64 ttl_ms, fw_clock_fn clock);
void fw_pending_free(struct fw_pending *pc);
/* Copies the push. -ENOSPC over a cap, -EINVAL for a bad uid, method or
 * body larger than FW_PENDING_MAX_BODY. */
int fw_pending_add(struct fw_pending *pc, const char *uid, enum fw_push_kind kind,
		   const char *method, const char *body, size_t len, long long generation);
/* Removes every entry of uid and calls fn, outside the lock and in arrival
 * order, for the live ones whose generation is FW_PENDING_NO_GEN or equals
 * spec_generation; the rest are dropped. Returns how many fn saw. */
int fw_pending_take(struct fw_pending *pc, const char *uid, long long spec_generation,
		    fw_push_fn fn, void *arg);
/* Drops uid's entries; returns how many. */
int fw_pending_drop(struct fw_pending *pc, const char *uid);
/* Drops entries older than the TTL; returns how many. */
int fw_pending_sweep(struct fw_pending *pc);
/* Entries held, for uid or (uid NULL) in all. */
size_t fw_pending_count(struct fw_pending *pc, const char *uid);

#endif /* FW_PENDING_H */
