// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* DNS messages from clients and upstreams are untrusted: every count, length
 * and compression pointer is checked against the buffer before use, and
 * every loop is bounded by the message length or a fixed limit. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/addr.h"
#include "dns/wire.h"

#define DNS_NAME_WIRE_MAX 255 /* RFC 1035 3.1, length octets included */
#define DNS_LABEL_MAX	  63
#define DNS_PTR_HOPS_MAX  127 /* a 255-byte name has at most 127 labels */
#define DNS_RR_FIXED	  10  /* type, class, ttl, rdlength */

struct dns_hdr {
	__u16 id;
	__u16 flags;
	__u16 qdcount;
	__u16 ancount;
	__u16 nscount;
	__u16 arcount;
};

struct dns_rr {
	size_t owner; /* offset of the owner name */
	size_t fixed; /* offset of type; ttl is at fixed + 4 */
	size_t rdata;
	__u16 type;
	__u16 class;
	__u32 ttl;
	__u16 rdlength;
};

static __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static __u32 get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static int dns_hdr_parse(const __u8 *msg, size_t len, struct dns_hdr *h)
{
	if (!msg || len < FW_DNS_HDR_LEN)
		return -EINVAL;
	h->id = get16(msg);
	h->flags = get16(msg + 2);
	h->qdcount = get16(msg + 4);
	h->ancount = get16(msg + 6);
	h->nscount = get16(msg + 8);
	h->arcount = get16(msg + 10);
	return 0;
}

/* Bytes that keep the text form one-to-one with the wire name: a '.' inside
 * a label would let "x\.allowed.com" (a child of com) pass as a name under
 * allowed.com, and NUL would cut the string short. */
static bool dns_label_byte_ok(__u8 c)
{
	return c > 0x20 && c < 0x7f && c != '.';
}

/* Decodes the name at *off. Pointers must point strictly before the start
 * of the run of labels they end, and the run they reach must end before
 * that start too: every hop moves backwards, loops are impossible, and a
 * name depends on no byte after its own, so appending or overwriting later
 * bytes cannot change it. The hop limit and the 255-byte wire limit bound
 * it anyway.
 * *off ends just past the name where it sits (after its first pointer).
 * With out (FW_DNS_NAME_BUF bytes) the text is stored lowercased; a label
 * byte with no text form gives -EILSEQ once the whole name has been
 * validated, so callers may still skip over it. */
static int dns_name(const __u8 *msg, size_t len, size_t *off, char *out, size_t *textlen)
{
	size_t pos = *off, lim = len, end = 0, wire = 0, text = 0;
	size_t run = pos; /* where the current run of labels started */
	unsigned int hops = 0;
	bool bad = false;

	for (;;) {
		__u8 l;

		if (pos >= lim)
			return -EINVAL;
		l = msg[pos];
		if ((l & 0xc0) == 0xc0) {
			size_t target;

			if (lim - pos < 2)
				return -EINVAL;
			target = (size_t)(l & 0x3f) << 8 | msg[pos + 1];
			/* only backwards, never into the header */
			if (target >= run || target < FW_DNS_HDR_LEN || ++hops > DNS_PTR_HOPS_MAX)
				return -EINVAL;
			if (!end)
				end = pos + 2;
			lim = run;
			pos = run = target;
			continue;
		}
		if (l & 0xc0) /* 0x40/0x80: extended label types, obsolete */
			return -EINVAL;
		wire += 1 + l;
		if (wire > DNS_NAME_WIRE_MAX)
			return -EINVAL;
		if (!l)
			break;
		if (lim - pos - 1 < l)
			return -EINVAL;
		if (text)
			text++;
		if (out && text)
			out[text - 1] = '.';
		for (size_t i = 0; i < l; i++) {
			__u8 c = msg[pos + 1 + i];

			if (!dns_label_byte_ok(c))
				bad = true;
			if (c >= 'A' && c <= 'Z')
				c += 'a' - 'A';
			if (out)
				out[text + i] = (char)c;
		}
		text += l;
		pos += 1 + l;
	}
	/* wire <= 255 keeps text <= 253, so out never overflows */
	if (out)
		out[text] = '\0';
	if (textlen)
		*textlen = text;
	*off = end ? end : pos + 1;
	return (out && bad) ? -EILSEQ : 0;
}

static int dns_skip_questions(const __u8 *msg, size_t len, size_t *off, unsigned int n)
{
	/* each question consumes at least 5 bytes, so n cannot outrun len */
	for (unsigned int i = 0; i < n; i++) {
		int err = dns_name(msg, len, off, NULL, NULL);

		if (err)
			return err;
		if (len - *off < 4)
			return -EINVAL;
		*off += 4;
	}
	return 0;
}

static int dns_rr_next(const __u8 *msg, size_t len, size_t *off, struct dns_rr *rr)
{
	int err;

	rr->owner = *off;
	err = dns_name(msg, len, off, NULL, NULL);
	if (err)
		return err;
	if (len - *off < DNS_RR_FIXED)
		return -EINVAL;
	rr->fixed = *off;
	rr->type = get16(msg + *off);
	rr->class = get16(msg + *off + 2);
	rr->ttl = get32(msg + *off + 4);
	rr->rdlength = get16(msg + *off + 8);
	*off += DNS_RR_FIXED;
	if (rr->rdlength > len - *off)
		return -EINVAL;
	rr->rdata = *off;
	*off += rr->rdlength;
	return 0;
}

/* Structural checks for the rdata this library reads; other types are
 * opaque bytes of rdlength. */
static int dns_rr_check(const __u8 *msg, const struct dns_rr *rr)
{
	size_t off = rr->rdata, end = rr->rdata + rr->rdlength;
	int err;

	if (rr->class != FW_DNS_CLASS_IN)
		return 0;
	switch (rr->type) {
	case FW_DNS_TYPE_A:
		return rr->rdlength == 4 ? 0 : -EINVAL;
	case FW_DNS_TYPE_AAAA:
		return rr->rdlength == 16 ? 0 : -EINVAL;
	case FW_DNS_TYPE_CNAME:
		/* the target must fill rdata exactly; its pointers all point
		 * before rdata, so bounding reads at end is enough */
		err = dns_name(msg, end, &off, NULL, NULL);
		if (err)
			return err;
		return off == end ? 0 : -EINVAL;
	default:
		return 0;
	}
}

/* Walks the answer, authority and additional sections from off (just past
 * the questions). Each RR consumes at least 11 bytes, so the 16-bit counts
 * cannot make this run longer than the message allows. */
struct dns_walk {
	unsigned int nopt;
	size_t opt_rr; /* offset of the fixed part of the OPT RR */
	size_t end;    /* just past the last RR */
};

static int dns_walk_rrs(const __u8 *msg, size_t len, const struct dns_hdr *h, size_t off,
			struct dns_walk *w)
{
	unsigned int total = (unsigned int)h->ancount + h->nscount + h->arcount;
	unsigned int ar_first = (unsigned int)h->ancount + h->nscount;
	struct dns_rr rr;
	int err;

	memset(w, 0, sizeof(*w));
	for (unsigned int i = 0; i < total; i++) {
		err = dns_rr_next(msg, len, &off, &rr);
		if (err)
			return err;
		if (rr.type == FW_DNS_TYPE_OPT) {
			/* RFC 6891 6.1.1: one OPT, owner root, additional only */
			if (i < ar_first || msg[rr.owner] != 0 || ++w->nopt > 1)
				return -EINVAL;
			w->opt_rr = rr.fixed;
			continue;
		}
		if (i < h->ancount) {
			err = dns_rr_check(msg, &rr);
			if (err)
				return err;
		}
	}
	w->end = off;
	return 0;
}

int fw_dns_parse_query(const __u8 *msg, size_t len, struct fw_dns_query *q)
{
	struct dns_walk w;
	struct dns_hdr h;
	size_t off = FW_DNS_HDR_LEN;
	int err;

	if (!q)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	if (h.flags & FW_DNS_F_QR)
		return -EINVAL;
	if (h.flags & FW_DNS_F_OPCODE)
		return -EOPNOTSUPP;
	if (!h.qdcount)
		return -EINVAL;

	/* the first name starts at 12 and pointers must go backwards but not
	 * into the header, so it is always uncompressed: build_error can
	 * echo its bytes verbatim */
	err = dns_name(msg, len, &off, q->name, &q->name_len);
	if (err)
		return -EINVAL;
	if (len - off < 4)
		return -EINVAL;
	q->qtype = get16(msg + off);
	q->qclass = get16(msg + off + 2);
	off += 4;
	q->question_end = off;

	err = dns_skip_questions(msg, len, &off, h.qdcount - 1u);
	if (err)
		return -EINVAL;
	err = dns_walk_rrs(msg, len, &h, off, &w);
	if (err)
		return -EINVAL;

	q->id = h.id;
	q->flags = h.flags;
	q->qdcount = h.qdcount;
	if (w.nopt) {
		q->has_edns = true;
		q->edns_udp_size = get16(msg + w.opt_rr + 2);
	}
	return 0;
}

int fw_dns_build_error(const __u8 *query, size_t qlen, const struct fw_dns_query *q, int rcode,
		       __u8 *out, size_t outcap, size_t *outlen)
{
	size_t n;
	__u16 flags;

	if (!query || !q || !out || !outlen || rcode < 0 || rcode > FW_DNS_F_RCODE)
		return -EINVAL;
	n = q->question_end;
	/* at least a root name plus qtype and qclass */
	if (n < FW_DNS_HDR_LEN + 5 || n > qlen)
		return -EINVAL;
	if (outcap < n)
		return -ENOSPC;

	flags = FW_DNS_F_QR | (q->flags & (FW_DNS_F_RD | FW_DNS_F_CD)) | FW_DNS_F_RA | (__u16)rcode;
	put16(out, q->id);
	put16(out + 2, flags);
	put16(out + 4, 1);
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memmove(out + FW_DNS_HDR_LEN, query + FW_DNS_HDR_LEN, n - FW_DNS_HDR_LEN);
	*outlen = n;
	return 0;
}

int fw_dns_add_edns0(__u8 *msg, size_t len, size_t cap, size_t *newlen, __u16 udp_size)
{
	struct dns_walk w;
	struct dns_hdr h;
	size_t off = FW_DNS_HDR_LEN;
	__u8 *p;
	int err;

	if (!newlen || udp_size < 512)
		return -EINVAL;
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	err = dns_skip_questions(msg, len, &off, h.qdcount);
	if (err)
		return err;
	err = dns_walk_rrs(msg, len, &h, off, &w);
	if (err)
		return err;
	if (w.nopt) {
		*newlen = len;
		return 0;
	}
	if (h.arcount == 0xffff)
		return -EINVAL;
	/* appended after the last RR: trailing bytes would otherwise be read
	 * as the start of our OPT RR */
	if (cap < w.end || cap - w.end < FW_DNS_OPT_LEN)
		return -ENOSPC;

	p = msg + w.end;
	p[0] = 0; /* root owner */
	put16(p + 1, FW_DNS_TYPE_OPT);
	put16(p + 3, udp_size);
	put32(p + 5, 0); /* extended rcode 0, version 0, no DO bit */
	put16(p + 9, 0);
	put16(msg + 10, h.arcount + 1);
	*newlen = w.end + FW_DNS_OPT_LEN;
	return 0;
}

int fw_dns_strip_opt(__u8 *msg, size_t len, size_t *newlen)
{
	struct dns_walk w;
	struct dns_hdr h;
	size_t off = FW_DNS_HDR_LEN, rr_end;
	int err;

	if (!newlen)
		return -EINVAL;
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	err = dns_skip_questions(msg, len, &off, h.qdcount);
	if (err)
		return err;
	err = dns_walk_rrs(msg, len, &h, off, &w);
	if (err)
		return err;
	if (!w.nopt) {
		*newlen = len;
		return 0;
	}
	/* the walk checked the owner is the one root byte before opt_rr */
	rr_end = w.opt_rr + DNS_RR_FIXED + get16(msg + w.opt_rr + 8);
	if (rr_end != w.end)
		return -EOPNOTSUPP;
	put16(msg + 10, h.arcount - 1);
	*newlen = w.opt_rr - 1;
	return 0;
}

/* The first question at offset 12: its name cannot be compressed (pointers
 * go backwards and never into the header), so it is self-contained. Returns
 * the offset just past it, or 0 when it is missing or malformed. */
static size_t dns_first_question_end(const __u8 *msg, size_t len, const struct dns_hdr *h)
{
	size_t off = FW_DNS_HDR_LEN;

	if (!h->qdcount || dns_name(msg, len, &off, NULL, NULL) || len - off < 4)
		return 0;
	return off + 4;
}

int fw_dns_truncate(__u8 *msg, size_t len, size_t *newlen)
{
	struct dns_hdr h;
	size_t end;
	int err;

	if (!newlen)
		return -EINVAL;
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	if (!(h.flags & FW_DNS_F_QR))
		return -EINVAL;
	end = dns_first_question_end(msg, len, &h);
	if (!end)
		return -EINVAL;
	put16(msg + 2, h.flags | FW_DNS_F_TC);
	put16(msg + 4, 1);
	put16(msg + 6, 0);
	put16(msg + 8, 0);
	put16(msg + 10, 0);
	*newlen = end;
	return 0;
}

int fw_dns_build_reject(const __u8 *msg, size_t len, int rcode, __u8 *out, size_t outcap,
			size_t *outlen)
{
	struct dns_hdr h;
	size_t end;
	__u16 flags;
	int err;

	if (!out || !outlen || rcode < 0 || rcode > FW_DNS_F_RCODE)
		return -EINVAL;
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	if (h.flags & FW_DNS_F_QR)
		return -EINVAL;
	end = dns_first_question_end(msg, len, &h);
	if (!end)
		end = FW_DNS_HDR_LEN;
	if (outcap < end)
		return -ENOSPC;
	flags = FW_DNS_F_QR | (h.flags & (FW_DNS_F_OPCODE | FW_DNS_F_RD | FW_DNS_F_CD)) |
		FW_DNS_F_RA | (__u16)rcode;
	memmove(out + FW_DNS_HDR_LEN, msg + FW_DNS_HDR_LEN, end - FW_DNS_HDR_LEN);
	put16(out, h.id);
	put16(out + 2, flags);
	put16(out + 4, end > FW_DNS_HDR_LEN ? 1 : 0);
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	*outlen = end;
	return 0;
}

/* name is the question name or one of the CNAME targets found so far */
static bool dns_in_chain(const char *name, const struct fw_dns_query *q,
			 const struct fw_dns_answer *a)
{
	if (!strcmp(name, q->name))
		return true;
	for (__u32 i = 0; i < a->ncnames; i++)
		if (!strcmp(name, a->cnames[i]))
			return true;
	return false;
}

/* Finds the CNAME owned by cur in the answer section (already validated by
 * dns_walk_rrs) and stores its target in next. Returns true when found. A
 * target with no text form ends the chain: its addresses are then not
 * learned, which fails closed. */
static bool dns_cname_of(const __u8 *msg, size_t len, size_t off, unsigned int ancount,
			 const char *cur, char *next)
{
	char owner[FW_DNS_NAME_BUF];
	struct dns_rr rr;

	for (unsigned int i = 0; i < ancount; i++) {
		size_t o, t;

		if (dns_rr_next(msg, len, &off, &rr))
			return false;
		if (rr.type != FW_DNS_TYPE_CNAME || rr.class != FW_DNS_CLASS_IN)
			continue;
		o = rr.owner;
		if (dns_name(msg, len, &o, owner, NULL) || strcmp(owner, cur))
			continue;
		t = rr.rdata;
		return !dns_name(msg, rr.rdata + rr.rdlength, &t, next, NULL);
	}
	return false;
}

int fw_dns_parse_answer(const __u8 *msg, size_t len, const struct fw_dns_query *q,
			struct fw_dns_answer *a)
{
	char name[FW_DNS_NAME_BUF];
	struct dns_walk w;
	struct dns_hdr h;
	struct dns_rr rr;
	size_t off = FW_DNS_HDR_LEN, an;
	bool mismatch = false;
	int err;

	if (!q || !a)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	if (!(h.flags & FW_DNS_F_QR))
		return -EINVAL;
	a->id = h.id;
	a->rcode = h.flags & FW_DNS_F_RCODE;
	a->truncated = !!(h.flags & FW_DNS_F_TC);

	/* exactly our one question (RFC 5452): an answer without one, or with
	 * more, is not an answer to it */
	if (h.qdcount != 1) {
		mismatch = true;
	} else {
		size_t o = off;

		err = dns_name(msg, len, &o, name, NULL);
		if (err == -EINVAL)
			return err;
		if (len - o < 4)
			return -EINVAL;
		/* an answer to some other question must not teach addresses */
		if (err || strcmp(name, q->name) || get16(msg + o) != q->qtype ||
		    get16(msg + o + 2) != q->qclass)
			mismatch = true;
	}
	err = dns_skip_questions(msg, len, &off, h.qdcount);
	if (err)
		return err;
	an = off;
	err = dns_walk_rrs(msg, len, &h, off, &w);
	if (err)
		return err;
	if (mismatch || h.id != q->id)
		return -EPROTO;

	/* follow the chain: at most FW_DNS_MAX_CHAIN passes over the answers,
	 * whatever order the CNAMEs come in */
	for (;;) {
		const char *cur = a->ncnames ? a->cnames[a->ncnames - 1] : q->name;

		if (!dns_cname_of(msg, len, an, h.ancount, cur, name))
			break;
		if (dns_in_chain(name, q, a) || a->ncnames == FW_DNS_MAX_CHAIN) {
			a->chain_cut = true;
			break;
		}
		memcpy(a->cnames[a->ncnames++], name, sizeof(name));
	}

	off = an;
	for (unsigned int i = 0; i < h.ancount; i++) {
		struct fw_dns_addr *d;
		size_t o;

		if (dns_rr_next(msg, len, &off, &rr))
			return -EINVAL;
		if ((rr.type != FW_DNS_TYPE_A && rr.type != FW_DNS_TYPE_AAAA) ||
		    rr.class != FW_DNS_CLASS_IN)
			continue;
		o = rr.owner;
		if (dns_name(msg, rr.fixed, &o, name, NULL) || !dns_in_chain(name, q, a))
			continue;
		if (a->naddrs == FW_DNS_MAX_ADDRS) {
			a->ndropped++;
			continue;
		}
		d = &a->addrs[a->naddrs++];
		if (rr.type == FW_DNS_TYPE_A) {
			__be32 v4;

			memcpy(&v4, msg + rr.rdata, 4);
			fw_addr_from_v4(&d->ip, v4);
		} else {
			memcpy(d->ip.b, msg + rr.rdata, 16);
		}
		d->ttl = rr.ttl;
	}
	return 0;
}

int fw_dns_cap_ttls(__u8 *msg, size_t len, __u32 max_ttl)
{
	struct dns_walk w;
	struct dns_hdr h;
	size_t off = FW_DNS_HDR_LEN;
	unsigned int total;
	int err;

	err = dns_hdr_parse(msg, len, &h);
	if (err)
		return err;
	err = dns_skip_questions(msg, len, &off, h.qdcount);
	if (err)
		return err;
	/* validate everything before the first write */
	err = dns_walk_rrs(msg, len, &h, off, &w);
	if (err)
		return err;
	/* A hostile pointer may aim into a TTL we are about to lower, so the
	 * second walk must not follow pointers: it only steps over the names'
	 * in-place bytes, whose layout the writes below never touch. */
	total = (unsigned int)h.ancount + h.nscount + h.arcount;
	for (unsigned int i = 0; i < total; i++) {
		size_t fixed;
		__u16 type;
		__u32 ttl;

		while (msg[off] && (msg[off] & 0xc0) != 0xc0)
			off += 1 + msg[off];
		off += msg[off] ? 2 : 1;
		fixed = off;
		type = get16(msg + fixed);
		ttl = get32(msg + fixed + 4);
		if (type != FW_DNS_TYPE_OPT && ttl > max_ttl)
			put32(msg + fixed + 4, max_ttl);
		off = fixed + DNS_RR_FIXED + get16(msg + fixed + 8);
	}
	return 0;
}

__u32 fw_dns_lease_seconds(__u32 ttl, __u32 add, __u32 min, __u32 max)
{
	__u32 v = ttl > UINT32_MAX - add ? UINT32_MAX : ttl + add;

	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}
