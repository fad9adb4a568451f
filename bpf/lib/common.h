/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Constants and small helpers every fastwall BPF program uses: protocol
 * numbers vmlinux.h lacks, TC return codes, and fw_ip operations. */
#ifndef FW_BPF_COMMON_H
#define FW_BPF_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "fastwall/abi.h"

/* the branch a packet rarely takes: the compiler moves its code off the
 * path of the common packet, so that path stays in few cache lines */
#define fw_likely(x)   __builtin_expect(!!(x), 1)
#define fw_unlikely(x) __builtin_expect(!!(x), 0)

#define TC_ACT_OK   0
#define TC_ACT_SHOT 2

#define ETH_HLEN     14
#define ETH_P_IP     0x0800
#define ETH_P_ARP    0x0806
#define ETH_P_IPV6   0x86DD
#define ETH_P_8021Q  0x8100
#define ETH_P_8021AD 0x88A8

#define FW_IPPROTO_ICMP	    1
#define FW_IPPROTO_TCP	    6
#define FW_IPPROTO_UDP	    17
#define FW_IPPROTO_ICMPV6   58
#define FW_NEXTHDR_HOP	    0
#define FW_NEXTHDR_ROUTING  43
#define FW_NEXTHDR_FRAGMENT 44
#define FW_NEXTHDR_AUTH	    51
#define FW_NEXTHDR_NONE	    59
#define FW_NEXTHDR_DEST	    60

#define FW_TCP_FIN 0x01
#define FW_TCP_SYN 0x02
#define FW_TCP_RST 0x04
#define FW_TCP_ACK 0x10

static __always_inline bool fw_ip_eq(const struct fw_ip *a, const struct fw_ip *b)
{
	return FW_IP_W(a)[0] == FW_IP_W(b)[0] && FW_IP_W(a)[1] == FW_IP_W(b)[1] &&
	       FW_IP_W(a)[2] == FW_IP_W(b)[2] && FW_IP_W(a)[3] == FW_IP_W(b)[3];
}

static __always_inline bool fw_ip_is_zero(const struct fw_ip *a)
{
	return (FW_IP_W(a)[0] | FW_IP_W(a)[1] | FW_IP_W(a)[2] | FW_IP_W(a)[3]) == 0;
}

/* plen counts bits of the 128-bit form (IPv4 /n is 96 + n). */
static __always_inline bool fw_ip_in_prefix(const struct fw_ip *a, const struct fw_ip *net,
					    __u32 plen)
{
	if (plen > 128)
		return false;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 bits = plen > 32 ? 32 : plen;
		__u32 mask = bits ? bpf_htonl(~0u << (32 - bits)) : 0;

		if ((FW_IP_W(a)[i] & mask) != (FW_IP_W(net)[i] & mask))
			return false;
		plen -= bits;
	}
	return true;
}

#endif /* FW_BPF_COMMON_H */
