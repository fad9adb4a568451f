/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's HTTP listeners: the actions protocol and pushes on a
 * loopback TCP address, the active-vault read on a root-only unix socket.
 * libmicrohttpd with its own thread pool; routing only, the work is in
 * actions.c. Functions return 0 or a negative errno. */
#ifndef FW_HTTP_H
#define FW_HTTP_H

#include <stdint.h>
#include <sys/socket.h>

#include "protocol/actions.h"

struct fw_http;

/* routes counted: the six paths the listeners serve and "other" */
#define FW_HTTP_ROUTES 7

int fw_http_start(struct fw_http **out, struct fw_actions *a, const char *listen,
		  const char *vault_socket);
void fw_http_stop(struct fw_http *h);
/* "127.0.0.1:18080", "[::1]:18080", "localhost:18080" into an address;
 * -EINVAL when it is none. */
int fw_http_resolve(const char *listen, struct sockaddr_storage *ss);
/* Calls fn for every (path, status code) answered at least once, with
 * the count; any thread, lock-free. */
void fw_http_requests(struct fw_http *h,
		      void (*fn)(void *ctx, const char *path, int code, uint64_t n), void *ctx);

#endif /* FW_HTTP_H */
