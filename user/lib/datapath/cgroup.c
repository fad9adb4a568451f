// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process sandboxes: fastwall_cgroups, the cgroup programs on the TC
 * programs' maps, their attachment, and the cgroup2 file system. See
 * datapath/cgroup.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath/cgroup.h"
#include "datapath/dispatch.h"
#include "datapath/scan.h"
#include "cgroup.skel.h"
#include "common/log.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#define FW_FILEID_KERNFS  0xfe /* a cgroup's file handle: its 64-bit id */
#define FW_CG_PROG_PREFIX "fw_cg_"

struct fw_cg {
	struct cgroup_bpf *skel;
};

/* ---- the map ---- */

int fw_dp_cgroup_put(struct fw_dp *dp, __u64 cgid, const struct fw_subject *s)
{
	if (dp->cgroups_fd < 0)
		return -ENOENT;
	if (bpf_map_update_elem(dp->cgroups_fd, &cgid, s, BPF_ANY)) {
		int err = -errno;

		fw_err("can't write cgroup %llu of subject %u: %s", (unsigned long long)cgid, s->id,
		       strerror(-err));
		return err;
	}
	/* after the write: a socket's record of the subject (fastwall_cg_sock)
	 * taken before it ends with its epoch */
	return fw_dp_rules_epoch_bump(dp);
}

int fw_dp_cgroup_del(struct fw_dp *dp, __u64 cgid, __u32 id)
{
	struct fw_subject cur;

	if (dp->cgroups_fd < 0)
		return 0;
	if (bpf_map_lookup_elem(dp->cgroups_fd, &cgid, &cur) || cur.id != id)
		return 0;
	if (bpf_map_delete_elem(dp->cgroups_fd, &cgid) && errno != ENOENT)
		return -errno;
	return fw_dp_rules_epoch_bump(dp);
}

int fw_dp_cgroup_lookup(struct fw_dp *dp, __u64 cgid, struct fw_subject *out)
{
	if (dp->cgroups_fd < 0)
		return -ENOENT;
	return bpf_map_lookup_elem(dp->cgroups_fd, &cgid, out) ? -errno : 0;
}

int fw_dp_cgroup_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	if (dp->cgroups_fd < 0)
		return 0;
	return fw_dp_scan(dp->cgroups_fd, fn, ctx);
}

/* ---- the programs ---- */

static bool own_map(const char *name)
{
#define IS_OWN(n)                                                                                  \
	if (strcmp(name, #n) == 0)                                                                 \
		return true;
	FW_CG_MAPS(IS_OWN)
#undef IS_OWN
	return false;
}

int fw_cg_load(struct fw_dp *dp, struct fw_cg **out)
{
	struct fw_cg *cg = calloc(1, sizeof(*cg));
	struct bpf_map *m;
	int err;

	if (!cg)
		return -ENOMEM;
	cg->skel = cgroup_bpf__open();
	if (!cg->skel) {
		err = -errno;
		fw_err("can't open the cgroup BPF object: %s", strerror(-err));
		goto cleanup;
	}
	/* every map is the TC programs' own: one policy, one set of counters */
	bpf_object__for_each_map(m, cg->skel->obj)
	{
		int fd;

		if (bpf_map__is_internal(m) || own_map(bpf_map__name(m)))
			continue;
		fd = fw_dp_map_fd(dp, bpf_map__name(m));
		if (fd < 0) {
			err = -ENOENT;
			fw_err("cgroup programs: map %s is not in the data plane",
			       bpf_map__name(m));
			goto cleanup;
		}
		err = bpf_map__set_pin_path(m, NULL);
		if (!err)
			err = bpf_map__reuse_fd(m, fd);
		if (err) {
			fw_err("cgroup programs: can't share map %s: %s", bpf_map__name(m),
			       strerror(-err));
			goto cleanup;
		}
	}
	/* the setsockopt program walks the task's cgroup ancestors where
	 * the kernel lets it (not 5.10) */
	cg->skel->rodata->fw_cg_sockopt_walk =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCKOPT,
					BPF_FUNC_get_current_ancestor_cgroup_id, NULL) == 1;
	err = cgroup_bpf__load(cg->skel);
	if (err) {
		fw_err("can't load the cgroup BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	*out = cg;
	/* the proxy ports of the pins as they are (a restart) */
	fw_cg_l7_sync(cg, dp);
	return 0;

cleanup:
	cgroup_bpf__destroy(cg->skel);
	free(cg);
	return err;
}

int fw_cg_l7_sync(struct fw_cg *cg, struct fw_dp *dp)
{
	__be16 ports[FW_CG_L7_PROXIES] = {0};
	struct fw_port_key k, *prev = NULL;
	size_t n = 0;
	int err = 0;

	if (dp->l7_ports_fd < 0)
		return 0;
	while (!bpf_map_get_next_key(dp->l7_ports_fd, prev, &k)) {
		struct fw_l7_port v;
		size_t i = 0;

		prev = &k;
		if (bpf_map_lookup_elem(dp->l7_ports_fd, &k, &v) || !v.proxy_port)
			continue;
		while (i < n && ports[i] != v.proxy_port)
			i++;
		if (i < n)
			continue;
		if (n == FW_CG_L7_PROXIES) {
			fw_err("more than %d layer-7 proxy ports: the cgroup programs keep %d",
			       FW_CG_L7_PROXIES, FW_CG_L7_PROXIES);
			err = -E2BIG;
			break;
		}
		ports[n++] = v.proxy_port;
	}
	_Static_assert(sizeof(cg->skel->bss->fw_cg_l7_proxy) == sizeof(ports), "fw_cg_l7_proxy");
	for (size_t i = 0; i < FW_CG_L7_PROXIES; i++)
		cg->skel->bss->fw_cg_l7_proxy[i] = ports[i];
	return err;
}

void fw_cg_close(struct fw_cg *cg)
{
	if (!cg)
		return;
	cgroup_bpf__destroy(cg->skel);
	free(cg);
}

int fw_cg_prog_fd(struct fw_cg *cg, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(cg->skel->obj, name);

	return p ? bpf_program__fd(p) : -ENOENT;
}

/* The ids of the programs of type attached to cgroup fd cgfd whose name
 * is want (prefix: every fastwall cgroup program); at most max. */
static int attached(int cgfd, enum bpf_attach_type type, const char *want, bool prefix, __u32 *out,
		    __u32 max)
{
	__u32 ids[64], cnt = 64, n = 0, flags = 0;

	if (bpf_prog_query(cgfd, type, 0, &flags, ids, &cnt))
		return -errno;
	for (__u32 i = 0; i < cnt && n < max; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(ids[i]);
		bool match;

		if (fd < 0)
			continue;
		match = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
			(prefix ? strncmp(info.name, want, strlen(want)) == 0
				: strncmp(info.name, want, sizeof(info.name) - 1) == 0);
		close(fd);
		if (match)
			out[n++] = ids[i];
	}
	return (int)n;
}

int fw_cg_attach(struct fw_cg *cg, const char *dir)
{
	struct bpf_program *p;
	int cgfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (cgfd < 0) {
		err = -errno;
		fw_err("can't open cgroup %s: %s", dir, strerror(-err));
		return err;
	}
	bpf_object__for_each_program(p, cg->skel->obj)
	{
		enum bpf_attach_type type = bpf_program__expected_attach_type(p);
		LIBBPF_OPTS(bpf_prog_attach_opts, opts, .flags = BPF_F_ALLOW_MULTI);
		__u32 old[8];
		int n = attached(cgfd, type, bpf_program__name(p), false, old, 8), oldfd = -1;

		if (n < 0) {
			err = n;
			fw_err("can't list the programs of cgroup %s: %s", dir, strerror(-err));
			break;
		}
		/* an earlier start's program is replaced in one step: the
		 * cgroup is never without one */
		if (n > 0 && (oldfd = bpf_prog_get_fd_by_id(old[0])) >= 0) {
			opts.flags |= BPF_F_REPLACE;
			opts.replace_prog_fd = oldfd;
		}
		if (bpf_prog_attach_opts(bpf_program__fd(p), cgfd, type, &opts))
			err = -errno;
		if (oldfd >= 0)
			close(oldfd);
		if (err) {
			fw_err("can't attach %s to cgroup %s: %s", bpf_program__name(p), dir,
			       strerror(-err));
			break;
		}
		/* leftovers of starts cut short: one of each is enough */
		for (int i = 1; i < n; i++) {
			int fd = bpf_prog_get_fd_by_id(old[i]);

			if (fd >= 0) {
				bpf_prog_detach2(fd, cgfd, type);
				close(fd);
			}
		}
	}
	close(cgfd);
	return err;
}

int fw_cg_detach(const char *dir)
{
	static const enum bpf_attach_type types[] = {
		BPF_CGROUP_INET4_CONNECT,     BPF_CGROUP_INET6_CONNECT,
		BPF_CGROUP_UDP4_SENDMSG,      BPF_CGROUP_UDP6_SENDMSG,
		BPF_CGROUP_UDP4_RECVMSG,      BPF_CGROUP_UDP6_RECVMSG,
		BPF_CGROUP_INET4_BIND,	      BPF_CGROUP_INET6_BIND,
		BPF_CGROUP_INET_SOCK_CREATE,  BPF_CGROUP_INET_EGRESS,
		BPF_CGROUP_INET4_GETPEERNAME, BPF_CGROUP_INET6_GETPEERNAME,
		BPF_CGROUP_SETSOCKOPT,	      BPF_CGROUP_SOCK_OPS,
	};
	int cgfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;

	if (cgfd < 0)
		return -errno;
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		__u32 ids[16];
		int k = attached(cgfd, types[t], FW_CG_PROG_PREFIX, true, ids, 16);

		for (int i = 0; i < k; i++) {
			int fd = bpf_prog_get_fd_by_id(ids[i]);

			if (fd < 0)
				continue;
			if (bpf_prog_detach2(fd, cgfd, types[t]) == 0)
				n++;
			close(fd);
		}
	}
	close(cgfd);
	return n;
}

/* ---- the cgroup2 file system ---- */

int fw_cg_id_of(const char *path, __u64 *id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = {.fh.handle_bytes = sizeof(__u64)};
	int mount_id;

	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return -errno;
	if (h.fh.handle_bytes != sizeof(__u64))
		return -EINVAL;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

bool fw_cg_nsdelegate(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], fstype[32], opts[1024];
	bool yes = false;

	if (!f)
		return false;
	while (!yes && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");
		char *tok, *save;

		if (!sep || sscanf(sep + 3, "%31s %*s %1023s", fstype, opts) != 2 ||
		    strcmp(fstype, "cgroup2"))
			continue;
		for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			yes |= strcmp(tok, "nsdelegate") == 0;
	}
	fclose(f);
	return yes;
}

bool fw_cg_is_cgroup2(const char *path)
{
	struct statfs st;
	__u64 id;

	/* the root cgroup's id is 1: a directory below would not do */
	return statfs(path, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC &&
	       fw_cg_id_of(path, &id) == 0 && id == 1;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int fw_cg_mount(const char *want, const char *fallback, char *out, size_t len)
{
	int err;

	if (fw_cg_is_cgroup2(want)) {
		snprintf(out, len, "%s", want);
		return 0;
	}
	/* a hybrid layout has one already (/sys/fs/cgroup/unified) */
	if (fw_cg_find_mount(out, len) == 0) {
		fw_info("%s is not a cgroup2 mount: using the one at %s", want, out);
		return 0;
	}
	if (!fw_cg_is_cgroup2(fallback)) {
		err = mkdir_p(fallback);
		if (err ||
		    mount("none", fallback, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
			err = err ? err : -errno;
			fw_err("%s is not a cgroup2 mount, and cgroup2 can't be mounted at %s: %s",
			       want, fallback, strerror(-err));
			return err;
		}
		fw_info("%s is not a cgroup2 mount: mounted cgroup2 at %s", want, fallback);
	}
	snprintf(out, len, "%s", fallback);
	return 0;
}

int fw_cg_level(const char *root, const char *path)
{
	char r[PATH_MAX], p[PATH_MAX];
	size_t rl;
	int n = 0;

	if (!realpath(root, r) || !realpath(path, p))
		return -errno;
	rl = strlen(r);
	if (strncmp(p, r, rl) != 0 || (p[rl] != '/' && p[rl] != '\0'))
		return -EXDEV;
	for (const char *c = p + rl; *c; c++)
		n += *c == '/';
	return n;
}

int fw_cg_populated(const char *path)
{
	char file[PATH_MAX], line[128];
	int ret = -EINVAL;
	FILE *f;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "populated ", 10) == 0) {
			ret = line[10] == '1';
			break;
		}
	}
	fclose(f);
	return ret;
}

int fw_cg_kill(const char *path)
{
	char file[PATH_MAX];
	int fd, err = 0;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) != 1)
		err = -errno;
	close(fd);
	return err;
}

int fw_cg_open_id(const char *root, __u64 id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = {.fh.handle_bytes = sizeof(__u64), .fh.handle_type = FW_FILEID_KERNFS};
	int mfd, fd;

	memcpy(h.fh.f_handle, &id, sizeof(id));
	mfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fd = errno == ESTALE ? -ENOENT : -errno;
	close(mfd);
	return fd;
}

int fw_cg_path_of(const char *root, __u64 id, char *out, size_t len)
{
	char link[64];
	int fd, err = 0;
	ssize_t n;

	fd = fw_cg_open_id(root, id);
	if (fd < 0)
		return fd;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n < 0)
		err = -errno;
	else
		out[n] = '\0';
	close(fd);
	return err;
}

int fw_cg_find_mount(char *out, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	int err = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup2") == 0 && fw_cg_is_cgroup2(m->mnt_dir)) {
			snprintf(out, len, "%s", m->mnt_dir);
			err = 0;
			break;
		}
	}
	endmntent(f);
	return err;
}
