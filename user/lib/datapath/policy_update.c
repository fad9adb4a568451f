// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's choice between an edit in place and a swap (see
 * fw_dp_policy_update in rules.h). It reads the store only through
 * rules.h, so the in-memory data plane of the unit tests runs the same
 * choice over its own store. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/rules.h"

static int key_cmp(const void *a, const void *b)
{
	const struct fw_compiled *x = a, *y = b;

	if (x->key.prefixlen != y->key.prefixlen)
		return x->key.prefixlen < y->key.prefixlen ? -1 : 1;
	return memcmp(&x->key.addr, &y->key.addr, sizeof(x->key.addr));
}

/* When set differs from old, the live trie's content, in exactly one
 * entry and neither uses per-port exceptions, that entry is changed in
 * the live trie by one map operation: one atomic step from the old set to
 * the new, with no new generation and no grace period. Returns 1 when it
 * did, 0 when a whole swap is needed, or a negative errno. */
static int edit_one(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *old,
		    const struct fw_compiled_set *set)
{
	struct fw_compiled *a = NULL, *b = NULL, op;
	size_t i = 0, j = 0, diffs = 0;
	bool del = false;
	int ret = 0;

	if (!old || !old->entries || old->nports || set->nports || old->n + 1 < set->n ||
	    set->n + 1 < old->n)
		return 0;
	/* a small set or range table is replaced whole, never edited
	 * (fw_dp_rules_edit would refuse): no need to sort and compare both
	 * sets to find that out */
	if (fw_dp_rules_gen(dp, id) & FW_GEN_FORMS)
		return 0;
	a = malloc(old->n * sizeof(*a));
	b = malloc(set->n * sizeof(*b));
	if (!a || !b)
		goto out;
	memcpy(a, old->entries, old->n * sizeof(*a));
	memcpy(b, set->entries, set->n * sizeof(*b));
	qsort(a, old->n, sizeof(*a), key_cmp);
	qsort(b, set->n, sizeof(*b), key_cmp);
	while ((i < old->n || j < set->n) && diffs < 2) {
		int c = i == old->n ? 1 : j == set->n ? -1 : key_cmp(&a[i], &b[j]);

		if (c < 0) {
			op = a[i++];
			del = true;
			diffs++;
		} else if (c > 0) {
			op = b[j++];
			del = false;
			diffs++;
		} else {
			if (memcmp(&a[i].rule, &b[j].rule, sizeof(a[i].rule))) {
				op = b[j];
				del = false;
				diffs++;
			}
			i++;
			j++;
		}
	}
	if (diffs != 1)
		goto out;
	ret = fw_dp_rules_edit(dp, id, &op, del);
	if (!ret)
		ret = 1;
	else if (ret == -EOPNOTSUPP)
		ret = 0; /* a small set: replaced as a whole, as cheaply */
out:
	free(a);
	free(b);
	return ret;
}

int fw_dp_policy_update(struct fw_dp *dp, __u32 id, const struct fw_compiled_set *old,
			const struct fw_compiled_set *set, __u32 *port_state, bool *swapped)
{
	__u32 gen;
	int err = edit_one(dp, id, old, set);

	*swapped = false;
	if (err)
		return err < 0 ? err : 0;
	err = fw_dp_policy_swap(dp, id, set, port_state, &gen);
	*swapped = !err;
	return err;
}
