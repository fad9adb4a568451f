// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Entries sit on one list in arrival order, so a sweep pops expired ones
 * from the head (one TTL for all: the oldest expires first), and on their
 * uid's group, so take and drop touch only that uid's entries. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "protocol/pending.h"
#include "common/secmem.h"

#define GROUP_BUCKETS 1024

struct group;

struct entry {
	struct entry *prev, *next; /* all entries, arrival order */
	struct entry *unext;	   /* this uid's entries, arrival order */
	struct group *group;
	enum fw_push_kind kind;
	char method[16];
	char *body; /* secmem for FW_PUSH_VAULT, else malloc */
	size_t len;
	long long generation;
	__u64 arrival_ms;
};

struct group {
	struct group *next; /* bucket chain */
	struct entry *head, *tail;
	size_t count;
	char uid[FW_UID_MAX + 1];
};

struct fw_pending {
	pthread_mutex_t lock;
	__u64 ttl_ms;
	fw_clock_fn clock;
	struct entry *head, *tail;
	size_t count, bytes;
	struct group *groups[GROUP_BUCKETS];
};

static bool uid_ok(const char *uid)
{
	size_t len = uid ? strnlen(uid, FW_UID_MAX + 1) : 0;

	return len > 0 && len <= FW_UID_MAX;
}

static struct group **group_slot(struct fw_pending *pc, const char *uid)
{
	__u32 h = 2166136261u;
	struct group **pp;

	for (const char *c = uid; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	for (pp = &pc->groups[h % GROUP_BUCKETS]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->uid, uid) == 0)
			break;
	return pp;
}

static void entry_free(struct entry *e)
{
	if (e->kind == FW_PUSH_VAULT)
		fw_secmem_free(e->body);
	else
		free(e->body);
	free(e);
}

static void unlink_all(struct fw_pending *pc, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		pc->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		pc->tail = e->prev;
	pc->count--;
	pc->bytes -= e->len;
}

/* Unhooks uid's group and all its entries; returns the group (its entries
 * still chained on unext) for the caller to use and free unlocked. */
static struct group *group_take(struct fw_pending *pc, const char *uid)
{
	struct group **pp = group_slot(pc, uid), *g = *pp;

	if (!g)
		return NULL;
	*pp = g->next;
	for (struct entry *e = g->head; e; e = e->unext)
		unlink_all(pc, e);
	return g;
}

static int group_free(struct group *g)
{
	int n = 0;

	if (!g)
		return 0;
	for (struct entry *e = g->head, *next; e; e = next, n++) {
		next = e->unext;
		entry_free(e);
	}
	free(g);
	return n;
}

struct fw_pending *fw_pending_new(__u64 ttl_ms, fw_clock_fn clock)
{
	struct fw_pending *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pthread_mutex_init(&pc->lock, NULL);
	pc->ttl_ms = ttl_ms ? ttl_ms : FW_PENDING_TTL_MS;
	pc->clock = clock ? clock : fw_now_ms;
	return pc;
}

void fw_pending_free(struct fw_pending *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < GROUP_BUCKETS; i++) {
		for (struct group *g = pc->groups[i], *next; g; g = next) {
			next = g->next;
			group_free(g);
		}
	}
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

static bool method_ok(const char *m)
{
	size_t len = m ? strnlen(m, 16) : 0;

	if (len == 0 || len >= 16)
		return false;
	for (size_t i = 0; i < len; i++)
		if (m[i] < 'A' || m[i] > 'Z')
			return false;
	return true;
}

int fw_pending_add(struct fw_pending *pc, const char *uid, enum fw_push_kind kind,
		   const char *method, const char *body, size_t len, long long generation)
{
	struct group **pp, *g = NULL;
	struct entry *e;
	int ret = 0;

	if (!uid_ok(uid) || !method_ok(method) ||
	    (kind != FW_PUSH_POLICY && kind != FW_PUSH_VAULT) || len > FW_PENDING_MAX_BODY ||
	    (len && !body))
		return -EINVAL;
	if (generation < 0)
		generation = FW_PENDING_NO_GEN;

	/* copy before taking the lock: a page mapping is not free */
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->kind = kind;
	strcpy(e->method, method);
	e->body = kind == FW_PUSH_VAULT ? fw_secmem_alloc(len + 1) : calloc(1, len + 1);
	if (!e->body) {
		free(e);
		return -ENOMEM;
	}
	if (len)
		memcpy(e->body, body, len);
	e->len = len;
	e->generation = generation;

	pthread_mutex_lock(&pc->lock);
	pp = group_slot(pc, uid);
	if (pc->count >= FW_PENDING_MAX || pc->bytes + len > FW_PENDING_MAX_BYTES ||
	    (*pp && (*pp)->count >= FW_PENDING_MAX_PER_UID)) {
		ret = -ENOSPC;
		goto unlock;
	}
	g = *pp;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			ret = -ENOMEM;
			goto unlock;
		}
		strcpy(g->uid, uid);
		*pp = g;
	}
	e->arrival_ms = pc->clock();
	e->group = g;
	if (g->tail)
		g->tail->unext = e;
	else
		g->head = e;
	g->tail = e;
	g->count++;
	e->prev = pc->tail;
	if (pc->tail)
		pc->tail->next = e;
	else
		pc->head = e;
	pc->tail = e;
	pc->count++;
	pc->bytes += len;
	e = NULL;
unlock:
	pthread_mutex_unlock(&pc->lock);
	if (e)
		entry_free(e);
	return ret;
}

static bool expired(const struct fw_pending *pc, const struct entry *e, __u64 now)
{
	return now >= e->arrival_ms && now - e->arrival_ms >= pc->ttl_ms;
}

int fw_pending_take(struct fw_pending *pc, const char *uid, long long spec_generation,
		    fw_push_fn fn, void *arg)
{
	struct group *g;
	__u64 now;
	int n = 0;

	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	now = pc->clock();
	g = group_take(pc, uid);
	pthread_mutex_unlock(&pc->lock);
	if (!g)
		return 0;

	/* unlocked, so fn may push, take or drop without deadlocking */
	for (struct entry *e = g->head; e; e = e->unext) {
		struct fw_push push = {
			.uid = g->uid,
			.kind = e->kind,
			.method = e->method,
			.body = e->body,
			.len = e->len,
			.generation = e->generation,
			.arrival_ms = e->arrival_ms,
		};

		/* not swept yet, but a flush must not revive it */
		if (expired(pc, e, now))
			continue;
		if (e->generation != FW_PENDING_NO_GEN && e->generation != spec_generation)
			continue;
		if (fn)
			fn(&push, arg);
		n++;
	}
	group_free(g);
	return n;
}

int fw_pending_drop(struct fw_pending *pc, const char *uid)
{
	struct group *g;

	if (!uid_ok(uid))
		return -EINVAL;
	pthread_mutex_lock(&pc->lock);
	g = group_take(pc, uid);
	pthread_mutex_unlock(&pc->lock);
	return group_free(g);
}

int fw_pending_sweep(struct fw_pending *pc)
{
	struct entry *dead = NULL;
	__u64 now;
	int n = 0;

	pthread_mutex_lock(&pc->lock);
	now = pc->clock();
	while (pc->head && expired(pc, pc->head, now)) {
		struct entry *e = pc->head;
		struct group *g = e->group;

		unlink_all(pc, e);
		/* the oldest entry overall is the oldest of its uid too */
		g->head = e->unext;
		if (!g->head) {
			struct group **pp = group_slot(pc, g->uid);

			*pp = g->next;
			free(g);
		} else {
			g->count--;
		}
		e->unext = dead;
		dead = e;
		n++;
	}
	pthread_mutex_unlock(&pc->lock);
	while (dead) {
		struct entry *next = dead->unext;

		entry_free(dead);
		dead = next;
	}
	return n;
}

size_t fw_pending_count(struct fw_pending *pc, const char *uid)
{
	struct group *g;
	size_t n;

	pthread_mutex_lock(&pc->lock);
	if (uid) {
		g = uid_ok(uid) ? *group_slot(pc, uid) : NULL;
		n = g ? g->count : 0;
	} else {
		n = pc->count;
	}
	pthread_mutex_unlock(&pc->lock);
	return n;
}
