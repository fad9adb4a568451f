// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the layer-7 proxy's vault reader and matcher
 * (user/lib/l7/vault.c). Whatever the bytes, decoding reads none past
 * them; a blob it accepts, re-encoded from what it decoded by the test
 * encoder (tests/unit/l7_vault_enc.h), gives the same bytes back; and a
 * request it matches to a binding has a host that binding names, exactly
 * or strictly under a "*.domain", and that binding's scheme, port and
 * method (checked here by a second, simpler reading of the rules). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "l7/vault.h"
#include "../unit/l7_vault_enc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int same(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (lc((unsigned char)a[i]) != lc((unsigned char)b[i]))
			return 0;
	return 1;
}

/* the oracle: does a host rule of b cover host */
static int oracle_host(const struct venc_binding *e, const char *host, size_t len)
{
	for (unsigned int i = 0; i < e->nhosts; i++) {
		const struct venc_str *h = &e->hosts[i];

		if (h->len == len && same(h->p, host, len))
			return 1;
		if (h->len > 2 && h->p[0] == '*' && h->p[1] == '.' && len > h->len - 1 &&
		    same(host + len - (h->len - 1), h->p + 1, h->len - 1))
			return 1;
	}
	return 0;
}

static void check_match(const struct fw_l7_vault *v, const struct fw_l7_request *r)
{
	const struct fw_l7_binding *b = fw_l7_vault_match(v, r);
	struct venc_binding e;
	unsigned int schemes;
	int ok;

	if (!b)
		return;
	for (const struct fw_l7_binding *p = v->bindings; p < b; p++)
		if (fw_l7_binding_matches(p, r))
			abort(); /* an earlier binding matched: not the first */
	venc_from_binding(b, &e);
	if (!oracle_host(&e, r->host, r->host_len))
		abort();
	schemes = e.schemes ? e.schemes : FW_L7_SCHEME_HTTPS;
	if (!(schemes & r->scheme))
		abort();
	ok = !e.nports;
	for (unsigned int i = 0; i < e.nports; i++)
		ok |= e.ports[i] == r->port;
	if (!ok)
		abort();
	ok = !e.nmethods;
	for (unsigned int i = 0; i < e.nmethods; i++)
		ok |= e.methods[i].len == r->method_len &&
		      same(e.methods[i].p, r->method, r->method_len);
	if (!ok)
		abort();
	if (!fw_l7_vault_names(v, r->host, r->host_len, r->scheme, r->port))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_l7_binding *idx = NULL;
	struct venc_binding *enc = NULL;
	struct fw_l7_vault v;
	struct fw_l7_request r;
	uint8_t *copy, *again = NULL;
	const char *why;
	int n, err;

	/* an exact-size copy, so ASan sees any read past the end */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	n = fw_l7_vault_count(copy, size);
	if (n < 0)
		goto out;
	v.bindings = NULL;
	if ((size_t)n > (size - 8) / 18) {
		/* more records than the bytes could hold: refused unread */
		if (fw_l7_vault_decode(copy, size, &v, 0, &why) != -EINVAL)
			abort();
		goto out;
	}
	idx = calloc((size_t)n + 1, sizeof(*idx));
	if (!idx)
		goto out;
	v.bindings = idx;
	if (n > 0 && fw_l7_vault_decode(copy, size, &v, (unsigned int)n - 1, &why) != -ENOSPC)
		abort();
	err = fw_l7_vault_decode(copy, size, &v, (unsigned int)n, &why);
	if (err) {
		if (err != -EINVAL || !why || v.nbindings)
			abort();
		goto out;
	}
	if (v.nbindings != (unsigned int)n)
		abort();
	enc = calloc((size_t)n + 1, sizeof(*enc));
	again = malloc(size);
	if (!enc || !again)
		goto out;
	for (int i = 0; i < n; i++)
		venc_from_binding(&idx[i], &enc[i]);
	if (venc_vault(again, size, enc, (unsigned int)n) != size || memcmp(again, copy, size))
		abort();

	/* requests made of the vault's own rules, and of their neighbours */
	for (int i = 0; i < n; i++) {
		static const char *const hosts[] = {"a.", "", "A."};
		char host[512];

		for (unsigned int h = 0; h < enc[i].nhosts; h++) {
			const struct venc_str *s = &enc[i].hosts[h];

			for (size_t k = 0; k < sizeof(hosts) / sizeof(hosts[0]); k++) {
				size_t pre = strlen(hosts[k]);
				size_t skip = s->len > 1 && s->p[0] == '*' ? 2 : 0;
				size_t len = pre + s->len - skip;

				if (len > sizeof(host))
					continue;
				memcpy(host, hosts[k], pre);
				memcpy(host + pre, s->p + skip, s->len - skip);
				memset(&r, 0, sizeof(r));
				r.host = host;
				r.host_len = len;
				r.scheme = (h & 1) ? FW_L7_SCHEME_HTTP : FW_L7_SCHEME_HTTPS;
				r.port = enc[i].nports ? enc[i].ports[h % enc[i].nports] : 443;
				r.method = enc[i].nmethods ? enc[i].methods[0].p : "GET";
				r.method_len = enc[i].nmethods ? enc[i].methods[0].len : 3;
				r.path = enc[i].npaths ? enc[i].paths[0].p : "/";
				r.path_len = enc[i].npaths ? enc[i].paths[0].len : 1;
				check_match(&v, &r);
				r.raw_path = "/";
				r.raw_path_len = 1;
				check_match(&v, &r);
				/* one byte shorter at either end */
				r.raw_path = NULL;
				if (len > 1) {
					r.host_len = len - 1;
					check_match(&v, &r);
					r.host = host + 1;
					check_match(&v, &r);
				}
			}
		}
	}
out:
	free(again);
	free(enc);
	free(idx);
	free(copy);
	return 0;
}
