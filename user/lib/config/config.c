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
 *   subjects:
 *     - name: sandbox-a              # required, unique
 *       addresses: [10.42.0.2, "fd00::2"]   # required, 1-8, unique overall
 *       interface: veth-a            # optional anti-spoof binding
 *       gateway: 10.42.0.1           # scalar or list, one per family
 *       private_cidr: 10.42.0.0/24   # scalar or list, one per family
 *       state: active                # active | denying
 *       policy:                      # ../shared/reference/egress-policy.md
 *         defaultAction: deny
 *         egress:
 *           - { action: allow, target: 198.51.100.0/24, ports: [80, 443] }
 *
 * Unknown keys are errors everywhere except inside `policy`, whose format
 * is shared with the reference and ignores what it does not know. The
 * input is untrusted in the sense that a typo must fail loudly and a hostile
 * file must not exhaust memory: size, depth and list lengths are bounded,
 * and anchors/aliases (the "billion laughs" vector) are refused outright.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "common/addr.h"
#include "common/clock.h"
#include "config/config.h"

#define CFG_MAX_BYTES (4u << 20)
#define CFG_MAX_DEPTH 32
/* far above any real file, far below what 4 MiB of "[1,1,1,..." would
 * make the document loader allocate */
#define CFG_MAX_NODES  (1u << 20)
#define CFG_MAX_IFACES 1024
#define CFG_ECHO_MAX   64

struct cfg_ctx {
	yaml_document_t doc;
	const char *name;
	char *err;
	size_t errlen;
	struct fw_cfg *cfg;
};

void fw_cfg_init(struct fw_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->bpffs, sizeof(cfg->bpffs), "%s", FW_DEFAULT_BPFFS);
	cfg->log_level = FW_LOG_INFO;
	cfg->doh_mode = FW_DOH_OFF;
	cfg->event_rate = 100;
	cfg->event_burst = 200;
	cfg->pod_flow_timeout_ns = 300 * FW_NSEC_PER_SEC;
	cfg->frag_timeout_ns = 5 * FW_NSEC_PER_SEC;
	fw_policy_init(&cfg->overlay);
	snprintf(cfg->actions_listen, sizeof(cfg->actions_listen), "127.0.0.1:18080");
	snprintf(cfg->actions_vault_socket, sizeof(cfg->actions_vault_socket),
		 "/run/fastwall/vault.sock");
	cfg->actions_grace_ns = 10 * FW_NSEC_PER_SEC;
	cfg->actions_pending_ttl_ns = 30 * FW_NSEC_PER_SEC;
	cfg->actions_bind_host_veth = true;
	cfg->dns_proxy = true;
	cfg->dns_redirect_all = true;
	cfg->dns_port = 15353;
	snprintf(cfg->dns_resolv_conf, sizeof(cfg->dns_resolv_conf), "/etc/resolv.conf");
	cfg->dns_timeout_ns = 5 * FW_NSEC_PER_SEC;
	cfg->dns_probe_interval_ns = 10 * FW_NSEC_PER_SEC;
	cfg->dns_workers = 2;
	cfg->dns_max_tcp_clients = 256;
	cfg->dns_max_tcp_per_client = 16;
	cfg->dns_tcp_query_ns = 10 * FW_NSEC_PER_SEC;
	cfg->lease_add_s = 60;
	cfg->lease_min_s = 60;
	cfg->lease_max_s = 360;
	cfg->max_learned_per_subject = 4096;
	cfg->max_conns_per_subject = 1024;
	cfg->refresh_interval_ns = 10 * FW_NSEC_PER_SEC;
	cfg->tcp_idle_ns = 3600 * FW_NSEC_PER_SEC;
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
	fw_policy_free(&cfg->overlay);
	for (size_t i = 0; i < cfg->nsubjects; i++)
		fw_policy_free(&cfg->subjects[i].policy);
	free(cfg->subjects);
	/* back to defaults, so a second free or a reload is harmless */
	fw_cfg_init(cfg);
}

/* --- error reporting ---------------------------------------------------- */

static const char *kind_name(const yaml_node_t *node)
{
	switch (node->type) {
	case YAML_SCALAR_NODE:
		return "scalar";
	case YAML_SEQUENCE_NODE:
		return "list";
	case YAML_MAPPING_NODE:
		return "mapping";
	default:
		return "nothing";
	}
}

/* Copies at most CFG_ECHO_MAX bytes of a scalar, control bytes replaced,
 * so the message stays one printable line whatever the file holds. */
static void echo_value(const yaml_node_t *node, char *out, size_t outlen)
{
	const unsigned char *v = node->data.scalar.value;
	size_t n = node->data.scalar.length, o = 0;

	for (size_t i = 0; i < n && o + 4 < outlen; i++) {
		if (o >= CFG_ECHO_MAX) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		out[o++] = (v[i] < 0x20 || v[i] == 0x7f) ? '?' : (char)v[i];
	}
	out[o] = '\0';
}

static int cfg_fail(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int cfg_fail(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
{
	char msg[FW_CFG_ERR_LEN], val[CFG_ECHO_MAX + 8];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ctx->err || !ctx->errlen)
		return -EINVAL;
	if (node && node->type == YAML_SCALAR_NODE) {
		echo_value(node, val, sizeof(val));
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s (value '%s')", ctx->name,
			 node->start_mark.line + 1, msg, val);
	} else {
		snprintf(ctx->err, ctx->errlen, "%s:%zu: %s", ctx->name,
			 node ? node->start_mark.line + 1 : 1, msg);
	}
	return -EINVAL;
}

static int cfg_nomem(struct cfg_ctx *ctx, const yaml_node_t *node)
{
	cfg_fail(ctx, node, "out of memory");
	return -ENOMEM;
}

/* --- typed node access -------------------------------------------------- */

static yaml_node_t *node_at(struct cfg_ctx *ctx, int idx)
{
	return yaml_document_get_node(&ctx->doc, idx);
}

/* An empty plain scalar, "~" or "null": the key is as good as absent. */
static bool is_null(const yaml_node_t *node)
{
	const char *v;

	if (!node)
		return true;
	if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)node->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

static int cfg_scalar(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
		      const char **out)
{
	const char *v;

	*out = "";
	if (node->type != YAML_SCALAR_NODE)
		return cfg_fail(ctx, node, "%s must be a scalar, not a %s", what, kind_name(node));
	v = (const char *)node->data.scalar.value;
	/* "\0" in a double-quoted scalar would silently cut the C string */
	if (strlen(v) != node->data.scalar.length)
		return cfg_fail(ctx, node, "%s contains a NUL byte", what);
	*out = v;
	return 0;
}

/* Decimal, digits only: no sign, no spaces, no units, no hex. */
static int cfg_uint(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
		    unsigned long long min, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (!*s)
		goto bad;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		if (v > (max - (unsigned long long)(*p - '0')) / 10)
			goto range;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (v < min)
		goto range;
	*out = v;
	return 0;
bad:
	return cfg_fail(ctx, node, "%s must be a non-negative integer", what);
range:
	return cfg_fail(ctx, node, "%s must be between %llu and %llu", what, min, max);
}

static int cfg_bool(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool *out)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	for (size_t i = 0; i < 3; i++) {
		if (!strcmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return cfg_fail(ctx, node, "%s must be true or false", what);
}

/* Number of items of a list node; a scalar counts as a one-item list when
 * scalar_ok, and null as an empty list. Fails beyond max items. */
static int cfg_list(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool scalar_ok,
		    size_t max, size_t *n)
{
	size_t len;

	if (is_null(node)) {
		*n = 0;
		return 0;
	}
	if (node->type == YAML_SCALAR_NODE && scalar_ok) {
		len = 1;
	} else if (node->type == YAML_SEQUENCE_NODE) {
		len = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	} else {
		return cfg_fail(ctx, node, "%s must be a list%s, not a %s", what,
				scalar_ok ? " or a scalar" : "", kind_name(node));
	}
	if (len > max)
		return cfg_fail(ctx, node, "too many %s (%zu, at most %zu)", what, len, max);
	*n = len;
	return 0;
}

static yaml_node_t *list_item(struct cfg_ctx *ctx, yaml_node_t *node, size_t i)
{
	if (node->type == YAML_SCALAR_NODE)
		return node;
	return node_at(ctx, node->data.sequence.items.start[i]);
}

struct cfg_key {
	const char *name;
	yaml_node_t *key;
	yaml_node_t *value;
};

/* Sorts a mapping's values into keys[] by name. Known keys may appear once;
 * unknown keys are errors when strict and skipped otherwise. */
static int cfg_map(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, struct cfg_key *keys,
		   size_t nkeys, bool strict)
{
	yaml_node_pair_t *pair;

	for (size_t i = 0; i < nkeys; i++)
		keys[i].key = keys[i].value = NULL;
	if (is_null(node))
		return 0;
	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "%s must be a mapping, not a %s", what, kind_name(node));
	for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = node_at(ctx, pair->key);
		const char *name;
		size_t i;
		int err;

		err = cfg_scalar(ctx, k, "a key", &name);
		if (err)
			return err;
		for (i = 0; i < nkeys; i++) {
			if (!strcmp(name, keys[i].name))
				break;
		}
		if (i == nkeys) {
			if (strict)
				return cfg_fail(ctx, k, "unknown key in %s", what);
			continue;
		}
		if (keys[i].key)
			return cfg_fail(ctx, k, "duplicate key in %s, first at line %zu", what,
					keys[i].key->start_mark.line + 1);
		keys[i].key = k;
		keys[i].value = node_at(ctx, pair->value);
	}
	return 0;
}

/* value of a key, NULL when absent or null */
static yaml_node_t *key_value(const struct cfg_key *k)
{
	return is_null(k->value) ? NULL : k->value;
}

/* --- leaf parsers ------------------------------------------------------- */

static int cfg_addr(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
		    struct fw_ip *ip, enum fw_family *fam)
{
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (fw_addr_parse(s, ip, fam))
		return cfg_fail(ctx, node, "invalid %s, expected an IPv4 or IPv6 address", what);
	return 0;
}

static int cfg_prefix(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
		      struct fw_prefix *pfx, enum fw_family *fam)
{
	const char *s;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	if (fw_prefix_parse(s, &pfx->net, &pfx->plen, fam))
		return cfg_fail(ctx, node, "invalid %s, expected an address or CIDR", what);
	return 0;
}

/* Interface names go to if_nametoindex; globs go to fnmatch and may be a
 * little longer than a name. Neither may hold '/' or spaces, which no
 * interface name can contain. */
static int cfg_ifname(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool glob_ok,
		      char **out)
{
	const char *s;
	size_t max;
	int err;

	err = cfg_scalar(ctx, node, what, &s);
	if (err)
		return err;
	max = glob_ok && strpbrk(s, "*?[") ? 255 : IF_NAMESIZE - 1;
	if (!*s || strlen(s) > max)
		return cfg_fail(ctx, node, "invalid %s, must be 1 to %zu characters", what, max);
	for (const char *p = s; *p; p++) {
		if (*p == '/' || *p <= ' ' || *p == 0x7f || (!glob_ok && strchr("*?[", *p)))
			return cfg_fail(ctx, node, "invalid %s", what);
	}
	*out = strdup(s);
	if (!*out)
		return cfg_nomem(ctx, node);
	return 0;
}

static int cfg_strv(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, bool glob_ok,
		    char ***out, size_t *nout)
{
	size_t n;
	int err;

	err = cfg_list(ctx, node, what, true, CFG_MAX_IFACES, &n);
	if (err || !n)
		return err;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);

		err = cfg_ifname(ctx, item, what, glob_ok, &(*out)[i]);
		if (err)
			return err;
		/* counted as they are filled so fw_cfg_free finds them */
		*nout = i + 1;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp((*out)[j], (*out)[i]))
				return cfg_fail(ctx, item, "duplicate entry in %s", what);
		}
	}
	return 0;
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
	struct cfg_key keys[] = {{.name = "block"}, {.name = "blocklist"}};
	struct fw_cfg *cfg = ctx->cfg;
	bool block = false;
	yaml_node_t *v;
	size_t n;
	int err;

	err = cfg_map(ctx, node, "doh", keys, 2, true);
	if (err)
		return err;
	if ((v = key_value(&keys[0]))) {
		err = cfg_bool(ctx, v, "doh.block", &block);
		if (err)
			return err;
	}
	if ((v = key_value(&keys[1]))) {
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
	if (!block)
		cfg->doh_mode = FW_DOH_OFF;
	else
		cfg->doh_mode = cfg->ndoh_blocklist ? FW_DOH_LIST : FW_DOH_STRICT;
	return 0;
}

static int parse_events(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[] = {{.name = "rate"}, {.name = "burst"}};
	unsigned long long v;
	yaml_node_t *n;
	int err;

	err = cfg_map(ctx, node, "events", keys, 2, true);
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = cfg_uint(ctx, n, "events.rate", 0, 1000000, &v);
		if (err)
			return err;
		ctx->cfg->event_rate = (__u32)v;
	}
	if ((n = key_value(&keys[1]))) {
		err = cfg_uint(ctx, n, "events.burst", 1, 1000000, &v);
		if (err)
			return err;
		ctx->cfg->event_burst = (__u32)v;
	}
	return 0;
}

enum {
	DP_BPFFS,
	DP_INTERFACES,
	DP_BRIDGES,
	DP_LOCAL_ADDRESSES,
	DP_LOCAL_PORTS,
	DP_DOH,
	DP_EVENTS,
	DP_POD_FLOW_TIMEOUT,
	DP_FRAGMENT_TIMEOUT,
	DP_MAX,
};

static int parse_datapath(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[DP_MAX] = {
		[DP_BPFFS] = {.name = "bpffs"},
		[DP_INTERFACES] = {.name = "interfaces"},
		[DP_BRIDGES] = {.name = "bridges"},
		[DP_LOCAL_ADDRESSES] = {.name = "local_addresses"},
		[DP_LOCAL_PORTS] = {.name = "local_ports"},
		[DP_DOH] = {.name = "doh"},
		[DP_EVENTS] = {.name = "events"},
		[DP_POD_FLOW_TIMEOUT] = {.name = "pod_flow_timeout"},
		[DP_FRAGMENT_TIMEOUT] = {.name = "fragment_timeout"},
	};
	struct fw_cfg *cfg = ctx->cfg;
	unsigned long long v;
	yaml_node_t *n;
	const char *s;
	int err;

	err = cfg_map(ctx, node, "datapath", keys, DP_MAX, true);
	if (err)
		return err;
	if ((n = key_value(&keys[DP_BPFFS]))) {
		err = cfg_scalar(ctx, n, "bpffs", &s);
		if (err)
			return err;
		if (s[0] != '/' || strlen(s) >= sizeof(cfg->bpffs))
			return cfg_fail(ctx, n, "bpffs must be an absolute path shorter than %zu",
					sizeof(cfg->bpffs));
		snprintf(cfg->bpffs, sizeof(cfg->bpffs), "%s", s);
	}
	if ((n = key_value(&keys[DP_INTERFACES]))) {
		err = cfg_strv(ctx, n, "interfaces", true, &cfg->interfaces, &cfg->ninterfaces);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_BRIDGES]))) {
		err = cfg_strv(ctx, n, "bridges", false, &cfg->bridges, &cfg->nbridges);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_LOCAL_ADDRESSES]))) {
		err = parse_local_addresses(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_LOCAL_PORTS]))) {
		err = parse_local_ports(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_DOH]))) {
		err = parse_doh(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_EVENTS]))) {
		err = parse_events(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[DP_POD_FLOW_TIMEOUT]))) {
		err = cfg_uint(ctx, n, "pod_flow_timeout", 1, 86400, &v);
		if (err)
			return err;
		cfg->pod_flow_timeout_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[DP_FRAGMENT_TIMEOUT]))) {
		err = cfg_uint(ctx, n, "fragment_timeout", 1, 300, &v);
		if (err)
			return err;
		cfg->frag_timeout_ns = v * FW_NSEC_PER_SEC;
	}
	return 0;
}

/* --- policies ----------------------------------------------------------- */

/* Policy errors carry no line; the node they are about supplies it. */
static int cfg_policy_err(struct cfg_ctx *ctx, const yaml_node_t *node, int ret, const char *msg)
{
	if (ret == -ENOMEM)
		return cfg_nomem(ctx, node);
	cfg_fail(ctx, node, "%s", msg);
	return ret;
}

static int overlay_list(struct cfg_ctx *ctx, yaml_node_t *node, const char *action)
{
	char perr[FW_CFG_ERR_LEN];
	size_t n;
	int err;

	err = cfg_list(ctx, node, action, true, FW_POLICY_MAX_RULES, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		const char *target;

		err = cfg_scalar(ctx, item, "an overlay target", &target);
		if (err)
			return err;
		err = fw_policy_add_rule(&ctx->cfg->overlay, action, target, NULL, 0, perr,
					 sizeof(perr));
		if (err)
			return cfg_policy_err(ctx, item, err, perr);
	}
	return 0;
}

static int parse_overlay(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[] = {{.name = "deny"}, {.name = "allow"}};
	yaml_node_t *n;
	int err;

	err = cfg_map(ctx, node, "overlay", keys, 2, true);
	if (err)
		return err;
	/* deny rules first whatever the key order, so a first-match reader
	 * (the DNS proxy) sees the operator's denials before its allowances */
	if ((n = key_value(&keys[0]))) {
		err = overlay_list(ctx, n, "deny");
		if (err)
			return err;
	}
	if ((n = key_value(&keys[1]))) {
		err = overlay_list(ctx, n, "allow");
		if (err)
			return err;
	}
	return 0;
}

static int parse_rule(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p)
{
	struct cfg_key keys[] = {{.name = "action"}, {.name = "target"}, {.name = "ports"}};
	long ports[FW_POLICY_MAX_PORTS];
	char perr[FW_CFG_ERR_LEN];
	const char *action = "", *target;
	yaml_node_t *n, *bad;
	size_t nports = 0;
	int err;

	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "an egress rule must be a mapping, not a %s",
				kind_name(node));
	err = cfg_map(ctx, node, "an egress rule", keys, 3, false);
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = cfg_scalar(ctx, n, "action", &action);
		if (err)
			return err;
	}
	if (!keys[1].value)
		return cfg_fail(ctx, node, "egress rule has no target");
	err = cfg_scalar(ctx, keys[1].value, "target", &target);
	if (err)
		return err;
	if ((n = key_value(&keys[2]))) {
		err = cfg_list(ctx, n, "ports", false, FW_POLICY_MAX_PORTS, &nports);
		if (err)
			return err;
		for (size_t i = 0; i < nports; i++) {
			unsigned long long v;

			err = cfg_uint(ctx, list_item(ctx, n, i), "port", 1, 65535, &v);
			if (err)
				return err;
			ports[i] = (long)v;
		}
	}
	err = fw_policy_add_rule(p, action, target, nports ? ports : NULL, nports, perr,
				 sizeof(perr));
	if (err) {
		/* point at the part that was wrong */
		if (!strncmp(perr, "invalid action", 14))
			bad = keys[0].value;
		else if (strstr(perr, "port"))
			bad = keys[2].value;
		else
			bad = keys[1].value;
		return cfg_policy_err(ctx, bad ? bad : node, err, perr);
	}
	return 0;
}

static int parse_policy(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p)
{
	struct cfg_key keys[] = {{.name = "defaultAction"}, {.name = "egress"}};
	char perr[FW_CFG_ERR_LEN];
	const char *s;
	yaml_node_t *n;
	size_t nrules;
	int err;

	/* unknown keys are ignored here: the format is the reference's */
	err = cfg_map(ctx, node, "policy", keys, 2, false);
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = cfg_scalar(ctx, n, "defaultAction", &s);
		if (err)
			return err;
		err = fw_policy_set_default(p, s, perr, sizeof(perr));
		if (err)
			return cfg_policy_err(ctx, n, err, perr);
	}
	if ((n = key_value(&keys[1]))) {
		err = cfg_list(ctx, n, "egress rules", false, FW_POLICY_MAX_RULES, &nrules);
		if (err)
			return err;
		for (size_t i = 0; i < nrules; i++) {
			err = parse_rule(ctx, list_item(ctx, n, i), p);
			if (err)
				return err;
		}
	}
	return 0;
}

/* --- subjects ----------------------------------------------------------- */

enum {
	SK_NAME,
	SK_ADDRESSES,
	SK_INTERFACE,
	SK_MAC,
	SK_GATEWAY,
	SK_PRIVATE_CIDR,
	SK_STATE,
	SK_POLICY,
	SK_MAX,
};

/* "02:00:5e:10:00:01": six bytes of two hex digits, colon-separated */
static int parse_mac(const char *v, __u8 out[6])
{
	for (int i = 0; i < 6; i++) {
		unsigned int b = 0;

		for (int j = 0; j < 2; j++, v++) {
			char c = *v;

			if (c >= '0' && c <= '9')
				b = b * 16 + (unsigned int)(c - '0');
			else if (c >= 'a' && c <= 'f')
				b = b * 16 + (unsigned int)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				b = b * 16 + (unsigned int)(c - 'A' + 10);
			else
				return -EINVAL;
		}
		out[i] = (__u8)b;
		if (*v != (i == 5 ? '\0' : ':'))
			return -EINVAL;
		if (i < 5)
			v++;
	}
	return 0;
}

static bool has_family(const struct fw_subject_spec *s, enum fw_family fam)
{
	for (size_t i = 0; i < s->naddrs; i++) {
		if (fw_addr_family(&s->addrs[i]) == fam)
			return true;
	}
	return false;
}

static const char *const fam_name[FW_FAM_MAX] = {"IPv4", "IPv6"};

static bool valid_name(const char *s)
{
	for (; *s; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return false;
	}
	return true;
}

static int parse_subject(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_subject_spec *s)
{
	struct cfg_key keys[SK_MAX] = {
		[SK_NAME] = {.name = "name"},
		[SK_ADDRESSES] = {.name = "addresses"},
		[SK_INTERFACE] = {.name = "interface"},
		[SK_MAC] = {.name = "mac"},
		[SK_GATEWAY] = {.name = "gateway"},
		[SK_PRIVATE_CIDR] = {.name = "private_cidr"},
		[SK_STATE] = {.name = "state"},
		[SK_POLICY] = {.name = "policy"},
	};
	enum fw_family fam;
	yaml_node_t *n;
	const char *v;
	size_t cnt;
	char *ifname;
	int err;

	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "a subject must be a mapping, not a %s",
				kind_name(node));
	err = cfg_map(ctx, node, "subject", keys, SK_MAX, true);
	if (err)
		return err;

	if (!(n = key_value(&keys[SK_NAME])))
		return cfg_fail(ctx, node, "subject has no name");
	err = cfg_scalar(ctx, n, "name", &v);
	if (err)
		return err;
	if (!*v || strlen(v) >= sizeof(s->name) || !valid_name(v))
		return cfg_fail(ctx, n,
				"invalid subject name, use 1 to %zu letters, digits, '.', '_' "
				"or '-'",
				sizeof(s->name) - 1);
	snprintf(s->name, sizeof(s->name), "%s", v);

	if (!(n = key_value(&keys[SK_ADDRESSES])))
		return cfg_fail(ctx, node, "subject \"%s\" has no addresses", s->name);
	err = cfg_list(ctx, n, "addresses", true, FW_SUBJECT_MAX_ADDRS, &cnt);
	if (err)
		return err;
	if (!cnt)
		return cfg_fail(ctx, n, "subject \"%s\" has no addresses", s->name);
	for (size_t i = 0; i < cnt; i++) {
		err = cfg_addr(ctx, list_item(ctx, n, i), "address", &s->addrs[i], NULL);
		if (err)
			return err;
	}
	s->naddrs = cnt;

	if ((n = key_value(&keys[SK_INTERFACE]))) {
		err = cfg_ifname(ctx, n, "interface", false, &ifname);
		if (err)
			return err;
		snprintf(s->ifname, sizeof(s->ifname), "%s", ifname);
		free(ifname);
	}

	if ((n = key_value(&keys[SK_MAC]))) {
		err = cfg_scalar(ctx, n, "mac", &v);
		if (err)
			return err;
		if (!s->ifname[0])
			return cfg_fail(ctx, n, "mac needs the subject's interface");
		if (parse_mac(v, s->mac))
			return cfg_fail(ctx, n,
					"invalid MAC, expected six hex bytes like "
					"02:00:5e:10:00:01");
		if ((s->mac[0] & 1) || !memcmp(s->mac, "\0\0\0\0\0\0", 6))
			return cfg_fail(ctx, n, "mac must be a unicast, non-zero address");
		s->has_mac = true;
	}

	if ((n = key_value(&keys[SK_GATEWAY]))) {
		err = cfg_list(ctx, n, "gateways", true, FW_FAM_MAX, &cnt);
		if (err)
			return err;
		for (size_t i = 0; i < cnt; i++) {
			yaml_node_t *item = list_item(ctx, n, i);
			struct fw_ip ip;

			err = cfg_addr(ctx, item, "gateway", &ip, &fam);
			if (err)
				return err;
			if (s->has_gateway[fam])
				return cfg_fail(ctx, item, "more than one %s gateway",
						fam_name[fam]);
			if (!has_family(s, fam))
				return cfg_fail(ctx, item,
						"%s gateway but subject \"%s\" has no "
						"%s address",
						fam_name[fam], s->name, fam_name[fam]);
			for (size_t j = 0; j < s->naddrs; j++) {
				if (!memcmp(&s->addrs[j], &ip, sizeof(ip)))
					return cfg_fail(
						ctx, item,
						"gateway is one of the subject's addresses");
			}
			s->has_gateway[fam] = true;
			s->gateway[fam] = ip;
		}
	}

	if ((n = key_value(&keys[SK_PRIVATE_CIDR]))) {
		err = cfg_list(ctx, n, "private CIDRs", true, FW_FAM_MAX, &cnt);
		if (err)
			return err;
		for (size_t i = 0; i < cnt; i++) {
			yaml_node_t *item = list_item(ctx, n, i);
			struct fw_prefix pfx;

			err = cfg_prefix(ctx, item, "private_cidr", &pfx, &fam);
			if (err)
				return err;
			/* the data plane keeps one IPv4 and one IPv6 net */
			if (fam == FW_FAM_V4 ? pfx.plen <= FW_V4_PREFIX_BASE : pfx.plen == 0)
				return cfg_fail(ctx, item, "private_cidr covers everything");
			if (s->has_private[fam])
				return cfg_fail(ctx, item, "more than one %s private_cidr",
						fam_name[fam]);
			if (!has_family(s, fam))
				return cfg_fail(ctx, item,
						"%s private_cidr but subject \"%s\" has no %s "
						"address",
						fam_name[fam], s->name, fam_name[fam]);
			s->has_private[fam] = true;
			s->private_net[fam] = pfx;
		}
	}

	s->state = FW_STATE_ACTIVE;
	if ((n = key_value(&keys[SK_STATE]))) {
		err = cfg_scalar(ctx, n, "state", &v);
		if (err)
			return err;
		if (!strcmp(v, "active"))
			s->state = FW_STATE_ACTIVE;
		else if (!strcmp(v, "denying"))
			s->state = FW_STATE_DENYING;
		else
			return cfg_fail(ctx, n, "invalid state, expected active or denying");
	}

	if ((n = key_value(&keys[SK_POLICY]))) {
		err = parse_policy(ctx, n, &s->policy);
		if (err)
			return err;
	}
	return 0;
}

struct addr_ref {
	struct fw_ip ip;
	yaml_node_t *node;
	size_t subject;
	size_t order;
};

static int addr_ref_cmp(const void *a, const void *b)
{
	const struct addr_ref *x = a, *y = b;
	int c = memcmp(&x->ip, &y->ip, sizeof(x->ip));

	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Every address dispatches to exactly one subject, so none may repeat,
 * within a subject or across subjects. Sorting keeps this n log n for
 * thousands of subjects; the later occurrence in the file is reported. */
static int check_unique_addresses(struct cfg_ctx *ctx, yaml_node_t *list)
{
	struct fw_cfg *cfg = ctx->cfg;
	struct addr_ref *refs;
	size_t n = 0;
	int err = 0;

	for (size_t i = 0; i < cfg->nsubjects; i++)
		n += cfg->subjects[i].naddrs;
	if (n < 2)
		return 0;
	refs = calloc(n, sizeof(*refs));
	if (!refs)
		return cfg_nomem(ctx, list);
	n = 0;
	for (size_t i = 0; i < cfg->nsubjects; i++) {
		yaml_node_t *subj = list_item(ctx, list, i), *addrs = NULL;
		yaml_node_pair_t *pair;

		/* parse_subject already checked the shape, so this finds it */
		for (pair = subj->data.mapping.pairs.start; pair < subj->data.mapping.pairs.top;
		     pair++) {
			yaml_node_t *k = node_at(ctx, pair->key);

			if (!strcmp((const char *)k->data.scalar.value, "addresses"))
				addrs = node_at(ctx, pair->value);
		}
		for (size_t j = 0; j < cfg->subjects[i].naddrs; j++) {
			refs[n].ip = cfg->subjects[i].addrs[j];
			refs[n].node = list_item(ctx, addrs, j);
			refs[n].subject = i;
			refs[n].order = n;
			n++;
		}
	}
	qsort(refs, n, sizeof(*refs), addr_ref_cmp);
	for (size_t i = 1; i < n; i++) {
		const struct addr_ref *first = &refs[i - 1], *dup = &refs[i];

		if (memcmp(&first->ip, &dup->ip, sizeof(dup->ip)))
			continue;
		if (first->subject == dup->subject)
			err = cfg_fail(ctx, dup->node, "duplicate address in subject \"%s\"",
				       cfg->subjects[dup->subject].name);
		else
			err = cfg_fail(
				ctx, dup->node,
				"address of subject \"%s\" already belongs to subject \"%s\"",
				cfg->subjects[dup->subject].name,
				cfg->subjects[first->subject].name);
		break;
	}
	free(refs);
	return err;
}

static int parse_subjects(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct fw_cfg *cfg = ctx->cfg;
	size_t n;
	int err;

	err = cfg_list(ctx, node, "subjects", false, FW_MAX_SUBJECTS - 1, &n);
	if (err || !n)
		return err;
	cfg->subjects = calloc(n, sizeof(*cfg->subjects));
	if (!cfg->subjects)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		struct fw_subject_spec *s = &cfg->subjects[i];

		fw_policy_init(&s->policy);
		/* counted before parsing so a half-built policy is freed */
		cfg->nsubjects = i + 1;
		err = parse_subject(ctx, item, s);
		if (err)
			return err;
		/* linear: names are checked once per subject at load time */
		for (size_t j = 0; j < i; j++) {
			const struct fw_subject_spec *o = &cfg->subjects[j];

			if (!strcmp(o->name, s->name))
				return cfg_fail(ctx, item, "duplicate subject name \"%s\"",
						s->name);
			/* one MAC is one port's; one port has one MAC */
			if (s->has_mac && o->has_mac && !memcmp(o->mac, s->mac, 6) &&
			    strcmp(o->ifname, s->ifname))
				return cfg_fail(ctx, item,
						"subject \"%s\" has the mac of subject \"%s\" on "
						"another interface",
						s->name, o->name);
			if (s->has_mac && o->has_mac && !strcmp(o->ifname, s->ifname) &&
			    memcmp(o->mac, s->mac, 6))
				return cfg_fail(
					ctx, item,
					"subject \"%s\" gives interface %s another mac than "
					"subject \"%s\"",
					s->name, s->ifname, o->name);
		}
	}
	return check_unique_addresses(ctx, node);
}

/* --- top level ---------------------------------------------------------- */

enum {
	TK_LOG_LEVEL,
	TK_DATAPATH,
	TK_OVERLAY,
	TK_SUBJECTS,
	TK_ACTIONS,
	TK_DNS,
	TK_MAX,
};

/* "127.0.0.1:18080", "[::1]:18080", "localhost:18080": loopback only, the
 * control endpoints must never face the network. */
static int parse_listen(struct cfg_ctx *ctx, yaml_node_t *node)
{
	char host[64];
	const char *s, *colon;
	struct fw_ip ip;
	unsigned long port;
	char *end;
	int err;

	err = cfg_scalar(ctx, node, "actions.listen", &s);
	if (err)
		return err;
	colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return cfg_fail(ctx, node, "actions.listen must be ADDRESS:PORT");
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port == 0 || port > 65535)
		return cfg_fail(ctx, node, "actions.listen has an invalid port");
	if (strcmp(host, "localhost") != 0) {
		static const struct fw_ip lo6 = {.b = {[15] = 1}};

		if (fw_addr_parse(host, &ip, NULL))
			return cfg_fail(ctx, node, "actions.listen has an invalid address");
		if (!(ip.b[10] == 0xff && ip.b[11] == 0xff && ip.b[12] == 127) &&
		    memcmp(&ip, &lo6, sizeof(ip)) != 0)
			return cfg_fail(ctx, node, "actions.listen must be a loopback address");
	}
	snprintf(ctx->cfg->actions_listen, sizeof(ctx->cfg->actions_listen), "%s", s);
	return 0;
}

static int parse_actions(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[] = {
		{.name = "listen"}, {.name = "vault_socket"}, {.name = "restart"},
		{.name = "grace"},  {.name = "pending_ttl"},  {.name = "bind_host_veth"},
	};
	unsigned long long v;
	yaml_node_t *n;
	const char *s;
	int err;

	ctx->cfg->actions_enabled = true;
	if (is_null(node))
		return 0;
	err = cfg_map(ctx, node, "actions", keys, 6, true);
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = parse_listen(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[1]))) {
		err = cfg_scalar(ctx, n, "actions.vault_socket", &s);
		if (err)
			return err;
		if (s[0] != '/' || strlen(s) >= sizeof(ctx->cfg->actions_vault_socket))
			return cfg_fail(
				ctx, n,
				"actions.vault_socket must be an absolute path under 108 bytes");
		snprintf(ctx->cfg->actions_vault_socket, sizeof(ctx->cfg->actions_vault_socket),
			 "%s", s);
	}
	if ((n = key_value(&keys[2]))) {
		err = cfg_scalar(ctx, n, "actions.restart", &s);
		if (err)
			return err;
		if (!strcmp(s, "keep"))
			ctx->cfg->actions_restart_wipe = false;
		else if (!strcmp(s, "wipe"))
			ctx->cfg->actions_restart_wipe = true;
		else
			return cfg_fail(ctx, n, "actions.restart must be keep or wipe");
	}
	if ((n = key_value(&keys[3]))) {
		err = cfg_uint(ctx, n, "actions.grace", 0, 3600, &v);
		if (err)
			return err;
		ctx->cfg->actions_grace_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[4]))) {
		err = cfg_uint(ctx, n, "actions.pending_ttl", 1, 3600, &v);
		if (err)
			return err;
		ctx->cfg->actions_pending_ttl_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[5]))) {
		err = cfg_bool(ctx, n, "actions.bind_host_veth", &ctx->cfg->actions_bind_host_veth);
		if (err)
			return err;
	}
	return 0;
}

/* "192.0.2.53", "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]:5353" */
static int parse_upstream(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_cfg_upstream *u)
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

static int parse_lease(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[] = {{.name = "add"}, {.name = "min"}, {.name = "max"}};
	__u32 *dst[] = {&ctx->cfg->lease_add_s, &ctx->cfg->lease_min_s, &ctx->cfg->lease_max_s};
	const char *what[] = {"dns.lease.add", "dns.lease.min", "dns.lease.max"};
	unsigned long long v;
	yaml_node_t *n;
	int err;

	err = cfg_map(ctx, node, "dns.lease", keys, 3, true);
	if (err)
		return err;
	for (int i = 0; i < 3; i++) {
		if (!(n = key_value(&keys[i])))
			continue;
		err = cfg_uint(ctx, n, what[i], i == 0 ? 0 : 1, 86400, &v);
		if (err)
			return err;
		*dst[i] = (__u32)v;
	}
	if (ctx->cfg->lease_min_s > ctx->cfg->lease_max_s)
		return cfg_fail(ctx, node, "dns.lease.min (%u) is above dns.lease.max (%u)",
				ctx->cfg->lease_min_s, ctx->cfg->lease_max_s);
	return 0;
}

enum {
	DK_PROXY,
	DK_REDIRECT_ALL,
	DK_PORT,
	DK_UPSTREAMS,
	DK_RESOLV_CONF,
	DK_TIMEOUT,
	DK_PROBE,
	DK_WORKERS,
	DK_TCP_CLIENTS,
	DK_LEASE,
	DK_MAX_LEARNED,
	DK_MAX_CONNS,
	DK_REFRESH,
	DK_TCP_IDLE,
	DK_TCP_PER_CLIENT,
	DK_TCP_QUERY,
	DK_CASE,
	DK_MAX,
};

static int parse_dns(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[DK_MAX] = {
		[DK_PROXY] = {.name = "proxy"},
		[DK_REDIRECT_ALL] = {.name = "redirect_all"},
		[DK_PORT] = {.name = "port"},
		[DK_UPSTREAMS] = {.name = "upstreams"},
		[DK_RESOLV_CONF] = {.name = "resolv_conf"},
		[DK_TIMEOUT] = {.name = "timeout"},
		[DK_PROBE] = {.name = "probe_interval"},
		[DK_WORKERS] = {.name = "workers"},
		[DK_TCP_CLIENTS] = {.name = "max_tcp_clients"},
		[DK_LEASE] = {.name = "lease"},
		[DK_MAX_LEARNED] = {.name = "max_learned_per_subject"},
		[DK_MAX_CONNS] = {.name = "max_connections_per_subject"},
		[DK_REFRESH] = {.name = "refresh_interval"},
		[DK_TCP_IDLE] = {.name = "tcp_idle_timeout"},
		[DK_TCP_PER_CLIENT] = {.name = "max_tcp_per_client"},
		[DK_TCP_QUERY] = {.name = "tcp_query_timeout"},
		[DK_CASE] = {.name = "case_randomize"},
	};
	struct fw_cfg *c = ctx->cfg;
	unsigned long long v;
	yaml_node_t *n;
	const char *s;
	size_t len;
	int err;

	err = cfg_map(ctx, node, "dns", keys, DK_MAX, true);
	if (err)
		return err;
	if ((n = key_value(&keys[DK_PROXY])) &&
	    (err = cfg_bool(ctx, n, "dns.proxy", &c->dns_proxy)))
		return err;
	if ((n = key_value(&keys[DK_REDIRECT_ALL])) &&
	    (err = cfg_bool(ctx, n, "dns.redirect_all", &c->dns_redirect_all)))
		return err;
	if ((n = key_value(&keys[DK_PORT]))) {
		err = cfg_uint(ctx, n, "dns.port", 1, 65535, &v);
		if (err)
			return err;
		if (v == 53 || v == 853)
			return cfg_fail(ctx, n, "dns.port must not be 53 or 853 (value '%llu')", v);
		c->dns_port = (__u16)v;
	}
	if ((n = key_value(&keys[DK_UPSTREAMS]))) {
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
	if ((n = key_value(&keys[DK_RESOLV_CONF]))) {
		err = cfg_scalar(ctx, n, "dns.resolv_conf", &s);
		if (err)
			return err;
		if (s[0] != '/' || strlen(s) >= sizeof(c->dns_resolv_conf))
			return cfg_fail(ctx, n, "dns.resolv_conf must be an absolute path");
		snprintf(c->dns_resolv_conf, sizeof(c->dns_resolv_conf), "%s", s);
	}
	if ((n = key_value(&keys[DK_TIMEOUT]))) {
		err = cfg_uint(ctx, n, "dns.timeout", 1, 60, &v);
		if (err)
			return err;
		c->dns_timeout_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[DK_PROBE]))) {
		err = cfg_uint(ctx, n, "dns.probe_interval", 0, 3600, &v);
		if (err)
			return err;
		c->dns_probe_interval_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[DK_WORKERS]))) {
		err = cfg_uint(ctx, n, "dns.workers", 1, 16, &v);
		if (err)
			return err;
		c->dns_workers = (__u32)v;
	}
	if ((n = key_value(&keys[DK_TCP_CLIENTS]))) {
		err = cfg_uint(ctx, n, "dns.max_tcp_clients", 1, 65536, &v);
		if (err)
			return err;
		c->dns_max_tcp_clients = (__u32)v;
	}
	if ((n = key_value(&keys[DK_TCP_PER_CLIENT]))) {
		err = cfg_uint(ctx, n, "dns.max_tcp_per_client", 1, 65536, &v);
		if (err)
			return err;
		c->dns_max_tcp_per_client = (__u32)v;
	}
	if ((n = key_value(&keys[DK_TCP_QUERY]))) {
		err = cfg_uint(ctx, n, "dns.tcp_query_timeout", 1, 3600, &v);
		if (err)
			return err;
		c->dns_tcp_query_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[DK_CASE])) &&
	    (err = cfg_bool(ctx, n, "dns.case_randomize", &c->dns_case_randomize)))
		return err;
	if ((n = key_value(&keys[DK_LEASE])) && (err = parse_lease(ctx, n)))
		return err;
	if ((n = key_value(&keys[DK_MAX_LEARNED]))) {
		err = cfg_uint(ctx, n, "dns.max_learned_per_subject", 0, FW_MAX_LEARNED, &v);
		if (err)
			return err;
		c->max_learned_per_subject = (__u32)v;
	}
	if ((n = key_value(&keys[DK_MAX_CONNS]))) {
		/* no "0 = no cap": without one, one subject fills the map */
		err = cfg_uint(ctx, n, "dns.max_connections_per_subject", 1, FW_MAX_CONNS, &v);
		if (err)
			return err;
		c->max_conns_per_subject = (__u32)v;
	}
	if ((n = key_value(&keys[DK_REFRESH]))) {
		err = cfg_uint(ctx, n, "dns.refresh_interval", 1, 3600, &v);
		if (err)
			return err;
		c->refresh_interval_ns = v * FW_NSEC_PER_SEC;
	}
	if ((n = key_value(&keys[DK_TCP_IDLE]))) {
		err = cfg_uint(ctx, n, "dns.tcp_idle_timeout", 1, 7 * 86400, &v);
		if (err)
			return err;
		c->tcp_idle_ns = v * FW_NSEC_PER_SEC;
	}
	/* a live connection's lease is renewed to lease.min every round: two
	 * rounds must fit in it, or a late round lets the lease lapse */
	if (2 * c->refresh_interval_ns > (__u64)c->lease_min_s * FW_NSEC_PER_SEC)
		return cfg_fail(
			ctx, node,
			"dns.refresh_interval (%llus) must be at most half of dns.lease.min (%us)",
			(unsigned long long)(c->refresh_interval_ns / FW_NSEC_PER_SEC),
			c->lease_min_s);
	return 0;
}

static int parse_root(struct cfg_ctx *ctx, yaml_node_t *root)
{
	struct cfg_key keys[TK_MAX] = {
		[TK_LOG_LEVEL] = {.name = "log_level"}, [TK_DATAPATH] = {.name = "datapath"},
		[TK_OVERLAY] = {.name = "overlay"},	[TK_SUBJECTS] = {.name = "subjects"},
		[TK_ACTIONS] = {.name = "actions"},	[TK_DNS] = {.name = "dns"},
	};
	yaml_node_t *n;
	const char *s;
	int err;

	if (is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, root, "the configuration must be a mapping, not a %s",
				kind_name(root));
	err = cfg_map(ctx, root, "the configuration", keys, TK_MAX, true);
	if (err)
		return err;
	if ((n = key_value(&keys[TK_LOG_LEVEL]))) {
		err = cfg_scalar(ctx, n, "log_level", &s);
		if (err)
			return err;
		if (fw_log_level_parse(s, &ctx->cfg->log_level))
			return cfg_fail(ctx, n,
					"invalid log_level, expected error, warn, info or debug");
	}
	if ((n = key_value(&keys[TK_DATAPATH]))) {
		err = parse_datapath(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[TK_OVERLAY]))) {
		err = parse_overlay(ctx, n);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[TK_SUBJECTS]))) {
		err = parse_subjects(ctx, n);
		if (err)
			return err;
	}
	if (keys[TK_ACTIONS].key) {
		err = parse_actions(ctx, keys[TK_ACTIONS].value);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[TK_DNS]))) {
		err = parse_dns(ctx, n);
		if (err)
			return err;
	}
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
