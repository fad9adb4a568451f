// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the reference parser [cluster::]name[//image] and the
 * sandbox id split <cluster>.<uuid>. Every part points inside the input,
 * is trimmed and holds what its grammar allows; an accepted reference
 * written back canonically parses to the same parts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const struct fw_cluster_span *sp, const char *s, size_t len)
{
	if (sp->len && (sp->p < s || sp->p + sp->len > s + len))
		abort();
	if (sp->len && (sp->p[0] == ' ' || sp->p[sp->len - 1] == ' '))
		abort();
}

static int same(const struct fw_cluster_span *a, const struct fw_cluster_span *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct fw_cluster_ref ref, again;
	struct fw_cluster_span c, u;
	static char buf[FW_CLUSTER_REF_MAX + 8];
	size_t n = 0;

	if (fw_cluster_ref_parse(s, size, &ref) == 0) {
		inside(&ref.cluster, s, size);
		inside(&ref.name, s, size);
		inside(&ref.image, s, size);
		if (ref.name.len == 0 || ref.name.len > FW_CLUSTER_NAME_MAX)
			abort();
		if (ref.cluster.p && ref.cluster.len &&
		    !fw_cluster_id_ok(ref.cluster.p, ref.cluster.len))
			abort();
		/* the canonical form: cluster::name//image */
		if (ref.cluster.len) {
			memcpy(buf, ref.cluster.p, ref.cluster.len);
			n = ref.cluster.len;
			memcpy(buf + n, "::", 2), n += 2;
		}
		memcpy(buf + n, ref.name.p, ref.name.len), n += ref.name.len;
		if (ref.image.len) {
			memcpy(buf + n, "//", 2), n += 2;
			memcpy(buf + n, ref.image.p, ref.image.len), n += ref.image.len;
		}
		/* a name ending in '/' before an image has no canonical form:
		 * "a/" + "//i" reads back as "a" and "/i" (the cut is first) */
		if (ref.image.len && ref.name.p[ref.name.len - 1] == '/')
			goto split;
		if (fw_cluster_ref_parse(buf, n, &again) != 0 || !same(&ref.name, &again.name) ||
		    !same(&ref.cluster, &again.cluster) || !same(&ref.image, &again.image))
			abort();
	}

split:
	if (fw_cluster_sandbox_split(s, size, &c, &u)) {
		if (u.len != FW_CLUSTER_UUID_LEN || c.len + 1 + u.len != size || s[c.len] != '.' ||
		    c.p != s)
			abort();
	} else if (u.len != size || c.len != 0) {
		abort();
	}
	return 0;
}
