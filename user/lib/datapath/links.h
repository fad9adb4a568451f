/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Network interfaces and their addresses from rtnetlink: dumps of the
 * current links and addresses and a subscription to changes of both, so
 * ports that appear after start get attached and the pod's own addresses
 * stay pod-local. Functions return 0 or a negative errno. */
#ifndef FW_LINKS_H
#define FW_LINKS_H

#include <net/if.h>
#include <stdbool.h>

#include "fastwall/abi.h"

struct fw_link {
	int ifindex;
	int master; /* ifindex of the bridge this is a port of, or 0 */
	char name[IF_NAMESIZE];
	bool removed;
	bool has_addr;	       /* addr holds the link's Ethernet address */
	bool veth;	       /* a veth: peer and peer_netnsid name the other end */
	bool has_peer_netnsid; /* the peer lives in another namespace */
	unsigned char addr[6];
	int peer;	  /* IFLA_LINK: the peer's ifindex in its namespace */
	int peer_netnsid; /* IFLA_LINK_NETNSID */
};

typedef void (*fw_link_cb)(void *ctx, const struct fw_link *link);

/* An interface address (IPv4 stored v4-mapped) with its prefix length and
 * the broadcast address the kernel was given for it, if any. */
struct fw_ifaddr {
	int ifindex;
	struct fw_ip addr;
	struct fw_ip brd; /* with has_brd */
	unsigned char plen;
	bool has_brd;
	bool removed;
};

typedef void (*fw_addr_cb)(void *ctx, const struct fw_ifaddr *addr);

/* Opens a socket subscribed to link and address events (non-blocking). */
int fw_links_subscribe(int *fd);
/* Calls cb for every link that exists now. */
int fw_links_dump(fw_link_cb cb, void *ctx);
/* Calls cb for every IPv4 and IPv6 address of the namespace now. */
int fw_addrs_dump(fw_addr_cb cb, void *ctx);
/* Reads pending events from a subscribed socket and calls cb or acb (either
 * may be NULL) for each; returns -EAGAIN when nothing is left. */
int fw_links_read(int fd, fw_link_cb cb, fw_addr_cb acb, void *ctx);
/* The Ethernet address of a veth's other end, which may live in another
 * namespace (asked for with IFLA_TARGET_NETNSID); -ENOENT when link is no
 * veth or the peer has no Ethernet address. */
int fw_links_peer_addr(const struct fw_link *link, unsigned char mac[6]);

#endif /* FW_LINKS_H */
