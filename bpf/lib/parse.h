/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Packet parsing for the TC programs: Ethernet with at most one VLAN tag,
 * IPv4 with options, IPv6 with its extension headers, and the first bytes
 * of TCP/UDP/ICMP. fw_parse() returns FW_PARSE_OK or the reason to decide
 * at once (a drop, or FW_PARSE_ARP for ARP). Uses bpf_skb_load_bytes so
 * non-linear skbs parse the same as linear ones. */
#ifndef FW_BPF_PARSE_H
#define FW_BPF_PARSE_H

#include "common.h"

#define FW_PARSE_OK	FW_REASON_MAX
#define FW_PARSE_ARP	(FW_REASON_MAX + 1) /* pkt->src holds the sender address */
#define FW_IPV6_MAX_EXT 8

struct fw_pkt {
	struct fw_ip src;
	struct fw_ip dst;
	__u32 frag_id;
	__be16 sport;
	__be16 dport;
	__u8 family;	 /* enum fw_family */
	__u8 proto;	 /* L4 protocol after extension headers */
	__u8 frag_first; /* first fragment of a fragmented datagram */
	__u8 frag_later; /* non-first fragment: no L4 header */
	__u8 tcp_flags;
	__u8 icmp_type;
	__u8 hop_limit;
	__u8 has_ports;
	__u16 l3_off;		/* network header, from the start of the frame */
	__u16 l4_off;		/* transport header (valid with has_ports) */
	struct fw_ip nd_target; /* ICMPv6 neighbour solicitation/advertisement target */
	/* bytes from the start of the fragmentable part: where a later
	 * fragment begins, and how far a first fragment's headers reach */
	__u16 frag_off;
	__u16 frag_hdr_end;
	__u8 eth_src[6]; /* Ethernet source address */
	__u8 arp_sha[6]; /* ARP sender hardware address */
};

struct fw_iphdr {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

struct fw_ipv6hdr {
	__be32 ver_tc_flow;
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	struct fw_ip saddr;
	struct fw_ip daddr;
};

static __always_inline void fw_ip_from_v4(struct fw_ip *ip, __be32 a)
{
	FW_IP_W(ip)[0] = 0;
	FW_IP_W(ip)[1] = 0;
	FW_IP_W(ip)[2] = bpf_htonl(0x0000ffff);
	FW_IP_W(ip)[3] = a;
}

/* What an IPv4 header says, decoded and checked once for every parser
 * (fw_parse_ipv4 here, the guard's fw_guard_ipv4). */
struct fw_ipv4 {
	__u32 ihl, tot_len; /* bytes */
	__u16 frag_off;	    /* a later fragment's offset, in bytes */
	__u16 id;
	__u8 frag_first, frag_later;
};

/* Whether iph, at off in a frame of len bytes, is an IPv4 header whose
 * datagram fits the frame. big_tcp: a total length of 0 in a frame past
 * 64 KiB is a GSO or GRO packet (BIG TCP) as long as the frame, which
 * only the kernel builds. */
static __always_inline bool fw_ipv4_decode(const struct fw_iphdr *iph, __u32 off, __u32 len,
					   bool big_tcp, struct fw_ipv4 *v)
{
	__u16 frag;

	v->ihl = (iph->ver_ihl & 0xf) * 4;
	v->tot_len = bpf_ntohs(iph->tot_len);
	if (big_tcp && !v->tot_len && len > off + 0xffff)
		v->tot_len = len - off;
	if ((iph->ver_ihl >> 4) != 4 || v->ihl < 20 || v->tot_len < v->ihl ||
	    off + v->tot_len > len)
		return false;
	frag = bpf_ntohs(iph->frag_off);
	/* offset 0 with MF set: the first of several */
	v->frag_later = (frag & 0x1fff) != 0;
	v->frag_first = !v->frag_later && (frag & 0x2000);
	v->frag_off = (frag & 0x1fff) * 8;
	v->id = bpf_ntohs(iph->id);
	return true;
}

/* Reads the L4 header at off, inside the payload the IP header declares
 * (which ends at end): bytes past it are padding or the attacker's, and the
 * receiver never sees them as the header. A header that does not fit is
 * malformed, or, in a first fragment, unclassifiable: the rest of it, ports
 * included, would come in a fragment that carries no ports. frag_start is
 * where the fragmentable part begins, so that a first fragment records how
 * far its headers reach (later fragments must not overlap them). */
static __always_inline int fw_parse_l4(struct __sk_buff *skb, struct fw_pkt *pkt, __u32 off,
				       __u32 end, __u32 frag_start)
{
	int cut = pkt->frag_first ? FW_DROP_FRAG_HEADER : FW_DROP_MALFORMED;
	__u32 hlen = 0;
	__u8 buf[14];

	if (pkt->frag_later)
		return FW_PARSE_OK;

	pkt->l4_off = off;
	switch (pkt->proto) {
	case FW_IPPROTO_TCP: {
		__u8 doff;

		if (off + 20 > end)
			return cut;
		if (bpf_skb_load_bytes(skb, off, buf, 14))
			return FW_DROP_MALFORMED;
		doff = buf[12] >> 4;
		if (doff < 5)
			return FW_DROP_MALFORMED;
		hlen = doff * 4;
		if (off + hlen > end)
			return cut;
		pkt->tcp_flags = buf[13];
		break;
	}
	case FW_IPPROTO_UDP:
		hlen = 8;
		if (off + hlen > end)
			return cut;
		if (bpf_skb_load_bytes(skb, off, buf, 8))
			return FW_DROP_MALFORMED;
		break;
	case FW_IPPROTO_ICMP:
	case FW_IPPROTO_ICMPV6:
		/* both headers are 8 bytes (type, code, checksum, 4 more);
		 * neither kernel accepts less */
		hlen = 8;
		if (off + hlen > end)
			return cut;
		if (bpf_skb_load_bytes(skb, off, buf, 4))
			return FW_DROP_MALFORMED;
		pkt->icmp_type = buf[0];
		/* an advertisement claims its target address for the sender, a
		 * duplicate address probe its target for the prober */
		if (pkt->proto == FW_IPPROTO_ICMPV6 &&
		    (pkt->icmp_type == 135 || pkt->icmp_type == 136)) {
			hlen = 8 + sizeof(pkt->nd_target);
			if (off + hlen > end)
				return cut;
			if (bpf_skb_load_bytes(skb, off + 8, &pkt->nd_target,
					       sizeof(pkt->nd_target)))
				return FW_DROP_MALFORMED;
		}
		goto out;
	default:
		goto out;
	}
	__builtin_memcpy(&pkt->sport, &buf[0], 2);
	__builtin_memcpy(&pkt->dport, &buf[2], 2);
	pkt->has_ports = 1;
out:
	if (pkt->frag_first)
		pkt->frag_hdr_end = off + hlen - frag_start;
	return FW_PARSE_OK;
}

static __always_inline int fw_parse_ipv4(struct __sk_buff *skb, struct fw_pkt *pkt, __u32 off)
{
	struct fw_iphdr iph;
	struct fw_ipv4 v;

	if (bpf_skb_load_bytes(skb, off, &iph, sizeof(iph)) ||
	    !fw_ipv4_decode(&iph, off, skb->len, false, &v))
		return FW_DROP_MALFORMED;

	pkt->family = FW_FAM_V4;
	pkt->l3_off = off;
	pkt->proto = iph.protocol;
	pkt->hop_limit = iph.ttl;
	fw_ip_from_v4(&pkt->src, iph.saddr);
	fw_ip_from_v4(&pkt->dst, iph.daddr);
	pkt->frag_first = v.frag_first;
	pkt->frag_later = v.frag_later;
	pkt->frag_off = v.frag_off;
	pkt->frag_id = v.id;

	return fw_parse_l4(skb, pkt, off + v.ihl, off + v.tot_len, off + v.ihl);
}

static __always_inline bool fw_ip_is_v4mapped(const struct fw_ip *a)
{
	return FW_IP_W(a)[0] == 0 && FW_IP_W(a)[1] == 0 && FW_IP_W(a)[2] == bpf_htonl(0x0000ffff);
}

static __always_inline int fw_parse_ipv6(struct __sk_buff *skb, struct fw_pkt *pkt, __u32 off)
{
	struct fw_ipv6hdr ip6;
	__u32 end, frag_start = 0;
	__u8 nexthdr, frags = 0;

	if (bpf_skb_load_bytes(skb, off, &ip6, sizeof(ip6)))
		return FW_DROP_MALFORMED;
	if ((bpf_ntohl(ip6.ver_tc_flow) >> 28) != 6)
		return FW_DROP_MALFORMED;
	/* payload_len 0 is a jumbogram (or BIG TCP); neither comes from a slot */
	end = off + sizeof(ip6) + bpf_ntohs(ip6.payload_len);
	if (end == off + sizeof(ip6) && ip6.nexthdr != FW_NEXTHDR_NONE)
		return FW_DROP_MALFORMED;
	if (end > skb->len)
		return FW_DROP_MALFORMED;

	pkt->family = FW_FAM_V6;
	pkt->l3_off = off;
	pkt->hop_limit = ip6.hop_limit;
	pkt->src = ip6.saddr;
	pkt->dst = ip6.daddr;
	/* the maps hold IPv4 addresses in this form: an IPv6 packet must not
	 * be taken for IPv4 (rules, gateways, subjects) by either address */
	if (fw_ip_is_v4mapped(&pkt->src) || fw_ip_is_v4mapped(&pkt->dst))
		return FW_DROP_V4MAPPED;

	nexthdr = ip6.nexthdr;
	off += sizeof(ip6);

#pragma unroll
	for (int i = 0; i <= FW_IPV6_MAX_EXT; i++) {
		/* headers after the fragment header must all be in the first
		 * fragment (RFC 7112), and none may run past the payload */
		int cut = pkt->frag_first ? FW_DROP_FRAG_HEADER : FW_DROP_MALFORMED;
		__u8 ext[8];

		/* where parsing stopped, for the deny event */
		pkt->proto = nexthdr;
		switch (nexthdr) {
		case FW_NEXTHDR_HOP:
		case FW_NEXTHDR_ROUTING:
		case FW_NEXTHDR_DEST:
			if (off + 8 > end)
				return cut;
			if (bpf_skb_load_bytes(skb, off, ext, 2))
				return FW_DROP_MALFORMED;
			nexthdr = ext[0];
			off += (ext[1] + 1) * 8;
			break;
		case FW_NEXTHDR_AUTH:
			if (off + 8 > end)
				return cut;
			if (bpf_skb_load_bytes(skb, off, ext, 2))
				return FW_DROP_MALFORMED;
			nexthdr = ext[0];
			off += (ext[1] + 2) * 4;
			break;
		case FW_NEXTHDR_FRAGMENT: {
			__u16 frag;

			/* a datagram is fragmented once; a second header
			 * would make the later fragments' offsets ambiguous */
			if (frags++)
				return FW_DROP_FRAG_HEADER;
			if (off + 8 > end)
				return FW_DROP_MALFORMED;
			if (bpf_skb_load_bytes(skb, off, ext, 8))
				return FW_DROP_MALFORMED;
			nexthdr = ext[0];
			frag = ((__u16)ext[2] << 8) | ext[3];
			/* offset 0 and M clear is an atomic fragment: a whole
			 * packet (RFC 6946), parsed as one */
			if (frag & 0xfff8)
				pkt->frag_later = 1;
			else if (frag & 1)
				pkt->frag_first = 1;
			pkt->frag_off = frag & 0xfff8;
			pkt->frag_id = ((__u32)ext[4] << 24) | ((__u32)ext[5] << 16) |
				       ((__u32)ext[6] << 8) | ext[7];
			off += 8;
			frag_start = off;
			/* what follows in a later fragment is data, not
			 * headers: the receiver takes them from the first */
			if (pkt->frag_later) {
				pkt->proto = nexthdr;
				return FW_PARSE_OK;
			}
			break;
		}
		default:
			goto l4;
		}
		if (off > end)
			return cut;
		if (i == FW_IPV6_MAX_EXT)
			break;
	}
	/* more extension headers than any slot legitimately sends */
	return FW_DROP_MALFORMED;
l4:
	pkt->proto = nexthdr;
	return fw_parse_l4(skb, pkt, off, end, frag_start);
}

/* The common case, read in place: untagged IPv4 without options, not
 * fragmented, its L4 header in the linear data. Returns FW_PARSE_OK when it
 * parsed the packet, anything else to send it down the general path (which
 * decides every packet this one declines, malformed ones included). */
static __always_inline int fw_parse_fast(struct __sk_buff *skb, struct fw_pkt *pkt)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct fw_iphdr *iph = data + ETH_HLEN;
	__u8 *l4 = data + ETH_HLEN + sizeof(*iph);
	__u32 tot_len, l4_len;

	if ((void *)(l4 + 14) > end)
		return FW_REASON_MAX + 2;
	if (*(__be16 *)(data + 12) != bpf_htons(ETH_P_IP) || iph->ver_ihl != 0x45 ||
	    (iph->frag_off & bpf_htons(0x3fff)))
		return FW_REASON_MAX + 2;
	tot_len = bpf_ntohs(iph->tot_len);
	if (tot_len < sizeof(*iph) || ETH_HLEN + tot_len > skb->len)
		return FW_REASON_MAX + 2;
	/* the L4 header must lie inside tot_len, not merely in the frame */
	l4_len = tot_len - sizeof(*iph);

	pkt->family = FW_FAM_V4;
	pkt->l3_off = ETH_HLEN;
	pkt->l4_off = ETH_HLEN + sizeof(*iph);
	__builtin_memcpy(pkt->eth_src, data + 6, 6);
	pkt->proto = iph->protocol;
	pkt->hop_limit = iph->ttl;
	pkt->frag_id = bpf_ntohs(iph->id);
	fw_ip_from_v4(&pkt->src, iph->saddr);
	fw_ip_from_v4(&pkt->dst, iph->daddr);
	switch (iph->protocol) {
	case FW_IPPROTO_TCP:
		if ((l4[12] >> 4) < 5 || (__u32)(l4[12] >> 4) * 4 > l4_len)
			return FW_REASON_MAX + 2;
		pkt->tcp_flags = l4[13];
		/* fall through */
	case FW_IPPROTO_UDP:
		if (l4_len < 8)
			return FW_REASON_MAX + 2;
		__builtin_memcpy(&pkt->sport, l4, 2);
		__builtin_memcpy(&pkt->dport, l4 + 2, 2);
		pkt->has_ports = 1;
		break;
	case FW_IPPROTO_ICMP:
		if (l4_len < 8)
			return FW_REASON_MAX + 2;
		pkt->icmp_type = l4[0];
		break;
	}
	return FW_PARSE_OK;
}

/* Every frame fw_parse_fast declines: a function of its own, out of the
 * common packet's path (and its cache lines). */
static __noinline int fw_parse_slow(struct __sk_buff *skb, struct fw_pkt *pkt)
{
	__u8 eth[8];
	__u32 off = ETH_HLEN;
	__be16 proto;

	if (bpf_skb_load_bytes(skb, 6, eth, 8))
		return FW_DROP_MALFORMED;
	__builtin_memcpy(pkt->eth_src, eth, 6);
	__builtin_memcpy(&proto, &eth[6], 2);

	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		/* a tag already taken out by the driver plus one inline is two */
		if (skb->vlan_present)
			return FW_DROP_MALFORMED;
		if (bpf_skb_load_bytes(skb, off, eth, 4))
			return FW_DROP_MALFORMED;
		__builtin_memcpy(&proto, &eth[2], 2);
		off += 4;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
			return FW_DROP_MALFORMED;
	}

	if (proto == bpf_htons(ETH_P_IP))
		return fw_parse_ipv4(skb, pkt, off);
	if (proto == bpf_htons(ETH_P_IPV6))
		return fw_parse_ipv6(skb, pkt, off);
	if (proto == bpf_htons(ETH_P_ARP)) {
		/* Ethernet/IPv4 ARP: htype 1, ptype 0x0800, hlen 6, plen 4; the
		 * sender protocol address sits at byte 14 */
		__u8 arp[18];
		__be32 spa;

		if (bpf_skb_load_bytes(skb, off, arp, sizeof(arp)))
			return FW_DROP_MALFORMED;
		if (arp[0] != 0 || arp[1] != 1 || arp[2] != 0x08 || arp[3] != 0 || arp[4] != 6 ||
		    arp[5] != 4)
			return FW_DROP_MALFORMED;
		__builtin_memcpy(&spa, &arp[14], 4);
		__builtin_memcpy(pkt->arp_sha, &arp[8], 6);
		pkt->family = FW_FAM_V4;
		fw_ip_from_v4(&pkt->src, spa);
		return FW_PARSE_ARP;
	}
	return FW_DROP_ETHERTYPE;
}

static __always_inline int fw_parse(struct __sk_buff *skb, struct fw_pkt *pkt)
{
	if (fw_likely(fw_parse_fast(skb, pkt) == FW_PARSE_OK))
		return FW_PARSE_OK;
	return fw_parse_slow(skb, pkt);
}

#endif /* FW_BPF_PARSE_H */
