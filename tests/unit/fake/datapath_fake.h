/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An in-memory data plane behind the data path's headers, for unit tests of
 * the layers above it (registry, learner, actions handler) without root or
 * BPF: each map is a hash table, a rule swap records the compiled set the
 * subject's trie would hold, and a test can look at every map, add what
 * the packet path would write (connection records), and make the next
 * call of one operation fail. Not thread-safe beyond what the tests do. */
#ifndef FW_DATAPATH_FAKE_H
#define FW_DATAPATH_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/datapath.h"

enum fake_op {
	FAKE_DISPATCH_PUT,
	FAKE_POLICY_SWAP,
	FAKE_META_PUT,
	FAKE_LEASE_PUT,
	FAKE_DISPATCH_DEL,
	FAKE_OP_MAX,
};

/* A data plane whose maps start empty; free with fake_dp_free. */
struct fw_dp *fake_dp_new(void);
void fake_dp_free(struct fw_dp *dp);

/* The next call of op fails with err (negative errno). */
void fake_fail_next(struct fw_dp *dp, enum fake_op op, int err);

size_t fake_dispatch_count(struct fw_dp *dp);
/* The subject's live rules as the trie holds them; NULL when it has no
 * trie (never swapped in, or cleared). */
const struct fw_compiled *fake_rules(struct fw_dp *dp, __u32 id, size_t *n);
/* The verdict the longest-prefix match of addr gives in id's trie
 * (rule.action), or -1 without a trie or a match. */
int fake_rules_verdict(struct fw_dp *dp, __u32 id, const struct fw_ip *addr);
/* fastwall_rules_epoch: how many times the cached answers were ended. */
__u64 fake_epoch(struct fw_dp *dp);
/* How many times id's trie was swapped or edited. */
unsigned int fake_rules_changes(struct fw_dp *dp, __u32 id);
/* Of those, how many were edits of one entry in place. */
unsigned int fake_rules_edits(struct fw_dp *dp, __u32 id);
/* 0, or -ENOENT */
int fake_meta_get(struct fw_dp *dp, __u32 id, struct fw_subject_meta *out);
int fake_lease_get(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, struct fw_lease *out);
/* Entries of one subject (~0u: of all) in fastwall_learned,
 * fastwall_conns, fastwall_ports, fastwall_learned_ports and
 * fastwall_learned_names; fastwall_names has no subject. */
size_t fake_learned_count(struct fw_dp *dp, __u32 id);
size_t fake_conns_count(struct fw_dp *dp, __u32 id);
size_t fake_ports_count(struct fw_dp *dp, __u32 id);
size_t fake_lports_count(struct fw_dp *dp, __u32 id);
size_t fake_lease_names_count(struct fw_dp *dp, __u32 id);
size_t fake_names_count(struct fw_dp *dp);
/* What the packet path writes: a connection record (and its count). */
void fake_conn_put(struct fw_dp *dp, const struct fw_conn_key *k, const struct fw_conn *v);
/* How many times id's counters were zeroed (fw_dp_subject_reset). */
unsigned int fake_resets(struct fw_dp *dp, __u32 id);
/* The rate fastwall_bandwidth holds for id; 0: no entry. */
__u64 fake_bw_rate(struct fw_dp *dp, __u32 id);

#endif /* FW_DATAPATH_FAKE_H */
