// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Secret memory: zeroed, locked, out of core dumps, unmapped on free. The
 * kernel's view of the mapping (/proc/self/smaps) is what is checked. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "secmem.h"

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

Test(secmem, free_unmaps)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = fw_secmem_alloc(10);
	unsigned char vec;
	void *base = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));

	cr_assert(p);
	strcpy(p, "hunter2");
	cr_assert_eq(mincore(base, (size_t)page, &vec), 0);
	fw_secmem_free(p);
	/* ENOMEM: no mapping there any more, so nothing can read it */
	cr_assert_eq(mincore(base, (size_t)page, &vec), -1);
	cr_assert_eq(errno, ENOMEM);
	fw_secmem_free(NULL);
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
