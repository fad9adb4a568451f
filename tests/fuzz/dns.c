// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: arbitrary bytes as a DNS query and as an upstream
 * answer. Nothing may read out of bounds, and what the library builds or
 * rewrites must parse back with the properties the proxy relies on. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/wire.h"

#define FUZZ_MSG_MAX 65535 /* a DNS message never exceeds 16-bit lengths */
#define FUZZ_TTL_CAP 300

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_query(const uint8_t *data, size_t size)
{
	static __u8 out[FUZZ_MSG_MAX + FW_DNS_OPT_LEN];
	struct fw_dns_answer a;
	struct fw_dns_query q, q2;
	size_t n;
	int ret;

	ret = fw_dns_parse_query(data, size, &q);
	if (ret) {
		if (ret != -EINVAL && ret != -EOPNOTSUPP)
			abort();
		return;
	}
	if (q.name_len > FW_DNS_NAME_MAX || strlen(q.name) != q.name_len || q.question_end > size)
		abort();
	for (size_t i = 0; i < q.name_len; i++)
		if (q.name[i] >= 'A' && q.name[i] <= 'Z')
			abort();

	/* the error answer echoes id and question and parses as an answer */
	ret = fw_dns_build_error(data, size, &q, FW_DNS_RCODE_NXDOMAIN, out, sizeof(out), &n);
	if (ret || n != q.question_end)
		abort();
	if (fw_dns_parse_answer(out, n, &q, &a) || a.rcode != FW_DNS_RCODE_NXDOMAIN ||
	    a.id != q.id || a.naddrs || a.ncnames)
		abort();
	if (fw_dns_parse_query(out, n, &q2) != -EINVAL)
		abort();

	/* EDNS0 added for upstream keeps the question and is there after */
	memcpy(out, data, size);
	ret = fw_dns_add_edns0(out, size, sizeof(out), &n, FW_DNS_EDNS_UDP);
	if (ret)
		abort();
	if (fw_dns_parse_query(out, n, &q2) || !q2.has_edns || strcmp(q.name, q2.name) ||
	    q.qtype != q2.qtype || q.id != q2.id)
		abort();
	if (!q.has_edns && q2.edns_udp_size != FW_DNS_EDNS_UDP)
		abort();
	/* and the proxy can take it off again, back to the client's bytes */
	if (!q.has_edns) {
		ret = fw_dns_strip_opt(out, n, &n);
		if (ret || fw_dns_parse_query(out, n, &q2) || q2.has_edns ||
		    strcmp(q.name, q2.name))
			abort();
	}
}

/* The reply to a rejected query: never to an answer, never longer than
 * what was sent, always an answer itself, question echoed when usable. */
static void check_reject(const uint8_t *data, size_t size)
{
	static __u8 out[FUZZ_MSG_MAX];
	struct fw_dns_query q, q2;
	size_t n;
	int ret, parsed;

	parsed = fw_dns_parse_query(data, size, &q);
	ret = fw_dns_build_reject(data, size, FW_DNS_RCODE_FORMERR, out, sizeof(out), &n);
	if (size < FW_DNS_HDR_LEN || (data[2] & (FW_DNS_F_QR >> 8))) {
		if (ret != -EINVAL)
			abort();
		return;
	}
	if (ret || n < FW_DNS_HDR_LEN || n > size || memcmp(out, data, 2))
		abort();
	if (!(out[2] & (FW_DNS_F_QR >> 8)) || (out[3] & FW_DNS_F_RCODE) != FW_DNS_RCODE_FORMERR)
		abort();
	if (out[6] | out[7] | out[8] | out[9] | out[10] | out[11])
		abort();
	if (!parsed && n != q.question_end)
		abort();
	if (fw_dns_parse_query(out, n, &q2) != -EINVAL)
		abort();
}

static void check_answer(const uint8_t *data, size_t size)
{
	static __u8 copy[FUZZ_MSG_MAX];
	struct fw_dns_answer a, b;
	struct fw_dns_query q;
	int ret, capped;

	if (size < FW_DNS_HDR_LEN)
		return;
	/* the question the answer claims to answer, as the proxy would have
	 * parsed it from the client */
	memcpy(copy, data, size);
	copy[2] &= (__u8) ~((FW_DNS_F_QR | FW_DNS_F_OPCODE) >> 8);
	if (fw_dns_parse_query(copy, size, &q)) {
		memset(&q, 0, sizeof(q));
		strcpy(q.name, "example.com");
		q.name_len = 11;
	}

	ret = fw_dns_parse_answer(data, size, &q, &a);
	if (ret && ret != -EINVAL && ret != -EPROTO)
		abort();
	if (!ret) {
		if (a.naddrs > FW_DNS_MAX_ADDRS || a.ncnames > FW_DNS_MAX_CHAIN)
			abort();
		for (__u32 i = 0; i < a.ncnames; i++)
			if (strlen(a.cnames[i]) > FW_DNS_NAME_MAX)
				abort();
	}

	memcpy(copy, data, size);
	capped = fw_dns_cap_ttls(copy, size, FUZZ_TTL_CAP);
	if (capped && capped != -EINVAL)
		abort();
	if (capped && memcmp(copy, data, size))
		abort(); /* validated before writing */
	if (!ret && capped)
		abort(); /* both validate the whole message the same way */
	if (capped)
		return;
	/* A compression pointer may aim into TTL bytes, so a capped message
	 * need not decode as before; whatever it decodes to, it carries no
	 * TTL above the cap. */
	ret = fw_dns_parse_answer(copy, size, &q, &b);
	if (ret && ret != -EINVAL && ret != -EPROTO)
		abort();
	for (__u32 i = 0; !ret && i < b.naddrs; i++)
		if (b.addrs[i].ttl > FUZZ_TTL_CAP)
			abort();
}

/* Stripping the OPT RR and truncating, the last rewrites before an answer
 * goes back to the client: the result must still be a well-formed message. */
static void check_rewrites(const uint8_t *data, size_t size)
{
	static __u8 copy[FUZZ_MSG_MAX];
	struct fw_dns_answer a;
	struct fw_dns_query q;
	size_t n, n2;
	int ret, valid;

	memcpy(copy, data, size);
	valid = fw_dns_cap_ttls(copy, size, UINT32_MAX);
	if (valid && memcmp(copy, data, size))
		abort();
	ret = fw_dns_strip_opt(copy, size, &n);
	if (ret && ret != -EINVAL && ret != -EOPNOTSUPP)
		abort();
	if ((ret == -EINVAL) != (valid != 0))
		abort(); /* the same validation as everywhere else */
	if (!ret) {
		if (n > size || fw_dns_cap_ttls(copy, n, UINT32_MAX))
			abort();
		/* nothing left to strip */
		if (fw_dns_strip_opt(copy, n, &n2) || n2 != n)
			abort();
	}

	memcpy(copy, data, size);
	ret = fw_dns_truncate(copy, size, &n);
	if (ret && ret != -EINVAL)
		abort();
	if (ret)
		return;
	if (n > size || n < FW_DNS_HDR_LEN + 5 || fw_dns_cap_ttls(copy, n, UINT32_MAX))
		abort();
	/* it answers its own question, with TC and nothing else */
	memset(&q, 0, sizeof(q));
	if (fw_dns_parse_answer(copy, n, &q, &a) == -EINVAL || !a.truncated || a.naddrs)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FUZZ_MSG_MAX)
		return 0;
	check_query(data, size);
	check_reject(data, size);
	check_answer(data, size);
	check_rewrites(data, size);
	return 0;
}
