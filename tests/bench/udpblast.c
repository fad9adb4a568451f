// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* udpblast: sends small UDP datagrams as fast as one thread can for a
 * fixed time, every datagram a new flow (the source port walks 1024-65535),
 * optionally from a range of source addresses. Raw IPv4 socket with our own
 * IP and UDP headers (IPPROTO_RAW implies IP_HDRINCL; the kernel fills in
 * the IP checksum, length and id), batched with sendmmsg.
 *
 *   udpblast -d DST [-P DPORT] [-s SRC] [-k NSRC] [-t SECONDS] [-l PAYLOAD] [-b BATCH]
 *
 * Prints "sent N packets in T s (R pps)" on stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_BATCH   256
#define MAX_PAYLOAD 1400

struct frame {
	unsigned char ip[20];
	unsigned char udp[8];
	unsigned char payload[MAX_PAYLOAD];
};

static void usage(void)
{
	fprintf(stderr, "usage: udpblast -d DST [-P DPORT] [-s SRC] [-k NSRC] [-t SECONDS] "
			"[-l PAYLOAD] [-b BATCH]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct frame frames[MAX_BATCH];
	struct mmsghdr msgs[MAX_BATCH];
	struct iovec iov[MAX_BATCH];
	struct sockaddr_in dst = {.sin_family = AF_INET};
	struct in_addr src = {0};
	unsigned long long sent = 0, errors = 0;
	unsigned int nsrc = 1, payload = 64, batch = 64, dport = 9, sport = 1024, srci = 0;
	double seconds = 3, t0, t;
	int c, fd;

	while ((c = getopt(argc, argv, "d:P:s:k:t:l:b:")) != -1) {
		switch (c) {
		case 'd':
			if (inet_pton(AF_INET, optarg, &dst.sin_addr) != 1)
				usage();
			break;
		case 'P':
			dport = (unsigned int)atoi(optarg);
			break;
		case 's':
			if (inet_pton(AF_INET, optarg, &src) != 1)
				usage();
			break;
		case 'k':
			nsrc = (unsigned int)atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'l':
			payload = (unsigned int)atoi(optarg);
			break;
		case 'b':
			batch = (unsigned int)atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!dst.sin_addr.s_addr || !nsrc || payload > MAX_PAYLOAD || !batch || batch > MAX_BATCH ||
	    seconds <= 0 || !dport || dport > 65535)
		usage();

	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("udpblast: socket");
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (unsigned int i = 0; i < batch; i++) {
		struct frame *f = &frames[i];

		f->ip[0] = 0x45;
		f->ip[8] = 64;
		f->ip[9] = IPPROTO_UDP;
		memcpy(f->ip + 12, &src, 4);
		memcpy(f->ip + 16, &dst.sin_addr, 4);
		f->udp[2] = dport >> 8;
		f->udp[3] = dport & 0xff;
		f->udp[4] = (8 + payload) >> 8;
		f->udp[5] = (8 + payload) & 0xff;
		memset(f->payload, 'x', payload);
		iov[i].iov_base = f;
		iov[i].iov_len = 20 + 8 + payload;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &dst;
		msgs[i].msg_hdr.msg_namelen = sizeof(dst);
	}

	t0 = bench_now_ns() / 1e9;
	do {
		int n;

		for (unsigned int i = 0; i < batch; i++) {
			struct frame *f = &frames[i];

			/* a new flow every datagram: walk the source port */
			f->udp[0] = sport >> 8;
			f->udp[1] = sport & 0xff;
			if (++sport > 65535)
				sport = 1024;
			if (nsrc > 1) {
				__u_int a = htonl(ntohl(src.s_addr) + srci);

				memcpy(f->ip + 12, &a, 4);
				if (++srci == nsrc)
					srci = 0;
			}
		}
		n = sendmmsg(fd, msgs, batch, 0);
		if (n > 0)
			sent += (unsigned int)n;
		else if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
			perror("udpblast: sendmmsg");
			return 1;
		} else {
			errors++;
		}
		t = bench_now_ns() / 1e9;
	} while (t - t0 < seconds);

	printf("sent %llu packets in %.3f s (%.0f pps, %llu failed batches)\n", sent, t - t0,
	       sent / (t - t0), errors);
	close(fd);
	return 0;
}
