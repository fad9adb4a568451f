/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Verdict reasons, one table: the enum, the counter layout, the mask the
 * programs test for pass or drop, and (userspace) the names the CLI and
 * the logs print and the docs table. Compiled by the BPF programs and by
 * userspace; included through fastwall/abi.h. */
#ifndef FASTWALL_REASONS_H
#define FASTWALL_REASONS_H

#define FW_VERDICT_PASS 0
#define FW_VERDICT_DROP 1

/* X(identifier, number, verdict, name, meaning). The number is the
 * counter slot in the pinned maps and the reason in a deny event: it is
 * ABI, never changes and is never reused; a new reason takes the next
 * free number. Whether a reason passes or drops is its verdict here, not
 * where it sits. */
#define FW_REASONS(X)                                                                              \
	X(FW_PASS_ALLOW_CIDR, 0, FW_VERDICT_PASS, "allow-cidr", "destination in an allow CIDR")    \
	X(FW_PASS_LEARNED, 1, FW_VERDICT_PASS, "learned",                                          \
	  "DNS-learned destination with a live lease")                                             \
	X(FW_PASS_DEFAULT, 2, FW_VERDICT_PASS, "default-allow", "no rule matched, default allow")  \
	X(FW_PASS_DNS_LOCAL, 3, FW_VERDICT_PASS, "dns-local",                                      \
	  "DNS (53) to the gateway or a pod-local address")                                        \
	X(FW_PASS_DNS_PROXY, 4, FW_VERDICT_PASS, "dns-proxy",                                      \
	  "DNS redirected to fastwalld's DNS proxy")                                               \
	X(FW_PASS_POD_LOCAL, 5, FW_VERDICT_PASS, "pod-local-allowed",                              \
	  "a configured `local_ports` entry")                                                      \
	X(FW_PASS_POD_REPLY, 6, FW_VERDICT_PASS, "pod-reply",                                      \
	  "reply on a flow the pod opened into the sandbox")                                       \
	X(FW_PASS_NEIGH, 7, FW_VERDICT_PASS, "neighbour", "ARP, IPv6 ND (hop limit 255), MLD")     \
	X(FW_PASS_FRAGMENT, 8, FW_VERDICT_PASS, "fragment", "later fragment of a passed datagram") \
	X(FW_DROP_MALFORMED, 9, FW_VERDICT_DROP, "malformed",                                      \
	  "truncated or inconsistent headers, two VLAN tags")                                      \
	X(FW_DROP_ETHERTYPE, 10, FW_VERDICT_DROP, "ethertype", "neither IPv4, IPv6 nor ARP")       \
	X(FW_DROP_FRAGMENT, 11, FW_VERDICT_DROP, "unknown-fragment",                               \
	  "later fragment whose first fragment did not pass")                                      \
	X(FW_DROP_UNKNOWN_SOURCE, 12, FW_VERDICT_DROP, "unknown-source",                           \
	  "source address belongs to no subject")                                                  \
	X(FW_DROP_DENYING, 13, FW_VERDICT_DROP, "denying", "subject registered, not active")       \
	X(FW_DROP_SPOOF, 14, FW_VERDICT_DROP, "spoofed-source",                                    \
	  "subject's address on another interface, or a link-local address another port or the "   \
	  "pod owns")                                                                              \
	X(FW_DROP_SIBLING, 15, FW_VERDICT_DROP, "sibling",                                         \
	  "to another address in the private CIDR")                                                \
	X(FW_DROP_POD_LOCAL, 16, FW_VERDICT_DROP, "pod-local",                                     \
	  "non-DNS to the gateway or a pod-local address (a process sandbox: TCP to the layer-7 "  \
	  "proxy's port on loopback)")                                                             \
	X(FW_DROP_DOT, 17, FW_VERDICT_DROP, "dns-over-tls", "TCP/UDP 853")                         \
	X(FW_DROP_DOH, 18, FW_VERDICT_DROP, "dns-over-https",                                      \
	  "TCP 443 to the DoH blocklist, or any in strict mode")                                   \
	X(FW_DROP_DENY_CIDR, 19, FW_VERDICT_DROP, "deny-cidr", "destination in a deny CIDR")       \
	X(FW_DROP_LEASE_EXPIRED, 20, FW_VERDICT_DROP, "lease-expired",                             \
	  "learned destination whose lease ran out")                                               \
	X(FW_DROP_DEFAULT_DENY, 21, FW_VERDICT_DROP, "default-deny",                               \
	  "no rule matched, default deny")                                                         \
	X(FW_DROP_NO_POLICY, 22, FW_VERDICT_DROP, "no-policy",                                     \
	  "active subject without a rule set (fail closed)")                                       \
	X(FW_DROP_ROGUE_ND, 23, FW_VERDICT_DROP, "rogue-nd",                                       \
	  "router advertisement or redirect from a sandbox")                                       \
	X(FW_DROP_MAC_SPOOF, 24, FW_VERDICT_DROP, "spoofed-mac",                                   \
	  "Ethernet source (or ARP sender hardware address, or ND link-layer address option) is "  \
	  "not the port's bound MAC")                                                              \
	X(FW_DROP_ND_TARGET, 25, FW_VERDICT_DROP, "nd-destination",                                \
	  "RS/NS/NA to a destination neighbour discovery never uses (off-link, denied, a "         \
	  "sibling's global address, a group other than solicited-node, all-nodes, "               \
	  "all-routers), an NA from or for `::`, or a second new link-local address from one "     \
	  "port (MLD off `ff02::/16` goes to the policy)")                                         \
	X(FW_DROP_FRAG_HEADER, 26, FW_VERDICT_DROP, "fragment-header",                             \
	  "first fragment that does not hold its complete header chain and transport header, a "   \
	  "later fragment overlapping them, or a second fragment header")                          \
	X(FW_DROP_V4MAPPED, 27, FW_VERDICT_DROP, "v4-mapped",                                      \
	  "IPv6 packet whose source or destination is v4-mapped (`::ffff:0:0/96`)")                \
	X(FW_DROP_LEARNED_PORT, 28, FW_VERDICT_DROP, "learned-port",                               \
	  "learned destination, port outside the `ports` of the rules that taught it (or no "      \
	  "TCP/UDP port at all)")                                                                  \
	X(FW_DROP_SOCKET_TYPE, 29, FW_VERDICT_DROP, "socket-type",                                 \
	  "raw IP socket (`SOCK_RAW`) in a process sandbox (packet sockets need `CAP_NET_RAW`, "   \
	  "which `fastwall run` drops)")                                                           \
	X(FW_DROP_ALIAS_SOURCE, 30, FW_VERDICT_DROP, "alias-source",                               \
	  "a process sandbox addressing a DNS proxy address of fastwall's (`127.254.0.0/16`) "     \
	  "itself, or binding or sending from one that is not its own")                            \
	X(FW_DROP_DNS_V6_SENDMSG, 31, FW_VERDICT_DROP, "dns-v6-sendto",                            \
	  "DNS of a process sandbox sent with `sendto()` to an IPv6 resolver, which the kernel "   \
	  "cannot redirect to the proxy (`connect()` first works)")                                \
	X(FW_PASS_GUARD_TRUSTED, 32, FW_VERDICT_PASS, "guard-trusted",                             \
	  "port guard: TCP/UDP to a guarded port from a trusted source")                           \
	X(FW_DROP_GUARD_UNTRUSTED, 33, FW_VERDICT_DROP, "guard-untrusted",                         \
	  "port guard: TCP/UDP to a guarded port from a source outside the trusted CIDRs")         \
	X(FW_DROP_GUARD_FRAGMENT, 34, FW_VERDICT_DROP, "guard-fragment",                           \
	  "port guard: later fragment whose first fragment the guard did not pass, or that "       \
	  "overlaps its headers")                                                                  \
	X(FW_DROP_GUARD_MALFORMED, 35, FW_VERDICT_DROP, "guard-malformed",                         \
	  "port guard: truncated or inconsistent IP or TCP/UDP headers (the port can't be "        \
	  "known), two VLAN tags, too many IPv6 extension headers")                                \
	X(FW_DROP_SOURCE_ROUTE, 36, FW_VERDICT_DROP, "source-route",                               \
	  "a process sandbox's packet whose source route (IPv4 option, IPv6 routing header) "      \
	  "names an address its policy denies or more than fastwall reads, or with IPv4 "          \
	  "options other than one source route")                                                   \
	X(FW_DROP_SOCKOPT, 37, FW_VERDICT_DROP, "socket-option",                                   \
	  "a process sandbox setting a socket option that puts IP options or IPv6 extension "      \
	  "headers on its packets (`IP_OPTIONS`, `IPV6_RTHDR`, `IPV6_HOPOPTS`, `IPV6_DSTOPTS`, "   \
	  "...)")                                                                                  \
	X(FW_PASS_L7_PROXY, 38, FW_VERDICT_PASS, "l7-proxy",                                       \
	  "TCP to a pinned port of a destination a name taught, sent to the layer-7 proxy, which " \
	  "checks the TLS server name or HTTP `Host` against the names that taught it")            \
	X(FW_DROP_L7_PROXY_DOWN, 39, FW_VERDICT_DROP, "l7-proxy-down",                             \
	  "connection to a pinned port while the layer-7 proxy is not accepting (or the subject "  \
	  "has no gateway of the family to reach it at): never sent past it")                      \
	X(FW_DROP_L7_FULL, 40, FW_VERDICT_DROP, "l7-full",                                         \
	  "connection to a pinned port when the proxy's connection table (`fastwall_l7_nat`) is "  \
	  "full, or the subject holds its share of it (`max_connections_per_subject` entries)")    \
	X(FW_DROP_L7_QUIC, 41, FW_VERDICT_DROP, "l7-quic",                                         \
	  "UDP to a pinned TLS port (QUIC), which the proxy cannot read: clients fall back to "    \
	  "TCP")                                                                                   \
	X(FW_DROP_L7_UNTRACKED, 42, FW_VERDICT_DROP, "l7-untracked",                               \
	  "TCP segment to a pinned port of a connection the proxy's table does not hold (opened "  \
	  "before pinning, or expired)")                                                           \
	X(FW_DROP_L7_PORT_REUSE, 43, FW_VERDICT_DROP, "l7-port-reuse",                             \
	  "SYN to a pinned port from a source port whose earlier pinned connection, to another "   \
	  "destination, is still open: the proxy could not tell them apart")                       \
	X(FW_DROP_BW_HORIZON, 44, FW_VERDICT_DROP, "bandwidth-horizon",                            \
	  "bandwidth (edt): the subject's packet would leave later than `bandwidth.horizon` from " \
	  "now at its rate")                                                                       \
	X(FW_DROP_BW_POLICE, 45, FW_VERDICT_DROP, "bandwidth-police",                              \
	  "bandwidth (police): the subject sent more than its burst above its rate")

/* Counter slots in fastwall_stats_v2 and fw_subject_stats: room for new
 * reasons without a new map layout. */
#define FW_REASON_SLOTS 64

/* These are not TC return codes; the programs map them to TC_ACT_OK and
 * TC_ACT_SHOT. FW_REASON_MAX is one past the highest number (the list is
 * kept in numeric order; the assertion below holds it to that). */
#define FW_REASON_ENUM_(id, num, verdict, name, meaning) id = num,
enum fw_reason {
	FW_REASONS(FW_REASON_ENUM_) FW_REASON_MAX,
};
#undef FW_REASON_ENUM_

/* Bit n set: reason n passes. Every other slot, a reason not defined
 * included, drops: FW_REASON_DROP_MASK is its complement, so an unknown
 * number fails closed. */
#define FW_REASON_PASS_BIT_(id, num, verdict, name, meaning)                                       \
	| ((verdict) == FW_VERDICT_PASS ? 1ull << (num) : 0ull)
#define FW_REASON_PASS_MASK (0ull FW_REASONS(FW_REASON_PASS_BIT_))
#define FW_REASON_DROP_MASK (~FW_REASON_PASS_MASK)

/* 1 when reason r drops the packet: a bit test, one instruction in BPF */
#define FW_REASON_DROPS(r) ((r) >= FW_REASON_SLOTS || ((FW_REASON_DROP_MASK >> (r)) & 1))

#define FW_REASON_BELOW_MAX_(id, num, verdict, name, meaning) +((num) >= FW_REASON_MAX)
#define FW_REASON_IN_SLOTS_(id, num, verdict, name, meaning)  +((num) >= FW_REASON_SLOTS)
_Static_assert(0 FW_REASONS(FW_REASON_BELOW_MAX_) == 0, "reasons out of numeric order");
_Static_assert(0 FW_REASONS(FW_REASON_IN_SLOTS_) == 0, "a reason beyond FW_REASON_SLOTS");
_Static_assert(FW_REASON_MAX <= FW_REASON_SLOTS, "FW_REASON_SLOTS");

/* The DNS proxy's verdicts on a query, a table of the same form:
 * X(identifier, verdict, name, meaning). They are counted by fastwalld,
 * not in the pinned maps, so they have no slot number; the name is what
 * the audit trail, the deny log and the monitor print. */
#define FW_DNS_REASONS(X)                                                                          \
	X(FW_DNS_UNKNOWN_SOURCE, FW_VERDICT_DROP, "dns-unknown-source",                            \
	  "query from an address that belongs to no subject (answered NXDOMAIN)")                  \
	X(FW_DNS_DENYING, FW_VERDICT_DROP, "dns-denying",                                          \
	  "query of a subject registered, not active (answered NXDOMAIN)")                         \
	X(FW_DNS_DENIED_NAME, FW_VERDICT_DROP, "dns-denied-name",                                  \
	  "name the subject's policy does not allow (answered NXDOMAIN)")                          \
	X(FW_DNS_ALLOWED_NAME, FW_VERDICT_PASS, "dns-allowed-name",                                \
	  "name the subject's policy allows: forwarded, the answer's addresses learned")

#define FW_DNS_REASON_ENUM_(id, verdict, name, meaning) id,
enum fw_dns_reason {
	FW_DNS_REASONS(FW_DNS_REASON_ENUM_) FW_DNS_REASON_MAX,
};
#undef FW_DNS_REASON_ENUM_

/* The layer-7 proxy's verdicts on a connection (and, for HTTP, on each
 * request), a table of the same form: counted by fastwalld from the
 * proxy's reports (fastwall/l7.h), not in the pinned maps. */
#define FW_L7_REASONS(X)                                                                           \
	X(FW_L7_PINNED, FW_VERDICT_PASS, "l7-pinned",                                              \
	  "the TLS server name (or HTTP `Host`) is one of the names that taught the original "     \
	  "destination to this subject, with a live lease: connected to that address only")        \
	X(FW_L7_NAME, FW_VERDICT_DROP, "l7-name",                                                  \
	  "server name or `Host` that did not teach the original destination to this subject, "    \
	  "or is no longer allowed")                                                               \
	X(FW_L7_NO_NAME, FW_VERDICT_DROP, "l7-no-name",                                            \
	  "ClientHello without a server name, HTTP request without `Host`, or an address as the "  \
	  "name")                                                                                  \
	X(FW_L7_ECH, FW_VERDICT_DROP, "l7-ech",                                                    \
	  "encrypted ClientHello (`encrypted_client_hello` extension): the real name is hidden")   \
	X(FW_L7_BAD_HELLO, FW_VERDICT_DROP, "l7-bad-hello",                                        \
	  "not a TLS ClientHello, a malformed or oversized one, or one with two server names")     \
	X(FW_L7_LEASE, FW_VERDICT_DROP, "l7-lease",                                                \
	  "the original destination's lease ran out (or never was) when the proxy checked it")     \
	X(FW_L7_UNTRACKED, FW_VERDICT_DROP, "l7-untracked-peer",                                   \
	  "connection to the proxy that no redirect recorded (a sandbox addressing the proxy "     \
	  "itself)")                                                                               \
	X(FW_L7_LIMIT, FW_VERDICT_DROP, "l7-limit",                                                \
	  "the subject holds as many proxied connections as `l7.subject_connections` allows")      \
	X(FW_L7_UPSTREAM, FW_VERDICT_DROP, "l7-upstream-failed",                                   \
	  "pinned, but the original destination refused or did not answer")                        \
	X(FW_L7_INJECTED, FW_VERDICT_PASS, "l7-injected",                                          \
	  "a request on a terminated connection matched a binding of the subject's vault: its "    \
	  "credential was set and the request sent to the original destination")                   \
	X(FW_L7_MISDIRECTED, FW_VERDICT_DROP, "l7-misdirected",                                    \
	  "a request on a terminated connection whose `Host` is not the connection's server name " \
	  "(421)")                                                                                 \
	X(FW_L7_UPSTREAM_CERT, FW_VERDICT_DROP, "l7-upstream-cert",                                \
	  "the original destination's certificate did not verify for the server name (502): "      \
	  "nothing was sent to it")                                                                \
	X(FW_L7_NO_CERT, FW_VERDICT_DROP, "l7-no-cert",                                            \
	  "a handshake to terminate for a name no binding of the subject's vault names, or the "   \
	  "proxy could not mint its certificate")

#define FW_L7_REASON_ENUM_(id, verdict, name, meaning) id,
enum fw_l7_reason {
	FW_L7_REASONS(FW_L7_REASON_ENUM_) FW_L7_REASON_MAX,
};
#undef FW_L7_REASON_ENUM_

/* the proxy's verdicts that let the connection or request through */
#define FW_L7_REASON_PASSES(r) ((r) == FW_L7_PINNED || (r) == FW_L7_INJECTED)

#endif /* FASTWALL_REASONS_H */
