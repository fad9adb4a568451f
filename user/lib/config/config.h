/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's YAML configuration: datapath settings, the operator overlay
 * and static subjects. Loading is all-or-nothing: on error nothing in *cfg
 * is left allocated and err holds "file:line: message (value 'x')".
 * Functions return 0 or a negative errno. */
#ifndef FW_CONFIG_H
#define FW_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fastwall/abi.h"
#include "common/log.h"
#include "dns/learn_keys.h"
#include "dns/proxy.h"
#include "policy/policy.h"
#include "subjects/registry.h"

#define FW_DEFAULT_BPFFS      "/sys/fs/bpf/fastwall"
#define FW_CFG_ERR_LEN	      512
#define FW_CFG_MAX_WARNINGS   32
#define FW_CFG_L7_PUBLISH_MAX 8 /* l7.ca.publish paths */

enum fw_doh_mode {
	FW_DOH_OFF = 0,
	FW_DOH_LIST,   /* block TCP 443 to the blocklist */
	FW_DOH_STRICT, /* block all TCP 443 */
};

#define FW_CFG_MAX_UPSTREAMS FW_DNSP_MAX_UPSTREAMS

struct fw_cfg {
	char bpffs[256];
	enum fw_log_level log_level;
	char **interfaces; /* names or fnmatch globs */
	size_t ninterfaces;
	char **bridges; /* every port of these */
	size_t nbridges;
	struct fw_ip *local; /* pod-local addresses besides gateways */
	size_t nlocal;
	struct fw_port_key *local_ports; /* open on pod-local addresses */
	size_t nlocal_ports;
	bool doh_block; /* doh.block as written; doh_mode follows from it */
	enum fw_doh_mode doh_mode;
	struct fw_prefix *doh_blocklist;
	size_t ndoh_blocklist;
	__u32 event_rate; /* per second per subject per CPU; 0 = no events */
	__u32 event_burst;
	__u64 pod_flow_timeout_ns;
	__u64 frag_timeout_ns;
	struct fw_policy overlay; /* operator rules ahead of every subject's */
	/* actions: the Sandbox Actions protocol listener */
	bool actions_enabled;		/* the section is present */
	char actions_listen[64];	/* loopback "addr:port" */
	char actions_vault_socket[108]; /* unix socket for the active-vault read */
	bool actions_restart_wipe;	/* reference behaviour on restart */
	__u64 actions_grace_ns;		/* unconfirmed subjects removed after */
	__u64 actions_pending_ttl_ns;	/* cached pushes for unknown subjects */
	bool actions_bind_host_veth;	/* anti-spoof on attachment.hostVeth */
	/* processes: process sandboxes (cgroup programs, fastwall run) */
	bool processes_enabled;	    /* the section is present */
	char cgroup_root[256];	    /* the cgroup2 mount wanted */
	char cgroup_parent[256];    /* below it: where programs attach, runs go */
	char processes_socket[108]; /* unix socket of fastwall run */
	char run_group[64];	    /* whose members may use it too ("": root only) */
	char run_parent[256];	    /* below cgroup_parent: non-root runs ("": it) */
	/* dns: the DNS proxy, redirection and learned leases */
	bool dns_proxy;	       /* redirect DNS to the gateway to the proxy */
	bool dns_redirect_all; /* ... and DNS to every other resolver */
	struct fw_dnsp_addr dns_upstreams[FW_CFG_MAX_UPSTREAMS]; /* none: resolv.conf */
	size_t dns_nupstreams;
	char dns_resolv_conf[256];
	/* the proxy's keys (dns/proxy_keys.c); its upstreams are dns_upstreams */
	struct fw_dnsp_config dnsp;
	/* the learner's keys (dns/learn_keys.c) */
	struct fw_learn_config learn;
	char metrics_listen[64];  /* "addr:port" of /metrics, "" = off */
	bool metrics_per_subject; /* fastwall_subject_packets_total */
	enum fw_log_format log_format;
	/* monitor: the live event socket of `fastwall monitor` */
	char monitor_socket[108];   /* "" = off */
	__u32 monitor_queue;	    /* lines a reader may have pending */
	__u32 monitor_allow_sample; /* one passed packet in N as an allow event; 0 = off */
	/* audit: denies and subject changes, whatever log_level says */
	char audit_destination[256]; /* stderr, stdout, off, or a file */
	__u32 max_conns_per_subject; /* fastwall_conns records, 1-FW_MAX_CONNS */
	/* guard: the port guard of the pod's uplinks (direct access mode) */
	bool guard_enabled; /* the section is present */
	char **guard_interfaces;
	size_t nguard_interfaces;
	__u16 *guard_ports; /* TCP and UDP, host order */
	size_t nguard_ports;
	struct fw_prefix *guard_trusted;
	size_t nguard_trusted;
	unsigned int guard_mode; /* enum fw_guard_mode */
	/* bandwidth: the subjects' egress limits on the node's uplinks */
	bool bw_enabled; /* the section is present */
	char **bw_interfaces;
	size_t nbw_interfaces;
	unsigned int bw_mode; /* enum fw_bw_mode */
	__u64 bw_horizon_ns;
	/* l7: layer-7 pinning, the proxy fastwalld supervises */
	bool l7_enabled;
	__u16 l7_tls_ports[FW_MAX_L7_PORTS]; /* destination ports, host order */
	size_t nl7_tls_ports;
	__u16 l7_http_ports[FW_MAX_L7_PORTS];
	size_t nl7_http_ports;
	__u16 l7_proxy_tls_port, l7_proxy_http_port;
	bool l7_default_on;  /* l7.default: subjects without their own l7 are pinned */
	bool l7_cidr_pin;    /* l7.cidr: pin (allow-CIDR destinations too) */
	bool l7_ech_allow;   /* l7.ech: allow */
	bool l7_quic_allow;  /* l7.quic: allow */
	char l7_nginx[256];  /* the nginx binary */
	char l7_module[256]; /* ngx_fastwall_l7_module.so */
	char l7_stream_module[256];
	char l7_runtime_dir[200]; /* nginx.conf; var/ for pid and temporary files */
	char l7_user[64];	  /* the proxy runs as */
	__u32 l7_workers;
	__u32 l7_max_connections;
	__u32 l7_subject_connections;
	__u64 l7_idle_timeout_ns;
	/* l7 credentials: injection from the vaults, its CA */
	bool l7_credentials;
	bool l7_ca_present; /* an l7.ca section (the restart column's field) */
	char l7_ca_dir[200];
	char l7_ca_cert[256], l7_ca_key[256]; /* the operator's CA: both or neither */
	char l7_ca_publish[FW_CFG_L7_PUBLISH_MAX][256];
	size_t nl7_ca_publish;
	char l7_upstream_ca[256]; /* "": the system store alone */
	__u32 l7_upstream_keepalive;
	struct fw_subject_spec *subjects; /* the static subjects */
	size_t nsubjects;
	/* what a load accepted but a reader should hear of, like errors
	 * ("file:line: unknown key 'egres' in ..., ignored (did you mean
	 * 'egress'?)"): keys a policy ignores. At most FW_CFG_MAX_WARNINGS,
	 * warnings_lost counts the rest. */
	char *warnings[FW_CFG_MAX_WARNINGS];
	size_t nwarnings, warnings_lost;
};

void fw_cfg_init(struct fw_cfg *cfg); /* defaults */
void fw_cfg_free(struct fw_cfg *cfg);
int fw_cfg_load_file(const char *path, struct fw_cfg *cfg, char *err, size_t errlen);
/* name is used in error messages in place of a file name. */
int fw_cfg_load_buffer(const char *buf, size_t len, const char *name, struct fw_cfg *cfg, char *err,
		       size_t errlen);

/* On reload: every restart-only key (the reload column of the key
 * tables) that next changes gets run's value back, after kept(ctx, name,
 * running value) is told of it; next then says what runs. Returns how
 * many were kept. */
size_t fw_cfg_keep_restart_keys(struct fw_cfg *next, const struct fw_cfg *run,
				void (*kept)(void *ctx, const char *name, const char *running),
				void *ctx);
/* The key tables as docs/config.md shows them: text with each
 * "<!-- keys: SECTION -->" ... "<!-- end keys -->" region's content
 * replaced by the generated table, written to out. -EINVAL and err for an
 * unknown section or a region left open. */
int fw_cfg_keys_doc(const char *text, FILE *out, char *err, size_t errlen);
/* Every table, each under a "### `section`" heading. */
void fw_cfg_keys_markdown(FILE *out);
/* A JSON Schema (draft 2020-12) of the scalar keys and the mappings that
 * hold them; list-shaped keys (interfaces, subjects, ...) are not in it. */
void fw_cfg_keys_schema(FILE *out);

#endif /* FW_CONFIG_H */
