/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* DNS wire format (RFC 1035, EDNS0 RFC 6891) for the per-subject DNS proxy:
 * parse a query and an upstream answer, build NXDOMAIN/SERVFAIL, add EDNS0,
 * cap TTLs. No allocation; functions return 0 or a negative errno. */
#ifndef FW_DNS_H
#define FW_DNS_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"

#define FW_DNS_HDR_LEN	12
#define FW_DNS_NAME_MAX 253 /* text, no trailing dot (255 on the wire) */
#define FW_DNS_NAME_BUF (FW_DNS_NAME_MAX + 1)
#define FW_DNS_EDNS_UDP 4096 /* payload size advertised upstream */
#define FW_DNS_OPT_LEN	11   /* root owner, type, class, ttl, rdlength */

#ifndef FW_DNS_MAX_ADDRS
#define FW_DNS_MAX_ADDRS 64 /* learned addresses kept from one answer */
#endif
#ifndef FW_DNS_MAX_CHAIN
#define FW_DNS_MAX_CHAIN 16 /* CNAMEs followed from the question name */
#endif

/* header flags, host order */
#define FW_DNS_F_QR	0x8000
#define FW_DNS_F_OPCODE 0x7800
#define FW_DNS_F_AA	0x0400
#define FW_DNS_F_TC	0x0200
#define FW_DNS_F_RD	0x0100
#define FW_DNS_F_RA	0x0080
#define FW_DNS_F_CD	0x0010
#define FW_DNS_F_RCODE	0x000f

enum fw_dns_rcode {
	FW_DNS_RCODE_NOERROR = 0,
	FW_DNS_RCODE_FORMERR = 1,
	FW_DNS_RCODE_SERVFAIL = 2,
	FW_DNS_RCODE_NXDOMAIN = 3,
	FW_DNS_RCODE_NOTIMP = 4,
	FW_DNS_RCODE_REFUSED = 5, /* never sent by fastwall; seen from upstreams */
};

enum fw_dns_type {
	FW_DNS_TYPE_A = 1,
	FW_DNS_TYPE_NS = 2,
	FW_DNS_TYPE_CNAME = 5,
	FW_DNS_TYPE_AAAA = 28,
	FW_DNS_TYPE_OPT = 41,
};

#define FW_DNS_CLASS_IN 1

/* The first question of a query: the policy decides on it alone. */
struct fw_dns_query {
	__u16 id;
	__u16 flags;   /* host order, FW_DNS_F_* */
	__u16 qdcount; /* as sent; only the first question is decoded */
	__u16 qtype;
	__u16 qclass;
	size_t question_end; /* offset just past the first question */
	bool has_edns;	     /* an OPT RR is in the additional section */
	__u16 edns_udp_size; /* its advertised payload size, if present */
	size_t name_len;
	char name[FW_DNS_NAME_BUF]; /* lowercase, no trailing dot, "" = root */
};

struct fw_dns_addr {
	struct fw_ip ip; /* IPv4 v4-mapped */
	__u32 ttl;	 /* as received; see fw_dns_lease_seconds */
};

/* What an upstream answer teaches about the question name. */
struct fw_dns_answer {
	__u16 id;
	__u8 rcode;
	bool truncated; /* TC: the client will retry over TCP */
	bool chain_cut; /* CNAME chain looped or exceeded FW_DNS_MAX_CHAIN */
	__u32 naddrs;
	__u32 ndropped; /* A/AAAA for the chain beyond FW_DNS_MAX_ADDRS */
	struct fw_dns_addr addrs[FW_DNS_MAX_ADDRS];
	__u32 ncnames; /* CNAME targets, in chain order after the qname */
	char cnames[FW_DNS_MAX_CHAIN][FW_DNS_NAME_BUF];
};

/* Parses header and first question of a query (QR=0). -EOPNOTSUPP for an
 * opcode other than QUERY, -EINVAL for anything malformed, including names
 * whose labels hold bytes that have no unambiguous text form ('.', space,
 * control, non-ASCII): the policy matches text. */
int fw_dns_parse_query(const __u8 *msg, size_t len, struct fw_dns_query *q);

/* Builds an error response (rcode FW_DNS_RCODE_*) to query: same id, QR,
 * RD and CD copied, RA, the first question echoed verbatim, no records.
 * -ENOSPC when outcap is too small. */
int fw_dns_build_error(const __u8 *query, size_t qlen, const struct fw_dns_query *q, int rcode,
		       __u8 *out, size_t outcap, size_t *outlen);

/* Appends an OPT RR advertising udp_size (>= 512) when the message has none
 * and bumps ARCOUNT; *newlen is the new length (unchanged when an OPT RR was
 * already there). Bytes after the last RR are dropped. -ENOSPC when cap is
 * too small, -EINVAL when the message is malformed. */
int fw_dns_add_edns0(__u8 *msg, size_t len, size_t cap, size_t *newlen, __u16 udp_size);

/* Removes the OPT RR of a well-formed message when it is the last RR
 * (where fw_dns_add_edns0 puts it) and lowers ARCOUNT; bytes after the last
 * RR are dropped. *newlen is len when there is no OPT RR. -EOPNOTSUPP when
 * the OPT RR is not last: later compression pointers may aim past it, so
 * it is left in place. -EINVAL when the message is malformed. */
int fw_dns_strip_opt(__u8 *msg, size_t len, size_t *newlen);

/* Cuts a response (QR=1) down to its header and first question with TC
 * set and no records, so a UDP client retries over TCP. -EINVAL when the
 * header or the first question is malformed or missing. */
int fw_dns_truncate(__u8 *msg, size_t len, size_t *newlen);

/* Builds an error response to a message fw_dns_parse_query rejected (a bad
 * opcode: NOTIMP; malformed: FORMERR): id, opcode, RD and CD echoed, and
 * the first question verbatim when it is well formed on the wire, else no
 * question. -EINVAL when there is no header or QR is set (never answer an
 * answer), -ENOSPC when outcap is too small. */
int fw_dns_build_reject(const __u8 *msg, size_t len, int rcode, __u8 *out, size_t outcap,
			size_t *outlen);

/* Parses a response (QR=1) to q: id and question must match, QDCOUNT 1 and
 * name (case-insensitively), type and class those of q (-EPROTO if not).
 * Collects every A/AAAA (class IN) in the answer section owned by the
 * question name or a name of its CNAME chain, followed in any order. The
 * whole message must be well formed (-EINVAL). */
int fw_dns_parse_answer(const __u8 *msg, size_t len, const struct fw_dns_query *q,
			struct fw_dns_answer *a);

/* Lowers in place every TTL above max_ttl in the answer, authority and
 * additional sections; OPT RRs are left alone (their TTL field is flags).
 * Validates first: on -EINVAL nothing was written. A hostile compression
 * pointer may aim into TTL bytes, so cap first and parse the message that
 * is forwarded: what is learned is then exactly what the client reads. */
int fw_dns_cap_ttls(__u8 *msg, size_t len, __u32 max_ttl);

/* Lease for a learned address: clamp(ttl + add, min, max) without
 * overflow; max wins if min > max, so a lease never exceeds the cap. */
__u32 fw_dns_lease_seconds(__u32 ttl, __u32 add, __u32 min, __u32 max);

#endif /* FW_DNS_H */
