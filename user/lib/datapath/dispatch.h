/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Subjects as the programs see them: dispatch (fastwall_dispatch, an
 * address -> its subject), the subjects' records (fastwall_subject_meta),
 * and the epoch that ends the answers TC ingress cached. The registry
 * reaches them only through these, never a map fd, so that it runs over
 * an in-memory data plane in unit tests (tests/unit/fake). Functions
 * return 0 or a negative errno; scans call fn as fw_dp_scan does. */
#ifndef FW_DATAPATH_DISPATCH_H
#define FW_DATAPATH_DISPATCH_H

#include "datapath/datapath.h"
#include "datapath/scan.h"

/* Ends every answer fastwall_subject_rows and fastwall_src_slots hold
 * (dispatch.c): after any change to entries of a generation that dispatch may
 * name, to a subject's private CIDR in place (an answer stands for its
 * sibling check too), after a dispatch write that replaces or removes
 * an active value (a slot copies such values), and at every start. */
int fw_dp_rules_epoch_bump(struct fw_dp *dp);

/* Points addr at subject s (one atomic update). */
int fw_dp_dispatch_put(struct fw_dp *dp, const struct fw_ip *addr, const struct fw_subject *s);
/* Removes addr's dispatch if it still points at subject id (a newer owner
 * of the address is left alone). */
int fw_dp_dispatch_del(struct fw_dp *dp, const struct fw_ip *addr, __u32 id);
/* Removes addr's dispatch whoever it points at (absent: fine); for a
 * caller that knows the owner. */
int fw_dp_dispatch_drop(struct fw_dp *dp, const struct fw_ip *addr);
/* The subject dispatch sends addr to; -ENOENT when none. */
int fw_dp_dispatch_lookup(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *out);
/* Raised after every put, del and drop of this process (whatever the
 * outcome): a lookup made when it read g is still what the map holds
 * while it reads g, so a reader may keep lookups keyed by it. Any
 * thread; an acquire load. */
__u64 fw_dp_dispatch_gen(void);
/* struct fw_ip -> struct fw_subject */
int fw_dp_dispatch_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);

int fw_dp_meta_put(struct fw_dp *dp, __u32 id, const struct fw_subject_meta *m);
int fw_dp_meta_del(struct fw_dp *dp, __u32 id);
/* __u32 id -> struct fw_subject_meta */
int fw_dp_meta_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* fastwall_subject_domains (load.c creates and pins it at the first put):
 * the digest of subject id's domain rules as last applied, which a
 * restart compares; get says 0 when unknown (pins of a version before the
 * map, or never written). */
int fw_dp_domains_put(struct fw_dp *dp, __u32 id, __u64 hash);
__u64 fw_dp_domains_get(struct fw_dp *dp, __u32 id);

#endif /* FW_DATAPATH_DISPATCH_H */
