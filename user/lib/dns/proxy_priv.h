/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The DNS proxy's insides, shared by dns/proxy.c (workers, slots,
 * exchanges, client UDP, setup, the simulation), dns/tcp.c (client TCP
 * connections) and dns/upstream.c (upstream sockets and addresses). Not an
 * API: everything here runs on one worker's thread unless it says so. */
#ifndef FW_DNS_PROXY_PRIV_H
#define FW_DNS_PROXY_PRIV_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/loop.h"
#include "dns/proxy.h"

#define DNSP_BATCH	  32	 /* client datagrams per recvmmsg */
#define DNSP_UP_BATCH	  16	 /* upstream datagrams read per event, forgeries included */
#define DNSP_UP_BUF	  65536	 /* any UDP answer fits: clients may ask for 64k */
#define DNSP_TX		  64	 /* queued datagrams before a forced flush */
#define DNSP_TX_SMALL	  512	 /* built answers: header, question, OPT */
#define DNSP_QUERY_MAX	  2048	 /* larger client queries get FORMERR */
#define DNSP_TCP_IN	  2048	 /* first read buffer of a connection */
#define DNSP_TCP_FRAME	  65537	 /* length prefix + largest message */
#define DNSP_TCP_OUT_MAX  131072 /* queued answers for a slow reader */
#define DNSP_TCP_INFLIGHT 32	 /* pipelined queries per connection */
#define DNSP_TCP_BACKLOG  1024
#define DNSP_ACCEPT_PAUSE (100 * 1000000ULL) /* after EMFILE */
#define DNSP_ACCEPTS	  16		     /* per listener event, to stay fair to UDP */
#define DNSP_PENDING_MAX  16384		     /* each holds a descriptor while in flight */
#define DNSP_RND	  64		     /* random ids fetched per getrandom() */
#define DNSP_RCVBUF	  (4 << 20)
#define DNSP_BIND_TRIES	  64   /* port 0: UDP and TCP must agree on one port */
#define DNSP_FD_RESERVE	  1024 /* descriptors left to the rest of the process */
#define DNSP_PENDING_MIN  64

/* The upstream socket pool (dns/upstream.c): UDP attempts go out on
 * sockets connected to their upstream, each bound by the kernel to a
 * random port when it opens, shared by attempts with distinct ids, and
 * retired after a random number of attempts or an age, so the set of ports
 * in use keeps changing. */
#define DNSP_POOL	   256 /* sockets per upstream and worker, at most */
#define DNSP_POOL_PICK	   64  /* an attempt takes one of this many least recently used */
#define DNSP_POOL_USES	   64  /* attempts per socket: a random number in [USES/2, USES] */
#define DNSP_POOL_INFLIGHT 32  /* attempts in flight on one socket */
#define DNSP_POOL_AGE_NS   (2 * 1000000000ULL) /* retired this long after opening */
#define DNSP_POOL_SWEEP_NS (500 * 1000000ULL)  /* idle sockets past their age closed */

#define DNSP_DEF_PENDING  4096
#define DNSP_DEF_TTL_CAP  300 /* below the 360 s lease cap: clients ask again in time */
#define DNSP_UPSTREAM_STR 64

/* An upstream list as configured, shared by every worker. Health is per
 * list: any worker marks an upstream up or down, every worker reads it. */
struct dnsp_set {
	unsigned int refs; /* atomic */
	unsigned int gen;
	size_t n;
	struct fw_dnsp_upstream u[FW_DNSP_MAX_UPSTREAMS];
	bool down[FW_DNSP_MAX_UPSTREAMS]; /* atomic */
};

struct dnsp_worker;
struct dnsp_pool;
struct dnsp_slot;

/* A pooled upstream socket: UDP, connected to one upstream (the kernel
 * bound it to a random port then), carrying attempts with ids unique on
 * it. Retired (out of its pool) after max_uses attempts or its age, and
 * closed once its last attempt ends. */
struct dnsp_usock {
	int fd;
	struct dnsp_worker *w;
	struct fw_loop_watch *watch;
	struct dnsp_pool *pool; /* NULL: retired */
	unsigned int up;	/* its upstream: index in the set of ws */
	struct dnsp_wset *ws;
	unsigned int uses, max_uses, inflight;
	__u64 opened_ns;
	struct dnsp_slot *slots;  /* attempts in flight on it */
	struct dnsp_usock *dnext; /* w->udead: to close before the next wait */
};

/* One upstream's sockets in one worker: a ring, least recently used at
 * cursor. An attempt takes one of the DNSP_POOL_PICK at cursor at random
 * and puts it behind cursor, so a socket comes back only after
 * size - DNSP_POOL_PICK other attempts. Empty places are filled on use. */
struct dnsp_pool {
	unsigned int size, cursor;
	/* the socket of this round's attempts until the next flush, so that
	 * they leave in one sendmmsg and their answers come back in one read */
	struct dnsp_usock *round;
	__u64 round_seq;
	struct dnsp_usock *ring[];
};

/* A client socket: datagrams, or a TCP listener. */
struct dnsp_sock {
	bool listen;
	int fd;
	struct dnsp_worker *w;
	struct fw_loop_watch *watch;
};

/* A worker's view of one upstream set: how many of its exchanges still
 * use it (an old set lives until they are done). */
struct dnsp_wset {
	struct dnsp_set *set;
	bool probing[FW_DNSP_MAX_UPSTREAMS];
	unsigned int users;
	struct dnsp_wset *next;			       /* retired list */
	struct dnsp_pool *pool[FW_DNSP_MAX_UPSTREAMS]; /* NULL until used */
};

/* Where a UDP answer goes: the client's socket and address, and the local
 * address the query was sent to, which the answer must come from. */
struct dnsp_peer {
	int fd;
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} addr;
	socklen_t alen;
	int pi_family; /* 0: no pktinfo */
	union {
		struct in_pktinfo v4;
		struct in6_pktinfo v6;
	} pi;
};

enum dnsp_origin {
	DNSP_O_UDP,
	DNSP_O_TCP,
	DNSP_O_PROBE,
};

enum dnsp_io {
	DNSP_IO_NONE,
	DNSP_IO_CONNECT,
	DNSP_IO_WRITE,
	DNSP_IO_READ,
};

struct dnsp_conn;

/* One upstream exchange: a forwarded query, from the first attempt to the
 * answer the client gets, or a health probe. */
struct dnsp_slot {
	struct dnsp_worker *w;
	struct fw_loop_timer timer;	 /* this attempt's timeout */
	struct dnsp_slot *fnext;	 /* free slots */
	struct dnsp_slot *cprev, *cnext; /* the client connection's exchanges */
	struct dnsp_wset *ws;
	struct dnsp_conn *conn;
	__u64 token;
	__u32 index;
	int up_fd; /* this attempt's upstream socket: TCP */
	struct fw_loop_watch *up_watch;
	struct dnsp_usock *usock;	 /* this attempt's pooled upstream socket: UDP */
	struct dnsp_slot *uprev, *unext; /* the attempts in flight on usock */
	enum dnsp_origin origin;
	enum dnsp_io io;
	bool used, added_edns;
	__u16 up_id;
	__u16 climit; /* largest UDP answer the client takes */
	__u8 order[FW_DNSP_MAX_UPSTREAMS];
	__u8 norder, tried; /* asking order[tried] */
	__u64 try_ns;	    /* when order[tried] was asked (loop time) */
	struct fw_ip client;
	struct dnsp_peer peer;
	size_t io_off;
	__u8 lenbuf[2];
	__u8 *ans; /* TCP answer */
	size_t ans_len;
	size_t qlen;
	struct fw_dns_query q;
	/* which bytes of the question name the client sent in upper case:
	 * with case_randomize the name goes upstream in a random case and
	 * is given back to the client as it was */
	__u8 qupper[(FW_DNS_NAME_MAX + 2 + 7) / 8];
	/* the query as sent upstream, after a 2-byte TCP length prefix */
	__u8 qbuf[2 + DNSP_QUERY_MAX + FW_DNS_OPT_LEN];
};

struct dnsp_conn {
	int fd;
	struct dnsp_worker *w;
	struct fw_loop_watch *watch;
	struct fw_loop_timer idle; /* fires at last + tcp_idle_ns, or later */
	unsigned int ce;	   /* its client's entry in fw_dnsp.tcpc */
	bool closing, paused, eof, want_out, resume;
	struct dnsp_conn *iprev, *inext; /* every open connection, least recently active first */
	struct dnsp_conn *dnext;	 /* closing list */
	struct dnsp_conn *rnext;	 /* resume list */
	__u64 last;			 /* opened, last complete query or answer written */
	struct fw_ip client;
	struct dnsp_slot *pending;
	unsigned int npending;
	__u8 *in;
	size_t in_len, in_cap;
	__u8 *out;
	size_t out_off, out_len, out_cap;
};

union dnsp_ctl {
	size_t align; /* of struct cmsghdr, which has a flexible array member */
	char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
};
_Static_assert(_Alignof(struct cmsghdr) <= _Alignof(size_t), "control buffers misaligned");

struct dnsp_tx {
	union dnsp_ctl ctl;
	struct dnsp_peer peer;
	int fd;
	__u8 own[DNSP_TX_SMALL];
};

struct dnsp_worker {
	struct fw_dnsp *p;
	unsigned int idx;
	pthread_t thread;
	bool started;
	struct fw_loop *loop;
	struct dnsp_sock udp4, udp6, tcp4, tcp6;

	struct dnsp_wset *ws; /* current upstream set */
	struct dnsp_wset *retired;
	unsigned int gen;

	struct dnsp_slot *slots, *free_slots;
	unsigned int nslots;
	struct dnsp_conn *ihead, *itail, *closing, *resume;
	struct fw_loop_timer probe_timer;  /* worker 0: the health probes */
	struct fw_loop_timer accept_timer; /* listeners paused (out of fds) until it runs */
	__u16 rnd[DNSP_RND];
	unsigned int nrnd;

	struct mmsghdr rxm[DNSP_BATCH];
	struct iovec rxv[DNSP_BATCH];
	struct dnsp_peer rxp[DNSP_BATCH];
	union dnsp_ctl rxc[DNSP_BATCH];
	__u8 *rxb;
	__u8 *urxb; /* one upstream datagram (the simulation) */

	/* upstream sockets: answers read DNSP_UP_BATCH at a time */
	unsigned int pool_size;
	struct dnsp_usock *udead;
	struct fw_loop_timer pool_timer;
	struct mmsghdr uprm[DNSP_UP_BATCH];
	struct iovec uprv[DNSP_UP_BATCH];
	struct sockaddr_storage upfrom[DNSP_UP_BATCH];
	__u8 *uprxb;

	unsigned int ntx;
	__u64 tx_seq; /* flushes so far */
	struct mmsghdr txm[DNSP_TX];
	struct iovec txv[DNSP_TX];
	struct dnsp_tx tx[DNSP_TX];

	struct fw_dns_answer ans;
	struct fw_dnsp_stats st; /* written by this worker only */
};

/* fw_dnsp_simulate: what would be sent to clients, framed as on TCP */
struct dnsp_sim {
	__u8 *out;
	size_t cap, len;
	__u16 next_id;
};

struct fw_dnsp {
	struct fw_dnsp_config cfg;
	struct dnsp_sim *sim; /* NULL but in fw_dnsp_simulate: no sockets */
	struct fw_dnsp_hooks hooks;
	__u16 port;
	bool v6;
	pthread_mutex_t tcp_lock; /* guards tcp_clients and tcpc */
	unsigned int tcp_clients; /* open client connections, all workers */
	/* open connections per client address, all workers: one entry per
	 * address with n > 0, at most max_tcp_clients of them; found by a
	 * scan (accept and close are the rare path) */
	struct dnsp_tcpc {
		struct fw_ip ip;
		unsigned int n;
	} * tcpc;
	unsigned int gen;     /* atomic: generation of set */
	pthread_mutex_t lock; /* guards set */
	struct dnsp_set *set;
	unsigned int nworkers;
	struct dnsp_worker *workers[FW_DNSP_MAX_WORKERS];
};

/* The loop's time of this round (a simulation sets it). */
static inline __u64 dnsp_now(const struct dnsp_worker *w)
{
	return fw_loop_now(w->loop);
}

#define DNSP_COUNT(w, f) __atomic_store_n(&(w)->st.f, (w)->st.f + 1, __ATOMIC_RELAXED)

static inline __u16 get16(const __u8 *b)
{
	return (__u16)(b[0] << 8 | b[1]);
}

static inline void put16(__u8 *b, __u16 v)
{
	b[0] = v >> 8;
	b[1] = v & 0xff;
}

enum dnsp_verdict {
	DNSP_WAIT, /* not the answer: keep waiting */
	DNSP_NEXT, /* this upstream failed: ask the next */
	DNSP_DONE, /* the client was answered (or the probe is over) */
};

struct dnsp_src {
	enum dnsp_origin origin;
	const struct dnsp_peer *peer; /* UDP */
	struct dnsp_conn *conn;	      /* TCP */
	struct fw_ip client;
};

/* dns/proxy.c */
int dnsp_rand16(struct dnsp_worker *w, __u16 *out);
void dnsp_tx_add(struct dnsp_worker *w, int fd, const struct dnsp_peer *to, const __u8 *buf,
		 size_t len, bool copy);
void dnsp_mark(struct dnsp_wset *ws, unsigned int i, bool up);
void dnsp_slot_put(struct dnsp_worker *w, struct dnsp_slot *s);
void dnsp_sim_put(struct dnsp_sim *sim, const __u8 *msg, size_t len);
void dnsp_tx_flush(struct dnsp_worker *w);
void dnsp_exch_failover(struct dnsp_worker *w, struct dnsp_slot *s);
enum dnsp_verdict dnsp_exch_answer(struct dnsp_worker *w, struct dnsp_slot *s, __u8 *msg,
				   size_t len, size_t cap);
void dnsp_exch_verdict(struct dnsp_worker *w, struct dnsp_slot *s, enum dnsp_verdict v);
void dnsp_query(struct dnsp_worker *w, const struct dnsp_src *src, __u8 *msg, size_t len);
bool dnsp_client_ip(const struct dnsp_peer *pe, struct fw_ip *ip);
/* Who a query is from, by the local address it arrived on (local; NULL
 * when unknown): one in 127.254.0.0/16 is a process sandbox's proxy
 * address, and client becomes it; a client address in that range
 * arriving elsewhere becomes 127.0.0.1, no subject's. */
void dnsp_attribute(const struct sockaddr *local, socklen_t len, struct fw_ip *client);

/* dns/tcp.c */
void dnsp_conn_events(struct dnsp_worker *w, struct dnsp_conn *c);
void dnsp_conn_send(struct dnsp_worker *w, struct dnsp_conn *c, const __u8 *msg, size_t len);
void dnsp_conn_kill(struct dnsp_worker *w, struct dnsp_conn *c);
void dnsp_conn_parse(struct dnsp_worker *w, struct dnsp_conn *c);
__u64 dnsp_accept_resume(struct fw_loop *l, struct fw_loop_timer *t, void *ctx);
__u64 dnsp_conn_idle(struct fw_loop *l, struct fw_loop_timer *t, void *ctx);
int dnsp_admit(struct dnsp_worker *w, struct dnsp_conn *c);
void dnsp_accept_event(struct dnsp_worker *w, struct dnsp_sock *sk);

/* dns/upstream.c */
bool dnsp_udp_up_datagram(struct dnsp_worker *w, struct dnsp_slot *s, __u8 *msg, size_t n,
			  const struct sockaddr_storage *from, socklen_t fromlen, int flags);
/* Sends s's attempt to upstream i on a pooled socket, giving s->up_id a
 * new value if another attempt on that socket has it. */
int dnsp_pool_send(struct dnsp_worker *w, struct dnsp_slot *s, unsigned int i);
/* s's attempt is over: off its socket. */
void dnsp_pool_detach(struct dnsp_worker *w, struct dnsp_slot *s);
void dnsp_pool_free(struct dnsp_worker *w, struct dnsp_pool *pool);
/* Closes the sockets that are done (before the wait). */
void dnsp_pool_reap(struct dnsp_worker *w);
__u64 dnsp_pool_sweep(struct fw_loop *l, struct fw_loop_timer *t, void *ctx);
void dnsp_tcp_up_answer(struct dnsp_worker *w, struct dnsp_slot *s);
void dnsp_up_watch(struct fw_loop *l, int fd, __u32 events, void *ctx);

#endif /* FW_DNS_PROXY_PRIV_H */
