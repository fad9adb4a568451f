// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's start: one table of named phases, each starting one part
 * and returning an exit code (the table at the end of this file is the
 * start sequence), then the event loop until a stop signal; and the
 * loop's timers (the actions tick, the reaper, the lease refresh). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "common/exitcodes.h"
#include "common/log.h"
#include "common/secmem.h"
#include "daemon.h"
#include "notify.h"

static __u64 tick_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;

	(void)l;
	(void)t;
	fw_actions_tick(&d->actions);
	return FW_NSEC_PER_SEC;
}

/* What removals left in the kernel: one scan per map for every subject
 * removed at least a second ago (nothing when none was), every second and
 * at most a tenth of the time: a scan of a million learned addresses takes
 * about half a second here. */
static __u64 reap_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	__u64 t0 = fw_now_ns(), took;
	int err;

	(void)l;
	(void)t;
	err = fw_reg_reap(&d->reg, FW_REAP_AGE_NS);
	if (err < 0)
		fw_warn("reaping removed subjects: %s", strerror(-err));
	took = fw_now_ns() - t0;
	fw_round_record(&d->reap_rounds, took);
	if (err > 0 && took * 9 > FW_NSEC_PER_SEC)
		return took * 9;
	return FW_NSEC_PER_SEC;
}

static __u64 refresh_timer(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	__u64 t0 = fw_now_ns();
	int err;

	(void)t;
	d->last_refresh_ns = fw_loop_now(l);
	err = fw_learn_tick(d->learn);
	fw_round_record(&d->refresh_rounds, fw_now_ns() - t0);
	if (err)
		fw_warn("lease refresh: %s", strerror(-err));
	/* the config takes 1 s at least; 0 would stop the rounds */
	return d->cfg.learn.refresh_interval_ns ? d->cfg.learn.refresh_interval_ns
						: FW_NSEC_PER_SEC;
}

/* Says what the running kernel supports; fails on what the data plane
 * cannot do without (everything here is in 5.10, the supported floor). */
static int probe_kernel(void)
{
	static const struct {
		enum bpf_map_type type;
		const char *name;
	} needed[] = {
		{BPF_MAP_TYPE_RINGBUF, "ring buffer (5.8)"},
		{BPF_MAP_TYPE_ARRAY_OF_MAPS, "array of maps (4.12)"},
		{BPF_MAP_TYPE_LPM_TRIE, "LPM trie (4.11)"},
		{BPF_MAP_TYPE_LRU_HASH, "LRU hash (4.10)"},
	};
	struct utsname u;
	int missing = 0;

	uname(&u);
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (libbpf_probe_bpf_map_type(needed[i].type, NULL) == 1)
			continue;
		fw_err("kernel %s lacks %s; fastwall needs Linux 5.10 or newer", u.release,
		       needed[i].name);
		missing++;
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SCHED_CLS, NULL) != 1) {
		fw_err("kernel %s can't load TC (cls_bpf) programs", u.release);
		missing++;
	}
	if (missing)
		return -EOPNOTSUPP;
	fw_info("kernel %s: ring buffer, array of maps, LPM trie, LRU hash, TC programs: ok",
		u.release);
	return 0;
}

/* The signals the loop reads (on_signal); blocked from the first step on,
 * so that none is lost before the loop runs. */
static void daemon_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
}

/* --- the start phases: each returns FW_EXIT_OK or the exit code --------- */

static int start_config(struct fw_daemon *d)
{
	char errbuf[FW_CFG_ERR_LEN];
	sigset_t mask;

	fw_cfg_init(&d->cfg);
	if (fw_cfg_load_file(d->config_path, &d->cfg, errbuf, sizeof(errbuf))) {
		fw_err("%s", errbuf);
		return FW_EXIT_CONFIG;
	}
	apply_logging(d, &d->cfg);
	cfg_warnings(&d->cfg, NULL);
	if (guard_check(&d->cfg, errbuf, sizeof(errbuf)) ||
	    bandwidth_check(&d->cfg, errbuf, sizeof(errbuf))) {
		fw_err("%s", errbuf);
		return FW_EXIT_CONFIG;
	}
	daemon_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return FW_EXIT_OK;
}

static int start_kernel(struct fw_daemon *d)
{
	(void)d;
	fw_dp_quiet();
	return probe_kernel() ? FW_EXIT_KERNEL : FW_EXIT_OK;
}

/* up first: /readyz answers 503 while the rest starts. Without it (the
 * port taken) fastwalld still enforces: the error says why nothing
 * answers there */
static int start_metrics(struct fw_daemon *d)
{
	if (d->cfg.metrics_listen[0] &&
	    fw_metrics_start(&d->metrics, d->cfg.metrics_listen, d->cfg.bpffs))
		fw_err("running without the metrics listener");
	return FW_EXIT_OK;
}

static int start_datapath(struct fw_daemon *d)
{
	/* the rule trie of every subject slot is one open descriptor */
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (fw_dp_open(d->cfg.bpffs, &d->dp))
		return FW_EXIT_KERNEL;
	fw_info("data plane loaded, maps %s under %s", d->dp->reused ? "reused" : "pinned",
		d->cfg.bpffs);
	/* the programs of the process before (maybe an older build) stay
	 * attached until attach_all: no rule form they can't read */
	if (d->dp->reused)
		fw_dp_rules_old_programs(d->dp, true);
	if (fw_reg_init(&d->reg, d->dp))
		return FW_EXIT_KERNEL;
	/* restart-only keys: every subject's FW_SF_L7* from its first apply */
	d->reg.l7_enabled = d->cfg.l7_enabled;
	d->reg.l7_default_on = d->cfg.l7_default_on;
	d->reg.l7_cidr_pin = d->cfg.l7_cidr_pin;
	d->reg.on_change = on_subject_change;
	d->reg.change_ctx = d;
	return FW_EXIT_OK;
}

static int start_learn(struct fw_daemon *d)
{
	struct fw_learn_config lc;
	int err;

	learn_config(&d->cfg, &lc);
	err = fw_learn_new(&lc, &d->reg, &d->learn);
	if (err) {
		fw_err("can't set up learned leases: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	fw_learn_set_event_sink(d->learn, on_dns_event, d);
	fw_learn_set_monitor(d->learn, on_dns_monitor, dns_monitor_wants, d);
	return FW_EXIT_OK;
}

/* the proxy listens before the data plane sends DNS its way */
static int start_dns(struct fw_daemon *d)
{
	return d->cfg.dns_proxy && dns_start(d) ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

static int start_settings(struct fw_daemon *d)
{
	/* the pod's own addresses are pod-local from the first packet */
	pod_addrs_dump(d);
	return apply_datapath(d, &d->cfg) ? FW_EXIT_KERNEL : FW_EXIT_OK;
}

/* asked for: without the cgroup programs its sandboxes would run
 * unchecked, so fastwalld does not start. Before the subjects: a cgroup
 * subject is checked from the moment it is programmed */
/* a run root registered: the vault pushes cached for its name apply */
static void on_run(void *ctx, struct fw_entry *e)
{
	struct fw_daemon *d = ctx;

	if (d->actions_on)
		fw_actions_run_added(&d->actions, e);
}

static int start_processes(struct fw_daemon *d)
{
	if (!d->cfg.processes_enabled)
		return FW_EXIT_OK;
	if (fw_procs_open(&d->reg, &d->cfg, &d->procs))
		return FW_EXIT_KERNEL;
	fw_procs_resolve(d->procs, d->cfg.subjects, d->cfg.nsubjects);
	fw_procs_on_run(d->procs, on_run, d);
	return FW_EXIT_OK;
}

/* the uplinks' guard does not wait for the subjects */
static int start_guard(struct fw_daemon *d)
{
	return guard_apply(d, &d->cfg, NULL) ? FW_EXIT_KERNEL : FW_EXIT_OK;
}

/* the uplinks' limits: the subjects' entries come with them */
static int start_bandwidth(struct fw_daemon *d)
{
	return bandwidth_apply(d, &d->cfg, NULL) ? FW_EXIT_KERNEL : FW_EXIT_OK;
}

/* subjects first, then attach: a newly attached port enforces at once */
static int start_subjects(struct fw_daemon *d)
{
	int err = fw_reg_sync_static(&d->reg, &d->cfg.overlay, d->cfg.subjects, d->cfg.nsubjects,
				     true);

	if (err)
		fw_err("some static subjects could not be programmed: %s", strerror(-err));
	return FW_EXIT_OK;
}

static int start_actions(struct fw_daemon *d)
{
	struct fw_actions_opts ao = {
		.restart_wipe = d->cfg.actions_restart_wipe,
		.bind_host_veth = d->cfg.actions_bind_host_veth,
		.grace_ns = d->cfg.actions_grace_ns,
		.pending_ttl_ns = d->cfg.actions_pending_ttl_ns,
	};
	int err;

	if (!d->cfg.actions_enabled)
		return FW_EXIT_OK;
	/* secrets may arrive from here on: no core dumps, no ptrace */
	fw_secmem_process_init();
	fw_secmem_wipe_json();
	err = fw_actions_init(&d->actions, &d->reg, &ao);
	if (err) {
		fw_err("can't start the actions handler: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	d->actions_on = true;
	/* vault pushes follow into the layer-7 proxy's maps from the first */
	l7_actions_hooks(d);
	err = fw_http_start(&d->http, &d->actions, d->cfg.actions_listen,
			    d->cfg.actions_vault_socket);
	return err ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

static int start_links(struct fw_daemon *d)
{
	int err = fw_links_subscribe(&d->link_fd);

	if (err) {
		fw_err("can't subscribe to link events: %s", strerror(-err));
		return FW_EXIT_KERNEL;
	}
	/* again, now that no change can fall between the listing and events */
	pod_addrs_dump(d);
	local_sync(d);
	attach_all(d);
	fw_dp_rules_old_programs(d->dp, false);
	/* the new programs replaced the old ones everywhere: the maps they
	 * no longer use can go (a failure leaves them for the next start) */
	err = fw_dp_migrate_finish(d->dp);
	if (err)
		fw_warn("can't finish the migration of the pinned maps: %s", strerror(-err));
	return FW_EXIT_OK;
}

static int start_loop(struct fw_daemon *d)
{
	sigset_t mask;
	int err;

	d->events = ring_buffer__new(d->dp->events_fd, on_event, d, NULL);
	if (!d->events) {
		fw_err("can't open the event ring: %s", strerror(errno));
		return FW_EXIT_KERNEL;
	}
	daemon_signals(&mask);
	err = fw_loop_new(&d->loop);
	if (!err) {
		fw_loop_heartbeat(d->loop, FW_LOOP_BEAT_NS);
		err = fw_loop_signals(d->loop, &mask, on_signal, d);
	}
	if (!err)
		err = fw_loop_watch_add(d->loop, d->link_fd, EPOLLIN, on_links, d, NULL);
	if (!err)
		err = fw_loop_watch_add(d->loop, ring_buffer__epoll_fd(d->events), EPOLLIN,
					on_events, d, NULL);
	if (!err)
		err = config_watch(d);
	if (err) {
		fw_err("can't set up the event loop: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	return FW_EXIT_OK;
}

static int start_monitor(struct fw_daemon *d)
{
	struct fw_monitor *m = NULL;

	if (!d->cfg.monitor_socket[0])
		return FW_EXIT_OK;
	/* without it fastwalld still enforces; the error says why */
	if (fw_monitor_start(d->loop, d->cfg.monitor_socket, d->cfg.monitor_queue, &m))
		fw_err("running without the monitor socket");
	else
		__atomic_store_n(&d->monitor, m, __ATOMIC_RELEASE);
	return FW_EXIT_OK;
}

/* with l7.enabled: the proxy starts in the loop's first round; until it
 * accepts, pinned connections drop (l7-proxy-down) and /readyz says 503 */
static int start_l7(struct fw_daemon *d)
{
	int err = l7_start(d);

	if (err == -ENOENT || err == -EPERM)
		return FW_EXIT_CONFIG;
	return err ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

/* each runs in the loop's first round, then at its own pace */
static int start_timers(struct fw_daemon *d)
{
	if (d->actions_on) {
		fw_loop_timer_init(&d->tick_timer, tick_timer, d);
		fw_loop_timer_arm(d->loop, &d->tick_timer, 0);
	}
	fw_loop_timer_init(&d->reap_timer, reap_timer, d);
	fw_loop_timer_arm(d->loop, &d->reap_timer, 0);
	fw_loop_timer_init(&d->refresh_timer, refresh_timer, d);
	fw_loop_timer_arm(d->loop, &d->refresh_timer, 0);
	if (d->procs && fw_procs_serve(d->procs, d->loop))
		return FW_EXIT_FAILURE;
	return FW_EXIT_OK;
}

static int start_ready(struct fw_daemon *d)
{
	/* every part is up (and the pinned maps migrated): the listener may
	 * read them from here on */
	struct fw_metrics_parts parts = {
		.dp = d->dp,
		.reg = &d->reg,
		.learn = d->learn,
		.dnsp = d->dnsp,
		.http = d->http,
		.actions = d->actions_on ? &d->actions : NULL,
		.monitor = d->monitor,
		.dns_wanted = d->cfg.dns_proxy,
		.per_subject = d->cfg.metrics_per_subject,
		.events_suppressed = &d->events_suppressed,
		.reaper = &d->reap_rounds,
		.refresh = d->learn ? &d->refresh_rounds : NULL,
		.l7 = d->l7.enabled ? &d->l7.counters : NULL,
		.reload = &d->reload_stats,
		.loop = d->loop,
		.started = true,
	};
	char status[64];
	int err;

	fw_info("fastwalld ready: %zu subjects, config %s", fw_reg_count(&d->reg), d->config_path);
	fw_reload_record(&d->reload_stats, true); /* the first load */
	/* after a restart: the rule tries' descriptors, off the request path */
	fw_dp_slots_warm(d->dp);
	/* the kernel enforces the adopted leases meanwhile; the table that
	 * refreshes and collects them fills in the background */
	err = fw_learn_adopt(d->learn, true);
	if (err)
		fw_warn("can't adopt learned addresses: %s", strerror(-err));
	fw_metrics_publish(d->metrics, &parts);
	/* systemd's Type=notify: active from here, as /readyz */
	fw_notify_watchdog_start(d);
	snprintf(status, sizeof(status), "running: %zu subjects", fw_reg_count(&d->reg));
	fw_notify_ready(status);
	return FW_EXIT_OK;
}

/* The start sequence, in order: a step that fails ends the start with its
 * exit code, and what the steps before it started is stopped by main. */
static const struct {
	const char *name;
	int (*start)(struct fw_daemon *d);
} start_steps[] = {
	{"config", start_config},	/* load, logging, guard interfaces, signals */
	{"kernel", start_kernel},	/* what the kernel supports */
	{"metrics", start_metrics},	/* /readyz says 503 until "ready" */
	{"datapath", start_datapath},	/* load or adopt the pins; the registry */
	{"learn", start_learn},		/* learned leases */
	{"dns", start_dns},		/* the proxy, before DNS is sent its way */
	{"settings", start_settings},	/* pod addresses, global data path settings */
	{"processes", start_processes}, /* the cgroup programs */
	{"guard", start_guard},		/* the uplinks' port guard */
	{"bandwidth", start_bandwidth}, /* the uplinks' egress limits */
	{"subjects", start_subjects},	/* the static subjects, before any attach */
	{"actions", start_actions},	/* the Sandbox Actions listener */
	{"links", start_links},		/* link events; attach to every port */
	{"loop", start_loop},		/* the event ring, signals, link events, ConfigMap */
	{"monitor", start_monitor},	/* the live event socket */
	{"l7", start_l7},		/* the layer-7 proxy (started by the loop) */
	{"timers", start_timers},	/* actions tick, reaper, lease refresh */
	{"ready", start_ready},		/* adopt the leases; metrics see every part */
};

int run(struct fw_daemon *d)
{
	int ret, err;

	for (size_t i = 0; i < sizeof(start_steps) / sizeof(start_steps[0]); i++) {
		fw_debug("start: %s", start_steps[i].name);
		ret = start_steps[i].start(d);
		if (ret != FW_EXIT_OK)
			return ret;
	}
	err = fw_loop_run(d->loop);
	l7_stop(d);
	fw_procs_stop(d->procs);
	d->procs = NULL;
	if (err) {
		fw_err("epoll_wait: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	ring_buffer__consume(d->events);
	return FW_EXIT_OK;
}
