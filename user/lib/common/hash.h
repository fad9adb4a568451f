/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* FNV-1a, 64 bit: stable across runs and builds, which is all fastwalld's
 * change detectors and in-memory tables need. */
#ifndef FW_HASH_H
#define FW_HASH_H

#include <stddef.h>

#include <linux/types.h>

#define FW_FNV_BASIS 0xcbf29ce484222325ull

static inline __u64 fw_fnv(__u64 h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif /* FW_HASH_H */
