// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process sandboxes in fastwalld: the cgroup programs, the `fastwall run`
 * socket and the life of each run. See procs.h.
 *
 * A run's subject goes only when its cgroup is empty: while any process
 * of the sandbox lives, it keeps its policy (fail closed). The launcher
 * keeps its connection open for the run; when it says "remove" the
 * cgroup's processes are killed, when it just goes (SIGKILL) they keep
 * running; either way a check each second removes the subject and the
 * cgroup once nothing is left in it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "datapath/cgroup.h"
#include "procs.h"
#include "subjects/run.h"

#define FW_CG_FALLBACK	  "/run/fastwall/cgroup2"
#define FW_PROCS_CHECK_NS (1000000000ull)

struct client;

struct run {
	struct run *next;
	char name[FW_RUN_NAME_MAX + 1];
	char path[PATH_MAX];
	__u64 cgid;
	struct client *launcher; /* NULL once it is gone (or after a restart) */
};

struct client {
	struct client *next;
	struct fw_procs *p;
	int fd;
	struct fw_loop_watch *w;
	struct run *run; /* the run this connection launched */
};

struct fw_procs {
	struct fw_loop *loop;
	struct fw_registry *reg;
	struct fw_cg *cg;
	char root[256];
	char parent[PATH_MAX];
	char sock_path[108];
	int lfd;
	struct fw_loop_watch *lw;
	struct run *runs;
	struct client *clients;
	struct fw_loop_timer timer;
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
	free(run);
}

/* Removes the run's subject and cgroup once its launcher is gone and
 * nothing is left in the cgroup; true when it did. */
static bool collect(struct fw_procs *p, struct run *run)
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
	fw_info("run %s: ended, subject and cgroup %s removed", run->name, run->path);
	run_free(p, run);
	return true;
}

static __u64 check_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_procs *p = ctx;
	struct run *run = p->runs, *next;

	(void)l;
	(void)t;
	for (; run; run = next) {
		next = run->next;
		collect(p, run);
	}
	return FW_PROCS_CHECK_NS;
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

static void handle_add(struct client *c, struct fw_run_req *req)
{
	struct fw_procs *p = c->p;
	struct fw_subject_spec *spec = NULL;
	struct fw_run_reply r = {.ok = true};
	struct fw_entry *e;
	struct run *run = NULL;
	int err, level;

	if (c->run) {
		refuse(c, "this connection runs %s already%s", c->run->name, 0);
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
	snprintf(run->name, sizeof(run->name), "%s", req->name);
	if (snprintf(run->path, sizeof(run->path), "%s/%s", p->parent, req->name) >=
	    (int)sizeof(run->path)) {
		refuse(c, "%s: %s", req->name, -ENAMETOOLONG);
		goto fail;
	}
	if (mkdir(run->path, 0755)) {
		err = -errno;
		refuse(c, "can't create cgroup %s: %s", run->path, err);
		goto fail;
	}
	level = fw_cg_level(p->root, run->path);
	err = level < 0 ? level : level > FW_CG_MAX_LEVELS ? -ELOOP : 0;
	if (!err)
		err = fw_cg_id_of(run->path, &run->cgid);
	if (err) {
		refuse(c, "cgroup %s can't be a sandbox: %s", run->path, err);
		rmdir(run->path);
		goto fail;
	}
	snprintf(spec->name, sizeof(spec->name), "%s", req->name);
	spec->state = FW_STATE_ACTIVE;
	spec->cgroup_id = run->cgid;
	spec->policy = req->policy; /* lent: req frees it */
	e = fw_reg_get(p->reg, req->name, true);
	err = e ? fw_reg_apply(p->reg, e, spec, FW_ORIGIN_PROCESS, 0, NULL) : -ENOMEM;
	if (!err)
		r.id = e->id;
	if (e)
		fw_reg_put(p->reg, e);
	if (err) {
		refuse(c, "can't register %s: %s", req->name, err);
		rmdir(run->path);
		goto fail;
	}
	run->launcher = c;
	c->run = run;
	run->next = p->runs;
	p->runs = run;
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", run->path);
	fw_info("run %s: subject id %u, cgroup %s", run->name, r.id, run->path);
	reply(c, &r);
	free(spec);
	return;

fail:
	free(spec);
	free(run);
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
	collect(c->p, run);
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
		collect(p, c->run);
	}
	free(c);
}

static void on_client(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct client *c = ctx;
	struct fw_run_req req;
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
	n = recv(fd, buf, FW_RUN_MSG_MAX + 1, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		free(buf);
		return;
	}
	if (n <= 0) {
		free(buf);
		client_close(c);
		return;
	}
	if (fw_run_req_parse(buf, (size_t)n, &req, err, sizeof(err))) {
		refuse(c, "bad request: %s%s", err, 0);
	} else {
		if (req.op == FW_RUN_ADD)
			handle_add(c, &req);
		else
			handle_remove(c, &req);
		fw_run_req_free(&req);
	}
	free(buf);
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
	/* root only: a run decides what a process may reach */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.uid != 0) {
		struct client tmp = {.fd = cfd};

		fw_warn("run: refused a connection from uid %d (root only)",
			len == sizeof(cred) ? (int)cred.uid : -1);
		refuse(&tmp, "%s%s", "fastwall run is for root only", 0);
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
	if (bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(p->sock_path, 0600) ||
	    listen(p->lfd, 64)) {
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
		run->next = p->runs;
		p->runs = run;
	}
	pthread_mutex_unlock(&r->lock);
}

void fw_procs_resolve(struct fw_procs *p, struct fw_subject_spec *subjects, size_t n)
{
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
	}
}

int fw_procs_serve(struct fw_procs *p, struct fw_loop *loop)
{
	int err;

	p->loop = loop;
	err = listen_on(p);
	if (err)
		return err;
	fw_loop_timer_init(&p->timer, check_timer, p);
	fw_loop_timer_arm(loop, &p->timer, 0);
	fw_info("process sandboxes: cgroup programs on %s, fastwall run on %s", p->parent,
		p->sock_path);
	return 0;
}

int fw_procs_open(struct fw_registry *reg, const struct fw_cfg *cfg, struct fw_procs **out)
{
	struct fw_procs *p = calloc(1, sizeof(*p));
	int err, level;

	if (!p)
		return -ENOMEM;
	p->reg = reg;
	p->lfd = -1;
	snprintf(p->sock_path, sizeof(p->sock_path), "%s", cfg->processes_socket);
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
	err = fw_cg_load(reg->dp, &p->cg);
	if (!err)
		err = fw_cg_attach(p->cg, p->parent);
	if (err)
		goto fail;
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
