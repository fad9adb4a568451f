/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Cross-cluster names: the reference a user writes, [cluster::]name[//image],
 * and the sandbox id that carries its cluster, <cluster>.<uuid>. Plain C on
 * libc alone, compiled into the nginx ingress module as scope.c is. The
 * parsers point into the caller's bytes; they return 0 or a negative
 * FW_CLUSTER_E* code that fw_cluster_strerror() names. */
#ifndef FW_CLUSTER_H
#define FW_CLUSTER_H

#include <stddef.h>

#define FW_CLUSTER_ID_MAX    63	  /* bytes of a cluster id, [A-Za-z0-9_-] */
#define FW_CLUSTER_NAME_MAX  253  /* bytes of an env or pool name */
#define FW_CLUSTER_IMAGE_MAX 1024 /* bytes of an image reference */
#define FW_CLUSTER_REF_MAX                                                                         \
	(FW_CLUSTER_ID_MAX + 2 + FW_CLUSTER_NAME_MAX + 2 + FW_CLUSTER_IMAGE_MAX + 64)
#define FW_CLUSTER_UUID_LEN 36

#define FW_CLUSTER_ERRORS(X)                                                                       \
	X(TOO_LONG, 1, "reference too long")                                                       \
	X(NO_NAME, 2, "empty name")                                                                \
	X(NAME, 3, "name holds a space or a control character, or is too long")                    \
	X(NO_CLUSTER, 4, "empty cluster before ::")                                                \
	X(CLUSTER, 5, "cluster id is not 1-63 characters of [A-Za-z0-9_-]")                        \
	X(NO_IMAGE, 6, "empty image after //")                                                     \
	X(IMAGE, 7, "image holds a space or a control character, or is too long")

enum fw_cluster_err {
#define FW_CLUSTER_ENUM(name, num, text) FW_CLUSTER_E_##name = num,
	FW_CLUSTER_ERRORS(FW_CLUSTER_ENUM)
#undef FW_CLUSTER_ENUM
		FW_CLUSTER_E_MAX
};

/* a piece of the caller's text; len 0 = absent */
struct fw_cluster_span {
	const char *p;
	size_t len;
};

struct fw_cluster_ref {
	struct fw_cluster_span cluster; /* absent: a bare name */
	struct fw_cluster_span name;	/* an env, or with a cluster a pool */
	struct fw_cluster_span image;
};

const char *fw_cluster_strerror(int code);

/* 1 when s is a cluster id: 1-63 bytes of [A-Za-z0-9_-] */
int fw_cluster_id_ok(const char *s, size_t len);

/* Parses [cluster::]name[//image]: the first "//" cuts the image off (an
 * image may hold "//" itself), then the first "::" splits cluster from
 * name; each part is trimmed of spaces and tabs. */
int fw_cluster_ref_parse(const char *s, size_t len, struct fw_cluster_ref *out);

/* Splits a sandbox id <cluster>.<uuid> by length from the end: it carries
 * a cluster when len > 36 and id[len - 37] is '.'. Returns 1 and fills
 * cluster (possibly empty: ".<uuid>") and uuid, or 0 for an id without a
 * cluster (a local one), whose uuid is then the whole id. */
int fw_cluster_sandbox_split(const char *id, size_t len, struct fw_cluster_span *cluster,
			     struct fw_cluster_span *uuid);

#endif /* FW_CLUSTER_H */
