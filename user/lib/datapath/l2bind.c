// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The link-layer binding of sandbox ports. See l2bind.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "datapath/l2bind.h"
#include "datapath/scan.h"
#include "common/log.h"

void fw_l2_eui64(const __u8 mac[6], struct fw_ip *ll)
{
	memset(ll, 0, sizeof(*ll));
	ll->b[0] = 0xfe;
	ll->b[1] = 0x80;
	ll->b[8] = mac[0] ^ 0x02;
	ll->b[9] = mac[1];
	ll->b[10] = mac[2];
	ll->b[11] = 0xff;
	ll->b[12] = 0xfe;
	ll->b[13] = mac[3];
	ll->b[14] = mac[4];
	ll->b[15] = mac[5];
}

struct owned {
	bool (*doomed)(const void *key, __u32 owner, const void *ctx);
	const void *ctx;
	struct fw_recs keys;
};

static int collect(const void *key, const void *val, void *ctx)
{
	struct owned *o = ctx;
	__u32 owner;

	memcpy(&owner, val, sizeof(owner));
	return o->doomed(key, owner, o->ctx) ? fw_recs_push(&o->keys, key) : 0;
}

/* Deletes the entries of an owner map (MAC or link-local -> ifindex)
 * that doomed() picks. */
static int drop_owned(int fd, size_t key_size,
		      bool (*doomed)(const void *key, __u32 owner, const void *ctx),
		      const void *ctx)
{
	struct owned o = {.doomed = doomed, .ctx = ctx, .keys = {.size = key_size}};
	int err = fw_dp_scan(fd, collect, &o);

	if (!err)
		err = fw_dp_delete_keys(fd, o.keys.data, o.keys.n, key_size);
	free(o.keys.data);
	return err;
}

static bool is_owner(const void *key, __u32 owner, const void *ctx)
{
	(void)key;
	return owner == *(const __u32 *)ctx;
}

/* the port's entries but the one it keeps (NULL: none) */
struct owned_but {
	__u32 owner;
	const void *keep;
	size_t size;
};

static bool is_owner_but(const void *key, __u32 owner, const void *ctx)
{
	const struct owned_but *o = ctx;

	return owner == o->owner && !(o->keep && memcmp(key, o->keep, o->size) == 0);
}

int fw_l2_forget(struct fw_dp *dp, int ifindex)
{
	__u32 key = (__u32)ifindex;
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	/* the record first: without it the port binds afresh, and the
	 * owner entries below go with it */
	if (bpf_map_delete_elem(dp->l2_ports_fd, &key) && errno != ENOENT) {
		err = -errno;
		fw_err("can't delete the link-layer binding of ifindex %d: %s", ifindex,
		       strerror(-err));
		return err;
	}
	err = drop_owned(dp->l2_macs_fd, sizeof(struct fw_mac), is_owner, &key);
	if (!err)
		err = drop_owned(dp->l2_lladdrs_fd, sizeof(struct fw_ip), is_owner, &key);
	if (err)
		fw_err("can't release the addresses of ifindex %d: %s", ifindex, strerror(-err));
	return err;
}

static int put_owner(int fd, const void *key, __u32 owner, __u64 flags, const char *what)
{
	if (bpf_map_update_elem(fd, key, &owner, flags)) {
		int err = -errno;

		if (err != -EEXIST)
			fw_err("can't update %s: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

int fw_l2_bind(struct fw_dp *dp, int ifindex, const __u8 host[6], const __u8 *peer)
{
	struct fw_l2_port rec = {}, old;
	__u32 key = (__u32)ifindex, owner;
	struct owned_but keep_mac = {.owner = key, .size = sizeof(struct fw_mac)};
	struct owned_but keep_ll = {.owner = key, .size = sizeof(struct fw_ip)};
	struct fw_mac mk = {};
	struct fw_ip ll;
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	/* the same link, bound the same way: keep it (a restart, a reload,
	 * another event of the port), whatever it learned since */
	if (bpf_map_lookup_elem(dp->l2_ports_fd, &key, &old) == 0 &&
	    memcmp(old.host.b, host, 6) == 0 &&
	    (peer ? (old.flags & FW_L2F_PINNED) && memcmp(old.mac.b, peer, 6) == 0
		  : !(old.flags & FW_L2F_PINNED)))
		return 0;
	memcpy(rec.host.b, host, 6);
	if (!peer) {
		rec.flags = FW_L2F_UNBOUND;
		goto write;
	}
	memcpy(mk.b, peer, 6);
	if (bpf_map_lookup_elem(dp->l2_macs_fd, &mk, &owner) == 0 && owner != key) {
		if (owner == FW_L2_OWNER_POD) {
			fw_err("can't bind ifindex %d to %02x:%02x:%02x:%02x:%02x:%02x: the pod "
			       "has that MAC",
			       ifindex, peer[0], peer[1], peer[2], peer[3], peer[4], peer[5]);
			return -EADDRINUSE;
		}
		/* the link says whose MAC it is: a port that sent it first
		 * took it on first sight and binds afresh */
		fw_warn("ifindex %u had taken the MAC of ifindex %d's peer; unbinding it", owner,
			ifindex);
		err = fw_l2_forget(dp, (int)owner);
		if (err)
			return err;
	}
	rec.mac = mk;
	rec.flags = FW_L2F_PINNED;
	err = put_owner(dp->l2_macs_fd, &mk, key, BPF_ANY, "fastwall_l2_macs");
	if (err)
		return err;
	keep_mac.keep = &mk;
	fw_l2_eui64(peer, &ll);
	/* held by a port that learned it, or the pod's: then not ours */
	err = put_owner(dp->l2_lladdrs_fd, &ll, key, BPF_NOEXIST, "fastwall_l2_lladdrs");
	if (err && err != -EEXIST)
		return err;
	if (!err || (bpf_map_lookup_elem(dp->l2_lladdrs_fd, &ll, &owner) == 0 && owner == key))
		keep_ll.keep = &ll;
write:
	/* one update switches the port from its old binding to this one (no
	 * moment without a record, in which a frame would bind first), then
	 * what it owned before goes */
	if (bpf_map_update_elem(dp->l2_ports_fd, &key, &rec, BPF_ANY)) {
		err = -errno;
		fw_err("can't update fastwall_l2_ports: %s", strerror(-err));
		return err;
	}
	err = drop_owned(dp->l2_macs_fd, sizeof(struct fw_mac), is_owner_but, &keep_mac);
	if (!err)
		err = drop_owned(dp->l2_lladdrs_fd, sizeof(struct fw_ip), is_owner_but, &keep_ll);
	if (err)
		fw_err("can't release the old addresses of ifindex %d: %s", ifindex,
		       strerror(-err));
	return err;
}

struct prune_ports {
	bool (*live)(int ifindex, const void *ctx);
	const void *ctx;
	struct fw_recs dead;
};

static int dead_port(const void *key, const void *val, void *ctx)
{
	struct prune_ports *p = ctx;
	__u32 ifindex;

	(void)val;
	memcpy(&ifindex, key, sizeof(ifindex));
	return p->live((int)ifindex, p->ctx) ? 0 : fw_recs_push(&p->dead, &ifindex);
}

static bool owner_dead(const void *key, __u32 owner, const void *ctx)
{
	(void)key;
	const struct prune_ports *p = ctx;

	return owner != FW_L2_OWNER_POD && !p->live((int)owner, p->ctx);
}

int fw_l2_prune(struct fw_dp *dp, bool (*live)(int ifindex, const void *ctx), const void *ctx)
{
	struct prune_ports p = {.live = live, .ctx = ctx, .dead = {.size = sizeof(__u32)}};
	int err = fw_dp_scan(dp->l2_ports_fd, dead_port, &p);

	if (!err)
		err = fw_dp_delete_keys(dp->l2_ports_fd, p.dead.data, p.dead.n, sizeof(__u32));
	free(p.dead.data);
	/* owners without a record too: a record deleted before its owner
	 * entries were (a crash in between) */
	if (!err)
		err = drop_owned(dp->l2_macs_fd, sizeof(struct fw_mac), owner_dead, &p);
	if (!err)
		err = drop_owned(dp->l2_lladdrs_fd, sizeof(struct fw_ip), owner_dead, &p);
	if (err)
		fw_err("can't prune the link-layer bindings: %s", strerror(-err));
	return err;
}

struct reserved {
	const void *keys;
	size_t n, size;
};

struct stale_ctx {
	const struct reserved *set;
	struct fw_recs keys;
};

static int collect_stale(const void *key, const void *val, void *ctx)
{
	struct stale_ctx *s = ctx;
	__u32 owner;

	memcpy(&owner, val, sizeof(owner));
	if (owner != FW_L2_OWNER_POD)
		return 0;
	for (size_t i = 0; i < s->set->n; i++)
		if (memcmp((const char *)s->set->keys + i * s->set->size, key, s->set->size) == 0)
			return 0;
	return fw_recs_push(&s->keys, key);
}

/* Writes the pod's ownership of every key (evicting a port that had
 * claimed one), then deletes pod reservations that are not in the set. */
static int reserve_set(struct fw_dp *dp, int fd, const struct reserved *set, const char *what)
{
	struct stale_ctx s = {.set = set, .keys = {.size = set->size}};
	int err;

	for (size_t i = 0; i < set->n; i++) {
		const void *k = (const char *)set->keys + i * set->size;
		__u32 owner;

		if (bpf_map_lookup_elem(fd, k, &owner) == 0 && owner != FW_L2_OWNER_POD) {
			fw_warn("ifindex %u had claimed one of the pod's own %s; unbinding it",
				owner, what);
			err = fw_l2_forget(dp, (int)owner);
			if (err)
				return err;
		}
		err = put_owner(fd, k, FW_L2_OWNER_POD, BPF_ANY, what);
		if (err)
			return err;
	}
	err = fw_dp_scan(fd, collect_stale, &s);
	if (!err)
		err = fw_dp_delete_keys(fd, s.keys.data, s.keys.n, set->size);
	free(s.keys.data);
	return err;
}

int fw_l2_reserve(struct fw_dp *dp, const struct fw_mac *macs, size_t nmacs,
		  const struct fw_ip *lladdrs, size_t nlladdrs)
{
	struct reserved m = {macs, nmacs, sizeof(*macs)};
	struct reserved l = {lladdrs, nlladdrs, sizeof(*lladdrs)};
	int err = reserve_set(dp, dp->l2_macs_fd, &m, "MACs");

	return err ? err : reserve_set(dp, dp->l2_lladdrs_fd, &l, "link-local addresses");
}
