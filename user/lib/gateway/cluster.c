// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Cross-cluster names: the reference grammar and the sandbox id split.
 * Both only point into the caller's bytes and bound every length. */
#include <string.h>

#include "gateway/cluster.h"

static const char *const cluster_errors[FW_CLUSTER_E_MAX] = {
#define FW_CLUSTER_TEXT(name, num, text) [num] = text,
	FW_CLUSTER_ERRORS(FW_CLUSTER_TEXT)
#undef FW_CLUSTER_TEXT
};

const char *fw_cluster_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code <= 0 || code >= FW_CLUSTER_E_MAX || !cluster_errors[code])
		return "unknown error";
	return cluster_errors[code];
}

int fw_cluster_id_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > FW_CLUSTER_ID_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

static void trim(struct fw_cluster_span *sp)
{
	while (sp->len && (sp->p[0] == ' ' || sp->p[0] == '\t'))
		sp->p++, sp->len--;
	while (sp->len && (sp->p[sp->len - 1] == ' ' || sp->p[sp->len - 1] == '\t'))
		sp->len--;
}

/* printable ASCII without a space; bytes >= 0x80 are refused too, since
 * neither Kubernetes names nor image references hold them */
static int graph_only(const struct fw_cluster_span *sp)
{
	size_t i;

	for (i = 0; i < sp->len; i++) {
		unsigned char c = (unsigned char)sp->p[i];

		if (c <= 0x20 || c >= 0x7f)
			return 0;
	}
	return 1;
}

/* first occurrence of the two bytes a b in [p, p + len) */
static const char *find2(const char *p, size_t len, char a, char b)
{
	size_t i;

	for (i = 0; i + 1 < len; i++)
		if (p[i] == a && p[i + 1] == b)
			return p + i;
	return NULL;
}

int fw_cluster_ref_parse(const char *s, size_t len, struct fw_cluster_ref *out)
{
	struct fw_cluster_span rest = {s, len};
	const char *cut;

	memset(out, 0, sizeof(*out));
	if (len > FW_CLUSTER_REF_MAX)
		return -FW_CLUSTER_E_TOO_LONG;

	cut = find2(s, len, '/', '/');
	if (cut) {
		out->image.p = cut + 2;
		out->image.len = (size_t)(s + len - out->image.p);
		rest.len = (size_t)(cut - s);
		trim(&out->image);
		if (out->image.len == 0)
			return -FW_CLUSTER_E_NO_IMAGE;
		if (out->image.len > FW_CLUSTER_IMAGE_MAX || !graph_only(&out->image))
			return -FW_CLUSTER_E_IMAGE;
	}

	cut = find2(rest.p, rest.len, ':', ':');
	if (cut) {
		out->cluster.p = rest.p;
		out->cluster.len = (size_t)(cut - rest.p);
		out->name.p = cut + 2;
		out->name.len = (size_t)(rest.p + rest.len - out->name.p);
		trim(&out->cluster);
		if (out->cluster.len == 0)
			return -FW_CLUSTER_E_NO_CLUSTER;
		if (!fw_cluster_id_ok(out->cluster.p, out->cluster.len))
			return -FW_CLUSTER_E_CLUSTER;
	} else {
		out->name = rest;
	}

	trim(&out->name);
	if (out->name.len == 0)
		return -FW_CLUSTER_E_NO_NAME;
	if (out->name.len > FW_CLUSTER_NAME_MAX || !graph_only(&out->name))
		return -FW_CLUSTER_E_NAME;
	return 0;
}

int fw_cluster_sandbox_split(const char *id, size_t len, struct fw_cluster_span *cluster,
			     struct fw_cluster_span *uuid)
{
	if (len > FW_CLUSTER_UUID_LEN && id[len - FW_CLUSTER_UUID_LEN - 1] == '.') {
		cluster->p = id;
		cluster->len = len - FW_CLUSTER_UUID_LEN - 1;
		uuid->p = id + len - FW_CLUSTER_UUID_LEN;
		uuid->len = FW_CLUSTER_UUID_LEN;
		return 1;
	}
	cluster->p = id;
	cluster->len = 0;
	uuid->p = id;
	uuid->len = len;
	return 0;
}
