/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The link-layer binding of sandbox ports from userspace: fastwall_l2_ports,
 * fastwall_l2_macs and fastwall_l2_lladdrs (see include/fastwall.h). A port
 * is bound before fastwalld attaches to it: to its veth peer's MAC when the
 * link says it, else prepared so that the data plane binds the first MAC
 * the port sends from. The pod's own MACs and link-local addresses are
 * reserved so no port can take them. Functions return 0 or -errno. */
#ifndef FW_L2BIND_H
#define FW_L2BIND_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/datapath.h"

/* Binds ifindex, whose own MAC is host, to peer (NULL: learn on first
 * sight). A binding written for the same link before (same host MAC, and
 * the same peer when one is given) is kept, so a restart changes nothing;
 * anything else on that ifindex (a deleted port's, ifindex reuse) is
 * forgotten first. A port that had taken peer on first sight loses it. */
int fw_l2_bind(struct fw_dp *dp, int ifindex, const __u8 host[6], const __u8 *peer);
/* Deletes the binding of ifindex and every MAC and link-local address it
 * owns (the port is gone). */
int fw_l2_forget(struct fw_dp *dp, int ifindex);
/* Deletes the bindings of every ifindex for which live() says no. */
int fw_l2_prune(struct fw_dp *dp, bool (*live)(int ifindex, const void *ctx), const void *ctx);
/* Makes the pod's reservations exactly these MACs and IPv6 addresses
 * (link-local ones no port may claim, others that ND may go to); a port
 * that had claimed one of them loses its binding. */
int fw_l2_reserve(struct fw_dp *dp, const struct fw_mac *macs, size_t nmacs,
		  const struct fw_ip *lladdrs, size_t nlladdrs);
/* The modified EUI-64 link-local address of mac (fe80::/64). */
void fw_l2_eui64(const __u8 mac[6], struct fw_ip *ll);

#endif /* FW_L2BIND_H */
