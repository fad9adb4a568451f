// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Address and prefix text <-> fastwall's 128-bit form. Everything user
 * supplied goes through here, so the parsers are strict: no spaces, no
 * signs, no empty parts, lengths bounded before anything is copied. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/addr.h"

/* "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255" is 45 characters; any
 * longer input cannot be an address and is refused before copying. */
#define ADDR_TEXT_MAX 45

static bool is_v4_mapped(const struct fw_ip *ip)
{
	return FW_IP_W(ip)[0] == 0 && FW_IP_W(ip)[1] == 0 && FW_IP_W(ip)[2] == htonl(0x0000ffff);
}

enum fw_family fw_addr_family(const struct fw_ip *ip)
{
	return is_v4_mapped(ip) ? FW_FAM_V4 : FW_FAM_V6;
}

void fw_addr_from_v4(struct fw_ip *ip, __be32 v4)
{
	FW_IP_W(ip)[0] = 0;
	FW_IP_W(ip)[1] = 0;
	FW_IP_W(ip)[2] = htonl(0x0000ffff);
	FW_IP_W(ip)[3] = v4;
}

void fw_prefix_netmask(struct fw_ip *mask, __u32 plen)
{
	/* no loop-carried branch: the policy compiler makes one per rule */
	for (__u32 i = 0; i < 4; i++) {
		__u32 bits = plen > 32 * i ? plen - 32 * i : 0;

		/* shifting a 32-bit value by 32 is undefined, hence the split */
		FW_IP_W(mask)[i] = bits >= 32 ? ~0u : bits ? htonl(~0u << (32 - bits)) : 0;
	}
}

void fw_ip_and(struct fw_ip *out, const struct fw_ip *addr, const struct fw_ip *mask)
{
	for (int i = 0; i < 4; i++)
		FW_IP_W(out)[i] = FW_IP_W(addr)[i] & FW_IP_W(mask)[i];
}

void fw_prefix_mask(struct fw_ip *ip, __u32 plen)
{
	struct fw_ip m;

	fw_prefix_netmask(&m, plen);
	fw_ip_and(ip, ip, &m);
}

bool fw_prefix_contains(const struct fw_ip *net, __u32 plen, const struct fw_ip *addr)
{
	if (plen > 128)
		return false;
	/* word by word, no copies: the policy compiler asks this for every
	 * pair of prefixes */
	for (int i = 0; i < 4 && plen; i++) {
		__u32 bits = plen < 32 ? plen : 32;
		__u32 mask = bits == 32 ? ~0u : ~0u << (32 - bits);

		if ((FW_IP_W(net)[i] ^ FW_IP_W(addr)[i]) & htonl(mask))
			return false;
		plen -= bits;
	}
	return true;
}

int fw_addr_parse(const char *s, struct fw_ip *ip, enum fw_family *fam)
{
	char buf[ADDR_TEXT_MAX + 1];
	struct in_addr v4;
	size_t len;

	if (!s)
		return -EINVAL;
	len = strnlen(s, ADDR_TEXT_MAX + 1);
	if (len == 0 || len > ADDR_TEXT_MAX)
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';

	/* inet_pton already refuses spaces, signs and trailing junk */
	if (inet_pton(AF_INET, buf, &v4) == 1) {
		fw_addr_from_v4(ip, v4.s_addr);
	} else if (inet_pton(AF_INET6, buf, ip->b) != 1) {
		return -EINVAL;
	}
	if (fam)
		*fam = fw_addr_family(ip);
	return 0;
}

/* A decimal prefix length: digits only, no sign, no leading zero. */
static int parse_plen(const char *s, __u32 max, __u32 *out)
{
	__u32 v = 0;
	size_t len = strlen(s);

	if (len == 0 || len > 3 || (len > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (__u32)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int fw_prefix_parse(const char *s, struct fw_ip *net, __u32 *plen, enum fw_family *fam)
{
	char buf[ADDR_TEXT_MAX + 5]; /* address, '/', three digits, NUL */
	const char *slash;
	struct fw_ip ip;
	enum fw_family f;
	__u32 len;
	size_t n;
	int err;

	if (!s)
		return -EINVAL;
	n = strnlen(s, sizeof(buf));
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);

	slash = strchr(buf, '/');
	if (!slash) {
		err = fw_addr_parse(buf, &ip, &f);
		if (err)
			return err;
		len = 128;
	} else {
		buf[slash - buf] = '\0';
		err = fw_addr_parse(buf, &ip, &f);
		if (err)
			return err;
		/* "::ffff:10.0.0.0/104" is written in IPv6 form, so its length
		 * counts over 128 bits; only dotted-quad text uses IPv4 lengths */
		if (strchr(buf, ':')) {
			err = parse_plen(slash + 1, 128, &len);
			if (err)
				return err;
		} else {
			err = parse_plen(slash + 1, 32, &len);
			if (err)
				return err;
			len += FW_V4_PREFIX_BASE;
		}
	}
	/* a v4-mapped prefix shorter than /96 reaches past IPv4 space */
	if (f == FW_FAM_V4 && len < FW_V4_PREFIX_BASE)
		f = FW_FAM_V6;
	fw_prefix_mask(&ip, len);
	*net = ip;
	*plen = len;
	if (fam)
		*fam = f;
	return 0;
}

const char *fw_addr_str(const struct fw_ip *ip, char *buf, size_t len)
{
	const char *r;

	if (is_v4_mapped(ip))
		r = inet_ntop(AF_INET, &FW_IP_W(ip)[3], buf, (socklen_t)len);
	else
		r = inet_ntop(AF_INET6, ip->b, buf, (socklen_t)len);
	if (!r && len)
		buf[0] = '\0';
	return buf;
}

const char *fw_prefix_str(const struct fw_ip *net, __u32 plen, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	if (is_v4_mapped(net) && plen >= FW_V4_PREFIX_BASE) {
		inet_ntop(AF_INET, &FW_IP_W(net)[3], addr, sizeof(addr));
		snprintf(buf, len, "%s/%u", addr, plen - FW_V4_PREFIX_BASE);
	} else {
		inet_ntop(AF_INET6, net->b, addr, sizeof(addr));
		snprintf(buf, len, "%s/%u", addr, plen);
	}
	return buf;
}
