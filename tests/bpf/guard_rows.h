/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The port guard's rows of the verdict table (guard_rows.c), run by
 * bpf_verdicts on the data path it set up. */
#ifndef FW_TEST_GUARD_ROWS_H
#define FW_TEST_GUARD_ROWS_H

#include "datapath/datapath.h"

/* Loads the guard beside dp's pins, programs it through the control-plane
 * API and runs every row through its XDP and its TC program; adds to
 * *passed and *failed. */
void guard_rows_run(struct fw_dp *dp, int *passed, int *failed);

#endif /* FW_TEST_GUARD_ROWS_H */
