/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The pinned maps, one table: the fd fields of struct fw_dp, opening,
 * closing, purging and the layout checks all come from these lists. The
 * key and value types are in fastwall/abi.h, the definitions in bpf/lib. */
#ifndef FW_DATAPATH_MAPS_H
#define FW_DATAPATH_MAPS_H

/* X(pin name = BPF map name, struct fw_dp field, layout version, late).
 * A map whose type, key, value or size changes gets a new name with the
 * next version (_v2, _v3) and an entry in FW_DP_RETIRED_MAPS for the one
 * it replaces; an unchanged one keeps name, version and pinned state.
 * late (1): added to an ABI after its release, without a new version, so
 * pins of that ABI may lack it; fastwalld creates it at start (libbpf
 * pins what is missing), and a reader of the pins (the CLI) finds -1
 * until then. */
#define FW_DP_MAPS(X)                                                                              \
	X(fastwall_dispatch, dispatch_fd, 1, 0)                                                    \
	X(fastwall_rules_v2, rules_fd, 2, 0)                                                       \
	X(fastwall_learned, learned_fd, 1, 0)                                                      \
	X(fastwall_conns, conns_fd, 1, 0)                                                          \
	X(fastwall_local, local_fd, 1, 0)                                                          \
	X(fastwall_local_ports, local_ports_fd, 1, 0)                                              \
	X(fastwall_doh, doh_fd, 1, 0)                                                              \
	X(fastwall_config, config_fd, 1, 0)                                                        \
	X(fastwall_stats_v2, stats_fd, 2, 0)                                                       \
	X(fastwall_subject_stats_v2, subject_stats_fd, 2, 0)                                       \
	X(fastwall_event_budget, budget_fd, 1, 0)                                                  \
	X(fastwall_subject_meta, meta_fd, 1, 0)                                                    \
	X(fastwall_pod_flows, pod_flows_fd, 1, 0)                                                  \
	X(fastwall_frags, frags_fd, 1, 0)                                                          \
	X(fastwall_events, events_fd, 1, 0)                                                        \
	X(fastwall_ports, ports_fd, 1, 0)                                                          \
	X(fastwall_dns_nat, dns_nat_fd, 1, 0)                                                      \
	X(fastwall_l2_ports, l2_ports_fd, 1, 0)                                                    \
	X(fastwall_l2_macs, l2_macs_fd, 1, 0)                                                      \
	X(fastwall_l2_lladdrs, l2_lladdrs_fd, 1, 0)                                                \
	X(fastwall_conn_count, conn_count_fd, 1, 0)                                                \
	X(fastwall_learned_ports, learned_ports_fd, 1, 0)                                          \
	X(fastwall_names, names_fd, 1, 0)                                                          \
	X(fastwall_learned_names, learned_names_fd, 1, 0)                                          \
	X(fastwall_cgroups, cgroups_fd, 1, 1)                                                      \
	X(fastwall_cg_dns, cg_dns_fd, 1, 1)                                                        \
	X(fastwall_subject_rows, subject_rows_fd, 1, 1)                                            \
	X(fastwall_rules_epoch, rules_epoch_fd, 1, 1)                                              \
	X(fastwall_rule_sets, rule_sets_fd, 1, 1)                                                  \
	X(fastwall_rule_ranges, rule_ranges_fd, 1, 1)                                              \
	X(fastwall_range_tables, range_tables_fd, 1, 1)                                            \
	X(fastwall_events_lost, events_lost_fd, 1, 1)                                              \
	X(fastwall_l7_ports, l7_ports_fd, 1, 1)                                                    \
	X(fastwall_l7_nat, l7_nat_fd, 1, 1)                                                        \
	X(fastwall_l7_count, l7_count_fd, 1, 1)                                                    \
	X(fastwall_bandwidth, bandwidth_fd, 1, 1)                                                  \
	X(fastwall_bandwidth_stats, bandwidth_stats_fd, 1, 1)

/* Maps of this ABI that no program uses any more, and that held nothing
 * worth carrying: a start unpins them (the old programs keep their
 * reference until they are replaced), and so does a purge. X(pin name).
 * fastwall_rule_cache: the answer cache before fastwall_subject_rows. */
#define FW_DP_DROPPED_MAPS(X) X(fastwall_rule_cache)

/* The port guard's own maps (bpf/guard.bpf.c, datapath/guard.c): pinned
 * beside these when a guard is configured, created by the start that
 * first needs them (nothing else depends on them, so no ABI version
 * changes). The guard shares fastwall_config, fastwall_stats_v2 and the
 * event maps with the TC programs. X(pin name). */
#define FW_GUARD_MAPS(X)                                                                           \
	X(fastwall_guard_ports)                                                                    \
	X(fastwall_guard_trusted)                                                                  \
	X(fastwall_guard_frags)                                                                    \
	X(fastwall_guard_hooks)

/* The cgroup programs' own maps (bpf/lib/cgroup.h): per-socket state
 * that nothing else reads and no restart needs, created with the
 * programs and never pinned (fw_cg_load shares every other map). X(name). */
#define FW_CG_MAPS(X) X(fastwall_cg_sock)

/* Maps userspace creates beside the BPF object's, when first needed (no
 * program reads them, so pins without one are of the same ABI): X(pin name, struct fw_dp field,
 * type, key size, value size, max entries). The *_carried maps hold what the counters of an earlier
 * ABI had counted, in the layout of their live successor (per CPU): the readers add them up, so the
 * data plane's live counters are never written from userspace (that would lose its increments
 * meanwhile). fastwall_subject_domains: subject id -> the digest of its domain rules as last
 * applied (0: unknown), which fastwall_subject_meta does not hold: a restart compares it and writes
 * no audit record for a subject whose policy and domains are unchanged. */
#define FW_DP_USER_MAPS(X)                                                                         \
	X(fastwall_stats_carried, stats_carried_fd, BPF_MAP_TYPE_PERCPU_ARRAY, 4,                  \
	  sizeof(struct fw_counter), FW_REASON_SLOTS)                                              \
	X(fastwall_subject_stats_carried, subject_stats_carried_fd, BPF_MAP_TYPE_PERCPU_ARRAY, 4,  \
	  sizeof(struct fw_subject_stats), FW_MAX_SUBJECTS)                                        \
	X(fastwall_subject_domains, subject_domains_fd, BPF_MAP_TYPE_ARRAY, 4, sizeof(__u64),      \
	  FW_MAX_SUBJECTS)

/* Maps of earlier ABIs that a later layout replaced: X(pin name, the last
 * ABI that had it, type, key size, value size, max entries, where its
 * content goes). A migration copies counters there (per CPU, slot by
 * slot, once the old programs are replaced everywhere), ABI 1's
 * fastwall_rules tries into the slot tries of fastwall_rules_v2 (at open,
 * generation 0, which ABI 1's dispatch values carry), and unpins them. */
#define FW_DP_RETIRED_MAPS(X)                                                                      \
	X(fastwall_stats, 1, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, 29, fastwall_stats_carried)         \
	X(fastwall_subject_stats, 1, BPF_MAP_TYPE_PERCPU_ARRAY, 4, 29 * 8, FW_MAX_SUBJECTS,        \
	  fastwall_subject_stats_carried)                                                          \
	X(fastwall_rules, 1, BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4, FW_MAX_SUBJECTS, fastwall_rules_v2)

/* The record of the pinned ABI (struct fw_abi_record); not in the BPF
 * object: only userspace reads it. */
#define FW_DP_ABI_PIN "fastwall_abi"

/* The oldest ABI a migration starts from. */
#define FW_ABI_OLDEST 1

#define FW_DP_MAP_FD_(name, field, version, late)			      int field;
#define FW_DP_USER_MAP_FD_(name, field, type, key, value, max)		      int field;
#define FW_DP_MAP_COUNT_(name, field, version, late)			      +1
#define FW_DP_NMAPS							      (0 FW_DP_MAPS(FW_DP_MAP_COUNT_))
#define FW_DP_NRETIRED							      (0 FW_DP_RETIRED_MAPS(FW_DP_MAP_COUNT_RETIRED_))
#define FW_DP_MAP_COUNT_RETIRED_(name, abi, type, key, value, max, successor) +1
#define FW_DP_NUSER							      (0 FW_DP_USER_MAPS(FW_DP_MAP_COUNT_USER_))
#define FW_DP_MAP_COUNT_USER_(name, field, type, key, value, max)	      +1

#endif /* FW_DATAPATH_MAPS_H */
