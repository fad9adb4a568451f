/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the layer-7 proxy (the nginx module in egress/) reports to
 * fastwalld: one datagram per verdict and one when a pinned connection
 * ends, on a datagram socket fastwalld hands the proxy when it starts it
 * (the proxy never opens a path of its own). fastwalld turns them into
 * monitor events, audit records of denials and metrics. Plain data with
 * fixed sizes, compiled by the module and by fastwalld. */
#ifndef FASTWALL_L7_H
#define FASTWALL_L7_H

#include "fastwall/abi.h"

#define FW_L7_REPORT_VERSION 1

enum fw_l7_report_type {
	FW_L7_REPORT_VERDICT = 1, /* a connection (TLS) or request (HTTP) decided */
	FW_L7_REPORT_CLOSE = 2,	  /* a pinned connection ended: its bytes and time */
};

struct fw_l7_report {
	__u16 version; /* FW_L7_REPORT_VERSION */
	__u8 type;     /* enum fw_l7_report_type */
	__u8 kind;     /* enum fw_l7_kind */
	__u32 subject; /* 0: the peer is no subject's (FW_L7_UNTRACKED) */
	__u32 reason;  /* enum fw_l7_reason */
	__u8 family;   /* enum fw_family of the original destination */
	__u8 pad[3];
	struct fw_ip client; /* the sandbox's end, as the proxy saw it */
	struct fw_ip dst;    /* the original destination */
	__be16 client_port;
	__be16 dst_port;
	__u32 pad2;
	__u64 bytes_up;	   /* CLOSE: sandbox -> destination */
	__u64 bytes_down;  /* CLOSE: destination -> sandbox */
	__u64 duration_ns; /* CLOSE: from accept to close */
	/* the server name or Host the verdict was on, NUL-terminated; "" when
	 * none was sent (or not read yet); cut at FW_LEASE_NAME_SZ - 1 */
	char name[FW_LEASE_NAME_SZ];
};

_Static_assert(sizeof(struct fw_l7_report) == 336, "fw_l7_report");

#endif /* FASTWALL_L7_H */
