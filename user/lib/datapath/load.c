// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading and pinning: the ABI record, the layout checks made before
 * libbpf touches a pin, the migration of an older ABI's maps, and
 * opening, closing and purging the pinned state. See datapath.h and
 * maps.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "datapath/cgroup.h"
#include "datapath/datapath.h"
#include "datapath/dispatch.h"
#include "datapath/rules_store.h"
#include "datapath/scan.h"
#include "egress.skel.h"
#include "common/log.h"

#define PURGE_HINT                                                                                 \
	"nothing pinned was changed; 'fastwalld detach --purge' removes the pinned state (the "    \
	"data plane then starts empty)"

struct retired_map {
	const char *name;
	__u32 abi; /* the last ABI that had it */
	__u32 type, key_size, value_size, max_entries;
	const char *successor;
};

#define RETIRED_ENTRY(name, abi, type, key, value, max, successor)                                 \
	{#name, abi, type, key, value, max, #successor},
static const struct retired_map retired[FW_DP_NRETIRED] = {FW_DP_RETIRED_MAPS(RETIRED_ENTRY)};

struct user_map {
	const char *name;
	__u32 type, key_size, value_size, max_entries;
};

#define USER_ENTRY(name, field, type, key, value, max) {#name, type, key, value, max},
static const struct user_map user_maps[FW_DP_NUSER] = {FW_DP_USER_MAPS(USER_ENTRY)};

#define MAP_NAME(name, field, version, late) #name,
static const char *const map_names[FW_DP_NMAPS] = {FW_DP_MAPS(MAP_NAME)};
#define MAP_LATE(name, field, version, late) late,
static const bool map_late[FW_DP_NMAPS] = {FW_DP_MAPS(MAP_LATE)};

/* The fd field of map name in dp, NULL when the table has none. */
static int *map_fd(struct fw_dp *dp, const char *name)
{
#define FD_OF(n, field, version, late)                                                             \
	if (strcmp(name, #n) == 0)                                                                 \
		return &dp->field;
#define USER_FD_OF(n, field, type, key, value, max) FD_OF(n, field, 0, 0)
	FW_DP_MAPS(FD_OF)
	FW_DP_USER_MAPS(USER_FD_OF)
#undef USER_FD_OF
#undef FD_OF
	return NULL;
}

int fw_dp_map_fd(struct fw_dp *dp, const char *name)
{
	int *fd = map_fd(dp, name);

	return fd ? *fd : -ENOENT;
}

static void fds_init(struct fw_dp *dp)
{
	dp->btf_fd = -1;
	dp->from_sandbox_fd = dp->to_sandbox_fd = -1;
	for (size_t i = 0; i < FW_DP_NMAPS; i++)
		*map_fd(dp, map_names[i]) = -1;
	for (size_t i = 0; i < FW_DP_NUSER; i++)
		*map_fd(dp, user_maps[i].name) = -1;
	for (size_t i = 0; i < FW_DP_NRETIRED; i++)
		dp->retired_fd[i] = -1;
}

static int mkdir_p(const char *path)
{
	char buf[256];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/* The pin directory is a directory of its own on a bpf filesystem, not
 * the filesystem's mount point: pins there would mix with every other
 * tool's, and a clean-up of fastwall's could touch theirs. */
static int pin_root_ok(const char *path)
{
	char parent[sizeof(((struct fw_dp *)0)->pin_root) + 4];
	struct stat st, pst;
	struct statfs fs;

	if (statfs(path, &fs)) {
		fw_err("pin directory %s: %s", path, strerror(errno));
		return -errno;
	}
	if ((unsigned long)fs.f_type != BPF_FS_MAGIC) {
		fw_err("pin directory %s is not on a bpf filesystem (mount one: mount -t bpf bpf "
		       "/sys/fs/bpf)",
		       path);
		return -EINVAL;
	}
	snprintf(parent, sizeof(parent), "%s/..", path);
	if (stat(path, &st) || stat(parent, &pst))
		return -errno;
	if (st.st_dev != pst.st_dev || st.st_ino == pst.st_ino) {
		fw_err("pin directory %s is a bpf filesystem's mount point: give fastwall a "
		       "directory "
		       "of its own under it (datapath.bpffs, as /sys/fs/bpf/fastwall)",
		       path);
		return -EINVAL;
	}
	return 0;
}

/* Lines of a verifier log printed from its end: where it says why. */
#define LOG_TAIL 40

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum fw_log_level to = level == LIBBPF_WARN ? FW_LOG_WARN : FW_LOG_DEBUG;
	char *msg = NULL, *line, *next;
	size_t nlines = 0, at = 0;

	if (level == LIBBPF_DEBUG && fw_log_level < FW_LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && fw_log_level < FW_LOG_DEBUG)
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	/* netlink's answer when clsact already exists, which fastwall expects */
	if (strstr(msg, "Exclusivity flag on") || strstr(msg, "Parent Qdisc doesn't exist")) {
		free(msg);
		return 0;
	}
	/* a filter looked up or detached that is not there (the readiness
	 * check of a port whose filter went, a detach of what is gone):
	 * an answer fastwall acts on, not a warning */
	if (strstr(msg, "Cannot find specified filter chain")) {
		if (fw_log_level < FW_LOG_DEBUG) {
			free(msg);
			return 0;
		}
		to = FW_LOG_DEBUG;
	}
	/* one line each (a program's load log is one message of many lines):
	 * the first, then the last LOG_TAIL */
	for (const char *c = msg; *c; c++)
		nlines += *c == '\n' || !c[1];
	for (line = msg; line && *line; line = next, at++) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (at && nlines > LOG_TAIL + 1 && at < nlines - LOG_TAIL) {
			if (at == 1)
				fw_log(to, "libbpf: ... (%zu lines)", nlines - LOG_TAIL - 1);
			continue;
		}
		/* libbpf names itself already */
		if (!strncmp(line, "libbpf: ", 8))
			line += 8;
		fw_log(to, "libbpf: %.*s", 1000, line);
	}
	free(msg);
	return 0;
}

void fw_dp_quiet(void)
{
	libbpf_set_print(libbpf_print);
}

static void pin_path(char *buf, size_t size, const char *root, const char *name)
{
	snprintf(buf, size, "%s/%s", root, name);
}

static bool pinned(const char *root, const char *name)
{
	char path[512];

	pin_path(path, sizeof(path), root, name);
	return access(path, F_OK) == 0;
}

static int pinned_fd(const char *root, const char *name)
{
	char path[512];
	int fd;

	pin_path(path, sizeof(path), root, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	return fd;
}

/* A pinned program or link answers the map info query too, with other
 * data: only a map's fdinfo has a map_type line. */
static bool is_map(int fd)
{
	char path[64], line[128];
	bool map = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return true; /* no procfs: leave it to the layout check */
	while (!map && fgets(line, sizeof(line), f))
		map = strncmp(line, "map_type:", 9) == 0;
	fclose(f);
	errno = 0;
	return map;
}

struct layout {
	__u32 type, key_size, value_size, max_entries, flags;
};

static const char *type_str(__u32 type)
{
	const char *s = libbpf_bpf_map_type_str((enum bpf_map_type)type);

	return s ? s : "unknown type";
}

/* Opens pin name and checks that it is a map of layout want: 0 and the
 * fd in *fd_out (when asked), -ENOENT when nothing is pinned there, or
 * -EPROTO after saying what is there and what is expected. */
static int check_pin(const char *root, const char *name, const struct layout *want,
		     bool check_flags, int *fd_out)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = pinned_fd(root, name), err;

	if (fd == -ENOENT)
		return -ENOENT;
	if (fd < 0) {
		fw_err("can't open %s/%s: %s; %s", root, name, strerror(-fd), PURGE_HINT);
		return -EPROTO;
	}
	if (!is_map(fd) || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = errno ? -errno : -EINVAL;
		fw_err("%s/%s is not a BPF map (%s); %s", root, name, strerror(-err), PURGE_HINT);
		close(fd);
		return -EPROTO;
	}
	if (info.type != want->type || info.key_size != want->key_size ||
	    info.value_size != want->value_size || info.max_entries != want->max_entries ||
	    (check_flags && info.map_flags != want->flags)) {
		fw_err("pinned map %s/%s is a %s with key %u, value %u bytes, %u entries, flags "
		       "0x%x; this fastwalld expects a %s with key %u, value %u bytes, %u entries, "
		       "flags 0x%x under that name (pins of another release?); %s",
		       root, name, type_str(info.type), info.key_size, info.value_size,
		       info.max_entries, info.map_flags, type_str(want->type), want->key_size,
		       want->value_size, want->max_entries, want->flags, PURGE_HINT);
		close(fd);
		return -EPROTO;
	}
	if (fd_out)
		*fd_out = fd;
	else
		close(fd);
	return 0;
}

static const struct layout record_layout = {
	BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(struct fw_abi_record), 1, 0,
};

/* The ABI of the pins under root: 0 when nothing of fastwall is pinned,
 * the record's version, or 1 for maps without a record. -EPROTO (said
 * why) for a record of a newer or unknown ABI. */
static int pinned_abi(const char *root, __u32 *abi, __u32 *flags)
{
	struct fw_abi_record rec = {};
	__u32 zero = 0;
	int fd, err;

	*flags = 0;
	err = check_pin(root, FW_DP_ABI_PIN, &record_layout, false, &fd);
	if (err == -ENOENT) {
		*abi = 0;
		if (pinned(root, "fastwall_dispatch"))
			*abi = 1;
		for (size_t i = 0; i < FW_DP_NRETIRED; i++)
			if (pinned(root, retired[i].name))
				*abi = 1;
		return 0;
	}
	if (err)
		return err;
	err = bpf_map_lookup_elem(fd, &zero, &rec) ? -errno : 0;
	close(fd);
	if (err) {
		fw_err("can't read %s/%s: %s", root, FW_DP_ABI_PIN, strerror(-err));
		return err;
	}
	if (rec.magic != FW_ABI_MAGIC || rec.version < FW_ABI_OLDEST) {
		fw_err("%s/%s is not a fastwall ABI record (magic 0x%llx, version %u); %s", root,
		       FW_DP_ABI_PIN, (unsigned long long)rec.magic, rec.version, PURGE_HINT);
		return -EPROTO;
	}
	if (rec.version > FW_ABI_VERSION) {
		fw_err("the maps under %s are of fastwall ABI %u, newer than this release's %u: "
		       "run the release that pinned them; %s",
		       root, rec.version, FW_ABI_VERSION, PURGE_HINT);
		return -EPROTO;
	}
	*abi = rec.version;
	*flags = rec.flags;
	return 0;
}

/* Creates (or updates) the record saying the pins are of this ABI; a new
 * one is pinned written, so no reader sees it empty. */
static int write_record(const char *root)
{
	struct fw_abi_record rec = {
		.magic = FW_ABI_MAGIC,
		.version = FW_ABI_VERSION,
		.flags = FW_ABI_F_RULES_POPULATED, /* written only once they are */
	};
	char path[512];
	__u32 zero = 0;
	int fd, err = 0;

	pin_path(path, sizeof(path), root, FW_DP_ABI_PIN);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, FW_DP_ABI_PIN, record_layout.key_size,
				    record_layout.value_size, 1, NULL);
		if (fd < 0) {
			err = -errno;
			fw_err("can't create %s: %s", path, strerror(-err));
			return err;
		}
		if (bpf_map_update_elem(fd, &zero, &rec, BPF_ANY) || bpf_obj_pin(fd, path))
			err = -errno;
	} else if (bpf_map_update_elem(fd, &zero, &rec, BPF_ANY)) {
		err = -errno;
	}
	if (err)
		fw_err("can't write %s: %s", path, strerror(-err));
	close(fd);
	return err;
}

static struct layout user_layout(const struct user_map *u)
{
	struct layout l = {u->type, u->key_size, u->value_size, u->max_entries, 0};

	return l;
}

/* The maps userspace creates, where pinned (checked like the others). */
static int user_maps_open(struct fw_dp *dp)
{
	for (size_t i = 0; i < FW_DP_NUSER; i++) {
		struct layout want = user_layout(&user_maps[i]);
		int *fd = map_fd(dp, user_maps[i].name);
		int err = check_pin(dp->pin_root, user_maps[i].name, &want, false, fd);

		if (err == -ENOENT)
			*fd = -1;
		else if (err)
			return err;
	}
	return 0;
}

int fw_dp_src_slots_fd(const struct fw_dp *dp)
{
	return dp->skel ? bpf_map__fd(dp->skel->maps.fastwall_src_slots) : -1;
}

/* Before libbpf reuses a pin it compares the layout too, but then only
 * fails the load with a bare errno: check every map of the object that is
 * pinned, and the replaced maps of an older ABI, first. */
static int check_layouts(struct fw_dp *dp, __u32 abi)
{
	struct bpf_map *m;
	size_t n = 0;
	int err;

	bpf_object__for_each_map(m, dp->skel->obj)
	{
		struct layout want = {
			bpf_map__type(m),	 bpf_map__key_size(m),	bpf_map__value_size(m),
			bpf_map__max_entries(m), bpf_map__map_flags(m),
		};

		/* internal, or a cache of the programs' own (not pinned) */
		if (bpf_map__is_internal(m) || !bpf_map__pin_path(m))
			continue;
		if (!map_fd(dp, bpf_map__name(m))) {
			fw_err("BPF map %s is missing from the map table (maps.h)",
			       bpf_map__name(m));
			return -EINVAL;
		}
		n++;
		err = check_pin(dp->pin_root, bpf_map__name(m), &want, true, NULL);
		if (err && err != -ENOENT)
			return err;
	}
	if (n != FW_DP_NMAPS) {
		fw_err("the BPF object has %zu maps, the map table %d", n, FW_DP_NMAPS);
		return -EINVAL;
	}
	err = user_maps_open(dp);
	if (err)
		return err;
	for (size_t i = 0; i < FW_DP_NRETIRED && abi && abi < FW_ABI_VERSION; i++) {
		const struct retired_map *r = &retired[i];
		struct layout want = {r->type, r->key_size, r->value_size, r->max_entries, 0};

		if (abi > r->abi)
			continue;
		err = check_pin(dp->pin_root, r->name, &want, false, &dp->retired_fd[i]);
		if (err && err != -ENOENT)
			return err;
	}
	return 0;
}

/* Copies per-CPU array old's counters (u64s; its value may be shorter)
 * into carried's, slot by slot: carried[k] becomes old[k]. Only once the
 * old programs are replaced everywhere, so old no longer changes; and a
 * copy, not a move, so doing it again (after a crash) counts nothing
 * twice. carried is written by nobody else, and the live counters are
 * never written here: no increment of the data plane can be lost. */
static int counters_carry(int old_fd, int carried_fd, const char *what)
{
	struct bpf_map_info oi = {}, ci = {};
	__u32 olen = sizeof(oi), clen = sizeof(ci);
	int ncpu = libbpf_num_possible_cpus();
	char *ov = NULL, *cv = NULL;
	__u32 n, copied = 0;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	if (bpf_obj_get_info_by_fd(old_fd, &oi, &olen) ||
	    bpf_obj_get_info_by_fd(carried_fd, &ci, &clen))
		return -errno;
	if (oi.value_size > ci.value_size || oi.value_size % 8 || ci.value_size % 8)
		return -EINVAL;
	n = oi.max_entries < ci.max_entries ? oi.max_entries : ci.max_entries;
	ov = calloc(ncpu, oi.value_size);
	cv = calloc(ncpu, ci.value_size);
	if (!ov || !cv) {
		err = -ENOMEM;
		goto out;
	}
	for (__u32 k = 0; k < n; k++) {
		bool any = false;

		if (bpf_map_lookup_elem(old_fd, &k, ov)) {
			err = -errno;
			break;
		}
		memset(cv, 0, (size_t)ncpu * ci.value_size);
		for (int c = 0; c < ncpu; c++) {
			const char *from = ov + (size_t)c * oi.value_size;

			memcpy(cv + (size_t)c * ci.value_size, from, oi.value_size);
			for (__u32 i = 0; i < oi.value_size && !any; i++)
				any = from[i] != 0;
		}
		if (!any)
			continue;
		if (bpf_map_update_elem(carried_fd, &k, cv, BPF_ANY)) {
			err = -errno;
			break;
		}
		copied++;
	}
	if (err)
		fw_err("can't carry the counters of %s over: %s", what, strerror(-err));
	else
		fw_debug("carried %u slots of %s over", copied, what);
out:
	free(ov);
	free(cv);
	return err;
}

/* The carried map name, created and pinned when missing. */
static int user_map_get(struct fw_dp *dp, const char *name)
{
	int *fd = map_fd(dp, name);
	char path[512];

	if (!fd)
		return -EINVAL;
	if (*fd >= 0)
		return *fd;
	for (size_t i = 0; i < FW_DP_NUSER; i++) {
		const struct user_map *u = &user_maps[i];

		if (strcmp(u->name, name) != 0)
			continue;
		pin_path(path, sizeof(path), dp->pin_root, name);
		*fd = bpf_map_create(u->type, name, u->key_size, u->value_size, u->max_entries,
				     NULL);
		if (*fd < 0 || bpf_obj_pin(*fd, path)) {
			int err = -errno;

			fw_err("can't create %s: %s", path, strerror(-err));
			if (*fd >= 0)
				close(*fd);
			*fd = -1;
			return err;
		}
		return *fd;
	}
	return -EINVAL;
}

int fw_dp_domains_put(struct fw_dp *dp, __u32 id, __u64 hash)
{
	int fd = user_map_get(dp, "fastwall_subject_domains");

	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(fd, &id, &hash, BPF_ANY))
		return -errno;
	return 0;
}

__u64 fw_dp_domains_get(struct fw_dp *dp, __u32 id)
{
	__u64 hash = 0;

	if (dp->subject_domains_fd < 0 || bpf_map_lookup_elem(dp->subject_domains_fd, &id, &hash))
		return 0;
	return hash;
}

static int carry_counters(struct fw_dp *dp)
{
	for (size_t i = 0; i < FW_DP_NRETIRED; i++) {
		int to, err;

		if (dp->retired_fd[i] < 0 || retired[i].type == BPF_MAP_TYPE_ARRAY_OF_MAPS)
			continue; /* rules were copied at open */
		to = user_map_get(dp, retired[i].successor);
		if (to < 0)
			return to;
		err = counters_carry(dp->retired_fd[i], to, retired[i].name);
		if (err)
			return err;
	}
	return 0;
}

static void fill_fds(struct fw_dp *dp)
{
	struct egress_bpf *s = dp->skel;

#define FILL(name, field, version, late) dp->field = bpf_map__fd(s->maps.name);
	FW_DP_MAPS(FILL)
#undef FILL
	dp->from_sandbox_fd = bpf_program__fd(s->progs.fw_from_sandbox);
	dp->to_sandbox_fd = bpf_program__fd(s->progs.fw_to_sandbox);
}

static void find_btf(struct fw_dp *dp)
{
	const struct btf *btf = bpf_object__btf(dp->skel->obj);
	int key, val;

	dp->btf_fd = -1;
	if (!btf)
		return;
	key = btf__find_by_name_kind(btf, "fw_lpm_key", BTF_KIND_STRUCT);
	val = btf__find_by_name_kind(btf, "fw_rule", BTF_KIND_STRUCT);
	if (key <= 0 || val <= 0)
		return;
	dp->btf_fd = btf__fd(btf);
	dp->btf_lpm_key = key;
	dp->btf_rule = val;
}

static void user_maps_close(struct fw_dp *dp)
{
	for (size_t i = 0; i < FW_DP_NUSER; i++) {
		int *fd = map_fd(dp, user_maps[i].name);

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
}

static void retired_close(struct fw_dp *dp)
{
	for (size_t i = 0; i < FW_DP_NRETIRED; i++) {
		if (dp->retired_fd[i] >= 0)
			close(dp->retired_fd[i]);
		dp->retired_fd[i] = -1;
	}
}

/* fastwall_subject_rows has a row per possible CPU and subject,
 * fastwall_src_slots FW_SRC_SLOTS slots per possible CPU: the object says
 * one CPU's. */
static int rows_size(struct fw_dp *dp)
{
	int ncpu = libbpf_num_possible_cpus(), err;

	if (ncpu < 0)
		return ncpu;
	if ((__u64)ncpu * FW_MAX_SUBJECTS > UINT32_MAX || (__u64)ncpu * FW_SRC_SLOTS > UINT32_MAX)
		return -E2BIG;
	err = bpf_map__set_max_entries(dp->skel->maps.fastwall_subject_rows,
				       (__u32)ncpu * FW_MAX_SUBJECTS);
	if (err) {
		fw_err("can't size fastwall_subject_rows for %d CPUs: %s", ncpu, strerror(-err));
		return err;
	}
	err = bpf_map__set_max_entries(dp->skel->maps.fastwall_src_slots,
				       (__u32)ncpu * FW_SRC_SLOTS);
	if (err)
		fw_err("can't size fastwall_src_slots for %d CPUs: %s", ncpu, strerror(-err));
	return err;
}

static int unpin(const char *root, const char *name);

/* The maps of this ABI nothing uses any more: the programs that did (if
 * any still run) hold their own reference, so only the pin goes. A
 * failure is only said: it leaves a map behind, no state. */
static void dropped_unpin(const char *root)
{
#define DROPPED_UNPIN(name)                                                                        \
	if (pinned(root, #name) && unpin(root, #name) == 0)                                        \
		fw_debug("unpinned %s/%s, which this release no longer uses", root, #name);
	FW_DP_DROPPED_MAPS(DROPPED_UNPIN)
#undef DROPPED_UNPIN
}

/* A restart pins as the start before it left things, until fastwalld
 * says otherwise (fw_dp_l7_apply): a settings write in between must not
 * turn pinning off. */
static void l7_adopt(struct fw_dp *dp)
{
	struct fw_config c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(dp->config_fd, &zero, &c) == 0)
		dp->l7_flags = c.flags & FW_CF_L7_BITS;
}

int fw_dp_open(const char *pin_root, struct fw_dp **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct fw_dp *dp;
	__u32 abi = 0, flags = 0;
	bool had_rules;
	int err, old_rules = -1;

	libbpf_set_print(libbpf_print);
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	snprintf(dp->pin_root, sizeof(dp->pin_root), "%s", pin_root);
	fds_init(dp);

	err = mkdir_p(pin_root);
	if (err) {
		fw_err("can't create pin directory %s: %s", pin_root, strerror(-err));
		goto cleanup;
	}
	err = pin_root_ok(pin_root);
	if (err)
		goto cleanup;
	oopts.pin_root_path = dp->pin_root;
	dp->skel = egress_bpf__open_opts(&oopts);
	if (!dp->skel) {
		err = -errno;
		fw_err("can't open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	err = rows_size(dp);
	if (!err)
		err = pinned_abi(pin_root, &abi, &flags);
	if (!err)
		err = check_layouts(dp, abi);
	if (err)
		goto cleanup;
	dp->pinned_abi = abi;
	dp->reused = abi != 0;
	dp->migrating = abi && abi < FW_ABI_VERSION;
	had_rules = pinned(pin_root, "fastwall_rules_v2");
	/* maps created by this start hold zero counters for every id */
	dp->clean = calloc(FW_MAX_SUBJECTS, sizeof(*dp->clean));
	if (dp->clean && !abi && !pinned(pin_root, "fastwall_subject_stats_v2") &&
	    !pinned(pin_root, "fastwall_event_budget"))
		memset(dp->clean, 1, FW_MAX_SUBJECTS * sizeof(*dp->clean));

	/* unchanged maps are reused, replaced ones created under their new
	 * names beside the old, which the old programs keep using */
	err = egress_bpf__load(dp->skel);
	if (err) {
		fw_err("can't load BPF programs (pins under %s): %s", pin_root, strerror(-err));
		goto cleanup;
	}
	fill_fds(dp);
	find_btf(dp);
	l7_adopt(dp);
	dropped_unpin(pin_root);
	for (size_t i = 0; i < FW_DP_NRETIRED; i++)
		if (retired[i].type == BPF_MAP_TYPE_ARRAY_OF_MAPS)
			old_rules = dp->retired_fd[i];
	/* the slots get their tries at the first start (and a migration's);
	 * a restart finds them there and leaves the slots alone */
	err = fw_dp_rules_open(dp, !(flags & FW_ABI_F_RULES_POPULATED), had_rules, old_rules);
	if (!err)
		/* the tries' generations restart from what they hold: answers
		 * cached by an earlier start must not match a reused one */
		err = fw_dp_rules_epoch_bump(dp);
	if (err)
		goto cleanup;
	/* a migration's counters are carried over by fw_dp_migrate_finish,
	 * once the old programs no longer count */
	if (dp->migrating)
		fw_info("migrating the maps under %s from fastwall ABI %u to %u", pin_root, abi,
			FW_ABI_VERSION);
	else if (abi == 0)
		err = write_record(pin_root);
	if (err)
		goto cleanup;
	*out = dp;
	return 0;

cleanup:
	fw_dp_rules_close(dp);
	free(dp->clean);
	retired_close(dp);
	user_maps_close(dp);
	egress_bpf__destroy(dp->skel);
	free(dp);
	return err;
}

int fw_dp_migrate_finish(struct fw_dp *dp)
{
	char path[512];
	int err;

	if (!dp->migrating)
		return 0;
	/* everything the old programs counted, until they were replaced */
	err = carry_counters(dp);
	if (err)
		return err;
	for (size_t i = 0; i < FW_DP_NRETIRED; i++) {
		if (dp->retired_fd[i] < 0)
			continue;
		pin_path(path, sizeof(path), dp->pin_root, retired[i].name);
		if (unlink(path) && errno != ENOENT) {
			err = -errno;
			fw_err("can't unpin %s: %s", path, strerror(-err));
			return err;
		}
	}
	/* last: until it is written, the next start migrates again */
	err = write_record(dp->pin_root);
	if (err)
		return err;
	retired_close(dp);
	dp->migrating = false;
	fw_info("maps under %s migrated from fastwall ABI %u to %u", dp->pin_root, dp->pinned_abi,
		FW_ABI_VERSION);
	return 0;
}

int fw_dp_open_pinned(const char *pin_root, struct fw_dp **out)
{
	struct fw_dp *dp;
	__u32 abi, flags;
	int err;

	err = pinned_abi(pin_root, &abi, &flags);
	if (err)
		return err;
	if (abi == 0)
		return -ENOENT;
	if (abi != FW_ABI_VERSION) {
		fw_err("the maps under %s are of fastwall ABI %u, this fastwall reads ABI %u: "
		       "start this release's fastwalld to migrate them (or use the fastwall of "
		       "the release that pinned them)",
		       pin_root, abi, FW_ABI_VERSION);
		return -EPROTO;
	}
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	snprintf(dp->pin_root, sizeof(dp->pin_root), "%s", pin_root);
	fds_init(dp);
	for (size_t i = 0; i < FW_DP_NMAPS; i++) {
		int *fd = map_fd(dp, map_names[i]);

		*fd = pinned_fd(pin_root, map_names[i]);
		if (*fd == -ENOENT && map_late[i]) {
			*fd = -1; /* pinned by an older fastwalld of this ABI */
			continue;
		}
		if (*fd < 0) {
			err = *fd;
			fw_err("can't open %s/%s: %s", pin_root, map_names[i], strerror(-err));
			fw_dp_close(dp);
			return err;
		}
	}
	err = user_maps_open(dp);
	if (err) {
		fw_dp_close(dp);
		return err;
	}
	dp->pinned_abi = abi;
	dp->reused = true;
	*out = dp;
	return 0;
}

void fw_dp_close(struct fw_dp *dp)
{
	if (!dp)
		return;
	if (dp->conn_count)
		munmap(dp->conn_count, FW_MAX_SUBJECTS * sizeof(__u64));
	if (dp->l7_count)
		munmap(dp->l7_count, FW_MAX_SUBJECTS * sizeof(__u64));
	if (dp->rows)
		munmap(dp->rows,
		       (size_t)dp->rows_cpus * FW_MAX_SUBJECTS * sizeof(struct fw_subject_row));
	fw_dp_rules_close(dp);
	free(dp->clean);
	retired_close(dp);
	user_maps_close(dp);
	if (dp->skel) {
		egress_bpf__destroy(dp->skel);
	} else {
		for (size_t i = 0; i < FW_DP_NMAPS; i++) {
			int fd = *map_fd(dp, map_names[i]);

			if (fd >= 0)
				close(fd);
		}
	}
	free(dp);
}

static int unpin(const char *root, const char *name)
{
	char path[512];

	pin_path(path, sizeof(path), root, name);
	if (unlink(path) && errno != ENOENT) {
		int err = -errno;

		fw_err("can't unpin %s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

int fw_dp_purge(const char *pin_root)
{
	int err = 0, e;

	for (size_t i = 0; i < FW_DP_NMAPS; i++)
		if ((e = unpin(pin_root, map_names[i])) && !err)
			err = e;
	for (size_t i = 0; i < FW_DP_NUSER; i++)
		if ((e = unpin(pin_root, user_maps[i].name)) && !err)
			err = e;
	for (size_t i = 0; i < FW_DP_NRETIRED; i++)
		if ((e = unpin(pin_root, retired[i].name)) && !err)
			err = e;
#define UNPIN_GUARD(name)                                                                          \
	if ((e = unpin(pin_root, #name)) && !err)                                                  \
		err = e;
	FW_GUARD_MAPS(UNPIN_GUARD)
	FW_DP_DROPPED_MAPS(UNPIN_GUARD)
#undef UNPIN_GUARD
	/* the record last: a purge cut short still says what the rest is */
	if ((e = unpin(pin_root, FW_DP_ABI_PIN)) && !err)
		err = e;
	if (rmdir(pin_root) && errno != ENOENT && !err) {
		err = -errno;
		fw_err("can't remove %s: %s", pin_root, strerror(errno));
	}
	return err;
}
