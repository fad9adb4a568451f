// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sd_notify by hand: a datagram of "KEY=VALUE" lines to NOTIFY_SOCKET.
 * The protocol is systemd's stable interface (sd_notify(3)) and takes a
 * few lines; linking libsystemd for it would add a shared library to the
 * package, the image and every build, for one sendto. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon.h"
#include "notify.h"

static struct {
	int fd; /* -1: not under systemd's notify */
	struct sockaddr_un addr;
	socklen_t addrlen;
	__u64 watchdog_ns; /* WatchdogSec=, 0: none */
	bool warned;
	bool alive; /* the last watchdog round sent a ping */
	struct fw_loop_timer timer;
} notify = {.fd = -1};

void fw_notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET"), *usec = getenv("WATCHDOG_USEC"),
		   *wpid = getenv("WATCHDOG_PID");
	size_t len = path ? strlen(path) : 0;
	unsigned long long us = 0;
	char *end;

	/* the watchdog is ours when WATCHDOG_PID is unset or names us */
	if (usec && (!wpid || strtoul(wpid, NULL, 10) == (unsigned long)getpid())) {
		errno = 0;
		us = strtoull(usec, &end, 10);
		if (errno || *end || end == usec)
			us = 0;
	}
	if (path && len >= 2 && len < sizeof(notify.addr.sun_path) &&
	    (path[0] == '/' || path[0] == '@')) {
		notify.addr.sun_family = AF_UNIX;
		memcpy(notify.addr.sun_path, path, len);
		if (path[0] == '@')
			notify.addr.sun_path[0] = '\0'; /* abstract: no trailing NUL */
		notify.addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
					     (path[0] == '/' ? 1 : 0));
		notify.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (notify.fd < 0)
			fw_warn("can't open a socket for systemd's notifications: %s",
				strerror(errno));
	} else if (path) {
		fw_warn("NOTIFY_SOCKET '%s' is not a socket address; systemd is not notified",
			path);
	}
	if (notify.fd >= 0)
		notify.watchdog_ns = us * 1000ull;
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void send_state(const char *msg)
{
	if (notify.fd < 0)
		return;
	if (sendto(notify.fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&notify.addr,
		   notify.addrlen) < 0 &&
	    !notify.warned) {
		/* once: a manager that went away is not news every second */
		notify.warned = true;
		fw_warn("can't notify systemd: %s", strerror(errno));
	}
}

/* STATUS= is one line: what follows a newline would be read as a key */
static void with_status(const char *head, const char *status)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%sSTATUS=", head);

	if (n < 0 || (size_t)n >= sizeof(msg))
		return;
	for (size_t i = 0; status && status[i] && (size_t)n < sizeof(msg) - 1; i++)
		msg[n++] = status[i] == '\n' ? ' ' : status[i];
	msg[n] = '\0';
	send_state(msg);
}

void fw_notify_ready(const char *status)
{
	with_status("READY=1\n", status);
}

void fw_notify_reloading(void)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		 (unsigned long long)(fw_now_ns() / 1000ull));
	send_state(msg);
}

void fw_notify_stopping(void)
{
	send_state("STOPPING=1\nSTATUS=stopping; the kernel keeps enforcing the last state");
}

static __u64 watchdog_round(struct fw_loop *l, struct fw_loop_timer *t, void *ctx)
{
	struct fw_daemon *d = ctx;
	struct fw_metrics_parts parts = {.loop = l, .dnsp = d->dnsp};
	char why[160];

	(void)t;
	/* /healthz's verdict, on the main loop: this round ran, so the loop
	 * turns; the workers' stamps say whether they do */
	if (fw_metrics_live(&parts, why, sizeof(why)) == 200) {
		send_state("WATCHDOG=1");
		notify.alive = true;
	} else if (notify.alive) {
		notify.alive = false;
		fw_err("systemd's watchdog is no longer fed: %s", why);
	}
	return notify.watchdog_ns / 2;
}

int fw_notify_watchdog_start(struct fw_daemon *d)
{
	if (notify.fd < 0 || !notify.watchdog_ns)
		return 0;
	fw_loop_timer_init(&notify.timer, watchdog_round, d);
	fw_loop_timer_arm(d->loop, &notify.timer, 0);
	fw_info("systemd's watchdog: fed every %.1f s while healthy",
		(double)notify.watchdog_ns / 2e9);
	return 0;
}
