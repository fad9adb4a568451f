/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Test packet builders: a struct pkt_spec says what a frame looks like
 * (written with the UDP4()/TCP6()/... initializer macros plus designated
 * options), pkt_build() turns it into bytes. Checksums are left zero (the
 * verdicts never read them) unless .csum asks for real ones. */
#ifndef FW_TEST_PKT_H
#define FW_TEST_PKT_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>
#include <netinet/in.h>

#define PKT_MAX 512

#define PKT_MAC_DST "02:00:00:00:00:01"
#define PKT_MAC_SRC "02:00:00:00:00:02" /* the sender's MAC unless .eth_src says */

enum pkt_kind {
	PK_IP = 0, /* IPv4 or IPv6 by .family */
	PK_ARP,
	PK_ETHER, /* .ethertype and a zero payload */
};

/* IPv6 extension headers for .ext, in chain order (0 ends the list) */
enum pkt_ext {
	X_HBH = 1, /* hop-by-hop with a router alert */
	X_DEST,	   /* destination options, PadN */
	X_RT,	   /* routing header, no segments */
	X_FRAG,	   /* .ext_after_frag only: a second (atomic) fragment header */
};

#define PKT_MAX_EXT   12
#define PKT_MAX_ROUTE 12

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

#define ICMP4_ECHO	  8
#define ICMP6_ECHO	  128
#define ICMP6_MLD2_REPORT 143
#define ICMP6_RS	  133
#define ICMP6_RA	  134
#define ICMP6_NS	  135
#define ICMP6_NA	  136
#define ICMP6_REDIRECT	  137

struct pkt_frag {
	bool on;      /* IPv4 MF/offset fields in use, or an IPv6 fragment header */
	bool more;    /* MF / M */
	__u16 offset; /* in 8-byte units; > 0 means no L4 header follows */
	__u32 id;
};

struct pkt_spec {
	enum pkt_kind kind;
	int family; /* 4 or 6 for PK_IP */
	const char *src, *dst;
	__u8 proto;
	__u16 sport, dport;
	__u8 tcp_flags; /* 0 = SYN */
	__u8 icmp_type;
	__u8 hop_limit;	 /* TTL / hop limit; 0 = 64 */
	__u16 ethertype; /* PK_ETHER */
	__u16 vlan[2];	 /* TPIDs of stacked tags, outer first; 0 = none */
	/* IPv4 */
	__u8 ip_opt_words; /* options, in 4-byte words: IHL = 5 + n */
	__u8 ihl;	   /* overrides the IHL nibble */
	__u8 version;	   /* overrides the version nibble */
	/* IPv6 */
	__u8 ext[PKT_MAX_EXT];
	int ext_hdrlen; /* overrides the first extension header's length byte */
	bool zero_payload_len;
	/* both: a source route, the addresses it names after .dst (IPv4: a
	 * source-route option, loose unless .rt_type is 0x89; IPv6: the
	 * first X_RT header lists them, of type .rt_type) */
	const char *route[PKT_MAX_ROUTE];
	__u8 rt_type;
	int len_delta; /* added to the computed tot_len / payload_len */
	struct pkt_frag frag;
	/* L4 */
	__u8 doff;	 /* overrides the TCP data offset */
	size_t payload;	 /* L4 payload bytes */
	size_t truncate; /* cut the frame to this many bytes (after building) */
	/* neighbour claims */
	const char *arp_sender; /* ARP sender IPv4 address; NULL = 10.42.0.10 */
	const char *nd_target;	/* ICMPv6 ND target address; NULL = :: */
	/* link layer: the Ethernet source (NULL = PKT_MAC_SRC), an ARP
	 * sender hardware address (NULL = the Ethernet source), and an ND
	 * source/target link-layer address option (type 1 for RS/NS, 2 for
	 * NA; NULL = none) */
	const char *eth_src;
	const char *arp_sha;
	const char *nd_lladdr;
	/* real IPv4 header and TCP/UDP checksums (no extension headers or
	 * fragments), so a rewrite's incremental checksum update can be
	 * compared byte for byte with a frame built with the new fields */
	bool csum;
	/* fragment attacks */
	__u8 ext_after_frag[4]; /* IPv6 headers in the fragmentable part (first
				 * fragment only; later ones name the first in
				 * their fragment header) */
	bool l4_in_later;	/* a later fragment starts with the L4 header */
	__u16 trailer_port;	/* after the declared payload, bytes that look
				 * like a TCP/UDP header to this port */
};

#define TCP4(s, d, sp, dp, ...)                                                                    \
	{                                                                                          \
		.family = 4, .src = s, .dst = d, .proto = IPPROTO_TCP, .sport = sp, .dport = dp,   \
		__VA_ARGS__                                                                        \
	}
#define UDP4(s, d, sp, dp, ...)                                                                    \
	{                                                                                          \
		.family = 4, .src = s, .dst = d, .proto = IPPROTO_UDP, .sport = sp, .dport = dp,   \
		__VA_ARGS__                                                                        \
	}
#define ICMP4(s, d, type, ...)                                                                     \
	{                                                                                          \
		.family = 4, .src = s, .dst = d, .proto = IPPROTO_ICMP, .icmp_type = type,         \
		__VA_ARGS__                                                                        \
	}
#define TCP6(s, d, sp, dp, ...)                                                                    \
	{                                                                                          \
		.family = 6, .src = s, .dst = d, .proto = IPPROTO_TCP, .sport = sp, .dport = dp,   \
		__VA_ARGS__                                                                        \
	}
#define UDP6(s, d, sp, dp, ...)                                                                    \
	{                                                                                          \
		.family = 6, .src = s, .dst = d, .proto = IPPROTO_UDP, .sport = sp, .dport = dp,   \
		__VA_ARGS__                                                                        \
	}
#define ICMP6(s, d, type, ...)                                                                     \
	{                                                                                          \
		.family = 6, .src = s, .dst = d, .proto = IPPROTO_ICMPV6, .icmp_type = type,       \
		__VA_ARGS__                                                                        \
	}
#define ARP_REQ(...)                                                                               \
	{                                                                                          \
		.kind = PK_ARP, __VA_ARGS__                                                        \
	}
#define ETHER(type, ...)                                                                           \
	{                                                                                          \
		.kind = PK_ETHER, .ethertype = type, __VA_ARGS__                                   \
	}

/* Writes the frame into buf (PKT_MAX bytes); returns its length, or 0 when
 * an address in the spec does not parse. */
size_t pkt_build(const struct pkt_spec *s, __u8 *buf);
/* Prints bytes as hex, 16 per line, each line prefixed with indent. */
void pkt_hex(const char *indent, const __u8 *buf, size_t len);

#endif /* FW_TEST_PKT_H */
