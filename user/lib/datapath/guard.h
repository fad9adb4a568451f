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

/* The hooks, in the order auto tries them. The numbers are stored in
 * fastwall_guard_hooks: fixed. */
enum fw_guard_mode {
	FW_GUARD_AUTO = 0,    /* native XDP where the driver runs it in place, else TC */
	FW_GUARD_XDP,	      /* native (driver) XDP only */
	FW_GUARD_XDP_GENERIC, /* generic (skb) XDP */
	FW_GUARD_TC,	      /* TC ingress (clsact) */
	FW_GUARD_NONE,	      /* not attached (fw_guard_attached) */
};

/* Why the guard runs on the hook it does (fastwall_guard_hooks; fixed
 * numbers). */
enum fw_guard_why {
	FW_GUARD_WHY_CONFIGURED = 0, /* the mode named the hook */
	FW_GUARD_WHY_DRIVER,	     /* auto: the driver runs XDP on its own buffers */
	FW_GUARD_WHY_COPIES,	     /* auto: the driver's native XDP copies each packet */
	FW_GUARD_WHY_BUSY,	     /* auto: another XDP program is attached */
	FW_GUARD_WHY_NO_XDP,	     /* auto: the kernel refused native XDP there */
	FW_GUARD_WHY_MAX,
};

struct guard_bpf;

struct fw_guard {
	struct guard_bpf *skel;
	char pin_root[256];
	int xdp_fd, tc_fd;
	int ports_fd, trusted_fd, frags_fd, hooks_fd;
};

const char *fw_guard_mode_name(enum fw_guard_mode m);
/* A phrase saying why: "the driver runs XDP on its own buffers". */
const char *fw_guard_why_text(enum fw_guard_why why);

/* The hook auto puts first on a device of this driver (ETHTOOL_GDRVINFO's
 * name, "" when unknown): FW_GUARD_TC where native XDP would copy each
 * packet before the program (veth), FW_GUARD_XDP elsewhere; *why says
 * which case it was. */
enum fw_guard_mode fw_guard_auto_hook(const char *driver, enum fw_guard_why *why);
/* The copying kind of native XDP, for a warning: true for veth. */
bool fw_guard_xdp_copies(const char *driver);
/* The driver of ifindex as ethtool names it; 0 or a negative errno (buf
 * then ""). */
int fw_guard_driver(int ifindex, char *buf, size_t len);
/* What fastwall_guard_hooks under pin_root records for ifindex, when its
 * hook is the one attached there now: 0, -ENOENT or a negative errno. */
int fw_guard_hook_read(const char *pin_root, int ifindex, struct fw_guard_hook *out);

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
 * hook it runs on, and fastwall_guard_hooks why. Auto takes TC ingress on
 * a veth (fw_guard_auto_hook), native XDP elsewhere and TC where that
 * fails; the reason is logged when the hook changes. Never replaces
 * another XDP program: -EBUSY for xdp and xdp-generic, TC ingress for
 * auto. */
int fw_guard_attach(struct fw_guard *g, int ifindex, enum fw_guard_mode want,
		    enum fw_guard_mode *used);
/* Removes the guard (only fastwall's) from every hook of ifindex; -ENOENT
 * when it was on none. */
int fw_guard_detach(int ifindex);
/* The hook the guard runs on at ifindex, FW_GUARD_NONE when none. */
enum fw_guard_mode fw_guard_attached(int ifindex);

#endif /* FW_DATAPATH_GUARD_H */
