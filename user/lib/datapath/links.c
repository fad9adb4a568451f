// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* rtnetlink link dump and events. See links.h. Messages come from the
 * kernel, but are still parsed with every length checked. */
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "datapath/links.h"

static bool linkinfo_is_veth(const struct rtattr *info)
{
	const struct rtattr *rta;
	int len = (int)RTA_PAYLOAD(info);

	for (rta = RTA_DATA(info); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == IFLA_INFO_KIND && RTA_PAYLOAD(rta) >= 4 &&
		    memcmp(RTA_DATA(rta), "veth", 4) == 0 &&
		    (RTA_PAYLOAD(rta) == 4 || ((const char *)RTA_DATA(rta))[4] == '\0'))
			return true;
	return false;
}

static void parse_link(const struct nlmsghdr *nh, fw_link_cb cb, void *ctx)
{
	const struct ifinfomsg *ifi;
	const struct rtattr *rta;
	struct fw_link link = {};
	int len;

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return;
	ifi = NLMSG_DATA(nh);
	link.ifindex = ifi->ifi_index;
	link.removed = nh->nlmsg_type == RTM_DELLINK;
	len = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	for (rta = IFLA_RTA(ifi); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		size_t plen = RTA_PAYLOAD(rta);

		switch (rta->rta_type) {
		case IFLA_IFNAME:
			if (plen > 0) {
				size_t n = plen < sizeof(link.name) ? plen : sizeof(link.name) - 1;

				memcpy(link.name, RTA_DATA(rta), n);
				link.name[sizeof(link.name) - 1] = '\0';
			}
			break;
		case IFLA_MASTER:
			if (plen >= sizeof(int))
				memcpy(&link.master, RTA_DATA(rta), sizeof(int));
			break;
		case IFLA_ADDRESS:
			if (plen == sizeof(link.addr)) {
				memcpy(link.addr, RTA_DATA(rta), sizeof(link.addr));
				link.has_addr = true;
			}
			break;
		case IFLA_LINK:
			if (plen >= sizeof(int))
				memcpy(&link.peer, RTA_DATA(rta), sizeof(int));
			break;
		case IFLA_LINK_NETNSID:
			if (plen >= sizeof(int)) {
				memcpy(&link.peer_netnsid, RTA_DATA(rta), sizeof(int));
				link.has_peer_netnsid = true;
			}
			break;
		case IFLA_LINKINFO:
			link.veth = linkinfo_is_veth(rta);
			break;
		}
	}
	if (link.name[0])
		cb(ctx, &link);
}

/* An address attribute into a fw_ip; false when it is too short. */
static bool addr_of(int family, const struct rtattr *rta, struct fw_ip *out)
{
	size_t plen = RTA_PAYLOAD(rta);

	memset(out, 0, sizeof(*out));
	if (family == AF_INET && plen >= 4) {
		FW_IP_W(out)[2] = htonl(0x0000ffff);
		memcpy(&FW_IP_W(out)[3], RTA_DATA(rta), 4);
		return true;
	}
	if (family == AF_INET6 && plen >= 16) {
		memcpy(out, RTA_DATA(rta), 16);
		return true;
	}
	return false;
}

static void parse_addr(const struct nlmsghdr *nh, fw_addr_cb cb, void *ctx)
{
	const struct rtattr *rta, *local = NULL, *address = NULL, *brd = NULL;
	const struct ifaddrmsg *ifa;
	struct fw_ifaddr a = {};
	int len;

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return;
	ifa = NLMSG_DATA(nh);
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return;
	a.ifindex = (int)ifa->ifa_index;
	a.plen = ifa->ifa_prefixlen;
	a.removed = nh->nlmsg_type == RTM_DELADDR;
	len = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifa));
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		switch (rta->rta_type) {
		case IFA_LOCAL:
			local = rta;
			break;
		case IFA_ADDRESS:
			address = rta;
			break;
		case IFA_BROADCAST:
			brd = rta;
			break;
		}
	}
	/* IFA_LOCAL is ours; IFA_ADDRESS is the peer's on point-to-point
	 * links, and ours otherwise (IPv6 sends only it) */
	if (!(local || address) || !addr_of(ifa->ifa_family, local ? local : address, &a.addr))
		return;
	if (brd)
		a.has_brd = addr_of(ifa->ifa_family, brd, &a.brd);
	cb(ctx, &a);
}

/* Walks one datagram; returns 1 at NLMSG_DONE, 0 to read on, or -errno. */
static int walk(const char *buf, ssize_t n, fw_link_cb cb, fw_addr_cb acb, void *ctx)
{
	const struct nlmsghdr *nh;
	int len = (int)n;

	/* NLMSG_OK compares the header's __u32 length with len, an int as
	 * netlink(3) has it: clang warns inside the macro, gcc does not */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
	for (nh = (const struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		if (nh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error)
				return e->error;
			continue;
		}
		if (cb && (nh->nlmsg_type == RTM_NEWLINK || nh->nlmsg_type == RTM_DELLINK))
			parse_link(nh, cb, ctx);
		if (acb && (nh->nlmsg_type == RTM_NEWADDR || nh->nlmsg_type == RTM_DELADDR))
			parse_addr(nh, acb, ctx);
	}
#pragma GCC diagnostic pop
	return 0;
}

int fw_links_subscribe(int *fd)
{
	/* address changes too: the pod's addresses are pod-local, and the
	 * link-layer binding reserves them */
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	int s, err;

	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(s);
		return err;
	}
	*fd = s;
	return 0;
}

/* Sends one request on a fresh socket and walks the answer: a dump until
 * its NLMSG_DONE (or an error), a plain request's one reply. Callbacks may
 * make requests of their own (a link listing binds veth peers), so each
 * call has its own buffer. */
static int request(const struct nlmsghdr *req, fw_link_cb cb, fw_addr_cb acb, void *ctx)
{
	const size_t size = 65536;
	bool dumping = req->nlmsg_flags & NLM_F_DUMP;
	char *buf = malloc(size);
	int s, err = 0;

	if (!buf)
		return -ENOMEM;
	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0) {
		err = -errno;
		free(buf);
		return err;
	}
	if (send(s, req, req->nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = recv(s, buf, size, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		err = walk(buf, n, cb, acb, ctx);
		if (err || !dumping) {
			if (err > 0)
				err = 0;
			break;
		}
	}
out:
	close(s);
	free(buf);
	return err;
}

/* One RTM_GET* dump: RTM_GETLINK calls cb, RTM_GETADDR acb. */
static int dump(__u16 type, fw_link_cb cb, fw_addr_cb acb, void *ctx)
{
	struct {
		struct nlmsghdr nh;
		union {
			struct ifinfomsg ifi;
			struct ifaddrmsg ifa;
		};
	} req = {
		.nh =
			{
				/* each request carries its own header (strict
				 * checking kernels want exactly that) */
				.nlmsg_len = NLMSG_LENGTH(type == RTM_GETADDR
								  ? sizeof(struct ifaddrmsg)
								  : sizeof(struct ifinfomsg)),
				.nlmsg_type = type,
				.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
				.nlmsg_seq = 1,
			},
		.ifi = {.ifi_family = AF_UNSPEC},
	};

	return request(&req.nh, cb, acb, ctx);
}

int fw_links_dump(fw_link_cb cb, void *ctx)
{
	return dump(RTM_GETLINK, cb, NULL, ctx);
}

int fw_addrs_dump(fw_addr_cb cb, void *ctx)
{
	return dump(RTM_GETADDR, NULL, cb, ctx);
}

int fw_links_read(int fd, fw_link_cb cb, fw_addr_cb acb, void *ctx)
{
	static char buf[65536];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int err;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* ENOBUFS: events were lost; callers re-dump */
			return -errno;
		}
		err = walk(buf, n, cb, acb, ctx);
		if (err < 0)
			return err;
	}
}

struct peer_ctx {
	unsigned char *mac;
	bool found;
};

static void on_peer(void *ctx, const struct fw_link *link)
{
	struct peer_ctx *p = ctx;

	if (link->has_addr) {
		memcpy(p->mac, link->addr, 6);
		p->found = true;
	}
}

int fw_links_peer_addr(const struct fw_link *link, unsigned char mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr nsid_rta;
		int nsid;
	} req = {
		.nh =
			{
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
				.nlmsg_type = RTM_GETLINK,
				.nlmsg_flags = NLM_F_REQUEST,
				.nlmsg_seq = 2,
			},
		.ifi = {.ifi_family = AF_UNSPEC},
	};
	struct peer_ctx p = {.mac = mac};
	int err;

	if (!link->veth || link->peer <= 0)
		return -ENOENT;
	req.ifi.ifi_index = link->peer;
	if (link->has_peer_netnsid) {
		req.nsid_rta.rta_type = IFLA_TARGET_NETNSID;
		req.nsid_rta.rta_len = RTA_LENGTH(sizeof(int));
		req.nsid = link->peer_netnsid;
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_LENGTH(sizeof(int));
	}
	err = request(&req.nh, on_peer, NULL, &p);
	if (!err && !p.found)
		err = -ENOENT;
	return err;
}
