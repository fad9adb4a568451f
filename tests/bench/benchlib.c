// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool bench_parse_hostport(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1;
}

void httpc_init(struct httpc *c, const struct sockaddr_in *addr)
{
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->fd = -1;
}

static int httpc_open(struct httpc *c)
{
	int one = 1;

	c->have = 0;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)c->addr, sizeof(*c->addr))) {
		int err = -errno;

		close(c->fd);
		c->fd = -1;
		return err;
	}
	return 0;
}

void httpc_close(struct httpc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->have = 0;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Reads one response; returns the status or -1. Keeps bytes that follow. */
static int read_response(struct httpc *c)
{
	for (;;) {
		char *hend;

		c->buf[c->have] = '\0';
		hend = c->have ? strstr(c->buf, "\r\n\r\n") : NULL;
		if (hend) {
			size_t hlen = (size_t)(hend - c->buf) + 4, blen = 0, total;
			int status = -1;
			bool closing = false;

			if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1)
				return -1;
			for (char *l = strstr(c->buf, "\r\n"); l && l < hend;
			     l = strstr(l + 2, "\r\n")) {
				if (!strncasecmp(l + 2, "Content-Length:", 15))
					blen = strtoul(l + 17, NULL, 10);
				else if (!strncasecmp(l + 2, "Connection: close", 17))
					closing = true;
			}
			total = hlen + blen;
			if (total > sizeof(c->buf) - 1)
				return -1;
			if (c->have >= total) {
				size_t n = blen < sizeof(c->last_body) - 1
						   ? blen
						   : sizeof(c->last_body) - 1;

				memcpy(c->last_body, c->buf + hlen, n);
				c->last_body[n] = '\0';
				memmove(c->buf, c->buf + total, c->have - total);
				c->have -= total;
				if (closing)
					httpc_close(c);
				return status;
			}
		}
		if (c->have >= sizeof(c->buf) - 1)
			return -1;
		ssize_t r = recv(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->have += (size_t)r;
	}
}

int httpc_request(struct httpc *c, const char *method, const char *path, const char *hdrs,
		  const char *body, size_t blen)
{
	char head[1024];
	int n, status;

	n = snprintf(head, sizeof(head),
		     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\n\r\n",
		     method, path, hdrs ? hdrs : "", blen);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -1;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->fd < 0) {
			if (httpc_open(c))
				return -1;
			if (attempt)
				c->reconnects++;
		}
		if (send_all(c->fd, head, (size_t)n) && (!blen || send_all(c->fd, body, blen))) {
			status = read_response(c);
			if (status > 0) {
				c->last_status = status;
				return status;
			}
		}
		httpc_close(c);
	}
	return -1;
}
