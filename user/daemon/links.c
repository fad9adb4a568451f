// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's links and pod addresses: attaching the data plane to every
 * sandbox-facing interface as it appears (with its link-layer binding and
 * the uplinks' guard), and keeping fastwall_local to the pod namespace's
 * own addresses as rtnetlink reports them, failing closed when they do
 * not fit. */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/addr.h"
#include "common/log.h"
#include "datapath/l2bind.h"
#include "daemon.h"

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
int pod_addrs_dump(struct fw_daemon *d)
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
		fw_log(d->pod_addrs_told == d->npod_addrs + 1 ? FW_LOG_DEBUG : FW_LOG_INFO,
		       "%zu pod addresses are pod-local", d->npod_addrs);
		d->pod_addrs_told = d->npod_addrs + 1;
	}
	return err;
}

/* Writes fastwall_local: the configured addresses, then the pod's own.
 * *full says whether they all fit; the configured ones go first so that
 * what an operator named is protected in any case. */
int local_write(struct fw_daemon *d, const struct fw_cfg *cfg, bool *full)
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
void local_sync(struct fw_daemon *d)
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

int attach_all(struct fw_daemon *d)
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

void on_links(struct fw_loop *l, int fd, __u32 events, void *ctx)
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
