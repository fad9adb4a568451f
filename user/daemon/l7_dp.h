/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* STUB, until the data path's layer-7 API (user/lib/datapath, written
 * beside this) is merged: its declarations as the layer-7 plan gives
 * them, so fastwalld builds and runs without it. At the merge this file
 * and l7_dp_stub.c go, and l7.c includes the data path's header instead.
 * Functions return 0 or a negative errno. */
#ifndef FW_DAEMON_L7_DP_H
#define FW_DAEMON_L7_DP_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/datapath.h"

/* What the proxy pins: TCP connections to tls_ports go to proxy_tls_port
 * (the server name of the ClientHello), to http_ports to proxy_http_port
 * (every request's Host); UDP to a TLS port (QUIC) drops unless
 * quic_allowed. Ports in host order. */
struct fw_dp_l7 {
	__u16 tls_ports[FW_MAX_L7_PORTS];
	size_t ntls;
	__u16 http_ports[FW_MAX_L7_PORTS];
	size_t nhttp;
	__u16 proxy_tls_port;
	__u16 proxy_http_port;
	bool quic_allowed;
};

/* Writes the ports and sets FW_CF_L7 (and FW_CF_L7_QUIC as quic_allowed
 * says); l7 NULL turns pinning off (FW_CF_L7, FW_CF_L7_QUIC, FW_CF_L7_UP
 * cleared). */
int fw_dp_l7_apply(struct fw_dp *dp, const struct fw_dp_l7 *l7);
/* Sets or clears FW_CF_L7_UP. */
int fw_dp_l7_set_up(struct fw_dp *dp, bool up);
/* Deletes fastwall_l7_nat entries not seen for idle_ns at now_ns (closed
 * or not), counted in *deleted (may be NULL). */
int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns, size_t *deleted);

#endif /* FW_DAEMON_L7_DP_H */
