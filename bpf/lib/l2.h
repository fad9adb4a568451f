/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The link-layer binding of sandbox ports: each port sends from one MAC
 * and owns the link-local addresses of that MAC (EUI-64) plus one it
 * learned; a MAC or link-local address belongs to one port only, and the
 * pod's own ones to none. A bridge learns its forwarding table and its
 * neighbours learn their caches from exactly these fields, so a frame with
 * another port's MAC, or a neighbour message naming another port's or the
 * pod's link-local address, would divert their traffic. */
#ifndef FW_BPF_L2_H
#define FW_BPF_L2_H

#include "common.h"
#include "parse.h"

/* ifindex -> struct fw_l2_port. Writer: fastwalld (at attach, cleanup),
 * fw_from_sandbox (first sight). Reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_L2_PORTS);
	__type(key, __u32);
	__type(value, struct fw_l2_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l2_ports SEC(".maps");

/* MAC -> owner ifindex (FW_L2_OWNER_POD: the pod's). Same writers. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * FW_MAX_L2_PORTS);
	__type(key, struct fw_mac);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l2_macs SEC(".maps");

/* fe80::/10 address -> owner ifindex (FW_L2_OWNER_POD: the pod's). Each
 * port holds its EUI-64 address and at most one learned one. The pod's
 * other IPv6 addresses are here too (owner FW_L2_OWNER_POD): ND to them is
 * the pod resolving its sandboxes, never routed. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * FW_MAX_L2_PORTS);
	__type(key, struct fw_ip);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l2_lladdrs SEC(".maps");

static __always_inline bool fw_mac_eq(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4] &&
	       a[5] == b[5];
}

static __always_inline bool fw_ip_is_ll(const struct fw_ip *a)
{
	return (bpf_ntohl(FW_IP_W(a)[0]) & 0xffc00000) == 0xfe800000;
}

/* fe80::/64 with the modified EUI-64 interface id of mac (RFC 4291 A) */
static __always_inline void fw_eui64(const __u8 *mac, struct fw_ip *ll)
{
	FW_IP_W(ll)[0] = bpf_htonl(0xfe800000);
	FW_IP_W(ll)[1] = 0;
	ll->b[8] = mac[0] ^ 0x02;
	ll->b[9] = mac[1];
	ll->b[10] = mac[2];
	ll->b[11] = 0xff;
	ll->b[12] = 0xfe;
	ll->b[13] = mac[3];
	ll->b[14] = mac[4];
	ll->b[15] = mac[5];
}

/* Claims mac for ifindex unless another port or the pod owns it. */
static __always_inline bool fw_l2_mac_claim(__u32 ifindex, const __u8 *mac)
{
	struct fw_mac key = {};
	__u32 *owner;

	__builtin_memcpy(key.b, mac, 6);
	owner = bpf_map_lookup_elem(&fastwall_l2_macs, &key);
	if (!owner) {
		/* NOEXIST: of two ports racing for one MAC the first wins */
		bpf_map_update_elem(&fastwall_l2_macs, &key, &ifindex, BPF_NOEXIST);
		owner = bpf_map_lookup_elem(&fastwall_l2_macs, &key);
	}
	return owner && *owner == ifindex;
}

/* The binding of the packet's port. A port seen for the first time (or
 * prepared by fastwalld without a MAC) is bound to the frame's source MAC
 * if no other port and not the pod owns it, with the MAC's EUI-64
 * link-local address. NULL: no binding can be had (the MAC is taken, or
 * the maps are full), which fails closed. */
static __always_inline struct fw_l2_port *fw_l2_port_of(struct __sk_buff *skb,
							const struct fw_pkt *pkt)
{
	__u32 ifindex = skb->ifindex;
	struct fw_l2_port *rec, fresh = {};
	struct fw_ip ll;

	rec = bpf_map_lookup_elem(&fastwall_l2_ports, &ifindex);
	if (rec && !(rec->flags & FW_L2F_UNBOUND))
		return rec;
	/* a group or zero address is no station's: binding one would lock
	 * the port's own sandbox out */
	if ((pkt->eth_src[0] & 1) || (pkt->eth_src[0] | pkt->eth_src[1] | pkt->eth_src[2] |
				      pkt->eth_src[3] | pkt->eth_src[4] | pkt->eth_src[5]) == 0)
		return NULL;
	if (!fw_l2_mac_claim(ifindex, pkt->eth_src))
		return NULL;
	fw_eui64(pkt->eth_src, &ll);
	/* taken already (by a port that learned it): then it is not ours */
	bpf_map_update_elem(&fastwall_l2_lladdrs, &ll, &ifindex, BPF_NOEXIST);
	if (rec) {
		fresh = *rec;
		fresh.flags &= ~FW_L2F_UNBOUND;
	}
	__builtin_memcpy(fresh.mac.b, pkt->eth_src, 6);
	/* NOEXIST for a new record: a racing first frame on another CPU
	 * may have bound it already, and then that binding stands */
	bpf_map_update_elem(&fastwall_l2_ports, &ifindex, &fresh, rec ? BPF_EXIST : BPF_NOEXIST);
	return bpf_map_lookup_elem(&fastwall_l2_ports, &ifindex);
}

/* The Ethernet source (and an ARP sender's hardware address) must be the
 * port's MAC. Returns FW_PARSE_OK and the binding, or the drop. */
static __always_inline __u32 fw_l2_check(struct __sk_buff *skb, const struct fw_pkt *pkt, bool arp,
					 struct fw_l2_port **port)
{
	struct fw_l2_port *rec = fw_l2_port_of(skb, pkt);

	if (!rec || !fw_mac_eq(rec->mac.b, pkt->eth_src))
		return FW_DROP_MAC_SPOOF;
	if (arp && !fw_mac_eq(rec->mac.b, pkt->arp_sha))
		return FW_DROP_MAC_SPOOF;
	*port = rec;
	return FW_PARSE_OK;
}

/* A link-local address the port uses as an ND source or claims as an NA
 * target: its own (EUI-64 or the one learned), or, if the port has not
 * learned one yet, learned now unless another port or the pod owns it. */
static __always_inline __u32 fw_l2_lladdr(struct __sk_buff *skb, struct fw_l2_port **port,
					  const struct fw_ip *ll)
{
	__u32 ifindex = skb->ifindex, *owner;
	struct fw_l2_port next, *rec = *port;

	owner = bpf_map_lookup_elem(&fastwall_l2_lladdrs, ll);
	if (owner)
		return *owner == ifindex ? FW_PASS_NEIGH : FW_DROP_SPOOF;
	if (rec->flags & FW_L2F_LLADDR)
		return FW_DROP_ND_TARGET; /* one learned address per port */
	bpf_map_update_elem(&fastwall_l2_lladdrs, ll, &ifindex, BPF_NOEXIST);
	owner = bpf_map_lookup_elem(&fastwall_l2_lladdrs, ll);
	if (!owner || *owner != ifindex)
		return FW_DROP_SPOOF;
	next = *rec;
	next.flags |= FW_L2F_LLADDR;
	next.lladdr = *ll;
	bpf_map_update_elem(&fastwall_l2_ports, &ifindex, &next, BPF_EXIST);
	/* the update replaced the element: a second claim in the same
	 * message must see this one, not the one it replaced */
	rec = bpf_map_lookup_elem(&fastwall_l2_ports, &ifindex);
	if (!rec)
		return FW_DROP_MAC_SPOOF; /* the port went meanwhile */
	*port = rec;
	return FW_PASS_NEIGH;
}

static __always_inline bool fw_l2_pod_addr(const struct fw_ip *addr)
{
	__u32 *owner = bpf_map_lookup_elem(&fastwall_l2_lladdrs, addr);

	return owner && *owner == FW_L2_OWNER_POD;
}

#define FW_ND_MAX_OPTS 8

/* Source and target link-layer address options (types 1 and 2) of an
 * RS/NS/NA must carry the port's MAC: neighbours cache that address, not
 * the frame's. opts is the first option's offset. */
static __always_inline __u32 fw_nd_opts(struct __sk_buff *skb, const struct fw_pkt *pkt,
					const struct fw_l2_port *port, __u32 opts)
{
	__be16 plen;
	__u32 off = opts, end;

	if (bpf_skb_load_bytes(skb, pkt->l3_off + 4, &plen, sizeof(plen)))
		return FW_DROP_MALFORMED;
	end = pkt->l3_off + 40 + bpf_ntohs(plen);
	if (off > end)
		return FW_DROP_MALFORMED;
#pragma unroll
	for (int i = 0; i < FW_ND_MAX_OPTS; i++) {
		__u8 o[8];

		if (off >= end)
			return FW_PASS_NEIGH;
		if (off + 8 > end || bpf_skb_load_bytes(skb, off, o, sizeof(o)))
			return FW_DROP_MALFORMED;
		if (o[1] == 0) /* RFC 4861 4.6: a zero length is invalid */
			return FW_DROP_MALFORMED;
		if (o[0] == 1 || o[0] == 2) {
			if (o[1] != 1)
				return FW_DROP_MALFORMED; /* not an Ethernet address */
			if (!fw_mac_eq(&o[2], port->mac.b))
				return FW_DROP_MAC_SPOOF;
		}
		off += o[1] * 8;
	}
	/* more options than a neighbour message carries: one could hide */
	return off >= end ? FW_PASS_NEIGH : FW_DROP_MALFORMED;
}

#endif /* FW_BPF_L2_H */
