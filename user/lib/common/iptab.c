// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/iptab.h"

int fw_iptab_init(struct fw_iptab *t, size_t max)
{
	size_t cap = 4;

	memset(t, 0, sizeof(*t));
	while (cap < 2 * max)
		cap *= 2;
	t->slot = calloc(cap, sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	t->cap = cap;
	t->max = max;
	return 0;
}

void fw_iptab_free(struct fw_iptab *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static size_t home_of(const struct fw_iptab *t, const struct fw_ip *a)
{
	return (size_t)fw_fnv(FW_FNV_BASIS, a, sizeof(*a)) & (t->cap - 1);
}

/* The slot holding a, or the free slot where it would go (there is one:
 * at most half the slots are used). */
static struct fw_iptab_slot *find(const struct fw_iptab *t, const struct fw_ip *a)
{
	for (size_t i = home_of(t, a);; i = (i + 1) & (t->cap - 1)) {
		struct fw_iptab_slot *s = &t->slot[i];

		if (!s->val || memcmp(&s->addr, a, sizeof(*a)) == 0)
			return s;
	}
}

__u32 fw_iptab_get(const struct fw_iptab *t, const struct fw_ip *a)
{
	return t->slot ? find(t, a)->val : 0;
}

int fw_iptab_set(struct fw_iptab *t, const struct fw_ip *a, __u32 val)
{
	struct fw_iptab_slot *s;

	if (!t->slot || !val)
		return -EINVAL;
	s = find(t, a);
	if (!s->val) {
		if (t->n >= t->max)
			return -ENOSPC;
		t->n++;
		s->addr = *a;
	}
	s->val = val;
	return 0;
}

void fw_iptab_del(struct fw_iptab *t, const struct fw_ip *a)
{
	size_t mask = t->cap - 1, i, j;
	struct fw_iptab_slot *s;

	if (!t->slot)
		return;
	s = find(t, a);
	if (!s->val)
		return;
	t->n--;
	i = (size_t)(s - t->slot);
	/* the slots after i that probed past it move back into the hole: j
	 * may fill i unless its home lies in (i, j] */
	for (j = (i + 1) & mask; t->slot[j].val; j = (j + 1) & mask) {
		size_t home = home_of(t, &t->slot[j].addr);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i] = (struct fw_iptab_slot){0};
}
