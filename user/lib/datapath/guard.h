/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The port guard from userspace (bpf/guard.bpf.c): load it with its maps
 * pinned beside the TC programs' (sharing their counters, settings and
 * event ring), program the guarded ports and trusted sources, and attach
 * it to the pod's uplinks as native XDP, generic XDP or TC ingress.
 * Functions return 0 or a negative errno and log what failed. */
#ifndef FW_DATAPATH_GUARD_H
#define FW_DATAPATH_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"

#define FW_GUARD_TC_HANDLE   0xfa58 /* not the sandbox ports' 0xfa57: detach tells them apart */
#define FW_GUARD_TC_PRIORITY 0xfa4

/* The hooks, in the order auto tries them. */
enum fw_guard_mode {
	FW_GUARD_AUTO = 0,    /* native XDP, else TC ingress */
	FW_GUARD_XDP,	      /* native (driver) XDP only */
	FW_GUARD_XDP_GENERIC, /* generic (skb) XDP */
	FW_GUARD_TC,	      /* TC ingress (clsact) */
	FW_GUARD_NONE,	      /* not attached (fw_guard_attached) */
};

struct guard_bpf;

struct fw_guard {
	struct guard_bpf *skel;
	char pin_root[256];
	int xdp_fd, tc_fd;
	int ports_fd, trusted_fd, frags_fd;
};

const char *fw_guard_mode_name(enum fw_guard_mode m);

/* Loads the guard; its maps already pinned under pin_root are reused
 * (checked for their layout first), missing ones created and pinned. */
int fw_guard_open(const char *pin_root, struct fw_guard **out);
void fw_guard_close(struct fw_guard *g);

/* Makes the guard hold exactly these ports (TCP and UDP, host order) and
 * trusted prefixes (plen over 128 bits). New entries go in before the
 * ones no longer wanted go, trusted sources before ports, so no source
 * trusted before and after is ever refused, and a newly guarded port
 * finds its trusted set complete. */
int fw_guard_set(struct fw_guard *g, const __u16 *ports, size_t nports,
		 const struct fw_lpm_key *trusted, size_t ntrusted);

/* Puts the guard on ifindex in mode want, replacing the guard already
 * there atomically, then removes the guard from the hooks it no longer
 * uses (never leaving the interface unguarded in between); *used gets the
 * hook it runs on. Never replaces another XDP program: -EBUSY for xdp and
 * xdp-generic, TC ingress for auto. */
int fw_guard_attach(struct fw_guard *g, int ifindex, enum fw_guard_mode want,
		    enum fw_guard_mode *used);
/* Removes the guard (only fastwall's) from every hook of ifindex; -ENOENT
 * when it was on none. */
int fw_guard_detach(int ifindex);
/* The hook the guard runs on at ifindex, FW_GUARD_NONE when none. */
enum fw_guard_mode fw_guard_attached(int ifindex);

#endif /* FW_DATAPATH_GUARD_H */
