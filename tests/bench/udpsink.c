// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* udpsink: the pod's receiver in the port guard benchmark
 * (scripts/bench-guard.sh). Binds ADDR:PORT, reads datagrams in batches
 * for a fixed time and counts those from the trusted source apart from the
 * others, so a flood that reaches the socket is never mistaken for the
 * trusted flow. The socket's own drops (a full receive queue) are read
 * from SO_RXQ_OVFL and printed too: a datagram dropped there reached the
 * pod, but not the application.
 *
 *   udpsink -a ADDR -P PORT -T TRUSTED_SRC [-t SECONDS]
 *
 * Prints "trusted N other N overflow N seconds S". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "benchlib.h"

#define BATCH 64

static void usage(void)
{
	fprintf(stderr, "usage: udpsink -a ADDR -P PORT -T TRUSTED_SRC [-t SECONDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static char bufs[BATCH][2048];
	static char cbufs[BATCH][CMSG_SPACE(sizeof(unsigned int))];
	struct sockaddr_in addr = {.sin_family = AF_INET}, from[BATCH];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct in_addr trusted = {0};
	struct timeval tv = {.tv_usec = 100000};
	unsigned long long ntrusted = 0, nother = 0;
	unsigned int overflow = 0;
	double seconds = 3, t0, t;
	int c, fd, one = 1, rcvbuf = 4 << 20;

	while ((c = getopt(argc, argv, "a:P:T:t:")) != -1) {
		switch (c) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &addr.sin_addr) != 1)
				usage();
			break;
		case 'P':
			addr.sin_port = htons((unsigned short)atoi(optarg));
			break;
		case 'T':
			if (inet_pton(AF_INET, optarg, &trusted) != 1)
				usage();
			break;
		case 't':
			seconds = atof(optarg);
			break;
		default:
			usage();
		}
	}
	if (!addr.sin_port || !trusted.s_addr || seconds <= 0)
		usage();
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("udpsink");
		return 1;
	}
	/* a bigger queue, for this socket only (root may pass rmem_max) */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_control = cbufs[i];
		msgs[i].msg_hdr.msg_controllen = sizeof(cbufs[i]);
	}
	t0 = bench_now_ns() / 1e9;
	do {
		int n = recvmmsg(fd, msgs, BATCH, 0, NULL);

		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			perror("udpsink: recvmmsg");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct cmsghdr *cm;

			if (from[i].sin_addr.s_addr == trusted.s_addr)
				ntrusted++;
			else
				nother++;
			/* the count of drops so far rides on each datagram */
			for (cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm;
			     cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm))
				if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
					memcpy(&overflow, CMSG_DATA(cm), sizeof(overflow));
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
			msgs[i].msg_hdr.msg_controllen = sizeof(cbufs[i]);
		}
		t = bench_now_ns() / 1e9;
	} while (t - t0 < seconds);
	printf("trusted %llu other %llu overflow %u seconds %.3f\n", ntrusted, nother, overflow,
	       t - t0);
	return 0;
}
