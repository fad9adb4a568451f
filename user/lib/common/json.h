/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Error texts shared by the JSON parsers (the actions envelope, the policy
 * JSON, credential pushes). */
#ifndef FW_COMMON_JSON_H
#define FW_COMMON_JSON_H

#include <stddef.h>

/* snprintf into reason (which may be NULL or empty: then nothing). */
void fw_set_reason(char *reason, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct json_error_t;
/* What went wrong in a JSON text, without jansson's "near '...'": that
 * quotes the input around the error, which may be a secret (a vault body
 * sent to the wrong endpoint). A fixed phrase, then "at line L column C". */
const char *fw_json_error(const struct json_error_t *e, char *buf, size_t len);

#endif /* FW_COMMON_JSON_H */
