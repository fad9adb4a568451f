// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld: loads and pins the data plane, attaches it to every
 * sandbox-facing interface (including ports that appear later), programs
 * the static subjects of its YAML config, reloads them on SIGHUP, runs the
 * DNS proxy (its own worker threads) and the lease refresh, and reports
 * deny events. One event loop thread (common/loop.h) besides the proxy's,
 * the HTTP server's and the metrics listener's (metrics.h): signals, link
 * events and the deny-event ring are its watches; the actions tick, the
 * reaper and the lease refresh round are its timers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "common/addr.h"
#include "protocol/actions.h"
#include "config/config.h"
#include "datapath/datapath.h"
#include "datapath/guard.h"
#include "dns/proxy.h"
#include "common/hash.h"
#include "http.h"
#include "procs.h"
#include "common/ifset.h"
#include "dns/learn.h"
#include "datapath/l2bind.h"
#include "datapath/links.h"
#include "datapath/attach.h"
#include "datapath/reasons.h"
#include "datapath/rules.h"
#include "datapath/scan.h"
#include "common/log.h"
#include "common/exitcodes.h"
#include "common/loop.h"
#include "common/secmem.h"
#include "metrics.h"
#include "monitor.h"
#include "subjects/registry.h"
#include "fastwall/version.h"

#define FW_DEFAULT_CONFIG "/etc/fastwall/fastwalld.yaml"

struct fw_daemon {
	const char *config_path;
	struct fw_cfg cfg;
	struct fw_dp *dp;
	struct fw_guard *guard; /* loaded when a guard section was seen */
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
	__u64 last_refresh_ns;
	int link_fd;
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
	bool local_full;	/* they did not fit: FW_CF_LOCAL_FULL is set */
	struct fw_config kcfg;	/* what apply_datapath wrote last */
	__u64 l2_reserved_hash; /* of the pod addresses last reserved */
};

/* An interface is sandbox-facing when its name matches a configured glob
 * or it is a port of a configured bridge. */
static bool wanted_link(const struct fw_cfg *cfg, const struct fw_link *l)
{
	char master[IF_NAMESIZE];

	for (size_t i = 0; i < cfg->ninterfaces; i++)
		if (fnmatch(cfg->interfaces[i], l->name, 0) == 0)
			return true;
	if (l->master <= 0 || !cfg->nbridges || !if_indextoname(l->master, master))
		return false;
	for (size_t i = 0; i < cfg->nbridges; i++)
		if (strcmp(cfg->bridges[i], master) == 0)
			return true;
	return false;
}

/* The port's link-layer binding, before the first frame can pass: the
 * `mac` a static subject gives its interface, else a veth's peer MAC as
 * the link says it, else (a tap, the peer unreadable) the first MAC the
 * port sends from. Run again for attached ports on every link event and
 * reload: a binding that did not change is kept as it is. */
static void l2_bind(struct fw_daemon *d, const struct fw_link *l)
{
	static const unsigned char none[6];
	const char *how = "to its veth peer's MAC";
	unsigned char peer[6];
	bool have_peer = false;
	int err;

	for (size_t i = 0; i < d->cfg.nsubjects && !have_peer; i++) {
		const struct fw_subject_spec *s = &d->cfg.subjects[i];

		if (s->has_mac && !strcmp(s->ifname, l->name)) {
			memcpy(peer, s->mac, sizeof(peer));
			have_peer = true;
			how = "to its configured MAC";
		}
	}
	if (!have_peer)
		have_peer = fw_links_peer_addr(l, peer) == 0;

	err = fw_l2_bind(d->dp, l->ifindex, l->has_addr ? l->addr : none, have_peer ? peer : NULL);
	if (err && have_peer)
		err = fw_l2_bind(d->dp, l->ifindex, l->has_addr ? l->addr : none, NULL);
	if (err)
		fw_warn("no link-layer binding for %s (ifindex %d): its first frame binds it: %s",
			l->name, l->ifindex, strerror(-err));
	else
		fw_debug("%s (ifindex %d) bound %s", l->name, l->ifindex,
			 have_peer ? how : "on first sight");
}

static bool guard_listed(const struct fw_cfg *cfg, const char *name);

/* A guarded uplink that appears again (re-created, or renamed into the
 * list) gets the guard at once: nothing else would put it back. */
static void guard_link(struct fw_daemon *d, const struct fw_link *l)
{
	enum fw_guard_mode used;

	if (!d->guard || !guard_listed(&d->cfg, l->name) ||
	    fw_guard_attached(l->ifindex) != FW_GUARD_NONE)
		return;
	if (fw_guard_attach(d->guard, l->ifindex, d->cfg.guard_mode, &used) == 0)
		fw_info("guard on %s (%s): %zu ports, %zu trusted prefixes", l->name,
			fw_guard_mode_name(used), d->cfg.nguard_ports, d->cfg.nguard_trusted);
}

static void on_link(void *ctx, const struct fw_link *l)
{
	struct fw_daemon *d = ctx;

	if (l->removed) {
		if (fw_ifset_has(&d->attached, l->ifindex))
			fw_info("interface %s (ifindex %d) is gone", l->name, l->ifindex);
		fw_ifset_del(&d->attached, l->ifindex);
		/* the next link with this ifindex binds afresh */
		fw_l2_forget(d->dp, l->ifindex);
		/* its addresses went with it (the kernel says so too) */
		for (size_t i = 0; i < d->npod_addrs;) {
			if (d->pod_addrs[i].ifindex == l->ifindex) {
				d->pod_addrs[i] = d->pod_addrs[--d->npod_addrs];
				d->pod_addrs_dirty = true;
			} else {
				i++;
			}
		}
		return;
	}
	guard_link(d, l);
	if (!wanted_link(&d->cfg, l))
		return;
	l2_bind(d, l);
	if (fw_ifset_has(&d->attached, l->ifindex))
		return;
	if (fw_dp_attach(d->dp, l->ifindex) == 0) {
		int err = fw_ifset_add(&d->attached, l->ifindex);

		/* without memory it is attached again (harmless) next time */
		if (err)
			fw_warn("can't remember ifindex %d: %s", l->ifindex, strerror(-err));
		fw_info("attached to %s (ifindex %d)", l->name, l->ifindex);
	}
}

/* Loopback (127.0.0.0/8, ::1) and link-local (fe80::/10) destinations are
 * pod-local in the data plane by prefix (fw_is_pod_local): no need to
 * spend entries on them. */
static bool pod_local_by_prefix(const struct fw_ip *a)
{
	static const struct fw_ip lo6 = {.b = {[15] = 1}};

	if (fw_addr_family(a) == FW_FAM_V4)
		return (ntohl(FW_IP_W(a)[3]) >> 24) == 127;
	return memcmp(a, &lo6, sizeof(lo6)) == 0 ||
	       (ntohl(FW_IP_W(a)[0]) & 0xffc00000) == 0xfe800000;
}

static void on_addr(void *ctx, const struct fw_ifaddr *a)
{
	struct fw_daemon *d = ctx;
	char text[FW_ADDR_STRLEN];
	size_t i;

	if (pod_local_by_prefix(&a->addr))
		return;
	for (i = 0; i < d->npod_addrs; i++)
		if (d->pod_addrs[i].ifindex == a->ifindex &&
		    !memcmp(&d->pod_addrs[i].addr, &a->addr, sizeof(a->addr)))
			break;
	if (a->removed) {
		if (i == d->npod_addrs)
			return;
		d->pod_addrs[i] = d->pod_addrs[--d->npod_addrs];
		d->pod_addrs_dirty = true;
		fw_info("pod address %s (ifindex %d) is gone",
			fw_addr_str(&a->addr, text, sizeof(text)), a->ifindex);
		return;
	}
	if (i < d->npod_addrs) {
		/* the same address again: its broadcast may have changed */
		d->pod_addrs[i] = *a;
		d->pod_addrs_dirty = true;
		return;
	}
	if (d->npod_addrs == d->pod_addrs_cap) {
		size_t cap = d->pod_addrs_cap ? d->pod_addrs_cap * 2 : 16;
		struct fw_ifaddr *v = realloc(d->pod_addrs, cap * sizeof(*v));

		if (!v) {
			/* fail closed: as if the set were full */
			fw_err("can't hold pod address %s: %s",
			       fw_addr_str(&a->addr, text, sizeof(text)), strerror(ENOMEM));
			d->pod_addrs_lost = true;
			d->pod_addrs_dirty = true;
			return;
		}
		d->pod_addrs = v;
		d->pod_addrs_cap = cap;
	}
	d->pod_addrs[d->npod_addrs++] = *a;
	d->pod_addrs_dirty = true;
	/* a listing logs its count instead: it repeats what is known */
	fw_log(d->pod_addrs_listing ? FW_LOG_DEBUG : FW_LOG_INFO,
	       "pod address %s (ifindex %d) is pod-local",
	       fw_addr_str(&a->addr, text, sizeof(text)), a->ifindex);
}

/* Lists the namespace's addresses again, from scratch. */
static int pod_addrs_dump(struct fw_daemon *d)
{
	int err;

	d->npod_addrs = 0;
	d->pod_addrs_lost = false;
	d->pod_addrs_dirty = true;
	d->pod_addrs_listing = true;
	err = fw_addrs_dump(on_addr, d);
	d->pod_addrs_listing = false;
	if (err) {
		/* fail closed: some may be missing */
		fw_err("can't list the pod's addresses: %s", strerror(-err));
		d->pod_addrs_lost = true;
	} else {
		fw_info("%zu pod addresses are pod-local", d->npod_addrs);
	}
	return err;
}

/* Writes fastwall_local: the configured addresses, then the pod's own.
 * *full says whether they all fit; the configured ones go first so that
 * what an operator named is protected in any case. */
static int local_write(struct fw_daemon *d, const struct fw_cfg *cfg, bool *full)
{
	struct fw_ip *all;
	size_t n = 0;
	int err;

	all = calloc(cfg->nlocal + 4 * d->npod_addrs + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->nlocal; i++)
		all[n++] = cfg->local[i];
	for (size_t i = 0; i < d->npod_addrs; i++) {
		const struct fw_ifaddr *a = &d->pod_addrs[i];
		struct fw_ip cand[4];
		size_t nc = 0;

		cand[nc++] = a->addr;
		if (a->has_brd)
			cand[nc++] = a->brd;
		if (fw_addr_family(&a->addr) == FW_FAM_V4 && a->plen <= 30) {
			/* the kernel routes the subnet's broadcast address to
			 * itself whether or not the address was given one, and
			 * older kernels the network address too */
			cand[nc] = a->addr;
			FW_IP_W(&cand[nc++])[3] |= htonl(~0u >> a->plen);
			cand[nc] = a->addr;
			FW_IP_W(&cand[nc++])[3] &= htonl(a->plen ? ~0u << (32 - a->plen) : 0);
		} else if (fw_addr_family(&a->addr) == FW_FAM_V6 && a->plen <= 126) {
			/* a forwarding node answers the subnet-router anycast
			 * address (the prefix, host bits zero) itself */
			cand[nc] = a->addr;
			for (unsigned int b = a->plen; b < 128; b++)
				cand[nc].b[b / 8] &= (__u8) ~(0x80u >> (b % 8));
			nc++;
		}
		for (size_t c = 0; c < nc; c++) {
			size_t j;

			for (j = 0; j < n && memcmp(&all[j], &cand[c], sizeof(*all)); j++)
				;
			if (j == n)
				all[n++] = cand[c];
		}
	}
	*full = n > FW_MAX_LOCAL || d->pod_addrs_lost;
	if (*full)
		n = FW_MAX_LOCAL;
	err = fw_dp_local_set(d->dp, all, n, cfg->local_ports, cfg->nlocal_ports);
	free(all);
	return err;
}

/* After address events: fastwall_local follows, and when the addresses
 * stop (or start) fitting, the data plane fails closed (or recovers). */
static void local_sync(struct fw_daemon *d)
{
	bool full = false;
	int err;

	if (!d->pod_addrs_dirty)
		return;
	d->pod_addrs_dirty = false;
	err = local_write(d, &d->cfg, &full);
	if (err) {
		/* a new address may be missing: fail closed until the next
		 * change writes them all */
		fw_err("can't update the pod-local addresses: %s", strerror(-err));
		d->pod_addrs_dirty = true;
		full = true;
	}
	if (full == d->local_full)
		return;
	d->local_full = full;
	if (full) {
		d->kcfg.flags |= FW_CF_LOCAL_FULL;
		fw_err("the pod-local addresses are incomplete (more than %d, or an update "
		       "failed): every other destination drops as pod-local until they fit",
		       FW_MAX_LOCAL);
	} else {
		d->kcfg.flags &= ~FW_CF_LOCAL_FULL;
		fw_info("the pod-local addresses fit again");
	}
	err = fw_dp_config_set(d->dp, &d->kcfg);
	if (err)
		fw_err("can't write the datapath settings: %s", strerror(-err));
}

static int cmp_mac(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct fw_mac));
}

static int cmp_ip(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct fw_ip));
}

/* The pod's own MACs and IPv6 addresses (every interface in this
 * namespace: bridges, uplinks, the host side of ports): no port may claim
 * them, and ND to them is the pod's own. */
static void l2_reserve(struct fw_daemon *d)
{
	struct fw_recs macs = {.size = sizeof(struct fw_mac)};
	struct fw_recs lls = {.size = sizeof(struct fw_ip)};
	struct ifaddrs *ifa, *i;
	int err = 0;

	if (getifaddrs(&ifa)) {
		fw_err("can't list the pod's addresses: %s", strerror(errno));
		return;
	}
	for (i = ifa; i && !err; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_PACKET) {
			const struct sockaddr_ll *sll = (const struct sockaddr_ll *)i->ifa_addr;
			struct fw_mac m = {};
			static const unsigned char zero[6];

			if (sll->sll_halen != 6 || !memcmp(sll->sll_addr, zero, 6))
				continue;
			memcpy(m.b, sll->sll_addr, 6);
			err = fw_recs_push(&macs, &m);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)i->ifa_addr;
			struct fw_ip ip;

			if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
			    IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
				continue;
			memcpy(ip.b, &sin6->sin6_addr, 16);
			err = fw_recs_push(&lls, &ip);
		}
	}
	freeifaddrs(ifa);
	if (!err) {
		/* every link and address event lands here (a sandbox flapping
		 * its link, too): write only when the set changed */
		__u64 h = FW_FNV_BASIS;

		if (macs.n)
			qsort(macs.data, macs.n, macs.size, cmp_mac);
		if (lls.n)
			qsort(lls.data, lls.n, lls.size, cmp_ip);
		h = fw_fnv(h, &macs.n, sizeof(macs.n));
		h = fw_fnv(h, macs.data, macs.n * macs.size);
		h = fw_fnv(h, lls.data, lls.n * lls.size);
		if (h != d->l2_reserved_hash) {
			err = fw_l2_reserve(d->dp, (const struct fw_mac *)macs.data, macs.n,
					    (const struct fw_ip *)lls.data, lls.n);
			d->l2_reserved_hash = err ? 0 : h;
		}
	}
	if (err)
		fw_err("can't reserve the pod's MACs and IPv6 addresses: %s", strerror(-err));
	free(macs.data);
	free(lls.data);
}

static bool l2_live(int ifindex, const void *ctx)
{
	(void)ctx;
	return fw_dp_attached(ifindex);
}

/* The interfaces attached to, for /readyz (which checks the programs are
 * still there). */
static void attached_publish(struct fw_daemon *d)
{
	if (fw_metrics_set_attached(d->metrics, d->attached.v, d->attached.n))
		fw_warn("metrics: can't record the %zu attached interfaces", d->attached.n);
}

static int attach_all(struct fw_daemon *d)
{
	int err;

	/* reserved before any port binds: a port can't take the pod's */
	l2_reserve(d);
	err = fw_links_dump(on_link, d);
	if (err)
		fw_err("can't list interfaces: %s", strerror(-err));
	else
		fw_l2_prune(d->dp, l2_live, NULL); /* ports that went while we were down */
	fw_reg_links_changed(&d->reg);
	attached_publish(d);
	return err;
}

static const char *proto_name(__u8 proto)
{
	switch (proto) {
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	}
	return "ip";
}

static struct fw_monitor *monitor_of(const struct fw_daemon *d)
{
	return __atomic_load_n(&d->monitor, __ATOMIC_ACQUIRE);
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* A deny (audit trail, monitor) or a sampled allow (monitor) from the
 * data path's ring. */
static int on_event(void *ctx, void *data, size_t len)
{
	struct fw_daemon *d = ctx;
	const struct fw_event *ev = data;
	char src[FW_ADDR_STRLEN], dst[FW_ADDR_STRLEN], ifname[IF_NAMESIZE] = "?";
	char name[FW_NAME_LEN], sport[8], dport[8];
	struct fw_monitor *m = monitor_of(d);
	enum fw_mon_kind kind;

	if (len < sizeof(*ev) || (ev->type != FW_EVENT_DROP && ev->type != FW_EVENT_ALLOW))
		return 0;
	kind = ev->type == FW_EVENT_DROP ? FW_MON_DROP : FW_MON_ALLOW;
	if (ev->suppressed)
		__atomic_store_n(&d->events_suppressed, d->events_suppressed + ev->suppressed,
				 __ATOMIC_RELAXED);
	if (kind == FW_MON_ALLOW && !fw_monitor_wants(m, kind))
		return 0;
	fw_reg_name_of(&d->reg, ev->subject, name, sizeof(name));
	if_indextoname(ev->ifindex, ifname);
	if (fw_monitor_wants(m, kind)) {
		struct fw_mon_event me = {
			.kind = kind,
			.time_ns = realtime_ns(),
			.subject = ev->subject,
			.name = name,
			.reason = fw_reason_name(ev->reason),
			.src = ev->src,
			.dst = ev->dst,
			.sport = ntohs(ev->sport),
			.dport = ntohs(ev->dport),
			.proto = ev->proto,
			.ifname = ifname,
			.suppressed = ev->suppressed,
			.sample = d->kcfg.allow_sample ? d->kcfg.allow_sample : 1,
		};

		fw_monitor_publish(m, &me);
	}
	if (kind != FW_MON_DROP)
		return 0;
	fw_addr_str(&ev->src, src, sizeof(src));
	fw_addr_str(&ev->dst, dst, sizeof(dst));
	snprintf(sport, sizeof(sport), "%u", ntohs(ev->sport));
	snprintf(dport, sizeof(dport), "%u", ntohs(ev->dport));
	fw_audit("deny", (const char *[]){"subject", name, "reason", fw_reason_name(ev->reason),
					  "proto", proto_name(ev->proto), "src", src, "sport",
					  sport, "dst", dst, "dport", dport, "if", ifname, NULL});
	if (ev->suppressed)
		fw_info("events of subject=%s suppressed by rate limit: %llu", name[0] ? name : "-",
			(unsigned long long)ev->suppressed);
	return 0;
}

static const char *qtype_name(__u16 qtype, char *buf, size_t len)
{
	switch (qtype) {
	case FW_DNS_TYPE_A:
		return "A";
	case FW_DNS_TYPE_AAAA:
		return "AAAA";
	case FW_DNS_TYPE_CNAME:
		return "CNAME";
	}
	snprintf(buf, len, "TYPE%u", qtype);
	return buf;
}

/* A denied query, in the audit trail like the data plane's denies. */
static void on_dns_event(void *ctx, const struct fw_learn_event *ev)
{
	char client[FW_ADDR_STRLEN], type[16], reason[64];
	const char *who = ev->name && ev->name[0] ? ev->name : "-";

	(void)ctx;
	fw_addr_str(ev->client, client, sizeof(client));
	snprintf(reason, sizeof(reason), "dns-%s", ev->reason);
	fw_audit("deny",
		 (const char *[]){"subject", who, "reason", reason, "name",
				  ev->qname[0] ? ev->qname : ".", "type",
				  qtype_name(ev->qtype, type, sizeof(type)), "src", client, NULL});
	if (ev->suppressed)
		fw_info("events of subject=%s suppressed by rate limit: %llu", who,
			(unsigned long long)ev->suppressed);
}

static bool dns_monitor_wants(void *ctx)
{
	return fw_monitor_wants(monitor_of(ctx), FW_MON_DNS);
}

/* Every DNS decision, for the monitor (from the proxy's threads). */
static void on_dns_monitor(void *ctx, const struct fw_learn_event *ev)
{
	struct fw_mon_event me = {
		.kind = FW_MON_DNS,
		.time_ns = realtime_ns(),
		.subject = ev->subject,
		.name = ev->name,
		.src = *ev->client,
		.qname = ev->qname,
		.qtype = ev->qtype,
		.allowed = ev->allowed,
		.rcode = ev->rcode,
	};
	char reason[64];

	snprintf(reason, sizeof(reason), "dns-%s", ev->reason);
	me.reason = reason;
	for (__u32 i = 0; i < ev->nlearned && i < FW_MON_MAX_LEARNED; i++)
		me.learned[me.nlearned++] = ev->learned[i].ip;
	fw_monitor_publish(monitor_of(ctx), &me);
}

/* A subject's change in the kernel, in the audit trail. */
static void on_subject_change(void *ctx, const struct fw_reg_change *c)
{
	char old_id[12], id[12], hex[5][20];
	const __u64 v[5] = {c->fence_hash, c->old_policy, c->policy, c->old_domains, c->domains};
	const char *h[5];

	(void)ctx;
	snprintf(old_id, sizeof(old_id), "%u", c->old_id);
	snprintf(id, sizeof(id), "%u", c->id);
	for (int i = 0; i < 5; i++) {
		snprintf(hex[i], sizeof(hex[i]), "%016llx", (unsigned long long)v[i]);
		h[i] = v[i] ? hex[i] : "-";
	}
	fw_audit("subject", (const char *[]){"uid",
					     c->name,
					     "change",
					     c->what,
					     "old_id",
					     old_id,
					     "id",
					     id,
					     "fence",
					     h[0],
					     "old_policy",
					     h[1],
					     "policy",
					     h[2],
					     "old_domains",
					     h[3],
					     "domains",
					     h[4],
					     "state",
					     c->state == FW_STATE_DENYING ? "denying" : "active",
					     "origin",
					     c->origin == FW_ORIGIN_STATIC    ? "static"
					     : c->origin == FW_ORIGIN_ACTIONS ? "protocol"
									      : "process",
					     NULL});
}

/* log_format and the audit destination, on start and reload: a
 * destination that can't be opened keeps the previous one. */
static void apply_logging(struct fw_daemon *d, const struct fw_cfg *cfg)
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
static void cfg_warnings(const struct fw_cfg *cfg, FILE *out)
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

static void learn_config(const struct fw_cfg *cfg, struct fw_learn_config *lc)
{
	*lc = cfg->learn; /* the learner's keys, its own defaults for the rest */
	lc->event_burst = cfg->event_burst;
	lc->event_interval_ns = cfg->event_rate ? 1000000000ull / cfg->event_rate : 0;
}

/* The configured upstreams, else resolv.conf's. */
static int upstreams_of(const struct fw_cfg *cfg, struct fw_dnsp_upstream *u, size_t *n)
{
	char text[FW_ADDR_STRLEN];
	int err;

	*n = 0;
	for (size_t i = 0; i < cfg->dns_nupstreams && i < FW_DNSP_MAX_UPSTREAMS; i++) {
		const struct fw_cfg_upstream *c = &cfg->dns_upstreams[i];
		struct fw_dnsp_upstream *o = &u[(*n)++];

		memset(o, 0, sizeof(*o));
		if (fw_addr_family(&c->ip) == FW_FAM_V4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;

			sin->sin_family = AF_INET;
			sin->sin_port = htons(c->port);
			memcpy(&sin->sin_addr, &c->ip.b[12], 4);
			o->len = sizeof(*sin);
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->addr;

			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons(c->port);
			memcpy(&sin6->sin6_addr, c->ip.b, 16);
			o->len = sizeof(*sin6);
		}
	}
	if (*n)
		return 0;
	err = fw_dnsp_upstreams_from_resolv(cfg->dns_resolv_conf, u, FW_DNSP_MAX_UPSTREAMS, n);
	if (err) {
		fw_warn("dns: no upstreams configured and none in %s: every allowed query gets "
			"SERVFAIL",
			cfg->dns_resolv_conf);
		*n = 0;
		return 0;
	}
	for (size_t i = 0; i < *n; i++) {
		fw_dnsp_upstream_str(&u[i], text, sizeof(text));
		fw_debug("dns: upstream %s from %s", text, cfg->dns_resolv_conf);
	}
	return 0;
}

static int dns_start(struct fw_daemon *d)
{
	struct fw_dnsp_config pc;
	struct fw_dnsp_hooks hooks = {
		.ctx = d->learn,
		.decide = fw_learn_decide,
		.learn = fw_learn_answer,
	};
	int err;

	pc = d->cfg.dnsp; /* the proxy's keys, its own defaults for the rest */
	pc.ipv6 = true;
	pc.ttl_cap = d->cfg.learn.lease_max_s;
	upstreams_of(&d->cfg, pc.upstreams, &pc.nupstreams);
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

/* Writes the global datapath settings of cfg to the kernel. */
static int apply_datapath(struct fw_daemon *d, const struct fw_cfg *cfg)
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
	k.event_interval_ns = cfg->event_rate ? 1000000000ull / cfg->event_rate : 0;
	k.pod_flow_timeout_ns = cfg->pod_flow_timeout_ns;
	k.frag_timeout_ns = cfg->frag_timeout_ns;
	k.conn_quota = cfg->max_conns_per_subject;
	if (cfg->monitor_allow_sample) {
		k.flags |= FW_CF_ALLOW_SAMPLE;
		k.allow_sample = (__u16)cfg->monitor_allow_sample;
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
static int guard_check(const struct fw_cfg *cfg, char *msg, size_t len)
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

static bool guard_listed(const struct fw_cfg *cfg, const char *name)
{
	for (size_t i = 0; cfg->guard_enabled && i < cfg->nguard_interfaces; i++)
		if (!strcmp(cfg->guard_interfaces[i], name))
			return true;
	return false;
}

/* Programs and attaches the guard of cfg; was is the configuration that
 * ran before (NULL at start): interfaces it guarded and cfg does not are
 * released last. */
static int guard_apply(struct fw_daemon *d, const struct fw_cfg *cfg, const struct fw_cfg *was)
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

static void reload(struct fw_daemon *d)
{
	char err[FW_CFG_ERR_LEN];
	struct fw_cfg next;
	int ret;

	fw_cfg_init(&next);
	if (fw_cfg_load_file(d->config_path, &next, err, sizeof(err))) {
		fw_err("reload rejected, running configuration unchanged: %s", err);
		return;
	}
	if (guard_check(&next, err, sizeof(err))) {
		fw_err("reload rejected, running configuration unchanged: %s", err);
		fw_cfg_free(&next);
		return;
	}
	cfg_warnings(&next, NULL);
	if (next.actions_enabled != d->cfg.actions_enabled ||
	    strcmp(next.actions_listen, d->cfg.actions_listen) != 0)
		fw_warn("the actions section changes only on restart");
	if (strcmp(next.metrics_listen, d->cfg.metrics_listen) != 0)
		fw_warn("metrics.listen changes only on restart; keeping '%s'",
			d->cfg.metrics_listen);
	snprintf(next.metrics_listen, sizeof(next.metrics_listen), "%s", d->cfg.metrics_listen);
	if (next.metrics_per_subject != d->cfg.metrics_per_subject)
		fw_warn("metrics.per_subject changes only on restart");
	next.metrics_per_subject = d->cfg.metrics_per_subject;
	if (strcmp(next.bpffs, d->cfg.bpffs) != 0)
		fw_warn("datapath.bpffs changes only on restart; keeping %s", d->cfg.bpffs);
	snprintf(next.bpffs, sizeof(next.bpffs), "%s", d->cfg.bpffs);
	if (next.dns_proxy != d->cfg.dns_proxy || next.dnsp.port != d->cfg.dnsp.port ||
	    next.dnsp.workers != d->cfg.dnsp.workers ||
	    next.dnsp.max_tcp_clients != d->cfg.dnsp.max_tcp_clients ||
	    next.dnsp.max_tcp_per_client != d->cfg.dnsp.max_tcp_per_client ||
	    next.dnsp.tcp_idle_ns != d->cfg.dnsp.tcp_idle_ns ||
	    next.dnsp.case_randomize != d->cfg.dnsp.case_randomize)
		fw_warn("dns.proxy, port, workers, case_randomize and the TCP client limits change "
			"only on restart");
	next.dns_proxy = d->cfg.dns_proxy;
	next.dnsp.port = d->cfg.dnsp.port;
	/* what runs is what the next reload compares with */
	next.dnsp.max_tcp_per_client = d->cfg.dnsp.max_tcp_per_client;
	next.dnsp.tcp_idle_ns = d->cfg.dnsp.tcp_idle_ns;
	next.dnsp.case_randomize = d->cfg.dnsp.case_randomize;
	if (d->learn) {
		struct fw_learn_config lc;

		learn_config(&next, &lc);
		fw_learn_set_config(d->learn, &lc);
	}
	if (d->dnsp) {
		struct fw_dnsp_upstream u[FW_DNSP_MAX_UPSTREAMS];
		size_t nu;

		upstreams_of(&next, u, &nu);
		fw_dnsp_set_upstreams(d->dnsp, u, nu);
	}

	if (next.processes_enabled != d->cfg.processes_enabled ||
	    strcmp(next.cgroup_root, d->cfg.cgroup_root) ||
	    strcmp(next.cgroup_parent, d->cfg.cgroup_parent) ||
	    strcmp(next.processes_socket, d->cfg.processes_socket) ||
	    strcmp(next.run_group, d->cfg.run_group) || strcmp(next.run_parent, d->cfg.run_parent))
		fw_warn("the processes section changes only on restart");
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

static void on_signal(struct fw_loop *l, int signo, void *ctx)
{
	struct fw_daemon *d = ctx;
	__u64 was;

	switch (signo) {
	case SIGHUP:
		was = d->cfg.learn.refresh_interval_ns;
		reload(d);
		refresh_rearm(d, was);
		break;
	case SIGINT:
	case SIGTERM:
		fw_info("stopping on signal %u; kernel state stays in place", (unsigned)signo);
		fw_loop_stop(l);
		break;
	}
}

static void on_links(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;
	int err;

	(void)l;
	(void)events;
	/* on_link attached what the events announced; only lost events need
	 * a full listing */
	err = fw_links_read(fd, on_link, on_addr, d);
	if (err == -ENOBUFS) {
		fw_warn("link events overflowed; listing interfaces and addresses again");
		fw_ifset_clear(&d->attached);
		pod_addrs_dump(d);
		attach_all(d);
	} else {
		l2_reserve(d);
		fw_reg_links_changed(&d->reg);
		attached_publish(d);
	}
	local_sync(d);
}

static void on_events(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;

	(void)l;
	(void)fd;
	(void)events;
	ring_buffer__consume(d->events);
}

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

static int run(struct fw_daemon *d)
{
	char errbuf[FW_CFG_ERR_LEN];
	sigset_t mask;
	int err;

	fw_cfg_init(&d->cfg);
	if (fw_cfg_load_file(d->config_path, &d->cfg, errbuf, sizeof(errbuf))) {
		fw_err("%s", errbuf);
		return FW_EXIT_CONFIG;
	}
	apply_logging(d, &d->cfg);
	cfg_warnings(&d->cfg, NULL);
	if (guard_check(&d->cfg, errbuf, sizeof(errbuf))) {
		fw_err("%s", errbuf);
		return FW_EXIT_CONFIG;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	fw_dp_quiet();
	if (probe_kernel())
		return FW_EXIT_KERNEL;
	/* up first: /readyz answers 503 while the rest starts. Without it
	 * (the port taken) fastwalld still enforces: the error says why
	 * nothing answers there */
	if (d->cfg.metrics_listen[0] &&
	    fw_metrics_start(&d->metrics, d->cfg.metrics_listen, d->cfg.bpffs))
		fw_err("running without the metrics listener");
	{
		/* the rule trie of every subject slot is one open descriptor */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	err = fw_dp_open(d->cfg.bpffs, &d->dp);
	if (err)
		return FW_EXIT_KERNEL;
	fw_info("data plane loaded, maps %s under %s", d->dp->reused ? "reused" : "pinned",
		d->cfg.bpffs);
	/* the programs of the process before (maybe an older build) stay
	 * attached until attach_all: no rule form they can't read */
	if (d->dp->reused)
		fw_dp_rules_old_programs(d->dp, true);

	err = fw_reg_init(&d->reg, d->dp);
	if (err)
		return FW_EXIT_KERNEL;
	d->reg.on_change = on_subject_change;
	d->reg.change_ctx = d;
	{
		struct fw_learn_config lc;

		learn_config(&d->cfg, &lc);
		err = fw_learn_new(&lc, &d->reg, &d->learn);
		if (err) {
			fw_err("can't set up learned leases: %s", strerror(-err));
			return FW_EXIT_FAILURE;
		}
		fw_learn_set_event_sink(d->learn, on_dns_event, d);
		fw_learn_set_monitor(d->learn, on_dns_monitor, dns_monitor_wants, d);
	}
	/* the proxy listens before the data plane sends DNS its way */
	if (d->cfg.dns_proxy && dns_start(d))
		return FW_EXIT_FAILURE;
	/* the pod's own addresses are pod-local from the first packet */
	pod_addrs_dump(d);
	err = apply_datapath(d, &d->cfg);
	if (err)
		return FW_EXIT_KERNEL;
	/* asked for: without the cgroup programs its sandboxes would run
	 * unchecked, so fastwalld does not start. Before the subjects: a
	 * cgroup subject is checked from the moment it is programmed */
	if (d->cfg.processes_enabled) {
		if (fw_procs_open(&d->reg, &d->cfg, &d->procs))
			return FW_EXIT_KERNEL;
		fw_procs_resolve(d->procs, d->cfg.subjects, d->cfg.nsubjects);
	}
	/* the uplinks' guard does not wait for the subjects */
	err = guard_apply(d, &d->cfg, NULL);
	if (err)
		return FW_EXIT_KERNEL;
	/* subjects first, then attach: a newly attached port enforces at once */
	err = fw_reg_sync_static(&d->reg, &d->cfg.overlay, d->cfg.subjects, d->cfg.nsubjects, true);
	if (err)
		fw_err("some static subjects could not be programmed: %s", strerror(-err));

	if (d->cfg.actions_enabled) {
		struct fw_actions_opts ao = {
			.restart_wipe = d->cfg.actions_restart_wipe,
			.bind_host_veth = d->cfg.actions_bind_host_veth,
			.grace_ns = d->cfg.actions_grace_ns,
			.pending_ttl_ns = d->cfg.actions_pending_ttl_ns,
		};

		/* secrets may arrive from here on: no core dumps, no ptrace */
		fw_secmem_process_init();
		fw_secmem_wipe_json();
		err = fw_actions_init(&d->actions, &d->reg, &ao);
		if (err) {
			fw_err("can't start the actions handler: %s", strerror(-err));
			return FW_EXIT_FAILURE;
		}
		d->actions_on = true;
		err = fw_http_start(&d->http, &d->actions, d->cfg.actions_listen,
				    d->cfg.actions_vault_socket);
		if (err)
			return FW_EXIT_FAILURE;
	}

	err = fw_links_subscribe(&d->link_fd);
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

	d->events = ring_buffer__new(d->dp->events_fd, on_event, d, NULL);
	if (!d->events) {
		fw_err("can't open the event ring: %s", strerror(errno));
		return FW_EXIT_KERNEL;
	}
	err = fw_loop_new(&d->loop);
	if (!err)
		err = fw_loop_signals(d->loop, &mask, on_signal, d);
	if (!err)
		err = fw_loop_watch_add(d->loop, d->link_fd, EPOLLIN, on_links, d, NULL);
	if (!err)
		err = fw_loop_watch_add(d->loop, ring_buffer__epoll_fd(d->events), EPOLLIN,
					on_events, d, NULL);
	if (err) {
		fw_err("can't set up the event loop: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	if (d->cfg.monitor_socket[0]) {
		struct fw_monitor *m = NULL;

		/* without it fastwalld still enforces; the error says why */
		if (fw_monitor_start(d->loop, d->cfg.monitor_socket, d->cfg.monitor_queue, &m))
			fw_err("running without the monitor socket");
		else
			__atomic_store_n(&d->monitor, m, __ATOMIC_RELEASE);
	}
	/* each runs in the loop's first round, then at its own pace */
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
	fw_info("fastwalld ready: %zu subjects, config %s", fw_reg_count(&d->reg), d->config_path);
	/* after a restart: the rule tries' descriptors, off the request path */
	fw_dp_slots_warm(d->dp);
	/* the kernel enforces the adopted leases meanwhile; the table that
	 * refreshes and collects them fills in the background */
	err = fw_learn_adopt(d->learn, true);
	if (err)
		fw_warn("can't adopt learned addresses: %s", strerror(-err));
	{
		/* every part is up (and the pinned maps migrated): the listener
		 * may read them from here on */
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
			.started = true,
		};

		fw_metrics_publish(d->metrics, &parts);
	}

	err = fw_loop_run(d->loop);
	fw_procs_stop(d->procs);
	d->procs = NULL;
	if (err) {
		fw_err("epoll_wait: %s", strerror(-err));
		return FW_EXIT_FAILURE;
	}
	ring_buffer__consume(d->events);
	return FW_EXIT_OK;
}

/* Removes fastwall's filters from every interface; --purge also unpins. */
static int detach(const char *config_path, const char *bpffs, bool purge)
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

static int check(const char *config_path)
{
	char errbuf[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;

	fw_cfg_init(&cfg);
	if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "%s\n", errbuf);
		return FW_EXIT_CONFIG;
	}
	cfg_warnings(&cfg, stderr);
	printf("%s: ok, %zu static subjects%s\n", config_path, cfg.nsubjects,
	       cfg.nwarnings ? " (with warnings)" : "");
	fw_cfg_free(&cfg);
	return FW_EXIT_OK;
}

/* config-keys --markdown | --schema | --doc FILE: the configuration key
 * tables as Markdown, as a JSON Schema, or FILE with its marked tables
 * regenerated (how docs/config.md is kept in step with the code). */
static int config_keys(int argc, char **argv)
{
	char err[FW_CFG_ERR_LEN];
	char *text = NULL;
	size_t cap = 0;
	FILE *f;
	int ret;

	if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
		fw_cfg_keys_markdown(stdout);
		return FW_EXIT_OK;
	}
	if (argc == 2 && strcmp(argv[1], "--schema") == 0) {
		fw_cfg_keys_schema(stdout);
		return FW_EXIT_OK;
	}
	if (argc != 3 || strcmp(argv[1], "--doc") != 0) {
		fprintf(stderr,
			"usage: fastwalld config-keys --markdown | --schema | --doc FILE\n");
		return FW_EXIT_USAGE;
	}
	f = fopen(argv[2], "r");
	if (!f || getdelim(&text, &cap, '\0', f) < 0) {
		fprintf(stderr, "can't read %s: %s\n", argv[2], strerror(errno));
		if (f)
			fclose(f);
		free(text);
		return FW_EXIT_FAILURE;
	}
	fclose(f);
	ret = fw_cfg_keys_doc(text, stdout, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s\n", argv[2], err);
	free(text);
	return ret ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: fastwalld [OPTIONS] [run]         load, attach, enforce (default)\n"
		"       fastwalld [OPTIONS] check         validate the configuration\n"
		"       fastwalld [OPTIONS] detach [--purge]\n"
		"                                         remove fastwall from every interface\n"
		"                                         (--purge also unpins its maps)\n"
		"       fastwalld config-keys --markdown | --schema | --doc FILE\n"
		"                                         the configuration keys as docs\n"
		"\n"
		"options:\n"
		"  -c, --config FILE     YAML configuration (default " FW_DEFAULT_CONFIG ")\n"
		"  -b, --bpffs DIR       pin directory for detach --purge\n"
		"  -l, --log-level LVL   error, warn, info, debug (overrides the config)\n"
		"  -o, --log-format FMT  text or json (overrides the config)\n"
		"  -h, --help            this text\n"
		"      --version         the version and map ABI\n"
		"\n"
		"signals: SIGHUP reloads static subjects atomically; SIGTERM stops and\n"
		"leaves the kernel state in place (fail closed).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"bpffs", required_argument, NULL, 'b'},
		{"log-level", required_argument, NULL, 'l'},
		{"log-format", required_argument, NULL, 'o'},
		{"purge", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	struct fw_daemon *d;
	const char *bpffs = NULL, *level = NULL, *format = NULL, *cmd = "run";
	bool purge = false;
	int c, ret;

	if (argc >= 2 && strcmp(argv[1], "config-keys") == 0)
		return config_keys(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "c:b:l:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			break;
		case 'b':
			bpffs = optarg;
			break;
		case 'l':
			level = optarg;
			break;
		case 'o':
			format = optarg;
			break;
		case 'P':
			purge = true;
			break;
		case 'h':
			usage(stdout);
			return FW_EXIT_OK;
		case 'V':
			printf("fastwalld %s (map ABI %d)\n", FW_VERSION, FW_ABI_VERSION);
			return FW_EXIT_OK;
		default:
			usage(stderr);
			return FW_EXIT_USAGE;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return FW_EXIT_FAILURE;
	d->config_path = FW_DEFAULT_CONFIG;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:b:l:o:h", opts, NULL)) != -1)
		if (c == 'c')
			d->config_path = optarg;
	if (optind < argc)
		cmd = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "fastwalld: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		free(d);
		return FW_EXIT_USAGE;
	}
	/* an option the command does not use is refused, not ignored: -b
	 * names the pins of detach only (run and check take the
	 * configuration's bpffs), --purge belongs to detach */
	if ((bpffs || purge) && strcmp(cmd, "detach") != 0) {
		fprintf(stderr,
			"fastwalld: %s applies to detach only (%s uses the configuration's "
			"bpffs)\n",
			bpffs ? "-b/--bpffs" : "--purge", cmd);
		free(d);
		return FW_EXIT_USAGE;
	}
	if (level && fw_log_level_parse(level, &fw_log_level)) {
		fprintf(stderr, "fastwalld: invalid log level '%s'\n", level);
		free(d);
		return FW_EXIT_USAGE;
	}

	if (format && fw_log_format_parse(format, &fw_log_format)) {
		fprintf(stderr, "fastwalld: invalid log format '%s' (text or json)\n", format);
		free(d);
		return FW_EXIT_USAGE;
	}

	if (strcmp(cmd, "run") == 0) {
		d->level_forced = level != NULL;
		d->format_forced = format != NULL;
		ret = run(d);
	} else if (strcmp(cmd, "check") == 0) {
		ret = check(d->config_path);
	} else if (strcmp(cmd, "detach") == 0) {
		ret = detach(d->config_path, bpffs, purge);
	} else {
		fprintf(stderr, "fastwalld: unknown command '%s'\n", cmd);
		usage(stderr);
		ret = FW_EXIT_USAGE;
	}
	/* first: its requests read everything below */
	fw_metrics_stop(d->metrics);
	fw_http_stop(d->http);
	fw_dnsp_stop(d->dnsp);
	if (d->actions_on)
		fw_actions_fini(&d->actions);
	fw_learn_free(d->learn);
	fw_monitor_stop(d->monitor);
	ring_buffer__free(d->events);
	fw_reg_free(&d->reg);
	fw_guard_close(d->guard);
	fw_dp_close(d->dp);
	fw_cfg_free(&d->cfg);
	fw_loop_free(d->loop);
	if (d->link_fd > 0)
		close(d->link_fd);
	fw_ifset_free(&d->attached);
	free(d->pod_addrs);
	free(d);
	return ret;
}
