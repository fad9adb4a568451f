/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef FW_TESTS_ABI_SWAPS_H
#define FW_TESTS_ABI_SWAPS_H

/* Policy changes without slot writes (swaps.c); adds its counts. */
void case_swaps(int *passed, int *failed);

#endif
