/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwalld's monitor socket: live events fanned out to every connected
 * `fastwall monitor` (root only, mode 0600). Each reader has a bounded
 * queue of lines; when it is full the reader's events are dropped and
 * counted, and the reader is told how many before its next event, so a
 * slow reader never holds up the data path, the proxy or another reader.
 * fw_monitor_publish is thread-safe (the DNS proxy's workers call it);
 * everything else runs on the loop's thread. Functions return 0 or a
 * negative errno. */
#ifndef FW_DAEMON_MONITOR_H
#define FW_DAEMON_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/loop.h"
#include "protocol/monitor.h"

#define FW_MON_MAX_READERS 64

struct fw_monitor;

/* Listens on path (its directory is created 0755 when missing, the socket
 * is 0600 and peers other than uid 0 are refused); queue: lines a reader
 * may have pending. */
int fw_monitor_start(struct fw_loop *loop, const char *path, size_t queue, struct fw_monitor **out);
/* Closes every reader and the socket and unlinks it; NULL is fine. */
void fw_monitor_stop(struct fw_monitor *m);
/* True when some reader could want an event of kind: callers skip
 * building events nobody reads. NULL: false. */
bool fw_monitor_wants(const struct fw_monitor *m, enum fw_mon_kind kind);
void fw_monitor_publish(struct fw_monitor *m, const struct fw_mon_event *ev);

struct fw_monitor_stats {
	__u64 readers;
	__u64 dropped; /* events readers lost to a full queue, ever */
};
void fw_monitor_get_stats(const struct fw_monitor *m, struct fw_monitor_stats *out);

#endif /* FW_DAEMON_MONITOR_H */
