// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Error texts for JSON parsers. See common/json.h. */
#include <stdarg.h>
#include <stdio.h>

#include <jansson.h>

#include "common/json.h"

void fw_set_reason(char *reason, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!reason || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, len, fmt, ap);
	va_end(ap);
}

const char *fw_json_error(const struct json_error_t *e, char *buf, size_t len)
{
	const char *what;

	switch (json_error_code(e)) {
	case json_error_out_of_memory:
		what = "out of memory";
		break;
	case json_error_stack_overflow:
		what = "nested too deeply";
		break;
	case json_error_invalid_utf8:
		what = "invalid UTF-8";
		break;
	case json_error_premature_end_of_input:
		what = "premature end of input";
		break;
	case json_error_end_of_input_expected:
		what = "end of input expected";
		break;
	case json_error_null_character:
		what = "\\u0000 is not allowed";
		break;
	case json_error_numeric_overflow:
		what = "too big integer";
		break;
	case json_error_duplicate_key:
		what = "duplicate key";
		break;
	default:
		what = "invalid syntax";
		break;
	}
	snprintf(buf, len, "%s at line %d column %d", what, e->line, e->column);
	return buf;
}
