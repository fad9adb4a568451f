// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* uring_probe: sends and connects through io_uring from within a process
 * sandbox, and counts on the far side what arrived. The cgroup hooks judge
 * a connect or sendmsg by the calling task's cgroup; io_uring may run the
 * call from another task: an io-wq worker (IOSQE_ASYNC, or a blocking
 * call punted there) or the SQPOLL thread. Before 5.12 both are kernel
 * threads in the root cgroup; since, io threads of the submitter.
 *
 *   uring_probe send [--sqpoll] [--wait MS] ADDR4 ADDR6 PORT
 *       six cases, each to its own port PORT+i, through one ring: an
 *       unconnected UDP sendmsg (v4, v6), a TCP connect (v4, v6), a UDP
 *       connect then a sendmsg on the connected socket (v4, v6). Each
 *       request carries IOSQE_ASYNC (a worker runs it); with --sqpoll the
 *       ring is an SQPOLL ring and the requests are plain (the SQ thread
 *       issues them). Prints one line per case:
 *         CASE port=N connect=RES send=RES
 *       RES is the CQE's result (a byte count, 0, an errno name), "-" for
 *       a request the case has not, "pending" for one not completed
 *       within --wait (default 2000 ms; a TCP connect whose SYN is dropped
 *       retries for minutes: the ring's end cancels it). With --from,
 *       the sockets are not made here but received on the unix socket
 *       PATH from a "pass" (printing "listening on PATH" first): run
 *       outside any sandbox, this is a task of no sandbox's cgroup using a
 *       sandbox's sockets, as an io-wq worker or SQPOLL thread is when it
 *       is a kernel thread (before 5.12; 5.10 stable until 5.10.162).
 *   uring_probe pass PATH
 *       makes the six sockets and passes them to "send --from PATH".
 *   uring_probe sockopts ADDR6
 *       the socket options that put a source route or other IP options on
 *       a socket's packets, which no process sandbox may set: a type 4
 *       routing header through ADDR6 (IPV6_RTHDR, open to any user) and
 *       a no-op IPv4 option (IP_OPTIONS, likewise); prints
 *         rthdr=RES ipopts=RES
 *       RES is 0 or the errno name.
 *   uring_probe capture --ports LO-HI [--ready FILE]
 *       listens on TCP and UDP [::]:LO..HI (so an allowed connect
 *       completes and a datagram is taken), and prints a line for each
 *       TCP SYN or UDP datagram this namespace receives for those ports,
 *       seen on a packet socket before any socket or firewall:
 *         arrived tcp|udp PORT
 *       Runs until killed; FILE is written once it listens.
 *
 * Raw system calls (no liburing): the guests of `make vmtest` run this
 * binary from the host's root. Files are registered and requests name
 * them by index, which SQPOLL needs before 5.11. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NCASES	   6
#define CANCEL_TAG 0x100 /* user_data of the cancel of request i: CANCEL_TAG + i */
#define NPORTS_MAX 64

enum kind { K_SEND, K_CONNECT_TCP, K_CONNECT_UDP };

static const struct probe_case {
	const char *name;
	int family;
	enum kind kind;
} cases[NCASES] = {
	{"sendmsg-udp4", AF_INET, K_SEND},	  {"sendmsg-udp6", AF_INET6, K_SEND},
	{"connect-tcp4", AF_INET, K_CONNECT_TCP}, {"connect-tcp6", AF_INET6, K_CONNECT_TCP},
	{"connect-udp4", AF_INET, K_CONNECT_UDP}, {"connect-udp6", AF_INET6, K_CONNECT_UDP},
};

struct ring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_flags, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	bool sqpoll;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: uring_probe send [--sqpoll] [--wait MS] [--from PATH] ADDR4 ADDR6 PORT\n"
		"       uring_probe pass PATH\n"
		"       uring_probe sockopts ADDR6\n"
		"       uring_probe capture --ports LO-HI [--ready FILE]\n");
	exit(2);
}

static int ring_setup(struct ring *r, bool sqpoll)
{
	struct io_uring_params p = {0};
	size_t sq_len, cq_len;
	void *sq, *cq;

	if (sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 2000;
	}
	r->sqpoll = sqpoll;
	r->fd = (int)syscall(__NR_io_uring_setup, 16, &p);
	if (r->fd < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			  IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			return -errno;
	}
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -errno;
	r->sq_head = (unsigned *)((char *)sq + p.sq_off.head);
	r->sq_tail = (unsigned *)((char *)sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)((char *)sq + p.sq_off.ring_mask);
	r->sq_flags = (unsigned *)((char *)sq + p.sq_off.flags);
	r->sq_array = (unsigned *)((char *)sq + p.sq_off.array);
	r->cq_head = (unsigned *)((char *)cq + p.cq_off.head);
	r->cq_tail = (unsigned *)((char *)cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)((char *)cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);
	return 0;
}

/* one request, submitted at once: the file is index FILE of the
 * registered table */
static int ring_submit(struct ring *r, __u8 op, int file, const void *addr, __u32 len, __u64 off,
		       __u64 user_data)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = file;
	/* a cancel names its request in addr and no file (5.10 refuses a
	 * fixed one) */
	if (op == IORING_OP_ASYNC_CANCEL)
		sqe->flags = 0;
	else
		sqe->flags = IOSQE_FIXED_FILE | (r->sqpoll ? 0 : IOSQE_ASYNC);
	sqe->addr = (__u64)(unsigned long)addr;
	sqe->len = len;
	sqe->off = off;
	sqe->user_data = user_data;
	r->sq_array[idx] = idx;
	atomic_store_explicit((_Atomic unsigned *)r->sq_tail, tail + 1, memory_order_release);
	if (r->sqpoll) {
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit((_Atomic unsigned *)r->sq_flags, memory_order_relaxed) &
		    IORING_SQ_NEED_WAKEUP)
			if (syscall(__NR_io_uring_enter, r->fd, 0, 0, IORING_ENTER_SQ_WAKEUP, NULL,
				    0) < 0)
				return -errno;
		return 0;
	}
	if (syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) < 0)
		return -errno;
	return 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the result of request USER_DATA, waiting up to WAIT_MS; 1 and *res set
 * when it completed, 0 when not. CQEs of other requests (an earlier
 * case's pending connect completing late) are passed over. */
static int ring_wait(struct ring *r, __u64 user_data, long wait_ms, int *res)
{
	long deadline = now_ms() + wait_ms;
	struct timespec nap = {0, 5 * 1000 * 1000};

	for (;;) {
		unsigned head = *r->cq_head;
		unsigned tail =
			atomic_load_explicit((_Atomic unsigned *)r->cq_tail, memory_order_acquire);

		while (head != tail) {
			struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];
			bool mine = cqe->user_data == user_data;
			int got = cqe->res;

			head++;
			atomic_store_explicit((_Atomic unsigned *)r->cq_head, head,
					      memory_order_release);
			if (mine) {
				*res = got;
				return 1;
			}
		}
		if (now_ms() >= deadline)
			return 0;
		nanosleep(&nap, NULL);
	}
}

static const char *res_str(int res, char *buf, size_t len)
{
	if (res >= 0) {
		snprintf(buf, len, "%d", res);
		return buf;
	}
	switch (-res) {
	case EPERM:
		return "EPERM";
	case EACCES:
		return "EACCES";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ENETUNREACH:
		return "ENETUNREACH";
	case EHOSTUNREACH:
		return "EHOSTUNREACH";
	case ECANCELED:
		return "ECANCELED";
	case EINVAL:
		return "EINVAL";
	case EAGAIN:
		return "EAGAIN";
	case EINPROGRESS:
		return "EINPROGRESS";
	default:
		snprintf(buf, len, "errno%d", -res);
		return buf;
	}
}

/* the six sockets of the cases, in their order */
static int open_sockets(int *fds)
{
	for (int i = 0; i < NCASES; i++) {
		const struct probe_case *c = &cases[i];

		fds[i] = socket(c->family, c->kind == K_CONNECT_TCP ? SOCK_STREAM : SOCK_DGRAM, 0);
		if (fds[i] < 0) {
			fprintf(stderr, "uring_probe: can't open a socket for %s: %s\n", c->name,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int unix_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path)) {
		fprintf(stderr, "uring_probe: %s: path too long\n", path);
		return -1;
	}
	strcpy(a->sun_path, path);
	return 0;
}

/* pass PATH: the six sockets, made here, to the "send --from PATH" that
 * listens there (SCM_RIGHTS); returns once it has closed the connection */
static int cmd_pass(int argc, char **argv)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * NCASES)];
		struct cmsghdr align;
	} ctl;
	char one = 'x';
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm;
	struct sockaddr_un a;
	int fds[NCASES], u;

	if (argc != 1)
		usage();
	if (unix_addr(argv[0], &a) || open_sockets(fds))
		return 1;
	u = socket(AF_UNIX, SOCK_STREAM, 0);
	if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "uring_probe: can't connect to %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * NCASES);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * NCASES);
	if (sendmsg(u, &msg, 0) != 1) {
		fprintf(stderr, "uring_probe: can't pass the sockets: %s\n", strerror(errno));
		return 1;
	}
	(void)!read(u, &one, 1);
	return 0;
}

/* the six sockets from a "pass PATH" of another task (cgroup), through
 * the listening socket L; the connection is kept open */
static int recv_sockets(int l, int *fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * NCASES)];
		struct cmsghdr align;
	} ctl;
	char one;
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm;
	int c = accept(l, NULL, NULL);

	if (c < 0 || recvmsg(c, &msg, 0) != 1) {
		fprintf(stderr, "uring_probe: no sockets passed: %s\n", strerror(errno));
		return -1;
	}
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * NCASES)) {
		fprintf(stderr, "uring_probe: no sockets passed\n");
		return -1;
	}
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * NCASES);
	/* c stays open until this process ends: "pass", and with it the run
	 * and its subject, lasts as long */
	return 0;
}

static int cmd_send(int argc, char **argv)
{
	struct sockaddr_storage dst[NCASES];
	struct in_addr a4;
	struct in6_addr a6;
	struct msghdr msg[NCASES];
	struct iovec iov[NCASES];
	int fds[NCASES], i, err, port;
	long wait_ms = 2000;
	bool sqpoll = false;
	const char *from = NULL;
	int l = -1;
	bool pending[2 * NCASES] = {false};
	struct ring r;
	char payload[] = "uring_probe";

	while (argc > 0 && argv[0][0] == '-') {
		if (!strcmp(argv[0], "--sqpoll")) {
			sqpoll = true;
			argc--, argv++;
		} else if (!strcmp(argv[0], "--wait") && argc > 1) {
			wait_ms = atol(argv[1]);
			argc -= 2, argv += 2;
		} else if (!strcmp(argv[0], "--from") && argc > 1) {
			from = argv[1];
			argc -= 2, argv += 2;
		} else {
			usage();
		}
	}
	if (argc != 3 || inet_pton(AF_INET, argv[0], &a4) != 1 ||
	    inet_pton(AF_INET6, argv[1], &a6) != 1)
		usage();
	port = atoi(argv[2]);
	if (port <= 0 || port + NCASES > 65536)
		usage();

	err = ring_setup(&r, sqpoll);
	if (err) {
		fprintf(stderr, "uring_probe: can't set up an io_uring%s: %s\n",
			sqpoll ? " with SQPOLL" : "", strerror(-err));
		return 1;
	}
	if (from) {
		struct sockaddr_un a;

		l = socket(AF_UNIX, SOCK_STREAM, 0);
		if (l < 0 || unix_addr(from, &a) || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
		    listen(l, 1)) {
			fprintf(stderr, "uring_probe: can't listen on %s: %s\n", from,
				strerror(errno));
			return 1;
		}
		printf("listening on %s\n", from);
		fflush(stdout);
		if (recv_sockets(l, fds))
			return 1;
	} else if (open_sockets(fds)) {
		return 1;
	}
	for (i = 0; i < NCASES; i++) {
		const struct probe_case *c = &cases[i];

		memset(&dst[i], 0, sizeof(dst[i]));
		if (c->family == AF_INET) {
			struct sockaddr_in *s = (struct sockaddr_in *)&dst[i];

			s->sin_family = AF_INET;
			s->sin_addr = a4;
			s->sin_port = htons((unsigned short)(port + i));
		} else {
			struct sockaddr_in6 *s = (struct sockaddr_in6 *)&dst[i];

			s->sin6_family = AF_INET6;
			s->sin6_addr = a6;
			s->sin6_port = htons((unsigned short)(port + i));
		}
		iov[i].iov_base = payload;
		iov[i].iov_len = sizeof(payload);
		memset(&msg[i], 0, sizeof(msg[i]));
		msg[i].msg_iov = &iov[i];
		msg[i].msg_iovlen = 1;
		if (c->kind == K_SEND) {
			msg[i].msg_name = &dst[i];
			msg[i].msg_namelen = c->family == AF_INET ? sizeof(struct sockaddr_in)
								  : sizeof(struct sockaddr_in6);
		}
	}
	if (syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES, fds, NCASES) < 0) {
		fprintf(stderr, "uring_probe: can't register the sockets: %s\n", strerror(errno));
		return 1;
	}

	for (i = 0; i < NCASES; i++) {
		const struct probe_case *c = &cases[i];
		socklen_t alen = c->family == AF_INET ? sizeof(struct sockaddr_in)
						      : sizeof(struct sockaddr_in6);
		char b1[32], b2[32];
		const char *conn = "-", *send = "-";
		int res, done;

		if (c->kind != K_SEND) {
			/* IORING_OP_CONNECT: addr is the sockaddr, off its length */
			err = ring_submit(&r, IORING_OP_CONNECT, i, &dst[i], 0, alen, 2 * i);
			if (err)
				goto submit_failed;
			done = ring_wait(&r, 2 * i, wait_ms, &res);
			conn = done ? res_str(res, b1, sizeof(b1)) : "pending";
			pending[2 * i] = !done;
			if (!done || res < 0 || c->kind == K_CONNECT_TCP)
				goto report;
		}
		err = ring_submit(&r, IORING_OP_SENDMSG, i, &msg[i], 1, 0, 2 * i + 1);
		if (err)
			goto submit_failed;
		done = ring_wait(&r, 2 * i + 1, wait_ms, &res);
		send = done ? res_str(res, b2, sizeof(b2)) : "pending";
		pending[2 * i + 1] = !done;
	report:
		printf("%s port=%d connect=%s send=%s\n", c->name, port + i, conn, send);
		fflush(stdout);
	}
	/* a connect still pending would retransmit its SYN after this
	 * process, and its run, are gone (the ring is torn down later, in the
	 * kernel's time): a socket of no subject then, which nothing judges.
	 * The request is cancelled first and its end waited for: a connect
	 * the ring still holds is issued again when shutdown() wakes it
	 * (some kernels connect afresh then), and that new SYN's
	 * retransmission could leave after the run is gone. */
	for (i = 0; i < 2 * NCASES; i++) {
		int res;

		if (!pending[i])
			continue;
		char b[32];
		const char *how = "pending";

		if (ring_submit(&r, IORING_OP_ASYNC_CANCEL, -1, (void *)(unsigned long)i, 0, 0,
				CANCEL_TAG + i) == 0 &&
		    ring_wait(&r, (__u64)i, 2000, &res))
			how = res_str(res, b, sizeof(b));
		printf("cancelled %s %s: %s\n", cases[i / 2].name, i % 2 ? "send" : "connect", how);
	}
	fflush(stdout);
	for (i = 0; i < NCASES; i++)
		shutdown(fds[i], SHUT_RDWR);
	return 0;

submit_failed:
	fprintf(stderr, "uring_probe: can't submit to the ring: %s\n", strerror(-err));
	return 1;
}

/* the destination port of a TCP SYN or a UDP datagram in an IP packet
 * (a packet socket's SOCK_DGRAM view: from the network header), 0 for
 * anything else */
static int packet_port(const unsigned char *p, size_t len, const char **proto)
{
	size_t l4;
	int next;

	if (len >= sizeof(struct iphdr) && (p[0] >> 4) == 4) {
		const struct iphdr *ip = (const void *)p;

		l4 = ip->ihl * 4u;
		next = ip->protocol;
		if ((ntohs(ip->frag_off) & 0x1fff) != 0)
			return 0;
	} else if (len >= sizeof(struct ip6_hdr) && (p[0] >> 4) == 6) {
		l4 = sizeof(struct ip6_hdr);
		next = ((const struct ip6_hdr *)p)->ip6_nxt;
	} else {
		return 0;
	}
	if (next == IPPROTO_UDP && len >= l4 + sizeof(struct udphdr)) {
		*proto = "udp";
		return ntohs(((const struct udphdr *)(p + l4))->uh_dport);
	}
	if (next == IPPROTO_TCP && len >= l4 + sizeof(struct tcphdr)) {
		const struct tcphdr *th = (const void *)(p + l4);

		*proto = "tcp";
		return th->syn && !th->ack ? ntohs(th->dest) : 0;
	}
	return 0;
}

static int cmd_capture(int argc, char **argv)
{
	struct pollfd pfd[2 * NPORTS_MAX + 1];
	const char *ready = NULL;
	int lo = 0, hi = -1, n = 0, i, one = 1;

	while (argc > 1) {
		if (!strcmp(argv[0], "--ports")) {
			if (sscanf(argv[1], "%d-%d", &lo, &hi) != 2)
				usage();
		} else if (!strcmp(argv[0], "--ready")) {
			ready = argv[1];
		} else {
			usage();
		}
		argc -= 2, argv += 2;
	}
	if (argc != 0 || lo <= 0 || hi < lo || hi > 65535 || hi - lo >= NPORTS_MAX)
		usage();

	pfd[n].fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	if (pfd[n].fd < 0) {
		fprintf(stderr, "uring_probe: can't open a packet socket: %s\n", strerror(errno));
		return 1;
	}
	pfd[n++].events = POLLIN;
	for (i = lo; i <= hi; i++) {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6,
					 .sin6_port = htons((unsigned short)i),
					 .sin6_addr = IN6ADDR_ANY_INIT};
		int t = socket(AF_INET6, SOCK_STREAM, 0), u = socket(AF_INET6, SOCK_DGRAM, 0);

		if (t < 0 || u < 0)
			goto fail;
		setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(t, (struct sockaddr *)&a, sizeof(a)) || listen(t, 64) ||
		    bind(u, (struct sockaddr *)&a, sizeof(a)))
			goto fail;
		pfd[n].fd = t;
		pfd[n++].events = POLLIN;
		pfd[n].fd = u;
		pfd[n++].events = POLLIN;
	}
	if (ready) {
		int f = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (f < 0) {
			fprintf(stderr, "uring_probe: can't write %s: %s\n", ready,
				strerror(errno));
			return 1;
		}
		close(f);
	}
	for (;;) {
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "uring_probe: poll: %s\n", strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			unsigned char buf[2048];
			struct sockaddr_ll from;
			socklen_t flen = sizeof(from);
			const char *proto = "";
			ssize_t len;
			int port;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (i == 0) {
				len = recvfrom(pfd[i].fd, buf, sizeof(buf), 0,
					       (struct sockaddr *)&from, &flen);
				if (len <= 0 || from.sll_pkttype == PACKET_OUTGOING)
					continue;
				port = packet_port(buf, (size_t)len, &proto);
				if (port >= lo && port <= hi) {
					printf("arrived %s %d\n", proto, port);
					fflush(stdout);
				}
			} else if (i % 2 == 1) {
				int c = accept(pfd[i].fd, NULL, NULL);

				if (c >= 0)
					close(c);
			} else {
				(void)!recv(pfd[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			}
		}
	}

fail:
	fprintf(stderr, "uring_probe: can't listen on port %d: %s\n", i, strerror(errno));
	return 1;
}

/* setsockopt on a fresh datagram socket: "0" or the errno's name (in buf) */
static const char *sockopt_result(int domain, int level, int name, const void *val, socklen_t len,
				  char *buf, size_t blen)
{
	int fd = socket(domain, SOCK_DGRAM, 0), rc;

	if (fd < 0)
		return res_str(-errno, buf, blen);
	rc = setsockopt(fd, level, name, val, len) ? -errno : 0;
	close(fd);
	return res_str(rc, buf, blen);
}

static int cmd_sockopts(int argc, char **argv)
{
	/* two segments: the kernel puts the destination in the first and
	 * sends to the second first (segments left 1) */
	struct {
		__u8 nexthdr, hdrlen, type, segleft, last, flags;
		__u16 tag;
		struct in6_addr seg[2];
	} srh = {.hdrlen = 4, .type = 4, .segleft = 1, .last = 1};
	static const __u8 nops[4] = {1, 1, 1, 0};
	char b1[32], b2[32];

	if (argc != 1 || inet_pton(AF_INET6, argv[0], &srh.seg[1]) != 1)
		usage();
	printf("rthdr=%s ipopts=%s\n",
	       sockopt_result(AF_INET6, IPPROTO_IPV6, IPV6_RTHDR, &srh, sizeof(srh), b1,
			      sizeof(b1)),
	       sockopt_result(AF_INET, IPPROTO_IP, IP_OPTIONS, nops, sizeof(nops), b2, sizeof(b2)));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		return cmd_send(argc - 2, argv + 2);
	if (!strcmp(argv[1], "pass"))
		return cmd_pass(argc - 2, argv + 2);
	if (!strcmp(argv[1], "sockopts"))
		return cmd_sockopts(argc - 2, argv + 2);
	if (!strcmp(argv[1], "capture"))
		return cmd_capture(argc - 2, argv + 2);
	usage();
}
