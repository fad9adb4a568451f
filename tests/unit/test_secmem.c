// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Secret memory: zeroed, locked, out of core dumps, wiped on free, a few
 * guarded slabs for any number of secrets. The kernel's view of the
 * mappings (/proc/self/maps, smaps) is what is checked. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/secmem.h"

/* Whether the mapping holding p has VmFlags flag ("dd", "lo"); shared
 * with test_pending.c. */
bool test_secmem_vmflag(const void *p, const char *flag);

bool test_secmem_vmflag(const void *p, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool inside = false, found = false;

	cr_assert(f, "can't open /proc/self/smaps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			char want[8];

			snprintf(want, sizeof(want), " %s", flag);
			/* flags are two letters separated by spaces */
			for (char *s = strstr(line, want); s; s = strstr(s + 1, want))
				if (s[3] == ' ' || s[3] == '\n')
					found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

/* ASan's interceptor turns mlock into a no-op that returns 0 */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static bool mlock_expected(void)
{
	struct rlimit rl;

#ifdef UNDER_ASAN
	return false;
#endif

	return geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur >= (1 << 20));
}

Test(secmem, alloc_is_zeroed_aligned_and_spans_pages)
{
	size_t n = 3 * (size_t)sysconf(_SC_PAGESIZE) + 5;
	unsigned char *p = fw_secmem_alloc(n);

	cr_assert(p);
	cr_assert_eq((uintptr_t)p % 16, 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(p[i], 0, "byte %zu not zero", i);
	memset(p, 0xa5, n);
	fw_secmem_free(p);
}

Test(secmem, mapping_is_locked_and_not_dumped)
{
	char *p = fw_secmem_alloc(100);

	cr_assert(p);
	cr_assert(test_secmem_vmflag(p, "dd"), "no MADV_DONTDUMP on the mapping");
	if (mlock_expected())
		cr_assert(test_secmem_vmflag(p, "lo"), "mapping not mlock'd");
	fw_secmem_free(p);
}

/* The permissions ("rw-p", "---p") of the mapping holding p, from
 * /proc/self/maps; "" when nothing maps it. */
static void perms_at(const void *p, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	cr_assert(f, "can't open /proc/self/maps");
	perms[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char pr[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pr) == 3 && (uintptr_t)p >= lo &&
		    (uintptr_t)p < hi) {
			memcpy(perms, pr, 5);
			break;
		}
	}
	fclose(f);
}

/* The start and end of the mapping holding p. */
static void mapping_of(const void *p, uintptr_t *lo, uintptr_t *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	cr_assert(f);
	*lo = *hi = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && (uintptr_t)p >= a &&
		    (uintptr_t)p < b) {
			*lo = a;
			*hi = b;
			break;
		}
	}
	fclose(f);
	cr_assert(*hi, "%p is not mapped", p);
}

static int maps_lines(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, ch;

	cr_assert(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

Test(secmem, free_wipes_and_chunk_comes_back_zeroed)
{
	char *keep = fw_secmem_alloc(40); /* holds the slab while p is freed */
	char *p = fw_secmem_alloc(40), *q;
	volatile const char *peek = p;

	cr_assert(keep && p);
	strcpy(p, "hunter2-hunter2-hunter2");
	fw_secmem_free(p);
	/* still mapped (keep shares the slab), and nothing of it is left */
	for (int i = 0; i < 40; i++)
		cr_assert_eq(peek[i], 0, "byte %d survived the free", i);
	q = fw_secmem_alloc(33);
	cr_assert_eq(q, p, "a freed chunk of the class is not reused");
	for (int i = 0; i < 33; i++)
		cr_assert_eq(q[i], 0);
	fw_secmem_free(q);
	fw_secmem_free(keep);
	fw_secmem_free(NULL);
}

Test(secmem, slabs_sit_between_guard_pages)
{
	size_t sizes[] = {24, 3000, 70000, 300000};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char *p = fw_secmem_alloc(sizes[k]);
		uintptr_t lo, hi;
		char perms[5];

		cr_assert(p);
		perms_at(p, perms);
		cr_assert_str_eq(perms, "rw-p", "size %zu", sizes[k]);
		mapping_of(p, &lo, &hi);
		perms_at((void *)(lo - 1), perms);
		cr_assert_str_eq(perms, "---p", "no guard page below the slab of size %zu",
				 sizes[k]);
		perms_at((void *)hi, perms);
		cr_assert_str_eq(perms, "---p", "no guard page above the slab of size %zu",
				 sizes[k]);
		cr_assert_geq(hi - (uintptr_t)p, sizes[k]);
		cr_assert(test_secmem_vmflag(p, "dd"));
		fw_secmem_free(p);
	}
}

Test(secmem, large_allocation_is_unmapped_on_free)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = fw_secmem_alloc(300000);
	unsigned char vec;

	cr_assert(p);
	strcpy(p, "hunter2");
	cr_assert_eq(mincore(p, (size_t)page, &vec), 0);
	fw_secmem_free(p);
	cr_assert_eq(mincore(p, (size_t)page, &vec), -1);
	cr_assert_eq(errno, ENOMEM);
}

/* Neighbours never overlap: each chunk keeps exactly what was written. */
Test(secmem, many_allocations_keep_apart)
{
	enum { N = 20000 };
	static unsigned char *p[N];
	static size_t len[N];
	unsigned int seed = 7;

	for (int i = 0; i < N; i++) {
		len[i] = (size_t)rand_r(&seed) % 2000;
		p[i] = fw_secmem_alloc(len[i]);
		cr_assert(p[i], "allocation %d failed: %s", i, strerror(errno));
		cr_assert_eq((uintptr_t)p[i] % 16, 0);
		memset(p[i], i & 0xff, len[i]);
	}
	for (int i = 0; i < N; i += 2) {
		fw_secmem_free(p[i]);
		p[i] = NULL;
	}
	for (int i = 1; i < N; i += 2)
		for (size_t k = 0; k < len[i]; k++)
			cr_assert_eq(p[i][k], i & 0xff, "chunk %d byte %zu overwritten", i, k);
	for (int i = 1; i < N; i += 2)
		fw_secmem_free(p[i]);
}

/* 8,191 subjects with 8 credentials each: a mapping per secret would add
 * 65,528 mappings, past vm.max_map_count's default of 65,530. */
Test(secmem, a_node_full_of_credentials_needs_few_mappings)
{
	enum { N = 8191 * 8 };
	static char *p[N];
	int before = maps_lines(), after;

	for (int i = 0; i < N; i++) {
		char v[64];

		snprintf(v, sizeof(v), "ghp_%08d_0123456789abcdefghijkl", i);
		p[i] = fw_secmem_strndup(v, sizeof(v));
		cr_assert(p[i], "secret %d: %s", i, strerror(errno));
	}
	after = maps_lines();
	cr_assert_lt(after - before, 200, "%d mappings for %d secrets", after - before, N);
	for (int i = 0; i < N; i++) {
		char v[64];

		snprintf(v, sizeof(v), "ghp_%08d_0123456789abcdefghijkl", i);
		cr_assert_str_eq(p[i], v);
		fw_secmem_free(p[i]);
	}
	cr_assert_leq(maps_lines(), before + 10, "slabs not released after every free");
}

Test(secmem, zero_length_is_a_valid_chunk)
{
	char *p = fw_secmem_alloc(0), *q = fw_secmem_alloc(0);

	cr_assert(p && q);
	cr_assert_neq(p, q);
	fw_secmem_free(p);
	fw_secmem_free(q);
}

Test(secmem, double_free_aborts, .signal = SIGABRT)
{
	char *p = fw_secmem_alloc(10);
	char *keep = fw_secmem_alloc(10);

	cr_assert(p && keep);
	fw_secmem_free(p);
	fw_secmem_free(p);
}

Test(secmem, foreign_pointer_aborts, .signal = SIGABRT)
{
	char *keep = fw_secmem_alloc(64);

	cr_assert(keep);
	fw_secmem_free(keep + 16 + 1);
}

Test(secmem, strndup_bounds_and_terminates)
{
	char *a = fw_secmem_strndup("secret-value", 6);
	char *b = fw_secmem_strndup("ab", 100);

	cr_assert(a && b);
	cr_assert_str_eq(a, "secret");
	cr_assert_str_eq(b, "ab");
	cr_assert(test_secmem_vmflag(a, "dd"));
	fw_secmem_free(a);
	fw_secmem_free(b);
}

Test(secmem, alloc_overflow_fails)
{
	errno = 0;
	cr_assert_null(fw_secmem_alloc(SIZE_MAX - 8));
	cr_assert_eq(errno, ENOMEM);
}

Test(secmem, process_init_disables_dumps)
{
	struct rlimit rl;

	fw_secmem_process_init();
	cr_assert_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	cr_assert_eq(getrlimit(RLIMIT_CORE, &rl), 0);
	cr_assert_eq(rl.rlim_cur, 0);
}

static void *churn(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (int i = 0; i < 500; i++) {
		size_t n = (size_t)rand_r(&seed) % 9000 + 1;
		unsigned char *p = fw_secmem_alloc(n);

		if (!p)
			return (void *)1;
		memset(p, (int)(uintptr_t)arg, n);
		for (size_t k = 0; k < n; k += 97)
			if (p[k] != (unsigned char)(uintptr_t)arg)
				return (void *)1;
		fw_secmem_free(p);
	}
	return NULL;
}

Test(secmem, threads)
{
	pthread_t t[4];
	void *r;

	for (uintptr_t i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		cr_assert_null(r, "thread %d saw foreign bytes or failed to allocate", i);
	}
}
