// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the policy JSON of binding.input and policy pushes.
 * An accepted policy must survive fw_policy_to_json and back unchanged in
 * default, rule count, kinds and actions; it is then merged into itself
 * (a no-op on targets) and its first target removed (idempotently). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/envelope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_policy p, q, m;
	char err[256];
	char *js;

	err[0] = '\0';
	if (fw_policy_from_json((const char *)data, size, &p, err, sizeof(err))) {
		if (!err[0] || p.nrules || p.rules)
			abort();
		return 0;
	}
	js = fw_policy_to_json(&p);
	if (!js)
		abort();
	if (fw_policy_from_json(js, strlen(js), &q, err, sizeof(err)))
		abort();
	if (q.default_action != p.default_action || q.nrules != p.nrules)
		abort();
	for (size_t i = 0; i < p.nrules; i++) {
		if (q.rules[i].kind != p.rules[i].kind || q.rules[i].action != p.rules[i].action ||
		    q.rules[i].nports != p.rules[i].nports ||
		    strcmp(q.rules[i].target, p.rules[i].target))
			abort();
	}
	free(js);
	fw_policy_free(&q);

	if (fw_policy_copy(&m, &p) == 0) {
		size_t before = m.nrules;

		/* merging a policy into itself keeps one rule per target and
		 * never grows it */
		if (fw_policy_merge(&m, &p) == 0 && m.nrules > before)
			abort();
		if (m.nrules) {
			const char *t[1];
			size_t n;

			t[0] = strdup(m.rules[0].target);
			if (t[0]) {
				fw_policy_remove_targets(&m, t, 1);
				n = m.nrules;
				fw_policy_remove_targets(&m, t, 1);
				if (m.nrules != n)
					abort();
				for (size_t i = 0; i < m.nrules; i++) {
					if (!strcmp(m.rules[i].target, t[0]))
						abort();
				}
				free((char *)t[0]);
			}
		}
		fw_policy_free(&m);
	}
	fw_policy_free(&p);
	return 0;
}
