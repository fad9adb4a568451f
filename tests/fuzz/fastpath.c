// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the ResolveEndpoint response decoder and the proxy
 * endpoint check, on the bytes a resolver (or anything posing as one)
 * sends. Every decoded string must lie inside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gateway/fastpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(struct fw_str s, const uint8_t *data, size_t size)
{
	if (s.len && ((const uint8_t *)s.p < data || (const uint8_t *)s.p + s.len > data + size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_fastpath_resolved r;
	long base;

	if (fw_fastpath_response_decode(data, size, &r) == 0) {
		inside(r.sandbox_uid, data, size);
		inside(r.component_name, data, size);
		inside(r.protocol, data, size);
		inside(r.proxy_endpoint, data, size);
		inside(r.credential, data, size);
		if (!r.proxy_endpoint.len || r.other_headers > r.headers)
			abort();
		base = fw_fastpath_endpoint_base(r.proxy_endpoint.p, r.proxy_endpoint.len);
		if (base > (long)r.proxy_endpoint.len)
			abort();
		fw_fastpath_header_value_ok(r.credential.p, r.credential.len);
	}
	base = fw_fastpath_endpoint_base((const char *)data, size);
	if (base > (long)size)
		abort();
	return 0;
}
