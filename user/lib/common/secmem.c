// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A locked arena for secrets. A mapping per allocation ran into the
 * kernel's per-process mapping limit (vm.max_map_count, 65,530) at about
 * 65k credentials, after which every push failed with ENOMEM. Instead,
 * allocations come from slabs: each slab is one mapping of FW_SLAB_LEN
 * bytes, mlock'd and MADV_DONTDUMP, between two PROT_NONE guard pages, and
 * serves one power-of-two size class. A freed chunk is wiped at once, so a
 * chunk handed out is always zeroed. Requests over the largest class get a
 * slab of their own, sized to them. No metadata lives next to a secret: the
 * slab descriptors and their free bitmaps are ordinary heap, and free finds
 * a pointer's slab by address, so a pointer that is not a live chunk is
 * caught instead of corrupting the arena. */
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "common/secmem.h"

#define FW_SLAB_LEN   (256 * 1024)
#define FW_CLASS_MIN  16 /* and the alignment every chunk keeps, like malloc's */
#define FW_CLASS_MAX  (FW_SLAB_LEN / 4)
#define FW_NCLASSES   13	  /* 16 << 0 ... 16 << 12 == FW_CLASS_MAX */
#define FW_DEDICATED  FW_NCLASSES /* class index of a one-chunk slab */
#define BITS_PER_WORD 64

_Static_assert(FW_CLASS_MIN << (FW_NCLASSES - 1) == FW_CLASS_MAX,
	       "size classes end at FW_CLASS_MAX");

struct slab {
	unsigned char *base; /* first chunk; a guard page lies on either side */
	size_t len;	     /* bytes between the guard pages */
	size_t chunk;
	unsigned int nchunks, nused, hint;
	unsigned int cls;
	bool locked;
	struct slab *next; /* the class's list */
	uint64_t *used;	   /* one bit per chunk */
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slab *classes[FW_NCLASSES];
/* every slab, sorted by base, for free's lookup */
static struct slab **slabs;
static size_t nslabs, slabs_cap;
static atomic_bool mlock_warned;

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static unsigned int class_of(size_t n)
{
	unsigned int c = 0;

	while (((size_t)FW_CLASS_MIN << c) < n)
		c++;
	return c;
}

static int registry_add(struct slab *s)
{
	size_t i;

	if (nslabs == slabs_cap) {
		size_t cap = slabs_cap ? 2 * slabs_cap : 64;
		struct slab **grown = realloc(slabs, cap * sizeof(*slabs));

		if (!grown)
			return -ENOMEM;
		slabs = grown;
		slabs_cap = cap;
	}
	for (i = nslabs; i > 0 && slabs[i - 1]->base > s->base; i--)
		slabs[i] = slabs[i - 1];
	slabs[i] = s;
	nslabs++;
	return 0;
}

/* The slab whose chunks span p, or NULL. */
static struct slab *registry_find(const unsigned char *p, size_t *idx)
{
	size_t lo = 0, hi = nslabs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct slab *s = slabs[mid];

		if (p < s->base)
			hi = mid;
		else if (p >= s->base + s->len)
			lo = mid + 1;
		else {
			*idx = mid;
			return s;
		}
	}
	return NULL;
}

static void slab_unmap(struct slab *s)
{
	size_t page = page_size();

	if (s->locked)
		munlock(s->base, s->len);
	munmap(s->base - page, s->len + 2 * page);
	free(s->used);
	free(s);
}

static struct slab *slab_new(unsigned int cls, size_t n)
{
	size_t page = page_size();
	struct slab *s;
	unsigned char *m;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cls = cls;
	if (cls == FW_DEDICATED) {
		s->len = (n + page - 1) & ~(page - 1);
		s->chunk = s->len;
		s->nchunks = 1;
	} else {
		s->len = FW_SLAB_LEN;
		s->chunk = (size_t)FW_CLASS_MIN << cls;
		s->nchunks = (unsigned int)(s->len / s->chunk);
	}
	s->used = calloc((s->nchunks + BITS_PER_WORD - 1) / BITS_PER_WORD, sizeof(*s->used));
	if (!s->used)
		goto fail;
	/* anonymous mappings come zeroed */
	m = mmap(NULL, s->len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		goto fail;
	s->base = m + page;
	if (mprotect(s->base, s->len, PROT_READ | PROT_WRITE)) {
		err = errno;
		munmap(m, s->len + 2 * page);
		errno = err;
		goto fail;
	}
	/* MADV_DONTDUMP keeps it out of a core even if dumping is re-enabled */
	madvise(m, s->len + 2 * page, MADV_DONTDUMP);
	s->locked = mlock(s->base, s->len) == 0;
	if (!s->locked) {
		err = errno;
		/* an unprivileged daemon or a small RLIMIT_MEMLOCK: still
		 * better to run than to refuse the push; say so once */
		if (!atomic_exchange(&mlock_warned, true))
			fw_warn("can't lock secret memory in RAM (%s): secrets may be swapped",
				strerror(err));
	}
	if (registry_add(s)) {
		slab_unmap(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
fail:
	err = errno;
	free(s->used);
	free(s);
	errno = err ? err : ENOMEM;
	return NULL;
}

static void *slab_take(struct slab *s)
{
	unsigned int words = (s->nchunks + BITS_PER_WORD - 1) / BITS_PER_WORD;

	for (unsigned int k = 0; k < words; k++) {
		unsigned int w = (s->hint + k) % words;
		uint64_t free_bits = ~s->used[w];
		unsigned int i;

		if (!free_bits)
			continue;
		i = w * BITS_PER_WORD + (unsigned int)__builtin_ctzll(free_bits);
		if (i >= s->nchunks)
			continue;
		s->used[w] |= 1ULL << (i % BITS_PER_WORD);
		s->nused++;
		s->hint = w;
		return s->base + (size_t)i * s->chunk;
	}
	return NULL;
}

void *fw_secmem_alloc(size_t n)
{
	struct slab *s;
	unsigned int cls;
	void *p = NULL;

	/* leaves room for the page rounding and the guard pages */
	if (n > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	cls = n > FW_CLASS_MAX ? FW_DEDICATED : class_of(n ? n : 1);
	pthread_mutex_lock(&arena_lock);
	if (cls == FW_DEDICATED) {
		s = slab_new(cls, n);
		if (s)
			p = slab_take(s);
		goto out;
	}
	for (s = classes[cls]; s; s = s->next)
		if (s->nused < s->nchunks)
			break;
	if (!s) {
		s = slab_new(cls, n);
		if (!s)
			goto out;
		s->next = classes[cls];
		classes[cls] = s;
	}
	p = slab_take(s);
out:
	pthread_mutex_unlock(&arena_lock);
	return p;
}

/* Drops an empty slab unless it is its class's last one, which stays to
 * spare a mapping round trip for the next push. */
static void slab_release(struct slab *s, size_t idx)
{
	struct slab **pp;

	if (s->cls != FW_DEDICATED) {
		if (classes[s->cls] == s && !s->next)
			return;
		for (pp = &classes[s->cls]; *pp != s; pp = &(*pp)->next)
			;
		*pp = s->next;
	}
	memmove(&slabs[idx], &slabs[idx + 1], (nslabs - idx - 1) * sizeof(*slabs));
	nslabs--;
	slab_unmap(s);
}

void fw_secmem_free(void *p)
{
	unsigned char *c = p;
	struct slab *s;
	size_t idx, off;
	unsigned int i;

	if (!p)
		return;
	pthread_mutex_lock(&arena_lock);
	s = registry_find(c, &idx);
	off = s ? (size_t)(c - s->base) : 0;
	i = s ? (unsigned int)(off / s->chunk) : 0;
	if (!s || off % s->chunk || !(s->used[i / BITS_PER_WORD] & (1ULL << (i % BITS_PER_WORD)))) {
		/* a double free or a foreign pointer: the arena's state can
		 * no longer be trusted to keep secrets apart */
		pthread_mutex_unlock(&arena_lock);
		fw_err("secmem: free of a pointer that is not a live secret allocation");
		abort();
	}
	/* wipe first: the chunk is handed out again zeroed, and an unlocked
	 * page may be swapped out */
	explicit_bzero(c, s->chunk);
	s->used[i / BITS_PER_WORD] &= ~(1ULL << (i % BITS_PER_WORD));
	s->nused--;
	if (!s->nused)
		slab_release(s, idx);
	pthread_mutex_unlock(&arena_lock);
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
