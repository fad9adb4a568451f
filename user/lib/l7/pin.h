/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The layer-7 proxy's name rules, in plain C for the nginx module in
 * egress/ and the unit tests: how a TLS server name or an HTTP Host is
 * normalised, which is no name at all (an address), and whether it is one
 * of the names that taught the original destination. Also the nat key of
 * an accepted connection and the upstream text of a nat entry. */
#ifndef FW_L7_PIN_H
#define FW_L7_PIN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "fastwall/abi.h"
#include "fastwall/reasons.h"

/* "[2001:db8::1]:65535" and its NUL */
#define FW_L7_UPSTREAM_MAX 48

/* Normalises name[0..len) into out (FW_LEASE_NAME_SZ bytes): ASCII lower
 * case, one trailing dot dropped and, for a Host (is_host), the port
 * (":443", after a bracketed IPv6 address too). Returns the length (0:
 * nothing was left), -ENAMETOOLONG past 253 characters, -EINVAL for a
 * byte no name holds (a NUL, a control character, a space, a '/'). */
int fw_l7_name_norm(const char *name, size_t len, bool is_host, char *out);

/* Whether a normalised name is an address: dotted IPv4, IPv6, or a
 * bracketed IPv6 (a Host's form). */
bool fw_l7_name_is_addr(const char *norm);

/* The verdict on name[0..len) against the n names in names (as
 * fastwall_names holds them, normalised here too): FW_L7_PINNED when it
 * is one of them, FW_L7_NO_NAME when empty or an address, else
 * FW_L7_NAME. norm (FW_LEASE_NAME_SZ bytes, may be NULL) gets the
 * normalised name, cut to fit. */
enum fw_l7_reason fw_l7_name_verdict(const char *name, size_t len, bool is_host,
				     const struct fw_lease_name *names, unsigned int n, char *norm);

/* The fastwall_l7_nat key of a connection the proxy accepted from peer
 * (AF_INET or AF_INET6) on local_port (host order): 0, or -EAFNOSUPPORT. */
int fw_l7_nat_key_of(const struct sockaddr *peer, unsigned int local_port,
		     struct fw_l7_nat_key *key);

/* Whether a nat entry lets the proxy serve a connection it accepted on
 * key's proxy port for kind: the entry is of that kind and port and
 * names a subject and a destination. */
bool fw_l7_nat_usable(const struct fw_l7_nat_key *key, const struct fw_l7_nat *nat,
		      enum fw_l7_kind kind);

/* "a.b.c.d:port" or "[v6]:port" of the entry's original destination into
 * buf (FW_L7_UPSTREAM_MAX bytes): the length. */
int fw_l7_upstream_text(const struct fw_l7_nat *nat, char *buf, size_t size);

#endif /* FW_L7_PIN_H */
