// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The subject registry. See subjects.h. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "addr.h"
#include "log.h"
#include "subjects.h"

/* FNV-1a, 64 bit: stable across runs and builds, which is all a change
 * detector needs. */
static __u64 fnv(__u64 h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

__u64 fw_binding_hash(const struct fw_static_subject *spec)
{
	__u64 h = 0xcbf29ce484222325ull;

	h = fnv(h, spec->addrs, sizeof(spec->addrs[0]) * spec->naddrs);
	h = fnv(h, spec->ifname, strnlen(spec->ifname, sizeof(spec->ifname)));
	for (int f = 0; f < FW_FAM_MAX; f++) {
		h = fnv(h, &spec->has_gateway[f], sizeof(spec->has_gateway[f]));
		if (spec->has_gateway[f])
			h = fnv(h, &spec->gateway[f], sizeof(spec->gateway[f]));
		h = fnv(h, &spec->has_private[f], sizeof(spec->has_private[f]));
		if (spec->has_private[f])
			h = fnv(h, &spec->private_net[f], sizeof(spec->private_net[f]));
	}
	return h;
}

static __u32 resolve_ifindex(const char *ifname)
{
	unsigned int idx;

	if (!ifname[0])
		return FW_IFINDEX_ANY;
	idx = if_nametoindex(ifname);
	return idx ? idx : FW_IFINDEX_MISSING;
}

static void build_ksub(struct fw_subject *k, __u32 id, const struct fw_static_subject *spec)
{
	memset(k, 0, sizeof(*k));
	k->id = id;
	k->state = spec->state;
	k->ifindex = resolve_ifindex(spec->ifname);
	for (int f = 0; f < FW_FAM_MAX; f++) {
		if (spec->has_gateway[f]) {
			k->flags |= f == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;
			k->gateway[f] = spec->gateway[f];
		}
		if (spec->has_private[f]) {
			k->private_net[f] = spec->private_net[f].net;
			k->private_plen[f] = spec->private_net[f].plen;
		}
	}
}

struct fw_entry *fw_reg_find(struct fw_registry *r, const char *name)
{
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		struct fw_entry *e = r->by_id[id];

		if (e && strncmp(e->meta.name, name, FW_NAME_LEN) == 0)
			return e;
	}
	return NULL;
}

static __u32 alloc_id(struct fw_registry *r)
{
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++)
		if (!r->by_id[id])
			return id;
	return 0;
}

/* A learned address whose subject id is not registered was left by a
 * release that did not finish (a crash between two deletes). */
static bool orphan_id(__u32 id, const void *ctx)
{
	const struct fw_registry *r = ctx;

	return id == 0 || id >= FW_MAX_SUBJECTS || !r->by_id[id];
}

int fw_reg_init(struct fw_registry *r, struct fw_dp *dp)
{
	struct fw_ip addr, *prev = NULL;
	struct fw_subject_meta meta;
	struct fw_subject ks;
	__u32 id, *prev_id = NULL;

	memset(r, 0, sizeof(*r));
	r->dp = dp;

	while (bpf_map_get_next_key(dp->meta_fd, prev_id, &id) == 0) {
		prev_id = &id;
		if (id == 0 || id >= FW_MAX_SUBJECTS || r->by_id[id])
			continue;
		if (bpf_map_lookup_elem(dp->meta_fd, &id, &meta))
			continue;
		r->by_id[id] = calloc(1, sizeof(struct fw_entry));
		if (!r->by_id[id])
			return -ENOMEM;
		r->by_id[id]->id = id;
		r->by_id[id]->meta = meta;
		r->by_id[id]->adopted = true;
		r->count++;
	}
	while (bpf_map_get_next_key(dp->dispatch_fd, prev, &addr) == 0) {
		struct fw_entry *e;

		prev = &addr;
		if (bpf_map_lookup_elem(dp->dispatch_fd, &addr, &ks))
			continue;
		e = ks.id < FW_MAX_SUBJECTS ? r->by_id[ks.id] : NULL;
		if (!e) {
			/* an address nobody owns any more: fail closed by removing it */
			bpf_map_delete_elem(dp->dispatch_fd, &addr);
			continue;
		}
		e->ksub = ks;
		if (e->naddrs < FW_SUBJECT_MAX_ADDRS)
			e->addrs[e->naddrs++] = addr;
	}
	if (r->count)
		fw_info("adopted %zu subjects from pinned maps", r->count);
	return fw_dp_learned_sweep(dp, orphan_id, r);
}

void fw_reg_free(struct fw_registry *r)
{
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		free(r->by_id[id]);
		r->by_id[id] = NULL;
	}
	r->count = 0;
}

static bool has_addr(const struct fw_ip *addrs, size_t n, const struct fw_ip *a)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&addrs[i], a, sizeof(*a)) == 0)
			return true;
	return false;
}

/* Drops the kernel state of id except dispatch entries, which the caller
 * handles (they may have moved to a new owner). */
static int release_id(struct fw_registry *r, struct fw_entry *e)
{
	struct fw_dp *dp = r->dp;
	int err, ret = 0;

	err = fw_dp_rules_clear(dp, e->id);
	if (err)
		ret = err;
	err = fw_dp_learned_flush(dp, e->id);
	if (err && !ret)
		ret = err;
	err = fw_dp_meta_del(dp, e->id);
	if (err && !ret)
		ret = err;
	if (ret) {
		fw_err("subject %s: can't release id %u: %s", e->meta.name, e->id, strerror(-ret));
		return ret;
	}
	r->by_id[e->id] = NULL;
	r->count--;
	free(e);
	return 0;
}

int fw_reg_remove(struct fw_registry *r, struct fw_entry *e)
{
	int err;

	for (size_t i = 0; i < e->naddrs; i++) {
		err = fw_dp_dispatch_del(r->dp, &e->addrs[i], e->id);
		if (err) {
			fw_err("subject %s: can't remove dispatch: %s", e->meta.name,
			       strerror(-err));
			return err;
		}
	}
	e->naddrs = 0;
	fw_info("subject %s: removed (id %u)", e->meta.name, e->id);
	return release_id(r, e);
}

static int put_dispatch(struct fw_registry *r, const struct fw_ip *addrs, size_t n,
			const struct fw_subject *ks)
{
	for (size_t i = 0; i < n; i++) {
		int err = fw_dp_dispatch_put(r->dp, &addrs[i], ks);

		if (err)
			return err;
	}
	return 0;
}

int fw_reg_upsert(struct fw_registry *r, const struct fw_static_subject *spec,
		  enum fw_origin origin, bool *changed)
{
	struct fw_entry *old = fw_reg_find(r, spec->name), *e = NULL;
	struct fw_compiled *c = NULL;
	struct fw_subject ks;
	__u64 bhash, phash;
	size_t n = 0;
	__u32 id;
	int err;

	if (changed)
		*changed = false;
	err = fw_policy_compile(r->overlay, &spec->policy, &c, &n);
	if (err) {
		fw_err("subject %s: can't compile policy: %s", spec->name, strerror(-err));
		return err;
	}
	phash = fw_compiled_hash(c, n);
	bhash = fw_binding_hash(spec);

	if (old && old->meta.binding_hash == bhash) {
		/* same binding: policy swap in place, learned addresses stay */
		old->adopted = false;
		if (old->meta.policy_hash != phash) {
			err = fw_dp_rules_swap(r->dp, old->id, c, n);
			if (err)
				goto out;
			old->meta.policy_hash = phash;
			if (changed)
				*changed = true;
		}
		build_ksub(&ks, old->id, spec);
		if (memcmp(&ks, &old->ksub, sizeof(ks)) != 0) {
			err = put_dispatch(r, old->addrs, old->naddrs, &ks);
			if (err)
				goto out;
			old->ksub = ks;
			if (changed)
				*changed = true;
		}
		old->meta.origin = origin;
		err = fw_dp_meta_put(r->dp, old->id, &old->meta);
		goto out;
	}

	/* new subject, or a rebind: a fresh id, so nothing learned under the
	 * old binding can pass under the new one */
	id = alloc_id(r);
	if (!id) {
		fw_err("subject %s: no free subject id (limit %u)", spec->name,
		       FW_MAX_SUBJECTS - 1);
		err = -ENOSPC;
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	e->id = id;
	snprintf(e->meta.name, sizeof(e->meta.name), "%s", spec->name);
	snprintf(e->meta.ifname, sizeof(e->meta.ifname), "%s", spec->ifname);
	e->meta.binding_hash = bhash;
	e->meta.policy_hash = phash;
	e->meta.origin = origin;
	memcpy(e->addrs, spec->addrs, sizeof(spec->addrs[0]) * spec->naddrs);
	e->naddrs = spec->naddrs;
	build_ksub(&e->ksub, id, spec);

	/* a free id has nothing learned: release_id() flushed it, and
	 * fw_reg_init() swept what an interrupted release left behind */
	err = fw_dp_subject_reset(r->dp, id);
	if (!err)
		err = fw_dp_rules_swap(r->dp, id, c, n);
	if (!err)
		err = fw_dp_meta_put(r->dp, id, &e->meta);
	if (err)
		goto undo;
	r->by_id[id] = e;
	r->count++;
	err = put_dispatch(r, e->addrs, e->naddrs, &e->ksub);
	if (err) {
		/* leave what was written for the retry; dispatch is all or part */
		fw_err("subject %s: can't program dispatch: %s", spec->name, strerror(-err));
		goto out;
	}
	if (changed)
		*changed = true;
	if (old) {
		for (size_t i = 0; i < old->naddrs; i++) {
			if (has_addr(e->addrs, e->naddrs, &old->addrs[i]))
				continue;
			fw_dp_dispatch_del(r->dp, &old->addrs[i], old->id);
		}
		fw_info("subject %s: rebound (id %u -> %u)", spec->name, old->id, id);
		err = release_id(r, old);
	} else {
		fw_info("subject %s: added (id %u, %s)", spec->name, id,
			spec->state == FW_STATE_ACTIVE ? "active" : "denying");
	}
	goto out;

undo:
	fw_dp_rules_clear(r->dp, id);
	fw_dp_meta_del(r->dp, id);
	free(e);
out:
	free(c);
	return err;
}

int fw_reg_sync_static(struct fw_registry *r, const struct fw_cfg *cfg, bool prune_adopted)
{
	int err, ret = 0;

	r->overlay = &cfg->overlay;
	for (size_t i = 0; i < cfg->nsubjects; i++) {
		err = fw_reg_upsert(r, &cfg->subjects[i], FW_ORIGIN_STATIC, NULL);
		if (err && !ret)
			ret = err;
	}
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		struct fw_entry *e = r->by_id[id];
		bool wanted = false;

		if (!e)
			continue;
		for (size_t i = 0; i < cfg->nsubjects && !wanted; i++)
			wanted = strncmp(cfg->subjects[i].name, e->meta.name, FW_NAME_LEN) == 0;
		/* upsert confirmed every wanted subject; what is still adopted
		 * here nobody has claimed */
		if (e->adopted ? !prune_adopted : (e->meta.origin != FW_ORIGIN_STATIC || wanted))
			continue;
		err = fw_reg_remove(r, e);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

int fw_reg_links_changed(struct fw_registry *r)
{
	int ret = 0;

	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		struct fw_entry *e = r->by_id[id];
		struct fw_subject ks;
		int err;

		if (!e || !e->meta.ifname[0])
			continue;
		ks = e->ksub;
		ks.ifindex = resolve_ifindex(e->meta.ifname);
		if (ks.ifindex == e->ksub.ifindex)
			continue;
		err = put_dispatch(r, e->addrs, e->naddrs, &ks);
		if (err) {
			ret = err;
			continue;
		}
		fw_info("subject %s: host interface %s is now ifindex %d", e->meta.name,
			e->meta.ifname, ks.ifindex == FW_IFINDEX_MISSING ? -1 : (int)ks.ifindex);
		e->ksub = ks;
	}
	return ret;
}
