// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the route scope parser and verifier, and the key ring
 * parser. An accepted scope must re-sign to the same text (the encoding is
 * canonical), and a scope the parser accepts must decode to fields the
 * signer accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/scope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fw_scope_keyring kr;

static void init(void)
{
	static const char ring[] = "k=c2hhcmVkLXNlY3JldA==\na=b3RoZXIta2V5\n";
	char err[128];

	if (fw_scope_keyring_parse(&kr, ring, strlen(ring), err, sizeof(err)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_scope_keyring r;
	struct fw_scope sc;
	char out[FW_SCOPE_TEXT_MAX], err[256];
	int rc, n;

	if (!kr.count)
		init();
	rc = fw_scope_verify(&kr, (const char *)data, size, &sc);
	if (rc == 0 || rc == -FW_SCOPE_E_BAD_MAC || rc == -FW_SCOPE_E_UNKNOWN_KEY) {
		/* the fields parsed: they are what the signer accepts */
		if (sc.ns_len > FW_SCOPE_FIELD_MAX || sc.sandbox_len > FW_SCOPE_FIELD_MAX ||
		    sc.port == 0)
			abort();
		n = fw_scope_sign(&kr, 'k', sc.ns, sc.ns_len, sc.sandbox, sc.sandbox_len, sc.port,
				  out, sizeof(out));
		if (n <= 0)
			abort();
		if (rc == 0 && sc.key_id == 'k' &&
		    ((size_t)n != size || memcmp(out, data, size) != 0))
			abort();
	}
	if (fw_scope_keyring_parse(&r, (const char *)data, size, err, sizeof(err)) == 0 &&
	    r.count == 0)
		abort();
	return 0;
}
