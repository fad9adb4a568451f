/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A set of interface indexes of any value (the kernel hands out ifindexes
 * up to INT_MAX and never reuses one soon, so a node with veth churn passes
 * any fixed bound). Sorted array: lookups are a binary search, changes
 * follow link events. Functions return 0 or a negative errno. */
#ifndef FW_IFSET_H
#define FW_IFSET_H

#include <stdbool.h>
#include <stddef.h>

struct fw_ifset {
	int *v; /* ascending */
	size_t n, cap;
};

bool fw_ifset_has(const struct fw_ifset *s, int ifindex);
/* Adds ifindex (> 0); 0 when it was there already, -EINVAL for <= 0. */
int fw_ifset_add(struct fw_ifset *s, int ifindex);
/* Removes ifindex; nothing when it is not there. */
void fw_ifset_del(struct fw_ifset *s, int ifindex);
/* Forgets every member, keeping the memory. */
void fw_ifset_clear(struct fw_ifset *s);
void fw_ifset_free(struct fw_ifset *s);

#endif /* FW_IFSET_H */
