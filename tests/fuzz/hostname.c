// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the service host parser. A readable host it accepts
 * must print back (readable label + "." + domain) to the same host once
 * lowercased and the port dropped; a hashed label must have the hash's
 * shape; the names it gives must pass the name check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/hostname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fw_hostname_domains doms;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[FW_HOSTNAME_READABLE_MAX + 1 + FW_HOSTNAME_DOMAIN_MAX + 1];
	struct fw_hostname_parsed p;
	size_t i, hl;
	int rc, n;

	if (!doms.count) {
		if (fw_hostname_domains_add_wildcard(&doms, "*.apps.example.com", 18) ||
		    fw_hostname_domains_add_wildcard(&doms, "*.example.com", 13) ||
		    fw_hostname_domains_add(&doms, "t", 1))
			abort();
	}
	rc = fw_hostname_parse(&doms, size && (data[0] & 1), (const char *)data, size, &p);
	if (rc)
		return 0;
	if (p.domain >= doms.count)
		abort();
	if (p.kind == FW_HOSTNAME_HASHED) {
		if (!fw_hostname_is_hash_label(p.label, strlen(p.label)))
			abort();
		return 0;
	}
	if (p.kind != FW_HOSTNAME_READABLE ||
	    fw_hostname_name_ok(p.target.workspace, strlen(p.target.workspace)) ||
	    fw_hostname_name_ok(p.target.sandbox, strlen(p.target.sandbox)) ||
	    (p.target.service[0] &&
	     fw_hostname_name_ok(p.target.service, strlen(p.target.service))))
		abort();
	n = fw_hostname_readable(&p.target, out, sizeof(out));
	if (n <= 0)
		abort();
	out[n++] = '.';
	memcpy(out + n, doms.d[p.domain].name, doms.d[p.domain].len);
	n += (int)doms.d[p.domain].len;
	for (hl = 0; hl < size && data[hl] != ':'; hl++)
		;
	if ((size_t)n != hl)
		abort();
	for (i = 0; i < hl; i++) {
		char c = (char)data[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != out[i])
			abort();
	}
	return 0;
}
