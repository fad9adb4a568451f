// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the DNS proxy engine (fw_dnsp_simulate: its real
 * query, framing, exchange and answer code without sockets) fed client
 * bytes over UDP or TCP and upstream bytes. Besides memory errors it
 * checks what the proxy promises a client:
 *   - every message a client reads is a response (QR) with the id of one
 *     of its queries;
 *   - a UDP answer fits what the client said it takes (512 without EDNS);
 *   - every address a client can read in an answer to its question was
 *     handed to learn() first (learn, then answer), unless learn() failed,
 *     and then the client reads no address at all;
 *   - a name decide() denies is never forwarded (learn() never sees it);
 *   - with 0x20, a client reads its question in its own case, never the
 *     case sent upstream.
 * Input: a flags byte (bit 0: TCP client, bit 1: learn() fails, bit 2:
 * decide() denies every name starting with "deny", bit 3: 0x20 case
 * randomisation, and then the client must read its own question back), a 16-bit client
 * length, the client bytes, then upstream records (dnsproxy.h). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/wire.h"
#include "dns/proxy.h"

#define FUZZ_OUT     (1 << 20)
#define FUZZ_LEARNT  4096
#define FUZZ_QUERIES 64	  /* parsed queries checked for learn, then answer */
#define FUZZ_FRAMES  8192 /* more than a stream of -max_len bytes holds */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct {
	bool learn_fails, deny;
	size_t nlearnt;
	struct fw_ip learnt[FUZZ_LEARNT];
} F;

static int f_decide(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		    __u64 *token)
{
	(void)ctx;
	(void)client;
	*token = 7;
	if (F.deny && !strncmp(q->name, "deny", 4))
		return FW_DNS_RCODE_NXDOMAIN;
	return FW_DNSP_FORWARD;
}

static int f_learn(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q, __u64 token,
		   const struct fw_dns_answer *a)
{
	(void)ctx;
	(void)client;
	if (token != 7 || (F.deny && !strncmp(q->name, "deny", 4)))
		abort();
	if (F.learn_fails)
		return -1;
	for (__u32 i = 0; i < a->naddrs && F.nlearnt < FUZZ_LEARNT; i++)
		F.learnt[F.nlearnt++] = a->addrs[i].ip;
	return 0;
}

static bool learnt(const struct fw_ip *ip)
{
	for (size_t i = 0; i < F.nlearnt; i++)
		if (!memcmp(&F.learnt[i], ip, sizeof(*ip)))
			return true;
	return false;
}

static __u16 get16(const uint8_t *b)
{
	return (__u16)(b[0] << 8 | b[1]);
}

/* Past the first question of m, its name uncompressed; 0 if not that. */
static size_t question_end(const uint8_t *m, size_t l)
{
	size_t o = FW_DNS_HDR_LEN;

	while (o < l && m[o] && m[o] < 64)
		o += 1 + m[o];
	if (o >= l || m[o])
		return 0;
	return l - o >= 5 ? o + 5 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fw_dnsp_hooks hooks = {.decide = f_decide, .learn = f_learn};
	static __u8 out[FUZZ_OUT];
	struct fw_dns_query qs[FUZZ_QUERIES];
	static __u16 ids[FUZZ_FRAMES]; /* of every message sent, parsed or not */
	static const uint8_t *raw[FUZZ_FRAMES];
	static size_t rawlen[FUZZ_FRAMES];
	size_t nq = 0, nid = 0, clen, outlen, off;
	const uint8_t *client;
	bool tcp;

	if (size < 3)
		return 0;
	tcp = data[0] & 1;
	F.learn_fails = data[0] & 2;
	F.deny = data[0] & 4;
	F.nlearnt = 0;
	clen = get16(data + 1);
	if (clen > size - 3)
		clen = size - 3;
	client = data + 3;
	/* no error is expected: one would mean a leak (descriptors, memory) */
	if (fw_dnsp_simulate(&hooks, data[0] & 8, client, clen, tcp, data + 3 + clen,
			     size - 3 - clen, out, sizeof(out), &outlen))
		abort();

	/* the client's queries, as the proxy parsed them */
	if (!tcp) {
		if (clen >= 2) {
			raw[nid] = client;
			rawlen[nid] = clen;
			ids[nid++] = get16(client);
		}
		if (!fw_dns_parse_query(client, clen, &qs[0]))
			nq = 1;
	} else {
		for (off = 0; off + 2 <= clen && nid < FUZZ_FRAMES;) {
			size_t l = get16(client + off);

			if (l > clen - off - 2)
				break;
			if (l >= 2) {
				raw[nid] = client + off + 2;
				rawlen[nid] = l;
				ids[nid++] = get16(client + off + 2);
			}
			if (nq < FUZZ_QUERIES && !fw_dns_parse_query(client + off + 2, l, &qs[nq]))
				nq++;
			off += 2 + l;
		}
	}

	for (off = 0; off + 2 <= outlen;) {
		size_t l = get16(out + off);
		const __u8 *m = out + off + 2;
		bool ours = false;

		if (l > outlen - off - 2 || l < FW_DNS_HDR_LEN || !(get16(m + 2) & FW_DNS_F_QR))
			abort();
		for (size_t i = 0; i < nid; i++)
			ours |= get16(m) == ids[i];
		if (!ours && nid < FUZZ_FRAMES) /* else some ids were not kept */
			abort();
		if (!tcp && nq) {
			size_t lim = qs[0].has_edns && qs[0].edns_udp_size > 512
					     ? qs[0].edns_udp_size
					     : 512;

			if (l > lim)
				abort();
		}
		if ((data[0] & 8) && get16(m + 4) == 1 && nid < FUZZ_FRAMES) {
			/* the question as the client reads it: some message the
			 * client sent with this id holds these very bytes */
			size_t e = question_end(m, l);
			bool own = false;

			for (size_t i = 0; i < nid && e; i++)
				own |= ids[i] == get16(m) && rawlen[i] >= e &&
				       !memcmp(m + FW_DNS_HDR_LEN, raw[i] + FW_DNS_HDR_LEN,
					       e - FW_DNS_HDR_LEN);
			if (e && !own)
				abort();
		}
		for (size_t i = 0; i < nq; i++) {
			struct fw_dns_answer a;

			if (get16(m) != qs[i].id || fw_dns_parse_answer(m, l, &qs[i], &a))
				continue;
			for (__u32 k = 0; k < a.naddrs; k++)
				if (F.learn_fails || !learnt(&a.addrs[k].ip))
					abort();
		}
		off += 2 + l;
	}
	if (off != outlen)
		abort();
	return 0;
}
