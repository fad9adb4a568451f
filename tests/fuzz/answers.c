// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the scan of what a peer gateway answered to the
 * member records this gateway published (bytes from the network). The
 * spans it returns lie inside the input, and the 204s it counts are at
 * most the lines there are. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gateway/placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *s, size_t len, const char *buf, size_t size)
{
	if (!s) {
		if (len)
			abort();
		return;
	}
	if (s < buf || len > size || (size_t)(s - buf) > size - len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct fw_member_answers a;
	size_t lines = 1, i;

	fw_member_answers_scan(buf, size, &a);
	inside(a.bad, a.bad_len, buf, size);
	inside(a.why, a.why_len, buf, size);
	for (i = 0; i < size; i++)
		lines += buf[i] == '\n';
	if (a.ok > lines || (a.why && !a.bad))
		abort();
	return 0;
}
