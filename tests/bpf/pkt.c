// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test packet builders. See pkt.h. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "pkt.h"

#define ETH_P_IP_   0x0800
#define ETH_P_ARP_  0x0806
#define ETH_P_IPV6_ 0x86dd

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(__u8 *p, __u32 v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static void mac(const char *text, __u8 *out)
{
	unsigned int b[6];

	if (sscanf(text, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		abort();
	for (int i = 0; i < 6; i++)
		out[i] = (__u8)b[i];
}

static bool addr(int family, const char *text, __u8 *out)
{
	return text && inet_pton(family == 4 ? AF_INET : AF_INET6, text, out) == 1;
}

static __u8 ext_nexthdr(__u8 x)
{
	switch (x) {
	case X_HBH:
		return 0;
	case X_DEST:
		return 60;
	case X_RT:
		return 43;
	case X_FRAG:
		return 44;
	}
	return 59;
}

/* Writes the L4 header (or, for a non-first fragment, bare payload). */
static size_t put_l4(const struct pkt_spec *s, __u8 *p)
{
	size_t n = 0;

	if (s->frag.on && s->frag.offset && !s->l4_in_later) {
		memset(p, 0xab, 16 + s->payload);
		return 16 + s->payload;
	}
	switch (s->proto) {
	case IPPROTO_TCP:
		memset(p, 0, 20);
		put16(p, s->sport);
		put16(p + 2, s->dport);
		put32(p + 4, 1000);
		p[12] = (s->doff ? s->doff : 5) << 4;
		p[13] = s->tcp_flags ? s->tcp_flags : TH_SYN;
		put16(p + 14, 65535);
		n = 20;
		break;
	case IPPROTO_UDP:
		memset(p, 0, 8);
		put16(p, s->sport);
		put16(p + 2, s->dport);
		put16(p + 4, 8 + s->payload);
		n = 8;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		/* type, code, checksum, 4 bytes of rest, and room for an ND
		 * target or an MLD record */
		memset(p, 0, 24);
		p[0] = s->icmp_type;
		if (s->nd_target && inet_pton(AF_INET6, s->nd_target, p + 8) != 1)
			abort();
		/* a router solicitation has no target: options follow at 8 */
		n = s->proto == IPPROTO_ICMPV6 && s->icmp_type == ICMP6_RS ? 8 : 24;
		if (s->nd_lladdr) {
			p[n] = s->icmp_type == ICMP6_NA ? 2 : 1;
			p[n + 1] = 1;
			mac(s->nd_lladdr, p + n + 2);
			n += 8;
		}
		break;
	}
	memset(p + n, 0x5a, s->payload);
	return n + s->payload;
}

/* A fragmentable-part extension header (.ext_after_frag). */
static void put_ext_after_frag(__u8 *h, __u8 type)
{
	memset(h, 0, 8);
	if (type == X_DEST) {
		h[2] = 1;
		h[3] = 4;
	}
}

static __u32 sum16(const __u8 *p, size_t n, __u32 acc)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		acc += (__u32)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		acc += (__u32)p[n - 1] << 8;
	return acc;
}

static __u16 fold(__u32 acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (__u16)~acc;
}

/* IPv4 header checksum and the TCP/UDP checksum over the pseudo-header */
static void put_csums(const struct pkt_spec *s, __u8 *buf, size_t l3, size_t len)
{
	__u8 *ip = buf + l3;
	size_t hlen = s->family == 4 ? (size_t)(ip[0] & 0xf) * 4 : 40;
	__u8 *l4 = ip + hlen;
	size_t l4len = len - l3 - hlen;
	__u32 acc = 0;
	__u16 c;

	if (s->family == 4) {
		put16(ip + 10, 0);
		put16(ip + 10, fold(sum16(ip, hlen, 0)));
		acc = sum16(ip + 12, 8, 0);
	} else {
		acc = sum16(ip + 8, 32, 0);
	}
	if (s->proto != IPPROTO_TCP && s->proto != IPPROTO_UDP)
		return;
	acc += s->proto + (__u32)l4len;
	put16(l4 + (s->proto == IPPROTO_TCP ? 16 : 6), 0);
	c = fold(sum16(l4, l4len, acc));
	if (s->proto == IPPROTO_UDP && c == 0)
		c = 0xffff;
	put16(l4 + (s->proto == IPPROTO_TCP ? 16 : 6), c);
}

size_t pkt_build(const struct pkt_spec *s, __u8 *buf)
{
	__u8 macs[12];
	size_t off = 0, l3 = 0, len;
	__u8 *len_field = NULL;
	__u8 *ip;

	mac(PKT_MAC_DST, macs);
	mac(s->eth_src ? s->eth_src : PKT_MAC_SRC, macs + 6);
	memset(buf, 0, PKT_MAX);
	memcpy(buf, macs, sizeof(macs));
	off = 12;
	for (int i = 0; i < 2 && s->vlan[i]; i++) {
		put16(buf + off, s->vlan[i]);
		put16(buf + off + 2, 100 + i);
		off += 4;
	}

	switch (s->kind) {
	case PK_ARP:
		put16(buf + off, ETH_P_ARP_);
		off += 2;
		/* request: Ethernet/IPv4, who has 10.42.0.1 tell 10.42.0.10 */
		put16(buf + off, 1);
		put16(buf + off + 2, ETH_P_IP_);
		buf[off + 4] = 6;
		buf[off + 5] = 4;
		put16(buf + off + 6, 1);
		memcpy(buf + off + 8, macs + 6, 6);
		if (s->arp_sha)
			mac(s->arp_sha, buf + off + 8);
		put32(buf + off + 14, 0x0a2a000a);
		if (s->arp_sender && inet_pton(AF_INET, s->arp_sender, buf + off + 14) != 1)
			abort();
		put32(buf + off + 24, 0x0a2a0001);
		len = off + 28;
		goto out;
	case PK_ETHER:
		put16(buf + off, s->ethertype);
		len = off + 2 + 46;
		goto out;
	case PK_IP:
		break;
	}

	put16(buf + off, s->family == 4 ? ETH_P_IP_ : ETH_P_IPV6_);
	off += 2;
	l3 = off;
	ip = buf + l3;

	if (s->family == 4) {
		size_t hlen = 20 + 4 * s->ip_opt_words, nroute = 0;
		__u16 frag = 0;

		while (nroute < PKT_MAX_ROUTE && s->route[nroute])
			nroute++;
		if (nroute)
			hlen = 20 + (3 + 4 * nroute + 3) / 4 * 4;

		ip[0] = (s->version ? s->version : 4) << 4 | (s->ihl ? s->ihl : hlen / 4);
		len_field = ip + 2;
		put16(ip + 4, s->frag.on ? s->frag.id : 1);
		if (s->frag.on)
			frag = (s->frag.more ? 0x2000 : 0) | (s->frag.offset & 0x1fff);
		put16(ip + 6, frag);
		ip[8] = s->hop_limit ? s->hop_limit : 64;
		ip[9] = s->proto;
		if (!addr(4, s->src, ip + 12) || !addr(4, s->dst, ip + 16))
			return 0;
		/* options: NOPs ending in an end-of-list, or a source route
		 * padded with end-of-list */
		memset(ip + 20, nroute ? 0 : 1, hlen - 20);
		if (hlen > 20)
			ip[hlen - 1] = 0;
		if (nroute) {
			ip[20] = s->rt_type ? s->rt_type : 0x83;
			ip[21] = (__u8)(3 + 4 * nroute);
			ip[22] = 4;
			for (size_t k = 0; k < nroute; k++)
				if (!addr(4, s->route[k], ip + 23 + 4 * k))
					return 0;
		}
		off += hlen;
		off += put_l4(s, buf + off);
	} else {
		__u8 *next = ip + 6;
		bool routed = false;

		put32(ip, 0x60000000);
		len_field = ip + 4;
		ip[7] = s->hop_limit ? s->hop_limit : 64;
		if (!addr(6, s->src, ip + 8) || !addr(6, s->dst, ip + 24))
			return 0;
		off += 40;
		for (int i = 0; i < PKT_MAX_EXT && s->ext[i]; i++) {
			__u8 *h = buf + off;

			*next = ext_nexthdr(s->ext[i]);
			next = h;
			memset(h, 0, 8);
			if (s->ext[i] == X_HBH) {
				h[2] = 5; /* router alert */
				h[3] = 2;
				h[6] = 1; /* PadN */
			} else if (s->ext[i] == X_DEST) {
				h[2] = 1;
				h[3] = 4;
			}
			if (i == 0 && s->ext_hdrlen)
				h[1] = s->ext_hdrlen;
			off += 8;
			if (s->ext[i] == X_RT && s->route[0] && !routed) {
				size_t n = 0;

				while (n < PKT_MAX_ROUTE && s->route[n]) {
					if (!addr(6, s->route[n], h + 8 + 16 * n))
						return 0;
					n++;
				}
				h[1] = (__u8)(2 * n);
				h[2] = s->rt_type;
				h[3] = (__u8)n;
				if (s->rt_type == 4)
					h[4] = (__u8)(n - 1);
				off += 16 * n;
				routed = true;
			}
		}
		if (s->frag.on) {
			__u8 *h = buf + off;

			*next = 44;
			next = h;
			memset(h, 0, 8);
			put16(h + 2, (s->frag.offset << 3) | (s->frag.more ? 1 : 0));
			put32(h + 4, s->frag.id);
			off += 8;
			for (int i = 0; i < 4 && s->ext_after_frag[i]; i++) {
				*next = ext_nexthdr(s->ext_after_frag[i]);
				if (s->frag.offset)
					break;
				next = buf + off;
				put_ext_after_frag(next, s->ext_after_frag[i]);
				off += 8;
			}
			if (s->frag.offset && s->ext_after_frag[0])
				goto l4;
		}
		*next = s->proto;
	l4:
		off += put_l4(s, buf + off);
	}
	len = off;

out:
	if (s->truncate && s->truncate < len)
		len = s->truncate;
	/* lengths describe the frame as sent, unless the row lies on purpose */
	if (len_field && len_field + 2 <= buf + len) {
		long l = (long)(len - l3) - (s->family == 6 ? 40 : 0) + s->len_delta;

		put16(len_field, s->zero_payload_len ? 0 : (__u16)l);
	}
	if (s->csum && s->kind == PK_IP && !s->ext[0] && !s->frag.on)
		put_csums(s, buf, l3, len);
	if (s->trailer_port && len + 20 <= PKT_MAX) {
		memset(buf + len, 0, 20);
		put16(buf + len, 40000);
		put16(buf + len + 2, s->trailer_port);
		put16(buf + len + 4, 8);
		buf[len + 12] = 5 << 4;
		buf[len + 13] = TH_SYN;
		len += 20;
	}
	return len;
}

void pkt_hex(const char *indent, const __u8 *buf, size_t len)
{
	for (size_t i = 0; i < len; i += 16) {
		printf("%s%04zx ", indent, i);
		for (size_t j = i; j < i + 16 && j < len; j++)
			printf(" %02x", buf[j]);
		printf("\n");
	}
}
