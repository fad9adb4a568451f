// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The reason table's userspace side: names, meanings, verdicts and the
 * docs table, all from FW_REASONS. See datapath.h. */
#include "datapath/reasons.h"

/* a switch, so two reasons with one number are a compile error */
#define NAME_CASE(id, num, verdict, name, meaning)                                                 \
	case num:                                                                                  \
		return name;
#define MEANING_CASE(id, num, verdict, name, meaning)                                              \
	case num:                                                                                  \
		return meaning;

const char *fw_reason_name(__u32 reason)
{
	switch (reason) {
		FW_REASONS(NAME_CASE)
	}
	return "unknown";
}

const char *fw_reason_meaning(__u32 reason)
{
	switch (reason) {
		FW_REASONS(MEANING_CASE)
	}
	return NULL;
}

bool fw_reason_drops(__u32 reason)
{
	return FW_REASON_DROPS(reason);
}

void fw_reasons_markdown(FILE *out)
{
	fprintf(out, "| reason | pass/drop | meaning |\n|---|---|---|\n");
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		if (!fw_reason_meaning(r))
			continue;
		fprintf(out, "| %s | %s | %s |\n", fw_reason_name(r),
			fw_reason_drops(r) ? "drop" : "pass", fw_reason_meaning(r));
	}
}
