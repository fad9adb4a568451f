// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the requests of `fastwall run` as fastwalld reads them
 * from its socket. A refusal says why and holds nothing; an accepted
 * request has a valid name, and formatted again it parses to the same
 * operation, name and rules. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "subjects/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_run_req r, again;
	char err[256];
	char *text;

	err[0] = '\0';
	if (fw_run_req_parse((const char *)data, size, &r, err, sizeof(err))) {
		if (!err[0] || r.policy.nrules || r.policy.rules)
			abort();
		return 0;
	}
	if (!fw_run_name_ok(r.name) ||
	    (r.op != FW_RUN_ADD && r.op != FW_RUN_REMOVE && r.op != FW_RUN_JOIN))
		abort();
	text = fw_run_req_format(&r);
	if (!text)
		abort();
	if (fw_run_req_parse(text, strlen(text), &again, err, sizeof(err)))
		abort();
	if (again.op != r.op || strcmp(again.name, r.name) ||
	    again.policy.nrules != r.policy.nrules ||
	    again.policy.default_action != r.policy.default_action)
		abort();
	for (size_t i = 0; i < r.policy.nrules; i++)
		if (strcmp(again.policy.rules[i].target, r.policy.rules[i].target) ||
		    again.policy.rules[i].action != r.policy.rules[i].action)
			abort();
	free(text);
	fw_run_req_free(&again);
	fw_run_req_free(&r);
	return 0;
}
