// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The configuration into the modules, the same at start and on reload:
 * logging and the audit destination, the learner's and the proxy's
 * settings, the data path's global settings and the uplinks' guard. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon.h"

/* log_format and the audit destination, on start and reload: a
 * destination that can't be opened keeps the previous one. */
void apply_logging(struct fw_daemon *d, const struct fw_cfg *cfg)
{
	char err[512];

	if (!d->level_forced)
		fw_log_level = cfg->log_level;
	if (!d->format_forced)
		fw_log_format = cfg->log_format;
	if (fw_audit_open(cfg->audit_destination, err, sizeof(err)))
		fw_err("%s", err);
}

/* What the configuration accepted with a warning (policy keys it does
 * not know): to out (check), else to the log. */
void cfg_warnings(const struct fw_cfg *cfg, FILE *out)
{
	for (size_t i = 0; i < cfg->nwarnings; i++) {
		if (out)
			fprintf(out, "warning: %s\n", cfg->warnings[i]);
		else
			fw_warn("%s", cfg->warnings[i]);
	}
	if (!cfg->warnings_lost)
		return;
	if (out)
		fprintf(out, "warning: %zu more warnings left out\n", cfg->warnings_lost);
	else
		fw_warn("%zu more configuration warnings left out", cfg->warnings_lost);
}

void learn_config(const struct fw_cfg *cfg, struct fw_learn_config *lc)
{
	*lc = cfg->learn; /* the learner's keys, its own defaults for the rest */
	lc->event_burst = cfg->event_burst;
	lc->event_interval_ns = cfg->event_rate ? FW_NSEC_PER_SEC / cfg->event_rate : 0;
}

int dns_start(struct fw_daemon *d)
{
	struct fw_dnsp_config pc;
	struct fw_dnsp_hooks hooks = {
		.ctx = d->learn,
		.decide = fw_learn_decide,
		.learn = fw_learn_answer,
		.flush = fw_learn_flush,
	};
	int err;

	pc = d->cfg.dnsp; /* the proxy's keys, its own defaults for the rest */
	pc.ipv6 = true;
	pc.ttl_cap = d->cfg.learn.lease_max_s;
	fw_dnsp_upstreams_build(d->cfg.dns_upstreams, d->cfg.dns_nupstreams, d->cfg.dns_resolv_conf,
				pc.upstreams, &pc.nupstreams);
	err = fw_dnsp_start(&pc, &hooks, &d->dnsp);
	if (err) {
		fw_err("can't start the DNS proxy on port %u: %s", d->cfg.dnsp.port,
		       strerror(-err));
		return err;
	}
	fw_info("dns proxy listening on port %u, %zu upstreams, redirect %s", d->cfg.dnsp.port,
		pc.nupstreams, d->cfg.dns_redirect_all ? "all DNS" : "gateway DNS only");
	return 0;
}

/* The learner's settings, and the running proxy's upstreams and TTL cap
 * (its other keys are restart-only). */
void apply_dns(struct fw_daemon *d, const struct fw_cfg *cfg)
{
	if (d->learn) {
		struct fw_learn_config lc;

		learn_config(cfg, &lc);
		fw_learn_set_config(d->learn, &lc);
	}
	if (d->dnsp) {
		struct fw_dnsp_upstream u[FW_DNSP_MAX_UPSTREAMS];
		size_t nu;

		fw_dnsp_upstreams_build(cfg->dns_upstreams, cfg->dns_nupstreams,
					cfg->dns_resolv_conf, u, &nu);
		fw_dnsp_set_upstreams(d->dnsp, u, nu);
		fw_dnsp_set_ttl_cap(d->dnsp, cfg->learn.lease_max_s);
	}
}

/* Writes the global datapath settings of cfg to the kernel. */
int apply_datapath(struct fw_daemon *d, const struct fw_cfg *cfg)
{
	struct fw_config k = {};
	struct fw_lpm_key *doh = NULL;
	bool full = false;
	int err;

	if (cfg->doh_mode == FW_DOH_STRICT)
		k.flags |= FW_CF_DOH_STRICT;
	else if (cfg->doh_mode == FW_DOH_LIST)
		k.flags |= FW_CF_DOH_LIST;
	k.event_burst = cfg->event_burst;
	k.event_interval_ns = cfg->event_rate ? FW_NSEC_PER_SEC / cfg->event_rate : 0;
	k.pod_flow_timeout_ns = cfg->pod_flow_timeout_ns;
	k.frag_timeout_ns = cfg->frag_timeout_ns;
	k.conn_quota = cfg->max_conns_per_subject;
	if (cfg->monitor_allow_sample) {
		k.flags |= FW_CF_ALLOW_SAMPLE;
		k.allow_sample = (__u16)cfg->monitor_allow_sample;
	}
	/* layer-7 pinning: the ports go in first, with the flags; the proxy
	 * is up only while it accepts (l7.c) */
	if (cfg->l7_enabled) {
		k.flags |= FW_CF_L7;
		if (cfg->l7_quic_allow)
			k.flags |= FW_CF_L7_QUIC;
		if (d->l7.counters.up)
			k.flags |= FW_CF_L7_UP;
	}
	if (d->dnsp) {
		k.flags |= FW_CF_DNS_PROXY;
		if (cfg->dns_redirect_all)
			k.flags |= FW_CF_DNS_ALL;
		k.dns_port = cfg->dnsp.port;
	}

	if (cfg->ndoh_blocklist) {
		doh = calloc(cfg->ndoh_blocklist, sizeof(*doh));
		if (!doh)
			return -ENOMEM;
		for (size_t i = 0; i < cfg->ndoh_blocklist; i++) {
			doh[i].prefixlen = cfg->doh_blocklist[i].plen;
			doh[i].addr = cfg->doh_blocklist[i].net;
		}
	}
	/* the list goes in before the mode that reads it */
	err = fw_dp_doh_set(d->dp, doh, cfg->ndoh_blocklist);
	/* without l7 too: pinning a start before left in the pins goes */
	if (!err) {
		struct fw_dp_l7 l7;

		l7_dp_settings(cfg, &l7);
		err = fw_dp_l7_apply(d->dp, cfg->l7_enabled ? &l7 : NULL);
		if (err) {
			fw_err("l7: can't write the pinned ports: %s", strerror(-err));
		} else {
			/* the process sandboxes' hooks keep the proxy ports of
			 * their own */
			err = fw_procs_l7_sync(d->procs, d->dp);
			if (err)
				fw_err("l7: can't give the cgroup programs the proxy ports: %s",
				       strerror(-err));
		}
	}
	if (!err)
		err = local_write(d, cfg, &full);
	if (!err && full && !d->local_full)
		fw_err("the pod-local addresses are incomplete (more than %d, or an update "
		       "failed): every other destination drops as pod-local until they fit",
		       FW_MAX_LOCAL);
	if (full)
		k.flags |= FW_CF_LOCAL_FULL;
	if (!err)
		err = fw_dp_config_set(d->dp, &k);
	if (!err) {
		d->local_full = full;
		d->pod_addrs_dirty = false;
		d->kcfg = k;
	}
	free(doh);
	return err;
}

/* Every guard interface must exist: a guard that silently misses an
 * uplink is no guard. */
int guard_check(const struct fw_cfg *cfg, char *msg, size_t len)
{
	for (size_t i = 0; cfg->guard_enabled && i < cfg->nguard_interfaces; i++) {
		if (!if_nametoindex(cfg->guard_interfaces[i])) {
			snprintf(msg, len, "guard: can't attach to %s: %s",
				 cfg->guard_interfaces[i], strerror(errno));
			return -ENODEV;
		}
	}
	return 0;
}

/* A reply to a connection the pod opened comes to its ephemeral port: on
 * a guarded port it would be judged by its source like any other packet. */
static void guard_warn_ephemeral(const struct fw_cfg *cfg)
{
	unsigned int lo, hi;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (!f)
		return;
	if (fscanf(f, "%u %u", &lo, &hi) == 2) {
		for (size_t i = 0; i < cfg->nguard_ports; i++)
			if (cfg->guard_ports[i] >= lo && cfg->guard_ports[i] <= hi)
				fw_warn("guard: port %u is in the ephemeral range %u-%u: replies "
					"to connections the pod opens may arrive there and drop",
					cfg->guard_ports[i], lo, hi);
	}
	fclose(f);
}

bool guard_listed(const struct fw_cfg *cfg, const char *name)
{
	for (size_t i = 0; cfg->guard_enabled && i < cfg->nguard_interfaces; i++)
		if (!strcmp(cfg->guard_interfaces[i], name))
			return true;
	return false;
}

/* Programs and attaches the guard of cfg; was is the configuration that
 * ran before (NULL at start): interfaces it guarded and cfg does not are
 * released last. */
int guard_apply(struct fw_daemon *d, const struct fw_cfg *cfg, const struct fw_cfg *was)
{
	struct fw_lpm_key *trusted = NULL;
	int err = 0;

	if (cfg->guard_enabled) {
		if (!d->guard) {
			err = fw_guard_open(cfg->bpffs, &d->guard);
			if (err)
				return err;
		}
		if (cfg->nguard_trusted) {
			trusted = calloc(cfg->nguard_trusted, sizeof(*trusted));
			if (!trusted)
				return -ENOMEM;
		}
		for (size_t i = 0; i < cfg->nguard_trusted; i++) {
			trusted[i].prefixlen = cfg->guard_trusted[i].plen;
			trusted[i].addr = cfg->guard_trusted[i].net;
		}
		err = fw_guard_set(d->guard, cfg->guard_ports, cfg->nguard_ports, trusted,
				   cfg->nguard_trusted);
		free(trusted);
		if (err)
			return err;
		guard_warn_ephemeral(cfg);
		for (size_t i = 0; i < cfg->nguard_interfaces; i++) {
			const char *name = cfg->guard_interfaces[i];
			int ifindex = (int)if_nametoindex(name), e;
			enum fw_guard_mode used;

			if (!ifindex) {
				fw_err("guard: can't attach to %s: %s", name, strerror(errno));
				err = err ? err : -ENODEV;
				continue;
			}
			e = fw_guard_attach(d->guard, ifindex, cfg->guard_mode, &used);
			if (e) {
				err = err ? err : e;
				continue;
			}
			fw_info("guard on %s (%s): %zu ports, %zu trusted prefixes", name,
				fw_guard_mode_name(used), cfg->nguard_ports, cfg->nguard_trusted);
		}
	}
	for (size_t i = 0; was && was->guard_enabled && i < was->nguard_interfaces; i++) {
		const char *name = was->guard_interfaces[i];
		int ifindex = (int)if_nametoindex(name);

		if (guard_listed(cfg, name) || !ifindex)
			continue;
		if (fw_guard_detach(ifindex) == 0)
			fw_info("guard removed from %s", name);
	}
	return err;
}

/* ---- bandwidth ---------------------------------------------------------- */

int bandwidth_check(const struct fw_cfg *cfg, char *msg, size_t len)
{
	for (size_t i = 0; cfg->bw_enabled && i < cfg->nbw_interfaces; i++) {
		if (!if_nametoindex(cfg->bw_interfaces[i])) {
			snprintf(msg, len, "bandwidth: can't attach to %s: %s",
				 cfg->bw_interfaces[i], strerror(errno));
			return -ENODEV;
		}
	}
	return 0;
}

static bool bandwidth_listed(const struct fw_cfg *cfg, const char *name)
{
	for (size_t i = 0; cfg->bw_enabled && i < cfg->nbw_interfaces; i++)
		if (!strcmp(cfg->bw_interfaces[i], name))
			return true;
	return false;
}

int bandwidth_apply(struct fw_daemon *d, const struct fw_cfg *cfg, const struct fw_cfg *was)
{
	int err = 0;

	if (cfg->bw_enabled && !d->bw) {
		err = fw_bw_open(cfg->bpffs, cfg->bw_horizon_ns, cfg->processes_enabled, &d->bw);
		if (err)
			return err;
	}
	for (size_t i = 0; cfg->bw_enabled && i < cfg->nbw_interfaces; i++) {
		const char *name = cfg->bw_interfaces[i];
		int ifindex = (int)if_nametoindex(name), e;
		enum fw_bw_mode used;

		if (!ifindex) {
			fw_err("bandwidth: can't attach to %s: %s", name, strerror(errno));
			err = err ? err : -ENODEV;
			continue;
		}
		e = fw_bw_attach(d->bw, ifindex, cfg->bw_mode, &used);
		if (e) {
			err = err ? err : e;
			continue;
		}
		fw_info("bandwidth on %s: %s", name, fw_bw_mode_name(used));
	}
	for (size_t i = 0; was && was->bw_enabled && i < was->nbw_interfaces; i++) {
		const char *name = was->bw_interfaces[i];
		int ifindex = (int)if_nametoindex(name);

		if (bandwidth_listed(cfg, name) || !ifindex)
			continue;
		if (fw_bw_detach(ifindex) == 0)
			fw_info("bandwidth removed from %s", name);
	}
	return err;
}
