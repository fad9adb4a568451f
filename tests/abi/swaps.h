/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef FW_TESTS_ABI_SWAPS_H
#define FW_TESTS_ABI_SWAPS_H

#include <stdbool.h>

/* One "ok"/"FAIL" line, counted (migrate.c): every case of the binary
 * reports through it. */
void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Policy changes without slot writes (swaps.c). */
void case_swaps(void);

#endif
