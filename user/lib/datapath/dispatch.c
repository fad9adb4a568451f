// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Dispatch (which subject an address is), the subjects' records and the
 * epoch that ends the cached answers (see dispatch.h). */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/dispatch.h"

/* Several threads edit rules: the increment must not lose one, or an
 * answer cached between two edits could outlive the second. */
static pthread_mutex_t epoch_lock = PTHREAD_MUTEX_INITIALIZER;

int fw_dp_rules_epoch_bump(struct fw_dp *dp)
{
	__u32 zero = 0;
	__u64 epoch = 0;
	int err = 0;

	pthread_mutex_lock(&epoch_lock);
	if (bpf_map_lookup_elem(dp->rules_epoch_fd, &zero, &epoch) ||
	    (epoch++, bpf_map_update_elem(dp->rules_epoch_fd, &zero, &epoch, BPF_ANY)))
		err = -errno;
	pthread_mutex_unlock(&epoch_lock);
	if (err)
		fw_err("can't bump fastwall_rules_epoch: %s", strerror(-err));
	return err;
}

/* TC ingress keeps per CPU a copy of what a source's dispatch value
 * says (fastwall_src_slots), tagged with fastwall_rules_epoch, and only
 * of an active subject's value (the denying check comes before a slot
 * is filled). So a write that replaces or removes an active value
 * raises the epoch once it is made, and no packet that starts after
 * the write returns uses a copy of the old value; a write to an address
 * that had no value, or a non-active one, needs no raise: no slot holds
 * a copy of it (the write that ended the last active value raised it).
 * The check and the write are one step under dispatch_lock, so two
 * writers of one address can't both skip the raise. */
static pthread_mutex_t dispatch_lock = PTHREAD_MUTEX_INITIALIZER;
static __u64 dispatch_gen; /* atomic; see fw_dp_dispatch_gen */

/* after the write: a reader that saw the old generation re-reads */
static void dispatch_changed(void)
{
	__atomic_add_fetch(&dispatch_gen, 1, __ATOMIC_RELEASE);
}

__u64 fw_dp_dispatch_gen(void)
{
	return __atomic_load_n(&dispatch_gen, __ATOMIC_ACQUIRE);
}

/* Whether addr's value may be in a slot: it exists and is active (or
 * it can't be read, so assume it). */
static bool dispatch_copied(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *cur)
{
	if (bpf_map_lookup_elem(dp->dispatch_fd, addr, cur))
		return errno != ENOENT;
	return cur->state == FW_STATE_ACTIVE;
}

int fw_dp_dispatch_put(struct fw_dp *dp, const struct fw_ip *addr, const struct fw_subject *s)
{
	struct fw_subject cur;
	bool copied;
	int err, e = 0;

	pthread_mutex_lock(&dispatch_lock);
	copied = dispatch_copied(dp, addr, &cur);
	err = fw_dp_update(dp->dispatch_fd, addr, s, BPF_ANY, "fastwall_dispatch");
	dispatch_changed();
	if (copied)
		e = fw_dp_rules_epoch_bump(dp);
	pthread_mutex_unlock(&dispatch_lock);
	return err ? err : e;
}

/* Deletes addr's value and, where that value may be in a slot (copied),
 * raises the epoch; under dispatch_lock. */
static int dispatch_delete(struct fw_dp *dp, const struct fw_ip *addr, bool copied)
{
	int err = 0, e = 0;

	if (bpf_map_delete_elem(dp->dispatch_fd, addr) && errno != ENOENT)
		err = -errno;
	dispatch_changed();
	if (copied)
		e = fw_dp_rules_epoch_bump(dp);
	return err ? err : e;
}

int fw_dp_dispatch_del(struct fw_dp *dp, const struct fw_ip *addr, __u32 id)
{
	struct fw_subject cur;
	int err = 0;

	pthread_mutex_lock(&dispatch_lock);
	if (bpf_map_lookup_elem(dp->dispatch_fd, addr, &cur))
		err = errno == ENOENT ? 0 : -errno;
	else if (cur.id == id)
		err = dispatch_delete(dp, addr, cur.state == FW_STATE_ACTIVE);
	pthread_mutex_unlock(&dispatch_lock);
	return err;
}

int fw_dp_dispatch_drop(struct fw_dp *dp, const struct fw_ip *addr)
{
	struct fw_subject cur;
	int err;

	pthread_mutex_lock(&dispatch_lock);
	err = dispatch_delete(dp, addr, dispatch_copied(dp, addr, &cur));
	pthread_mutex_unlock(&dispatch_lock);
	return err;
}

int fw_dp_dispatch_lookup(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *out)
{
	return fw_dp_lookup(dp->dispatch_fd, addr, out);
}

int fw_dp_dispatch_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->dispatch_fd, fn, ctx);
}

int fw_dp_meta_put(struct fw_dp *dp, __u32 id, const struct fw_subject_meta *m)
{
	return fw_dp_update(dp->meta_fd, &id, m, BPF_ANY, "fastwall_subject_meta");
}

int fw_dp_meta_del(struct fw_dp *dp, __u32 id)
{
	if (bpf_map_delete_elem(dp->meta_fd, &id) && errno != ENOENT)
		return -errno;
	return 0;
}

int fw_dp_meta_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->meta_fd, fn, ctx);
}
