/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's state and the jobs of its files: start.c (the start phases
 * and the loop's timers), links.c (links and pod addresses), events.c
 * (events and the audit trail), apply.c (configuration into the modules,
 * start and reload alike), reload.c (SIGHUP). Everything runs on the
 * event loop thread unless it says otherwise. Functions return 0 or a
 * negative errno unless they say otherwise. */
#ifndef FW_DAEMON_H
#define FW_DAEMON_H

#include <stdbool.h>
#include <stdio.h>

#include <bpf/libbpf.h>

#include "common/ifset.h"
#include "common/loop.h"
#include "config/config.h"
#include "datapath/attach.h"
#include "datapath/datapath.h"
#include "datapath/bandwidth.h"
#include "datapath/guard.h"
#include "datapath/links.h"
#include "datapath/reasons.h"
#include "datapath/rules.h"
#include "datapath/scan.h"
#include "dns/learn.h"
#include "dns/proxy.h"
#include "http.h"
#include "l7.h"
#include "datapath/l7.h"
#include "metrics.h"
#include "monitor.h"
#include "procs.h"
#include "l7/ca.h"
#include "protocol/actions.h"
#include "subjects/registry.h"

#define L7_OPEN_BUCKETS 4096
#define L7_PROBE_PORTS	8

/* The layer-7 proxy's supervision (l7.c). */
struct l7_proxy {
	bool enabled, stopping, bind_low;
	unsigned int spawned; /* starts that got as far as the fork */
	uid_t uid;
	gid_t gid;
	pid_t pid, parent;	      /* the nginx master; 0: none running */
	int pidfd, err_fd, report_fd; /* its exit, its stderr, its reports */
	int child_report, child_err;  /* what it gets (CLOEXEC here) */
	int child_maps[4];	      /* read-only: nat, learned, learned_names, names */
	/* credentials (l7.credentials on): the CA, the vaults' maps; inject:
	 * the module takes them (nginx.conf's part-2 lines, fds 8-10) */
	bool credentials, inject;
	struct fw_l7_ca ca;
	int child_vaults[2]; /* read-only: fastwall_l7_vaults, fastwall_l7_vault_gen */
	int child_ca;	     /* the read end of this start's CA pipe */
	struct fw_loop_watch *exit_watch, *err_watch, *report_watch;
	struct fw_loop_timer timer;    /* start, restart, the probe */
	struct fw_loop_timer gc_timer; /* fw_dp_l7_gc */
	/* entries of connections the proxy reported closed, oldest first,
	 * deleted FW_L7_RELEASE_NS after the report (fw_dp_l7_release) */
	struct fw_loop_timer release_timer;
	struct fw_loop_timer report_timer; /* reads the reports while they come */
	struct l7_release {
		struct fw_l7_nat_key key;
		__u64 due_ns;
	} * release;
	size_t release_head, release_n;
	__u64 started_ns, backoff_ns;
	char var[256]; /* runtime_dir/var: the proxy's own */
	char errbuf[1024];
	size_t errlen;
	__u16 probe_ports[L7_PROBE_PORTS]; /* local ports of the last probes */
	unsigned int probe_next;
	struct l7_open *open[L7_OPEN_BUCKETS]; /* pinned connections open now */
	size_t nopen;
	struct l7_budget {
		__u64 last_ns, suppressed;
		__u32 tokens;
	} * budget; /* audit records per subject, as datapath.events */
	struct fw_l7_counters counters;
};

struct fw_daemon {
	const char *config_path;
	struct fw_cfg cfg;
	struct fw_dp *dp;
	struct fw_guard *guard; /* loaded when a guard section was seen */
	struct fw_bw *bw;	/* loaded when a bandwidth section was seen */
	struct fw_registry reg;
	struct ring_buffer *events;
	/* what the rate limit suppressed, as the events after it report
	 * (written by the event loop, read by the metrics thread) */
	__u64 events_suppressed;
	struct fw_actions actions;
	bool actions_on;
	struct fw_http *http;
	struct fw_metrics *metrics; /* /metrics, /healthz, /readyz; NULL when off */
	struct fw_monitor *monitor; /* the live event socket; NULL when off; atomic */
	struct fw_learn *learn;
	struct fw_dnsp *dnsp;
	struct fw_loop *loop;
	struct fw_procs *procs;		    /* process sandboxes, with processes: */
	struct fw_loop_timer tick_timer;    /* fw_actions_tick, every second */
	struct fw_loop_timer reap_timer;    /* fw_reg_reap */
	struct fw_loop_timer refresh_timer; /* fw_learn_tick, every refresh_interval_ns */
	struct fw_round_stats reap_rounds, refresh_rounds; /* for /metrics */
	struct fw_reload_stats reload_stats;		   /* for /metrics */
	__u64 last_refresh_ns;
	int link_fd;
	int config_watch_fd;	  /* inotify on a ConfigMap volume's directory; -1: none */
	bool level_forced;	  /* --log-level wins over the config */
	bool format_forced;	  /* --log-format wins over the config */
	struct fw_ifset attached; /* interfaces we attached to, for logging once */
	/* the pod namespace's own addresses, from rtnetlink, which
	 * fastwall_local holds besides the configured ones */
	struct fw_ifaddr *pod_addrs;
	size_t npod_addrs, pod_addrs_cap;
	bool pod_addrs_dirty;
	bool pod_addrs_lost;	/* one did not fit in memory: fail closed */
	bool pod_addrs_listing; /* within pod_addrs_dump */
	/* the count pod_addrs_dump last logged, + 1 (0: none yet): a listing
	 * that finds what the one before it did logs at debug */
	size_t pod_addrs_told;
	bool local_full;	/* they did not fit: FW_CF_LOCAL_FULL is set */
	struct fw_config kcfg;	/* what apply_datapath wrote last */
	__u64 l2_reserved_hash; /* of the pod addresses last reserved */
	struct l7_proxy l7;
};

/* --- start.c ------------------------------------------------------------ */

/* Starts every part in turn (the start phases table), runs the event loop
 * until a stop signal and returns the process's exit code (FW_EXIT_*). */
int run(struct fw_daemon *d);

/* --- links.c: links and pod addresses ------------------------------------ */

/* Attaches to every sandbox-facing interface there is (and binds, and
 * guards); the pod's own MACs and addresses are reserved first. */
int attach_all(struct fw_daemon *d);
/* Lists the namespace's addresses again, from scratch. */
int pod_addrs_dump(struct fw_daemon *d);
/* Writes fastwall_local from cfg and the pod's addresses; *full: some did
 * not fit (the data path must fail closed). */
int local_write(struct fw_daemon *d, const struct fw_cfg *cfg, bool *full);
/* After address events: fastwall_local follows. */
void local_sync(struct fw_daemon *d);
/* The loop's watch of the link and address events. */
void on_links(struct fw_loop *l, int fd, __u32 events, void *ctx);

/* --- events.c: events and the audit trail -------------------------------- */

/* A record of the data path's event ring (ring_buffer__new's callback). */
int on_event(void *ctx, void *data, size_t len);
/* The loop's watch of the event ring. */
void on_events(struct fw_loop *l, int fd, __u32 events, void *ctx);
/* The learner's sinks: denied queries to the audit trail, every decision
 * to the monitor (from the proxy's threads). */
void on_dns_event(void *ctx, const struct fw_learn_event *ev);
bool dns_monitor_wants(void *ctx);
void on_dns_monitor(void *ctx, const struct fw_learn_event *ev);
/* The registry's subject changes, to the audit trail. */
void on_subject_change(void *ctx, const struct fw_reg_change *c);

/* --- apply.c: configuration into the modules, start and reload ----------- */

void apply_logging(struct fw_daemon *d, const struct fw_cfg *cfg);
/* What the configuration accepted with a warning: to out (check), else
 * to the log. */
void cfg_warnings(const struct fw_cfg *cfg, FILE *out);
void learn_config(const struct fw_cfg *cfg, struct fw_learn_config *lc);
int dns_start(struct fw_daemon *d);
/* On reload: the learner's settings, the proxy's upstreams and TTL cap. */
void apply_dns(struct fw_daemon *d, const struct fw_cfg *cfg);
/* The global data path settings of cfg, and fastwall_local. */
int apply_datapath(struct fw_daemon *d, const struct fw_cfg *cfg);
/* -ENODEV and msg when a guard interface does not exist. */
int guard_check(const struct fw_cfg *cfg, char *msg, size_t len);
bool guard_listed(const struct fw_cfg *cfg, const char *name);
/* The guard of cfg; was (NULL at start): what ran before. */
int guard_apply(struct fw_daemon *d, const struct fw_cfg *cfg, const struct fw_cfg *was);
/* -ENODEV and msg when a bandwidth interface does not exist. */
int bandwidth_check(const struct fw_cfg *cfg, char *msg, size_t len);
/* The bandwidth programs on cfg's uplinks; was (NULL at start): what ran
 * before, whose uplinks cfg no longer names lose them. */
int bandwidth_apply(struct fw_daemon *d, const struct fw_cfg *cfg, const struct fw_cfg *was);

/* --- l7.c: the layer-7 proxy ------------------------------------------------ */

/* With l7.enabled: prepares the runtime directory and nginx.conf, the
 * report socket, and starts the proxy from the loop (a failure to start
 * is retried with a growing delay; the proxy is down meanwhile). */
int l7_start(struct fw_daemon *d);
/* Stops the proxy (SIGQUIT, SIGKILL after 5 s) and clears FW_CF_L7_UP. */
void l7_stop(struct fw_daemon *d);
/* The data path's l7 settings of cfg (ports and flags). */
void l7_dp_settings(const struct fw_cfg *cfg, struct fw_dp_l7 *out);
/* The proxy's configuration for cfg into path (written whole, renamed). */
int l7_write_conf(const struct fw_cfg *cfg, const char *path, bool ipv6, bool inject);
/* Whether the proxy listens on IPv6 too (an IPv6 socket binds here). */
bool l7_ipv6_usable(void);
/* The same text to f (`fastwalld l7-conf`). */
int l7_conf_print(FILE *f, const struct fw_cfg *cfg, bool ipv6, bool inject);
/* Whether the module at path has every part-2 directive; when not, the
 * first one it lacks in missing. */
bool l7_module_injects(const char *path, char *missing, size_t len);
/* Before the listeners start (credentials on): vault pushes follow into
 * the proxy's maps, and a vault too large for them is refused. */
void l7_actions_hooks(struct fw_daemon *d);
/* A subject changed in the registry (its id went, or changed). */
void l7_on_subject(struct fw_daemon *d, const struct fw_reg_change *c);
/* After the listeners stopped: the vaults' maps and the CA go. */
void l7_free(struct fw_daemon *d);

/* --- reload.c ------------------------------------------------------------ */

/* The loop's signal handler: SIGHUP reloads, SIGINT and SIGTERM stop. */
void on_signal(struct fw_loop *l, int signo, void *ctx);
/* When the configuration file is in a Kubernetes ConfigMap volume (its
 * directory holds the ..data symlink), watches the directory: the
 * kubelet's swap of ..data reloads as SIGHUP does. A watch that can't be
 * set up is a warning (SIGHUP still works). */
int config_watch(struct fw_daemon *d);

#endif /* FW_DAEMON_H */
