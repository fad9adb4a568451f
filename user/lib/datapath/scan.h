/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Walking and emptying a map by its fd, and the record lists the walks
 * fill: the bottom of datapath/, which every other file may call and
 * which calls none of them. Functions return 0 or a negative errno. */
#ifndef FW_DATAPATH_SCAN_H
#define FW_DATAPATH_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

/* Called on every entry of a scan (key, value, ctx); a non-zero return
 * stops the scan and is returned. */
typedef int (*fw_dp_scan_fn)(const void *key, const void *val, void *ctx);

/* Calls fn on every entry of the map fd, in batches of thousands where
 * the map and kernel allow, else key by key. */
int fw_dp_scan(int fd, fw_dp_scan_fn fn, void *ctx);

/* A growing array of records of one size, for fw_dp_scan callbacks that
 * collect what they see; free(data) when done. */
struct fw_recs {
	char *data;
	size_t n, cap, size;
};
/* Appends a copy of rec (r->size bytes); 0 or -ENOMEM. */
int fw_recs_push(struct fw_recs *r, const void *rec);

/* Deletes each of the n keys (key_size bytes each) of fd; missing keys
 * are no error. Batched where the kernel can. */
int fw_dp_delete_keys(int fd, const void *keys, size_t n, size_t key_size);
/* Deletes every key of fd that keep() refuses. */
int fw_dp_prune(int fd, size_t key_size, bool (*keep)(const void *key, const void *ctx),
		const void *ctx);

/* One element by fd: fw_dp_update logs "can't update WHAT" when the
 * kernel refuses; fw_dp_lookup and fw_dp_delete say nothing (-ENOENT
 * for a missing key). */
int fw_dp_update(int fd, const void *key, const void *val, __u64 flags, const char *what);
int fw_dp_lookup(int fd, const void *key, void *val);
int fw_dp_delete(int fd, const void *key);

#endif /* FW_DATAPATH_SCAN_H */
