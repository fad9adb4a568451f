// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the credential vault parser, against a fixed small
 * policy. Every accepted vault is also merged into the previous one as a
 * patch, rendered redacted and active, and checked: the redacted JSON never
 * holds a value the active JSON holds under "value". */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "common/secmem.h"
#include "protocol/vault.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fw_policy pol;
static struct fw_vault_store *st;

static void init(void)
{
	static const char *const rules[][2] = {
		{"deny", "*.internal.example.com"}, {"deny", "evil.example.com"},
		{"allow", "*.example.com"},	    {"allow", "api.github.com"},
		{"allow", "203.0.113.0/24"},	    {"deny", "203.0.113.7"},
		{"allow", "2001:db8::/32"},
	};

	fw_policy_init(&pol);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (fw_policy_add_rule(&pol, rules[i][0], rules[i][1], NULL, 0, NULL, 0))
			abort();
	st = fw_vault_store_new();
	if (!st)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_vault *v, *p;
	char err[256], *red, *act, etag[FW_VAULT_ETAG_LEN];

	if (!st)
		init();
	if (fw_vault_parse((const char *)data, size, &pol, 0, &v, err, sizeof(err)) == 0) {
		red = fw_vault_redacted_json(v);
		act = fw_vault_active_json(v, etag);
		if (!red || !act || strlen(etag) != 18)
			abort();
		/* every value in the redacted JSON is the placeholder */
		for (const char *s = strstr(red, "\"value\":"); s; s = strstr(s + 1, "\"value\":"))
			if (strncmp(s, "\"value\":\"***\"", 13) != 0)
				abort();
		free(red);
		fw_secmem_free(act);
		if (fw_vault_check_policy(v, &pol, err, sizeof(err)))
			abort(); /* parse accepted it against the same policy */
		fw_vault_store_put(st, "sb", v);
	}
	if (fw_vault_parse((const char *)data, size, &pol, FW_VAULT_PARSE_PATCH, &p, err,
			   sizeof(err)) == 0)
		fw_vault_store_patch(st, "sb", p, err, sizeof(err));
	return 0;
}
