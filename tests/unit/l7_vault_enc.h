/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A test encoder of the vault blob (include/fastwall/l7vault.h), written
 * from the header alone, for the units of user/lib/l7/vault.c and its
 * fuzz target (which re-encodes what the reader decoded and expects the
 * same bytes). fastwalld's own encoder is another: the two meet only in
 * the header. */
#ifndef FW_TEST_L7_VAULT_ENC_H
#define FW_TEST_L7_VAULT_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "l7/vault.h"

struct venc_str {
	const char *p;
	size_t len;
};

#define VS(s) ((struct venc_str){(s), sizeof(s) - 1})

struct venc_binding {
	uint8_t auth, schemes;
	unsigned int nports, nhosts, nmethods, npaths;
	uint16_t ports[FW_L7_VAULT_MAX_LIST];
	struct venc_str name, header, value;
	struct venc_str hosts[FW_L7_VAULT_MAX_LIST];
	struct venc_str methods[FW_L7_VAULT_MAX_LIST];
	struct venc_str paths[FW_L7_VAULT_MAX_LIST];
	const uint8_t *tail; /* bytes a later version would add to the record */
	size_t tail_len;
};

struct venc_out {
	uint8_t *b;
	size_t cap, n;
	int overflow;
};

static inline void venc_put(struct venc_out *o, const void *p, size_t n)
{
	if (o->overflow || n > o->cap - o->n) {
		o->overflow = 1;
		return;
	}
	if (n)
		memcpy(o->b + o->n, p, n);
	o->n += n;
}

static inline void venc_put16(struct venc_out *o, uint16_t v)
{
	venc_put(o, &v, sizeof(v));
}

static inline void venc_list(struct venc_out *o, const struct venc_str *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		venc_put16(o, (uint16_t)s[i].len);
		venc_put(o, s[i].p, s[i].len);
	}
}

/* The blob of n bindings into out[0..cap): its length, 0 when it does
 * not fit. Counts and lengths are written as given (a test may lie). */
static inline size_t venc_vault(uint8_t *out, size_t cap, const struct venc_binding *b,
				unsigned int n)
{
	struct venc_out o = {out, cap, 0, 0};
	struct fw_l7_vault_head head = {FW_L7_VAULT_MAGIC, FW_L7_VAULT_VERSION, (uint16_t)n};

	venc_put(&o, &head, sizeof(head));
	for (unsigned int i = 0; i < n; i++) {
		struct fw_l7_vault_rec rec;
		size_t at = o.n;

		memset(&rec, 0, sizeof(rec));
		rec.auth = b[i].auth;
		rec.schemes = b[i].schemes;
		rec.nports = (uint8_t)b[i].nports;
		rec.nhosts = (uint8_t)b[i].nhosts;
		rec.nmethods = (uint8_t)b[i].nmethods;
		rec.npaths = (uint8_t)b[i].npaths;
		rec.name_len = (uint16_t)b[i].name.len;
		rec.header_len = (uint16_t)b[i].header.len;
		rec.value_len = (uint32_t)b[i].value.len;
		venc_put(&o, &rec, sizeof(rec));
		for (unsigned int j = 0; j < b[i].nports; j++)
			venc_put16(&o, b[i].ports[j]);
		venc_put(&o, b[i].name.p, b[i].name.len);
		venc_put(&o, b[i].header.p, b[i].header.len);
		venc_put(&o, b[i].value.p, b[i].value.len);
		venc_list(&o, b[i].hosts, b[i].nhosts);
		venc_list(&o, b[i].methods, b[i].nmethods);
		venc_list(&o, b[i].paths, b[i].npaths);
		venc_put(&o, b[i].tail, b[i].tail_len);
		if (o.overflow)
			return 0;
		rec.size = (uint32_t)(o.n - at);
		memcpy(out + at, &rec.size, sizeof(rec.size));
	}
	return o.overflow ? 0 : o.n;
}

/* What the reader decoded, as the encoder's input. */
static inline void venc_from_binding(const struct fw_l7_binding *d, struct venc_binding *e)
{
	const uint8_t *at;

	memset(e, 0, sizeof(*e));
	e->auth = d->auth;
	e->schemes = d->schemes;
	e->nports = d->nports;
	e->nhosts = d->nhosts;
	e->nmethods = d->nmethods;
	e->npaths = d->npaths;
	for (unsigned int i = 0; i < d->nports; i++)
		e->ports[i] = fw_l7_vault_port(d, i);
	e->name = (struct venc_str){d->name, d->name_len};
	e->header = (struct venc_str){d->header, d->header_len};
	e->value = (struct venc_str){d->value, d->value_len};
	at = d->hosts;
	for (unsigned int i = 0; i < d->nhosts; i++)
		e->hosts[i].p = fw_l7_vault_next(&at, &e->hosts[i].len);
	at = d->methods;
	for (unsigned int i = 0; i < d->nmethods; i++)
		e->methods[i].p = fw_l7_vault_next(&at, &e->methods[i].len);
	at = d->paths;
	for (unsigned int i = 0; i < d->npaths; i++)
		e->paths[i].p = fw_l7_vault_next(&at, &e->paths[i].len);
	e->tail = d->rec + d->size - d->tail;
	e->tail_len = d->tail;
}

#endif /* FW_TEST_L7_VAULT_ENC_H */
