// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the signature header of a published member record
 * (untrusted bytes from a peer). A parsed signature written back in its
 * one canonical spelling is the input itself, and verification under a
 * key ring never accepts an input that is not what fw_csig_sign wrote. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/cluster_sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char body[] = "cluster=east&namespace=n&env=e&pool=p&idle=1";
	static struct fw_scope_keyring kr;
	static int ready;
	const char *s = (const char *)data;
	char again[FW_CSIG_TEXT_MAX + 1];
	struct fw_csig sig;
	size_t i;
	int n;

	if (!ready) {
		char err[64];
		const char *ring = "a=a2V5LWE=\n";

		if (fw_scope_keyring_parse(&kr, ring, strlen(ring), err, sizeof(err)))
			abort();
		ready = 1;
	}
	if (fw_csig_parse(s, size, &sig) == 0) {
		n = snprintf(again, sizeof(again), "v1.%c.%llu.", sig.key_id,
			     (unsigned long long)sig.ts_ms);
		for (i = 0; i < FW_CSIG_MAC_LEN; i++)
			n += snprintf(again + n, sizeof(again) - (size_t)n, "%02x", sig.mac[i]);
		if ((size_t)n != size || memcmp(again, s, size) != 0)
			abort();
	}
	if (fw_csig_verify(&kr, s, size, "east", 4, "west", 4, body, sizeof(body) - 1, &sig) == 0) {
		n = fw_csig_sign(&kr, sig.key_id, "east", 4, "west", 4, sig.ts_ms, body,
				 sizeof(body) - 1, again, sizeof(again));
		if (n < 0 || (size_t)n != size || memcmp(again, s, size) != 0)
			abort();
	}
	return 0;
}
