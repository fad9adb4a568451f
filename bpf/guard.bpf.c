// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The port guard of direct access mode: at the first point a received
 * frame can be dropped on the pod's uplink, TCP and UDP to the guarded
 * data-plane ports pass only from trusted sources (the ingress gateway's
 * workloads). fw_guard_xdp is the program for native or generic XDP;
 * fw_guard_tc the TC ingress fallback, with the same logic
 * (lib/guard.h). */
#include "lib/common.h"
#include "lib/guard.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int fw_guard_xdp(struct xdp_md *ctx)
{
	struct fw_guard_ctx c = {
		.data = (void *)(long)ctx->data,
		.data_end = (void *)(long)ctx->data_end,
		.ifindex = ctx->ingress_ifindex,
		.xdp = true,
	};
	struct fw_guard_pkt pkt = {};

	c.len = c.data_end - c.data;
	return fw_guard_account(&c, &pkt, fw_guard_decide(&c, &pkt)) ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int fw_guard_tc(struct __sk_buff *skb)
{
	struct fw_guard_ctx c = {.skb = skb, .len = skb->len, .ifindex = skb->ifindex};
	struct fw_guard_pkt pkt = {};

	return fw_guard_account(&c, &pkt, fw_guard_decide(&c, &pkt)) ? TC_ACT_SHOT : TC_ACT_OK;
}
