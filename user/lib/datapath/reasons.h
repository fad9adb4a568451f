/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The verdict reasons of fastwall/reasons.h as userspace prints them. */
#ifndef FW_DATAPATH_REASONS_H
#define FW_DATAPATH_REASONS_H

#include <stdbool.h>
#include <stdio.h>

#include "fastwall/abi.h"

/* From the reason table (fastwall/reasons.h): the CLI name ("unknown"
 * for a number not defined), the one-line meaning, and whether it drops
 * (any number not defined does). */
const char *fw_reason_name(__u32 reason);
const char *fw_reason_meaning(__u32 reason);
bool fw_reason_drops(__u32 reason);
/* Prints the reason table as docs/operations.md holds it (Markdown). */
void fw_reasons_markdown(FILE *out);

#endif /* FW_DATAPATH_REASONS_H */
