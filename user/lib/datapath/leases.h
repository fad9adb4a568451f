/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the learner writes and reads: leases (fastwall_learned, an
 * address a subject may reach until a time), their port sets
 * (fastwall_learned_ports), the names that taught them (fastwall_names,
 * fastwall_learned_names), and the connection records and counts of the
 * data plane. The learner and the actions handler reach them only through
 * these, so that they run over an in-memory data plane in unit tests.
 * Functions return 0 or a negative errno; scans call fn as fw_dp_scan
 * does. */
#ifndef FW_DATAPATH_LEASES_H
#define FW_DATAPATH_LEASES_H

#include <stddef.h>

#include "datapath/datapath.h"
#include "datapath/scan.h"

int fw_dp_learned_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns);
int fw_dp_learned_del(struct fw_dp *dp, __u32 id, const struct fw_ip *addr);
/* fw_dp_learned_put with the lease's port set (0 = every port). */
int fw_dp_lease_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns,
		    __u32 portset);
/* Writes (or deletes) the ports of learned port set {id, set}; a failed
 * write leaves the ports written so far, for the caller's delete. */
int fw_dp_lports_put(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n);
void fw_dp_lports_del(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n);

/* struct fw_learned_key -> struct fw_lease */
int fw_dp_learned_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* struct fw_port_rule_key -> __u8, the learned port sets */
int fw_dp_lports_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* struct fw_conn_key -> struct fw_conn */
int fw_dp_conns_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* Deletes a connection record; -ENOENT when the data plane did first. */
int fw_dp_conn_del(struct fw_dp *dp, const struct fw_conn_key *k);
/* Rewrites a connection record that is still there (a record the data
 * plane dropped stays dropped: -ENOENT). */
int fw_dp_conn_update(struct fw_dp *dp, const struct fw_conn_key *k, const struct fw_conn *v);
/* Stores name id of fastwall_names; -EEXIST when the id is taken. */
int fw_dp_name_add(struct fw_dp *dp, __u32 id, const struct fw_lease_name *v);
int fw_dp_name_del(struct fw_dp *dp, __u32 id);
/* __u32 id -> struct fw_lease_name */
int fw_dp_names_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* Which names taught a lease (fastwall_learned_names); get: -ENOENT when
 * none were kept. */
int fw_dp_lease_names_put(struct fw_dp *dp, const struct fw_learned_key *k,
			  const struct fw_lease_names *v);
int fw_dp_lease_names_get(struct fw_dp *dp, const struct fw_learned_key *k,
			  struct fw_lease_names *out);
int fw_dp_lease_names_del(struct fw_dp *dp, const struct fw_learned_key *k);

/* fastwall_conn_count mapped into memory (FW_MAX_SUBJECTS counters, which
 * the data plane adds to atomically: change them only with __atomic
 * operations), or NULL when the kernel refuses the mapping. */
__u64 *fw_dp_conn_counts(struct fw_dp *dp);

#endif /* FW_DATAPATH_LEASES_H */
