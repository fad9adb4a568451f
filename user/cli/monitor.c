// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall monitor [--socket PATH] [-o text|json] [--subject S] [--reason R]
 *                  [--addr CIDR] [--kind drop,dns,allow,l7] [--count N]
 * Sends the filters as the request line, then prints each line fastwalld
 * sends until it closes the socket, N events came, or a signal. Exit 0
 * then (1 when fastwalld went away), 1 when it can't be reached or refuses
 * the request, 2 on a usage error. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fastwall/abi.h"
#include "protocol/monitor.h"
#include "monitor.h"

enum { MON_EXIT_FAIL = 1, MON_EXIT_USAGE = 2 };

#define MON_LINE_MAX 65536

const struct fw_cmd_opt fw_cli_monitor_opts[] = {
	{'s', "socket", "PATH", "fastwalld's monitor socket (default " FW_MONITOR_SOCKET ")"},
	{'o', "output", "FMT", "text (default) or json: one JSON object a line"},
	{'j', "json", NULL, "the same as -o json"},
	{'S', "subject", "S", "only this subject: a name or uid, or a kernel id"},
	{'r', "reason", "R", "only this reason (default-deny, dns-denied-name, ...)"},
	{'a', "addr", "CIDR",
	 "only events whose source, destination or learned\naddress is in CIDR (or is the "
	 "address)"},
	{'k', "kind", "LIST", "drop, dns, allow, l7, comma separated (default all)"},
	{'c', "count", "N", "exit after N events"},
	FW_CMD_OPT_HELP,
	{0},
};

/* The names of the reason tables (fastwall/reasons.h): the data plane's,
 * the DNS proxy's and the layer-7 proxy's, the reasons events carry. */
#define MON_REASON_NAME_(id, num, verdict, name, meaning) name,
#define MON_REASON_NAME3_(id, verdict, name, meaning)	  name,
static const char *const mon_reasons[] = {
	FW_REASONS(MON_REASON_NAME_) FW_DNS_REASONS(MON_REASON_NAME3_)
		FW_L7_REASONS(MON_REASON_NAME3_) NULL,
};
#undef MON_REASON_NAME_
#undef MON_REASON_NAME3_

static bool known_reason(const char *name)
{
	for (size_t i = 0; mon_reasons[i]; i++)
		if (!strcmp(mon_reasons[i], name))
			return true;
	return false;
}

static int mon_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The daemon's first line: {"ok":true} or {"error":"..."}. */
static int check_answer(const char *line, size_t len)
{
	static const char ok[] = "{\"ok\":true}";
	char text[1024];

	if (len == sizeof(ok) - 1 && !memcmp(line, ok, len))
		return 0;
	/* the error's text as the daemon wrote it, minus the JSON around it */
	if (len > 10 && !memcmp(line, "{\"error\":\"", 10) && line[len - 1] == '}') {
		snprintf(text, sizeof(text), "%.*s", (int)(len - 12), line + 10);
		fprintf(stderr, "fastwall monitor: fastwalld refused: %s\n", text);
	} else {
		fprintf(stderr, "fastwall monitor: unexpected answer from fastwalld\n");
	}
	return -1;
}

int fw_cli_monitor(struct fw_cmd_args *a)
{
	static const char *const formats[] = {"text", "json", NULL};
	const char *path = FW_MONITOR_SOCKET, *key;
	static char buf[MON_LINE_MAX + 1];
	struct fw_mon_filter f;
	unsigned long count = 0, seen = 0;
	bool json = false, answered = false;
	size_t have = 0;
	char err[256], text[4096], *req, *end;
	int opt, fd, rc;

	fw_mon_filter_init(&f);
	while ((opt = fw_cmd_next(a)) > 0) {
		key = NULL;
		switch (opt) {
		case 's':
			path = a->arg;
			break;
		case 'o':
			rc = fw_cmd_choose(a, formats);
			if (rc < 0)
				return a->status;
			json = rc == 1;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			key = "subject";
			break;
		case 'r':
			if (!known_reason(a->arg))
				return fw_cmd_usage_error(
					a, "unknown reason '%s' (fastwall reasons lists them)",
					a->arg);
			key = "reason";
			break;
		case 'a':
			key = "addr";
			break;
		case 'k':
			key = "kind";
			break;
		case 'c':
			errno = 0;
			count = strtoul(a->arg, &end, 10);
			if (!*a->arg || *end || errno || !count)
				return fw_cmd_usage_error(a, "--count takes a number > 0");
			break;
		}
		if (key && fw_mon_filter_set(&f, key, a->arg, err, sizeof(err)))
			return fw_cmd_usage_error(a, "%s", err);
	}
	if (opt < 0)
		return a->status;
	fd = mon_connect(path);
	if (fd < 0) {
		fprintf(stderr, "fastwall monitor: can't reach fastwalld at %s: %s\n", path,
			strerror(-fd));
		return MON_EXIT_FAIL;
	}
	req = fw_mon_request_format(&f);
	rc = req ? send_all(fd, req, strlen(req)) : -ENOMEM;
	free(req);
	/* a refusal may close the socket before the request is sent: read
	 * its answer anyway, which says why */
	if (rc == -ENOMEM) {
		fprintf(stderr, "fastwall monitor: can't send the request: %s\n", strerror(-rc));
		close(fd);
		return MON_EXIT_FAIL;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		ssize_t n = recv(fd, buf + have, MON_LINE_MAX - have, 0);
		char *p = buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!answered)
				fprintf(stderr, "fastwall monitor: fastwalld closed the socket\n");
			else
				fprintf(stderr, "fastwall monitor: fastwalld went away\n");
			close(fd);
			return MON_EXIT_FAIL;
		}
		have += (size_t)n;
		while ((nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
			size_t len = (size_t)(nl - p);
			bool lost;

			if (!answered) {
				if (check_answer(p, len)) {
					close(fd);
					return MON_EXIT_FAIL;
				}
				answered = true;
				p = nl + 1;
				continue;
			}
			/* the "lost N events" notice is no event of --count */
			lost = memmem(p, len, "\"kind\":\"lost\"", 13) != NULL;
			if (json)
				fwrite(p, 1, len + 1, stdout);
			else if (!fw_mon_render_text(p, len, text, sizeof(text)))
				puts(text);
			p = nl + 1;
			if (!lost && count && ++seen >= count) {
				fflush(stdout);
				close(fd);
				return 0;
			}
		}
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		if (have == MON_LINE_MAX)
			have = 0; /* a line this long is no event line: skip it */
	}
}
