// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the member record parser (what a peer's control plane
 * POSTs to the gateway). An accepted record formats back to text that
 * parses to the same record, and placement over it never picks a member
 * that does not count. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_member m, again;
	struct fw_place pl;
	char out[FW_MEMBER_TEXT_MAX];
	int n;

	if (fw_member_parse((const char *)data, size, &m) != 0)
		return 0;
	n = fw_member_format(&m, out, sizeof(out));
	if (n < 0 || fw_member_parse(out, (size_t)n, &again) != 0)
		abort();
	if (memcmp(&m, &again, sizeof(m)) != 0)
		abort();
	m.expires = 100;
	if (fw_place("local", &m, 1, m.ns, m.env, 50, &pl) != 0)
		abort();
	if (pl.target && (pl.target != &m || !fw_member_live(&m, 50)))
		abort();
	return 0;
}
