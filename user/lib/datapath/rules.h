/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The rule store: a subject's compiled policy lives under a generation,
 * which its dispatch values name (fw_subject.rules_gen), in one of three
 * forms by size: a small set (fastwall_rule_sets), a range table
 * (fastwall_range_tables), or its slot's LPM trie (each slot of
 * fastwall_rules_v2 holds one for good; nothing here writes a slot of the
 * outer map after the first start). A change either edits one entry of
 * the live trie in place or writes a new generation beside the live one;
 * the caller then points dispatch at it, and fw_dp_policy_retire has the
 * old one deleted after an RCU grace period by a background worker.
 * Functions return 0 or a negative errno. */
#ifndef FW_DATAPATH_RULES_H
#define FW_DATAPATH_RULES_H

#include <stdbool.h>

#include "datapath/datapath.h"

/* Makes set subject id's live rules; old is what they are now (NULL, or
 * no entries: not known, as for a subject never written). When the two
 * differ in one entry, neither has per-port exceptions and the live rules
 * are a trie, that entry is edited in place (fw_dp_rules_edit: one
 * atomic step, nothing to retire); otherwise set is written as a new
 * generation (fw_dp_policy_swap) and *swapped is set: the caller points
 * dispatch at fw_dp_rules_gen(id), then calls fw_dp_policy_retire with
 * the port state from before. *port_state as for fw_dp_policy_swap. */
int fw_dp_policy_update(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *old,
			const struct fw_compiled_set *set, __u32 *port_state, bool *swapped);
/* Writes set under a new generation of subject id, with the per-port
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

#endif /* FW_DATAPATH_RULES_H */
