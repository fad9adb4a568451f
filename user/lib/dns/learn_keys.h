/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The learner's settings (struct fw_learn_config) and their configuration
 * keys: dns.* (cap, refresh round, idle connections) and dns.lease.*, with
 * bounds and defaults (common/cfgkeys.h). fw_learn_config_init takes its
 * defaults from here; fw_learn_config_check holds the rules between keys.
 * Apart from dns/learn.h so that the configuration can hold the struct
 * without the learner's dependencies. */
#ifndef FW_LEARN_KEYS_H
#define FW_LEARN_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#include "common/cfgkeys.h"

struct fw_learn_config {
	__u32 lease_add_s;	   /* lease = clamp(ttl + add, min, max) */
	__u32 lease_min_s;	   /* also the renewal of a connection's destination */
	__u32 lease_max_s;	   /* also the TTL cap of forwarded answers */
	__u32 max_per_subject;	   /* learned addresses per subject; 0 = no cap */
	__u64 refresh_interval_ns; /* fw_learn_tick period */
	__u64 tcp_idle_ns;	   /* an open connection silent this long is gone */
	__u64 close_linger_ns;	   /* a closed connection's record is kept this long */
	__u64 gc_grace_ns;	   /* an expired lease stays (as "lease-expired") this long */
	__u32 event_burst;	   /* denied-query events per subject back to back */
	__u64 event_interval_ns;   /* then one per interval; 0 = no events */
};

/* the keys' defaults, and the learner's own for the rest */
void fw_learn_config_init(struct fw_learn_config *c);

extern const struct fw_cfgtable fw_learn_keys;	     /* dns.* */
extern const struct fw_cfgtable fw_learn_lease_keys; /* dns.lease.* */

/* lease.min <= lease.max, and two refresh rounds fit in lease.min:
 * -EINVAL and a message naming the keys otherwise. lease_only: the first
 * rule alone (the lease mapping on its own). */
int fw_learn_config_check(const struct fw_learn_config *c, bool lease_only, char *msg,
			  size_t msglen);

#endif /* FW_LEARN_KEYS_H */
