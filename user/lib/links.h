/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Network interfaces from rtnetlink: a dump of the current links and a
 * subscription to link changes, so ports that appear after start get
 * attached. Functions return 0 or a negative errno. */
#ifndef FW_LINKS_H
#define FW_LINKS_H

#include <net/if.h>
#include <stdbool.h>

struct fw_link {
	int ifindex;
	int master; /* ifindex of the bridge this is a port of, or 0 */
	char name[IF_NAMESIZE];
	bool removed;
};

typedef void (*fw_link_cb)(void *ctx, const struct fw_link *link);

/* Opens a socket subscribed to link events (non-blocking). */
int fw_links_subscribe(int *fd);
/* Calls cb for every link that exists now. */
int fw_links_dump(fw_link_cb cb, void *ctx);
/* Reads pending events from a subscribed socket and calls cb for each;
 * returns -EAGAIN when nothing is left. */
int fw_links_read(int fd, fw_link_cb cb, void *ctx);

#endif /* FW_LINKS_H */
