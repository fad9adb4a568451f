/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Address and prefix parsing and formatting in fastwall's 128-bit form
 * (IPv4 v4-mapped, prefix lengths counted over 128 bits). Functions return
 * 0 or a negative errno. */
#ifndef FW_ADDR_H
#define FW_ADDR_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"

#define FW_ADDR_STRLEN 64 /* enough for any address "/plen" */

/* "192.0.2.1" or "2001:db8::1"; no prefix, no surrounding spaces. */
int fw_addr_parse(const char *s, struct fw_ip *ip, enum fw_family *fam);
/* "192.0.2.0/24", "2001:db8::/32" or a bare address (full-length prefix).
 * Host bits are cleared ("10.0.0.5/24" -> 10.0.0.0/24). plen is over 128
 * bits (96 + n for IPv4). */
int fw_prefix_parse(const char *s, struct fw_ip *net, __u32 *plen, enum fw_family *fam);
/* Formats as the family's text form ("192.0.2.1", "2001:db8::1"). */
const char *fw_addr_str(const struct fw_ip *ip, char *buf, size_t len);
/* Formats as "net/len" with the family's own length (24, not 120). */
const char *fw_prefix_str(const struct fw_ip *net, __u32 plen, char *buf, size_t len);
enum fw_family fw_addr_family(const struct fw_ip *ip);
void fw_addr_from_v4(struct fw_ip *ip, __be32 v4);
void fw_prefix_mask(struct fw_ip *ip, __u32 plen);
/* mask = the first plen bits set, the rest clear (all set past 128):
 * what fw_prefix_mask() keeps of an address. */
void fw_prefix_netmask(struct fw_ip *mask, __u32 plen);
/* out = addr & mask, word by word (out may be addr) */
void fw_ip_and(struct fw_ip *out, const struct fw_ip *addr, const struct fw_ip *mask);
/* net/plen contains addr (plen over 128 bits) */
bool fw_prefix_contains(const struct fw_ip *net, __u32 plen, const struct fw_ip *addr);

#endif /* FW_ADDR_H */
