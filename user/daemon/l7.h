/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The layer-7 proxy fastwalld supervises (l7.c): what /metrics and
 * /readyz read of it. Written by the event loop's thread, read by the
 * metrics thread with relaxed atomics. */
#ifndef FW_DAEMON_L7_H
#define FW_DAEMON_L7_H

#include <stdbool.h>

#include "fastwall/reasons.h"
#include "protocol/l7vaults.h"

struct fw_l7_counters {
	bool up;			     /* accepting connections: FW_CF_L7_UP is set */
	__u64 connections[FW_L7_REASON_MAX]; /* verdicts the proxy reported, by reason */
	__u64 active;			     /* pinned connections open now */
	__u64 bytes_up, bytes_down;	     /* of pinned connections that ended */
	__u64 restarts;			     /* the proxy started again after it ended */
	__u64 reports_malformed;	     /* datagrams that were no report */
	/* credentials: the CA's notAfter (Unix seconds, 0: no CA) and the
	 * vaults the proxy's map holds (NULL: injection off) */
	__u64 ca_not_after;
	struct fw_l7_vaults *vaults;
};

/* "l7-pinned", ...; NULL past the table */
const char *fw_l7_reason_name(unsigned int reason);

#endif /* FW_DAEMON_L7_H */
