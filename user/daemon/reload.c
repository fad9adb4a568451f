// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* SIGHUP: the configuration file again, all of it or nothing; the keys a
 * reload cannot change (the key tables' reload column) keep their running
 * values, the rest goes to the modules as at start (apply.c). SIGINT and
 * SIGTERM stop the loop. */
#include <signal.h>
#include <string.h>

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
	if (guard_check(&next, err, sizeof(err))) {
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

void on_signal(struct fw_loop *l, int signo, void *ctx)
{
	struct fw_daemon *d = ctx;
	__u64 was;

	switch (signo) {
	case SIGHUP:
		was = d->cfg.learn.refresh_interval_ns;
		fw_notify_reloading();
		reload(d);
		refresh_rearm(d, was);
		/* rejected or not, what runs is consistent again */
		fw_notify_ready(d->reload_stats.ok
					? "running; the last reload was applied"
					: "running; the last reload was rejected, see the log");
		break;
	case SIGINT:
	case SIGTERM:
		fw_info("stopping on signal %u; kernel state stays in place", (unsigned)signo);
		fw_notify_stopping();
		fw_loop_stop(l);
		break;
	}
}
