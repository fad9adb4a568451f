// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process sandboxes in fastwalld: the cgroup programs, the `fastwall run`
 * socket and the life of each run. See procs.h.
 *
 * A run's subject goes only when its cgroup is empty: while any process
 * of the sandbox lives, it keeps its policy (fail closed). The launcher
 * keeps its connection open for the run; when it says "remove" the
 * cgroup's processes are killed, when it just goes (SIGKILL) they keep
 * running; either way the subject and the cgroup go once nothing is left
 * in it, which inotify on its cgroup.events tells at once (a slow
 * periodic check stands behind it).
 *
 * Callers other than root (members of processes.run_group) get either a
 * cgroup fastwalld makes below run_parent and moves them into ("join":
 * the common ancestor of their own cgroup and the sandbox is root's, so
 * the command can't move itself out), or register a cgroup of their own
 * by passing its descriptor; fastwalld checks what the descriptor names
 * (owner, mode, place), never a path the caller could swap meanwhile. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "datapath/cgroup.h"
#include "procs.h"
#include "subjects/run.h"

#define FW_CG_FALLBACK "/run/fastwall/cgroup2"
/* behind inotify: a run whose cgroup.events change was missed */
#define FW_PROCS_CHECK_NS (10000000000ull)

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

struct client;

struct run {
	struct run *next;
	char name[FW_RUN_NAME_MAX + 1];
	char path[PATH_MAX];
	__u64 cgid;
	uid_t uid;		 /* who may remove or join it (0: root only) */
	bool made;		 /* fastwalld made the cgroup (a join may follow) */
	int wd;			 /* inotify watch on its cgroup.events, -1 without */
	struct client *launcher; /* NULL once it is gone (or after a restart) */
};

struct client {
	struct client *next;
	struct fw_procs *p;
	int fd;
	uid_t uid; /* the peer's, at connect (SO_PEERCRED) */
	pid_t pid;
	struct fw_loop_watch *w;
	struct run *run; /* the run this connection launched */
};

struct fw_procs {
	struct fw_loop *loop;
	struct fw_registry *reg;
	struct fw_cg *cg;
	char root[256];
	char parent[PATH_MAX];
	char run_parent[PATH_MAX]; /* where non-root runs go (parent or below) */
	__u64 root_ino, parent_ino, run_parent_ino;
	dev_t dev; /* the cgroup2 file system's */
	bool has_group;
	gid_t run_gid;
	char group[64];
	char sock_path[108];
	int lfd;
	struct fw_loop_watch *lw;
	int ifd; /* inotify: the runs' cgroup.events */
	struct fw_loop_watch *iw;
	struct run *runs;
	struct client *clients;
	struct fw_loop_timer timer;
	/* the static subjects of the running configuration (the last
	 * fw_procs_resolve), whose processes the periodic check looks at */
	struct fw_subject_spec *subjects;
	size_t nsubjects;
	__u64 cgns_ino;	 /* fastwalld's own cgroup namespace */
	bool nsdelegate; /* cgroup2 has it, at the last look */
	fw_procs_run_fn on_run;
	void *on_run_ctx;
};

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *c = buf + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* A cgroup and the ones a sandbox made below it, deepest first (their
 * control files go with them). */
static int rm_cgroup(const char *path, int depth)
{
	DIR *d;
	struct dirent *de;

	if (depth > FW_CG_MAX_LEVELS + 4)
		return -ELOOP;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) < (int)sizeof(sub))
			rm_cgroup(sub, depth + 1);
	}
	closedir(d);
	if (rmdir(path) && errno != ENOENT)
		return -errno;
	return 0;
}

static struct run *run_find(struct fw_procs *p, const char *name)
{
	for (struct run *r = p->runs; r; r = r->next)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

static void run_free(struct fw_procs *p, struct run *run)
{
	for (struct run **pp = &p->runs; *pp; pp = &(*pp)->next) {
		if (*pp == run) {
			*pp = run->next;
			break;
		}
	}
	if (run->launcher)
		run->launcher->run = NULL;
	if (run->wd >= 0 && p->ifd >= 0)
		inotify_rm_watch(p->ifd, run->wd);
	free(run);
}

/* cgroup.events changes when populated does: the end of the last
 * process is seen at once */
static void run_watch(struct fw_procs *p, struct run *run)
{
	char file[PATH_MAX + 16];

	run->wd = -1;
	if (p->ifd < 0 || !run->path[0])
		return;
	snprintf(file, sizeof(file), "%s/cgroup.events", run->path);
	run->wd = inotify_add_watch(p->ifd, file, IN_MODIFY);
	if (run->wd < 0)
		fw_warn("run %s: can't watch %s (the periodic check stands in): %s", run->name,
			file, strerror(errno));
}

/* Removes the run's subject and cgroup once its launcher is gone and
 * nothing is left in the cgroup; true when it did. */
static bool collect(struct fw_procs *p, struct run *run, const char *why)
{
	struct fw_entry *e;
	int pop, err;

	if (run->launcher)
		return false;
	pop = fw_cg_populated(run->path);
	if (pop == 1)
		return false;
	e = fw_reg_get(p->reg, run->name, false);
	if (e) {
		if (e->id && e->meta.origin == FW_ORIGIN_PROCESS && e->cgroup_id == run->cgid)
			fw_reg_unbind(p->reg, e);
		fw_reg_put(p->reg, e);
	}
	err = rm_cgroup(run->path, 0);
	if (err)
		fw_warn("run %s: can't remove cgroup %s: %s", run->name, run->path, strerror(-err));
	fw_info("run %s: ended (%s), subject and cgroup %s removed", run->name, why, run->path);
	run_free(p, run);
	return true;
}

/* --- the capabilities of a static subject's processes ------------------ */

/* Why process pid may leave its cgroup or change what holds it (into
 * why), or false: one of fw_sandbox_caps in its bounding or permitted set,
 * or uid 0 (any of its four uids) where a cgroup namespace does not hold it
 * (fastwalld's own namespace, or a hierarchy without nsdelegate): uid 0
 * owns the cgroup.procs of every cgroup above. */
static bool proc_may_leave(const struct fw_procs *p, pid_t pid, bool nsdelegate, char *why,
			   size_t whylen)
{
	char file[64], line[256];
	unsigned long long bnd = 0, prm = 0;
	unsigned int uid[4] = {1, 1, 1, 1};
	const struct fw_sandbox_cap *c;
	struct stat st;
	bool root;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return false; /* gone */
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4))
			sscanf(line + 4, "%u %u %u %u", &uid[0], &uid[1], &uid[2], &uid[3]);
		else if (!strncmp(line, "CapPrm:", 7))
			sscanf(line + 7, "%llx", &prm);
		else if (!strncmp(line, "CapBnd:", 7))
			sscanf(line + 7, "%llx", &bnd);
	}
	fclose(f);
	c = fw_sandbox_cap_in(bnd | prm);
	if (c) {
		snprintf(why, whylen, "has %s", c->name);
		return true;
	}
	root = !uid[0] || !uid[1] || !uid[2] || !uid[3];
	if (!root)
		return false;
	if (!nsdelegate) {
		snprintf(why, whylen, "runs as root and cgroup2 has no nsdelegate");
		return true;
	}
	snprintf(file, sizeof(file), "/proc/%d/ns/cgroup", (int)pid);
	if (stat(file, &st) == 0 && st.st_ino == p->cgns_ino) {
		snprintf(why, whylen, "runs as root in the node's cgroup namespace");
		return true;
	}
	return false;
}

/* The first process of cgroup path or of one below it that may leave
 * (proc_may_leave), 0 without one. */
static pid_t cg_may_leave(const struct fw_procs *p, const char *path, int depth, bool nsdelegate,
			  char *why, size_t whylen)
{
	char file[PATH_MAX];
	struct dirent *de;
	pid_t found = 0;
	int pid;
	FILE *f;
	DIR *d;

	if (snprintf(file, sizeof(file), "%s/cgroup.procs", path) >= (int)sizeof(file))
		return 0;
	f = fopen(file, "re");
	if (!f)
		return 0;
	while (!found && fscanf(f, "%d", &pid) == 1) {
		if (proc_may_leave(p, pid, nsdelegate, why, whylen))
			found = pid;
	}
	fclose(f);
	if (found || depth >= FW_CG_MAX_LEVELS || !(d = opendir(path)))
		return found;
	while (!found && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    snprintf(file, sizeof(file), "%s/%s", path, de->d_name) >= (int)sizeof(file))
			continue;
		found = cg_may_leave(p, file, depth + 1, nsdelegate, why, whylen);
	}
	closedir(d);
	return found;
}

/* Holds an active static subject s denying while a process of its
 * cgroup may leave it (keep_caps false), and lets it go once none may.
 * apply: reprogram it now (the periodic check); at a start or reload the
 * sync that follows programs what this decided. */
static void caps_check(struct fw_procs *p, struct fw_subject_spec *s, bool nsdelegate, bool apply)
{
	char path[PATH_MAX], why[96];
	struct fw_entry *e;
	pid_t pid;

	if (!s->cgroup[0] || !s->cgroup_id || s->keep_caps ||
	    (s->state != FW_STATE_ACTIVE && !s->caps_held) ||
	    snprintf(path, sizeof(path), "%s/%s", p->parent, s->cgroup) >= (int)sizeof(path))
		return;
	pid = cg_may_leave(p, path, 0, nsdelegate, why, sizeof(why));
	if (pid && !s->caps_held) {
		fw_warn("subject %s: held denying: pid %d in cgroup %s %s (keep_caps is false)",
			s->name, (int)pid, path, why);
		s->caps_held = true;
		s->state = FW_STATE_DENYING;
	} else if (!pid && s->caps_held) {
		fw_info("subject %s: no process of cgroup %s may leave it now: active again",
			s->name, path);
		s->caps_held = false;
		s->state = FW_STATE_ACTIVE;
	} else {
		return;
	}
	if (!apply)
		return;
	e = fw_reg_get(p->reg, s->name, false);
	if (!e)
		return;
	if (e->id && e->meta.origin == FW_ORIGIN_STATIC &&
	    fw_reg_apply(p->reg, e, s, FW_ORIGIN_STATIC, 0, NULL))
		fw_err("subject %s: can't set its state", s->name);
	fw_reg_put(p->reg, e);
}

/* nsdelegate is one flag of the hierarchy, and root in the node's
 * cgroup namespace who mounts cgroup2 without it clears it: said when it
 * comes and goes. */
static void nsdelegate_check(struct fw_procs *p)
{
	bool now = fw_cg_nsdelegate();

	if (now == p->nsdelegate)
		return;
	p->nsdelegate = now;
	if (now)
		fw_info("cgroup2 is mounted with nsdelegate: a cgroup namespace holds the root "
			"commands of fastwall run in their cgroups");
	else
		fw_warn("cgroup2 is not mounted with nsdelegate: no cgroup namespace holds "
			"root in its cgroup (fastwall run refuses root commands without "
			"--keep-caps; a root process holds a static subject denying)");
}

static __u64 check_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_procs *p = ctx;
	struct run *run = p->runs, *next;

	(void)l;
	(void)t;
	for (; run; run = next) {
		next = run->next;
		collect(p, run, "periodic check");
	}
	nsdelegate_check(p);
	for (size_t i = 0; i < p->nsubjects; i++)
		caps_check(p, &p->subjects[i], p->nsdelegate, true);
	return FW_PROCS_CHECK_NS;
}

static void on_inotify(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_procs *p = ctx;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)l;
	(void)events;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *c = buf; c < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)c;

			c += sizeof(*ev) + ev->len;
			if (ev->mask & IN_IGNORED)
				continue;
			for (struct run *r = p->runs; r; r = r->next) {
				if (r->wd == ev->wd) {
					collect(p, r, "cgroup emptied");
					break;
				}
			}
		}
	}
}

static void reply(struct client *c, const struct fw_run_reply *r)
{
	char *text = fw_run_reply_format(r);

	if (!text || send(c->fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		fw_warn("run: can't answer the launcher: %s", text ? strerror(errno) : "no memory");
	free(text);
}

static void refuse(struct client *c, const char *fmt, const char *arg, int err)
{
	struct fw_run_reply r = {.ok = false};

	snprintf(r.error, sizeof(r.error), fmt, arg, err ? strerror(-err) : "");
	fw_warn("run: refused: %s", r.error);
	reply(c, &r);
}

/* Walks from cgroup fd (consumed) up to the root of the hierarchy through
 * "..", on fastwalld's own mount (a cgroup can't move to another parent,
 * so the chain is fixed). *below: fd is stop_ino or lies under it;
 * *subject: a subject's cgroup is on the way (fd's own included) - a
 * process there is a sandbox, and what it registers must not loosen its
 * policy. */
static int cg_walk(struct fw_procs *p, int fd, __u64 stop_ino, bool *below, bool *subject)
{
	struct fw_subject s;
	struct stat st;
	int err = -ELOOP;

	*below = false;
	*subject = false;
	for (int i = 0; i <= FW_CG_MAX_LEVELS + 1; i++) {
		int up;

		if (fstat(fd, &st)) {
			err = -errno;
			break;
		}
		if (st.st_dev != p->dev) {
			err = -EXDEV;
			break;
		}
		if ((__u64)st.st_ino == stop_ino)
			*below = true;
		if ((__u64)st.st_ino == p->root_ino) {
			err = 0;
			break;
		}
		if (fw_dp_cgroup_lookup(p->reg->dp, st.st_ino, &s) == 0)
			*subject = true;
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (up < 0) {
			err = -errno;
			break;
		}
		close(fd);
		fd = up;
	}
	close(fd);
	return err;
}

/* The cgroup of process pid, opened on fastwalld's mount. */
static int cg_open_of_pid(struct fw_procs *p, pid_t pid)
{
	char file[64], line[PATH_MAX + 8], path[PATH_MAX * 2];
	int fd = -ENOENT;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::/", 4) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s%s", p->root, line + 3);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		break;
	}
	fclose(f);
	return fd;
}

/* A non-root peer inside a sandbox may neither register nor join one:
 * a looser policy of its own making would be a way out. */
static int peer_free(struct client *c)
{
	bool below, subject;
	int fd, err;

	if (c->uid == 0)
		return 0;
	fd = cg_open_of_pid(c->p, c->pid);
	if (fd < 0)
		return fd;
	err = cg_walk(c->p, fd, 0, &below, &subject);
	if (!err && subject)
		err = -EPERM;
	return err;
}

/* The caller's own cgroup, passed as fd: a cgroup2 directory of this
 * hierarchy below run_parent (root: below parent), not in or under a
 * sandbox, and for anyone but root owned by the caller with the owner
 * allowed to write it and its cgroup.procs. All checked on the
 * descriptor and what openat finds under it, no path looked up again. */
static int check_passed(struct client *c, int fd, __u64 *cgid, char *why, size_t whylen)
{
	struct fw_procs *p = c->p;
	struct statfs sfs;
	struct stat st, pst;
	bool below, subject;
	int pfd, own, err;
	__u64 stop = c->uid == 0 ? p->parent_ino : p->run_parent_ino;

	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC || fstat(fd, &st) ||
	    !S_ISDIR(st.st_mode) || st.st_dev != p->dev) {
		snprintf(why, whylen, "the descriptor passed is not a cgroup of %.180s", p->root);
		return -EINVAL;
	}
	if (c->uid != 0) {
		pfd = openat(fd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0 || fstat(pfd, &pst)) {
			err = -errno;
			if (pfd >= 0)
				close(pfd);
			snprintf(why, whylen, "can't read its cgroup.procs: %s", strerror(-err));
			return err;
		}
		close(pfd);
		if (st.st_uid != c->uid || !(st.st_mode & S_IWUSR) || pst.st_uid != c->uid ||
		    !(pst.st_mode & S_IWUSR)) {
			snprintf(why, whylen,
				 "uid %u may not register a cgroup it does not own (the cgroup and "
				 "its cgroup.procs, owner-writable)",
				 (unsigned int)c->uid);
			return -EPERM;
		}
	}
	/* reopened by id on our mount: ".." from the caller's descriptor
	 * could leave a bind mount of some cgroup below the root */
	own = fw_cg_open_id(p->root, st.st_ino);
	if (own < 0) {
		snprintf(why, whylen, "can't open the cgroup by its id: %s", strerror(-own));
		return own;
	}
	err = cg_walk(p, own, stop, &below, &subject);
	if (err) {
		snprintf(why, whylen, "can't follow the cgroup up: %s", strerror(-err));
		return err;
	}
	if (!below || (__u64)st.st_ino == stop) {
		snprintf(why, whylen, "the cgroup is not below %.200s",
			 c->uid == 0 ? p->parent : p->run_parent);
		return -EPERM;
	}
	if (subject) {
		snprintf(why, whylen, "the cgroup is a sandbox or inside one");
		return -EPERM;
	}
	*cgid = st.st_ino;
	return 0;
}

/* The run's cgroup to its user (and its control files that delegation
 * hands over): sub-cgroups of its own, all below the sandbox. */
static void give_to(const char *path, uid_t uid)
{
	static const char *const files[] = {"", "/cgroup.procs", "/cgroup.threads",
					    "/cgroup.subtree_control"};
	char f[PATH_MAX + 32];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(f, sizeof(f), "%s%s", path, files[i]);
		if (chown(f, uid, (gid_t)-1) && errno != ENOENT)
			fw_warn("can't hand %s to uid %u: %s", f, (unsigned int)uid,
				strerror(errno));
	}
}

static void handle_add(struct client *c, struct fw_run_req *req, int passed)
{
	struct fw_procs *p = c->p;
	struct fw_subject_spec *spec = NULL;
	struct fw_run_reply r = {.ok = true};
	struct fw_entry *e;
	struct run *run = NULL;
	char why[256];
	int err, level;

	if (c->run) {
		refuse(c, "this connection runs %s already%s", c->run->name, 0);
		return;
	}
	err = peer_free(c);
	if (err == -EPERM) {
		refuse(c, "%sa process in a sandbox may not start another%s", "", 0);
		return;
	}
	if (err) {
		refuse(c, "%scan't tell which cgroup the caller is in: %s", "", err);
		return;
	}
	e = fw_reg_get(p->reg, req->name, false);
	if (e) {
		bool taken = e->id != 0;

		fw_reg_put(p->reg, e);
		if (taken) {
			refuse(c, "a subject named %s exists%s", req->name, 0);
			return;
		}
	}
	run = calloc(1, sizeof(*run));
	spec = calloc(1, sizeof(*spec));
	if (!run || !spec) {
		refuse(c, "%s: %s", req->name, -ENOMEM);
		goto fail;
	}
	run->wd = -1;
	run->uid = c->uid;
	snprintf(run->name, sizeof(run->name), "%s", req->name);
	if (passed >= 0) {
		err = check_passed(c, passed, &run->cgid, why, sizeof(why));
		if (!err)
			err = fw_cg_path_of(p->root, run->cgid, run->path, sizeof(run->path));
		if (err) {
			refuse(c, "can't register that cgroup: %s%s", why, 0);
			goto fail;
		}
	} else {
		const char *dir = c->uid == 0 ? p->parent : p->run_parent;

		if (snprintf(run->path, sizeof(run->path), "%s/%s", dir, req->name) >=
		    (int)sizeof(run->path)) {
			refuse(c, "%s: %s", req->name, -ENAMETOOLONG);
			goto fail;
		}
		if (mkdir(run->path, 0755)) {
			err = -errno;
			refuse(c, "can't create cgroup %s: %s", run->path, err);
			goto fail;
		}
		run->made = true;
		level = fw_cg_level(p->root, run->path);
		err = level < 0 ? level : level > FW_CG_MAX_LEVELS ? -ELOOP : 0;
		if (!err)
			err = fw_cg_id_of(run->path, &run->cgid);
		if (err) {
			refuse(c, "cgroup %s can't be a sandbox: %s", run->path, err);
			rmdir(run->path);
			goto fail;
		}
		if (c->uid != 0)
			give_to(run->path, c->uid);
	}
	snprintf(spec->name, sizeof(spec->name), "%s", req->name);
	spec->state = FW_STATE_ACTIVE;
	spec->cgroup_id = run->cgid;
	spec->policy = req->policy; /* lent: req frees it */
	e = fw_reg_get(p->reg, req->name, true);
	err = e ? fw_reg_apply(p->reg, e, spec, FW_ORIGIN_PROCESS, 0, NULL) : -ENOMEM;
	if (!err)
		r.id = e->id;
	/* root's runs (the platform's) may get a credential vault, checked
	 * against this policy; a user's never: its name is its own choice,
	 * so it could be the name a vault was pushed for */
	if (!err && c->uid == 0) {
		if (fw_reg_set_run_policy(e, &req->policy))
			fw_warn("run %s: no memory to keep its policy: it takes no credential "
				"vault",
				req->name);
		else if (p->on_run)
			p->on_run(p->on_run_ctx, e);
	}
	if (e)
		fw_reg_put(p->reg, e);
	if (err) {
		refuse(c, "can't register %s: %s", req->name, err);
		if (run->made)
			rmdir(run->path);
		goto fail;
	}
	run->launcher = c;
	c->run = run;
	run->next = p->runs;
	p->runs = run;
	run_watch(p, run);
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", run->path);
	fw_info("run %s: subject id %u, cgroup %s, uid %u", run->name, r.id, run->path,
		(unsigned int)run->uid);
	reply(c, &r);
	free(spec);
	return;

fail:
	free(spec);
	free(run);
}

static bool may_touch(const struct client *c, const struct run *run)
{
	return c->uid == 0 || c->uid == run->uid;
}

/* true once the process of pidfd has ended */
static bool pidfd_ended(int pidfd)
{
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

	return poll(&pfd, 1, 0) != 0;
}

/* The real uid of pid as /proc says, or (uid_t)-1. */
static uid_t uid_of(pid_t pid)
{
	char file[64], line[128];
	unsigned int uid;
	uid_t ret = (uid_t)-1;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return ret;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u", &uid) == 1) {
			ret = (uid_t)uid;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* The peer itself (fastwall run's child, before its command) into the
 * run's cgroup, written by fastwalld: a non-root caller could not, the
 * common ancestor of its cgroup and the sandbox being root's. The peer
 * is named by its pidfd (SO_PEERPIDFD, taken at connect); its pid is
 * written only while that process lives, and still lives afterwards, so
 * the pid was never another's. Before 6.5 the pidfd comes from the pid
 * the connection recorded, which may have been reused since: the uid
 * read while the pidfd holds the process must be the caller's. */
static void handle_join(struct client *c, const struct fw_run_req *req)
{
	struct run *run = run_find(c->p, req->name);
	struct fw_run_reply r = {.ok = true};
	socklen_t len = sizeof(int);
	char file[PATH_MAX + 16], pid[16];
	int pidfd = -1, fd, err;

	if (!run || !may_touch(c, run) || !run->made) {
		refuse(c, "no run %s of yours to join%s", req->name, 0);
		return;
	}
	err = peer_free(c);
	if (err) {
		refuse(c,
		       "%s: a process in a sandbox may not join another (or one of unknown "
		       "cgroup): %s",
		       req->name, err);
		return;
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) || pidfd < 0)
		pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0); /* before 6.5 */
	if (pidfd < 0 || pidfd_ended(pidfd) || uid_of(c->pid) != c->uid || pidfd_ended(pidfd)) {
		refuse(c, "%s: the joining process is gone%s", req->name, 0);
		goto out;
	}
	snprintf(file, sizeof(file), "%s/cgroup.procs", run->path);
	snprintf(pid, sizeof(pid), "%d", (int)c->pid);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : write(fd, pid, strlen(pid)) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (err) {
		refuse(c, "can't move the process into %s: %s", file, err);
		goto out;
	}
	if (pidfd_ended(pidfd))
		fw_warn("run %s: the joining process ended as it was moved", run->name);
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", run->path);
	reply(c, &r);
out:
	if (pidfd >= 0)
		close(pidfd);
}

static void handle_remove(struct client *c, const struct fw_run_req *req)
{
	struct run *run = run_find(c->p, req->name);
	struct fw_run_reply r = {.ok = true};
	int err;

	if (!run) {
		/* gone already (its cgroup emptied first): nothing to do */
		reply(c, &r);
		return;
	}
	if (!may_touch(c, run)) {
		refuse(c, "run %s is not yours%s", req->name, 0);
		return;
	}
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", run->path);
	/* whatever the command left behind goes with it: the subject must
	 * not go while anything of the sandbox still runs */
	err = fw_cg_kill(run->path);
	if (err && err != -ENOENT)
		fw_warn("run %s: can't kill what is left in %s: %s", run->name, run->path,
			strerror(-err));
	if (run->launcher) {
		run->launcher->run = NULL;
		run->launcher = NULL;
	}
	reply(c, &r);
	collect(c->p, run, "launcher's remove");
}

static void client_close(struct client *c)
{
	struct fw_procs *p = c->p;

	for (struct client **pp = &p->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	fw_loop_watch_del(p->loop, c->w);
	close(c->fd);
	if (c->run) {
		/* the launcher went without a word (killed): its command may
		 * still run, under its policy, until the cgroup is empty */
		fw_info("run %s: launcher gone; removed once cgroup %s is empty", c->run->name,
			c->run->path);
		c->run->launcher = NULL;
		collect(p, c->run, "launcher gone");
	}
	free(c);
}

static void on_client(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct client *c = ctx;
	struct fw_run_req req;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int passed = -1, npassed = 0;
	char err[256];
	char *buf;
	ssize_t n;

	(void)l;
	(void)events;
	buf = malloc(FW_RUN_MSG_MAX + 1);
	if (!buf) {
		client_close(c);
		return;
	}
	iov.iov_base = buf;
	iov.iov_len = FW_RUN_MSG_MAX + 1;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		free(buf);
		return;
	}
	/* descriptors passed: one, with an add, or none at all */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); n > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int pfd;

			memcpy(&pfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (npassed++ == 0)
				passed = pfd;
			else
				close(pfd);
		}
	}
	if (n <= 0) {
		if (passed >= 0)
			close(passed);
		free(buf);
		client_close(c);
		return;
	}
	if (npassed > 1 || (msg.msg_flags & MSG_CTRUNC)) {
		refuse(c, "bad request: %s%s", "one cgroup descriptor at most", 0);
	} else if (fw_run_req_parse(buf, (size_t)n, &req, err, sizeof(err))) {
		refuse(c, "bad request: %s%s", err, 0);
	} else {
		if (req.op != FW_RUN_ADD && passed >= 0)
			refuse(c, "bad request: %s%s", "a descriptor comes with add only", 0);
		else if (req.op == FW_RUN_ADD)
			handle_add(c, &req, passed);
		else if (req.op == FW_RUN_JOIN)
			handle_join(c, &req);
		else
			handle_remove(c, &req);
		fw_run_req_free(&req);
	}
	if (passed >= 0)
		close(passed);
	free(buf);
}

/* The peer's primary or a supplementary group is gid (SO_PEERGROUPS:
 * the groups at connect, as the kernel holds them). */
static bool peer_in_group(int fd, const struct ucred *cred, gid_t gid)
{
	socklen_t len = 0;
	gid_t *g;
	bool in = cred->gid == gid;

	if (in)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) == 0 || errno != ERANGE ||
	    len == 0 || len > 65536 * sizeof(gid_t))
		return false;
	g = malloc(len);
	if (g && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0)
		for (size_t i = 0; i < len / sizeof(gid_t); i++)
			in |= g[i] == gid;
	free(g);
	return in;
}

static void on_accept(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_procs *p = ctx;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int cfd;

	(void)events;
	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	/* root and the run group only: a run decides what a process may
	 * reach, and takes a subject of the registry */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != 0 && (!p->has_group || !peer_in_group(cfd, &cred, p->run_gid)))) {
		struct client tmp = {.fd = cfd};

		fw_warn("run: refused a connection from uid %d (root%s%s only)",
			len == sizeof(cred) ? (int)cred.uid : -1, p->has_group ? " and group " : "",
			p->group);
		refuse(&tmp, "fastwall run is for root%s only%s",
		       p->has_group ? " and members of its group" : "", 0);
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(cfd);
		return;
	}
	c->p = p;
	c->fd = cfd;
	c->uid = cred.uid;
	c->pid = cred.pid;
	if (fw_loop_watch_add(l, cfd, EPOLLIN, on_client, c, &c->w)) {
		close(cfd);
		free(c);
		return;
	}
	c->next = p->clients;
	p->clients = c;
}

static int listen_on(struct fw_procs *p)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[sizeof(sa.sun_path)], *slash;
	int err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->sock_path);
	snprintf(dir, sizeof(dir), "%s", p->sock_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir_p(dir, 0755);
	}
	p->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->lfd < 0)
		return -errno;
	unlink(p->sock_path);
	if (bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (p->has_group && chown(p->sock_path, 0, p->run_gid)) ||
	    chmod(p->sock_path, p->has_group ? 0660 : 0600) || listen(p->lfd, 64)) {
		err = -errno;
		fw_err("can't listen on %s: %s", p->sock_path, strerror(-err));
		return err;
	}
	return fw_loop_watch_add(p->loop, p->lfd, EPOLLIN, on_accept, p, &p->lw);
}

/* Runs registered before a restart: their launchers' connections are
 * gone; each goes once its cgroup is empty. */
static void adopt(struct fw_procs *p)
{
	struct fw_registry *r = p->reg;

	pthread_mutex_lock(&r->lock);
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		struct fw_entry *e = r->by_id[id];
		struct stat st;
		struct run *run;

		if (!e || e->id != id || e->meta.origin != FW_ORIGIN_PROCESS)
			continue;
		run = calloc(1, sizeof(*run));
		if (!run)
			break;
		snprintf(run->name, sizeof(run->name), "%.*s", FW_RUN_NAME_MAX, e->meta.name);
		run->cgid = e->cgroup_id;
		if ((!run->cgid ||
		     fw_cg_path_of(p->root, run->cgid, run->path, sizeof(run->path))) &&
		    snprintf(run->path, sizeof(run->path), "%s/%s", p->parent, run->name) >=
			    (int)sizeof(run->path))
			run->path[0] = '\0';
		/* the cgroup's owner: its caller (root's are root's) */
		if (run->path[0] && stat(run->path, &st) == 0)
			run->uid = st.st_uid;
		run->made = true;
		run->next = p->runs;
		p->runs = run;
		run_watch(p, run);
	}
	pthread_mutex_unlock(&r->lock);
}

void fw_procs_resolve(struct fw_procs *p, struct fw_subject_spec *subjects, size_t n)
{
	nsdelegate_check(p);
	p->subjects = subjects;
	p->nsubjects = n;
	for (size_t i = 0; i < n; i++) {
		struct fw_subject_spec *s = &subjects[i];
		char path[PATH_MAX];
		int err, level;

		if (!s->cgroup[0])
			continue;
		s->cgroup_id = 0;
		if (snprintf(path, sizeof(path), "%s/%s", p->parent, s->cgroup) >=
		    (int)sizeof(path))
			err = -ENAMETOOLONG;
		else
			err = mkdir_p(path, 0755);
		level = err ? err : fw_cg_level(p->root, path);
		err = level < 0 ? level : level > FW_CG_MAX_LEVELS ? -ELOOP : 0;
		if (!err)
			err = fw_cg_id_of(path, &s->cgroup_id);
		if (err) {
			s->cgroup_id = 0;
			fw_err("subject %s: cgroup %s can't be a sandbox: %s", s->name, path,
			       strerror(-err));
		}
		caps_check(p, s, p->nsdelegate, false);
	}
}

int fw_procs_serve(struct fw_procs *p, struct fw_loop *loop)
{
	int err;

	p->loop = loop;
	err = listen_on(p);
	if (err)
		return err;
	if (p->ifd >= 0 && fw_loop_watch_add(loop, p->ifd, EPOLLIN, on_inotify, p, &p->iw)) {
		close(p->ifd);
		p->ifd = -1;
	}
	fw_loop_timer_init(&p->timer, check_timer, p);
	fw_loop_timer_arm(loop, &p->timer, 0);
	fw_info("process sandboxes: cgroup programs on %s, fastwall run on %s", p->parent,
		p->sock_path);
	return 0;
}

static int ino_of(const char *path, __u64 *ino, dev_t *dev)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	*ino = st.st_ino;
	if (dev)
		*dev = st.st_dev;
	return 0;
}

/* processes.run_group: a name of the group database, or a number */
static int resolve_group(struct fw_procs *p, const char *name)
{
	struct group *g;
	char *end;
	unsigned long n;

	if (!name[0])
		return 0;
	snprintf(p->group, sizeof(p->group), "%s", name);
	g = getgrnam(name);
	if (g) {
		p->run_gid = g->gr_gid;
	} else {
		errno = 0;
		n = strtoul(name, &end, 10);
		if (errno || *end || !isdigit((unsigned char)name[0]) || n >= (gid_t)-1) {
			fw_err("processes.run_group: no group %s", name);
			return -ENOENT;
		}
		p->run_gid = (gid_t)n;
	}
	p->has_group = true;
	return 0;
}

void fw_procs_on_run(struct fw_procs *p, fw_procs_run_fn fn, void *ctx)
{
	p->on_run = fn;
	p->on_run_ctx = ctx;
}

int fw_procs_open(struct fw_registry *reg, const struct fw_cfg *cfg, struct fw_procs **out)
{
	struct fw_procs *p = calloc(1, sizeof(*p));
	struct stat st;
	int err, level;

	if (!p)
		return -ENOMEM;
	p->reg = reg;
	p->lfd = -1;
	p->ifd = -1;
	snprintf(p->sock_path, sizeof(p->sock_path), "%s", cfg->processes_socket);
	err = resolve_group(p, cfg->run_group);
	if (err)
		goto fail;
	err = fw_cg_mount(cfg->cgroup_root, FW_CG_FALLBACK, p->root, sizeof(p->root));
	if (err)
		goto fail;
	snprintf(p->parent, sizeof(p->parent), "%s/%s", p->root, cfg->cgroup_parent);
	err = mkdir_p(p->parent, 0755);
	if (err) {
		fw_err("can't create cgroup %s: %s", p->parent, strerror(-err));
		goto fail;
	}
	level = fw_cg_level(p->root, p->parent);
	if (level < 0 || level >= FW_CG_MAX_LEVELS) {
		err = level < 0 ? level : -ELOOP;
		fw_err("cgroup %s: a sandbox below it would be past the %d levels the programs "
		       "look through",
		       p->parent, FW_CG_MAX_LEVELS);
		goto fail;
	}
	if (snprintf(p->run_parent, sizeof(p->run_parent), "%s%s%s", p->parent,
		     cfg->run_parent[0] ? "/" : "", cfg->run_parent) >= (int)sizeof(p->run_parent))
		err = -ENAMETOOLONG;
	else
		err = mkdir_p(p->run_parent, 0755);
	if (!err)
		err = ino_of(p->root, &p->root_ino, &p->dev);
	if (!err)
		err = ino_of(p->parent, &p->parent_ino, NULL);
	if (!err)
		err = ino_of(p->run_parent, &p->run_parent_ino, NULL);
	if (err) {
		fw_err("can't create cgroup %s: %s", p->run_parent, strerror(-err));
		goto fail;
	}
	err = fw_cg_load(reg->dp, &p->cg);
	if (!err)
		err = fw_cg_attach(p->cg, p->parent);
	if (err)
		goto fail;
	p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (p->ifd < 0)
		fw_warn("no inotify (%s): ended runs are seen by the periodic check only",
			strerror(errno));
	if (stat("/proc/self/ns/cgroup", &st) == 0)
		p->cgns_ino = st.st_ino;
	p->nsdelegate = true; /* said at once when it is not */
	nsdelegate_check(p);
	adopt(p);
	*out = p;
	return 0;

fail:
	fw_procs_stop(p);
	return err;
}

void fw_procs_stop(struct fw_procs *p)
{
	if (!p)
		return;
	while (p->loop && p->clients) {
		struct client *c = p->clients;

		p->clients = c->next;
		fw_loop_watch_del(p->loop, c->w);
		close(c->fd);
		if (c->run)
			c->run->launcher = NULL;
		free(c);
	}
	while (p->runs) {
		struct run *r = p->runs;

		p->runs = r->next;
		free(r);
	}
	if (p->loop && fw_loop_timer_armed(&p->timer))
		fw_loop_timer_cancel(p->loop, &p->timer);
	if (p->lfd >= 0) {
		if (p->loop)
			fw_loop_watch_del(p->loop, p->lw);
		close(p->lfd);
	}
	if (p->ifd >= 0) {
		if (p->loop && p->iw)
			fw_loop_watch_del(p->loop, p->iw);
		close(p->ifd);
	}
	fw_cg_close(p->cg);
	free(p);
}

int fw_procs_detach(const struct fw_cfg *cfg)
{
	char parent[PATH_MAX];
	const char *root = fw_cg_is_cgroup2(cfg->cgroup_root) ? cfg->cgroup_root
			   : fw_cg_is_cgroup2(FW_CG_FALLBACK) ? FW_CG_FALLBACK
							      : NULL;
	int n;

	if (!root)
		return 0;
	snprintf(parent, sizeof(parent), "%s/%s", root, cfg->cgroup_parent);
	n = fw_cg_detach(parent);
	if (n > 0)
		fw_info("detached %d cgroup programs from %s", n, parent);
	return n < 0 && n != -ENOENT ? n : 0;
}

int fw_procs_l7_sync(struct fw_procs *p, struct fw_dp *dp)
{
	if (!p || !p->cg)
		return 0;
	return fw_cg_l7_sync(p->cg, dp);
}
