// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* udpflows: small UDP from several sandbox namespaces at once, one thread,
 * for the nftables comparison (scripts/bench-nft.sh). One raw IPv4 socket
 * per sandbox namespace (created there with setns, so the packets leave
 * through that sandbox's veth), our own IP and UDP headers, sendmmsg
 * batches taken from the sandboxes in turn.
 *
 *   udpflows -d DST [-P DPORT] -n NETNS[,NETNS...] -s SRC[,SRC...] [-f FLOWS]
 *            [-t SECONDS] [-l PAYLOAD] [-b BATCH]
 *
 * Every datagram is a new flow for the filter: the source port advances on
 * each one. FLOWS (default 64512, the ports 1024-65535) is the number of distinct flows over all
 * sandboxes together (FLOWS / sandboxes source ports each, from 1024), so
 * a stateful filter holds the same number of flows however many sandboxes
 * send, and a conntrack table of the default size never fills.
 * Prints "sent N packets in T s (R pps)". */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_SANDBOXES 16
#define MAX_BATCH     256
#define MAX_PAYLOAD   1400

struct frame {
	unsigned char ip[20];
	unsigned char udp[8];
	unsigned char payload[MAX_PAYLOAD];
};

struct sandbox {
	int fd;
	struct in_addr src;
	unsigned next_port; /* offset in this sandbox's port range */
	struct frame frames[MAX_BATCH];
	struct mmsghdr msgs[MAX_BATCH];
	struct iovec iov[MAX_BATCH];
};

static struct sandbox sbs[MAX_SANDBOXES];

static void usage(void)
{
	fprintf(stderr, "usage: udpflows -d DST [-P DPORT] -n NETNS[,...] -s SRC[,...] [-f FLOWS] "
			"[-t SECONDS] [-l PAYLOAD] [-b BATCH]\n");
	exit(2);
}

/* A raw socket in the named network namespace. */
static int raw_socket_in(const char *ns)
{
	char path[256];
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), target, fd, err;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || target < 0 || setns(target, CLONE_NEWNET)) {
		fprintf(stderr, "udpflows: can't enter network namespace %s: %s\n", ns,
			strerror(errno));
		exit(1);
	}
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	err = errno;
	if (setns(self, CLONE_NEWNET)) {
		perror("udpflows: setns back");
		exit(1);
	}
	close(self);
	close(target);
	if (fd < 0) {
		fprintf(stderr, "udpflows: raw socket in %s: %s\n", ns, strerror(err));
		exit(1);
	}
	return fd;
}

static int split(char *s, char **out, int max)
{
	int n = 0;

	for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = {.sin_family = AF_INET};
	char *nslist = NULL, *srclist = NULL, *names[MAX_SANDBOXES], *srcs[MAX_SANDBOXES];
	unsigned payload = 64, batch = 64, dport = 9, flows = 64512, per_sb;
	unsigned long long sent = 0, failed = 0;
	double seconds = 3, t0, t;
	int c, nsb, nsrc;

	while ((c = getopt(argc, argv, "d:P:n:s:f:t:l:b:")) != -1) {
		switch (c) {
		case 'd':
			if (inet_pton(AF_INET, optarg, &dst.sin_addr) != 1)
				usage();
			break;
		case 'P':
			dport = (unsigned)atoi(optarg);
			break;
		case 'n':
			nslist = optarg;
			break;
		case 's':
			srclist = optarg;
			break;
		case 'f':
			flows = (unsigned)atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'l':
			payload = (unsigned)atoi(optarg);
			break;
		case 'b':
			batch = (unsigned)atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!dst.sin_addr.s_addr || !nslist || !srclist || payload > MAX_PAYLOAD || !batch ||
	    batch > MAX_BATCH || seconds <= 0 || !dport || dport > 65535)
		usage();
	nsb = split(nslist, names, MAX_SANDBOXES);
	nsrc = split(srclist, srcs, MAX_SANDBOXES);
	if (!nsb || nsb != nsrc)
		usage();
	per_sb = flows / (unsigned)nsb;
	if (per_sb < 1 || per_sb > 64512) {
		fprintf(stderr, "udpflows: FLOWS / sandboxes must be 1..64512\n");
		return 2;
	}

	for (int k = 0; k < nsb; k++) {
		struct sandbox *sb = &sbs[k];

		if (inet_pton(AF_INET, srcs[k], &sb->src) != 1)
			usage();
		sb->fd = raw_socket_in(names[k]);
		for (unsigned i = 0; i < batch; i++) {
			struct frame *f = &sb->frames[i];

			f->ip[0] = 0x45;
			f->ip[8] = 64;
			f->ip[9] = IPPROTO_UDP;
			memcpy(f->ip + 12, &sb->src, 4);
			memcpy(f->ip + 16, &dst.sin_addr, 4);
			f->udp[2] = dport >> 8;
			f->udp[3] = dport & 0xff;
			f->udp[4] = (8 + payload) >> 8;
			f->udp[5] = (8 + payload) & 0xff;
			memset(f->payload, 'f', payload);
			sb->iov[i].iov_base = f;
			sb->iov[i].iov_len = 20 + 8 + payload;
			sb->msgs[i].msg_hdr.msg_iov = &sb->iov[i];
			sb->msgs[i].msg_hdr.msg_iovlen = 1;
			sb->msgs[i].msg_hdr.msg_name = &dst;
			sb->msgs[i].msg_hdr.msg_namelen = sizeof(dst);
		}
	}

	t0 = bench_now_ns() / 1e9;
	do {
		for (int k = 0; k < nsb; k++) {
			struct sandbox *sb = &sbs[k];
			int n;

			for (unsigned i = 0; i < batch; i++) {
				unsigned port = 1024 + sb->next_port;

				sb->frames[i].udp[0] = port >> 8;
				sb->frames[i].udp[1] = port & 0xff;
				if (++sb->next_port == per_sb)
					sb->next_port = 0;
			}
			n = sendmmsg(sb->fd, sb->msgs, batch, 0);
			if (n > 0) {
				sent += (unsigned)n;
			} else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
				failed++;
			} else {
				perror("udpflows: sendmmsg");
				return 1;
			}
		}
		t = bench_now_ns() / 1e9;
	} while (t - t0 < seconds);

	printf("sent %llu packets in %.3f s (%.0f pps, %d sandboxes, %u flows, %llu failed "
	       "batches)\n",
	       sent, t - t0, sent / (t - t0), nsb, per_sb * (unsigned)nsb, failed);
	return 0;
}
