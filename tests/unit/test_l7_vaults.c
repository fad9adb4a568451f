// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The proxy's copy of the vaults (protocol/l7vaults.h), against real
 * kernel maps: a sync writes the blob and then a new generation, read
 * back through the descriptors the proxy gets (the array mapped
 * PROT_READ, as the proxy maps it); a vault gone
 * (or never there) deletes the blob and zeroes the generation; the
 * proxy's descriptors cannot write. Needs root (CAP_BPF). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/secmem.h"
#include "protocol/l7vaults.h"

#define BODY                                                                                       \
	"{\"credentials\":[{\"name\":\"k\",\"source\":{\"type\":\"inline\",\"value\":"             \
	"\"%s\"}}],\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":[\"api.example.com\"]},"     \
	"\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Api-Key\",\"credential\":\"k\"}}]}"

static struct fw_policy allow_all;

static void put(struct fw_vault_store *s, const char *uid, const char *value)
{
	char body[512], err[256];
	struct fw_vault *v;

	snprintf(body, sizeof(body), BODY, value);
	cr_assert_eq(fw_vault_parse(body, strlen(body), &allow_all, 0, &v, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(fw_vault_store_put(s, uid, v), 0);
}

Test(l7_vaults, sync_writes_blob_then_generation)
{
	struct fw_vault_store *s = fw_vault_store_new();
	struct fw_l7_vaults *m;
	struct fw_l7_vault_blob *blob = fw_secmem_alloc(sizeof(*blob));
	unsigned char want[512];
	size_t wlen;
	int vfd, gfd, err;
	__u32 id = 7;
	const volatile __u64 *gen;
	__u64 g1;

	fw_policy_init(&allow_all);
	allow_all.default_action = FW_ACTION_ALLOW;
	err = fw_l7_vaults_new(&m);
	cr_assert_eq(err, 0, "fw_l7_vaults_new: %s", strerror(-err));
	cr_assert_eq(fw_l7_vaults_ro_fds(m, &vfd, &gfd), 0);
	gen = mmap(NULL, FW_MAX_SUBJECTS * sizeof(__u64), PROT_READ, MAP_SHARED, gfd, 0);
	cr_assert_neq((void *)gen, MAP_FAILED, "the proxy maps the generations read-only: %s",
		      strerror(errno));

	/* no vault: nothing written, nothing counted */
	cr_expect_eq(fw_l7_vaults_sync(m, id, s, "u"), 0);
	cr_expect_eq(fw_l7_vaults_count(m), 0);
	cr_expect_eq(bpf_map_lookup_elem(vfd, &id, blob), -ENOENT);

	put(s, "u", "sk-one");
	cr_assert_eq(fw_l7_vaults_sync(m, id, s, "u"), 0);
	cr_expect_eq(fw_l7_vaults_count(m), 1);
	cr_assert_eq(bpf_map_lookup_elem(vfd, &id, blob), 0);
	g1 = gen[id];
	cr_expect_neq(g1, 0);
	cr_expect_eq(blob->generation, g1, "blob %llu, array %llu",
		     (unsigned long long)blob->generation, (unsigned long long)g1);
	cr_assert_eq(fw_vault_store_l7_encode(s, "u", want, sizeof(want), &wlen), 0);
	cr_expect_eq(blob->len, wlen);
	cr_expect_eq(memcmp(blob->data, want, wlen), 0);
	cr_expect_eq(gen[id + 1], 0, "other ids untouched");

	/* a change: a new, larger generation */
	put(s, "u", "sk-two");
	cr_assert_eq(fw_l7_vaults_sync(m, id, s, "u"), 0);
	cr_assert_eq(bpf_map_lookup_elem(vfd, &id, blob), 0);
	cr_expect_gt(gen[id], g1);
	cr_expect_eq(blob->generation, gen[id]);
	cr_expect(memmem(blob->data, blob->len, "sk-two", 6));
	cr_expect_eq(fw_l7_vaults_count(m), 1);

	/* the proxy's descriptor of the blobs only reads, its mapping of the
	 * generations cannot be made writable */
	cr_expect_neq(bpf_map_update_elem(vfd, &id, blob, BPF_ANY), 0);
	cr_expect_neq(bpf_map_delete_elem(vfd, &id), 0);
	cr_expect_neq(
		mprotect((void *)gen, FW_MAX_SUBJECTS * sizeof(__u64), PROT_READ | PROT_WRITE), 0);

	/* the vault gone: generation 0, blob deleted */
	cr_assert_eq(fw_vault_store_del(s, "u"), 0);
	cr_assert_eq(fw_l7_vaults_sync(m, id, s, "u"), 0);
	cr_expect_eq(gen[id], 0);
	cr_expect_eq(bpf_map_lookup_elem(vfd, &id, blob), -ENOENT);
	cr_expect_eq(errno, ENOENT);
	cr_expect_eq(fw_l7_vaults_count(m), 0);

	/* a delete by id (the subject removed) */
	put(s, "u", "sk-three");
	cr_assert_eq(fw_l7_vaults_sync(m, id, s, "u"), 0);
	cr_assert_eq(fw_l7_vaults_del(m, id), 0);
	cr_expect_eq(gen[id], 0);
	cr_expect_eq(bpf_map_lookup_elem(vfd, &id, blob), -ENOENT);
	cr_expect_eq(fw_l7_vaults_count(m), 0);
	cr_expect_eq(fw_l7_vaults_sync(m, 0, s, "u"), -EINVAL);
	cr_expect_eq(fw_l7_vaults_sync(m, FW_MAX_SUBJECTS, s, "u"), -EINVAL);

	munmap((void *)gen, FW_MAX_SUBJECTS * sizeof(__u64));
	close(vfd);
	close(gfd);
	fw_l7_vaults_free(m);
	fw_vault_store_free(s);
	fw_secmem_free(blob);
	fw_policy_free(&allow_all);
}
