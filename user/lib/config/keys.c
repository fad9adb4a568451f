// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The keys whose fields are struct fw_cfg's own (the daemon's global,
 * datapath and actions settings), and the docs and schema generated from
 * every table, these and the DNS modules'. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "config/parse.h"
#include "datapath/bandwidth.h"
#include "datapath/guard.h"
#include "dns/learn_keys.h"
#include "dns/proxy_keys.h"
#include "gateway/policy_port.h"

#define F(m) FW_CK_FIELD(struct fw_cfg, m)

static const struct fw_ck_name log_levels[] = {
	{"error", FW_LOG_ERROR},
	{"warn", FW_LOG_WARN},
	{"info", FW_LOG_INFO},
	{"debug", FW_LOG_DEBUG},
	{NULL, 0},
};

static const struct fw_ck_name log_formats[] = {
	{"text", FW_LOG_TEXT},
	{"json", FW_LOG_JSON},
	{NULL, 0},
};

static const struct fw_cfgkey top[] = {
	{.key = "log_level",
	 .type = FW_CK_ENUM,
	 F(log_level),
	 .names = log_levels,
	 .def = FW_LOG_INFO,
	 .doc = "daemon log verbosity; the audit trail (`audit`) is never silenced by it",
	 .reload = FW_CK_RELOAD},
	{.key = "log_format",
	 .type = FW_CK_ENUM,
	 F(log_format),
	 .names = log_formats,
	 .def = FW_LOG_TEXT,
	 .doc = "text: `TIME LEVEL message` lines; json: one JSON object a line with `time`, "
		"`level` and `msg` (the audit trail's records carry their fields as members). "
		"`fastwalld --log-format` overrides it",
	 .reload = FW_CK_RELOAD},
	{.key = "datapath",
	 .type = FW_CK_SECTION,
	 .doc = "data plane settings, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "overlay",
	 .type = FW_CK_SECTION,
	 .def_doc = "none",
	 .doc = "operator rules, below",
	 .reload = FW_CK_RELOAD},
	{.key = "subjects",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of mappings (not a scalar)",
	 .def_doc = "none",
	 .doc = "static subjects, below",
	 .reload = FW_CK_RELOAD},
	{.key = "actions",
	 .type = FW_CK_SECTION,
	 F(actions_enabled),
	 .type_doc = "mapping (may be empty)",
	 .def_doc = "absent",
	 .doc = "present: serve the Sandbox Actions protocol, below",
	 .reload = FW_CK_RESTART},
	{.key = "dns",
	 .type = FW_CK_SECTION,
	 .def_doc = "the proxy on",
	 .doc = "the DNS proxy and learned leases, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "processes",
	 .type = FW_CK_SECTION,
	 F(processes_enabled),
	 .type_doc = "mapping (may be empty)",
	 .def_doc = "absent",
	 .doc = "present: process sandboxes (cgroup programs, `fastwall run`), below",
	 .reload = FW_CK_RESTART},
	{.key = "metrics",
	 .type = FW_CK_SECTION,
	 .def_doc = "on, loopback",
	 .doc = "the Prometheus metrics and health listener, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "guard",
	 .type = FW_CK_SECTION,
	 F(guard_enabled),
	 .def_doc = "absent",
	 .doc = "present: guard the pod's data-plane ports on its uplinks, below",
	 .reload = FW_CK_RELOAD},
	{.key = "bandwidth",
	 .type = FW_CK_SECTION,
	 F(bw_enabled),
	 .def_doc = "absent",
	 .doc = "present: enforce the subjects' egress limits (`fastwallBandwidth`) on the node's "
		"uplinks, below (docs/bandwidth.md)",
	 .reload = FW_CK_PER_KEY},
	{.key = "l7",
	 .type = FW_CK_SECTION,
	 .def_doc = "off",
	 .doc = "layer-7 pinning of TLS and HTTP connections to the names that taught their "
		"destinations, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "monitor",
	 .type = FW_CK_SECTION,
	 .def_doc = "on",
	 .doc = "the live event socket of `fastwall monitor`, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "audit",
	 .type = FW_CK_SECTION,
	 .def_doc = "on, stderr",
	 .doc = "the audit trail of denies and subject changes, below",
	 .reload = FW_CK_PER_KEY},
};

static const struct fw_cfgkey datapath[] = {
	{.key = "bpffs",
	 .type = FW_CK_PATH,
	 F(bpffs),
	 .def_str = FW_DEFAULT_BPFFS,
	 .doc = "where maps and programs are pinned: a directory of fastwall's own on a bpf "
		"filesystem (created when missing); the mount point itself, or a directory on "
		"another filesystem, is refused at start",
	 .reload = FW_CK_RESTART},
	{.key = "interfaces",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of names or fnmatch globs",
	 .def_doc = "none",
	 .doc = "host interfaces to attach to; a name is at most 15 characters, a glob (`*`, "
		"`?`, `[`) at most 255; no `/` or spaces; no duplicates. A reload attaches to "
		"the interfaces that match now; one that no longer matches stays attached",
	 .reload = FW_CK_RELOAD},
	{.key = "bridges",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of interface names (no globs)",
	 .def_doc = "none",
	 .doc = "attach to every port of these bridges (on reload as `interfaces`)",
	 .reload = FW_CK_RELOAD},
	{.key = "local_addresses",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of addresses, at most 256",
	 .def_doc = "none",
	 .doc = "pod-local addresses besides the gateways and the pod namespace's own addresses "
		"(which fastwalld learns from netlink, with loopback and link-local): DNS to them "
		"is local, other traffic to them drops unless a `local_ports` entry opens it. For "
		"addresses the pod does not hold itself (a node-local resolver, a service VIP); "
		"they stay pod-local whatever happens to the interfaces",
	 .reload = FW_CK_RELOAD},
	{.key = "local_ports",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of `\"tcp/PORT\"` / `\"udp/PORT\"`, at most 256",
	 .def_doc = "none",
	 .doc = "ports open to sandboxes on pod-local addresses; PORT 1-65535, lowercase "
		"protocol",
	 .reload = FW_CK_RELOAD},
	{.key = "doh",
	 .type = FW_CK_SECTION,
	 .doc = "DNS-over-HTTPS blocking, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "events",
	 .type = FW_CK_SECTION,
	 .doc = "deny event rate limit, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "pod_flow_timeout",
	 .type = FW_CK_DURATION,
	 F(pod_flow_timeout_ns),
	 .min = 1,
	 .max = 86400,
	 .def = 300,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "idle timeout of flows the pod opened into a sandbox",
	 .reload = FW_CK_RELOAD},
	{.key = "fragment_timeout",
	 .type = FW_CK_DURATION,
	 F(frag_timeout_ns),
	 .min = 1,
	 .max = 300,
	 .def = 5,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "how long a passed first fragment lets the rest follow",
	 .reload = FW_CK_RELOAD},
};

static const struct fw_cfgkey doh[] = {
	{.key = "block",
	 .type = FW_CK_BOOL,
	 F(doh_block),
	 .def = 0,
	 .doc = "turn DoH blocking on",
	 .reload = FW_CK_RELOAD},
	{.key = "blocklist",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of addresses or CIDRs, at most 4096",
	 .def_doc = "none",
	 .doc = "resolver addresses whose TCP 443 is dropped",
	 .reload = FW_CK_RELOAD},
};

static const struct fw_cfgkey events[] = {
	{.key = "rate",
	 .type = FW_CK_UINT,
	 F(event_rate),
	 .min = 0,
	 .max = 1000000,
	 .def = 100,
	 .doc = "deny events per second per subject per CPU; 0 disables events",
	 .reload = FW_CK_RELOAD},
	{.key = "burst",
	 .type = FW_CK_UINT,
	 F(event_burst),
	 .min = 1,
	 .max = 1000000,
	 .def = 200,
	 .doc = "events a subject may emit back to back",
	 .reload = FW_CK_RELOAD},
};

/* "127.0.0.1:18080", "[::1]:18080", "localhost:18080"; with loopback, only
 * loopback addresses (the control endpoints must never face the network). */
static int check_addr_port(const char *name, const char *s, bool loopback, char *msg, size_t msglen)
{
	char host[64];
	const char *colon;
	struct fw_ip ip;
	unsigned long port;
	char *end;

	colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host)) {
		snprintf(msg, msglen, "%s must be ADDRESS:PORT", name);
		return -EINVAL;
	}
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port == 0 || port > 65535) {
		snprintf(msg, msglen, "%s has an invalid port", name);
		return -EINVAL;
	}
	if (strcmp(host, "localhost") != 0) {
		static const struct fw_ip lo6 = {.b = {[15] = 1}};

		if (fw_addr_parse(host, &ip, NULL)) {
			snprintf(msg, msglen, "%s has an invalid address", name);
			return -EINVAL;
		}
		if (loopback && !(ip.b[10] == 0xff && ip.b[11] == 0xff && ip.b[12] == 127) &&
		    memcmp(&ip, &lo6, sizeof(ip)) != 0) {
			snprintf(msg, msglen, "%s must be a loopback address", name);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_listen(const char *name, const char *s, unsigned long long v, char *msg,
			size_t msglen)
{
	(void)v;
	return check_addr_port(name, s, true, msg, msglen);
}

/* "" turns the metrics listener off; any address may serve it */
static int check_metrics_listen(const char *name, const char *s, unsigned long long v, char *msg,
				size_t msglen)
{
	(void)v;
	return s[0] ? check_addr_port(name, s, false, msg, msglen) : 0;
}

static const struct fw_cfgkey metrics[] = {
	{.key = "listen",
	 .type = FW_CK_STRING,
	 F(metrics_listen),
	 .def_str = "127.0.0.1:9464",
	 .check = check_metrics_listen,
	 .type_doc = "`ADDRESS:PORT` or `\"\"`",
	 .doc = "where `/metrics` (Prometheus text format), `/healthz` and `/readyz` are served; "
		"`\"\"` turns the listener off. Any address is accepted (`0.0.0.0:9464` for a "
		"scraper on another host: the endpoints say nothing secret but subject counts, "
		"yet anyone who reaches them can read them)",
	 .reload = FW_CK_RESTART},
	{.key = "per_subject",
	 .type = FW_CK_BOOL,
	 F(metrics_per_subject),
	 .def = 0,
	 .doc = "also export `fastwall_subject_packets_total{subject,reason,verdict}` for the "
		"subjects registered at each scrape: a series per subject and reason it counted, "
		"so a pod whose sandboxes churn makes many short-lived series",
	 .reload = FW_CK_RESTART},
};

static const struct fw_ck_name restart_modes[] = {{"keep", 0}, {"wipe", 1}, {NULL, 0}};

static const struct fw_cfgkey actions[] = {
	{.key = "listen",
	 .type = FW_CK_STRING,
	 F(actions_listen),
	 .def_str = "127.0.0.1:" FW_POLICY_PORT_STR,
	 .check = check_listen,
	 .type_doc = "`ADDRESS:PORT`",
	 .doc = "loopback only (`127.0.0.0/8`, `[::1]`, `localhost`); anything else is an "
		"error",
	 .reload = FW_CK_RESTART},
	{.key = "vault_socket",
	 .type = FW_CK_PATH,
	 F(actions_vault_socket),
	 .def_str = "/run/fastwall/vault.sock",
	 .doc = "unix socket of the active-vault read, mode 0600",
	 .reload = FW_CK_RESTART},
	{.key = "restart",
	 .type = FW_CK_ENUM,
	 F(actions_restart_wipe),
	 .names = restart_modes,
	 .def = 0,
	 .doc = "keep: adopt the kernel state and wait for the replay; wipe: the reference "
		"behaviour",
	 .reload = FW_CK_RESTART},
	{.key = "grace",
	 .type = FW_CK_DURATION,
	 F(actions_grace_ns),
	 .min = 0,
	 .max = 3600,
	 .def = 10,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "after a restart, unconfirmed subjects are removed after this",
	 .reload = FW_CK_RESTART},
	{.key = "pending_ttl",
	 .type = FW_CK_DURATION,
	 F(actions_pending_ttl_ns),
	 .min = 1,
	 .max = 3600,
	 .def = 30,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "how long a push for an unknown uid is cached",
	 .reload = FW_CK_RESTART},
	{.key = "bind_host_veth",
	 .type = FW_CK_BOOL,
	 F(actions_bind_host_veth),
	 .def = 1,
	 .doc = "anti-spoof: a subject's packets only from its `hostVeth`",
	 .reload = FW_CK_RESTART},
};

/* "fastwall", "sandboxes/run": a relative cgroup path, no "." or ".."
 * component, no empty one; fastwalld creates it. */
int fw_cfg_check_cgroup_path(const char *name, const char *s, unsigned long long v, char *msg,
			     size_t msglen)
{
	const char *c = s;

	(void)v;
	if (!*s || *s == '/') {
		snprintf(msg, msglen, "%s: a path relative to cgroup_root, not '%s'", name, s);
		return -EINVAL;
	}
	while (*c) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) {
			snprintf(msg, msglen, "%s: empty, '.' or '..' component in '%s'", name, s);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			char ch = c[i];

			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.')) {
				snprintf(msg, msglen,
					 "%s: '%s' has a character other than "
					 "letters, digits, '-', '_', '.' and '/'",
					 name, s);
				return -EINVAL;
			}
		}
		c += n;
		if (*c == '/')
			c++;
	}
	return 0;
}

static int check_run_parent(const char *name, const char *s, unsigned long long v, char *msg,
			    size_t msglen)
{
	return *s ? fw_cfg_check_cgroup_path(name, s, v, msg, msglen) : 0;
}

/* a name as /etc/group spells one, or a number */
static int check_run_group(const char *name, const char *s, unsigned long long v, char *msg,
			   size_t msglen)
{
	(void)v;
	for (const char *c = s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.')) {
			snprintf(msg, msglen, "%s: not a group name or number: '%s'", name, s);
			return -EINVAL;
		}
	}
	return 0;
}

static const struct fw_cfgkey processes[] = {
	{.key = "cgroup_root",
	 .type = FW_CK_PATH,
	 F(cgroup_root),
	 .def_str = "/sys/fs/cgroup",
	 .doc = "the cgroup2 mount; when it is not one, fastwalld mounts cgroup2 at "
		"`/run/fastwall/cgroup2` and uses that",
	 .reload = FW_CK_RESTART},
	{.key = "cgroup_parent",
	 .type = FW_CK_STRING,
	 F(cgroup_parent),
	 .def_str = "fastwall",
	 .check = fw_cfg_check_cgroup_path,
	 .type_doc = "relative cgroup path",
	 .doc = "below `cgroup_root`: where the cgroup programs attach and `fastwall run` "
		"makes its cgroups (created when missing); only processes in it are sandboxes",
	 .reload = FW_CK_RESTART},
	{.key = "socket",
	 .type = FW_CK_PATH,
	 F(processes_socket),
	 .def_str = "/run/fastwall/run.sock",
	 .doc = "unix socket of `fastwall run` (mode 0600, root only; 0660 of `run_group` "
		"with one)",
	 .reload = FW_CK_RESTART},
	{.key = "run_group",
	 .type = FW_CK_STRING,
	 F(run_group),
	 .def_str = "",
	 .check = check_run_group,
	 .type_doc = "group name or number",
	 .doc = "members of this group may use `fastwall run` too (their primary or "
		"supplementary group, as the socket's peer credentials say); empty: root only",
	 .reload = FW_CK_RESTART},
	{.key = "run_parent",
	 .type = FW_CK_STRING,
	 F(run_parent),
	 .def_str = "",
	 .check = check_run_parent,
	 .type_doc = "relative cgroup path",
	 .doc = "below `cgroup_parent`: where fastwalld makes the cgroups of non-root callers, "
		"and where a cgroup such a caller passes (`fastwall run --cgroup`, one it made in "
		"a "
		"subtree delegated to it) must lie; empty: `cgroup_parent` itself",
	 .reload = FW_CK_RESTART},
};

static const struct fw_cfgkey dns[] = {
	{.key = "proxy",
	 .type = FW_CK_BOOL,
	 F(dns_proxy),
	 .def = 1,
	 .doc = "run the proxy and send every subject's DNS to the gateway (a pod-local address, "
		"UDP and TCP port 53) to it; false: such DNS passes to whatever listens on the "
		"pod's port 53 (`dns-local`), and domain rules never learn anything",
	 .reload = FW_CK_RESTART},
	{.key = "redirect_all",
	 .type = FW_CK_BOOL,
	 F(dns_redirect_all),
	 .def = 1,
	 .doc = "DNS to any other destination's port 53 is sent to the proxy too (to the "
		"subject's gateway, answered from the address the sandbox asked), so a sandbox "
		"can't bypass its domain policy through a public resolver; false is the "
		"reference behaviour: such DNS is ordinary traffic under the policy",
	 .reload = FW_CK_RELOAD},
	{.key = "upstreams",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of `IP`, `IP:PORT`, `[IPv6]:PORT`, at most 10",
	 .def_doc = "from `resolv_conf`",
	 .doc = "tried in order: NOERROR and NXDOMAIN are final, any other answer, a malformed "
		"one or a timeout moves on; all failing gives the client SERVFAIL",
	 .reload = FW_CK_RELOAD},
	{.key = "resolv_conf",
	 .type = FW_CK_PATH,
	 F(dns_resolv_conf),
	 .def_str = "/etc/resolv.conf",
	 .doc = "when `upstreams` is empty: its `nameserver` lines, non-loopback first, at most "
		"10",
	 .reload = FW_CK_RELOAD},
	{.key = "lease",
	 .type = FW_CK_SECTION,
	 .type_doc = "mapping",
	 .doc = "learned leases, below",
	 .reload = FW_CK_PER_KEY},
	{.key = "max_connections_per_subject",
	 .type = FW_CK_UINT,
	 F(max_conns_per_subject),
	 .min = 1, /* no "0 = no cap": without one, one subject fills the map */
	 .max = FW_MAX_CONNS,
	 .def = 1024,
	 .doc = "TCP connection records (`fastwall_conns`) one subject may hold; a connection "
		"opened over it still passes but does not renew its destination's lease (it lives "
		"on the DNS lease). It caps the subject's pinned connections' entries "
		"(`fastwall_l7_nat`) too: a pinned connection opened over it drops `l7-full` "
		"([egress-l7.md](egress-l7.md)). There is no \"no cap\": without one a sandbox "
		"could fill the maps for everyone ([dns.md](dns.md), \"Connection records per "
		"subject\")",
	 .reload = FW_CK_RELOAD},
};

/* "" turns the socket off */
static int check_monitor_socket(const char *name, const char *s, unsigned long long v, char *msg,
				size_t msglen)
{
	(void)v;
	if (s[0] && s[0] != '/') {
		snprintf(msg, msglen, "%s must be an absolute path or \"\"", name);
		return -EINVAL;
	}
	return 0;
}

static const struct fw_cfgkey monitor[] = {
	{.key = "socket",
	 .type = FW_CK_STRING,
	 F(monitor_socket),
	 .def_str = "/run/fastwall/monitor.sock",
	 .check = check_monitor_socket,
	 .type_doc = "absolute path or `\"\"`",
	 .doc = "unix socket `fastwall monitor` reads live events from: mode 0600, peers other "
		"than root refused; `\"\"` turns it off",
	 .reload = FW_CK_RESTART},
	{.key = "reader_queue",
	 .type = FW_CK_UINT,
	 F(monitor_queue),
	 .min = 1,
	 .max = 100000, /* a stopped reader holds this many lines */
	 .def = 4096,
	 .doc = "events one reader may have waiting besides its socket buffer; beyond it its "
		"events are dropped, counted in `fastwall_monitor_events_dropped_total`, and the "
		"reader is told how many it lost",
	 .reload = FW_CK_RESTART},
	{.key = "allow_sample",
	 .type = FW_CK_UINT,
	 F(monitor_allow_sample),
	 .min = 0,
	 .max = 65535,
	 .def = 0,
	 .doc = "one passed packet in N (1: every one) becomes an allow event, within the "
		"subject's event budget (`datapath.events`); 0: none, and the data path pays one "
		"flag test per packet",
	 .reload = FW_CK_RELOAD},
};

/* stderr, stdout, off or an absolute path */
static int check_audit_dest(const char *name, const char *s, unsigned long long v, char *msg,
			    size_t msglen)
{
	(void)v;
	if (strcmp(s, "stderr") && strcmp(s, "stdout") && strcmp(s, "off") && s[0] != '/') {
		snprintf(msg, msglen, "%s must be stderr, stdout, off or an absolute path", name);
		return -EINVAL;
	}
	return 0;
}

static const struct fw_cfgkey audit[] = {
	{.key = "destination",
	 .type = FW_CK_STRING,
	 F(audit_destination),
	 .def_str = "stderr",
	 .check = check_audit_dest,
	 .type_doc = "`stderr`, `stdout`, `off` or an absolute path",
	 .doc = "where the audit trail goes: `stderr` beside the log (the journal takes both "
		"under systemd), `stdout` to keep it apart from the log, a file (appended, "
		"created 0600), or `off`",
	 .reload = FW_CK_RELOAD},
};

static const struct fw_ck_name guard_modes[] = {
	{"auto", FW_GUARD_AUTO},
	{"xdp", FW_GUARD_XDP},
	{"xdp-generic", FW_GUARD_XDP_GENERIC},
	{"tc", FW_GUARD_TC},
	{NULL, 0},
};

static const struct fw_cfgkey guard[] = {
	{.key = "interfaces",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of interface names (no globs), at least one",
	 .def_doc = "required",
	 .doc = "the pod's uplinks, where the ingress gateway's traffic arrives; each must exist "
		"when fastwalld starts or reloads",
	 .reload = FW_CK_RELOAD},
	{.key = "ports",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of ports 1-65535, at least one, at most 512",
	 .def_doc = "required",
	 .doc = "the guarded data-plane ports, TCP and UDP; keep them outside the pod's "
		"ephemeral range (`net.ipv4.ip_local_port_range`): a reply to a connection the pod "
		"opened that arrives on a guarded port drops unless its source is trusted "
		"(fastwalld warns)",
	 .reload = FW_CK_RELOAD},
	{.key = "trusted",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of addresses or CIDRs, IPv4 and IPv6, at most 4096",
	 .def_doc = "none",
	 .doc = "sources that may reach the guarded ports (the ingress gateway's workloads); "
		"none: every packet to them drops. On SIGHUP the new set is written before the "
		"old one goes",
	 .reload = FW_CK_RELOAD},
	{.key = "mode",
	 .type = FW_CK_ENUM,
	 F(guard_mode),
	 .names = guard_modes,
	 .def = FW_GUARD_AUTO,
	 .doc = "the hook: auto (TC ingress on a veth, whose native XDP copies each packet; "
		"native XDP on other drivers, TC ingress where that is refused), xdp (native "
		"only; on a veth fastwalld warns of its cost), xdp-generic, tc. `fastwall status` "
		"says which hook each interface got and why",
	 .reload = FW_CK_RELOAD},
};

static const struct fw_ck_name bw_modes[] = {
	{"auto", FW_BW_AUTO},
	{"edt", FW_BW_EDT},
	{"police", FW_BW_POLICE},
	{NULL, 0},
};

static const struct fw_cfgkey bandwidth[] = {
	{.key = "interfaces",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of interface names (no globs), at least one",
	 .def_doc = "required",
	 .doc = "the node's uplinks, where the sandboxes' traffic leaves with their own source "
		"addresses (no masquerade before them); each must exist when fastwalld starts or "
		"reloads",
	 .reload = FW_CK_RELOAD},
	{.key = "mode",
	 .type = FW_CK_ENUM,
	 F(bw_mode),
	 .names = bw_modes,
	 .def = FW_BW_AUTO,
	 .doc = "edt: pace, with departure times for the `fq` qdisc fastwalld makes the uplink's "
		"root (in place of the kernel's default one only; refused where that can't be); "
		"police: drop what exceeds a subject's burst; auto: edt where fq can be had, "
		"police elsewhere (logged once)",
	 .reload = FW_CK_RELOAD},
	{.key = "horizon",
	 .type = FW_CK_DURATION,
	 F(bw_horizon_ns),
	 .min = 1,
	 .max = 60,
	 .def = 2,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "edt: a packet whose departure would be further than this ahead drops "
		"(`bandwidth-horizon`)",
	 .reload = FW_CK_RESTART},
};

/* on/off, and what a YAML 1.1 reader makes of them */
static const struct fw_ck_name on_off[] = {
	{"off", 0}, {"on", 1}, {"false", 0}, {"true", 1}, {NULL, 0}};
static const struct fw_ck_name pass_pin[] = {{"pass", 0}, {"pin", 1}, {NULL, 0}};
static const struct fw_ck_name deny_allow[] = {{"deny", 0}, {"allow", 1}, {NULL, 0}};

/* a user name as /etc/passwd spells one, or a number */
static int check_user(const char *name, const char *s, unsigned long long v, char *msg,
		      size_t msglen)
{
	(void)v;
	if (!*s) {
		snprintf(msg, msglen, "%s: a user name or number is required", name);
		return -EINVAL;
	}
	for (const char *c = s; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.')) {
			snprintf(msg, msglen, "%s: not a user name or number: '%s'", name, s);
			return -EINVAL;
		}
	}
	return 0;
}

static const struct fw_cfgkey l7[] = {
	{.key = "enabled",
	 .type = FW_CK_BOOL,
	 F(l7_enabled),
	 .def = 0,
	 .doc = "run the layer-7 proxy and send the pinned subjects' connections to the "
		"ports below through it ([egress-l7.md](egress-l7.md)); false: nothing is "
		"pinned, whatever the subjects say",
	 .reload = FW_CK_RESTART},
	{.key = "tls_ports",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of ports 1-65535",
	 .def_doc = "`[443]`",
	 .doc = "destination ports whose TCP connections are TLS: the ClientHello's server "
		"name must be one of the names that taught the destination; UDP to them is "
		"QUIC (`quic`). With `http_ports` at most 64, no port in both, none twice",
	 .reload = FW_CK_RELOAD},
	{.key = "http_ports",
	 .type = FW_CK_SECTION,
	 .type_doc = "list of ports 1-65535",
	 .def_doc = "`[80]`",
	 .doc = "destination ports whose TCP connections are HTTP: every request's Host must "
		"be one of those names",
	 .reload = FW_CK_RELOAD},
	{.key = "proxy_tls_port",
	 .type = FW_CK_UINT,
	 F(l7_proxy_tls_port),
	 .min = 1,
	 .max = 65535,
	 .def = 15443,
	 .doc = "the proxy's TLS port on the pod's addresses (the gateways, loopback); not "
		"`proxy_http_port` nor `dns.port`",
	 .reload = FW_CK_RESTART},
	{.key = "proxy_http_port",
	 .type = FW_CK_UINT,
	 F(l7_proxy_http_port),
	 .min = 1,
	 .max = 65535,
	 .def = 15080,
	 .doc = "the proxy's HTTP port",
	 .reload = FW_CK_RESTART},
	{.key = "default",
	 .type = FW_CK_ENUM,
	 F(l7_default_on),
	 .names = on_off,
	 .def = 1,
	 .type_doc = "`on` \\| `off` (or `true` \\| `false`)",
	 .doc = "whether a subject that says nothing (no `l7` key, no `fastwallL7` in its "
		"policy) is pinned",
	 .reload = FW_CK_RESTART},
	{.key = "cidr",
	 .type = FW_CK_ENUM,
	 F(l7_cidr_pin),
	 .names = pass_pin,
	 .def = 0,
	 .doc = "pass: only destinations a domain rule taught are pinned; pin: also those an "
		"allow CIDR opens (which have no name, so their TLS and HTTP connections close "
		"with `l7-name`)",
	 .reload = FW_CK_RESTART},
	{.key = "ech",
	 .type = FW_CK_ENUM,
	 F(l7_ech_allow),
	 .names = deny_allow,
	 .def = 0,
	 .doc = "a ClientHello with Encrypted Client Hello: deny closes it (`l7-ech`), allow "
		"decides on its outer server name",
	 .reload = FW_CK_RESTART},
	{.key = "quic",
	 .type = FW_CK_ENUM,
	 F(l7_quic_allow),
	 .names = deny_allow,
	 .def = 0,
	 .doc = "UDP to a pinned subject's TLS port: deny drops it (`l7-quic`), so clients "
		"fall back to TCP; allow passes it unpinned",
	 .reload = FW_CK_RELOAD},
	{.key = "nginx",
	 .type = FW_CK_PATH,
	 F(l7_nginx),
	 .def_str = "/usr/sbin/nginx",
	 .doc = "the nginx binary the proxy runs",
	 .reload = FW_CK_RESTART},
	{.key = "module",
	 .type = FW_CK_PATH,
	 F(l7_module),
	 .def_str = "/usr/lib/nginx/modules/ngx_fastwall_l7_module.so",
	 .doc = "fastwall's nginx module (`make modules` builds "
		"`build/l7/ngx_fastwall_l7_module.so`)",
	 .reload = FW_CK_RESTART},
	{.key = "stream_module",
	 .type = FW_CK_PATH,
	 F(l7_stream_module),
	 .def_str = "/usr/lib/nginx/modules/ngx_stream_module.so",
	 .doc = "nginx's stream module, loaded before fastwall's",
	 .reload = FW_CK_RESTART},
	{.key = "runtime_dir",
	 .type = FW_CK_PATH,
	 F(l7_runtime_dir),
	 .def_str = "/run/fastwall/l7",
	 .doc = "where fastwalld writes the proxy's `nginx.conf` (the directory root's, mode "
		"0755, rewritten at every start) and keeps its pid and temporary files "
		"(`var/`, the proxy user's)",
	 .reload = FW_CK_RESTART},
	{.key = "user",
	 .type = FW_CK_STRING,
	 F(l7_user),
	 .def_str = "nobody",
	 .check = check_user,
	 .type_doc = "user name or number",
	 .doc = "the proxy runs as this user, with `CAP_BPF` only (and `CAP_NET_BIND_SERVICE` "
		"when a proxy port is below 1024)",
	 .reload = FW_CK_RESTART},
	{.key = "workers",
	 .type = FW_CK_UINT,
	 F(l7_workers),
	 .min = 1,
	 .max = 64,
	 .def = 1,
	 .doc = "nginx worker processes",
	 .reload = FW_CK_RESTART},
	{.key = "max_connections",
	 .type = FW_CK_UINT,
	 F(l7_max_connections),
	 .min = 16,
	 .max = 1048576,
	 .def = 4096,
	 .doc = "pinned connections the proxy holds at once, all workers (each takes two of "
		"nginx's `worker_connections`); beyond them new ones wait in the listen queue",
	 .reload = FW_CK_RESTART},
	{.key = "subject_connections",
	 .type = FW_CK_UINT,
	 F(l7_subject_connections),
	 .min = 1,
	 .max = 1048576,
	 .def = 1024,
	 .doc = "pinned connections one subject may hold at once; more close with `l7-limit`",
	 .reload = FW_CK_RESTART},
	{.key = "idle_timeout",
	 .type = FW_CK_DURATION,
	 F(l7_idle_timeout_ns),
	 .min = 1,
	 .max = 86400,
	 .def = 60,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "a connection's entry in `fastwall_l7_nat` with no packet for this long is "
		"removed; a closed one (the sandbox sent FIN or RST) after 10 s, when shorter; "
		"checked every 10 s",
	 .reload = FW_CK_RELOAD},
	{.key = "credentials",
	 .type = FW_CK_ENUM,
	 F(l7_credentials),
	 .names = on_off,
	 .def = 1,
	 .type_doc = "`on` \\| `off` (or `true` \\| `false`)",
	 .doc = "on: a pinned connection whose server name a binding of the subject's "
		"credential vault names is terminated by the proxy, which sets the binding's "
		"credential on matching requests ([egress-l7.md](egress-l7.md#credentials)); "
		"off: every pinned connection passes through as it is. Vaults arrive over the "
		"`actions` section's protocol: without it, nothing is injected",
	 .reload = FW_CK_RESTART},
	{.key = "ca",
	 .type = FW_CK_SECTION,
	 F(l7_ca_present),
	 .doc = "the CA the proxy signs its certificates with, below",
	 .reload = FW_CK_RESTART},
	{.key = "upstream_ca",
	 .type = FW_CK_PATH,
	 F(l7_upstream_ca),
	 .def_str = "",
	 .def_doc = "none",
	 .doc = "a PEM bundle the proxy trusts for upstream servers besides the system store "
		"(`/etc/ssl/certs/ca-certificates.crt`)",
	 .reload = FW_CK_RESTART},
	{.key = "upstream_keepalive",
	 .type = FW_CK_UINT,
	 F(l7_upstream_keepalive),
	 .min = 0,
	 .max = 4096,
	 .def = 64,
	 .doc = "idle upstream connections each proxy worker keeps for reuse, by address, port "
		"and server name",
	 .reload = FW_CK_RESTART},
};

static const struct fw_cfgkey l7_ca[] = {
	{.key = "dir",
	 .type = FW_CK_PATH,
	 F(l7_ca_dir),
	 .def_str = "/var/lib/fastwall/l7-ca",
	 .doc = "where the generated CA lives (`ca.crt`, `ca.key`, root's, 0700) and "
		"`bundle.crt`, the certificates sandboxes should trust, is written",
	 .reload = FW_CK_RESTART},
	{.key = "cert",
	 .type = FW_CK_PATH,
	 F(l7_ca_cert),
	 .def_str = "",
	 .def_doc = "none",
	 .doc = "the operator's CA certificate (PEM) instead of a generated one; with `key`",
	 .reload = FW_CK_RESTART},
	{.key = "key",
	 .type = FW_CK_PATH,
	 F(l7_ca_key),
	 .def_str = "",
	 .def_doc = "none",
	 .doc = "its private key (PEM, not encrypted): root's, no access for group or others",
	 .reload = FW_CK_RESTART},
	{.key = "publish",
	 .type = FW_CK_SECTION,
	 F(nl7_ca_publish),
	 .type_doc = "list of paths",
	 .def_doc = "`[]`",
	 .doc = "PEM files of further CA certificates published in `bundle.crt` and "
		"`GET /l7/ca.crt` beside the signing one (the next CA, staged; the one being "
		"retired); at most 8",
	 .reload = FW_CK_RESTART},
};

const struct fw_cfgtable cfg_top_keys = FW_CK_TABLE("", top);
const struct fw_cfgtable cfg_datapath_keys = FW_CK_TABLE("datapath", datapath);
const struct fw_cfgtable cfg_doh_keys = FW_CK_TABLE("datapath.doh", doh);
const struct fw_cfgtable cfg_events_keys = FW_CK_TABLE("datapath.events", events);
const struct fw_cfgtable cfg_actions_keys = FW_CK_TABLE("actions", actions);
const struct fw_cfgtable cfg_dns_keys = FW_CK_TABLE("dns", dns);
const struct fw_cfgtable cfg_processes_keys = FW_CK_TABLE("processes", processes);
const struct fw_cfgtable cfg_metrics_keys = FW_CK_TABLE("metrics", metrics);
const struct fw_cfgtable cfg_guard_keys = FW_CK_TABLE("guard", guard);
const struct fw_cfgtable cfg_bw_keys = FW_CK_TABLE("bandwidth", bandwidth);
const struct fw_cfgtable cfg_l7_keys = FW_CK_TABLE("l7", l7);
const struct fw_cfgtable cfg_l7_ca_keys = FW_CK_TABLE("l7.ca", l7_ca);
const struct fw_cfgtable cfg_monitor_keys = FW_CK_TABLE("monitor", monitor);
const struct fw_cfgtable cfg_audit_keys = FW_CK_TABLE("audit", audit);

/* Every table with where its struct lies in struct fw_cfg. */
static const struct {
	const struct fw_cfgtable *t;
	size_t off;
} cfg_tables[] = {
	{&cfg_top_keys, 0},
	{&cfg_datapath_keys, 0},
	{&cfg_doh_keys, 0},
	{&cfg_events_keys, 0},
	{&cfg_actions_keys, 0},
	{&cfg_processes_keys, 0},
	{&cfg_dns_keys, 0},
	{&fw_dnsp_keys, offsetof(struct fw_cfg, dnsp)},
	{&fw_learn_keys, offsetof(struct fw_cfg, learn)},
	{&fw_learn_lease_keys, offsetof(struct fw_cfg, learn)},
	{&cfg_metrics_keys, 0},
	{&cfg_guard_keys, 0},
	{&cfg_bw_keys, 0},
	{&cfg_l7_keys, 0},
	{&cfg_l7_ca_keys, 0},
	{&cfg_monitor_keys, 0},
	{&cfg_audit_keys, 0},
};

size_t fw_cfg_keep_restart_keys(struct fw_cfg *next, const struct fw_cfg *run,
				void (*kept)(void *ctx, const char *name, const char *running),
				void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(cfg_tables) / sizeof(cfg_tables[0]); i++)
		n += fw_ck_keep(cfg_tables[i].t, (char *)next + cfg_tables[i].off,
				(const char *)run + cfg_tables[i].off, kept, ctx);
	return n;
}

/* --- docs and schema ---------------------------------------------------- */

/* One table of docs/config.md: a section whose keys may come from several
 * modules' tables. */
struct doc_section {
	const char *name; /* the marker's: "top", "dns.lease" */
	const struct fw_cfgtable *t[3];
	size_t n;
};

static const struct doc_section doc_sections[] = {
	{"top", {&cfg_top_keys}, 1},
	{"datapath", {&cfg_datapath_keys}, 1},
	{"datapath.doh", {&cfg_doh_keys}, 1},
	{"datapath.events", {&cfg_events_keys}, 1},
	{"actions", {&cfg_actions_keys}, 1},
	{"processes", {&cfg_processes_keys}, 1},
	{"dns", {&cfg_dns_keys, &fw_dnsp_keys, &fw_learn_keys}, 3},
	{"dns.lease", {&fw_learn_lease_keys}, 1},
	{"metrics", {&cfg_metrics_keys}, 1},
	{"guard", {&cfg_guard_keys}, 1},
	{"bandwidth", {&cfg_bw_keys}, 1},
	{"l7", {&cfg_l7_keys}, 1},
	{"l7.ca", {&cfg_l7_ca_keys}, 1},
	{"monitor", {&cfg_monitor_keys}, 1},
	{"audit", {&cfg_audit_keys}, 1},
};

#define N_DOC_SECTIONS (sizeof(doc_sections) / sizeof(doc_sections[0]))

void fw_cfg_keys_markdown(FILE *out)
{
	for (size_t i = 0; i < N_DOC_SECTIONS; i++) {
		fprintf(out, "%s### `%s`\n\n", i ? "\n" : "", doc_sections[i].name);
		fw_ck_markdown(out, doc_sections[i].t, doc_sections[i].n);
	}
}

#define KEYS_OPEN  "<!-- keys: "
#define KEYS_CLOSE "<!-- end keys -->"

int fw_cfg_keys_doc(const char *text, FILE *out, char *err, size_t errlen)
{
	const char *p = text;
	size_t line = 1;

	while (*p) {
		const char *eol = strchr(p, '\n'), *name, *end;
		size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p), i;

		fwrite(p, 1, len, out);
		if (strncmp(p, KEYS_OPEN, strlen(KEYS_OPEN)) != 0) {
			p += len;
			line++;
			continue;
		}
		name = p + strlen(KEYS_OPEN);
		end = strstr(name, " -->");
		for (i = 0; end && i < N_DOC_SECTIONS; i++) {
			if (strlen(doc_sections[i].name) == (size_t)(end - name) &&
			    !strncmp(doc_sections[i].name, name, end - name))
				break;
		}
		if (!end || i == N_DOC_SECTIONS) {
			snprintf(err, errlen, "line %zu: unknown keys section", line);
			return -EINVAL;
		}
		fw_ck_markdown(out, doc_sections[i].t, doc_sections[i].n);
		/* skip the old table up to the closing marker, which stays */
		p += len;
		line++;
		while (*p && strncmp(p, KEYS_CLOSE, strlen(KEYS_CLOSE)) != 0) {
			eol = strchr(p, '\n');
			p = eol ? eol + 1 : p + strlen(p);
			line++;
		}
		if (!*p) {
			snprintf(err, errlen, "keys section %s is not closed",
				 doc_sections[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

/* the mappings inside a section, by the SECTION key that holds them */
static const struct doc_section *sub_section(const char *parent, const char *key)
{
	char name[96];

	snprintf(name, sizeof(name), "%s%s%s", parent, parent[0] ? "." : "", key);
	for (size_t i = 0; i < N_DOC_SECTIONS; i++) {
		if (!strcmp(doc_sections[i].name, name))
			return &doc_sections[i];
	}
	return NULL;
}

/* the members of one object's schema: its type and its properties */
static void schema_members(FILE *out, const struct fw_cfgtable *const *t, size_t n)
{
	bool first = true;

	fprintf(out, "\"type\": \"object\", \"properties\": {\n");
	for (size_t j = 0; j < n; j++) {
		fw_ck_schema(out, t[j], &first);
		for (size_t i = 0; i < t[j]->nkeys; i++) {
			const struct fw_cfgkey *k = &t[j]->keys[i];
			const struct doc_section *sub;

			if (k->type != FW_CK_SECTION)
				continue;
			sub = sub_section(t[j]->section, k->key);
			if (!sub)
				continue;
			fprintf(out, "%s\"%s\": {", first ? "" : ",\n", k->key);
			first = false;
			schema_members(out, sub->t, sub->n);
			fprintf(out, "}");
		}
	}
	fprintf(out, "\n}");
}

void fw_cfg_keys_schema(FILE *out)
{
	const struct fw_cfgtable *top_t[] = {&cfg_top_keys};

	fprintf(out,
		"{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n"
		"\"title\": \"fastwalld configuration (scalar keys)\",\n"
		"\"$comment\": \"list-shaped keys (interfaces, bridges, local_addresses, "
		"local_ports, doh.blocklist, overlay, subjects, dns.upstreams, guard.interfaces, "
		"guard.ports, guard.trusted, bandwidth.interfaces, l7.tls_ports, l7.http_ports, "
		"l7.ca.publish) are not "
		"described, nor checks beyond a key's type and bounds (dns.port not 53 or 853, "
		"actions.listen on loopback, the lease rules)\",\n");
	schema_members(out, top_t, 1);
	fprintf(out, "}\n");
}
