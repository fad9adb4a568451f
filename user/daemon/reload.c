// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* SIGHUP: the configuration file again, all of it or nothing; the keys a
 * reload cannot change (the key tables' reload column) keep their running
 * values, the rest goes to the modules as at start (apply.c). SIGINT and
 * SIGTERM stop the loop. A configuration in a Kubernetes ConfigMap volume
 * reloads the same way when the volume is updated (config_watch). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon.h"
#include "notify.h"

/* A restart-only key (the key tables' reload column) the file changed:
 * its running value stays. */
static void warn_kept(void *ctx, const char *name, const char *running)
{
	(void)ctx;
	fw_warn("%s changes only on restart; keeping '%s'", name, running);
}

static void reload(struct fw_daemon *d)
{
	char err[FW_CFG_ERR_LEN];
	struct fw_cfg next;
	int ret;

	fw_cfg_init(&next);
	if (fw_cfg_load_file(d->config_path, &next, err, sizeof(err))) {
		fw_err("reload rejected, running configuration unchanged: %s", err);
		fw_reload_record(&d->reload_stats, false);
		return;
	}
	if (guard_check(&next, err, sizeof(err)) || bandwidth_check(&next, err, sizeof(err))) {
		fw_err("reload rejected, running configuration unchanged: %s", err);
		fw_reload_record(&d->reload_stats, false);
		fw_cfg_free(&next);
		return;
	}
	cfg_warnings(&next, NULL);
	/* what runs is what next says, and what the next reload compares with */
	fw_cfg_keep_restart_keys(&next, &d->cfg, warn_kept, NULL);
	apply_dns(d, &next);
	if (d->procs)
		fw_procs_resolve(d->procs, next.subjects, next.nsubjects);
	ret = apply_datapath(d, &next);
	if (!ret)
		ret = fw_reg_sync_static(&d->reg, &next.overlay, next.subjects, next.nsubjects,
					 false);
	if (d->actions_on)
		fw_actions_reclaim(&d->actions); /* addresses a removed static subject held */
	{
		int gerr = guard_apply(d, &next, &d->cfg);

		if (gerr && !ret)
			ret = gerr;
		gerr = bandwidth_apply(d, &next, &d->cfg);
		if (gerr && !ret)
			ret = gerr;
	}
	fw_cfg_free(&d->cfg);
	d->cfg = next;
	apply_logging(d, &d->cfg);
	attach_all(d);
	fw_reload_record(&d->reload_stats, !ret);
	if (ret)
		fw_err("reload applied with errors: %s", strerror(-ret));
	else
		fw_info("reloaded %s: %zu static subjects", d->config_path, d->cfg.nsubjects);
}

/* A reload may change the refresh interval: the round runs at the new
 * one from the last round, as if it had always been set. */
static void refresh_rearm(struct fw_daemon *d, __u64 was)
{
	__u64 now = fw_loop_now(d->loop),
	      due = d->last_refresh_ns + d->cfg.learn.refresh_interval_ns;

	if (d->cfg.learn.refresh_interval_ns == was || !fw_loop_timer_armed(&d->refresh_timer))
		return;
	fw_loop_timer_arm(d->loop, &d->refresh_timer, due > now ? due - now : 0);
}

/* A reload (SIGHUP, or the mounted ConfigMap swapped), told to systemd:
 * reloading, then ready again, rejected or not (what runs is consistent) */
static void reload_now(struct fw_daemon *d)
{
	__u64 was = d->cfg.learn.refresh_interval_ns;

	fw_notify_reloading();
	reload(d);
	refresh_rearm(d, was);
	fw_notify_ready(d->reload_stats.ok ? "running; the last reload was applied"
					   : "running; the last reload was rejected, see the log");
}

void on_signal(struct fw_loop *l, int signo, void *ctx)
{
	struct fw_daemon *d = ctx;

	switch (signo) {
	case SIGHUP:
		reload_now(d);
		break;
	case SIGINT:
	case SIGTERM:
		fw_info("stopping on signal %u; kernel state stays in place", (unsigned)signo);
		fw_notify_stopping();
		fw_loop_stop(l);
		break;
	}
}

/* The kubelet updates a ConfigMap volume by writing the new files into a
 * new directory beside the old, pointing a temporary symlink at it and
 * renaming that onto DIR/..data, which the file's own symlink
 * (DIR/NAME -> ..data/NAME) goes through: one atomic swap. The rename onto
 * ..data (or its creation) is the update. */
#define CONFIGMAP_DATA "..data"

static void on_config_dir(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct fw_daemon *d = ctx;
	bool swapped = false;
	ssize_t n;

	(void)l;
	(void)events;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->len && !strcmp(ev->name, CONFIGMAP_DATA))
				swapped = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (!swapped)
		return;
	fw_info("%s: the ConfigMap volume was updated; reloading", d->config_path);
	reload_now(d);
}

int config_watch(struct fw_daemon *d)
{
	char dir[PATH_MAX], data[PATH_MAX + sizeof(CONFIGMAP_DATA)];
	const char *slash = strrchr(d->config_path, '/');
	struct stat st;
	int fd, err;

	d->config_watch_fd = -1;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == d->config_path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - d->config_path), d->config_path);
	snprintf(data, sizeof(data), "%s/" CONFIGMAP_DATA, dir);
	/* not a ConfigMap volume: SIGHUP only */
	if (lstat(data, &st) || !S_ISLNK(st.st_mode))
		return 0;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CREATE | IN_ONLYDIR) < 0) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		fw_warn("can't watch %s for ConfigMap updates (reload with SIGHUP): %s", dir,
			strerror(-err));
		return 0;
	}
	err = fw_loop_watch_add(d->loop, fd, EPOLLIN, on_config_dir, d, NULL);
	if (err) {
		close(fd);
		return err;
	}
	d->config_watch_fd = fd;
	fw_info("%s is in a ConfigMap volume: an update of %s reloads it", d->config_path, data);
	return 0;
}
