/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's HTTP listeners: the actions protocol and pushes on a
 * loopback TCP address, the active-vault read on a root-only unix socket.
 * libmicrohttpd with its own thread pool; routing only, the work is in
 * actions.c. Functions return 0 or a negative errno. */
#ifndef FW_HTTP_H
#define FW_HTTP_H

#include "protocol/actions.h"

struct fw_http;

int fw_http_start(struct fw_http **out, struct fw_actions *a, const char *listen,
		  const char *vault_socket);
void fw_http_stop(struct fw_http *h);

#endif /* FW_HTTP_H */
