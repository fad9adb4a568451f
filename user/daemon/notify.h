/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* systemd's service notifications (sd_notify(3)'s protocol, written here
 * rather than linked from libsystemd): one datagram per state change to
 * the socket NOTIFY_SOCKET names, a path or "@" for an abstract one.
 * Without NOTIFY_SOCKET (not started by systemd, or Type= not notify)
 * every call does nothing. Main-loop thread only. */
#ifndef FW_NOTIFY_H
#define FW_NOTIFY_H

struct fw_daemon;

/* Reads NOTIFY_SOCKET and the watchdog's WATCHDOG_USEC / WATCHDOG_PID and
 * removes them from the environment (the layer-7 proxy's nginx, a child,
 * must not speak for fastwalld). Call first, before any thread starts. */
void fw_notify_init(void);
/* READY=1 with a STATUS= line: at the end of the start, and after a
 * reload whatever its outcome (a rejected one keeps the running state). */
void fw_notify_ready(const char *status);
/* RELOADING=1 and MONOTONIC_USEC= (systemd 253 and later ask for it):
 * the unit shows "reloading" until the next fw_notify_ready. */
void fw_notify_reloading(void);
/* STOPPING=1: the unit shows "deactivating". */
void fw_notify_stopping(void);
/* With WatchdogSec= set: a timer on d's loop sends WATCHDOG=1 every half
 * interval while /healthz would say 200 (fw_metrics_live: the main loop
 * and every DNS proxy worker turned within FW_HEALTH_STALE_NS). A wedged
 * main loop sends nothing, a wedged worker makes it stop: systemd kills
 * the daemon after WatchdogSec and restarts it. */
int fw_notify_watchdog_start(struct fw_daemon *d);

#endif /* FW_NOTIFY_H */
