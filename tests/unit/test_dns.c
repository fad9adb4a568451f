// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* DNS wire format as the proxy sees it: queries from clients, answers from
 * upstream, the error answers it builds and the rewrites it makes. Messages
 * are built byte by byte so malformed ones are as easy to write as good. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/addr.h"
#include "dns/wire.h"

struct msg {
	__u8 b[8192];
	size_t len;
};

static void m_u8(struct msg *m, __u8 v)
{
	cr_assert_lt(m->len, sizeof(m->b));
	m->b[m->len++] = v;
}

static void m_u16(struct msg *m, __u16 v)
{
	m_u8(m, v >> 8);
	m_u8(m, v & 0xff);
}

static void m_u32(struct msg *m, __u32 v)
{
	m_u16(m, v >> 16);
	m_u16(m, v & 0xffff);
}

static void m_hdr(struct msg *m, __u16 id, __u16 flags, __u16 qd, __u16 an, __u16 ns, __u16 ar)
{
	m->len = 0;
	m_u16(m, id);
	m_u16(m, flags);
	m_u16(m, qd);
	m_u16(m, an);
	m_u16(m, ns);
	m_u16(m, ar);
}

/* Labels of a dotted name, without the terminating root label, so a
 * compression pointer can follow. A trailing dot adds nothing. */
static size_t m_labels(struct msg *m, const char *name)
{
	size_t start = m->len;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		m_u8(m, (__u8)l);
		for (size_t i = 0; i < l; i++)
			m_u8(m, (__u8)name[i]);
		name += l;
		if (*name == '.')
			name++;
	}
	return start;
}

static size_t m_name(struct msg *m, const char *name)
{
	size_t start = m_labels(m, name);

	m_u8(m, 0);
	return start;
}

static void m_ptr(struct msg *m, size_t target)
{
	m_u16(m, (__u16)(0xc000 | target));
}

static void m_question(struct msg *m, const char *name, __u16 type)
{
	m_name(m, name);
	m_u16(m, type);
	m_u16(m, FW_DNS_CLASS_IN);
}

/* type, class, ttl, rdlength: the owner must already be written */
static void m_rr_fixed(struct msg *m, __u16 type, __u32 ttl, __u16 rdlength)
{
	m_u16(m, type);
	m_u16(m, FW_DNS_CLASS_IN);
	m_u32(m, ttl);
	m_u16(m, rdlength);
}

static void m_a(struct msg *m, const char *owner, __u32 ttl, __u32 v4)
{
	m_name(m, owner);
	m_rr_fixed(m, FW_DNS_TYPE_A, ttl, 4);
	m_u32(m, v4);
}

static void m_aaaa(struct msg *m, const char *owner, __u32 ttl, const char *v6)
{
	__u8 b[16];

	cr_assert_eq(inet_pton(AF_INET6, v6, b), 1);
	m_name(m, owner);
	m_rr_fixed(m, FW_DNS_TYPE_AAAA, ttl, 16);
	for (int i = 0; i < 16; i++)
		m_u8(m, b[i]);
}

static void m_cname(struct msg *m, const char *owner, __u32 ttl, const char *target)
{
	size_t rdlen_at;

	m_name(m, owner);
	m_rr_fixed(m, FW_DNS_TYPE_CNAME, ttl, 0);
	rdlen_at = m->len - 2;
	m_name(m, target);
	m->b[rdlen_at] = (m->len - rdlen_at - 2) >> 8;
	m->b[rdlen_at + 1] = (m->len - rdlen_at - 2) & 0xff;
}

static void m_opt(struct msg *m, __u16 udp, __u32 flags)
{
	m_u8(m, 0);
	m_u16(m, FW_DNS_TYPE_OPT);
	m_u16(m, udp);
	m_u32(m, flags);
	m_u16(m, 0);
}

static struct fw_ip v4(__u32 host)
{
	struct fw_ip ip;

	fw_addr_from_v4(&ip, htonl(host));
	return ip;
}

static struct fw_ip v6(const char *s)
{
	struct fw_ip ip;

	cr_assert_eq(inet_pton(AF_INET6, s, ip.b), 1);
	return ip;
}

static void assert_ip(const struct fw_ip *got, struct fw_ip want)
{
	char a[FW_ADDR_STRLEN], b[FW_ADDR_STRLEN];

	cr_assert(!memcmp(got, &want, sizeof(want)), "address %s, want %s",
		  fw_addr_str(got, a, sizeof(a)), fw_addr_str(&want, b, sizeof(b)));
}

static void query(struct msg *m, const char *name, __u16 type)
{
	m_hdr(m, 0x1234, FW_DNS_F_RD, 1, 0, 0, 0);
	m_question(m, name, type);
}

/* a parsed query for name, as the proxy holds it when the answer comes */
static struct fw_dns_query parsed(const char *name, __u16 type)
{
	struct fw_dns_query q;
	struct msg m;

	query(&m, name, type);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);
	return q;
}

static int query_err(const struct msg *m)
{
	struct fw_dns_query q;

	return fw_dns_parse_query(m->b, m->len, &q);
}

/* ---- queries ---- */

Test(dns, query_simple_a)
{
	struct fw_dns_query q;
	struct msg m;

	query(&m, "example.com", FW_DNS_TYPE_A);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);
	cr_assert_eq(q.id, 0x1234);
	cr_assert_eq(q.flags, FW_DNS_F_RD);
	cr_assert_eq(q.qdcount, 1);
	cr_assert_str_eq(q.name, "example.com");
	cr_assert_eq(q.name_len, 11);
	cr_assert_eq(q.qtype, FW_DNS_TYPE_A);
	cr_assert_eq(q.qclass, FW_DNS_CLASS_IN);
	cr_assert_eq(q.question_end, 12 + 13 + 4);
	cr_assert_eq(q.question_end, m.len);
	cr_assert(!q.has_edns);
}

Test(dns, query_aaaa)
{
	struct fw_dns_query q = parsed("ipv6.example.org", FW_DNS_TYPE_AAAA);

	cr_assert_eq(q.qtype, FW_DNS_TYPE_AAAA);
	cr_assert_str_eq(q.name, "ipv6.example.org");
}

Test(dns, query_name_lowercased)
{
	struct fw_dns_query q = parsed("WwW.ExAmPlE.COM", FW_DNS_TYPE_A);

	cr_assert_str_eq(q.name, "www.example.com");
}

Test(dns, query_trailing_dot_and_root)
{
	struct fw_dns_query q = parsed("example.com.", FW_DNS_TYPE_A);

	/* the wire form has no dot; the text form drops the root */
	cr_assert_str_eq(q.name, "example.com");
	q = parsed("", 2 /* NS */);
	cr_assert_str_eq(q.name, "");
	cr_assert_eq(q.name_len, 0);
	cr_assert_eq(q.question_end, 12 + 1 + 4);
}

Test(dns, query_underscore_and_hyphen_kept)
{
	struct fw_dns_query q = parsed("_dmarc.my-host.example", 16 /* TXT */);

	cr_assert_str_eq(q.name, "_dmarc.my-host.example");
}

Test(dns, query_edns_reported)
{
	struct fw_dns_query q;
	struct msg m;

	m_hdr(&m, 7, FW_DNS_F_RD, 1, 0, 0, 1);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_opt(&m, 1232, 0x8000);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);
	cr_assert(q.has_edns);
	cr_assert_eq(q.edns_udp_size, 1232);
	cr_assert_eq(q.question_end, 12 + 13 + 4);
}

Test(dns, query_second_question_ignored)
{
	struct fw_dns_query q;
	struct msg m;

	m_hdr(&m, 7, 0, 2, 0, 0, 0);
	m_question(&m, "first.example", FW_DNS_TYPE_A);
	m_question(&m, "second.example", FW_DNS_TYPE_A);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);
	cr_assert_str_eq(q.name, "first.example");
	cr_assert_eq(q.qdcount, 2);
	/* but it must still be well formed */
	m.len -= 3;
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_longest_name)
{
	char name[300], label[64];
	struct fw_dns_query q;

	/* 63.63.63.61 = 253 characters, 255 bytes on the wire */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.%s.%s.%.61s", label, label, label, label);
	cr_assert_eq(strlen(name), 253);
	q = parsed(name, FW_DNS_TYPE_A);
	cr_assert_str_eq(q.name, name);
	cr_assert_eq(q.name_len, 253);
}

Test(dns, query_name_too_long)
{
	char name[300], label[64];
	struct msg m;

	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.%s.%s.%.62s", label, label, label, label);
	query(&m, name, FW_DNS_TYPE_A);
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_label_too_long)
{
	char name[80];
	struct msg m;

	memset(name, 'a', 64);
	strcpy(name + 64, ".com");
	query(&m, name, FW_DNS_TYPE_A);
	/* 64 = 0x40, an extended label type: refused either way */
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_label_with_dot_refused)
{
	struct msg m;

	/* one label "x.allowed" under com: as text it would look like a name
	 * under allowed.com */
	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_u8(&m, 9);
	for (const char *p = "x.allowed"; *p; p++)
		m_u8(&m, (__u8)*p);
	m_name(&m, "com");
	m_u16(&m, FW_DNS_TYPE_A);
	m_u16(&m, FW_DNS_CLASS_IN);
	cr_assert_eq(query_err(&m), -EINVAL);
	/* NUL would cut the text short */
	m.b[12 + 2] = 0;
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_header_checks)
{
	struct msg m;

	query(&m, "example.com", FW_DNS_TYPE_A);
	m.b[5] = 0; /* qdcount 0 */
	cr_assert_eq(query_err(&m), -EINVAL);

	query(&m, "example.com", FW_DNS_TYPE_A);
	m.b[2] |= 0x80; /* QR: a response is not a query */
	cr_assert_eq(query_err(&m), -EINVAL);

	query(&m, "example.com", FW_DNS_TYPE_A);
	m.b[2] |= 2 << 3; /* opcode STATUS */
	cr_assert_eq(query_err(&m), -EOPNOTSUPP);
	m.b[2] = (m.b[2] & 0x87) | 4 << 3; /* NOTIFY */
	cr_assert_eq(query_err(&m), -EOPNOTSUPP);
}

Test(dns, query_truncated_everywhere)
{
	struct msg m;
	size_t full;

	m_hdr(&m, 7, 0, 1, 0, 0, 1);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_opt(&m, 4096, 0);
	full = m.len;
	cr_assert_eq(query_err(&m), 0);
	/* header, name, qtype/qclass, OPT RR: every shorter prefix fails */
	for (m.len = 0; m.len < full; m.len++)
		cr_assert_eq(query_err(&m), -EINVAL, "prefix of %zu bytes accepted", m.len);
	cr_assert_eq(fw_dns_parse_query(NULL, 0, NULL), -EINVAL);
}

Test(dns, query_rdlength_beyond_end)
{
	struct msg m;

	m_hdr(&m, 7, 0, 1, 0, 0, 1);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_name(&m, "");
	m_rr_fixed(&m, 16, 0, 10); /* TXT claiming 10 bytes */
	m_u32(&m, 0);
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_counts_not_trusted)
{
	struct msg m;

	query(&m, "example.com", FW_DNS_TYPE_A);
	m.b[10] = 0xff; /* arcount 65535 with nothing there */
	m.b[11] = 0xff;
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_two_opt_refused)
{
	struct msg m;

	m_hdr(&m, 7, 0, 1, 0, 0, 2);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_opt(&m, 4096, 0);
	m_opt(&m, 512, 0);
	cr_assert_eq(query_err(&m), -EINVAL);
}

Test(dns, query_pointer_in_question_refused)
{
	struct msg m;

	/* the only earlier bytes are the header */
	m_hdr(&m, 7, 0, 1, 0, 0, 0);
	m_labels(&m, "www");
	m_ptr(&m, 4);
	m_u16(&m, FW_DNS_TYPE_A);
	m_u16(&m, FW_DNS_CLASS_IN);
	cr_assert_eq(query_err(&m), -EINVAL);

	/* nor into itself */
	m_hdr(&m, 7, 0, 1, 0, 0, 0);
	m_labels(&m, "www");
	m_ptr(&m, 12);
	m_u16(&m, FW_DNS_TYPE_A);
	m_u16(&m, FW_DNS_CLASS_IN);
	cr_assert_eq(query_err(&m), -EINVAL);
}

/* ---- answers ---- */

static void response(struct msg *m, const char *qname, __u16 type, __u16 an, __u16 ns, __u16 ar)
{
	m_hdr(m, 0x1234, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA, 1, an, ns, ar);
	m_question(m, qname, type);
}

static int answer(const struct msg *m, const char *qname, __u16 type, struct fw_dns_answer *a)
{
	struct fw_dns_query q = parsed(qname, type);

	return fw_dns_parse_answer(m->b, m->len, &q, a);
}

Test(dns, answer_simple)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
	m_a(&m, "example.com", 300, 0xc0000201);
	m_a(&m, "EXAMPLE.com", 60, 0xc0000202);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.id, 0x1234);
	cr_assert_eq(a.rcode, 0);
	cr_assert(!a.truncated);
	cr_assert_eq(a.naddrs, 2);
	assert_ip(&a.addrs[0].ip, v4(0xc0000201));
	cr_assert_eq(a.addrs[0].ttl, 300);
	assert_ip(&a.addrs[1].ip, v4(0xc0000202));
	cr_assert_eq(a.addrs[1].ttl, 60);
	cr_assert_eq(a.ncnames, 0);
	cr_assert_eq(a.ndropped, 0);
}

Test(dns, answer_compressed_into_question)
{
	struct fw_dns_answer a;
	struct fw_ip six;
	struct msg m;
	size_t www;

	/* owner -> the question name; CNAME target "cdn" + pointer to the
	 * question's "example.com"; the A owner points at that target */
	response(&m, "www.example.com", FW_DNS_TYPE_AAAA, 2, 0, 0);
	m_ptr(&m, 12);
	m_rr_fixed(&m, FW_DNS_TYPE_CNAME, 300, 6);
	www = m_labels(&m, "cdn");
	m_ptr(&m, 12 + 4);
	m_ptr(&m, www);
	m_rr_fixed(&m, FW_DNS_TYPE_AAAA, 20, 16);
	six = v6("2001:db8::1");
	for (int i = 0; i < 16; i++)
		m_u8(&m, six.b[i]);

	cr_assert_eq(answer(&m, "www.example.com", FW_DNS_TYPE_AAAA, &a), 0);
	cr_assert_eq(a.ncnames, 1);
	cr_assert_str_eq(a.cnames[0], "cdn.example.com");
	cr_assert_eq(a.naddrs, 1);
	assert_ip(&a.addrs[0].ip, v6("2001:db8::1"));
	cr_assert_eq(a.addrs[0].ttl, 20);
}

Test(dns, answer_pointer_loops)
{
	struct fw_dns_answer a;
	struct msg m;
	size_t at;

	/* self-pointing owner */
	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	at = m.len;
	m_ptr(&m, at);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);

	/* a -> b -> a: "x" + pointer to the next name, which points back */
	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	at = m.len;
	m_labels(&m, "x");
	m_ptr(&m, at + 4);
	m_ptr(&m, at);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);

	/* a label run that jumps back to its own start */
	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	at = m.len;
	m_labels(&m, "x");
	m_ptr(&m, at);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);
}

Test(dns, answer_forward_pointer_refused)
{
	struct fw_dns_answer a;
	struct msg m;
	size_t at;

	/* owner points at the CNAME target written later: well formed names,
	 * but a forward pointer */
	response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
	at = m.len;
	m_ptr(&m, 0); /* patched below */
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	m_name(&m, "example.com");
	m_rr_fixed(&m, 16, 60, 13);
	m_name(&m, "example.com"); /* TXT-ish bytes that look like a name */
	m.b[at] = 0xc0 | (__u8)((m.len - 13) >> 8);
	m.b[at + 1] = (m.len - 13) & 0xff;
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);
}

Test(dns, answer_pointer_overlap_refused)
{
	struct fw_dns_answer a;
	struct msg m;
	size_t rdata;

	/* the second owner points at the first A's rdata, where 06 is read as
	 * a label running over the pointer itself */
	response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
	m_ptr(&m, 12);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	rdata = m.len;
	m_u32(&m, 0x06616263);
	m_ptr(&m, rdata);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);
	/* pointing at a real earlier name is fine */
	m.b[rdata + 4 + 1] = 12;
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.naddrs, 2);
}

Test(dns, answer_pointer_into_header_refused)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	m_ptr(&m, 5);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 60, 4);
	m_u32(&m, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EINVAL);
}

Test(dns, answer_cname_chain_any_order)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "a.example", FW_DNS_TYPE_A, 6, 0, 0);
	m_a(&m, "c.example", 30, 0xc0000203);
	m_cname(&m, "b.example", 300, "c.example");
	m_a(&m, "other.example", 30, 0xc6336409); /* not in the chain */
	m_cname(&m, "a.example", 300, "b.example");
	m_aaaa(&m, "c.example", 40, "2001:db8::3");
	m_a(&m, "b.example", 50, 0xc0000202);

	cr_assert_eq(answer(&m, "a.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.ncnames, 2);
	cr_assert_str_eq(a.cnames[0], "b.example");
	cr_assert_str_eq(a.cnames[1], "c.example");
	cr_assert(!a.chain_cut);
	cr_assert_eq(a.naddrs, 3);
	assert_ip(&a.addrs[0].ip, v4(0xc0000203));
	cr_assert_eq(a.addrs[0].ttl, 30);
	assert_ip(&a.addrs[1].ip, v6("2001:db8::3"));
	cr_assert_eq(a.addrs[1].ttl, 40);
	assert_ip(&a.addrs[2].ip, v4(0xc0000202));
	for (__u32 i = 0; i < a.naddrs; i++)
		cr_assert_neq(FW_IP_W(&a.addrs[i].ip)[3], htonl(0xc6336409));
}

Test(dns, answer_cname_loop_bounded)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "a.example", FW_DNS_TYPE_A, 3, 0, 0);
	m_cname(&m, "a.example", 60, "b.example");
	m_cname(&m, "b.example", 60, "a.example");
	m_a(&m, "b.example", 60, 0x0a000001);
	cr_assert_eq(answer(&m, "a.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert(a.chain_cut);
	cr_assert_eq(a.ncnames, 1);
	cr_assert_str_eq(a.cnames[0], "b.example");
	cr_assert_eq(a.naddrs, 1);

	/* self loop */
	response(&m, "a.example", FW_DNS_TYPE_A, 1, 0, 0);
	m_cname(&m, "a.example", 60, "A.example");
	cr_assert_eq(answer(&m, "a.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert(a.chain_cut);
	cr_assert_eq(a.ncnames, 0);
}

Test(dns, answer_cname_chain_too_long)
{
	char owner[32], target[32];
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "n0.example", FW_DNS_TYPE_A, 21, 0, 0);
	for (int i = 0; i < 20; i++) {
		snprintf(owner, sizeof(owner), "n%d.example", i);
		snprintf(target, sizeof(target), "n%d.example", i + 1);
		m_cname(&m, owner, 60, target);
	}
	m_a(&m, "n20.example", 60, 0x0a000001);
	cr_assert_eq(answer(&m, "n0.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert(a.chain_cut);
	cr_assert_eq(a.ncnames, FW_DNS_MAX_CHAIN);
	cr_assert_str_eq(a.cnames[FW_DNS_MAX_CHAIN - 1], "n16.example");
	/* the end of a chain we did not follow is not learned */
	cr_assert_eq(a.naddrs, 0);
}

Test(dns, answer_too_many_addresses)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "many.example", FW_DNS_TYPE_A, 70, 0, 0);
	for (__u32 i = 0; i < 70; i++)
		m_a(&m, "many.example", 60, 0x0a000000 + i);
	cr_assert_eq(answer(&m, "many.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.naddrs, FW_DNS_MAX_ADDRS);
	cr_assert_eq(a.ndropped, 70 - FW_DNS_MAX_ADDRS);
	assert_ip(&a.addrs[63].ip, v4(0x0a000000 + 63));
}

Test(dns, answer_flags_and_rcode)
{
	struct fw_dns_answer a;
	struct msg m;

	response(&m, "gone.example", FW_DNS_TYPE_A, 0, 0, 0);
	m.b[2] |= FW_DNS_F_TC >> 8;
	m.b[3] |= FW_DNS_RCODE_NXDOMAIN;
	cr_assert_eq(answer(&m, "gone.example", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.rcode, FW_DNS_RCODE_NXDOMAIN);
	cr_assert(a.truncated);
	cr_assert_eq(a.naddrs, 0);
}

Test(dns, answer_mismatch_and_malformed)
{
	struct fw_dns_answer a;
	struct fw_dns_query q = parsed("example.com", FW_DNS_TYPE_A);
	struct msg m;

	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	m_a(&m, "example.com", 60, 0x01020304);
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), 0);

	q.id ^= 1; /* spoofed or stale */
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), -EPROTO);
	q.id ^= 1;
	cr_assert_eq(answer(&m, "example.org", FW_DNS_TYPE_A, &a), -EPROTO);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_AAAA, &a), -EPROTO);

	m.b[2] &= 0x7f; /* QR=0 */
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), -EINVAL);
	m.b[2] |= 0x80;

	m.b[m.len - 5] = 5; /* A with rdlength 5 */
	m.b[m.len++] = 0;
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), -EINVAL);
	m.len--;
	m.b[m.len - 5] = 4;

	m.b[m.len - 5] = 40; /* rdlength beyond the end */
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), -EINVAL);
	m.b[m.len - 5] = 4;

	for (size_t full = m.len, n = 0; n < full; n++)
		cr_assert_eq(fw_dns_parse_answer(m.b, n, &q, &a), -EINVAL, "prefix %zu accepted",
			     n);
}

/* RFC 5452: an answer is one only with exactly our question; without a
 * question (or with a second one) its records must teach nothing. */
Test(dns, answer_needs_exactly_the_question)
{
	struct fw_dns_answer a;
	struct msg m;

	m_hdr(&m, 0x1234, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA, 0, 1, 0, 0);
	m_a(&m, "example.com", 60, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EPROTO);
	cr_assert_eq(a.naddrs, 0);

	m_hdr(&m, 0x1234, FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_RA, 2, 1, 0, 0);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_question(&m, "other.example", FW_DNS_TYPE_A);
	m_a(&m, "example.com", 60, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EPROTO);

	/* the same name and type in another class (CH for IN) is another
	 * question: its IN records teach nothing */
	response(&m, "example.com", FW_DNS_TYPE_A, 1, 0, 0);
	m_a(&m, "example.com", 60, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(m.b[FW_DNS_HDR_LEN + 13 + 3], FW_DNS_CLASS_IN);
	m.b[FW_DNS_HDR_LEN + 13 + 3] = 3; /* CH */
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), -EPROTO);
	cr_assert_eq(a.naddrs, 0);

	/* an answer record of another class is not an address of the name */
	{
		size_t at;

		response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
		m_a(&m, "example.com", 60, 0x01020304);
		at = m.len;
		m_a(&m, "example.com", 60, 0x05060708);
		cr_assert_eq(m.b[at + 13 + 3], FW_DNS_CLASS_IN);
		m.b[at + 13 + 3] = 3; /* CH */
		cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), 0);
		cr_assert_eq(a.naddrs, 1);
		assert_ip(&a.addrs[0].ip, v4(0x01020304));
	}

	/* the name's case is free (it may come back as sent, or 0x20-mixed) */
	response(&m, "ExAmPlE.CoM", FW_DNS_TYPE_A, 1, 0, 0);
	m_a(&m, "example.com", 60, 0x01020304);
	cr_assert_eq(answer(&m, "example.com", FW_DNS_TYPE_A, &a), 0);
	cr_assert_eq(a.naddrs, 1);
}

/* ---- error answers ---- */

static void check_error(int rcode)
{
	__u8 out[512];
	struct fw_dns_answer a;
	struct fw_dns_query q;
	struct msg m;
	size_t n;

	m_hdr(&m, 0xbeef, FW_DNS_F_RD | FW_DNS_F_CD, 1, 0, 0, 1);
	m_question(&m, "Blocked.Example", FW_DNS_TYPE_AAAA);
	m_opt(&m, 4096, 0);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);

	cr_assert_eq(fw_dns_build_error(m.b, m.len, &q, rcode, out, sizeof(out), &n), 0);
	cr_assert_eq(n, q.question_end);
	cr_assert_eq(out[0], 0xbe);
	cr_assert_eq(out[1], 0xef);
	cr_assert_eq((out[2] << 8 | out[3]),
		     FW_DNS_F_QR | FW_DNS_F_RD | FW_DNS_F_CD | FW_DNS_F_RA | rcode);
	cr_assert_eq(out[4] << 8 | out[5], 1);
	for (int i = 6; i < 12; i++)
		cr_assert_eq(out[i], 0);
	/* question verbatim, original case included */
	cr_assert(!memcmp(out + 12, m.b + 12, n - 12));
	cr_assert_eq(out[13], 'B');

	cr_assert_eq(fw_dns_parse_answer(out, n, &q, &a), 0);
	cr_assert_eq(a.rcode, rcode);
	cr_assert_eq(a.id, 0xbeef);
	cr_assert_eq(a.naddrs, 0);

	cr_assert_eq(fw_dns_build_error(m.b, m.len, &q, rcode, out, n - 1, &n), -ENOSPC);
}

Test(dns, error_nxdomain)
{
	check_error(FW_DNS_RCODE_NXDOMAIN);
}

Test(dns, error_servfail)
{
	check_error(FW_DNS_RCODE_SERVFAIL);
}

Test(dns, error_rd_not_invented)
{
	__u8 out[512];
	struct fw_dns_query q;
	struct msg m;
	size_t n;

	m_hdr(&m, 9, 0, 1, 0, 0, 0);
	m_question(&m, "x.example", FW_DNS_TYPE_A);
	cr_assert_eq(fw_dns_parse_query(m.b, m.len, &q), 0);
	cr_assert_eq(fw_dns_build_error(m.b, m.len, &q, 3, out, sizeof(out), &n), 0);
	cr_assert_eq(out[2] << 8 | out[3], FW_DNS_F_QR | FW_DNS_F_RA | 3);
	cr_assert_eq(fw_dns_build_error(m.b, m.len, &q, 16, out, sizeof(out), &n), -EINVAL);
	cr_assert_eq(fw_dns_build_error(m.b, q.question_end - 1, &q, 3, out, sizeof(out), &n),
		     -EINVAL);
}

/* ---- EDNS0 ---- */

Test(dns, edns0_added_when_absent)
{
	struct fw_dns_query q;
	struct msg m;
	size_t len, n;

	query(&m, "example.com", FW_DNS_TYPE_A);
	len = m.len;
	cr_assert_eq(fw_dns_add_edns0(m.b, len, sizeof(m.b), &n, FW_DNS_EDNS_UDP), 0);
	cr_assert_eq(n, len + FW_DNS_OPT_LEN);
	cr_assert_eq(m.b[10] << 8 | m.b[11], 1);
	cr_assert_eq(fw_dns_parse_query(m.b, n, &q), 0);
	cr_assert(q.has_edns);
	cr_assert_eq(q.edns_udp_size, 4096);
	cr_assert_str_eq(q.name, "example.com");

	/* again: present now, so nothing changes */
	cr_assert_eq(fw_dns_add_edns0(m.b, n, sizeof(m.b), &len, FW_DNS_EDNS_UDP), 0);
	cr_assert_eq(len, n);
	cr_assert_eq(m.b[10] << 8 | m.b[11], 1);
}

Test(dns, edns0_kept_when_present)
{
	struct fw_dns_query q;
	struct msg m;
	size_t n;

	m_hdr(&m, 7, FW_DNS_F_RD, 1, 0, 0, 1);
	m_question(&m, "example.com", FW_DNS_TYPE_A);
	m_opt(&m, 1232, 0x8000);
	cr_assert_eq(fw_dns_add_edns0(m.b, m.len, sizeof(m.b), &n, FW_DNS_EDNS_UDP), 0);
	cr_assert_eq(n, m.len);
	cr_assert_eq(fw_dns_parse_query(m.b, n, &q), 0);
	/* the client's own size is left alone */
	cr_assert_eq(q.edns_udp_size, 1232);
}

Test(dns, edns0_no_room_or_malformed)
{
	struct msg m;
	size_t n = 0;

	query(&m, "example.com", FW_DNS_TYPE_A);
	cr_assert_eq(fw_dns_add_edns0(m.b, m.len, m.len + FW_DNS_OPT_LEN - 1, &n, 4096), -ENOSPC);
	cr_assert_eq(m.b[11], 0);
	cr_assert_eq(fw_dns_add_edns0(m.b, m.len - 1, sizeof(m.b), &n, 4096), -EINVAL);
	cr_assert_eq(fw_dns_add_edns0(m.b, m.len, sizeof(m.b), &n, 100), -EINVAL);
}

/* ---- TTLs and leases ---- */

Test(dns, ttls_capped_opt_untouched)
{
	struct fw_dns_answer a;
	struct fw_dns_query q = parsed("example.com", FW_DNS_TYPE_A);
	struct msg m;
	size_t ns_ttl, opt;

	response(&m, "example.com", FW_DNS_TYPE_A, 3, 1, 2);
	m_cname(&m, "example.com", 86400, "edge.example.net");
	m_a(&m, "edge.example.net", 86400, 0xc0000201);
	m_a(&m, "edge.example.net", 30, 0xc0000202);
	m_name(&m, "example.com");
	m_rr_fixed(&m, 2 /* NS */, 172800, 4);
	ns_ttl = m.len - 6;
	m_name(&m, "ns");
	m_a(&m, "ns", 0x80000000u, 0xc0000253); /* "negative" TTL */
	opt = m.len;
	m_opt(&m, 1232, 0x00008000);

	cr_assert_eq(fw_dns_cap_ttls(m.b, m.len, 360), 0);
	cr_assert_eq(fw_dns_parse_answer(m.b, m.len, &q, &a), 0);
	cr_assert_eq(a.naddrs, 2);
	cr_assert_eq(a.addrs[0].ttl, 360);
	cr_assert_eq(a.addrs[1].ttl, 30);
	cr_assert_eq(m.b[ns_ttl] << 24 | m.b[ns_ttl + 1] << 16 | m.b[ns_ttl + 2] << 8 |
			     m.b[ns_ttl + 3],
		     360);
	cr_assert_eq(m.b[opt + 5], 0);
	cr_assert_eq(m.b[opt + 6], 0);
	cr_assert_eq(m.b[opt + 7], 0x80);
	cr_assert_eq(m.b[opt + 8], 0);
	cr_assert_eq(m.b[opt + 3] << 8 | m.b[opt + 4], 1232);
}

Test(dns, ttls_not_written_when_malformed)
{
	struct msg m;
	__u8 copy[sizeof(m.b)];

	response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
	m_a(&m, "example.com", 86400, 0xc0000201);
	m_a(&m, "example.com", 86400, 0xc0000202);
	m.len -= 1;
	memcpy(copy, m.b, m.len);
	cr_assert_eq(fw_dns_cap_ttls(m.b, m.len, 60), -EINVAL);
	cr_assert(!memcmp(copy, m.b, m.len));
}

Test(dns, ttls_capped_under_pointer_into_ttl)
{
	struct msg m;
	size_t ttl1, ttl2;

	/* the second owner points at the first TTL, whose bytes c0 0c are a
	 * pointer to the question: lowering that TTL must not derail the
	 * rewrite of the RRs after it */
	response(&m, "example.com", FW_DNS_TYPE_A, 2, 0, 0);
	m_ptr(&m, 12);
	m_rr_fixed(&m, FW_DNS_TYPE_A, 0xc00c0000u, 4);
	ttl1 = m.len - 6;
	m_u32(&m, 0x01020304);
	m_ptr(&m, ttl1);
	m_rr_fixed(&m, FW_DNS_TYPE_A, UINT32_MAX, 4);
	ttl2 = m.len - 6;
	m_u32(&m, 0x01020305);

	cr_assert_eq(fw_dns_cap_ttls(m.b, m.len, 0x80000000u), 0);
	cr_assert_eq(m.b[ttl1], 0x80);
	cr_assert_eq(m.b[ttl1 + 1], 0);
	cr_assert_eq(m.b[ttl2], 0x80);
	cr_assert_eq(m.b[ttl2 + 3], 0);
}

Test(dns, lease_clamp_table)
{
	static const struct {
		__u32 ttl, want;
	} table[] = {
		{30, 90},   {86400, 360},      {0, 60},
		{1, 61},    {299, 359},	       {300, 360},
		{301, 360}, {UINT32_MAX, 360}, {UINT32_MAX - 59, 360},
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		cr_assert_eq(fw_dns_lease_seconds(table[i].ttl, 60, 60, 360), table[i].want,
			     "ttl %u", table[i].ttl);
	/* configurable, and the cap wins over a misordered minimum */
	cr_assert_eq(fw_dns_lease_seconds(10, 0, 30, 600), 30);
	cr_assert_eq(fw_dns_lease_seconds(10, 0, 900, 600), 600);
}
