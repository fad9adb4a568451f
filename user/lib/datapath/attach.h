/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The TC programs on interfaces: fastwall's own filters, under one
 * handle and priority, on clsact ingress and egress. Functions return 0
 * or a negative errno. */
#ifndef FW_DATAPATH_ATTACH_H
#define FW_DATAPATH_ATTACH_H

#include <stdbool.h>

#include "datapath/datapath.h"

#define FW_TC_HANDLE   0xfa57
#define FW_TC_PRIORITY 0xfa5 /* ahead of anything users add at the default priority */

/* Creates clsact on ifindex and puts fw_from_sandbox and fw_to_sandbox there,
 * replacing fastwall's own filters (atomically) when present. */
int fw_dp_attach(struct fw_dp *dp, int ifindex);
/* Removes fastwall's filters from ifindex; -ENOENT when none. */
int fw_dp_detach(int ifindex);
/* true when ifindex carries fastwall's filter on TC ingress (fw_from_sandbox) */
bool fw_dp_attached(int ifindex);

#endif /* FW_DATAPATH_ATTACH_H */
