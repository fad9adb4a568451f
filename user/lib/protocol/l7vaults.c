// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The proxy's copy of the credential vaults (l7vaults.h). The blob buffer
 * is one allocation of locked memory reused under the lock: a vault's
 * encoding exists only there, in the kernel's map, and in the proxy. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/secmem.h"
#include "protocol/l7vaults.h"

#define GEN_BYTES ((size_t)FW_MAX_SUBJECTS * sizeof(__u64))

/* the kernel keeps 15 characters of a map's name: fastwall_l7_vaults
 * and fastwall_l7_vault_gen would both be "fastwall_l7_vau" */
struct fw_l7_vaults {
	pthread_mutex_t lock;
	int vaults_fd, gen_fd;
	__u64 *gen;  /* fastwall_l7_vault_gen, mapped */
	__u64 last;  /* the last generation handed out */
	__u64 count; /* ids with a blob (relaxed atomics) */
	__u64 present[FW_MAX_SUBJECTS / 64];
	struct fw_l7_vault_blob *blob; /* secmem */
};

static size_t gen_map_len(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (GEN_BYTES + page - 1) / page * page;
}

int fw_l7_vaults_new(struct fw_l7_vaults **out)
{
	LIBBPF_OPTS(bpf_map_create_opts, hopts, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, aopts, .map_flags = BPF_F_MMAPABLE);
	struct fw_l7_vaults *m;
	void *gen;
	int err;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->vaults_fd = m->gen_fd = -1;
	m->blob = fw_secmem_alloc(sizeof(*m->blob));
	if (!m->blob) {
		err = -ENOMEM;
		goto fail;
	}
	m->vaults_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "fw_l7_vaults", sizeof(__u32),
				      sizeof(struct fw_l7_vault_blob), FW_MAX_SUBJECTS, &hopts);
	if (m->vaults_fd < 0) {
		err = -errno;
		goto fail;
	}
	m->gen_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fw_l7_vault_gen", sizeof(__u32),
				   sizeof(__u64), FW_MAX_SUBJECTS, &aopts);
	if (m->gen_fd < 0) {
		err = -errno;
		goto fail;
	}
	gen = mmap(NULL, gen_map_len(), PROT_READ | PROT_WRITE, MAP_SHARED, m->gen_fd, 0);
	if (gen == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	m->gen = gen;
	*out = m;
	return 0;
fail:
	fw_l7_vaults_free(m);
	return err;
}

void fw_l7_vaults_free(struct fw_l7_vaults *m)
{
	if (!m)
		return;
	if (m->gen)
		munmap(m->gen, gen_map_len());
	if (m->vaults_fd >= 0)
		close(m->vaults_fd);
	if (m->gen_fd >= 0)
		close(m->gen_fd);
	fw_secmem_free(m->blob);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int new_fd(int fd, __u32 flags)
{
	LIBBPF_OPTS(bpf_get_fd_by_id_opts, o, .open_flags = flags);
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int ro;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	ro = bpf_map_get_fd_by_id_opts(info.id, &o);
	return ro < 0 ? -errno : ro;
}

int fw_l7_vaults_ro_fds(const struct fw_l7_vaults *m, int *vaults_fd, int *gen_fd)
{
	*vaults_fd = new_fd(m->vaults_fd, BPF_F_RDONLY);
	if (*vaults_fd < 0)
		return *vaults_fd;
	/* mmap(MAP_SHARED) of a read-only BPF map descriptor fails (EINVAL:
	 * the kernel drops VM_SHARED for a file not open for writing), so the
	 * array's is read-write; the proxy maps it PROT_READ, and the kernel
	 * then refuses an mprotect to writable */
	*gen_fd = new_fd(m->gen_fd, 0);
	if (*gen_fd < 0) {
		int err = *gen_fd;

		close(*vaults_fd);
		*vaults_fd = -1;
		return err;
	}
	return 0;
}

static bool has(const struct fw_l7_vaults *m, __u32 id)
{
	return m->present[id / 64] & (1ull << (id % 64));
}

static void mark(struct fw_l7_vaults *m, __u32 id, bool on)
{
	if (has(m, id) == on)
		return;
	m->present[id / 64] ^= 1ull << (id % 64);
	__atomic_store_n(&m->count, m->count + (on ? 1 : (__u64)-1), __ATOMIC_RELAXED);
}

/* Lock held. Generation 0 first: a reader that sees it stops injecting
 * before the blob goes. */
static int del_locked(struct fw_l7_vaults *m, __u32 id)
{
	int err = 0;

	if (!has(m, id))
		return 0;
	__atomic_store_n(&m->gen[id], 0, __ATOMIC_RELEASE);
	if (bpf_map_delete_elem(m->vaults_fd, &id) && errno != ENOENT)
		err = -errno;
	mark(m, id, false);
	return err;
}

int fw_l7_vaults_del(struct fw_l7_vaults *m, __u32 id)
{
	int err;

	if (!id || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	err = del_locked(m, id);
	pthread_mutex_unlock(&m->lock);
	return err;
}

int fw_l7_vaults_sync(struct fw_l7_vaults *m, __u32 id, struct fw_vault_store *s, const char *uid)
{
	struct fw_l7_vault_blob *b = m->blob;
	size_t len = 0;
	int err;

	if (!id || id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	err = fw_vault_store_l7_encode(s, uid, b->data, sizeof(b->data), &len);
	if (err) {
		explicit_bzero(b->data, len < sizeof(b->data) ? len : sizeof(b->data));
		/* no vault, or one that does not fit: nothing to inject */
		del_locked(m, id);
		pthread_mutex_unlock(&m->lock);
		return err == -ENOENT ? 0 : err;
	}
	b->generation = ++m->last;
	b->len = (__u32)len;
	if (bpf_map_update_elem(m->vaults_fd, &id, b, BPF_ANY)) {
		err = -errno;
		explicit_bzero(b->data, len);
		/* the old blob, if any, must not stay in force */
		del_locked(m, id);
		pthread_mutex_unlock(&m->lock);
		return err;
	}
	explicit_bzero(b->data, len);
	__atomic_store_n(&m->gen[id], b->generation, __ATOMIC_RELEASE);
	mark(m, id, true);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

__u64 fw_l7_vaults_count(const struct fw_l7_vaults *m)
{
	return m ? __atomic_load_n(&m->count, __ATOMIC_RELAXED) : 0;
}
