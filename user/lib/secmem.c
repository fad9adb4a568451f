// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Each allocation is its own mapping, so free can unmap it and a stray
 * read after free faults instead of seeing the secret. A header in front of
 * the returned pointer remembers the mapping's size. */
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "secmem.h"

struct secmem_hdr {
	size_t map_len;
	bool locked;
	/* keeps the user pointer 16-byte aligned, like malloc's */
	unsigned char pad[16 - sizeof(size_t) - sizeof(bool)];
};

_Static_assert(sizeof(struct secmem_hdr) == 16, "secmem header must keep 16-byte alignment");

static atomic_bool mlock_warned;

void *fw_secmem_alloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct secmem_hdr *h;
	size_t len;

	if (n > SIZE_MAX - sizeof(*h) - page) {
		errno = ENOMEM;
		return NULL;
	}
	len = (n + sizeof(*h) + page - 1) & ~(page - 1);
	/* anonymous mappings come zeroed */
	h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return NULL;
	/* MADV_DONTDUMP keeps it out of a core even if dumping is re-enabled */
	madvise(h, len, MADV_DONTDUMP);
	h->map_len = len;
	h->locked = mlock(h, len) == 0;
	if (!h->locked) {
		int err = errno;

		/* an unprivileged daemon or a small RLIMIT_MEMLOCK: still
		 * better to run than to refuse the push; say so once */
		if (!atomic_exchange(&mlock_warned, true))
			fw_warn("can't lock secret memory in RAM (%s): secrets may be swapped",
				strerror(err));
	}
	return h + 1;
}

void fw_secmem_free(void *p)
{
	struct secmem_hdr *h;
	size_t len;

	if (!p)
		return;
	h = (struct secmem_hdr *)p - 1;
	len = h->map_len;
	/* wipe before munlock: once unlocked the pages may be swapped out */
	explicit_bzero(p, len - sizeof(*h));
	if (h->locked)
		munlock(h, len);
	explicit_bzero(h, sizeof(*h));
	munmap(h, len);
}

char *fw_secmem_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d;

	d = fw_secmem_alloc(len + 1);
	if (!d)
		return NULL;
	memcpy(d, s, len);
	return d;
}

void fw_secmem_process_init(void)
{
	struct rlimit rl = {0, 0};

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		fw_warn("can't make the process non-dumpable: %s", strerror(errno));
	if (setrlimit(RLIMIT_CORE, &rl))
		fw_warn("can't set the core size limit to 0: %s", strerror(errno));
}

static void *json_alloc(size_t n)
{
	return malloc(n);
}

static void json_wipe_free(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

void fw_secmem_wipe_json(void)
{
	json_set_alloc_funcs(json_alloc, json_wipe_free);
}
