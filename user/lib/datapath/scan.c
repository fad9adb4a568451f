// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Scans, record lists and deletions by key (see scan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/scan.h"

/* Hash maps are read in batches of this many entries (one syscall each). */
#define SCAN_BATCH 4096

int fw_dp_scan(int fd, int (*fn)(const void *key, const void *val, void *ctx), void *ctx)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), chunk = SCAN_BATCH, in_tok = 0, out_tok = 0;
	char *keys = NULL, *vals = NULL, *prev = NULL;
	bool first = true;
	int err = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (!info.key_size || info.key_size > 64 || info.value_size > 4096)
		return -EINVAL;
	/* batches: hash maps (5.6+); tries and older kernels go key by key */
	if (info.type != BPF_MAP_TYPE_HASH && info.type != BPF_MAP_TYPE_LRU_HASH)
		goto by_key;
	for (;;) {
		__u32 count = chunk;
		int ret;

		if (!keys) {
			keys = malloc((size_t)chunk * info.key_size);
			vals = malloc((size_t)chunk * (info.value_size ? info.value_size : 1));
			if (!keys || !vals) {
				err = -ENOMEM;
				goto out;
			}
		}
		ret = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok, keys, vals, &count,
					   NULL);
		if (ret && errno == ENOSPC && count == 0 && chunk < (1u << 20)) {
			/* one bucket holds more than a batch: retry larger */
			chunk *= 2;
			free(keys);
			free(vals);
			keys = vals = NULL;
			continue;
		}
		if (ret && errno != ENOENT) {
			if (first && (errno == EINVAL || errno == EOPNOTSUPP || errno == 524)) {
				free(keys);
				free(vals);
				keys = vals = NULL;
				goto by_key; /* ENOTSUPP: no batch operations here */
			}
			err = -errno;
			goto out;
		}
		first = false;
		for (__u32 i = 0; i < count; i++) {
			err = fn(keys + (size_t)i * info.key_size,
				 vals + (size_t)i * info.value_size, ctx);
			if (err)
				goto out;
		}
		if (ret) /* ENOENT: that was the last batch */
			goto out;
		in_tok = out_tok;
	}

by_key:
	keys = malloc(2 * (size_t)info.key_size);
	vals = malloc(info.value_size ? info.value_size : 1);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; bpf_map_get_next_key(fd, prev, keys + i * info.key_size) == 0; i ^= 1) {
		char *cur = keys + i * info.key_size;

		prev = cur;
		if (bpf_map_lookup_elem(fd, cur, vals))
			continue; /* deleted meanwhile */
		err = fn(cur, vals, ctx);
		if (err)
			break;
	}
out:
	free(keys);
	free(vals);
	return err;
}

int fw_recs_push(struct fw_recs *r, const void *rec)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 256;
		char *grown = realloc(r->data, nc * r->size);

		if (!grown)
			return -ENOMEM;
		r->data = grown;
		r->cap = nc;
	}
	memcpy(r->data + r->n++ * r->size, rec, r->size);
	return 0;
}

struct prune_ctx {
	bool (*keep)(const void *key, const void *ctx);
	const void *ctx;
	struct fw_recs doomed;
};

static int prune_one(const void *key, const void *val, void *ctx)
{
	struct prune_ctx *p = ctx;

	(void)val;
	return p->keep(key, p->ctx) ? 0 : fw_recs_push(&p->doomed, key);
}

/* Deletes every key of fd for which keep() says no: one scan collects
 * them (deleting while walking would restart the walk), then they go in
 * batches where the kernel has them. */
int fw_dp_prune(int fd, size_t key_size, bool (*keep)(const void *key, const void *ctx),
		const void *ctx)
{
	struct prune_ctx p = {.keep = keep, .ctx = ctx, .doomed = {.size = key_size}};
	int err = fw_dp_scan(fd, prune_one, &p);

	if (!err)
		err = fw_dp_delete_keys(fd, p.doomed.data, p.doomed.n, key_size);
	free(p.doomed.data);
	return err;
}

int fw_dp_delete_keys(int fd, const void *keys, size_t n, size_t key_size)
{
	const char *k = keys;
	bool batch = true;
	size_t done = 0;
	int err = 0;

	while (done < n) {
		__u32 count = (__u32)(n - done > SCAN_BATCH ? SCAN_BATCH : n - done);

		if (batch && bpf_map_delete_batch(fd, k + done * key_size, &count, NULL) == 0) {
			done += count;
			continue;
		}
		if (!batch || errno != ENOENT) {
			batch = false; /* no batches for this map (or kernel) */
			count = 0;
		}
		/* a batch stops at a key that is gone already: skip it */
		done += count;
		if (bpf_map_delete_elem(fd, k + done * key_size) && errno != ENOENT && !err)
			err = -errno;
		done++;
	}
	return err;
}

int fw_dp_update(int fd, const void *key, const void *val, __u64 flags, const char *what)
{
	if (bpf_map_update_elem(fd, key, val, flags)) {
		int err = -errno;

		fw_err("can't update %s: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

int fw_dp_lookup(int fd, const void *key, void *val)
{
	return bpf_map_lookup_elem(fd, key, val) ? -errno : 0;
}

int fw_dp_delete(int fd, const void *key)
{
	return bpf_map_delete_elem(fd, key) ? -errno : 0;
}
