/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The kernel side of fastwall seen from userspace: load the TC programs
 * with their maps pinned under a bpffs directory (reusing maps already
 * pinned there, so a restart keeps state), and the settings the programs
 * read. Each concern has its header beside this one: attach.h (TC
 * filters on interfaces), dispatch.h (addresses to subjects, their
 * records, the answers' epoch), rules.h (the rule store), leases.h (what
 * the learner writes), stats.h (counters), cgroup.h, guard.h, l2bind.h,
 * l7.h (layer-7 pinning), explain.h, reasons.h; scan.h walks any map by its fd. Functions return
 * 0 or a negative errno and log what failed with the object it
 * concerned. */
#ifndef FW_DATAPATH_H
#define FW_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/clock.h"
#include "datapath/maps.h"
#include "fastwall/abi.h"
#include "policy/policy.h"

/* the settings bits layer-7 pinning owns (l7.h) */
#define FW_CF_L7_BITS (FW_CF_L7 | FW_CF_L7_QUIC | FW_CF_L7_UP)

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
	__u64 *l7_count;   /* fastwall_l7_count mapped, FW_MAX_SUBJECTS; NULL until asked */
	/* fastwall_subject_rows mapped, rows_cpus x FW_MAX_SUBJECTS; NULL
	 * until asked */
	struct fw_subject_row *rows;
	__u32 rows_cpus;
	bool rows_writable;		/* mapped for writing too (fastwalld's reset) */
	__u32 pinned_abi;		/* what fw_dp_open found: 0 = nothing pinned */
	bool migrating;			/* maps of an older ABI wait for fw_dp_migrate_finish */
	int retired_fd[FW_DP_NRETIRED]; /* those maps, -1 where absent */
	struct fw_dp_rules *rules;	/* the rule store (rules.h) */
	/* per id: its counters and event budget are known to be zero (maps
	 * created by this start, or zeroed by the reaper); NULL: unknown */
	bool *clean;
	/* FW_CF_L7, FW_CF_L7_QUIC, FW_CF_L7_UP as the fw_dp_l7_* functions
	 * (l7.h) last set them, or as the pinned settings held at open:
	 * fw_dp_config_set writes these, not the record's */
	__u32 l7_flags;
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

/* Writes the settings record; its layer-7 bits are the ones l7.h's
 * functions set (dp->l7_flags), whatever c says. */
int fw_dp_config_set(struct fw_dp *dp, const struct fw_config *c);
/* Makes fastwall_local and fastwall_local_ports hold exactly these. */
int fw_dp_local_set(struct fw_dp *dp, const struct fw_ip *addrs, size_t naddrs,
		    const struct fw_port_key *ports, size_t nports);
/* Makes fastwall_doh hold exactly these prefixes (plen over 128 bits). */
int fw_dp_doh_set(struct fw_dp *dp, const struct fw_lpm_key *keys, size_t n);

/* Deletes the learned addresses (and their port sets and names),
 * connection records, layer-7 entries (fastwall_l7_nat), rules (after a
 * grace period) and per-port exceptions of every subject id with
 * dead[id] set, and zeroes their counters and counts: one scan of each
 * map (batched where the kernel can), however many ids. */
int fw_dp_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);

/* fastwall_src_slots, the loaded programs' own cache (not pinned): its
 * fd, -1 without programs. For tests and inspection. */
int fw_dp_src_slots_fd(const struct fw_dp *dp);

/* Routes libbpf's messages through fw_log (warnings only, unless debug). */
void fw_dp_quiet(void);

#endif /* FW_DATAPATH_H */
