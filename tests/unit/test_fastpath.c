// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* FastPath ResolveEndpoint on the wire: the request bytes are those the
 * protobuf library writes for gateway/proto/fastpath_v2.proto, a response
 * the library wrote decodes, malformed frames are refused, and only
 * http(s)://host[:port][/] passes as a proxy endpoint. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/fastpath.h"

/* python3 protobuf: ResolveEndpointRequest(sandbox{namespaced_name{
 * "tenant-a", "sandbox-123"}}, target{44772}, DIRECT_FASTLET_PROXY) */
static const char req_hex[] =
	"0a190a170a0874656e616e742d61120b73616e64626f782d313233120408e4dd021801";
/* ResolveEndpointResponse("uid-1", {"fastlet-0", "http", 8080},
 * "http://198.51.100.7:8080", {credential: "cred-abc"}, 7, 1900000000) */
static const char resp_hex[] =
	"0a057569642d3112140a09666173746c65742d3012046874747018903f1a18687474703a2f2f3139382e35"
	"312e3130302e373a38303830222b0a1f582d466173742d53616e64626f782d526f7574652d43726564656e"
	"7469616c1208637265642d61626328073080e6fe8907";

static size_t unhex(const char *h, unsigned char *out)
{
	size_t n = strlen(h) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned int b;

		sscanf(h + 2 * i, "%2x", &b);
		out[i] = (unsigned char)b;
	}
	return n;
}

static size_t framed(const char *hex, unsigned char *out)
{
	size_t n = unhex(hex, out + 5);

	out[0] = 0;
	out[1] = (unsigned char)(n >> 24);
	out[2] = (unsigned char)(n >> 16);
	out[3] = (unsigned char)(n >> 8);
	out[4] = (unsigned char)n;
	return n + 5;
}

static int str_is(struct fw_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

Test(fastpath, request_matches_the_protobuf_library)
{
	unsigned char want[256], out[256];
	size_t wn = framed(req_hex, want);
	long n = fw_fastpath_request_encode("tenant-a", 8, "sandbox-123", 11, 44772,
					    FW_FASTPATH_DIRECT_FASTLET_PROXY, 0, out, sizeof(out));

	cr_assert_eq(n, (long)wn);
	cr_assert_arr_eq(out, want, wn);
	cr_assert_leq((size_t)n, fw_fastpath_request_size(8, 11));
	cr_assert_eq(fw_fastpath_request_encode("tenant-a", 8, "sandbox-123", 11, 44772,
						FW_FASTPATH_DIRECT_FASTLET_PROXY, 0, out, 20),
		     -ENOSPC);
}

Test(fastpath, response_from_the_protobuf_library_decodes)
{
	unsigned char buf[512];
	size_t n = framed(resp_hex, buf);
	struct fw_fastpath_resolved r;

	cr_assert_eq(fw_fastpath_response_decode(buf, n, &r), 0);
	cr_assert(str_is(r.sandbox_uid, "uid-1"));
	cr_assert(str_is(r.component_name, "fastlet-0"));
	cr_assert(str_is(r.protocol, "http"));
	cr_assert_eq(r.endpoint_port, 8080);
	cr_assert(str_is(r.proxy_endpoint, "http://198.51.100.7:8080"));
	cr_assert(str_is(r.credential, "cred-abc"));
	cr_assert_eq(r.headers, 1);
	cr_assert_eq(r.other_headers, 0);
	cr_assert_eq(r.route_generation, 7);
	cr_assert_eq(r.expires_at, 1900000000);
}

Test(fastpath, malformed_frames_are_refused)
{
	unsigned char buf[512];
	struct fw_fastpath_resolved r;
	size_t n = framed(resp_hex, buf);

	cr_assert_eq(fw_fastpath_response_decode(buf, 4, &r), -EBADMSG, "short prefix");
	cr_assert_eq(fw_fastpath_response_decode(buf, n - 1, &r), -EBADMSG, "truncated");
	buf[0] = 1;
	cr_assert_eq(fw_fastpath_response_decode(buf, n, &r), -EPROTO, "compressed");
	buf[0] = 0;
	buf[1] = 0x7f;
	cr_assert_eq(fw_fastpath_response_decode(buf, n, &r), -EMSGSIZE, "huge length");
	/* a length-delimited field longer than the message */
	memcpy(buf, "\0\0\0\0\2\x0a\x05", 7);
	cr_assert_eq(fw_fastpath_response_decode(buf, 7, &r), -EBADMSG, "field overruns");
	/* a group (wire type 3) */
	memcpy(buf, "\0\0\0\0\1\x0b", 6);
	cr_assert_eq(fw_fastpath_response_decode(buf, 6, &r), -EBADMSG, "group");
	/* an empty message has no proxy endpoint */
	memcpy(buf, "\0\0\0\0\0", 5);
	cr_assert_eq(fw_fastpath_response_decode(buf, 5, &r), -EPROTO, "no endpoint");
	/* an unterminated varint */
	memcpy(buf, "\0\0\0\0\2\x28\x80", 7);
	cr_assert_eq(fw_fastpath_response_decode(buf, 7, &r), -EBADMSG, "varint");
}

Test(fastpath, proxy_endpoint_forms)
{
	static const struct {
		const char *url;
		long base;
	} cases[] = {
		{"http://198.51.100.7:8080", 24},
		{"http://198.51.100.7:8080/", 24},
		{"https://fastlet-0.example.com", 29},
		{"HTTP://h", 8},
		{"http://[2001:db8::1]:80", 23},
		{"http://", -EINVAL},
		{"ftp://h", -EINVAL},
		{"http://user@h", -EINVAL},
		{"http://h:0", -EINVAL},
		{"http://h:65536", -EINVAL},
		{"http://h:123456", -EINVAL},
		{"http://h:", -EINVAL},
		{"http://h/path", -EINVAL},
		{"http://h?x", -EINVAL},
		{"http://h x", -EINVAL},
		{"http://[]", -EINVAL},
		{"http://[2001:db8::1", -EINVAL},
		{"h:80", -EINVAL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(fw_fastpath_endpoint_base(cases[i].url, strlen(cases[i].url)),
			     cases[i].base, "%s", cases[i].url);
}

Test(fastpath, header_values)
{
	cr_assert(fw_fastpath_header_value_ok("cred-abc", 8));
	cr_assert_not(fw_fastpath_header_value_ok("", 0));
	cr_assert_not(fw_fastpath_header_value_ok("a\r\nX-Evil: 1", 12));
	cr_assert_not(fw_fastpath_header_value_ok("\x80", 1));
}
