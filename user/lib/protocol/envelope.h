/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The Sandbox Actions envelope (sandbox.fast.io/actions/v1): parsing and validation in the
 * order the protocol's specification gives them (docs/protocol.md). Parsers of untrusted
 * bytes: every length is bounded. Functions return 0 or a negative errno;
 * on -EINVAL, reason holds the text that follows "invalid action envelope: ". */
#ifndef FW_ENVELOPE_H
#define FW_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"
#include "policy/json.h"

#define FW_API_VERSION	"sandbox.fast.io/actions/v1"
#define FW_ENV_STR	256	  /* longest uid, name, fence field we keep */
#define FW_ENV_BODY_MAX (1 << 20) /* 1 MiB request cap */

enum fw_operation {
	FW_OP_SET_BINDING = 1,
	FW_OP_LIFECYCLE_HOOK,
	FW_OP_REMOVE_BINDING,
};

enum fw_hook {
	FW_HOOK_RUNTIME_READY = 1, /* sandbox.runtime-ready */
	FW_HOOK_DATA_PLANE_READY,  /* sandbox.data-plane-ready */
};

struct fw_envelope {
	enum fw_operation op;
	char invocation_id[FW_ENV_STR];
	char uid[FW_ENV_STR];
	char name[FW_ENV_STR];
	char ns[FW_ENV_STR];
	/* revision */
	__u64 spec_generation;
	__u64 route_generation;
	char runtime_instance_id[FW_ENV_STR];
	char attachment_id[FW_ENV_STR];
	/* attachment.network; has_* false when absent or empty */
	bool has_ip, has_gateway, has_private_cidr;
	struct fw_ip ip;
	enum fw_family ip_family;
	struct fw_ip gateway;
	struct fw_prefix private_cidr;
	char host_veth[FW_ENV_STR]; /* "" when absent */
	/* binding (SET_BINDING) */
	bool has_binding;
	bool input_null; /* binding.input was JSON null */
	char *input;	 /* binding.input string (malloc'd), NULL when null/absent */
	size_t input_len;
	/* hook (LIFECYCLE_HOOK) */
	enum fw_hook hook;
	__u64 hook_sequence;
};

/* Parses and validates body (not NUL-terminated, at most FW_ENV_BODY_MAX).
 * Order: JSON well-formed, apiVersion, sandbox.uid, per-operation fields,
 * then revision.runtimeInstanceId and revision.attachmentId. Types are
 * checked (a string where a string is due, generations non-negative
 * integers), a bad IP or CIDR is an error, unknown fields are ignored. */
int fw_envelope_parse(const char *body, size_t len, struct fw_envelope *env, char *reason,
		      size_t reason_len);
void fw_envelope_free(struct fw_envelope *env);

#endif /* FW_ENVELOPE_H */
