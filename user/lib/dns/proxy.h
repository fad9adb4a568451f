/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The DNS proxy engine: listens on UDP and TCP, asks the caller's decide()
 * hook about every query, forwards allowed ones to the upstreams (failover,
 * timeouts, EDNS0, health probes) and hands each final answer to learn()
 * before it is sent, so the data plane holds the addresses before the
 * client reads them. Network only: policy and leases live in the hooks.
 * Functions return 0 or a negative errno. */
#ifndef FW_DNSPROXY_H
#define FW_DNSPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "common/prom.h"
#include "dns/wire.h"
#include "fastwall/abi.h"

#define FW_DNSP_MAX_UPSTREAMS 10
#define FW_DNSP_MAX_WORKERS   16

struct fw_dnsp_upstream {
	struct sockaddr_storage addr; /* AF_INET or AF_INET6 with port */
	socklen_t len;
};

struct fw_dnsp_config {
	__u16 port;	  /* listen port on every local address (host order) */
	bool ipv6;	  /* also listen on [::]:port (IPV6_V6ONLY); failure is a warning */
	bool loopback;	  /* bind 127.0.0.1 / ::1 only (tests, benchmarks) */
	unsigned workers; /* event-loop threads, each with its own sockets */
	struct fw_dnsp_upstream upstreams[FW_DNSP_MAX_UPSTREAMS]; /* tried in order */
	size_t nupstreams;
	__u64 timeout_ns;	  /* per upstream exchange (5 s) */
	__u64 probe_interval_ns;  /* health probe of each upstream; 0 = none */
	unsigned max_tcp_clients; /* open client TCP connections, all workers */
	/* ... per client address; when all are taken, a newcomer's connection
	 * evicts one of the address holding the most */
	unsigned max_tcp_per_client;
	/* a client TCP connection is closed when it has not completed a query
	 * (nor had one in flight, nor an answer written out) for this long
	 * since it opened or since its last answer: bytes of an unfinished
	 * query do not count */
	__u64 tcp_idle_ns;
	unsigned max_pending; /* outstanding upstream exchanges per worker */
	/* 0x20: each attempt sends the question name with every letter in a
	 * random case and takes only an answer that echoes that exact case;
	 * the client gets its own case back. Only for upstreams that echo the
	 * question as sent (an upstream that changes it is never answered). */
	bool case_randomize;
	__u32 ttl_cap;	 /* TTLs above it are lowered in forwarded answers */
	__u16 edns_size; /* advertised upstream when the client sent no OPT */
};

/* Defaults: the dns.* keys' (dns/proxy_keys.c: port 15353, two workers,
 * 5 s timeout, probes every 10 s, 256 TCP clients (16 per address) that
 * must complete a query every 10 s), IPv6 on, 4096 pending per worker (at
 * most 16384; each holds one upstream socket while in flight), TTL cap
 * 300 s, EDNS 4096. At start a zero field takes its default, except
 * probe_interval_ns (0 = no probes). */
void fw_dnsp_config_init(struct fw_dnsp_config *c);

/* decide() returns this to forward; any other value is the rcode to answer
 * with at once (FW_DNS_RCODE_NXDOMAIN, ...). */
#define FW_DNSP_FORWARD (-1)

struct fw_dnsp_hooks {
	void *ctx;
	/* A parsed query from client (v4-mapped for IPv4). *token is passed
	 * back to learn(). Called on worker threads: must be thread-safe. */
	int (*decide)(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		      __u64 *token);
	/* A final upstream answer (NOERROR or NXDOMAIN) to a forwarded
	 * query, TTLs already capped, as the client will read it; called
	 * before it is sent. Nonzero: the client gets SERVFAIL instead. */
	int (*learn)(void *ctx, const struct fw_ip *client, const struct fw_dns_query *q,
		     __u64 token, const struct fw_dns_answer *a);
	/* Once a round of a worker's loop, after its answers were sent
	 * (may be NULL): work learn() left for later. Thread-safe. */
	void (*flush)(void *ctx);
};

struct fw_dnsp_stats {
	__u64 queries_udp, queries_tcp;
	__u64 forwarded;	 /* sent to an upstream (first attempt) */
	__u64 answered;		 /* upstream answers relayed */
	__u64 refused_by_hook;	 /* decide() answered with an rcode */
	__u64 servfail;		 /* every upstream failed, or learn() failed */
	__u64 upstream_timeouts; /* exchanges that timed out */
	__u64 upstream_errors;	 /* rcodes other than NOERROR/NXDOMAIN, malformed answers */
	__u64 malformed;	 /* client messages dropped or answered FORMERR */
	__u64 truncated;	 /* UDP answers cut to the client's size (TC) */
	__u64 tcp_rejected;	 /* client connections over a limit, nobody to evict */
	__u64 tcp_evicted;	 /* client connections closed for a newcomer */
	__u64 overload;		 /* queries dropped at max_pending */
	__u64 rcodes[16];	 /* responses sent to clients, by rcode */
	/* upstream exchanges answered (any rcode, not timeouts), by the time
	 * from the attempt's send to its answer; per bucket, not cumulative */
	__u64 latency[FW_LAT_BUCKETS + 1]; /* by fw_lat_bucket */
	__u64 latency_sum_ns;
	__u64 probes_ok;     /* health probes an upstream answered */
	__u64 probes_failed; /* health probes that timed out or could not be sent */
};

struct fw_dnsp;

/* Binds the sockets (so a busy port fails here, not later) and starts the
 * workers. h is copied. */
int fw_dnsp_start(const struct fw_dnsp_config *c, const struct fw_dnsp_hooks *h,
		  struct fw_dnsp **out);
/* Stops the workers, closes every socket, frees p (NULL is fine). */
void fw_dnsp_stop(struct fw_dnsp *p);
/* Replaces the upstream list (config reload); in-flight exchanges finish
 * against the old list. */
int fw_dnsp_set_upstreams(struct fw_dnsp *p, const struct fw_dnsp_upstream *u, size_t n);
/* Replaces the TTL cap of forwarded answers (config reload: dns.lease.max);
 * 0 is ignored. */
void fw_dnsp_set_ttl_cap(struct fw_dnsp *p, __u32 cap);
void fw_dnsp_get_stats(struct fw_dnsp *p, struct fw_dnsp_stats *out);
/* Liveness (/healthz): the first worker (its index + 1) whose loop has not
 * turned for more than bound_ns, with *late_ns set; 0 when all turn (or
 * p is NULL). */
unsigned int fw_dnsp_workers_stuck(struct fw_dnsp *p, __u64 now_ns, __u64 bound_ns, __u64 *late_ns);
/* The port actually bound (useful when config port was 0). */
__u16 fw_dnsp_port(const struct fw_dnsp *p);
/* Upstream health as last probed or seen: true = answering. */
bool fw_dnsp_upstream_healthy(struct fw_dnsp *p, size_t i);
/* The current upstream list with each one's health, at most max: the
 * number copied into u and up (0 for NULL p). */
size_t fw_dnsp_upstream_health(struct fw_dnsp *p, struct fw_dnsp_upstream *u, bool *up, size_t max);

/* The engine's byte paths without a socket or a thread, for the fuzz
 * target: client is one UDP datagram from 10.42.0.2 or, with tcp, the byte
 * stream of one TCP connection (length-prefixed queries, pipelined), then
 * closed. up is what two upstreams say, as records of a 16-bit length
 * (bit 15 set: keep the message's id, else it is given the id the proxy
 * sent, and with case_randomize the question in the case sent when it
 * matches but for case) and the message; each record goes to the first
 * exchange in flight, in order; whatever is left waiting times out. hooks
 * as for
 * fw_dnsp_start (NULL: forward everything, learn nothing). out receives
 * every message the client would read, each after a 16-bit length; those
 * beyond outcap are dropped. */
int fw_dnsp_simulate(const struct fw_dnsp_hooks *h, bool case_randomize, const __u8 *client,
		     size_t clen, bool tcp, const __u8 *up, size_t ulen, __u8 *out, size_t outcap,
		     size_t *outlen);

/* "192.0.2.1", "192.0.2.1:5353", "2001:db8::1", "[2001:db8::1]:5353";
 * port 53 when absent. -EINVAL otherwise. */
int fw_dnsp_upstream_parse(const char *s, struct fw_dnsp_upstream *u);
/* An upstream as the configuration writes it: an address (IPv4 as
 * ::ffff:a.b.c.d) and a port. */
struct fw_dnsp_addr {
	struct fw_ip ip;
	__u16 port;
};
/* The proxy's upstreams: the ncfg configured ones (at most
 * FW_DNSP_MAX_UPSTREAMS), else the nameservers of resolv_conf
 * (fw_dnsp_upstreams_from_resolv). None at all is not an error: *n is 0,
 * every allowed query gets SERVFAIL, and a warning says so. */
void fw_dnsp_upstreams_build(const struct fw_dnsp_addr *cfg, size_t ncfg, const char *resolv_conf,
			     struct fw_dnsp_upstream *u, size_t *n);
/* The nameserver lines of a resolv.conf: non-loopback first (loopback ones
 * after them, in file order), at most cap (and at most 10). -ENOENT when
 * the file has none. */
int fw_dnsp_upstreams_from_resolv(const char *path, struct fw_dnsp_upstream *u, size_t cap,
				  size_t *n);
/* "192.0.2.1:53" / "[2001:db8::1]:53" */
void fw_dnsp_upstream_str(const struct fw_dnsp_upstream *u, char *buf, size_t len);

#endif /* FW_DNSPROXY_H */
