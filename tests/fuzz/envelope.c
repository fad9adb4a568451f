// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the Sandbox Actions envelope, bytes as an HTTP body.
 * An accepted envelope must be self-consistent (strings terminated, a
 * SET_BINDING with a string input has an address and a veth, input_len
 * matches); a refused one must say why and hold nothing. Every input
 * string an envelope carries also goes through the policy parser, as the
 * handler would do next. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/envelope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_envelope env;
	char reason[256], err[256];
	struct fw_policy p;
	int ret;

	reason[0] = '\0';
	ret = fw_envelope_parse((const char *)data, size, &env, reason, sizeof(reason));
	if (ret) {
		if (!reason[0] || env.input)
			abort();
		fw_envelope_free(&env);
		return 0;
	}
	if (!env.uid[0] || !env.runtime_instance_id[0] || !env.attachment_id[0] ||
	    strnlen(env.host_veth, FW_ENV_STR) == FW_ENV_STR)
		abort();
	switch (env.op) {
	case FW_OP_SET_BINDING:
		if (!env.has_binding || env.input_null == !!env.input)
			abort();
		if (env.input) {
			if (!env.has_ip || !env.host_veth[0] || strlen(env.input) != env.input_len)
				abort();
			if (fw_policy_from_json(env.input, env.input_len, &p, err, sizeof(err)) ==
			    0)
				fw_policy_free(&p);
		}
		break;
	case FW_OP_LIFECYCLE_HOOK:
		if (env.hook != FW_HOOK_RUNTIME_READY && env.hook != FW_HOOK_DATA_PLANE_READY)
			abort();
		/* fallthrough */
	case FW_OP_REMOVE_BINDING:
		if (env.input)
			abort();
		break;
	default:
		abort();
	}
	fw_envelope_free(&env);
	fw_envelope_free(&env);
	return 0;
}
