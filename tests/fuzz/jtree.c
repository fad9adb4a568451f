// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the JSON reader of the request path (common/jtree.h)
 * against jansson. Any text one accepts and the other refuses, or that
 * they read as different values, is a crash; so is an error without a
 * reason. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../unit/jtree_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128] = "";
	int r = jtree_vs_jansson((const char *)data, size, err, sizeof(err));

	if (r < 0 || (r == 0 && !err[0]))
		abort();
	return 0;
}
