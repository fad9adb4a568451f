/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A table of addresses to a nonzero 32-bit value (a subject id), fixed
 * capacity, open addressing with linear probing and backward-shift
 * deletion: no tombstones, so lookups stay short however many changes it
 * has seen. Not locked: the owner serializes. */
#ifndef FW_IPTAB_H
#define FW_IPTAB_H

#include <stdbool.h>
#include <stddef.h>

#include <fastwall/abi.h>

struct fw_iptab_slot {
	struct fw_ip addr;
	__u32 val; /* 0: a free slot */
};

struct fw_iptab {
	struct fw_iptab_slot *slot;
	size_t cap, n, max; /* cap a power of two; at most max (cap / 2) held */
};

/* Room for max addresses; 0 or -ENOMEM. */
int fw_iptab_init(struct fw_iptab *t, size_t max);
void fw_iptab_free(struct fw_iptab *t);
/* a's value; 0: not held. */
__u32 fw_iptab_get(const struct fw_iptab *t, const struct fw_ip *a);
/* Sets a's value (val != 0); -ENOSPC when max addresses are held and a
 * is not one of them. */
int fw_iptab_set(struct fw_iptab *t, const struct fw_ip *a, __u32 val);
/* Removes a (not held: nothing). */
void fw_iptab_del(struct fw_iptab *t, const struct fw_ip *a);

#endif /* FW_IPTAB_H */
