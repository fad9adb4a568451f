/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The port guard's logic, shared by its XDP program and its TC fallback:
 * TCP and UDP to a guarded port pass only from a trusted source; later
 * fragments pass only after a first fragment the guard passed; everything
 * else passes untouched. fw_guard_decide() returns a reason of the table,
 * or FW_GUARD_UNTOUCHED for traffic the guard does not judge (not
 * counted). Headers are read through fw_guard_load(): direct packet
 * access for XDP, bpf_skb_load_bytes for TC (non-linear skbs). */
#ifndef FW_BPF_GUARD_H
#define FW_BPF_GUARD_H

#include "common.h"
#include "parse.h"
#include "config.h"
#include "counters.h"
#include "events.h"

#define FW_GUARD_UNTOUCHED (FW_REASON_MAX + 1)
#define FW_GUARD_MAX_EXT   8	  /* IPv6 extension headers walked */
#define FW_GUARD_MAX_OFF   4096	  /* a bound the verifier can follow: an XDP frame fits a page */
#define FW_GUARD_OFF_MASK  0x1fff /* covers FW_GUARD_MAX_OFF, for the verifier */

/* {proto, port} -> 1. Writer: fastwalld. Reader: the guard. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_GUARD_PORTS);
	__type(key, struct fw_port_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_guard_ports SEC(".maps");

/* trusted source prefix -> struct fw_guard_trust. Writer: fastwalld.
 * Reader: the guard. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FW_MAX_GUARD_TRUSTED);
	__type(key, struct fw_lpm_key);
	__type(value, struct fw_guard_trust);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_guard_trusted SEC(".maps");

/* {src, dst, id, proto} of a first fragment the guard passed -> expiry and
 * where its headers end. Writer and reader: the guard. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FW_MAX_FRAGS);
	__type(key, struct fw_frag_key);
	__type(value, struct fw_frag);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_guard_frags SEC(".maps");

/* ifindex -> struct fw_guard_hook. Writer: fastwalld. Reader: the CLI
 * (fastwall status); no program touches it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_GUARD_HOOKS);
	__type(key, __u32);
	__type(value, struct fw_guard_hook);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_guard_hooks SEC(".maps");

struct fw_guard_ctx {
	struct __sk_buff *skb; /* TC; NULL for XDP */
	bool xdp;	       /* a constant in each program: the other one's path is dead code */
	void *data, *data_end; /* XDP */
	__u32 len;	       /* bytes of the frame */
	__u32 ifindex;
};

struct fw_guard_pkt {
	struct fw_ip src, dst;
	__u32 frag_id;
	__be16 sport, dport;
	__u8 family, proto;
	__u8 frag_first, frag_later;
	__u8 has_ports;
	__u8 v4mapped;	    /* an IPv6 source in ::ffff:0:0/96: never trusted */
	__u16 frag_off;	    /* a later fragment's offset, in bytes */
	__u16 frag_hdr_end; /* a first fragment's headers, from the fragmentable part */
};

/* n is a constant at every call site, so the copy is inlined. XDP reads
 * the frame in place, in the form every verifier since 5.10 follows: the
 * offset is bounded in the very register the pointer is built from (older
 * verifiers keep a bound only on the register a branch compared, not on
 * its copies), and the pointer is opaque to the compiler, so the check
 * against the frame's end and the copy both use it, one constant n after
 * it. */
static __always_inline int fw_guard_load(const struct fw_guard_ctx *c, __u32 off, void *buf,
					 __u32 n)
{
	__u64 o = off;
	void *p;

	if (!c->xdp)
		return bpf_skb_load_bytes(c->skb, off, buf, n);
	if (off > FW_GUARD_MAX_OFF)
		return -1;
	asm volatile("%0 &= %1" : "+r"(o) : "i"(FW_GUARD_OFF_MASK));
	p = c->data + o;
	asm volatile("" : "+r"(p));
	if (p + n > c->data_end)
		return -1;
	__builtin_memcpy(buf, p, n);
	return 0;
}

/* Where the transport header starts and its IP payload ends, which the
 * IP parsers hand to fw_guard_l4 (one copy of it in each program). */
struct fw_guard_l3 {
	__u32 l4, end, frag_start;
};

/* The transport header at l->l4, inside the IP payload ending at l->end. */
static __always_inline __u32 fw_guard_l4(const struct fw_guard_ctx *c, struct fw_guard_pkt *pkt,
					 const struct fw_guard_l3 *l)
{
	__u32 off = l->l4, end = l->end, hlen = 8;
	__u8 buf[14];

	if (pkt->proto == FW_IPPROTO_TCP) {
		if (off + 20 > end || fw_guard_load(c, off, buf, 14))
			return FW_DROP_GUARD_MALFORMED;
		if ((buf[12] >> 4) < 5)
			return FW_DROP_GUARD_MALFORMED;
		hlen = (buf[12] >> 4) * 4;
	} else if (pkt->proto == FW_IPPROTO_UDP) {
		if (off + 8 > end || fw_guard_load(c, off, buf, 8))
			return FW_DROP_GUARD_MALFORMED;
	} else {
		hlen = 0;
	}
	/* a first fragment must hold the whole transport header: the ports
	 * of one that does not are unknowable (RFC 7112) */
	if (off + hlen > end)
		return FW_DROP_GUARD_MALFORMED;
	if (hlen) {
		__builtin_memcpy(&pkt->sport, &buf[0], 2);
		__builtin_memcpy(&pkt->dport, &buf[2], 2);
		pkt->has_ports = 1;
	}
	if (pkt->frag_first)
		pkt->frag_hdr_end = off + hlen - l->frag_start;
	return FW_PARSE_OK;
}

static __always_inline __u32 fw_guard_ipv4(const struct fw_guard_ctx *c, struct fw_guard_pkt *pkt,
					   __u32 off, struct fw_guard_l3 *l)
{
	struct fw_iphdr iph;
	struct fw_ipv4 v;

	/* the header and what follows, as a frame of its own (off is
	 * inside the frame: the load succeeded); BIG TCP: TC sees such a
	 * frame, and so does generic XDP, which runs on the skb; native
	 * XDP gets a page at most */
	if (fw_guard_load(c, off, &iph, sizeof(iph)) ||
	    !fw_ipv4_decode(&iph, 0, c->len - off, true, &v))
		return FW_DROP_GUARD_MALFORMED;
	pkt->family = FW_FAM_V4;
	pkt->proto = iph.protocol;
	fw_ip_from_v4(&pkt->src, iph.saddr);
	fw_ip_from_v4(&pkt->dst, iph.daddr);
	pkt->frag_first = v.frag_first;
	pkt->frag_later = v.frag_later;
	pkt->frag_off = v.frag_off;
	pkt->frag_id = v.id;
	l->l4 = off + v.ihl;
	l->end = off + v.tot_len;
	l->frag_start = off + v.ihl;
	return FW_PARSE_OK;
}

static __always_inline bool fw_guard_ext(__u8 nexthdr)
{
	return nexthdr == FW_NEXTHDR_HOP || nexthdr == FW_NEXTHDR_ROUTING ||
	       nexthdr == FW_NEXTHDR_DEST || nexthdr == FW_NEXTHDR_AUTH ||
	       nexthdr == FW_NEXTHDR_FRAGMENT;
}

/* The extension headers are walked in constant steps of one 8-byte read
 * each (every one of them is at least 8 bytes long), unrolled over a
 * small fixed count. */
static __always_inline __u32 fw_guard_ipv6(const struct fw_guard_ctx *c, struct fw_guard_pkt *pkt,
					   __u32 off, struct fw_guard_l3 *l)
{
	struct fw_ipv6hdr ip6;
	__u32 end, frag_start = 0;
	__u8 nexthdr, frags = 0;

	if (fw_guard_load(c, off, &ip6, sizeof(ip6)))
		return FW_DROP_GUARD_MALFORMED;
	end = off + sizeof(ip6) + bpf_ntohs(ip6.payload_len);
	if (!ip6.payload_len && c->len > off + sizeof(ip6) + 0xffff)
		end = c->len; /* BIG TCP, as for IPv4 */
	/* else payload length 0 (a jumbogram) says nothing the guard can check */
	if ((bpf_ntohl(ip6.ver_tc_flow) >> 28) != 6 || end > c->len ||
	    (end == off + sizeof(ip6) && ip6.nexthdr != FW_NEXTHDR_NONE))
		return FW_DROP_GUARD_MALFORMED;
	pkt->family = FW_FAM_V6;
	pkt->src = ip6.saddr;
	pkt->dst = ip6.daddr;
	pkt->v4mapped = !FW_IP_W(&pkt->src)[0] && !FW_IP_W(&pkt->src)[1] &&
			FW_IP_W(&pkt->src)[2] == bpf_htonl(0xffff);
	nexthdr = ip6.nexthdr;
	off += sizeof(ip6);

#pragma unroll
	for (int i = 0; i < FW_GUARD_MAX_EXT; i++) {
		__u8 ext[8];

		pkt->proto = nexthdr;
		if (!fw_guard_ext(nexthdr)) {
			l->l4 = off;
			l->end = end;
			l->frag_start = frag_start;
			return FW_PARSE_OK;
		}
		if ((nexthdr == FW_NEXTHDR_FRAGMENT && frags++) || off + 8 > end ||
		    fw_guard_load(c, off, ext, 8))
			return FW_DROP_GUARD_MALFORMED;
		if (nexthdr == FW_NEXTHDR_FRAGMENT) {
			__u16 frag = ((__u16)ext[2] << 8) | ext[3];

			/* offset 0 with M clear is an atomic fragment: one packet */
			if (frag & 0xfff8)
				pkt->frag_later = 1;
			else if (frag & 1)
				pkt->frag_first = 1;
			pkt->frag_off = frag & 0xfff8;
			pkt->frag_id = ((__u32)ext[4] << 24) | ((__u32)ext[5] << 16) |
				       ((__u32)ext[6] << 8) | ext[7];
			off += 8;
			frag_start = off;
			if (pkt->frag_later) {
				pkt->proto = ext[0];
				return FW_PARSE_OK;
			}
		} else if (nexthdr == FW_NEXTHDR_AUTH) {
			off += (ext[1] + 2) * 4;
		} else {
			off += (ext[1] + 1) * 8;
		}
		nexthdr = ext[0];
		if (off > end)
			return FW_DROP_GUARD_MALFORMED;
	}
	/* more headers than the guard walks may hide a TCP header behind them */
	return FW_DROP_GUARD_MALFORMED;
}

static __always_inline void fw_guard_frag_key(struct fw_frag_key *k, const struct fw_guard_pkt *pkt)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->src = pkt->src;
	k->dst = pkt->dst;
	k->id = pkt->frag_id;
	k->proto = pkt->proto;
}

/* A later fragment carries no ports: it follows a first fragment the guard
 * passed (which it recorded), and must not reach back into that
 * fragment's headers, where it could rewrite the ports. A later fragment
 * that arrives before its first drops too: fail closed. */
static __always_inline __u32 fw_guard_later(const struct fw_guard_pkt *pkt, __u64 now)
{
	struct fw_frag_key k;
	struct fw_frag *f;

	fw_guard_frag_key(&k, pkt);
	f = bpf_map_lookup_elem(&fastwall_guard_frags, &k);
	if (!f || f->expires_ns < now || pkt->frag_off < f->hdr_end)
		return FW_DROP_GUARD_FRAGMENT;
	return FW_GUARD_UNTOUCHED;
}

static __always_inline void fw_guard_first(const struct fw_guard_pkt *pkt, __u64 now)
{
	struct fw_config *cfg = fw_config();
	struct fw_frag_key k;
	struct fw_frag f = {};

	fw_guard_frag_key(&k, pkt);
	f.expires_ns =
		now + (cfg && cfg->frag_timeout_ns ? cfg->frag_timeout_ns : 5 * FW_NSEC_PER_SEC);
	f.hdr_end = pkt->frag_hdr_end;
	bpf_map_update_elem(&fastwall_guard_frags, &k, &f, BPF_ANY);
}

static __always_inline __u32 fw_guard_decide(const struct fw_guard_ctx *c, struct fw_guard_pkt *pkt)
{
	struct fw_lpm_key src = {.prefixlen = 128};
	struct fw_port_key pk = {};
	struct fw_guard_l3 l = {};
	__u32 off = ETH_HLEN, r;
	__be16 proto;
	__u8 tag[4];

	if (fw_guard_load(c, 12, &proto, 2))
		return FW_GUARD_UNTOUCHED; /* a runt: no IP for anyone */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		/* a tag the driver took out plus one inline is two: a port the
		 * guard cannot see through */
		if (c->skb && c->skb->vlan_present)
			return FW_DROP_GUARD_MALFORMED;
		if (fw_guard_load(c, off, tag, 4))
			return FW_DROP_GUARD_MALFORMED;
		__builtin_memcpy(&proto, &tag[2], 2);
		off += 4;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
			return FW_DROP_GUARD_MALFORMED;
	}
	if (proto == bpf_htons(ETH_P_IP))
		r = fw_guard_ipv4(c, pkt, off, &l);
	else if (proto == bpf_htons(ETH_P_IPV6))
		r = fw_guard_ipv6(c, pkt, off, &l);
	else
		return FW_GUARD_UNTOUCHED;
	if (r != FW_PARSE_OK)
		return r;
	if (pkt->frag_later)
		return fw_guard_later(pkt, bpf_ktime_get_ns());
	r = fw_guard_l4(c, pkt, &l);
	if (r != FW_PARSE_OK)
		return r;
	r = FW_GUARD_UNTOUCHED;
	if (pkt->has_ports) {
		pk.proto = pkt->proto;
		pk.port = pkt->dport;
		if (bpf_map_lookup_elem(&fastwall_guard_ports, &pk)) {
			src.addr = pkt->src;
			/* an IPv6 source in ::ffff:0:0/96 would match the IPv4
			 * prefixes, which the maps keep in that form */
			r = !pkt->v4mapped && bpf_map_lookup_elem(&fastwall_guard_trusted, &src)
				    ? FW_PASS_GUARD_TRUSTED
				    : FW_DROP_GUARD_UNTRUSTED;
		}
	}
	/* untouched is no reason of the table, and would read as a drop */
	if (pkt->frag_first && (r == FW_GUARD_UNTOUCHED || !FW_REASON_DROPS(r)))
		fw_guard_first(pkt, bpf_ktime_get_ns());
	return r;
}

/* Counts a judged packet and reports a drop (the event budget of subject
 * 0, which the TC programs use for sources no subject owns). Returns
 * whether it drops. */
static __always_inline bool fw_guard_account(const struct fw_guard_ctx *c,
					     const struct fw_guard_pkt *pkt, __u32 reason)
{
	if (reason == FW_GUARD_UNTOUCHED)
		return false;
	/* subject 0: the guard judges no subject's traffic */
	fw_count(&reason, FW_DROP_GUARD_MALFORMED, 0, c->len, FW_COUNT_GLOBAL);
	if (!FW_REASON_DROPS(reason))
		return false;
	fw_event_drop(0, reason, c->ifindex, &pkt->src, &pkt->dst, pkt->sport, pkt->dport,
		      pkt->proto, pkt->family);
	return true;
}

#endif /* FW_BPF_GUARD_H */
