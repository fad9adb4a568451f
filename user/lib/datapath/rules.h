/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Inside datapath/: the rule storage's life cycle (rules.c), for load.c
 * and datapath.c. */
#ifndef FW_DATAPATH_RULES_H
#define FW_DATAPATH_RULES_H

#include <stdbool.h>

#include "datapath/datapath.h"

/* Sets up dp->rules. populate: give every slot of fastwall_rules_v2 its
 * trie (slots already holding one are kept when check is set); old_fd >= 0:
 * ABI 1's fastwall_rules, whose tries are copied in under generation 0. */
int fw_dp_rules_open(struct fw_dp *dp, bool populate, bool check, int old_fd);
void fw_dp_rules_close(struct fw_dp *dp);
/* fw_dp_reap's part: the rules of the dead ids, after a grace period. */
int fw_dp_rules_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);
/* Deletes every key of fd that keep() refuses (datapath.c). */
int fw_dp_prune(int fd, size_t key_size, bool (*keep)(const void *key, const void *ctx),
		const void *ctx);

#endif /* FW_DATAPATH_RULES_H */
