/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The kernel side of fastwall seen from userspace: load the TC programs
 * with their maps pinned under a bpffs directory (reusing maps already
 * pinned there, so a restart keeps state), attach to and detach from
 * interfaces, and program the maps. Functions return 0 or a negative errno
 * and log what failed with the object it concerned. */
#ifndef FW_DATAPATH_H
#define FW_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/clock.h"
#include "datapath/maps.h"
#include "fastwall/abi.h"
#include "policy/policy.h"

#define FW_TC_HANDLE   0xfa57
#define FW_TC_PRIORITY 0xfa5 /* ahead of anything users add at the default priority */

struct egress_bpf;
struct fw_dp_rules;

struct fw_dp {
	struct egress_bpf *skel;
	char pin_root[256];
	bool reused; /* pinned maps existed and were adopted */
	int btf_fd;
	__u32 btf_lpm_key, btf_rule;
	int from_sandbox_fd, to_sandbox_fd;
	/* one per map of maps.h: dispatch_fd, rules_fd, ..., l2_ports_fd
	 * (the ports' link-layer binding, l2bind.h), names_fd */
	FW_DP_MAPS(FW_DP_MAP_FD_)
	/* stats_carried_fd, subject_stats_carried_fd: -1 unless pinned */
	FW_DP_USER_MAPS(FW_DP_USER_MAP_FD_)
	__u64 *conn_count; /* fastwall_conn_count mapped, FW_MAX_SUBJECTS; NULL until asked */
	/* fastwall_subject_rows mapped, rows_cpus x FW_MAX_SUBJECTS; NULL
	 * until asked */
	struct fw_subject_row *rows;
	__u32 rows_cpus;
	bool rows_writable;		/* mapped for writing too (fastwalld's reset) */
	__u32 pinned_abi;		/* what fw_dp_open found: 0 = nothing pinned */
	bool migrating;			/* maps of an older ABI wait for fw_dp_migrate_finish */
	int retired_fd[FW_DP_NRETIRED]; /* those maps, -1 where absent */
	struct fw_dp_rules *rules;	/* the slot tries and their worker (rules.c) */
	/* per id: its counters and event budget are known to be zero (maps
	 * created by this start, or zeroed by the reaper); NULL: unknown */
	bool *clean;
};

/* Loads the programs; maps already pinned under pin_root are reused,
 * missing ones are created and pinned. Pins of an older ABI are
 * migrated: unchanged maps reused, replaced ones created beside them; the
 * old ones stay pinned (the old programs may still run) until
 * fw_dp_migrate_finish carries their counters over. Pins of a newer or unknown
 * ABI, or a pinned map whose layout is not the one its name promises,
 * are refused (-EPROTO) before anything pinned changes. */
int fw_dp_open(const char *pin_root, struct fw_dp **out);
/* After the new programs replaced the old ones on every interface: copies
 * what the old counters hold into the *_carried maps (which the stats
 * readers add), unpins the replaced maps and writes the ABI record. Nothing to do (0) without a
 * migration. A crash before it leaves the old pins, and the next fw_dp_open migrates again. */
int fw_dp_migrate_finish(struct fw_dp *dp);
/* Opens only the pinned maps (for the CLI); programs are not loaded.
 * -EPROTO, with a message, when the pins are of another ABI. */
int fw_dp_open_pinned(const char *pin_root, struct fw_dp **out);
void fw_dp_close(struct fw_dp *dp);
/* Unpins every fastwall map of every known ABI and the ABI record under
 * pin_root, and removes the directory. */
int fw_dp_purge(const char *pin_root);

/* Creates clsact on ifindex and puts fw_from_sandbox/egress there,
 * replacing fastwall's own filters (atomically) when present. */
int fw_dp_attach(struct fw_dp *dp, int ifindex);
/* Removes fastwall's filters from ifindex; -ENOENT when none. */
int fw_dp_detach(int ifindex);
/* true when ifindex carries a fastwall ingress filter */
bool fw_dp_attached(int ifindex);

int fw_dp_config_set(struct fw_dp *dp, const struct fw_config *c);
/* Makes fastwall_local and fastwall_local_ports hold exactly these. */
int fw_dp_local_set(struct fw_dp *dp, const struct fw_ip *addrs, size_t naddrs,
		    const struct fw_port_key *ports, size_t nports);
/* Makes fastwall_doh hold exactly these prefixes (plen over 128 bits). */
int fw_dp_doh_set(struct fw_dp *dp, const struct fw_lpm_key *keys, size_t n);

/* Points addr at subject s (one atomic update). */
int fw_dp_dispatch_put(struct fw_dp *dp, const struct fw_ip *addr, const struct fw_subject *s);
/* Removes addr's dispatch if it still points at subject id (a newer owner
 * of the address is left alone). */
int fw_dp_dispatch_del(struct fw_dp *dp, const struct fw_ip *addr, __u32 id);
/* Removes addr's dispatch whoever it points at (absent: fine); for a
 * caller that knows the owner. */
int fw_dp_dispatch_drop(struct fw_dp *dp, const struct fw_ip *addr);
/* Ends every answer fastwall_subject_rows and fastwall_src_slots hold
 * (load.c): after any change to entries of a generation that dispatch may
 * name, to a subject's private CIDR in place (an answer stands for its
 * sibling check too), after a dispatch write that replaces or removes
 * an active value (a slot copies such values), and at every start. */
int fw_dp_rules_epoch_bump(struct fw_dp *dp);
/* fastwall_src_slots, the loaded programs' own cache (not pinned): its
 * fd, -1 without programs. For tests and inspection. */
int fw_dp_src_slots_fd(const struct fw_dp *dp);

/* Rule storage (rules.c): each slot of fastwall_rules_v2 holds one LPM
 * trie for good; a subject's rules live there under a generation, which
 * its dispatch values name (fw_subject.rules_gen). A change writes the new
 * generation beside the live one (fw_dp_policy_swap), the caller points
 * dispatch at it, then fw_dp_policy_retire has the old one deleted after an
 * RCU grace period by a background worker. Nothing here writes a slot of
 * the outer map after the first start.
 *
 * Writes c under a new generation of subject id, with the per-port
 * exceptions under the port-set generation the live rules do not use;
 * *gen gets the new generation and *port_state (FW_PORTSET_GEN bit |
 * count) what the new rules use. The live generation is left untouched.
 * Waits for the grace-period worker only when the slot has no room while
 * deletions of id are still pending. */
int fw_dp_policy_swap(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *set,
		      __u32 *port_state, __u32 *gen);
/* Once nothing dispatches to the generations of id before the live one:
 * they, and the per-port exceptions of old_port_state's generation, are
 * deleted by the worker after a grace period. */
void fw_dp_policy_retire(struct fw_dp *dp, __u32 id, __u32 old_port_state);
/* The live generation of subject id's rules (what dispatch must carry). */
__u32 fw_dp_rules_gen(struct fw_dp *dp, __u32 id);
/* Map-in-map slot writes made since fw_dp_open (the first start's
 * pre-population, and nothing after). */
__u64 fw_dp_slot_writes(struct fw_dp *dp);
/* How many slots of fastwall_range_tables fastwalld counts as taken
 * (tables of live and retired generations): the tests hold it against
 * the elements of fastwall_rule_ranges. */
__u32 fw_dp_range_slots_used(struct fw_dp *dp);
/* After a restart: fetches the slot tries' descriptors in the background
 * (a request needing one first fetches it itself). */
void fw_dp_slots_warm(struct fw_dp *dp);
/* Nothing dispatches to id any more: its rules go after a grace period
 * (the worker's; no wait here). */
void fw_dp_rules_release(struct fw_dp *dp, __u32 id);
/* Waits until every deletion handed to the worker is done. */
void fw_dp_rules_settle(struct fw_dp *dp);
/* While programs of an older build may still be attached (old true: a
 * start over reused pins, until attach has replaced them): no range
 * tables, which they can't read; a policy past the small sets takes the
 * trie. */
void fw_dp_rules_old_programs(struct fw_dp *dp, bool old);
/* For tests: writes rule entries one by one from now on, as on kernels
 * without batch updates of LPM tries. */
void fw_dp_rules_no_batch(struct fw_dp *dp);
/* Deletes every rule of subject id, after a grace period (waits for it). */
int fw_dp_rules_clear(struct fw_dp *dp, __u32 id);
/* Changes one entry of subject id's live trie in place (one atomic map
 * operation): del removes c's key, else c is inserted or updated. */
int fw_dp_rules_edit(struct fw_dp *dp, __u32 id, const struct fw_compiled *c, bool del);
/* Deletes per-port exceptions no live trie references (after a crash). */
int fw_dp_ports_sweep(struct fw_dp *dp, bool (*live)(__u32 id, __u32 *gen, const void *ctx),
		      const void *ctx);
/* Deletes every per-port exception of subject id (one walk of the map). */
int fw_dp_ports_flush(struct fw_dp *dp, __u32 id);

int fw_dp_learned_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns);
int fw_dp_learned_del(struct fw_dp *dp, __u32 id, const struct fw_ip *addr);
/* fw_dp_learned_put with the lease's port set (0 = every port). */
int fw_dp_lease_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns,
		    __u32 portset);
/* Writes (or deletes) the ports of learned port set {id, set}; a failed
 * write leaves the ports written so far, for the caller's delete. */
int fw_dp_lports_put(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n);
void fw_dp_lports_del(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n);
/* Deletes the learned addresses (and their port sets), connection records,
 * rules (after a grace period) and per-port exceptions of every subject id
 * with dead[id] set: one scan of each map
 * (batched where the kernel can), however many ids. */
int fw_dp_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);
/* fastwall_conn_count mapped into memory (FW_MAX_SUBJECTS counters, which
 * the data plane adds to atomically: change them only with __atomic
 * operations), or NULL when the kernel refuses the mapping. */
__u64 *fw_dp_conn_counts(struct fw_dp *dp);

/* Calls fn on every entry of the map fd (key, value), in batches of
 * thousands where the map and kernel allow, else key by key; a non-zero
 * return of fn stops the scan and is returned. */
int fw_dp_scan(int fd, int (*fn)(const void *key, const void *val, void *ctx), void *ctx);
/* A growing array of records of one size, for fw_dp_scan callbacks that
 * collect what they see; free(data) when done. */
struct fw_recs {
	char *data;
	size_t n, cap, size;
};
/* Appends a copy of rec (r->size bytes); 0 or -ENOMEM. */
int fw_recs_push(struct fw_recs *r, const void *rec);

/* Deletes each of the n keys (key_size bytes each) of fd; missing keys
 * are no error. Batched where the kernel can. */
int fw_dp_delete_keys(int fd, const void *keys, size_t n, size_t key_size);

/* Zeroes the per-subject counters and event budget of id (on id reuse);
 * no kernel write when they are known to be zero already. */
int fw_dp_subject_reset(struct fw_dp *dp, __u32 id);

int fw_dp_meta_put(struct fw_dp *dp, __u32 id, const struct fw_subject_meta *m);
int fw_dp_meta_del(struct fw_dp *dp, __u32 id);

/* Sums the per-CPU counters, with what an earlier ABI's carried (and,
 * per subject, the policy passes of its rows). */
int fw_dp_stats_read(struct fw_dp *dp, struct fw_counter out[FW_REASON_MAX]);
int fw_dp_subject_stats_read(struct fw_dp *dp, __u32 id, __u64 out[FW_REASON_MAX]);
/* Events the programs could not put in the full ring, by event type
 * (index FW_EVENT_DROP, FW_EVENT_ALLOW), summed over CPUs; all zero while
 * fastwall_events_lost is not pinned yet (an older fastwalld's pins). */
int fw_dp_events_lost_read(struct fw_dp *dp, __u64 out[FW_EVENT_LOST_SLOTS]);

/* Routes libbpf's messages through fw_log (warnings only, unless debug). */
void fw_dp_quiet(void);

/* From the reason table (fastwall/reasons.h): the CLI name ("unknown"
 * for a number not defined), the one-line meaning, and whether it drops
 * (any number not defined does). */
const char *fw_reason_name(__u32 reason);
const char *fw_reason_meaning(__u32 reason);
bool fw_reason_drops(__u32 reason);
/* Prints the reason table as docs/operations.md holds it (Markdown). */
void fw_reasons_markdown(FILE *out);

/* ---- the registry's and the learner's map accesses ----------------------
 * Everything subjects/ and dns/ read or write in the kernel goes through
 * these (and the functions above), never through a map fd, so that those
 * layers run over an in-memory data plane in unit tests. Scans call fn
 * (key, value, ctx) as fw_dp_scan does. */
typedef int (*fw_dp_scan_fn)(const void *key, const void *val, void *ctx);

/* The subject dispatch sends addr to; -ENOENT when none. */
int fw_dp_dispatch_lookup(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *out);
/* struct fw_ip -> struct fw_subject */
int fw_dp_dispatch_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
/* __u32 id -> struct fw_subject_meta */
int fw_dp_meta_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx);
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

#endif /* FW_DATAPATH_H */
