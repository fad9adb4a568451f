/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The policy JSON string of binding.input and of policy pushes. Parsers of
 * untrusted bytes: every length is bounded. Functions return 0 or a
 * negative errno. */
#ifndef FW_POLICY_JSON_H
#define FW_POLICY_JSON_H

#include <stddef.h>

#include "policy/policy.h"

/* The policy JSON string of binding.input or of a policy push: trimmed;
 * exactly "", "null" and "{}" mean default deny with no rules; otherwise a
 * JSON object with optional "defaultAction" (string) and "egress" (array of
 * objects with "action", "target" and optional "ports"), per the
 * egress-policy format; unknown keys ignored. On -EINVAL err says what. */
int fw_policy_from_json(const char *s, size_t len, struct fw_policy *p, char *err, size_t errlen);
/* The same, and the keys it ignored (typos, most likely) in warn: empty
 * when none, else "unknown key 'egres' ignored (did you mean 'egress'?);
 * egress[0]: unknown key 'port' ignored (did you mean 'ports'?)", cut at
 * warnlen; control bytes in keys shown as '?'. */
int fw_policy_from_json_warn(const char *s, size_t len, struct fw_policy *p, char *err,
			     size_t errlen, char *warn, size_t warnlen);
/* Serialises p as the policy JSON object (malloc'd string, caller frees). */
char *fw_policy_to_json(const struct fw_policy *p);

/* Policy push semantics (credential-push.md): merge replaces rules with the
 * same target in place, within one patch the first rule per target wins,
 * new targets are appended, defaultAction is kept; removal is by target
 * and idempotent. */
int fw_policy_merge(struct fw_policy *dst, const struct fw_policy *patch);
int fw_policy_remove_targets(struct fw_policy *p, const char *const *targets, size_t n);

#endif /* FW_POLICY_JSON_H */
