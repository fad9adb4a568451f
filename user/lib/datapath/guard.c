// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The port guard: loading beside the pinned maps, programming its ports
 * and trusted sources, and its hooks (native XDP, generic XDP, TC
 * ingress). See guard.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>

#include "datapath/datapath.h"
#include "datapath/guard.h"
#include "datapath/scan.h"
#include "guard.skel.h"
#include "common/log.h"

#define GUARD_XDP_NAME "fw_guard_xdp"
#define GUARD_TC_NAME  "fw_guard_tc"

static const char *const mode_names[] = {
	[FW_GUARD_AUTO] = "auto",
	[FW_GUARD_XDP] = "native XDP",
	[FW_GUARD_XDP_GENERIC] = "generic XDP",
	[FW_GUARD_TC] = "TC ingress",
	[FW_GUARD_NONE] = "none",
};

const char *fw_guard_mode_name(enum fw_guard_mode m)
{
	return m <= FW_GUARD_NONE ? mode_names[m] : "unknown";
}

static const char *const why_texts[] = {
	[FW_GUARD_WHY_CONFIGURED] = "the configured mode",
	[FW_GUARD_WHY_DRIVER] = "the driver runs XDP on its own receive buffers",
	[FW_GUARD_WHY_COPIES] = "native XDP copies each packet on this driver",
	[FW_GUARD_WHY_BUSY] = "another XDP program is attached",
	[FW_GUARD_WHY_NO_XDP] = "native XDP not possible here",
};

const char *fw_guard_why_text(enum fw_guard_why why)
{
	return why < FW_GUARD_WHY_MAX ? why_texts[why] : "unknown";
}

/* Drivers whose native XDP runs on a copy, measured slower than TC
 * ingress (docs/benchmarks.md, part E). veth: veth_xdp_rcv_skb moves
 * every skb a local sender built (a kmalloc'ed head, or less headroom
 * than XDP_PACKET_HEADROOM) into a fresh page before the program, and
 * builds another skb for each packet it passes. Generic XDP copies the
 * same way on every device, which is why auto never takes it. Devices
 * without native XDP at all (bridge, dummy, macvlan, ipvlan, netkit)
 * need no entry: the kernel refuses it and auto falls back to TC. */
static const char *const xdp_copying[] = {"veth"};

bool fw_guard_xdp_copies(const char *driver)
{
	for (size_t i = 0; driver && i < sizeof(xdp_copying) / sizeof(xdp_copying[0]); i++)
		if (!strcmp(driver, xdp_copying[i]))
			return true;
	return false;
}

enum fw_guard_mode fw_guard_auto_hook(const char *driver, enum fw_guard_why *why)
{
	bool copies = fw_guard_xdp_copies(driver);

	*why = copies ? FW_GUARD_WHY_COPIES : FW_GUARD_WHY_DRIVER;
	return copies ? FW_GUARD_TC : FW_GUARD_XDP;
}

/* The driver's own name for itself: an interface's name or its rtnetlink
 * kind can be anything a creator chose, the ethtool driver is the code
 * that receives the packets. */
int fw_guard_driver(int ifindex, char *buf, size_t len)
{
	struct ethtool_drvinfo info = {.cmd = ETHTOOL_GDRVINFO};
	struct ifreq ifr = {0};
	int fd, err = 0;

	if (len)
		buf[0] = 0;
	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ifr.ifr_data = (void *)&info;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		err = -errno;
	else if (len)
		snprintf(buf, len, "%.*s", (int)sizeof(info.driver), info.driver);
	close(fd);
	return err;
}

static bool guard_map(const char *name)
{
#define IS_GUARD(n)                                                                                \
	if (strcmp(name, #n) == 0)                                                                 \
		return true;
	FW_GUARD_MAPS(IS_GUARD)
#undef IS_GUARD
	return false;
}

static bool shared_map(const char *name)
{
#define IS_SHARED(n, field, version, late)                                                         \
	if (strcmp(name, #n) == 0)                                                                 \
		return true;
	FW_DP_MAPS(IS_SHARED)
#undef IS_SHARED
	return false;
}

/* libbpf reuses a pin only when its layout matches, and then fails with a
 * bare errno: say which map differs, before anything is loaded. */
static int check_pins(struct fw_guard *g)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, g->skel->obj)
	{
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		const char *name = bpf_map__name(m);
		char path[512];
		int fd;

		if (bpf_map__is_internal(m))
			continue;
		if (!guard_map(name) && !shared_map(name)) {
			fw_err("BPF map %s of the guard is in no map table (maps.h)", name);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/%s", g->pin_root, name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != bpf_map__type(m) ||
		    info.key_size != bpf_map__key_size(m) ||
		    info.value_size != bpf_map__value_size(m) ||
		    info.max_entries != bpf_map__max_entries(m) ||
		    info.map_flags != bpf_map__map_flags(m)) {
			fw_err("pinned map %s is not the layout the guard expects (pins of another "
			       "release?); nothing pinned was changed",
			       path);
			close(fd);
			return -EPROTO;
		}
		close(fd);
	}
	return 0;
}

int fw_guard_open(const char *pin_root, struct fw_guard **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts);
	struct fw_guard *g;
	int err;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	snprintf(g->pin_root, sizeof(g->pin_root), "%s", pin_root);
	oopts.pin_root_path = g->pin_root;
	g->skel = guard_bpf__open_opts(&oopts);
	if (!g->skel) {
		err = -errno;
		fw_err("can't open the guard's BPF object: %s", strerror(-err));
		free(g);
		return err;
	}
	err = check_pins(g);
	if (!err) {
		err = guard_bpf__load(g->skel);
		if (err)
			fw_err("can't load the guard (pins under %s): %s", pin_root,
			       strerror(-err));
	}
	if (err) {
		guard_bpf__destroy(g->skel);
		free(g);
		return err;
	}
	g->xdp_fd = bpf_program__fd(g->skel->progs.fw_guard_xdp);
	g->tc_fd = bpf_program__fd(g->skel->progs.fw_guard_tc);
	g->ports_fd = bpf_map__fd(g->skel->maps.fastwall_guard_ports);
	g->trusted_fd = bpf_map__fd(g->skel->maps.fastwall_guard_trusted);
	g->frags_fd = bpf_map__fd(g->skel->maps.fastwall_guard_frags);
	g->hooks_fd = bpf_map__fd(g->skel->maps.fastwall_guard_hooks);
	*out = g;
	return 0;
}

void fw_guard_close(struct fw_guard *g)
{
	if (!g)
		return;
	guard_bpf__destroy(g->skel);
	free(g);
}

/* ---- ports and trusted sources ------------------------------------------ */

static bool port_wanted(const struct fw_port_key *k, const __u16 *ports, size_t n)
{
	if (k->proto != 6 && k->proto != 17)
		return false;
	for (size_t i = 0; i < n; i++)
		if (htons(ports[i]) == k->port)
			return true;
	return false;
}

static bool prefix_wanted(const struct fw_lpm_key *k, const struct fw_lpm_key *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].prefixlen == k->prefixlen &&
		    !memcmp(&t[i].addr, &k->addr, sizeof(k->addr)))
			return true;
	return false;
}

/* Deletes every key of fd that keep() rejects; keys are collected first,
 * a deletion during the walk would restart it. */
static int prune(int fd, size_t key_size, bool (*keep)(const void *key, const void *ctx),
		 const void *ctx, const char *what)
{
	struct fw_recs keys = {.size = key_size};
	char cur[64], next[64];
	void *prev = NULL;
	int err = 0;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(cur, next, key_size);
		prev = cur;
		if (!keep(cur, ctx) && fw_recs_push(&keys, cur)) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < keys.n; i++) {
		if (bpf_map_delete_elem(fd, keys.data + i * key_size) && errno != ENOENT) {
			err = -errno;
			fw_err("can't delete from %s: %s", what, strerror(-err));
			break;
		}
	}
out:
	free(keys.data);
	return err;
}

struct wanted {
	const __u16 *ports;
	size_t nports;
	const struct fw_lpm_key *trusted;
	size_t ntrusted;
};

static bool keep_port(const void *key, const void *ctx)
{
	const struct wanted *w = ctx;

	return port_wanted(key, w->ports, w->nports);
}

static bool keep_prefix(const void *key, const void *ctx)
{
	const struct wanted *w = ctx;

	return prefix_wanted(key, w->trusted, w->ntrusted);
}

int fw_guard_set(struct fw_guard *g, const __u16 *ports, size_t nports,
		 const struct fw_lpm_key *trusted, size_t ntrusted)
{
	const struct wanted w = {ports, nports, trusted, ntrusted};
	const struct fw_guard_trust trust = {0};
	const __u32 one = 1;
	int err;

	for (size_t i = 0; i < ntrusted; i++) {
		if (bpf_map_update_elem(g->trusted_fd, &trusted[i], &trust, BPF_ANY)) {
			err = -errno;
			fw_err("can't write fastwall_guard_trusted: %s", strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; i < nports; i++) {
		for (int p = 0; p < 2; p++) {
			struct fw_port_key k = {.proto = p ? 17 : 6, .port = htons(ports[i])};

			if (bpf_map_update_elem(g->ports_fd, &k, &one, BPF_ANY)) {
				err = -errno;
				fw_err("can't write fastwall_guard_ports: %s", strerror(-err));
				return err;
			}
		}
	}
	/* a port no longer guarded, then a source no longer trusted */
	err = prune(g->ports_fd, sizeof(struct fw_port_key), keep_port, &w, "fastwall_guard_ports");
	if (!err)
		err = prune(g->trusted_fd, sizeof(struct fw_lpm_key), keep_prefix, &w,
			    "fastwall_guard_trusted");
	return err;
}

/* ---- hooks ------------------------------------------------------------------ */

static bool prog_named(__u32 id, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	bool same;
	int fd;

	if (!id)
		return false;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return false;
	same = !bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, name);
	close(fd);
	return same;
}

static int xdp_flags(enum fw_guard_mode m)
{
	return m == FW_GUARD_XDP ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

/* The program ids attached in native and generic mode. */
static void xdp_ids(int ifindex, __u32 *drv, __u32 *skb)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	*drv = *skb = 0;
	if (bpf_xdp_query(ifindex, 0, &q))
		return;
	*drv = q.drv_prog_id;
	*skb = q.skb_prog_id;
}

static int xdp_attach(struct fw_guard *g, int ifindex, enum fw_guard_mode m)
{
	__u32 drv, skb, id;

	xdp_ids(ifindex, &drv, &skb);
	id = m == FW_GUARD_XDP ? drv : skb;
	if (id && !prog_named(id, GUARD_XDP_NAME))
		return -EBUSY;
	/* without UPDATE_IF_NOEXIST the kernel swaps the program in one step */
	return bpf_xdp_attach(ifindex, g->xdp_fd, xdp_flags(m), NULL);
}

static int xdp_detach(int ifindex, enum fw_guard_mode m)
{
	__u32 drv, skb, id;

	xdp_ids(ifindex, &drv, &skb);
	id = m == FW_GUARD_XDP ? drv : skb;
	if (!prog_named(id, GUARD_XDP_NAME))
		return -ENOENT;
	return bpf_xdp_detach(ifindex, xdp_flags(m), NULL);
}

static int tc_attach(struct fw_guard *g, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_GUARD_TC_HANDLE,
		    .priority = FW_GUARD_TC_PRIORITY, .prog_fd = g->tc_fd,
		    .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

static __u32 tc_id(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_GUARD_TC_HANDLE,
		    .priority = FW_GUARD_TC_PRIORITY);

	return bpf_tc_query(&hook, &opts) == 0 ? opts.prog_id : 0;
}

static int tc_detach(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_GUARD_TC_HANDLE,
		    .priority = FW_GUARD_TC_PRIORITY);

	if (!prog_named(tc_id(ifindex), GUARD_TC_NAME))
		return -ENOENT;
	return bpf_tc_detach(&hook, &opts);
}

enum fw_guard_mode fw_guard_attached(int ifindex)
{
	__u32 drv, skb;

	xdp_ids(ifindex, &drv, &skb);
	if (prog_named(drv, GUARD_XDP_NAME))
		return FW_GUARD_XDP;
	if (prog_named(skb, GUARD_XDP_NAME))
		return FW_GUARD_XDP_GENERIC;
	if (prog_named(tc_id(ifindex), GUARD_TC_NAME))
		return FW_GUARD_TC;
	return FW_GUARD_NONE;
}

/* The kernel runs native or generic XDP on a device, never both: moving
 * between them goes through TC, which guards meanwhile. */
static int attach_mode(struct fw_guard *g, int ifindex, enum fw_guard_mode m,
		       enum fw_guard_mode was)
{
	int err;

	if (m == FW_GUARD_TC)
		return tc_attach(g, ifindex);
	if (was == FW_GUARD_XDP || was == FW_GUARD_XDP_GENERIC) {
		if (was == m)
			return xdp_attach(g, ifindex, m);
		err = tc_attach(g, ifindex);
		if (err)
			return err;
		xdp_detach(ifindex, was);
	}
	return xdp_attach(g, ifindex, m);
}

/* Says once, when the hook changes, why the guard runs where it does. */
static void explain(const char *name, const char *drv, enum fw_guard_mode want,
		    enum fw_guard_mode m, enum fw_guard_why why)
{
	if (want == FW_GUARD_XDP && fw_guard_xdp_copies(drv))
		fw_warn("guard: %s is a %s; native XDP copies each packet there before the guard "
			"sees it, which costs the traffic it passes more than TC ingress (mode "
			"auto's choice): keeping native XDP as configured",
			name, drv);
	else if (why == FW_GUARD_WHY_COPIES)
		fw_info("guard: %s is a %s; native XDP copies each packet there: using %s", name,
			drv, fw_guard_mode_name(m));
	else if (why == FW_GUARD_WHY_DRIVER)
		fw_info("guard: %s (driver %s): native XDP", name, *drv ? drv : "unknown");
}

static void record(struct fw_guard *g, int ifindex, enum fw_guard_mode want, enum fw_guard_mode m,
		   enum fw_guard_why why)
{
	const struct fw_guard_hook h = {.mode = (__u8)want, .hook = (__u8)m, .why = (__u8)why};
	__u32 key = (__u32)ifindex;

	/* only fastwall status reads it: the guard stands without it */
	if (bpf_map_update_elem(g->hooks_fd, &key, &h, BPF_ANY))
		fw_debug("can't write fastwall_guard_hooks: %s", strerror(errno));
}

int fw_guard_attach(struct fw_guard *g, int ifindex, enum fw_guard_mode want,
		    enum fw_guard_mode *used)
{
	enum fw_guard_mode was = fw_guard_attached(ifindex), m = want;
	enum fw_guard_why why = FW_GUARD_WHY_CONFIGURED;
	char name[IF_NAMESIZE] = "?", drv[sizeof(((struct ethtool_drvinfo *)0)->driver) + 1];
	int err;

	if_indextoname(ifindex, name);
	fw_guard_driver(ifindex, drv, sizeof(drv));
	if (want == FW_GUARD_AUTO)
		m = fw_guard_auto_hook(drv, &why);
	err = attach_mode(g, ifindex, m, was);
	if (err && want == FW_GUARD_AUTO && m == FW_GUARD_XDP) {
		/* another program's XDP stays; the guard runs after it, at TC */
		why = err == -EBUSY ? FW_GUARD_WHY_BUSY : FW_GUARD_WHY_NO_XDP;
		if (was != FW_GUARD_TC)
			fw_info("guard: native XDP on %s not possible (%s); using TC ingress", name,
				err == -EBUSY ? "another XDP program is attached" : strerror(-err));
		m = FW_GUARD_TC;
		err = attach_mode(g, ifindex, m, was);
	}
	if (err) {
		if (err == -EBUSY)
			fw_err("can't attach the guard to %s: another XDP program is attached "
			       "there",
			       name);
		else
			fw_err("can't attach the guard to %s (%s): %s", name, fw_guard_mode_name(m),
			       strerror(-err));
		return err;
	}
	/* the hooks the guard left, now that the new one holds */
	if (m != FW_GUARD_XDP)
		xdp_detach(ifindex, FW_GUARD_XDP);
	if (m != FW_GUARD_XDP_GENERIC)
		xdp_detach(ifindex, FW_GUARD_XDP_GENERIC);
	if (m != FW_GUARD_TC)
		tc_detach(ifindex);
	record(g, ifindex, want, m, why);
	if (m != was)
		explain(name, drv, want, m, why);
	if (used)
		*used = m;
	return 0;
}

int fw_guard_hook_read(const char *pin_root, int ifindex, struct fw_guard_hook *out)
{
	enum fw_guard_mode now = fw_guard_attached(ifindex);
	__u32 key = (__u32)ifindex;
	char path[512];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/fastwall_guard_hooks", pin_root);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &key, out))
		err = -errno;
	else if (now == FW_GUARD_NONE || out->hook != now)
		err = -ENOENT; /* a record of an earlier interface or hook */
	close(fd);
	return err;
}

int fw_guard_detach(int ifindex)
{
	int n = 0;

	n += xdp_detach(ifindex, FW_GUARD_XDP) == 0;
	n += xdp_detach(ifindex, FW_GUARD_XDP_GENERIC) == 0;
	n += tc_detach(ifindex) == 0;
	return n ? 0 : -ENOENT;
}
