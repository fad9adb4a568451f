/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The bandwidth programs' rows of the verdict table (bw_rows.c), run by
 * bpf_verdicts on the data path it set up. */
#ifndef FW_TEST_BW_ROWS_H
#define FW_TEST_BW_ROWS_H

#include "datapath/datapath.h"

/* Loads the bandwidth programs beside dp's pins, gives subjects limits
 * through the control-plane API and runs every row through its program;
 * adds to *passed and *failed. */
void bw_rows_run(struct fw_dp *dp, int *passed, int *failed);

#endif /* FW_TEST_BW_ROWS_H */
