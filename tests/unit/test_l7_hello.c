// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ClientHello walker: a whole hello in one record and cut over
 * several, every prefix asking for more, ECH and two server names found,
 * and malformed lengths refused. The hellos are built here field by
 * field. */
#include <criterion/criterion.h>
#include <string.h>

#include "l7/hello.h"

struct hb {
	uint8_t b[20000];
	size_t n;
};

static void put(struct hb *h, const void *p, size_t n)
{
	cr_assert(h->n + n <= sizeof(h->b));
	memcpy(h->b + h->n, p, n);
	h->n += n;
}

static void put8(struct hb *h, unsigned int v)
{
	uint8_t b = (uint8_t)v;

	put(h, &b, 1);
}

static void put16(struct hb *h, unsigned int v)
{
	put8(h, v >> 8);
	put8(h, v);
}

static void put_ext(struct hb *h, unsigned int type, const void *data, size_t n)
{
	put16(h, type);
	put16(h, (unsigned int)n);
	put(h, data, n);
}

/* a server_name extension with the names given (type 0 each) */
static void put_sni(struct hb *h, const char *const *names, size_t count)
{
	struct hb e = {0};
	size_t list = 0;

	for (size_t i = 0; i < count; i++)
		list += 3 + strlen(names[i]);
	put16(&e, (unsigned int)list);
	for (size_t i = 0; i < count; i++) {
		put8(&e, 0);
		put16(&e, (unsigned int)strlen(names[i]));
		put(&e, names[i], strlen(names[i]));
	}
	put_ext(h, 0, e.b, e.n);
}

/* the handshake message of a ClientHello with the extensions block ext */
static void hello_body(struct hb *m, const struct hb *ext)
{
	uint8_t random[32] = {1};
	size_t len_at;

	put8(m, 1);
	len_at = m->n;
	put8(m, 0);
	put16(m, 0);
	put16(m, 0x0303);
	put(m, random, 32);
	put8(m, 32);
	put(m, random, 32);
	put16(m, 4);
	put16(m, 0x1301);
	put16(m, 0x1302);
	put8(m, 1);
	put8(m, 0);
	if (ext) {
		put16(m, (unsigned int)ext->n);
		put(m, ext->b, ext->n);
	}
	size_t body = m->n - len_at - 3;
	m->b[len_at] = (uint8_t)(body >> 16);
	m->b[len_at + 1] = (uint8_t)(body >> 8);
	m->b[len_at + 2] = (uint8_t)body;
}

/* the message in records of at most rec bytes */
static void records(struct hb *out, const struct hb *m, size_t rec)
{
	for (size_t off = 0; off < m->n; off += rec) {
		size_t n = m->n - off < rec ? m->n - off : rec;

		put8(out, 22);
		put16(out, 0x0301);
		put16(out, (unsigned int)n);
		put(out, m->b + off, n);
	}
}

static struct hb msg, wire, ext;
static struct fw_l7_hello h;

static void build(const char *const *names, size_t count, int ech, size_t pad, size_t rec)
{
	static uint8_t zeros[4096];

	memset(&msg, 0, sizeof(msg));
	memset(&wire, 0, sizeof(wire));
	memset(&ext, 0, sizeof(ext));
	put_ext(&ext, 0x000b, "\x01\x00", 2);
	if (count)
		put_sni(&ext, names, count);
	if (ech)
		put_ext(&ext, 0xfe0d, "\x00\x00\x01\x00\x01\x05", 6);
	if (pad)
		put_ext(&ext, 0x0015, zeros, pad);
	hello_body(&msg, &ext);
	records(&wire, &msg, rec);
}

static const char *const one[] = {"api.example.com"};
static const char *const two[] = {"api.example.com", "evil.example.net"};

Test(l7_hello, whole_hello_one_record)
{
	build(one, 1, 0, 0, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.server_name_exts, 1);
	cr_assert_eq(h.host_names, 1);
	cr_assert_eq(h.ech, 0);
	cr_assert_str_eq(h.name, "api.example.com");
	cr_assert_eq(h.hello_len, wire.n);
	cr_assert_eq(fw_l7_hello_vet(&h, 0), 0);
}

Test(l7_hello, every_prefix_asks_for_more)
{
	build(one, 1, 0, 1500, 16384);
	for (size_t n = 0; n < wire.n; n++)
		cr_assert_eq(fw_l7_hello_walk(wire.b, n, &h), FW_L7_HELLO_MORE, "prefix %zu", n);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
}

Test(l7_hello, large_hello_over_several_records)
{
	/* ~1.8 KB, the size post-quantum key shares give, in 100-byte
	 * records: the name itself is cut between two of them */
	build(one, 1, 0, 1600, 100);
	cr_assert_gt(wire.n, 1800);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_str_eq(h.name, "api.example.com");
	for (size_t n = 0; n < wire.n; n++)
		cr_assert_eq(fw_l7_hello_walk(wire.b, n, &h), FW_L7_HELLO_MORE, "prefix %zu", n);
}

Test(l7_hello, bytes_after_the_hello_are_not_its)
{
	build(one, 1, 0, 0, 16384);
	/* a change_cipher_spec record, as TLS 1.3 middlebox mode sends */
	put(&wire, "\x14\x03\x03\x00\x01\x01", 6);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.hello_len, wire.n - 6);
}

Test(l7_hello, no_server_name)
{
	build(NULL, 0, 0, 0, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.server_name_exts, 0);
	cr_assert_str_eq(h.name, "");
	cr_assert_eq(fw_l7_hello_vet(&h, 0), 0);
}

Test(l7_hello, no_extensions_at_all)
{
	memset(&msg, 0, sizeof(msg));
	memset(&wire, 0, sizeof(wire));
	hello_body(&msg, NULL);
	records(&wire, &msg, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.server_name_exts, 0);
}

Test(l7_hello, ech_found_and_refused_unless_allowed)
{
	build(one, 1, 1, 0, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.ech, 1);
	cr_assert_eq(fw_l7_hello_vet(&h, 0), FW_L7_ECH);
	cr_assert_eq(fw_l7_hello_vet(&h, 1), 0);
}

Test(l7_hello, two_host_names_in_one_extension)
{
	build(two, 2, 0, 0, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.host_names, 2);
	cr_assert_str_eq(h.name, "api.example.com");
	cr_assert_eq(fw_l7_hello_vet(&h, 1), FW_L7_BAD_HELLO);
}

Test(l7_hello, two_server_name_extensions)
{
	memset(&msg, 0, sizeof(msg));
	memset(&wire, 0, sizeof(wire));
	memset(&ext, 0, sizeof(ext));
	put_sni(&ext, one, 1);
	put_sni(&ext, two + 1, 1);
	hello_body(&msg, &ext);
	records(&wire, &msg, 16384);
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_OK);
	cr_assert_eq(h.server_name_exts, 2);
	cr_assert_eq(fw_l7_hello_vet(&h, 1), FW_L7_BAD_HELLO);
}

Test(l7_hello, not_a_handshake)
{
	static const uint8_t http[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	static const uint8_t alert[] = {21, 3, 3, 0, 2, 2, 40};
	static const uint8_t sslv2[] = {0x80, 0x2e, 0x01, 0x00, 0x02};

	cr_assert_eq(fw_l7_hello_walk(http, sizeof(http) - 1, &h), FW_L7_HELLO_BAD);
	cr_assert_eq(fw_l7_hello_walk(http, 1, &h), FW_L7_HELLO_BAD);
	cr_assert_eq(fw_l7_hello_walk(alert, sizeof(alert), &h), FW_L7_HELLO_BAD);
	cr_assert_eq(fw_l7_hello_walk(sslv2, sizeof(sslv2), &h), FW_L7_HELLO_BAD);
}

Test(l7_hello, server_hello_is_not_a_client_hello)
{
	build(one, 1, 0, 0, 16384);
	wire.b[5] = 2;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);
}

Test(l7_hello, lengths_that_lie_are_refused)
{
	/* extensions length one more than there is */
	build(one, 1, 0, 0, 16384);
	size_t ext_at = 5 + 4 + 2 + 32 + 1 + 32 + 2 + 4 + 1 + 1;
	wire.b[ext_at + 1]++;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);

	/* a session id longer than 32 */
	build(one, 1, 0, 0, 16384);
	wire.b[5 + 4 + 2 + 32] = 33;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);

	/* an odd cipher suites length */
	build(one, 1, 0, 0, 16384);
	wire.b[5 + 4 + 2 + 32 + 1 + 32 + 1] = 3;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);

	/* a server name list longer than its extension */
	build(one, 1, 0, 0, 16384);
	size_t sni_at = ext_at + 2 + 4 + 2 + 4;
	cr_assert_eq(wire.b[sni_at - 3], 0); /* the server_name type */
	wire.b[sni_at + 1]++;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);

	/* an empty host name */
	{
		static const char *const empty[] = {""};

		build(empty, 1, 0, 0, 16384);
		cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);
	}

	/* a record of length 0, and a record claiming more than TLS allows */
	build(one, 1, 0, 0, 16384);
	wire.b[3] = 0;
	wire.b[4] = 0;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);
	build(one, 1, 0, 0, 16384);
	wire.b[3] = 0xff;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);

	/* a handshake message shorter than its fixed fields */
	build(one, 1, 0, 0, 16384);
	wire.b[6] = 0;
	wire.b[7] = 0;
	wire.b[8] = 10;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);
}

Test(l7_hello, a_record_of_another_type_inside_the_hello)
{
	build(one, 1, 0, 0, 50);
	/* the second record becomes application data */
	wire.b[5 + 50] = 23;
	cr_assert_eq(fw_l7_hello_walk(wire.b, wire.n, &h), FW_L7_HELLO_BAD);
}

/* the server_name extension's body as OpenSSL's ClientHello callback
 * gives it: list length, then entries of type, length, name */
Test(l7_hello, server_name_extension_body)
{
	static const uint8_t one_name[] = {0,	14,  0,	  0,   11,  'a', 'p', 'i',
					   '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e'};
	static const uint8_t two_names[] = {0, 10, 0, 0, 2, 'a', 'b', 0, 0, 2, 'c', 'd'};
	static const uint8_t nul_inside[] = {0, 6, 0, 0, 3, 'a', 0, 'b'};
	static const uint8_t trailing[] = {0, 5, 0, 0, 2, 'a', 'b', 'x'};
	static const uint8_t short_list[] = {0, 9, 0, 0, 2, 'a', 'b'};
	static const uint8_t other_type_only[] = {0, 5, 1, 0, 2, 'a', 'b'};
	static const uint8_t other_type_then_name[] = {0, 10, 1, 0, 2, 'x', 'y', 0, 0, 2, 'a', 'b'};
	static const uint8_t empty_name[] = {0, 3, 0, 0, 0};
	char name[FW_L7_HELLO_NAME_MAX + 1];

	cr_assert_eq(fw_l7_hello_server_name(one_name, sizeof(one_name), name), 0);
	cr_assert_str_eq(name, "api.example");
	cr_assert_eq(
		fw_l7_hello_server_name(other_type_then_name, sizeof(other_type_then_name), name),
		0);
	cr_assert_str_eq(name, "ab");
	cr_assert_eq(fw_l7_hello_server_name(two_names, sizeof(two_names), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(nul_inside, sizeof(nul_inside), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(trailing, sizeof(trailing), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(short_list, sizeof(short_list), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(other_type_only, sizeof(other_type_only), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(empty_name, sizeof(empty_name), name), -1);
	cr_assert_eq(fw_l7_hello_server_name(one_name, 0, name), -1);
	cr_assert_eq(fw_l7_hello_server_name(one_name, 1, name), -1);
	cr_assert_str_eq(name, "");
}
