// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall explain: the data plane's verdict on one packet and what
 * decided it (explain.h). The decision comes from the pinned maps alone;
 * the rule's text from fastwalld's configuration file, and only when the
 * rule set compiled from it is the one the subject's pins record
 * (fw_subject_meta.policy_hash): a file edited since the last reload, or
 * a subject whose policy came from elsewhere (fastwall run), shows the
 * rule's index alone. A sandbox of the actions protocol: its policy as
 * fastwalld's actions listener answers GET /policy (loopback), under the
 * same check; without a running fastwalld, the index alone. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <jansson.h>

#include "common/addr.h"
#include "common/exitcodes.h"
#include "config/config.h"
#include "datapath/cgroup.h"
#include "datapath/explain.h"
#include "datapath/reasons.h"
#include "explain.h"
#include "policy/json.h"

struct rule_src {
	bool known; /* the text below is the live rule set's */
	bool overlay;
	unsigned int index; /* within the overlay or the subject's own policy */
	char text[512];
};

static const char *state_text(__u8 s)
{
	return s == FW_STATE_ACTIVE ? "active" : s == FW_STATE_DENYING ? "denying" : "absent";
}

static const char *action_text(__u8 a)
{
	return a == FW_ACTION_ALLOW ? "allow" : a == FW_ACTION_DENY ? "deny" : "none";
}

/* "allow 192.0.2.0/25 ports=443,8443": the rule as the policy has it */
static void rule_format(const struct fw_policy_rule *r, char *out, size_t len)
{
	size_t used = (size_t)snprintf(out, len, "%s %s", action_text(r->action),
				       r->target ? r->target : "?");

	for (size_t i = 0; i < r->nports && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%u",
					 i ? "," : " ports=", r->ports[i]);
}

/* Fills out from policy p behind overlay when that compiles to the rule
 * set pinned for the subject (policy_hash). */
static void rule_from(const struct fw_policy *overlay, const struct fw_policy *p,
		      const struct fw_subject_meta *meta, __u32 index, struct rule_src *out)
{
	struct fw_compiled_set set = {};

	if (fw_policy_compile_set(overlay, p, &set))
		return;
	if (fw_compiled_set_hash(&set) == meta->policy_hash) {
		out->overlay = index < overlay->nrules;
		out->index = out->overlay ? index : index - (__u32)overlay->nrules;
		if (out->overlay)
			rule_format(&overlay->rules[index], out->text, sizeof(out->text));
		else if (out->index < p->nrules)
			rule_format(&p->rules[out->index], out->text, sizeof(out->text));
		out->known = out->text[0] != '\0';
	}
	fw_compiled_set_free(&set);
}

/* GET /policy of sandbox uid from the actions listener at listen
 * ("127.0.0.1:18080", "[::1]:18080"): the policy object of the answer. */
static int actions_policy(const char *listen, const char *uid, struct fw_policy *p)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct timeval tv = {.tv_sec = 2};
	char host[64], req[512], err[256];
	static char resp[65536];
	const char *port = strrchr(listen, ':'), *body;
	size_t used = 0;
	json_t *doc, *pol;
	char *text;
	ssize_t n;
	int fd = -1, ret = -EIO;

	if (!port || (size_t)(port - listen) >= sizeof(host) || strpbrk(uid, "\r\n"))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(port - listen), listen);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if (getaddrinfo(host, port + 1, &hints, &ai))
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		ret = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req),
		 "GET /policy HTTP/1.1\r\nHost: %s\r\nX-Fast-Sandbox-Uid: %s\r\n"
		 "Connection: close\r\n\r\n",
		 listen, uid);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		goto out;
	while (used < sizeof(resp) - 1 &&
	       (n = recv(fd, resp + used, sizeof(resp) - 1 - used, 0)) > 0)
		used += (size_t)n;
	resp[used] = '\0';
	body = strstr(resp, "\r\n\r\n");
	if (strncmp(resp, "HTTP/1.1 200", 12) != 0 || !body)
		goto out;
	doc = json_loads(body + 4, 0, NULL);
	pol = doc ? json_object_get(doc, "policy") : NULL;
	text = pol ? json_dumps(pol, 0) : NULL;
	if (text && fw_policy_from_json(text, strlen(text), p, err, sizeof(err)) == 0)
		ret = 0;
	free(text);
	json_decref(doc);
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return ret;
}

/* The text of compiled rule index of subject meta, when the rule set the
 * configuration (a static subject) or the actions listener (a sandbox of
 * the actions protocol) gives compiles to the one pinned (policy_hash). */
static void rule_lookup(const char *config, const struct fw_subject_meta *meta, __u32 index,
			struct rule_src *out)
{
	char err[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;

	memset(out, 0, sizeof(*out));
	if (!config || access(config, R_OK) ||
	    (meta->origin != FW_ORIGIN_STATIC && meta->origin != FW_ORIGIN_ACTIONS))
		return;
	fw_cfg_init(&cfg);
	if (fw_cfg_load_file(config, &cfg, err, sizeof(err)) == 0) {
		if (meta->origin == FW_ORIGIN_ACTIONS && cfg.actions_enabled) {
			struct fw_policy p;

			fw_policy_init(&p);
			if (actions_policy(cfg.actions_listen, meta->name, &p) == 0)
				rule_from(&cfg.overlay, &p, meta, index, out);
			fw_policy_free(&p);
		}
		for (size_t i = 0; meta->origin == FW_ORIGIN_STATIC && i < cfg.nsubjects; i++) {
			if (strcmp(cfg.subjects[i].name, meta->name) == 0) {
				rule_from(&cfg.overlay, &cfg.subjects[i].policy, meta, index, out);
				break;
			}
		}
	}
	fw_cfg_free(&cfg);
}

/* "443/tcp", "53/udp", "tcp/443", "icmp" (an echo request) */
static int proto_parse(const char *s, struct fw_xpkt *p)
{
	char proto[8] = "", *slash = strchr(s, '/'), *end;
	const char *num = NULL;
	unsigned long port = 0;

	if (!slash) {
		snprintf(proto, sizeof(proto), "%s", s);
	} else if (s[0] >= '0' && s[0] <= '9') {
		num = s;
		snprintf(proto, sizeof(proto), "%s", slash + 1);
	} else {
		snprintf(proto, sizeof(proto), "%.*s", (int)(slash - s), s);
		num = slash + 1;
	}
	if (strcmp(proto, "icmp") == 0 && !num) {
		p->proto = p->family == FW_FAM_V6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
		p->icmp_type = p->family == FW_FAM_V6 ? 128 : 8;
		return 0;
	}
	if (strcmp(proto, "tcp") == 0)
		p->proto = IPPROTO_TCP;
	else if (strcmp(proto, "udp") == 0)
		p->proto = IPPROTO_UDP;
	else
		return -EINVAL;
	if (!num || *num < '0' || *num > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(num, &end, 10);
	if (errno || (*end && *end != '/') || port == 0 || port > 65535)
		return -EINVAL;
	p->has_ports = true;
	p->dport = (__u16)port;
	return 0;
}

static int addr_arg(const char *what, const char *s, struct fw_ip *ip, enum fw_family *fam)
{
	if (fw_addr_parse(s, ip, fam) == 0)
		return 0;
	fprintf(stderr, "fastwall explain: %s '%s' is not an IPv4 or IPv6 address\n", what, s);
	return -EINVAL;
}

/* The cgroup2 mount that holds path: the longest mount point of one
 * that is a prefix of its real path (a test's own mount beside the
 * system's, say). Ids are the same through every mount of the hierarchy. */
static int cgroup_mount_of(const char *path, char *root, size_t len)
{
	char real[PATH_MAX], line[4096];
	size_t best = 0;
	FILE *f;

	if (!realpath(path, real))
		return -errno;
	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char dev[256], dir[PATH_MAX], type[64];
		size_t n;

		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) != 3 ||
		    strcmp(type, "cgroup2") != 0)
			continue;
		n = strlen(dir);
		if (strncmp(real, dir, n) != 0 || (real[n] != '/' && real[n] != '\0' && n != 1))
			continue;
		if (n > best && n < len) {
			best = n;
			snprintf(root, len, "%s", dir);
		}
	}
	fclose(f);
	return best ? 0 : -EXDEV;
}

static void explain_usage(void)
{
	fprintf(stderr, "usage: fastwall explain SRC DST [PORT/PROTO] [--iface IF] [--sport N]\n"
			"       fastwall explain --cgroup PATH DST [PORT/PROTO]\n"
			"  PORT/PROTO: 443/tcp, 53/udp or icmp (the default: an echo request)\n");
}

static void ifname_of(__u32 ifindex, char *out)
{
	if (ifindex == FW_IFINDEX_ANY)
		snprintf(out, IF_NAMESIZE, "any");
	else if (ifindex == FW_IFINDEX_MISSING || !if_indextoname(ifindex, out))
		snprintf(out, IF_NAMESIZE, "missing");
}

static char *lease_names(struct fw_dp *dp, const struct fw_lease_names *ids, json_t *arr)
{
	static char text[1024];
	size_t used = 0;

	text[0] = '\0';
	for (unsigned int i = 0; i < FW_LEASE_NAMES; i++) {
		struct fw_lease_name n;

		if (!ids->ids[i] || bpf_map_lookup_elem(dp->names_fd, &ids->ids[i], &n))
			continue;
		n.text[sizeof(n.text) - 1] = '\0';
		if (arr)
			json_array_append_new(arr, json_string(n.text));
		if (used < sizeof(text))
			used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%s",
						 used ? ", " : "", n.text);
	}
	return text;
}

/* What decided, in words, for the text output and the "decided" field. */
static void decided_text(struct fw_dp *dp, const struct fw_xresult *r, const char *name,
			 const struct rule_src *rs, const char *pfx, char *out, size_t len)
{
	char rule[1024];

	if (rs->known && rs->overlay)
		snprintf(rule, sizeof(rule), "rule %u of the configuration's overlay: %s",
			 rs->index + 1, rs->text);
	else if (rs->known)
		snprintf(rule, sizeof(rule), "rule %u of %s's policy: %s", rs->index + 1, name,
			 rs->text);
	else
		snprintf(rule, sizeof(rule), "rule %u of %s's policy (overlay rules first)",
			 r->entry.rule + 1, name);
	switch (r->step) {
	case FW_XS_V4MAPPED:
		snprintf(out, len, "an IPv6 packet with a v4-mapped address");
		break;
	case FW_XS_NO_SUBJECT:
		snprintf(out, len, "no subject has the source address");
		break;
	case FW_XS_NO_CONFIG:
		snprintf(out, len, "no fastwall_config record (fail closed)");
		break;
	case FW_XS_INTERFACE:
		snprintf(out, len, "the subject's address arrives on another interface");
		break;
	case FW_XS_DNS_REDIRECT:
		snprintf(out, len, "DNS goes to fastwalld's proxy, which answers by %s's policy",
			 name);
		break;
	case FW_XS_STATE:
		snprintf(out, len, "the subject is %s, not active", state_text(r->subject.state));
		break;
	case FW_XS_DOT:
		snprintf(out, len, "port 853 (DNS over TLS) is never allowed");
		break;
	case FW_XS_POD_LOCAL:
		snprintf(out, len, "the destination is the pod's own%s",
			 r->pod_reply_possible
				 ? " (a reply on a flow the pod opened would pass: --sport)"
				 : "");
		break;
	case FW_XS_LOCAL_FULL:
		snprintf(out, len, "the pod's addresses did not all fit the data plane");
		break;
	case FW_XS_SIBLING:
		snprintf(out, len, "the destination is in %s's private CIDR", name);
		break;
	case FW_XS_DOH:
		snprintf(out, len, "TCP 443 to the DNS-over-HTTPS blocklist (or strict mode)");
		break;
	case FW_XS_NO_POLICY:
		snprintf(out, len, "%s has no rule set (fail closed)", name);
		break;
	case FW_XS_PORT_RULE:
	case FW_XS_RULE:
		snprintf(out, len, "%s%s", rule, pfx);
		break;
	case FW_XS_DEFAULT:
		snprintf(out, len, "the default (%s) of %s's policy: no rule covers it",
			 action_text(r->entry.dflt), name);
		break;
	case FW_XS_LEASE: {
		const char *names = lease_names(dp, &r->names, NULL);
		__u64 left = r->lease.expires_ns > r->now_ns ? r->lease.expires_ns - r->now_ns : 0;

		if (r->reason == FW_DROP_LEASE_EXPIRED)
			snprintf(out, len, "a lease learned from DNS%s%s, expired",
				 names[0] ? ": " : "", names);
		else if (r->reason == FW_DROP_LEARNED_PORT)
			snprintf(out, len, "a lease learned from DNS%s%s, for other ports only",
				 names[0] ? ": " : "", names);
		else
			snprintf(out, len, "a lease learned from DNS%s%s, %llus left",
				 names[0] ? ": " : "", names,
				 (unsigned long long)(left / FW_NSEC_PER_SEC));
		break;
	}
	default:
		snprintf(out, len, "?");
	}
}

static const char *l7_kind_text(enum fw_l7_kind k)
{
	return k == FW_L7_TLS ? "tls" : k == FW_L7_HTTP ? "http" : "none";
}

/* Step FW_XS_L7, in words: the policy passed the packet to a pinned port,
 * and what the proxy (or the redirect to it) makes of that. cgroup: a
 * process sandbox's connect, sent to the proxy on loopback. */
/* snprintf for texts that may be cut (a lease's many names) */
static void say(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
}

static void l7_text(struct fw_dp *dp, const struct fw_xresult *r, const struct fw_xpkt *p,
		    const char *name, bool cgroup, char *out, size_t len)
{
	const char *names = r->has_lease ? lease_names(dp, &r->names, NULL) : "";
	const char *what = r->l7_port.kind == FW_L7_HTTP ? "Host of every request"
							 : "ClientHello's server name";
	__u8 gw_flag = p->family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
	char dst[FW_ADDR_STRLEN], gw[FW_ADDR_STRLEN], via[FW_ADDR_STRLEN + 32], by[1280];

	fw_addr_str(&p->dst, dst, sizeof(dst));
	if (r->l7_pass == FW_PASS_LEARNED)
		say(by, sizeof(by), "a lease learned from DNS%s%s", names[0] ? ": " : "", names);
	else
		say(by, sizeof(by), "an allow CIDR (%s pins those too: l7 cidr: pin)", name);
	if (cgroup)
		say(via, sizeof(via), "loopback port %u", ntohs(r->l7_port.proxy_port));
	else
		say(via, sizeof(via), "%s port %u",
		    fw_addr_str(&r->subject.gateway[p->family & 1], gw, sizeof(gw)),
		    ntohs(r->l7_port.proxy_port));
	switch (r->reason) {
	case FW_PASS_L7_PROXY:
		say(out, len,
		    "%s passed it and port %u/tcp is pinned (%s): the connection goes to "
		    "the layer-7 proxy at %s, which connects to %s port %u only if the %s "
		    "is one of the names that taught the address to %s%s%s, with a live "
		    "lease",
		    by, p->dport, l7_kind_text(r->l7_port.kind), via, dst, p->dport, what, name,
		    names[0] ? " (" : "", names[0] ? names : "");
		if (names[0] && strlen(out) + 1 < len)
			strcat(out, ")");
		break;
	case FW_DROP_L7_PROXY_DOWN:
		if (!cgroup && !(r->subject.flags & gw_flag))
			say(out, len,
			    "%s passed it, port %u/tcp is pinned, and %s has no gateway of "
			    "the family to reach the layer-7 proxy (fail closed)",
			    by, p->dport, name);
		else
			say(out, len,
			    "%s passed it, port %u/tcp is pinned, and the layer-7 proxy is "
			    "not accepting connections (fail closed: never past it)",
			    by, p->dport);
		break;
	case FW_DROP_L7_QUIC:
		say(out, len,
		    "%s passed it, but UDP to the pinned TLS port %u is QUIC, which would "
		    "carry the server name past the proxy (l7 quic: deny; clients fall back "
		    "to TCP)",
		    by, p->dport);
		break;
	case FW_DROP_L7_UNTRACKED:
		say(out, len,
		    "a segment of a pinned connection that the proxy's table "
		    "(fastwall_l7_nat) does not hold for source port %u: never to the "
		    "original destination",
		    p->sport);
		break;
	case FW_DROP_L7_PORT_REUSE:
		say(out, len,
		    "source port %u still holds an open pinned connection to %s port %u: "
		    "the proxy could not tell the two apart",
		    p->sport, fw_addr_str(&r->l7_nat.orig_dst, dst, sizeof(dst)),
		    ntohs(r->l7_nat.orig_port));
		break;
	default:
		say(out, len, "layer-7 pinning: %s", fw_reason_name(r->reason));
	}
}

static void packet_text(const struct fw_xpkt *p, char *out, size_t len)
{
	if (p->has_ports)
		snprintf(out, len, "%u/%s", p->dport, p->proto == IPPROTO_TCP ? "tcp" : "udp");
	else
		snprintf(out, len, "icmp");
}

int fw_cli_explain(struct fw_dp *dp, const struct fw_explain_args *a)
{
	struct fw_xpkt p = {.ifindex = FW_IFINDEX_ANY};
	struct fw_xresult r;
	struct fw_subject cs;
	struct fw_subject_meta meta;
	struct rule_src rs = {};
	enum fw_family fam = FW_FAM_V4, sfam;
	char name[FW_NAME_LEN + 8], ifname[IF_NAMESIZE], decided[1536], pfx[96] = "", pkt[32];
	char sbuf[FW_ADDR_STRLEN], dbuf[FW_ADDR_STRLEN], pbuf[FW_ADDR_STRLEN];
	int n = a->cgroup ? 1 : 2, err;
	bool drops;

	if (a->argc < n || a->argc > n + 1) {
		explain_usage();
		return FW_EXIT_USAGE;
	}
	if (a->cgroup && (a->iface || a->sport)) {
		fprintf(stderr, "fastwall explain: --iface and --sport are for addressed subjects, "
				"not --cgroup\n");
		return FW_EXIT_USAGE;
	}
	if (!a->cgroup && addr_arg("SRC", a->argv[0], &p.src, &sfam))
		return FW_EXIT_USAGE;
	if (addr_arg("DST", a->argv[n - 1], &p.dst, &fam))
		return FW_EXIT_USAGE;
	if (!a->cgroup && sfam != fam) {
		fprintf(stderr, "fastwall explain: SRC and DST are of different families\n");
		return FW_EXIT_USAGE;
	}
	p.family = (__u8)fam;
	if (proto_parse(a->argc > n ? a->argv[n] : "icmp", &p)) {
		fprintf(stderr,
			"fastwall explain: '%s' is not PORT/PROTO (443/tcp, 53/udp, icmp)\n",
			a->argv[n]);
		return FW_EXIT_USAGE;
	}
	if (a->iface) {
		p.ifindex = if_nametoindex(a->iface);
		if (!p.ifindex) {
			fprintf(stderr, "fastwall explain: no interface %s\n", a->iface);
			return FW_EXIT_USAGE;
		}
	}
	if (a->sport) {
		char *end;
		unsigned long v = strtoul(a->sport, &end, 10);

		if (!*a->sport || *end || v == 0 || v > 65535 || !p.has_ports) {
			fprintf(stderr, "fastwall explain: --sport needs a port 1-65535 and "
					"PORT/PROTO of TCP or UDP\n");
			return FW_EXIT_USAGE;
		}
		p.sport = (__u16)v;
	}

	if (a->cgroup) {
		char root[PATH_MAX];

		err = cgroup_mount_of(a->cgroup, root, sizeof(root));
		if (!err)
			err = fw_explain_cgroup_subject(dp, root, a->cgroup, &cs);
		if (err == -ENOENT) {
			/* the programs pass such processes untouched */
			if (a->json) {
				json_t *o = json_pack("{s:s,s:n,s:s,s:n}", "verdict", "pass",
						      "reason", "step", "no-sandbox", "subject");
				json_dumpf(o, stdout, JSON_INDENT(2));
				printf("\n");
				json_decref(o);
			} else {
				printf("verdict:  pass (no process sandbox: %s is in none)\n",
				       a->cgroup);
			}
			return FW_EXIT_OK;
		}
		if (err) {
			fprintf(stderr, "fastwall explain: cgroup %s: %s\n", a->cgroup,
				strerror(-err));
			return FW_EXIT_USAGE;
		}
		err = fw_explain_cgroup(dp, &cs, &p, fw_now_ns(), &r);
	} else {
		err = fw_explain_tc(dp, &p, fw_now_ns(), &r);
	}
	if (err) {
		fprintf(stderr, "fastwall explain: %s\n", strerror(-err));
		return FW_EXIT_FAILURE;
	}

	memset(&meta, 0, sizeof(meta));
	if (r.has_subject && bpf_map_lookup_elem(dp->meta_fd, &r.subject.id, &meta) == 0)
		snprintf(name, sizeof(name), "%s", meta.name);
	else
		snprintf(name, sizeof(name), "#%u", r.has_subject ? r.subject.id : 0);
	if (r.has_entry && r.entry.rule != FW_RULE_DEFAULT &&
	    (r.step == FW_XS_RULE || r.step == FW_XS_PORT_RULE))
		rule_lookup(a->config, &meta, r.entry.rule, &rs);
	if (r.has_prefix && r.step == FW_XS_PORT_RULE)
		snprintf(pfx, sizeof(pfx), " (port %u of entry %s)", p.dport,
			 fw_prefix_str(&r.prefix, r.prefix_len, pbuf, sizeof(pbuf)));
	else if (r.has_prefix)
		snprintf(pfx, sizeof(pfx), " (entry %s)",
			 fw_prefix_str(&r.prefix, r.prefix_len, pbuf, sizeof(pbuf)));
	if (r.step == FW_XS_L7)
		l7_text(dp, &r, &p, name, a->cgroup != NULL, decided, sizeof(decided));
	else
		decided_text(dp, &r, name, &rs, pfx, decided, sizeof(decided));
	drops = fw_reason_drops(r.reason);
	ifname_of(r.has_subject ? r.subject.ifindex : FW_IFINDEX_ANY, ifname);
	packet_text(&p, pkt, sizeof(pkt));
	fw_addr_str(&p.dst, dbuf, sizeof(dbuf));
	fw_addr_str(&p.src, sbuf, sizeof(sbuf));

	if (a->json) {
		json_t *o = json_object(), *names = json_array();

		json_object_set_new(o, "verdict", json_string(drops ? "drop" : "pass"));
		json_object_set_new(o, "reason", json_string(fw_reason_name(r.reason)));
		json_object_set_new(o, "reason_number", json_integer(r.reason));
		json_object_set_new(o, "meaning", json_string(fw_reason_meaning(r.reason)));
		json_object_set_new(o, "step", json_string(fw_xstep_name(r.step)));
		json_object_set_new(o, "decided", json_string(decided));
		json_object_set_new(o, "packet",
				    json_pack("{s:s?,s:s,s:s,s:s?}", "src", a->cgroup ? NULL : sbuf,
					      "dst", dbuf, "proto", pkt, "cgroup", a->cgroup));
		if (r.has_subject)
			json_object_set_new(o, "subject",
					    json_pack("{s:i,s:s,s:s,s:s}", "id", r.subject.id,
						      "name", name, "state",
						      state_text(r.subject.state), "interface",
						      meta.ifname[0] ? meta.ifname : ifname));
		else
			json_object_set_new(o, "subject", json_null());
		if (rs.known || ((r.step == FW_XS_RULE || r.step == FW_XS_PORT_RULE) &&
				 r.entry.rule != FW_RULE_DEFAULT))
			json_object_set_new(o, "rule",
					    json_pack("{s:i,s:i,s:s?,s:s,s:i}", "number",
						      (rs.known ? rs.index : r.entry.rule) + 1,
						      "index", rs.known ? rs.index : r.entry.rule,
						      "text", rs.known ? rs.text : NULL, "list",
						      rs.overlay ? "overlay" : "policy",
						      "compiled_index", r.entry.rule));
		else
			json_object_set_new(o, "rule", json_null());
		json_object_set_new(o, "entry",
				    r.has_prefix
					    ? json_string(fw_prefix_str(&r.prefix, r.prefix_len,
									pbuf, sizeof(pbuf)))
					    : json_null());
		json_object_set_new(o, "default",
				    r.has_entry ? json_string(action_text(r.entry.dflt))
						: json_null());
		if (r.has_lease) {
			lease_names(dp, &r.names, names);
			json_object_set_new(
				o, "lease",
				json_pack("{s:I,s:b,s:o}", "expires_in_s",
					  (json_int_t)(r.lease.expires_ns > r.now_ns
							       ? (r.lease.expires_ns - r.now_ns) /
									 FW_NSEC_PER_SEC
							       : 0),
					  "expired", r.lease.expires_ns <= r.now_ns, "names",
					  names));
		} else {
			json_decref(names);
			json_object_set_new(o, "lease", json_null());
		}
		if (r.step == FW_XS_L7)
			json_object_set_new(o, "l7",
					    json_pack("{s:s,s:i,s:s}", "kind",
						      l7_kind_text(r.l7_port.kind), "proxy_port",
						      ntohs(r.l7_port.proxy_port), "pinned_by",
						      fw_reason_name(r.l7_pass)));
		else
			json_object_set_new(o, "l7", json_null());
		json_dumpf(o, stdout, JSON_INDENT(2));
		printf("\n");
		json_decref(o);
	} else {
		printf("packet:   %s%s -> %s %s\n", a->cgroup ? "cgroup " : "",
		       a->cgroup ? a->cgroup : sbuf, dbuf, pkt);
		printf("verdict:  %s %s (%s)\n", drops ? "drop" : "pass", fw_reason_name(r.reason),
		       fw_reason_meaning(r.reason));
		if (r.has_subject)
			printf("subject:  %s (id %u, %s, interface %s)\n", name, r.subject.id,
			       state_text(r.subject.state), meta.ifname[0] ? meta.ifname : ifname);
		else
			printf("subject:  none\n");
		printf("decided:  %s\n", decided);
	}
	return drops ? FW_EXIT_DROP : FW_EXIT_OK;
}
