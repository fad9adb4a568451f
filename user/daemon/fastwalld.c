// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld: loads and pins the data plane, attaches it to every
 * sandbox-facing interface (including ports that appear later), programs
 * the static subjects of its YAML config, reloads them on SIGHUP, runs the
 * DNS proxy (its own worker threads) and the lease refresh, and reports
 * deny events. One event loop thread (common/loop.h) besides the proxy's,
 * the HTTP server's and the metrics listener's (metrics.h): signals, link
 * events and the deny-event ring are its watches; the actions tick, the
 * reaper and the lease refresh round are its timers. This file holds the
 * commands check and detach and the daemon's state before and after run;
 * main.c parses the command line (one command table), daemon.h says which
 * file does which job of run. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/exitcodes.h"
#include "common/log.h"
#include "daemon.h"
#include "fastwalld.h"

/* Removes fastwall's filters from every interface; --purge also unpins. */
int detach(const char *config_path, const char *bpffs, bool purge)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	char errbuf[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;
	int n = 0;

	fw_dp_quiet();
	fw_cfg_init(&cfg);
	if (!bpffs && config_path && access(config_path, R_OK) == 0) {
		if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
			fw_err("%s", errbuf);
			return FW_EXIT_CONFIG;
		}
		bpffs = cfg.bpffs;
	}
	if (!bpffs)
		bpffs = FW_DEFAULT_BPFFS;
	for (i = ifs; i && i->if_index; i++) {
		if (fw_dp_detach(i->if_index) == 0) {
			fw_info("detached from %s", i->if_name);
			n++;
		}
		if (fw_guard_detach(i->if_index) == 0) {
			fw_info("guard detached from %s", i->if_name);
			n++;
		}
		if (fw_bw_detach(i->if_index) == 0) {
			fw_info("bandwidth detached from %s", i->if_name);
			n++;
		}
	}
	if_freenameindex(ifs);
	fw_info("detached from %d interfaces", n);
	if (cfg.processes_enabled)
		fw_procs_detach(&cfg);
	if (purge && fw_dp_purge(bpffs) == 0)
		fw_info("unpinned maps under %s", bpffs);
	fw_cfg_free(&cfg);
	return FW_EXIT_OK;
}

int check(const char *config_path)
{
	char errbuf[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;
	bool nothing;

	fw_cfg_init(&cfg);
	if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "%s%s\n", fw_log_journal ? "<3>" : "", errbuf);
		return FW_EXIT_CONFIG;
	}
	cfg_warnings(&cfg, stderr);
	/* a valid file that enforces nothing on the network: no interface it
	 * would attach to, now or later */
	nothing = !cfg.ninterfaces && !cfg.nbridges;
	if (nothing)
		fprintf(stderr,
			"warning: %s: no datapath.interfaces and no datapath.bridges: fastwalld "
			"attaches to no interface, %s\n",
			config_path,
			cfg.processes_enabled ? "only process sandboxes are enforced"
					      : "no packet is enforced");
	printf("%s: ok, %zu static subjects%s\n", config_path, cfg.nsubjects,
	       cfg.nwarnings || nothing ? " (with warnings)" : "");
	fw_cfg_free(&cfg);
	return FW_EXIT_OK;
}

int l7_conf(const char *config_path)
{
	char errbuf[FW_CFG_ERR_LEN], missing[64];
	struct fw_cfg cfg;
	int err;

	fw_cfg_init(&cfg);
	if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "%s\n", errbuf);
		return FW_EXIT_CONFIG;
	}
	/* as a start would write it with the module taking every line */
	if (cfg.l7_credentials && !l7_module_injects(cfg.l7_module, missing, sizeof(missing)))
		fprintf(stderr,
			"note: the module %s lacks %s: fastwalld would leave the credential "
			"lines out\n",
			cfg.l7_module, missing);
	err = l7_conf_print(stdout, &cfg, l7_ipv6_usable(), cfg.l7_credentials);
	fw_cfg_free(&cfg);
	return err ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

struct fw_daemon *fw_daemon_new(const char *config_path, bool level_forced, bool format_forced)
{
	struct fw_daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->config_path = config_path;
	d->level_forced = level_forced;
	d->format_forced = format_forced;
	return d;
}

void fw_daemon_free(struct fw_daemon *d)
{
	/* first: its requests read everything below */
	fw_metrics_stop(d->metrics);
	fw_http_stop(d->http);
	fw_dnsp_stop(d->dnsp);
	l7_stop(d);
	l7_free(d);
	if (d->actions_on)
		fw_actions_fini(&d->actions);
	fw_learn_free(d->learn);
	fw_monitor_stop(d->monitor);
	ring_buffer__free(d->events);
	fw_reg_free(&d->reg);
	fw_guard_close(d->guard);
	fw_bw_close(d->bw);
	fw_dp_close(d->dp);
	fw_cfg_free(&d->cfg);
	fw_loop_free(d->loop);
	if (d->link_fd > 0)
		close(d->link_fd);
	if (d->config_watch_fd > 0)
		close(d->config_watch_fd);
	fw_ifset_free(&d->attached);
	free(d->pod_addrs);
	free(d);
}
