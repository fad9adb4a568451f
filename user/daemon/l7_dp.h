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

/* What fastwall_l7_ports and the FW_CF_L7* flags of fastwall_config say. */
struct fw_dp_l7 {
	bool enabled;	 /* FW_CF_L7 */
	bool quic_allow; /* FW_CF_L7_QUIC */
	struct {
		__u16 port;	  /* destination port, host order */
		__u16 proxy_port; /* host order */
		enum fw_l7_kind kind;
	} ports[FW_MAX_L7_PORTS];
	size_t nports;
};

/* Writes the ports and the FW_CF_L7 and FW_CF_L7_QUIC flags. */
int fw_dp_l7_apply(struct fw_dp *dp, const struct fw_dp_l7 *l7);
/* Sets or clears FW_CF_L7_UP. */
int fw_dp_l7_set_up(struct fw_dp *dp, bool up);
/* Deletes fastwall_l7_nat entries idle for idle_ns at now_ns (closed
 * ones too); returns how many or a negative errno. */
int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns);

#endif /* FW_DAEMON_L7_DP_H */
