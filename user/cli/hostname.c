// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall hostname hash [--gateway NAME] WORKSPACE SANDBOX [SERVICE]
 * fastwall hostname parse --base-domain DOMAIN... [--gateway NAME] HOST
 * fastwall hostname delete-sandbox --admin ADDR WORKSPACE SANDBOX
 * The routing name comes from --gateway, else FASTWALL_ROUTING_NAME. Exit 0
 * on success, 1 when a name or host is refused or the gateway fails (the
 * reason on stderr), 2 on a usage error. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "gateway/hostname.h"
#include "hostname.h"

enum { HOSTNAME_EXIT_REFUSED = 1, HOSTNAME_EXIT_USAGE = 2 };

#define HOSTNAME_ENV "FASTWALL_ROUTING_NAME"

const struct fw_cmd_opt fw_cli_hostname_opts[] = {
	{'g', "gateway", "NAME", "the gateway's routing name (else $" HOSTNAME_ENV ")"},
	{'d', "base-domain", "DOMAIN",
	 "parse: a base domain, or a wildcard name *.DOMAIN;\n"
	 "repeatable, tried in order"},
	{'a', "admin", "ADDR",
	 "delete-sandbox: the gateway's admin API, IPv4:PORT on\n"
	 "loopback or a unix socket's path"},
	FW_CMD_OPT_HELP,
	{0},
};

static int hostname_hash(const char *gw, char **names, int n)
{
	struct fw_hostname_target t;
	char label[FW_HOSTNAME_LABEL_LEN + 1];
	int rc, i;

	if (!gw) {
		fprintf(stderr, "fastwall hostname: no routing name: give --gateway NAME or set "
				"" HOSTNAME_ENV "\n");
		return HOSTNAME_EXIT_USAGE;
	}
	if (fw_hostname_routing_name_ok(gw, strlen(gw))) {
		fprintf(stderr, "fastwall hostname: routing name '%s': %s\n", gw,
			fw_hostname_strerror(FW_HOSTNAME_E_ROUTING_NAME));
		return HOSTNAME_EXIT_REFUSED;
	}
	for (i = 0; i < n; i++) {
		static const char *const what[] = {"workspace", "sandbox", "service"};

		if (fw_hostname_name_ok(names[i], strlen(names[i]))) {
			fprintf(stderr, "fastwall hostname: %s '%s': %s\n", what[i], names[i],
				fw_hostname_strerror(FW_HOSTNAME_E_NAME));
			return HOSTNAME_EXIT_REFUSED;
		}
	}
	rc = fw_hostname_target_set(&t, names[0], names[1], n > 2 ? names[2] : NULL);
	if (!rc)
		rc = fw_hostname_hash(gw, strlen(gw), &t, label);
	if (rc) {
		fprintf(stderr, "fastwall hostname: %s\n", fw_hostname_strerror(rc));
		return HOSTNAME_EXIT_REFUSED;
	}
	printf("%s\n", label);
	return 0;
}

static int hostname_parse(const struct fw_hostname_domains *d, const char *gw, const char *host)
{
	struct fw_hostname_parsed p;
	int rc;

	if (!d->count) {
		fprintf(stderr, "fastwall hostname: parse needs --base-domain DOMAIN\n");
		return HOSTNAME_EXIT_USAGE;
	}
	rc = fw_hostname_parse(d, gw != NULL, host, strlen(host), &p);
	if (!rc && p.kind == FW_HOSTNAME_HASHED)
		rc = -FW_HOSTNAME_E_HASHED;
	if (rc) {
		fprintf(stderr, "fastwall hostname: '%s': not a service host: %s\n", host,
			fw_hostname_strerror(rc));
		return HOSTNAME_EXIT_REFUSED;
	}
	printf("%s %s %s\n", p.target.workspace, p.target.sandbox,
	       p.target.service[0] ? p.target.service : "-");
	return 0;
}

#define HOSTNAME_ADMIN_TIMEOUT_S 10
#define HOSTNAME_ANSWER_MAX	 4096

/* a connected stream socket to ADDR (IPv4:PORT or /path), or -errno */
static int admin_connect(const char *addr)
{
	struct timeval tv = {.tv_sec = HOSTNAME_ADMIN_TIMEOUT_S};
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
	char ip[INET_ADDRSTRLEN];
	const char *colon;
	socklen_t len;
	char *end;
	long port;
	int fd, err;

	if (addr[0] == '/') {
		if (strlen(addr) >= sizeof(sun->sun_path))
			return -ENAMETOOLONG;
		sun->sun_family = AF_UNIX;
		strcpy(sun->sun_path, addr);
		len = sizeof(*sun);
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= sizeof(ip))
			return -EINVAL;
		memcpy(ip, addr, colon - addr);
		ip[colon - addr] = '\0';
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || *end || port < 1 || port > 65535 ||
		    inet_pton(AF_INET, ip, &sin->sin_addr) != 1)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((unsigned short)port);
		len = sizeof(*sin);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&ss, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* DELETE /services/WS/SB/ * on the admin API: every service of the sandbox */
static int hostname_delete_sandbox(const char *admin, char **names)
{
	char req[256], ans[HOSTNAME_ANSWER_MAX + 1];
	const char *body;
	size_t got = 0;
	ssize_t n;
	int fd, status, i, len;
	long deleted;

	if (!admin) {
		fprintf(stderr, "fastwall hostname: delete-sandbox needs --admin ADDR\n");
		return HOSTNAME_EXIT_USAGE;
	}
	for (i = 0; i < 2; i++) {
		static const char *const what[] = {"workspace", "sandbox"};

		if (fw_hostname_name_ok(names[i], strlen(names[i]))) {
			fprintf(stderr, "fastwall hostname: %s '%s': %s\n", what[i], names[i],
				fw_hostname_strerror(FW_HOSTNAME_E_NAME));
			return HOSTNAME_EXIT_REFUSED;
		}
	}
	fd = admin_connect(admin);
	if (fd == -EINVAL || fd == -ENAMETOOLONG) {
		fprintf(stderr,
			"fastwall hostname: admin address '%s': not IPv4:PORT nor a unix socket's "
			"path\n",
			admin);
		return HOSTNAME_EXIT_USAGE;
	}
	if (fd < 0) {
		fprintf(stderr, "fastwall hostname: can't connect to %s: %s\n", admin,
			strerror(-fd));
		return HOSTNAME_EXIT_REFUSED;
	}
	len = snprintf(req, sizeof(req),
		       "DELETE /services/%s/%s/* HTTP/1.0\r\nHost: fastwall-ingress\r\n\r\n",
		       names[0], names[1]);
	if (write(fd, req, len) != len) {
		fprintf(stderr, "fastwall hostname: can't send to %s: %s\n", admin,
			strerror(errno));
		close(fd);
		return HOSTNAME_EXIT_REFUSED;
	}
	/* HTTP/1.0: the gateway closes after the answer */
	while (got < HOSTNAME_ANSWER_MAX &&
	       (n = read(fd, ans + got, HOSTNAME_ANSWER_MAX - got)) > 0)
		got += n;
	close(fd);
	ans[got] = '\0';
	body = strstr(ans, "\r\n\r\n");
	if (sscanf(ans, "HTTP/1.%*d %d", &status) != 1 || !body) {
		fprintf(stderr, "fastwall hostname: %s: no HTTP answer\n", admin);
		return HOSTNAME_EXIT_REFUSED;
	}
	body += 4;
	if (status != 200 || sscanf(body, "{\"deleted\":%ld}", &deleted) != 1) {
		fprintf(stderr, "fastwall hostname: %s answered %d: %.*s\n", admin, status,
			(int)strcspn(body, "\n"), body);
		return HOSTNAME_EXIT_REFUSED;
	}
	printf("deleted %ld service%s of %s/%s\n", deleted, deleted == 1 ? "" : "s", names[0],
	       names[1]);
	return 0;
}

int fw_cli_hostname(struct fw_cmd_args *a)
{
	struct fw_hostname_domains d = {0};
	const char *gw = NULL, *admin = NULL, *verb;
	int opt, rc, n, argc = a->argc;
	char **argv = a->argv;

	while ((opt = fw_cmd_next(a)) > 0) {
		switch (opt) {
		case 'g':
			gw = a->arg;
			break;
		case 'a':
			admin = a->arg;
			break;
		case 'd':
			rc = fw_hostname_domains_add(&d, a->arg, strlen(a->arg));
			if (rc) {
				fprintf(stderr, "fastwall hostname: base domain '%s': %s\n", a->arg,
					fw_hostname_strerror(rc));
				return HOSTNAME_EXIT_USAGE;
			}
			break;
		}
	}
	if (opt < 0)
		return a->status;
	optind = a->ind; /* the operands, past the options getopt moved ahead */
	/* flag, then environment; an empty variable counts as unset */
	if (!gw) {
		gw = getenv(HOSTNAME_ENV);
		if (gw && !*gw)
			gw = NULL;
	}
	if (optind >= argc) {
		fw_cmd_help(a->prog, a->cmd, stderr);
		return HOSTNAME_EXIT_USAGE;
	}
	verb = argv[optind++];
	n = argc - optind;
	if (strcmp(verb, "hash") == 0) {
		if (n < 2 || n > 3) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_hash(gw, argv + optind, n);
	}
	if (strcmp(verb, "parse") == 0) {
		if (n != 1) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_parse(&d, gw, argv[optind]);
	}
	if (strcmp(verb, "delete-sandbox") == 0) {
		if (n != 2) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_delete_sandbox(admin, argv + optind);
	}
	fprintf(stderr, "fastwall hostname: unknown verb '%s'\n", verb);
	fw_cmd_help(a->prog, a->cmd, stderr);
	return HOSTNAME_EXIT_USAGE;
}
