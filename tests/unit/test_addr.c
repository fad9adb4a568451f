// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Address and prefix parsing: what is accepted, how it is stored, how it
 * prints back, and the malformed text operators actually type. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/addr.h"

static struct fw_ip ip4(__u8 a, __u8 b, __u8 c, __u8 d)
{
	struct fw_ip ip;

	fw_addr_from_v4(&ip, htonl((__u32)a << 24 | (__u32)b << 16 | (__u32)c << 8 | d));
	return ip;
}

Test(addr, v4_is_v4_mapped)
{
	struct fw_ip ip;
	enum fw_family fam;

	cr_assert_eq(fw_addr_parse("192.0.2.1", &ip, &fam), 0);
	cr_assert_eq(fam, FW_FAM_V4);
	cr_assert_eq(FW_IP_W(&ip)[0], 0);
	cr_assert_eq(FW_IP_W(&ip)[1], 0);
	cr_assert_eq(FW_IP_W(&ip)[2], htonl(0xffff));
	cr_assert_eq(FW_IP_W(&ip)[3], htonl(0xc0000201));
	cr_assert_eq(fw_addr_family(&ip), FW_FAM_V4);
}

Test(addr, v6_and_mapped_text)
{
	struct fw_ip ip, want = ip4(10, 0, 0, 1);
	enum fw_family fam;
	char buf[FW_ADDR_STRLEN];

	cr_assert_eq(fw_addr_parse("2001:db8::1", &ip, &fam), 0);
	cr_assert_eq(fam, FW_FAM_V6);
	cr_assert_eq(FW_IP_W(&ip)[0], htonl(0x20010db8));
	cr_assert_eq(FW_IP_W(&ip)[3], htonl(1));
	cr_assert_str_eq(fw_addr_str(&ip, buf, sizeof(buf)), "2001:db8::1");

	/* the mapped form is the same address as the dotted quad */
	cr_assert_eq(fw_addr_parse("::ffff:10.0.0.1", &ip, &fam), 0);
	cr_assert_eq(fam, FW_FAM_V4);
	cr_assert_eq(memcmp(&ip, &want, sizeof(ip)), 0);
	cr_assert_str_eq(fw_addr_str(&ip, buf, sizeof(buf)), "10.0.0.1");
}

Test(addr, rejects_malformed_addresses)
{
	static const char *const bad[] = {
		"",
		" 1.2.3.4",
		"1.2.3.4 ",
		"1.2.3",
		"1.2.3.4.5",
		"256.0.0.1",
		"1.2.3.4/32",
		"01.2.3.4",
		"1.2.3.-4",
		"::g",
		"2001:db8::1%eth0",
		"1:2:3:4:5:6:7:8:9",
		"localhost",
		"+1.2.3.4",
		"0x1.2.3.4",
		"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255x",
	};
	struct fw_ip ip;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(fw_addr_parse(bad[i], &ip, NULL), -EINVAL, "accepted \"%s\"", bad[i]);
	cr_expect_eq(fw_addr_parse(NULL, &ip, NULL), -EINVAL);
}

Test(addr, prefix_v4_clears_host_bits)
{
	struct fw_ip net, want = ip4(10, 0, 0, 0);
	enum fw_family fam;
	char buf[FW_ADDR_STRLEN];
	__u32 plen;

	cr_assert_eq(fw_prefix_parse("10.0.0.5/24", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 96 + 24);
	cr_assert_eq(fam, FW_FAM_V4);
	cr_assert_eq(memcmp(&net, &want, sizeof(net)), 0);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "10.0.0.0/24");

	cr_assert_eq(fw_prefix_parse("10.1.2.3", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 128);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "10.1.2.3/32");

	cr_assert_eq(fw_prefix_parse("0.0.0.0/0", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 96);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "0.0.0.0/0");

	cr_assert_eq(fw_prefix_parse("255.255.255.255/1", &net, &plen, &fam), 0);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "128.0.0.0/1");
}

Test(addr, prefix_v6)
{
	struct fw_ip net;
	enum fw_family fam;
	char buf[FW_ADDR_STRLEN];
	__u32 plen;

	cr_assert_eq(fw_prefix_parse("2001:db8:ffff::1/33", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 33);
	cr_assert_eq(fam, FW_FAM_V6);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "2001:db8:8000::/33");

	cr_assert_eq(fw_prefix_parse("::/0", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 0);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "::/0");

	cr_assert_eq(fw_prefix_parse("2001:db8::1/128", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 128);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "2001:db8::1/128");

	/* mapped text counts its length over 128 bits */
	cr_assert_eq(fw_prefix_parse("::ffff:10.0.0.0/104", &net, &plen, &fam), 0);
	cr_assert_eq(plen, 104);
	cr_assert_eq(fam, FW_FAM_V4);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "10.0.0.0/8");

	/* shorter than /96 it reaches beyond IPv4 space */
	cr_assert_eq(fw_prefix_parse("::ffff:0.0.0.0/80", &net, &plen, &fam), 0);
	cr_assert_eq(fam, FW_FAM_V6);
	cr_assert_str_eq(fw_prefix_str(&net, plen, buf, sizeof(buf)), "::/80");
}

Test(addr, rejects_malformed_prefixes)
{
	static const char *const bad[] = {
		"",
		"/24",
		"1.2.3.4/",
		"1.2.3.4/33",
		"1.2.3.4/-1",
		"1.2.3.4/+8",
		"1.2.3.4/24x",
		"1.2.3.4/ 24",
		" 1.2.3.4/24",
		"1.2.3.4/24 ",
		"1.2.3.4/024",
		"1.2.3.4/1/2",
		"::/129",
		"::/1000",
		"2001:db8::/",
		"1.2.3/24",
		"a.b.c.d/8",
		"1.2.3.4//8",
		"1.2.3.4/0x8",
	};
	struct fw_ip net;
	__u32 plen;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(fw_prefix_parse(bad[i], &net, &plen, NULL), -EINVAL, "accepted \"%s\"",
			     bad[i]);
}

Test(addr, contains_and_mask)
{
	struct fw_ip net, a = ip4(10, 1, 2, 3), b = ip4(11, 0, 0, 1), v6;
	__u32 plen;

	cr_assert_eq(fw_prefix_parse("10.0.0.0/8", &net, &plen, NULL), 0);
	cr_assert(fw_prefix_contains(&net, plen, &a));
	cr_assert_not(fw_prefix_contains(&net, plen, &b));
	cr_assert_eq(fw_addr_parse("2001:db8::1", &v6, NULL), 0);
	cr_assert_not(fw_prefix_contains(&net, plen, &v6));
	/* ::/0 holds everything, an IPv4 /0 only IPv4 */
	cr_assert_eq(fw_prefix_parse("0.0.0.0/0", &net, &plen, NULL), 0);
	cr_assert(fw_prefix_contains(&net, plen, &a));
	cr_assert_not(fw_prefix_contains(&net, plen, &v6));
	memset(&net, 0, sizeof(net));
	cr_assert(fw_prefix_contains(&net, 0, &v6));
	cr_assert_not(fw_prefix_contains(&net, 129, &v6));

	/* masking at every word boundary and inside words */
	memset(&net, 0xff, sizeof(net));
	fw_prefix_mask(&net, 33);
	cr_assert_eq(FW_IP_W(&net)[0], 0xffffffff);
	cr_assert_eq(FW_IP_W(&net)[1], htonl(0x80000000));
	cr_assert_eq(FW_IP_W(&net)[2], 0);
	cr_assert_eq(FW_IP_W(&net)[3], 0);
	memset(&net, 0xff, sizeof(net));
	fw_prefix_mask(&net, 128);
	cr_assert_eq(FW_IP_W(&net)[3], 0xffffffff);
	fw_prefix_mask(&net, 96);
	cr_assert_eq(FW_IP_W(&net)[2], 0xffffffff);
	cr_assert_eq(FW_IP_W(&net)[3], 0);
}

/* fw_prefix_netmask sets exactly the first plen bits (all 128 past /128),
 * and fw_prefix_mask keeps exactly those of an address, at every length */
Test(addr, netmask_and_mask_keep_the_first_plen_bits)
{
	for (__u32 plen = 0; plen <= 140; plen++) {
		struct fw_ip m, ip;

		memset(&m, 0x5a, sizeof(m));
		fw_prefix_netmask(&m, plen);
		memset(&ip, 0xff, sizeof(ip));
		fw_prefix_mask(&ip, plen);
		for (__u32 bit = 0; bit < 128; bit++) {
			bool want = bit < plen;

			cr_assert_eq(!!(m.b[bit / 8] & (0x80 >> (bit % 8))), want, "plen %u bit %u",
				     plen, bit);
			cr_assert_eq(!!(ip.b[bit / 8] & (0x80 >> (bit % 8))), want,
				     "plen %u bit %u", plen, bit);
		}
	}
}
