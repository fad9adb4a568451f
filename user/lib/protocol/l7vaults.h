/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The credential vaults the layer-7 proxy injects from (docs/egress-l7.md,
 * "Credentials"): the two maps of fastwall/l7vault.h, created here, never
 * pinned, and written in its order (a put: the blob, then the generation;
 * a delete: the generation 0, then the blob). Each value is encoded in
 * locked memory and wiped once written. Any thread: one lock serialises
 * the writes. Functions return 0 or a negative errno. */
#ifndef FW_L7VAULTS_H
#define FW_L7VAULTS_H

#include "fastwall/l7vault.h"
#include "protocol/vault.h"

struct fw_l7_vaults;

/* Creates fastwall_l7_vaults and fastwall_l7_vault_gen (mapped here). */
int fw_l7_vaults_new(struct fw_l7_vaults **out);
void fw_l7_vaults_free(struct fw_l7_vaults *m);
/* New descriptors of the two maps for the proxy (CLOEXEC): the hash's
 * read-only; the array's read-write, because the kernel maps a BPF map
 * (mmap MAP_SHARED) only through a descriptor open for writing: the proxy
 * maps it PROT_READ. */
int fw_l7_vaults_ro_fds(const struct fw_l7_vaults *m, int *vaults_fd, int *gen_fd);
/* Subject id's blob from uid's vault in s, with a new generation; when
 * uid has none, id's blob is deleted. A vault that does not encode (too
 * large) is deleted too: nothing is injected rather than an old value. */
int fw_l7_vaults_sync(struct fw_l7_vaults *m, __u32 id, struct fw_vault_store *s, const char *uid);
/* Deletes id's blob (none: 0). */
int fw_l7_vaults_del(struct fw_l7_vaults *m, __u32 id);
/* Subjects with a blob in the map now (relaxed read, any thread). */
__u64 fw_l7_vaults_count(const struct fw_l7_vaults *m);

#endif /* FW_L7VAULTS_H */
