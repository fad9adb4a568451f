// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The name rules of the layer-7 proxy (pin.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "l7/pin.h"

#define NAME_MAX_LEN 253 /* a DNS name's text, without the trailing dot */

int fw_l7_name_norm(const char *name, size_t len, bool is_host, char *out)
{
	size_t i, end = len;

	if (is_host) {
		/* the port of "host:port" and "[v6]:port"; a bare IPv6 has
		 * no place in a Host and is left whole (it then fails as an
		 * address or as no name) */
		const char *colon = memchr(name, ':', len);

		if (len && name[0] == '[') {
			const char *close = memchr(name, ']', len);

			if (close && (size_t)(close - name) + 1 < len && close[1] == ':')
				end = (size_t)(close - name) + 1;
		} else if (colon && !memchr(colon + 1, ':', len - (size_t)(colon - name) - 1)) {
			end = (size_t)(colon - name);
		}
	}
	if (end && name[end - 1] == '.')
		end--;
	if (end > NAME_MAX_LEN)
		return -ENAMETOOLONG;
	for (i = 0; i < end; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= ' ' || c == 0x7f || c == '/')
			return -EINVAL;
		out[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	out[end] = '\0';
	return (int)end;
}

bool fw_l7_name_is_addr(const char *norm)
{
	unsigned char a[sizeof(struct in6_addr)];
	char v6[INET6_ADDRSTRLEN + 1];
	size_t len = strlen(norm);

	if (inet_pton(AF_INET, norm, a) == 1 || inet_pton(AF_INET6, norm, a) == 1)
		return true;
	if (len > 2 && norm[0] == '[' && norm[len - 1] == ']' && len - 2 < sizeof(v6)) {
		memcpy(v6, norm + 1, len - 2);
		v6[len - 2] = '\0';
		return inet_pton(AF_INET6, v6, a) == 1;
	}
	/* what a resolver would read as an IPv4 address: all digits and dots */
	return len && strspn(norm, "0123456789.") == len;
}

enum fw_l7_reason fw_l7_name_verdict(const char *name, size_t len, bool is_host,
				     const struct fw_lease_name *names, unsigned int n, char *norm)
{
	char own[FW_LEASE_NAME_SZ], known[FW_LEASE_NAME_SZ];
	char *s = norm ? norm : own;
	int l;

	l = fw_l7_name_norm(name, len, is_host, s);
	if (l < 0) {
		/* what the report shows: the name as sent, cut to fit */
		size_t cut = len < FW_LEASE_NAME_SZ - 1 ? len : FW_LEASE_NAME_SZ - 1;

		memcpy(s, name, cut);
		s[cut] = '\0';
		for (size_t i = 0; i < cut; i++)
			if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
				s[i] = '?';
		return FW_L7_NAME;
	}
	if (!l || fw_l7_name_is_addr(s))
		return FW_L7_NO_NAME;
	for (unsigned int i = 0; i < n; i++) {
		size_t kl = strnlen(names[i].text, sizeof(names[i].text));

		if (fw_l7_name_norm(names[i].text, kl, false, known) == l && !strcmp(known, s))
			return FW_L7_PINNED;
	}
	return FW_L7_NAME;
}

int fw_l7_nat_key_of(const struct sockaddr *peer, unsigned int local_port,
		     struct fw_l7_nat_key *key)
{
	memset(key, 0, sizeof(*key));
	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;

		key->client.b[10] = 0xff;
		key->client.b[11] = 0xff;
		memcpy(&key->client.b[12], &sin->sin_addr, 4);
		key->client_port = sin->sin_port;
	} else if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;

		memcpy(key->client.b, &sin6->sin6_addr, 16);
		key->client_port = sin6->sin6_port;
	} else {
		return -EAFNOSUPPORT;
	}
	key->proxy_port = htons((unsigned short)local_port);
	return 0;
}

bool fw_l7_nat_usable(const struct fw_l7_nat_key *key, const struct fw_l7_nat *nat,
		      enum fw_l7_kind kind)
{
	static const struct fw_ip none;

	return nat->kind == kind && nat->proxy_port == key->proxy_port && nat->subject &&
	       nat->orig_port && memcmp(&nat->orig_dst, &none, sizeof(none)) &&
	       nat->family < FW_FAM_MAX;
}

int fw_l7_upstream_text(const struct fw_l7_nat *nat, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (nat->family == FW_FAM_V4) {
		inet_ntop(AF_INET, &nat->orig_dst.b[12], a, sizeof(a));
		return snprintf(buf, size, "%s:%u", a, ntohs(nat->orig_port));
	}
	inet_ntop(AF_INET6, nat->orig_dst.b, a, sizeof(a));
	return snprintf(buf, size, "[%s]:%u", a, ntohs(nat->orig_port));
}
