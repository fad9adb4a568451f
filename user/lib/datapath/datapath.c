// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The settings the programs read (fastwall_config, the pod-local
 * addresses, the DoH prefixes) and the reaper of dead subjects. Loading
 * and pinning: load.c. See datapath.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "datapath/datapath.h"
#include "datapath/dispatch.h"
#include "datapath/l7.h"
#include "datapath/leases.h"
#include "datapath/rules_store.h"
#include "datapath/scan.h"
#include "datapath/stats.h"

int fw_dp_config_set(struct fw_dp *dp, const struct fw_config *c)
{
	struct fw_config k = *c;
	__u32 zero = 0;
	int err;

	/* a write of the other settings never turns pinning off (l7.h) */
	k.flags = (k.flags & ~(__u32)FW_CF_L7_BITS) | dp->l7_flags;
	err = fw_dp_update(dp->config_fd, &zero, &k, BPF_ANY, "fastwall_config");

	/* TC ingress's cached answers passed the settings' checks (the
	 * pod-local set full or not) under the old ones */
	return err ? err : fw_dp_rules_epoch_bump(dp);
}

struct keyset {
	const void *keys;
	size_t n, size;
};

static bool in_keyset(const void *key, const void *ctx)
{
	const struct keyset *ks = ctx;

	for (size_t i = 0; i < ks->n; i++)
		if (memcmp((const char *)ks->keys + i * ks->size, key, ks->size) == 0)
			return true;
	return false;
}

int fw_dp_local_set(struct fw_dp *dp, const struct fw_ip *addrs, size_t naddrs,
		    const struct fw_port_key *ports, size_t nports)
{
	struct keyset ka = {addrs, naddrs, sizeof(*addrs)};
	struct keyset kp = {ports, nports, sizeof(*ports)};
	struct fw_local l = {};
	__u8 one = 1;
	int err;

	/* what goes first: a full map (the pod had more addresses than fit)
	 * would refuse a new address while the ones that left still sit in
	 * it; an address in both sets stays in the map throughout */
	err = fw_dp_prune(dp->local_fd, sizeof(*addrs), in_keyset, &ka);
	if (!err)
		err = fw_dp_prune(dp->local_ports_fd, sizeof(*ports), in_keyset, &kp);
	if (err)
		return err;
	for (size_t i = 0; !err && i < naddrs; i++)
		err = fw_dp_update(dp->local_fd, &addrs[i], &l, BPF_ANY, "fastwall_local");
	for (size_t i = 0; !err && i < nports; i++)
		err = fw_dp_update(dp->local_ports_fd, &ports[i], &one, BPF_ANY,
				   "fastwall_local_ports");
	/* TC ingress's cached answers are for destinations that were not
	 * pod-local: one that now is must be checked again (after a partial
	 * write too) */
	if (naddrs) {
		int e = fw_dp_rules_epoch_bump(dp);

		err = err ? err : e;
	}
	return err;
}

int fw_dp_doh_set(struct fw_dp *dp, const struct fw_lpm_key *keys, size_t n)
{
	struct keyset ks = {keys, n, sizeof(*keys)};
	__u8 one = 1;
	int err;

	/* stale prefixes first, so a full map takes the new ones */
	err = fw_dp_prune(dp->doh_fd, sizeof(*keys), in_keyset, &ks);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		err = fw_dp_update(dp->doh_fd, &keys[i], &one, BPF_ANY, "fastwall_doh");
		if (err)
			return err;
	}
	return 0;
}

/* The keys of fastwall_learned, fastwall_conns, fastwall_ports and
 * fastwall_learned_ports all start with the subject id. */
static bool subject_alive(const void *key, const void *ctx)
{
	const bool *dead = ctx;
	__u32 id;

	memcpy(&id, key, sizeof(id));
	return id >= FW_MAX_SUBJECTS || !dead[id];
}

int fw_dp_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	int err = fw_dp_prune(dp->learned_fd, sizeof(struct fw_learned_key), subject_alive, dead);

	if (!err)
		err = fw_dp_prune(dp->conns_fd, sizeof(struct fw_conn_key), subject_alive, dead);
	if (!err)
		err = fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), subject_alive,
				  dead);
	if (!err)
		err = fw_dp_prune(dp->learned_ports_fd, sizeof(struct fw_port_rule_key),
				  subject_alive, dead);
	if (!err)
		err = fw_dp_prune(dp->learned_names_fd, sizeof(struct fw_learned_key),
				  subject_alive, dead);
	if (!err)
		err = fw_dp_l7_reap(dp, dead);
	if (!err)
		err = fw_dp_rules_reap(dp, dead);
	if (!err && fw_dp_conn_counts(dp)) {
		/* their records are gone: a dead id holds none */
		for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
			if (dead[id])
				__atomic_store_n(&dp->conn_count[id], 0, __ATOMIC_RELAXED);
	}
	/* zeroed here, off the request path, the next subject of the id
	 * starts without a kernel write for them */
	for (__u32 id = 0; id < FW_MAX_SUBJECTS && !err && dp->clean; id++)
		if (dead[id] && !dp->clean[id] && fw_dp_subject_zero(dp, id) == 0)
			dp->clean[id] = true;
	return err;
}
