/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The subject registry: fastwalld's view of every subject it has put in
 * the kernel, by name, with the id, binding and rule-set hash it holds
 * there. It is the one writer of subjects to the data plane; it adopts the
 * subjects it finds pinned after a restart. Functions return 0 or a
 * negative errno. */
#ifndef FW_SUBJECTS_H
#define FW_SUBJECTS_H

#include <stdbool.h>

#include "config.h"
#include "datapath.h"

struct fw_entry {
	__u32 id;
	struct fw_subject ksub; /* as written to fastwall_dispatch */
	struct fw_subject_meta meta;
	struct fw_ip addrs[FW_SUBJECT_MAX_ADDRS];
	size_t naddrs;
	bool adopted; /* found in the kernel at start, not yet reconfirmed */
};

struct fw_registry {
	struct fw_dp *dp;
	const struct fw_policy *overlay; /* operator rules, may be NULL */
	struct fw_entry *by_id[FW_MAX_SUBJECTS];
	size_t count;
};

/* Adopts the subjects pinned in dp's maps (marked adopted). */
int fw_reg_init(struct fw_registry *r, struct fw_dp *dp);
void fw_reg_free(struct fw_registry *r);
struct fw_entry *fw_reg_find(struct fw_registry *r, const char *name);

/* Makes the kernel hold spec: a new subject, a policy swap in place (same
 * binding: same id, learned addresses kept), or a rebind (binding changed:
 * new id, learned addresses dropped). Rules go in before dispatch, so an
 * active subject is never seen without its rule set. *changed (may be
 * NULL) tells whether anything in the kernel changed. */
int fw_reg_upsert(struct fw_registry *r, const struct fw_static_subject *spec,
		  enum fw_origin origin, bool *changed);
/* Removes every trace of the subject from the kernel. */
int fw_reg_remove(struct fw_registry *r, struct fw_entry *e);
/* Upserts every static subject of cfg and removes static subjects that cfg
 * no longer has (and adopted ones nobody confirmed, when prune_adopted). */
int fw_reg_sync_static(struct fw_registry *r, const struct fw_cfg *cfg, bool prune_adopted);
/* Re-resolves host interface names after links came or went. */
int fw_reg_links_changed(struct fw_registry *r);

__u64 fw_binding_hash(const struct fw_static_subject *spec);

#endif /* FW_SUBJECTS_H */
