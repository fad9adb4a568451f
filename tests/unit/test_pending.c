// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The pending push cache: what a SET_BINDING flush replays, in what order,
 * after how long it is forgotten, and what it refuses. Time is injected. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/pending.h"

bool test_secmem_vmflag(const void *p, const char *flag);

static __u64 fake_now;

static __u64 fake_clock(void)
{
	return fake_now;
}

struct seen {
	int n;
	char bodies[16][64];
	long long gens[16];
	bool vault_in_secmem;
};

static void record(const struct fw_push *p, void *arg)
{
	struct seen *s = arg;

	cr_assert_lt(s->n, 16);
	cr_assert_eq(p->body[p->len], '\0');
	snprintf(s->bodies[s->n], sizeof(s->bodies[0]), "%s %s %s", p->uid, p->method, p->body);
	s->gens[s->n] = p->generation;
	if (p->kind == FW_PUSH_VAULT)
		s->vault_in_secmem = test_secmem_vmflag(p->body, "dd");
	s->n++;
}

static struct fw_pending *pc;

static void setup(void)
{
	fake_now = 1000;
	pc = fw_pending_new(0, fake_clock);
	cr_assert(pc);
}

static void teardown(void)
{
	fw_pending_free(pc);
}

static void add(const char *uid, enum fw_push_kind kind, const char *method, const char *body,
		long long gen)
{
	int ret = fw_pending_add(pc, uid, kind, method, body, strlen(body), gen);

	cr_assert_eq(ret, 0, "add %s %s: %d", uid, body, ret);
}

TestSuite(pending, .init = setup, .fini = teardown);

Test(pending, take_replays_in_arrival_order_and_empties)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_POLICY, "POST", "p1", FW_PENDING_NO_GEN);
	add("sb-2", FW_PUSH_POLICY, "POST", "other", FW_PENDING_NO_GEN);
	fake_now += 5;
	add("sb-1", FW_PUSH_VAULT, "PATCH", "v1", FW_PENDING_NO_GEN);
	add("sb-1", FW_PUSH_POLICY, "DELETE", "p2", FW_PENDING_NO_GEN);

	cr_assert_eq(fw_pending_take(pc, "sb-1", 7, record, &s), 3);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.bodies[0], "sb-1 POST p1");
	cr_assert_str_eq(s.bodies[1], "sb-1 PATCH v1");
	cr_assert_str_eq(s.bodies[2], "sb-1 DELETE p2");
	cr_assert(s.vault_in_secmem, "vault push body not in secmem");
	cr_assert_eq(fw_pending_count(pc, "sb-1"), 0);
	cr_assert_eq(fw_pending_count(pc, NULL), 1);
	cr_assert_eq(fw_pending_take(pc, "sb-1", 7, record, &s), 0);
	cr_assert_eq(s.n, 3);
}

Test(pending, generation_mismatch_is_dropped)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_POLICY, "POST", "none", FW_PENDING_NO_GEN);
	add("sb-1", FW_PUSH_POLICY, "POST", "gen5", 5);
	add("sb-1", FW_PUSH_POLICY, "POST", "gen6", 6);
	add("sb-1", FW_PUSH_VAULT, "POST", "gen5b", 5);

	cr_assert_eq(fw_pending_take(pc, "sb-1", 5, record, &s), 3);
	cr_assert_str_eq(s.bodies[0], "sb-1 POST none");
	cr_assert_eq(s.gens[0], FW_PENDING_NO_GEN);
	cr_assert_str_eq(s.bodies[1], "sb-1 POST gen5");
	cr_assert_str_eq(s.bodies[2], "sb-1 POST gen5b");
	/* the mismatched entry is gone, not left for a later flush */
	cr_assert_eq(fw_pending_count(pc, NULL), 0);
}

Test(pending, binding_without_generation_keeps_only_ungenerationed)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_POLICY, "POST", "none", FW_PENDING_NO_GEN);
	add("sb-1", FW_PUSH_POLICY, "POST", "gen1", 1);
	cr_assert_eq(fw_pending_take(pc, "sb-1", FW_PENDING_NO_GEN, record, &s), 1);
	cr_assert_str_eq(s.bodies[0], "sb-1 POST none");
}

Test(pending, sweep_expires_after_ttl)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_POLICY, "POST", "old", FW_PENDING_NO_GEN);
	fake_now += 20000;
	add("sb-1", FW_PUSH_VAULT, "POST", "new", FW_PENDING_NO_GEN);
	add("sb-2", FW_PUSH_POLICY, "POST", "other", FW_PENDING_NO_GEN);

	fake_now += 9999; /* old is 29.999 s old */
	cr_assert_eq(fw_pending_sweep(pc), 0);
	fake_now += 1;
	cr_assert_eq(fw_pending_sweep(pc), 1);
	cr_assert_eq(fw_pending_count(pc, "sb-1"), 1);
	cr_assert_eq(fw_pending_count(pc, NULL), 2);
	cr_assert_eq(fw_pending_take(pc, "sb-1", 0, record, &s), 1);
	cr_assert_str_eq(s.bodies[0], "sb-1 POST new");

	fake_now += 30000;
	cr_assert_eq(fw_pending_sweep(pc), 1);
	cr_assert_eq(fw_pending_count(pc, NULL), 0);
}

Test(pending, take_skips_expired_before_sweep)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_POLICY, "POST", "stale", FW_PENDING_NO_GEN);
	fake_now += 30000;
	cr_assert_eq(fw_pending_take(pc, "sb-1", 0, record, &s), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(fw_pending_count(pc, NULL), 0);
}

Test(pending, configurable_ttl)
{
	struct fw_pending *short_pc = fw_pending_new(500, fake_clock);

	cr_assert_eq(fw_pending_add(short_pc, "sb-1", FW_PUSH_POLICY, "POST", "x", 1, -1), 0);
	fake_now += 499;
	cr_assert_eq(fw_pending_sweep(short_pc), 0);
	fake_now += 1;
	cr_assert_eq(fw_pending_sweep(short_pc), 1);
	fw_pending_free(short_pc);
}

Test(pending, drop_forgets_uid)
{
	struct seen s = {0};

	add("sb-1", FW_PUSH_VAULT, "POST", "{\"secret\":1}", FW_PENDING_NO_GEN);
	add("sb-1", FW_PUSH_POLICY, "POST", "p", FW_PENDING_NO_GEN);
	add("sb-2", FW_PUSH_POLICY, "POST", "p", FW_PENDING_NO_GEN);
	cr_assert_eq(fw_pending_drop(pc, "sb-1"), 2);
	cr_assert_eq(fw_pending_drop(pc, "sb-1"), 0);
	cr_assert_eq(fw_pending_take(pc, "sb-1", 0, record, &s), 0);
	cr_assert_eq(fw_pending_count(pc, NULL), 1);
	/* a later sweep must not trip over the dropped entries */
	fake_now += 60000;
	cr_assert_eq(fw_pending_sweep(pc), 1);
}

Test(pending, per_uid_cap)
{
	for (int i = 0; i < FW_PENDING_MAX_PER_UID; i++)
		add("sb-1", FW_PUSH_POLICY, "PATCH", "p", FW_PENDING_NO_GEN);
	cr_assert_eq(fw_pending_add(pc, "sb-1", FW_PUSH_POLICY, "PATCH", "p", 1, -1), -ENOSPC);
	add("sb-2", FW_PUSH_POLICY, "PATCH", "p", FW_PENDING_NO_GEN);
}

Test(pending, total_cap)
{
	char uid[32];

	for (int i = 0; i < FW_PENDING_MAX; i++) {
		snprintf(uid, sizeof(uid), "sb-%d", i / 32);
		add(uid, FW_PUSH_POLICY, "POST", "p", FW_PENDING_NO_GEN);
	}
	cr_assert_eq(fw_pending_add(pc, "fresh", FW_PUSH_POLICY, "POST", "p", 1, -1), -ENOSPC);
	cr_assert_eq(fw_pending_drop(pc, "sb-0"), 32);
	add("fresh", FW_PUSH_POLICY, "POST", "p", FW_PENDING_NO_GEN);
}

Test(pending, byte_cap)
{
	size_t len = FW_PENDING_MAX_BODY;
	char *big = calloc(1, len);
	char uid[32];
	int i, ret = 0;

	cr_assert(big);
	memset(big, 'x', len);
	for (i = 0; i < 100 && ret == 0; i++) {
		snprintf(uid, sizeof(uid), "sb-%d", i);
		ret = fw_pending_add(pc, uid, FW_PUSH_POLICY, "POST", big, len, -1);
	}
	cr_assert_eq(ret, -ENOSPC);
	cr_assert_eq(i - 1, FW_PENDING_MAX_BYTES / FW_PENDING_MAX_BODY);
	cr_assert_eq(fw_pending_add(pc, "one-more", FW_PUSH_POLICY, "POST", big, len + 1, -1),
		     -EINVAL);
	free(big);
}

Test(pending, rejects_bad_arguments)
{
	char long_uid[FW_UID_MAX + 2];

	memset(long_uid, 'u', sizeof(long_uid) - 1);
	long_uid[sizeof(long_uid) - 1] = '\0';
	cr_assert_eq(fw_pending_add(pc, "", FW_PUSH_POLICY, "POST", "", 0, -1), -EINVAL);
	cr_assert_eq(fw_pending_add(pc, long_uid, FW_PUSH_POLICY, "POST", "", 0, -1), -EINVAL);
	cr_assert_eq(fw_pending_add(pc, "sb", FW_PUSH_POLICY, "post", "", 0, -1), -EINVAL);
	cr_assert_eq(fw_pending_add(pc, "sb", 9, "POST", "", 0, -1), -EINVAL);
	long_uid[FW_UID_MAX] = '\0';
	cr_assert_eq(fw_pending_add(pc, long_uid, FW_PUSH_POLICY, "POST", NULL, 0, -1), 0);
}

static void readd(const struct fw_push *p, void *arg)
{
	/* a flush that pushes again must not deadlock on the cache lock */
	cr_assert_eq(fw_pending_add(pc, "sb-9", p->kind, p->method, p->body, p->len, -1), 0);
	(*(int *)arg)++;
}

Test(pending, callback_may_reenter)
{
	int n = 0;

	add("sb-1", FW_PUSH_POLICY, "POST", "a", FW_PENDING_NO_GEN);
	add("sb-1", FW_PUSH_POLICY, "POST", "b", FW_PENDING_NO_GEN);
	cr_assert_eq(fw_pending_take(pc, "sb-1", 0, readd, &n), 2);
	cr_assert_eq(n, 2);
	cr_assert_eq(fw_pending_count(pc, "sb-9"), 2);
}

static void *hammer(void *arg)
{
	char uid[16];
	int id = (int)(long)arg;

	for (int i = 0; i < 2000; i++) {
		snprintf(uid, sizeof(uid), "sb-%d", i % 7);
		fw_pending_add(pc, uid, i % 2 ? FW_PUSH_VAULT : FW_PUSH_POLICY, "POST", "body", 4,
			       i % 3 ? -1 : id);
		if (i % 5 == 0)
			fw_pending_take(pc, uid, id, NULL, NULL);
		if (i % 11 == 0)
			fw_pending_drop(pc, uid);
		if (i % 13 == 0)
			fw_pending_sweep(pc);
		(void)fw_pending_count(pc, uid);
	}
	return NULL;
}

Test(pending, threads)
{
	pthread_t t[4];
	size_t left = 0;
	char uid[16];

	for (long i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, (void *)i), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 7; i++) {
		snprintf(uid, sizeof(uid), "sb-%d", i);
		left += fw_pending_count(pc, uid);
	}
	cr_assert_eq(left, fw_pending_count(pc, NULL));
	cr_assert_leq(left, 7 * FW_PENDING_MAX_PER_UID);
}
