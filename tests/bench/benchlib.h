/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the benchmark tools share: a monotonic clock, HOST:PORT parsing and
 * a small HTTP/1.1 keep-alive client for fastwalld's actions listener. */
#ifndef FW_BENCHLIB_H
#define FW_BENCHLIB_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_RESP_MAX 65536

uint64_t bench_now_ns(void); /* CLOCK_MONOTONIC */

/* "A.B.C.D:PORT" into sa; false when it is not one. */
bool bench_parse_hostport(const char *s, struct sockaddr_in *sa);

/* One keep-alive connection to addr; fd -1 until the first request. */
struct httpc {
	const struct sockaddr_in *addr;
	int fd;
	char buf[BENCH_RESP_MAX];
	size_t have;
	unsigned reconnects; /* a kept-alive connection the server had closed */
	int last_status;
	char last_body[256]; /* the start of the last response's body */
};

void httpc_init(struct httpc *c, const struct sockaddr_in *addr);
void httpc_close(struct httpc *c);
/* One request (hdrs: extra header lines, each ending in \r\n, or NULL);
 * reconnects once when the server closed the connection. Returns the
 * status or -1. */
int httpc_request(struct httpc *c, const char *method, const char *path, const char *hdrs,
		  const char *body, size_t blen);

#endif /* FW_BENCHLIB_H */
