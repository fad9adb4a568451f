// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's YAML configuration (docs/config.md has the long form).
 *
 *   log_level: info                  # error | warn | info | debug
 *   datapath:
 *     bpffs: /sys/fs/bpf/fastwall    # absolute path, default FW_DEFAULT_BPFFS
 *     interfaces: ["veth-*", tap0]   # interface names or fnmatch globs
 *     bridges: [br0]                 # every port of these bridges
 *     local_addresses: [10.42.0.1, "fd00::1"]
 *     local_ports: ["tcp/8080", "udp/5353"]
 *     doh:
 *       block: false                 # true: list mode, or strict without a list
 *       blocklist: [192.0.2.53, "2001:db8::53/128"]
 *     events: { rate: 100, burst: 200 }   # rate 0 = no events
 *     pod_flow_timeout: 300          # seconds
 *     fragment_timeout: 5            # seconds
 *   overlay:                         # operator rules ahead of every subject's
 *     deny: ["192.0.2.66", "*.bad.example"]
 *     allow: ["198.51.100.10"]
 *   dns:                             # the DNS proxy (on by default)
 *     proxy: true                    # false: DNS to the gateway passes untouched
 *     redirect_all: true             # DNS to any resolver goes to the proxy
 *     port: 15353                    # the proxy's port on the pod's addresses
 *     upstreams: [198.51.100.53, "[2001:db8::53]:53"]  # default: resolv_conf
 *     resolv_conf: /etc/resolv.conf
 *     timeout: 5                     # seconds per upstream exchange
 *     probe_interval: 10             # seconds, 0 = no health probes
 *     workers: 2
 *     max_tcp_clients: 256
 *     max_tcp_per_client: 16         # per client address; full: the biggest holder yields
 *     tcp_query_timeout: 10          # seconds a client TCP connection gets per complete query
 *     case_randomize: false          # 0x20: query names upstream in a random case
 *     lease: { add: 60, min: 60, max: 360 }   # clamp(TTL + add, min, max)
 *     max_learned_per_subject: 4096  # 0 = no cap
 *     max_connections_per_subject: 1024  # TCP records keeping leases alive
 *     refresh_interval: 10           # seconds between lease refresh rounds
 *     tcp_idle_timeout: 3600         # an open connection silent this long is gone
 *   metrics:
 *     listen: 127.0.0.1:9464         # /metrics, /healthz, /readyz; "" = off
 *   guard:                           # direct access mode's port guard
 *     interfaces: [eth0]             # the pod's uplinks
 *     ports: [8443, 9000]            # guarded TCP and UDP ports
 *     trusted: [10.0.8.0/24, "fd00:8::/64"]   # the ingress gateway's sources
 *     mode: auto                     # auto | xdp | xdp-generic | tc
 *   subjects:
 *     - name: sandbox-a              # required, unique
 *       addresses: [10.42.0.2, "fd00::2"]   # required, 1-8, unique overall
 *       interface: veth-a            # optional anti-spoof binding
 *       gateway: 10.42.0.1           # scalar or list, one per family
 *       private_cidr: 10.42.0.0/24   # scalar or list, one per family
 *       state: active                # active | denying
 *       policy:                      # the egress-policy format (docs/config.md)
 *         defaultAction: deny
 *         egress:
 *           - { action: allow, target: 198.51.100.0/24, ports: [80, 443] }
 *
 * Unknown keys are errors everywhere except inside `policy`, whose format
 * is shared with the reference and ignores what it does not know; those
 * are warnings (cfg->warnings), with the known key they look like. The
 * input is untrusted in the sense that a typo must fail loudly and a hostile
 * file must not exhaust memory: size, depth and list lengths are bounded,
 * and anchors/aliases (the "billion laughs" vector) are refused outright.
 *
 * Every scalar key is a descriptor in a key table owned by the module whose
 * struct holds it (config/keys.c, dns/proxy_keys.c, dns/learn_keys.c):
 * type, bounds, default and doc come from there, the defaults included.
 * This file walks the document and the sections; list-shaped parts live in
 * subjects.c (the subjects list) and policy.c (overlay, policies), the
 * node helpers in yaml.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/addr.h"
#include "config/parse.h"
#include "dns/learn_keys.h"
#include "dns/proxy_keys.h"

/* Every default comes from a key table: config's own (keys.c) and the
 * DNS modules' through their init functions. */
void fw_cfg_init(struct fw_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	fw_ck_defaults(&cfg_top_keys, cfg);
	fw_ck_defaults(&cfg_datapath_keys, cfg);
	fw_ck_defaults(&cfg_doh_keys, cfg);
	fw_ck_defaults(&cfg_events_keys, cfg);
	fw_ck_defaults(&cfg_actions_keys, cfg);
	fw_ck_defaults(&cfg_processes_keys, cfg);
	fw_ck_defaults(&cfg_dns_keys, cfg);
	fw_ck_defaults(&cfg_metrics_keys, cfg);
	fw_ck_defaults(&cfg_guard_keys, cfg);
	fw_ck_defaults(&cfg_bw_keys, cfg);
	fw_ck_defaults(&cfg_l7_keys, cfg);
	fw_ck_defaults(&cfg_l7_ca_keys, cfg);
	cfg->l7_tls_ports[0] = 443;
	cfg->nl7_tls_ports = 1;
	cfg->l7_http_ports[0] = 80;
	cfg->nl7_http_ports = 1;
	fw_ck_defaults(&cfg_monitor_keys, cfg);
	fw_ck_defaults(&cfg_audit_keys, cfg);
	cfg->doh_mode = FW_DOH_OFF;
	fw_policy_init(&cfg->overlay);
	fw_dnsp_config_init(&cfg->dnsp);
	fw_learn_config_init(&cfg->learn);
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void fw_cfg_free(struct fw_cfg *cfg)
{
	free_strv(cfg->interfaces, cfg->ninterfaces);
	free_strv(cfg->bridges, cfg->nbridges);
	free(cfg->local);
	free(cfg->local_ports);
	free(cfg->doh_blocklist);
	free_strv(cfg->guard_interfaces, cfg->nguard_interfaces);
	free(cfg->guard_ports);
	free(cfg->guard_trusted);
	free_strv(cfg->bw_interfaces, cfg->nbw_interfaces);
	fw_policy_free(&cfg->overlay);
	for (size_t i = 0; i < cfg->nsubjects; i++)
		fw_policy_free(&cfg->subjects[i].policy);
	free(cfg->subjects);
	for (size_t i = 0; i < cfg->nwarnings; i++)
		free(cfg->warnings[i]);
	/* back to defaults, so a second free or a reload is harmless */
	fw_cfg_init(cfg);
}

/* --- datapath ----------------------------------------------------------- */

static int parse_local_addresses(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct fw_cfg *cfg = ctx->cfg;
	size_t n;
	int err;

	err = cfg_list(ctx, node, "local_addresses", true, FW_MAX_LOCAL, &n);
	if (err || !n)
		return err;
	cfg->local = calloc(n, sizeof(*cfg->local));
	if (!cfg->local)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);

		err = cfg_addr(ctx, item, "local address", &cfg->local[i], NULL);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++) {
			if (!memcmp(&cfg->local[j], &cfg->local[i], sizeof(cfg->local[i])))
				return cfg_fail(ctx, item, "duplicate local address");
		}
		cfg->nlocal = i + 1;
	}
	return 0;
}

static int parse_local_ports(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct fw_cfg *cfg = ctx->cfg;
	size_t n;
	int err;

	err = cfg_list(ctx, node, "local_ports", true, FW_MAX_LOCAL, &n);
	if (err || !n)
		return err;
	cfg->local_ports = calloc(n, sizeof(*cfg->local_ports));
	if (!cfg->local_ports)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		struct fw_port_key *pk = &cfg->local_ports[i];
		unsigned long port = 0;
		const char *s, *p;

		err = cfg_scalar(ctx, item, "local port", &s);
		if (err)
			return err;
		if (!strncmp(s, "tcp/", 4))
			pk->proto = 6;
		else if (!strncmp(s, "udp/", 4))
			pk->proto = 17;
		else
			goto bad;
		p = s + 4;
		if (!*p || strlen(p) > 5 || *p == '0')
			goto bad;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				goto bad;
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port > 65535)
			goto bad;
		pk->port = htons((__u16)port);
		for (size_t j = 0; j < i; j++) {
			if (!memcmp(&cfg->local_ports[j], pk, sizeof(*pk)))
				return cfg_fail(ctx, item, "duplicate local port");
		}
		cfg->nlocal_ports = i + 1;
		continue;
	bad:
		return cfg_fail(ctx, item,
				"invalid local port, expected \"tcp/PORT\" or \"udp/PORT\" with "
				"PORT 1-65535");
	}
	return 0;
}

static int parse_doh(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_doh_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *v;
	size_t n;
	int err;

	err = cfg_section(ctx, node, "doh", b, 1);
	if (err)
		return err;
	if ((v = cfg_sub(b, 1, "blocklist", NULL))) {
		err = cfg_list(ctx, v, "doh blocklist entries", true, FW_MAX_DOH, &n);
		if (err)
			return err;
		if (n) {
			cfg->doh_blocklist = calloc(n, sizeof(*cfg->doh_blocklist));
			if (!cfg->doh_blocklist)
				return cfg_nomem(ctx, v);
		}
		for (size_t i = 0; i < n; i++) {
			yaml_node_t *item = list_item(ctx, v, i);
			struct fw_prefix *pfx = &cfg->doh_blocklist[i];

			err = cfg_prefix(ctx, item, "doh blocklist entry", pfx, NULL);
			if (err)
				return err;
			for (size_t j = 0; j < i; j++) {
				if (!memcmp(&cfg->doh_blocklist[j], pfx, sizeof(*pfx)))
					return cfg_fail(ctx, item, "duplicate doh blocklist entry");
			}
			cfg->ndoh_blocklist = i + 1;
		}
	}
	/* a list with block: false is kept so it can be switched on later */
	if (!cfg->doh_block)
		cfg->doh_mode = FW_DOH_OFF;
	else
		cfg->doh_mode = cfg->ndoh_blocklist ? FW_DOH_LIST : FW_DOH_STRICT;
	return 0;
}

static int parse_datapath(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_datapath_keys, .base = ctx->cfg}};
	struct cfg_bind ev[] = {{.t = &cfg_events_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *n;
	int err;

	err = cfg_section(ctx, node, "datapath", b, 1);
	if (err)
		return err;
	if ((n = cfg_sub(b, 1, "interfaces", NULL))) {
		err = cfg_strv(ctx, n, "interfaces", true, &cfg->interfaces, &cfg->ninterfaces);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "bridges", NULL))) {
		err = cfg_strv(ctx, n, "bridges", false, &cfg->bridges, &cfg->nbridges);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "local_addresses", NULL))) {
		err = parse_local_addresses(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "local_ports", NULL))) {
		err = parse_local_ports(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "doh", NULL))) {
		err = parse_doh(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "events", NULL))) {
		err = cfg_section(ctx, n, "events", ev, 1);
		if (err)
			return err;
	}
	return 0;
}

/* --- bandwidth ---------------------------------------------------------- */

static int parse_bandwidth_section(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_bw_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *v;
	int err;

	cfg->bw_enabled = true;
	err = cfg_section(ctx, node, "bandwidth", b, 1);
	if (err)
		return err;
	if ((v = cfg_sub(b, 1, "interfaces", NULL))) {
		err = cfg_strv(ctx, v, "bandwidth.interfaces", false, &cfg->bw_interfaces,
			       &cfg->nbw_interfaces);
		if (err)
			return err;
	}
	if (!cfg->nbw_interfaces)
		return cfg_fail(ctx, node,
				"bandwidth.interfaces: at least one interface is required");
	return 0;
}

/* --- guard -------------------------------------------------------------- */

#define GUARD_MAX_PORTS (FW_MAX_GUARD_PORTS / 2) /* a TCP and a UDP entry each */

static int parse_guard(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_guard_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *v;
	size_t n;
	int err;

	cfg->guard_enabled = true;
	err = cfg_section(ctx, node, "guard", b, 1);
	if (err)
		return err;
	if ((v = cfg_sub(b, 1, "interfaces", NULL))) {
		err = cfg_strv(ctx, v, "guard.interfaces", false, &cfg->guard_interfaces,
			       &cfg->nguard_interfaces);
		if (err)
			return err;
	}
	if (!cfg->nguard_interfaces)
		return cfg_fail(ctx, node, "guard.interfaces: at least one interface is required");
	v = cfg_sub(b, 1, "ports", NULL);
	err = v ? cfg_list(ctx, v, "guard.ports", true, GUARD_MAX_PORTS, &n) : 0;
	if (err)
		return err;
	if (!v || !n)
		return cfg_fail(ctx, v ? v : node, "guard.ports: at least one port is required");
	cfg->guard_ports = calloc(n, sizeof(*cfg->guard_ports));
	if (!cfg->guard_ports)
		return cfg_nomem(ctx, v);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, v, i);
		unsigned long long port;

		err = cfg_uint(ctx, item, "guard.ports", 1, 65535, &port);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++)
			if (cfg->guard_ports[j] == port)
				return cfg_fail(ctx, item, "duplicate guard port");
		cfg->guard_ports[i] = (__u16)port;
		cfg->nguard_ports = i + 1;
	}
	if ((v = cfg_sub(b, 1, "trusted", NULL))) {
		err = cfg_list(ctx, v, "guard.trusted", true, FW_MAX_GUARD_TRUSTED, &n);
		if (err)
			return err;
		if (n) {
			cfg->guard_trusted = calloc(n, sizeof(*cfg->guard_trusted));
			if (!cfg->guard_trusted)
				return cfg_nomem(ctx, v);
		}
		for (size_t i = 0; i < n; i++) {
			yaml_node_t *item = list_item(ctx, v, i);
			struct fw_prefix *pfx = &cfg->guard_trusted[i];

			err = cfg_prefix(ctx, item, "guard.trusted entry", pfx, NULL);
			if (err)
				return err;
			for (size_t j = 0; j < i; j++) {
				if (!memcmp(&cfg->guard_trusted[j], pfx, sizeof(*pfx)))
					return cfg_fail(ctx, item, "duplicate guard.trusted entry");
			}
			cfg->nguard_trusted = i + 1;
		}
	}
	return 0;
}

/* --- l7 ----------------------------------------------------------------- */

static int parse_l7_ports(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, __u16 *ports,
			  size_t *nports)
{
	size_t n;
	int err;

	err = cfg_list(ctx, node, what, true, FW_MAX_L7_PORTS, &n);
	if (err)
		return err;
	*nports = 0;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		unsigned long long port;

		err = cfg_uint(ctx, item, what, 1, 65535, &port);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++)
			if (ports[j] == port)
				return cfg_fail(ctx, item, "duplicate port in %s", what);
		ports[i] = (__u16)port;
		*nports = i + 1;
	}
	return 0;
}

static int parse_l7_ca(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_l7_ca_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *v;
	size_t n;
	int err;

	cfg->l7_ca_present = true;
	err = cfg_section(ctx, node, "l7.ca", b, 1);
	if (err)
		return err;
	if ((v = cfg_sub(b, 1, "publish", NULL))) {
		err = cfg_list(ctx, v, "l7.ca.publish", true, FW_CFG_L7_PUBLISH_MAX, &n);
		if (err)
			return err;
		for (size_t i = 0; i < n; i++) {
			yaml_node_t *item = list_item(ctx, v, i);
			const char *path;

			err = cfg_scalar(ctx, item, "l7.ca.publish entry", &path);
			if (err)
				return err;
			if (path[0] != '/' || strlen(path) >= sizeof(cfg->l7_ca_publish[0]))
				return cfg_fail(ctx, item,
						"l7.ca.publish: an absolute path shorter than %zu "
						"characters is required",
						sizeof(cfg->l7_ca_publish[0]));
			snprintf(cfg->l7_ca_publish[i], sizeof(cfg->l7_ca_publish[i]), "%s", path);
			cfg->nl7_ca_publish = i + 1;
		}
	}
	if (!cfg->l7_ca_cert[0] != !cfg->l7_ca_key[0])
		return cfg_fail(ctx, node, "l7.ca.cert and l7.ca.key: both or neither");
	return 0;
}

static int parse_l7(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_l7_keys, .base = ctx->cfg}};
	struct fw_cfg *cfg = ctx->cfg;
	yaml_node_t *v, *tls, *http;
	int err;

	err = cfg_section(ctx, node, "l7", b, 1);
	if (err)
		return err;
	if ((tls = cfg_sub(b, 1, "tls_ports", NULL))) {
		err = parse_l7_ports(ctx, tls, "l7.tls_ports", cfg->l7_tls_ports,
				     &cfg->nl7_tls_ports);
		if (err)
			return err;
	}
	if ((http = cfg_sub(b, 1, "http_ports", NULL))) {
		err = parse_l7_ports(ctx, http, "l7.http_ports", cfg->l7_http_ports,
				     &cfg->nl7_http_ports);
		if (err)
			return err;
	}
	if ((v = cfg_sub(b, 1, "ca", NULL))) {
		err = parse_l7_ca(ctx, v);
		if (err)
			return err;
	}
	v = http ? http : tls ? tls : node;
	if (cfg->nl7_tls_ports + cfg->nl7_http_ports > FW_MAX_L7_PORTS)
		return cfg_fail(ctx, v, "l7.tls_ports and l7.http_ports: at most %d ports together",
				FW_MAX_L7_PORTS);
	for (size_t i = 0; i < cfg->nl7_tls_ports; i++)
		for (size_t j = 0; j < cfg->nl7_http_ports; j++)
			if (cfg->l7_tls_ports[i] == cfg->l7_http_ports[j])
				return cfg_fail(ctx, v,
						"port %u is in both l7.tls_ports and l7.http_ports",
						cfg->l7_tls_ports[i]);
	if (cfg->l7_proxy_tls_port == cfg->l7_proxy_http_port)
		return cfg_fail(ctx, node, "l7.proxy_tls_port and l7.proxy_http_port are both %u",
				cfg->l7_proxy_tls_port);
	return 0;
}

/* --- top level ---------------------------------------------------------- */

static int parse_actions(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_actions_keys, .base = ctx->cfg}};

	ctx->cfg->actions_enabled = true;
	return cfg_section(ctx, node, "actions", b, 1);
}

static int parse_processes(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_bind b[] = {{.t = &cfg_processes_keys, .base = ctx->cfg}};

	ctx->cfg->processes_enabled = true;
	return cfg_section(ctx, node, "processes", b, 1);
}

/* "192.0.2.53", "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]:5353" */
static int parse_upstream(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_dnsp_addr *u)
{
	char host[64];
	const char *s, *colon, *hs;
	unsigned long port = 53;
	size_t hlen;
	char *end;
	int err;

	err = cfg_scalar(ctx, node, "dns.upstreams", &s);
	if (err)
		return err;
	hs = s;
	hlen = strlen(s);
	colon = strrchr(s, ':');
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':'))
			return cfg_fail(ctx, node, "dns.upstreams: invalid address");
		hs = s + 1;
		hlen = close - hs;
		colon = close[1] ? close + 1 : NULL;
	} else if (colon && strchr(s, ':') != colon) {
		colon = NULL; /* a bare IPv6 address */
	} else if (colon) {
		hlen = colon - s;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return cfg_fail(ctx, node, "dns.upstreams: invalid address");
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (!colon[1] || *end || errno || port == 0 || port > 65535)
			return cfg_fail(ctx, node, "dns.upstreams: invalid port");
	}
	if (fw_addr_parse(host, &u->ip, NULL))
		return cfg_fail(ctx, node, "dns.upstreams: invalid address, expected IP[:PORT]");
	u->port = (__u16)port;
	return 0;
}

static int parse_dns(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct fw_cfg *c = ctx->cfg;
	struct cfg_bind b[] = {
		{.t = &cfg_dns_keys, .base = c},
		{.t = &fw_dnsp_keys, .base = &c->dnsp},
		{.t = &fw_learn_keys, .base = &c->learn},
	};
	struct cfg_bind lease[] = {{.t = &fw_learn_lease_keys, .base = &c->learn}};
	char msg[FW_CFG_ERR_LEN];
	yaml_node_t *n;
	size_t len;
	int err;

	err = cfg_section(ctx, node, "dns", b, 3);
	if (err)
		return err;
	if ((n = cfg_sub(b, 3, "upstreams", NULL))) {
		err = cfg_list(ctx, n, "dns.upstreams", true, FW_CFG_MAX_UPSTREAMS, &len);
		if (err)
			return err;
		for (size_t i = 0; i < len; i++) {
			err = parse_upstream(ctx, list_item(ctx, n, i), &c->dns_upstreams[i]);
			if (err)
				return err;
		}
		c->dns_nupstreams = len;
	}
	if ((n = cfg_sub(b, 3, "lease", NULL))) {
		err = cfg_section(ctx, n, "dns.lease", lease, 1);
		if (err)
			return err;
		if (fw_learn_config_check(&c->learn, true, msg, sizeof(msg)))
			return cfg_fail(ctx, n, "%s", msg);
	}
	if (fw_learn_config_check(&c->learn, false, msg, sizeof(msg)))
		return cfg_fail(ctx, node, "%s", msg);
	return 0;
}

static int parse_root(struct cfg_ctx *ctx, yaml_node_t *root)
{
	struct cfg_bind b[] = {{.t = &cfg_top_keys, .base = ctx->cfg}};
	bool actions, processes, guard, bandwidth;
	yaml_node_t *n;
	int err;

	if (is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, root, "the configuration must be a mapping, not a %s",
				kind_name(root));
	err = cfg_section(ctx, root, "the configuration", b, 1);
	if (err)
		return err;
	if ((n = cfg_sub(b, 1, "datapath", NULL))) {
		err = parse_datapath(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "overlay", NULL))) {
		err = parse_overlay(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "subjects", NULL))) {
		err = parse_subjects(ctx, n);
		if (err)
			return err;
	}
	/* "actions:" alone turns the listener on with the defaults */
	n = cfg_sub(b, 1, "actions", &actions);
	if (actions) {
		err = parse_actions(ctx, n);
		if (err)
			return err;
	}
	n = cfg_sub(b, 1, "processes", &processes);
	if (processes) {
		err = parse_processes(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "dns", NULL))) {
		err = parse_dns(ctx, n);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "metrics", NULL))) {
		struct cfg_bind m[] = {{.t = &cfg_metrics_keys, .base = ctx->cfg}};

		err = cfg_section(ctx, n, "metrics", m, 1);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "monitor", NULL))) {
		struct cfg_bind m[] = {{.t = &cfg_monitor_keys, .base = ctx->cfg}};

		err = cfg_section(ctx, n, "monitor", m, 1);
		if (err)
			return err;
	}
	if ((n = cfg_sub(b, 1, "audit", NULL))) {
		struct cfg_bind m[] = {{.t = &cfg_audit_keys, .base = ctx->cfg}};

		err = cfg_section(ctx, n, "audit", m, 1);
		if (err)
			return err;
	}
	/* process sandboxes need the cgroup programs; one subject a cgroup */
	for (size_t i = 0; i < ctx->cfg->nsubjects; i++) {
		const struct fw_subject_spec *s = &ctx->cfg->subjects[i];

		if (!s->cgroup[0])
			continue;
		if (!ctx->cfg->processes_enabled)
			return cfg_fail(ctx, root,
					"subject \"%s\" has a cgroup: that needs the processes "
					"section",
					s->name);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(ctx->cfg->subjects[j].cgroup, s->cgroup))
				return cfg_fail(ctx, root,
						"subjects \"%s\" and \"%s\" have the same cgroup",
						ctx->cfg->subjects[j].name, s->name);
	}
	if ((n = cfg_sub(b, 1, "l7", NULL))) {
		err = parse_l7(ctx, n);
		if (err)
			return err;
	}
	/* names come from the DNS proxy: without it nothing is learned, so
	 * nothing is pinned (and with cidr: pin, nothing pinned passes) */
	if (ctx->cfg->l7_enabled && !ctx->cfg->dns_proxy)
		cfg_warn(ctx, cfg_sub(b, 1, "l7", NULL),
			 "l7.enabled without dns.proxy: the names it pins to are learned there, so "
			 "no connection is pinned to one");
	/* a subject that asks for pinning the daemon does not do */
	for (size_t i = 0; !ctx->cfg->l7_enabled && i < ctx->cfg->nsubjects; i++)
		if (ctx->cfg->subjects[i].policy.l7 == FW_POLICY_L7_ON)
			cfg_warn(ctx, cfg_sub(b, 1, "subjects", NULL),
				 "subject \"%s\" has l7 on, but l7.enabled is false: it is not "
				 "pinned",
				 ctx->cfg->subjects[i].name);
	/* after dns: the proxy ports may not be the DNS proxy's */
	if (ctx->cfg->l7_enabled && ctx->cfg->dns_proxy &&
	    (ctx->cfg->l7_proxy_tls_port == ctx->cfg->dnsp.port ||
	     ctx->cfg->l7_proxy_http_port == ctx->cfg->dnsp.port))
		return cfg_fail(ctx, cfg_sub(b, 1, "l7", NULL) ? cfg_sub(b, 1, "l7", NULL) : root,
				"the l7 proxy ports may not be dns.port (%u)", ctx->cfg->dnsp.port);
	n = cfg_sub(b, 1, "guard", &guard);
	if (guard) {
		err = parse_guard(ctx, n);
		if (err)
			return err;
	}
	n = cfg_sub(b, 1, "bandwidth", &bandwidth);
	if (bandwidth) {
		err = parse_bandwidth_section(ctx, n);
		if (err)
			return err;
	}
	/* a limit nothing enforces */
	for (size_t i = 0; !ctx->cfg->bw_enabled && i < ctx->cfg->nsubjects; i++)
		if (ctx->cfg->subjects[i].policy.bw == FW_POLICY_BW_ON)
			cfg_warn(ctx, cfg_sub(b, 1, "subjects", NULL),
				 "subject \"%s\" has fastwallBandwidth, but there is no bandwidth "
				 "section: it is not enforced",
				 ctx->cfg->subjects[i].name);
	return 0;
}

static int syntax_error(struct cfg_ctx *ctx, const yaml_parser_t *parser)
{
	if (parser->error == YAML_MEMORY_ERROR) {
		snprintf(ctx->err, ctx->errlen, "%s: out of memory", ctx->name);
		return -ENOMEM;
	}
	if (parser->context)
		snprintf(ctx->err, ctx->errlen, "%s:%zu: invalid YAML: %s %s (line %zu)", ctx->name,
			 parser->problem_mark.line + 1,
			 parser->problem ? parser->problem : "syntax error", parser->context,
			 parser->context_mark.line + 1);
	else
		snprintf(ctx->err, ctx->errlen, "%s:%zu: invalid YAML: %s", ctx->name,
			 parser->problem_mark.line + 1,
			 parser->problem ? parser->problem : "syntax error");
	return -EINVAL;
}

static int event_fail(struct cfg_ctx *ctx, const yaml_event_t *ev, const char *msg,
		      const yaml_char_t *value)
{
	if (value)
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s (value '%.*s')", ctx->name,
			 ev->start_mark.line + 1, msg, CFG_ECHO_MAX, (const char *)value);
	else
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s", ctx->name, ev->start_mark.line + 1,
			 msg);
	return -EINVAL;
}

/* A pass over the event stream before building the tree: the document
 * loader would expand aliases (exponentially, with nested ones) and has no
 * depth limit, so both are refused here first. */
static int check_events(struct cfg_ctx *ctx, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, docs = 0, err = 0;
	size_t nodes = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(ctx->err, ctx->errlen, "%s: out of memory", ctx->name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && !err) {
		if (!yaml_parser_parse(&parser, &ev)) {
			err = syntax_error(ctx, &parser);
			break;
		}
		if ((ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
		     ev.type == YAML_MAPPING_START_EVENT) &&
		    ++nodes > CFG_MAX_NODES)
			err = event_fail(ctx, &ev, "too many YAML nodes", NULL);
		switch (err ? YAML_NO_EVENT : ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1)
				err = event_fail(ctx, &ev,
						 "more than one YAML document is not supported",
						 NULL);
			break;
		case YAML_ALIAS_EVENT:
			err = event_fail(ctx, &ev, "YAML aliases are not supported",
					 ev.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
			if (ev.data.scalar.anchor)
				err = event_fail(ctx, &ev, "YAML anchors are not supported",
						 ev.data.scalar.anchor);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
								 : ev.data.mapping_start.anchor)
				err = event_fail(ctx, &ev, "YAML anchors are not supported",
						 ev.type == YAML_SEQUENCE_START_EVENT
							 ? ev.data.sequence_start.anchor
							 : ev.data.mapping_start.anchor);
			else if (++depth > CFG_MAX_DEPTH)
				err = event_fail(ctx, &ev, "nesting too deep", NULL);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return err;
}

int fw_cfg_load_buffer(const char *buf, size_t len, const char *name, struct fw_cfg *cfg, char *err,
		       size_t errlen)
{
	char dummy[FW_CFG_ERR_LEN];
	struct cfg_ctx ctx = {
		.name = name ? name : "<config>",
		.err = err && errlen ? err : dummy,
		.errlen = err && errlen ? errlen : sizeof(dummy),
		.cfg = cfg,
	};
	yaml_parser_t parser;
	bool have_doc = false;
	int ret;

	fw_cfg_init(cfg);
	ctx.err[0] = '\0';
	if (!buf)
		buf = ""; /* libyaml asserts on a NULL input even when empty */
	if (len > CFG_MAX_BYTES) {
		snprintf(ctx.err, ctx.errlen, "%s:1: file too large (%zu bytes, at most %u)",
			 ctx.name, len, CFG_MAX_BYTES);
		return -EINVAL;
	}
	ret = check_events(&ctx, buf, len);
	if (ret)
		return ret;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(ctx.err, ctx.errlen, "%s: out of memory", ctx.name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &ctx.doc)) {
		ret = syntax_error(&ctx, &parser);
		goto cleanup;
	}
	have_doc = true;
	ret = parse_root(&ctx, yaml_document_get_root_node(&ctx.doc));
cleanup:
	if (have_doc)
		yaml_document_delete(&ctx.doc);
	yaml_parser_delete(&parser);
	if (ret)
		fw_cfg_free(cfg);
	return ret;
}

int fw_cfg_load_file(const char *path, struct fw_cfg *cfg, char *err, size_t errlen)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = NULL, *nbuf;
	ssize_t r;
	int fd, ret;

	fw_cfg_init(cfg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto fail;
	}
	for (;;) {
		if (len == cap) {
			/* one byte past the limit is enough to know it is too big */
			if (cap > CFG_MAX_BYTES)
				break;
			cap = cap * 2 > CFG_MAX_BYTES ? CFG_MAX_BYTES + 1 : cap * 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				goto fail;
			}
			buf = nbuf;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	ret = fw_cfg_load_buffer(buf, len, path, cfg, err, errlen);
	free(buf);
	return ret;
fail:
	if (err && errlen)
		snprintf(err, errlen, "can't read %s: %s", path, strerror(-ret));
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}
