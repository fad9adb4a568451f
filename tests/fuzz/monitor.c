// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the request line a `fastwall monitor` reader sends
 * fastwalld. A refusal says why and leaves the filter as it was; an
 * accepted filter, formatted again, parses to the same filter. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_mon_filter f, before, again;
	struct fw_mon_event ev = {.kind = FW_MON_DNS, .name = "x", .reason = "r"};
	char err[256], *text;

	fw_mon_filter_init(&f);
	f.kinds = FW_MON_ALLOW;
	before = f;
	err[0] = '\0';
	if (fw_mon_request_parse((const char *)data, size, &f, err, sizeof(err))) {
		if (!err[0] || memcmp(&f, &before, sizeof(f)))
			abort();
		return 0;
	}
	(void)fw_mon_match(&f, &ev);
	text = fw_mon_request_format(&f);
	if (!text)
		abort();
	fw_mon_filter_init(&again);
	if (fw_mon_request_parse(text, strlen(text), &again, err, sizeof(err)))
		abort();
	if (memcmp(&f, &again, sizeof(f)))
		abort();
	free(text);
	return 0;
}
