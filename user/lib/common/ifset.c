// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Interface index set. See ifset.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ifset.h"

/* Index of the first member >= ifindex. */
static size_t lower_bound(const struct fw_ifset *s, int ifindex)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid] < ifindex)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool fw_ifset_has(const struct fw_ifset *s, int ifindex)
{
	size_t i = lower_bound(s, ifindex);

	return i < s->n && s->v[i] == ifindex;
}

int fw_ifset_add(struct fw_ifset *s, int ifindex)
{
	size_t i;

	if (ifindex <= 0)
		return -EINVAL;
	i = lower_bound(s, ifindex);
	if (i < s->n && s->v[i] == ifindex)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*s->v));
	s->v[i] = ifindex;
	s->n++;
	return 0;
}

void fw_ifset_del(struct fw_ifset *s, int ifindex)
{
	size_t i = lower_bound(s, ifindex);

	if (i >= s->n || s->v[i] != ifindex)
		return;
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
}

void fw_ifset_clear(struct fw_ifset *s)
{
	s->n = 0;
}

void fw_ifset_free(struct fw_ifset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
