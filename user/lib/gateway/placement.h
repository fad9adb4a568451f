/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Placement of a bare env name across clusters: member records (soft
 * state a cluster publishes about each pool of an env, kept for a TTL),
 * their text form, and the five-step decision. Plain C on libc alone,
 * compiled into the nginx ingress module. Functions return 0 or a
 * negative FW_MEMBER_E* code that fw_member_strerror() names. */
#ifndef FW_PLACEMENT_H
#define FW_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/cluster.h"

#define FW_MEMBER_TTL	    30 /* seconds a record counts after it arrived */
#define FW_MEMBER_TEXT_MAX  1024
#define FW_MEMBER_UNBOUNDED (-1) /* headroom of a pool without a ceiling */
#define FW_MEMBER_COUNT_MAX 1000000

#define FW_MEMBER_ERRORS(X)                                                                        \
	X(TOO_LONG, 1, "record too long")                                                          \
	X(SYNTAX, 2, "not key=value pairs separated by &")                                         \
	X(UNKNOWN_KEY, 3, "unknown key")                                                           \
	X(DUPLICATE, 4, "a key given twice")                                                       \
	X(MISSING, 5, "cluster, namespace, env, pool and idle are required")                       \
	X(CLUSTER, 6, "cluster is not 1-63 characters of [A-Za-z0-9_-]")                           \
	X(NAME, 7, "namespace, env or pool is not 1-253 characters of [A-Za-z0-9._-]")             \
	X(COUNT, 8, "idle or headroom is not a decimal count up to 1000000 (headroom: or -1)")     \
	X(FLAG, 9, "autoscale is not 0 or 1")

enum fw_member_err {
#define FW_MEMBER_ENUM(name, num, text) FW_MEMBER_E_##name = num,
	FW_MEMBER_ERRORS(FW_MEMBER_ENUM)
#undef FW_MEMBER_ENUM
		FW_MEMBER_E_MAX
};

/* One pool of one env on one cluster, as that cluster last said. */
struct fw_member {
	char cluster[FW_CLUSTER_ID_MAX + 1]; /* NUL-terminated */
	char ns[FW_CLUSTER_NAME_MAX + 1];
	char env[FW_CLUSTER_NAME_MAX + 1];
	char pool[FW_CLUSTER_NAME_MAX + 1];
	uint32_t idle;	  /* pods ready to be claimed now */
	int32_t headroom; /* pods it may still add; FW_MEMBER_UNBOUNDED: no ceiling */
	uint8_t autoscale;
	int64_t expires; /* unix seconds; the record counts while now < expires */
};

enum fw_place_kind {
	FW_PLACE_LOCAL,
	FW_PLACE_FORWARD, /* to target, as target->cluster::target->pool */
	FW_PLACE_PARK,
};

struct fw_place {
	enum fw_place_kind kind;
	int step; /* 1-5, the contract's step that decided */
	const struct fw_member *target;
};

const char *fw_member_strerror(int code);

/* Parses "cluster=C&namespace=N&env=E&pool=P&idle=I[&autoscale=0|1]
 * [&headroom=H]" (a trailing newline allowed). autoscale defaults to 0,
 * headroom to 0; expires is left 0 for the caller. */
int fw_member_parse(const char *text, size_t len, struct fw_member *out);
/* Writes the same form (no newline) into out; returns its length, or -1
 * when it does not fit. */
int fw_member_format(const struct fw_member *m, char *out, size_t outlen);

/* What a peer's admin API answered to pipelined POSTs of records: the
 * answers that are 204, and of the first that is not its status text
 * ("403 Forbidden") and the {"error":...} line of its body when it has
 * one (NULL/0 when absent). The spans point into the scanned bytes. */
struct fw_member_answers {
	size_t ok;
	const char *bad;
	size_t bad_len;
	const char *why;
	size_t why_len;
};

void fw_member_answers_scan(const char *buf, size_t len, struct fw_member_answers *out);

/* 1 when the record counts at now: not expired, and idle > 0 or
 * autoscaling with headroom */
int fw_member_live(const struct fw_member *m, int64_t now);

/* Orders two foreign members, best first (< 0: a is better): the idle
 * tier before the scale-up tier, more idle then more headroom (unbounded
 * highest), then cluster id and pool name ascending. */
int fw_member_rank(const struct fw_member *a, const struct fw_member *b);

/* Decides where a create of the bare env (ns, env) lands, from the
 * records of every cluster (those of local_cluster describe this one;
 * records of other envs and expired ones are skipped). Returns 0, or
 * -ENOENT when no live record names the env at all. */
int fw_place(const char *local_cluster, const struct fw_member *recs, size_t n, const char *ns,
	     const char *env, int64_t now, struct fw_place *out);

#endif /* FW_PLACEMENT_H */
