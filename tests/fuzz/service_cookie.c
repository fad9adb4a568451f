// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the Cookie header parser and the service cookie check.
 * Every value of the gateway's cookie found in the input is verified; one
 * that passes must be the value sign() makes for its expiry (nothing else
 * verifies). Stripping must leave no copy of the cookie, keep every other
 * pair, and stay within twice the input's length. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/service_cookie.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fw_scope_keyring kr;

static size_t count_pairs(const char *s, size_t len, const char *name)
{
	const char *v;
	size_t pos = 0, vl, n = 0;

	while (fw_cookie_next(s, len, name, &pos, &v, &vl))
		n++;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char host[] = "default--my-sandbox--web.apps.example.com";
	struct fw_svc_binding b = {host, sizeof(host) - 1, "default", "my-sandbox", "web", 8080};
	const char *hdr = (const char *)data, *v;
	char signed_v[FW_SVC_COOKIE_TEXT_MAX], *out;
	size_t pos = 0, vl, len;
	long long exp;

	if (!kr.count) {
		static const char ring[] = "k=c2hhcmVkLXNlY3JldA==\n";
		char err[128];

		if (fw_scope_keyring_parse(&kr, ring, sizeof(ring) - 1, err, sizeof(err)))
			abort();
	}
	while (fw_cookie_next(hdr, size, FW_SVC_COOKIE_NAME, &pos, &v, &vl)) {
		if (pos > size || v < hdr || v + vl > hdr + size)
			abort();
		if (fw_svc_cookie_verify(&kr, v, vl, &b, 0) != 0)
			continue;
		exp = strtoll(v + 3, NULL, 10);
		if (fw_svc_cookie_sign(&kr, v[vl - FW_SVC_COOKIE_MAC_TEXT - 2], &b, exp, signed_v,
				       sizeof(signed_v)) != (int)vl ||
		    memcmp(signed_v, v, vl) != 0)
			abort();
	}
	out = malloc(2 * size + 1);
	if (!out)
		return 0;
	len = fw_cookie_strip(hdr, size, FW_SVC_COOKIE_NAME, out);
	if (len > 2 * size || count_pairs(out, len, FW_SVC_COOKIE_NAME) != 0 ||
	    count_pairs(out, len, "a") != count_pairs(hdr, size, "a"))
		abort();
	free(out);
	return 0;
}
