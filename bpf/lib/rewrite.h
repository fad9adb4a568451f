/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Rewriting a packet's address or port in place with its checksums: what
 * the redirects to fastwalld's proxies (dns.h, l7.h) and their way back
 * share. fw_rewrite_*() return 0, or non-zero when a helper refused (the
 * packet may be half rewritten then: the caller drops it). */
#ifndef FW_BPF_REWRITE_H
#define FW_BPF_REWRITE_H

#include "common.h"
#include "parse.h"

#define FW_IP4_CSUM_OFF 10
#define FW_IP4_SRC_OFF	12
#define FW_IP4_DST_OFF	16
#define FW_IP6_SRC_OFF	8
#define FW_IP6_DST_OFF	24
#define FW_TCP_CSUM_OFF 16
#define FW_UDP_CSUM_OFF 6

static __always_inline __u32 fw_l4_csum_off(const struct fw_pkt *pkt)
{
	return pkt->l4_off + (pkt->proto == FW_IPPROTO_TCP ? FW_TCP_CSUM_OFF : FW_UDP_CSUM_OFF);
}

static __always_inline __u64 fw_l4_csum_flags(const struct fw_pkt *pkt)
{
	/* an IPv4 UDP checksum of 0 means "none" and must stay 0 */
	return pkt->proto == FW_IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
}

/* Rewrites the port at off (source or destination) with the checksum. */
static __always_inline int fw_rewrite_port(struct __sk_buff *skb, const struct fw_pkt *pkt,
					   __u32 off, __be16 from, __be16 to)
{
	if (from == to)
		return 0;
	if (bpf_l4_csum_replace(skb, fw_l4_csum_off(pkt), from, to,
				fw_l4_csum_flags(pkt) | sizeof(to)))
		return -1;
	return bpf_skb_store_bytes(skb, off, &to, sizeof(to), 0);
}

/* Rewrites the source (src) or destination address with the IPv4 header
 * and pseudo-header checksums; IPv6 has only the latter. */
static __always_inline int fw_rewrite_addr(struct __sk_buff *skb, const struct fw_pkt *pkt,
					   bool src, const struct fw_ip *from,
					   const struct fw_ip *to)
{
	__u32 off = pkt->l3_off;

	if (fw_ip_eq(from, to))
		return 0;
	if (pkt->family == FW_FAM_V4) {
		off += src ? FW_IP4_SRC_OFF : FW_IP4_DST_OFF;
		if (bpf_l4_csum_replace(skb, fw_l4_csum_off(pkt), FW_IP_W(from)[3], FW_IP_W(to)[3],
					fw_l4_csum_flags(pkt) | BPF_F_PSEUDO_HDR | 4))
			return -1;
		if (bpf_l3_csum_replace(skb, pkt->l3_off + FW_IP4_CSUM_OFF, FW_IP_W(from)[3],
					FW_IP_W(to)[3], 4))
			return -1;
		return bpf_skb_store_bytes(skb, off, &FW_IP_W(to)[3], 4, 0);
	}
	off += src ? FW_IP6_SRC_OFF : FW_IP6_DST_OFF;
	{
		__s64 diff = bpf_csum_diff(FW_IP_W(from), 16, FW_IP_W(to), 16, 0);

		if (diff < 0)
			return -1;
		if (bpf_l4_csum_replace(skb, fw_l4_csum_off(pkt), 0, (__u32)diff,
					fw_l4_csum_flags(pkt) | BPF_F_PSEUDO_HDR))
			return -1;
	}
	return bpf_skb_store_bytes(skb, off, to->b, 16, 0);
}

#endif /* FW_BPF_REWRITE_H */
