// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall hostname hash [--gateway NAME] WORKSPACE SANDBOX [SERVICE]
 * fastwall hostname parse --base-domain DOMAIN... [--gateway NAME] HOST
 * fastwall hostname expose --admin ADDR --port PORT [--public] WS SB [SVC]
 * fastwall hostname get|delete --admin ADDR WS SB [SVC]
 * fastwall hostname list --admin ADDR
 * fastwall hostname delete-sandbox --admin ADDR WS SB
 * The routing name comes from --gateway, else FASTWALL_ROUTING_NAME. The
 * admin verbs ask a gateway's service admin API (unix:PATH or HOST:PORT)
 * and print its JSON. Exit 0 on success, 1 when a name or host is refused
 * or the gateway refuses or can't be reached (the reason on stderr), 2 on a
 * usage error. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
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
	 "expose, get, delete, list, delete-sandbox: the gateway's service\n"
	 "admin API, unix:PATH (or /PATH) or HOST:PORT (a loopback address)"},
	{'p', "port", "PORT", "expose: the service's port in the sandbox"},
	{'P', "public", NULL,
	 "expose: served without a credential (default: only with a\n"
	 "route scope for the sandbox, the gateway's cookie or its auth)"},
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

/* one connection to the admin API: a unix socket or HOST:PORT */
static int admin_connect(const char *addr)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct timeval tv = {.tv_sec = 5};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char host[256];
	const char *colon;
	int fd, err;

	if (strncmp(addr, "unix:", 5) == 0 || addr[0] == '/') {
		const char *path = addr[0] == '/' ? addr : addr + 5;

		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			err = -errno;
			close(fd);
			return err;
		}
	} else {
		colon = strrchr(addr, ':');
		if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
			return -EINVAL;
		/* [::1]:8089 */
		if (addr[0] == '[' && colon[-1] == ']')
			snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 2), addr + 1);
		else
			snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
			return -EHOSTUNREACH;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			freeaddrinfo(ai);
			return err;
		}
		freeaddrinfo(ai);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

#define ADMIN_ANSWER_MAX (1 << 20)

/* METHOD PATH to the admin API; prints a 2xx answer's body to stdout, else
 * the status and the body to stderr */
static int admin_call(const char *addr, const char *method, const char *path)
{
	char req[512], *resp, *body;
	size_t used = 0;
	ssize_t n;
	int fd, status, len;

	fd = admin_connect(addr);
	if (fd < 0) {
		fprintf(stderr, "fastwall hostname: can't connect to %s: %s\n", addr,
			strerror(-fd));
		return HOSTNAME_EXIT_REFUSED;
	}
	len = snprintf(req, sizeof(req),
		       "%s %s HTTP/1.0\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", method,
		       path);
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) != len) {
		fprintf(stderr, "fastwall hostname: can't send to %s: %s\n", addr, strerror(errno));
		close(fd);
		return HOSTNAME_EXIT_REFUSED;
	}
	resp = malloc(ADMIN_ANSWER_MAX + 1);
	if (!resp) {
		close(fd);
		return HOSTNAME_EXIT_REFUSED;
	}
	while (used < ADMIN_ANSWER_MAX &&
	       (n = recv(fd, resp + used, ADMIN_ANSWER_MAX - used, 0)) > 0)
		used += (size_t)n;
	close(fd);
	resp[used] = '\0';
	body = strstr(resp, "\r\n\r\n");
	if (sscanf(resp, "HTTP/1.%*1[01] %3d", &status) != 1 || !body) {
		fprintf(stderr, "fastwall hostname: %s gave no HTTP answer\n", addr);
		free(resp);
		return HOSTNAME_EXIT_REFUSED;
	}
	body += 4;
	if (status >= 200 && status < 300) {
		fputs(body, stdout);
		free(resp);
		return 0;
	}
	fprintf(stderr, "fastwall hostname: the gateway answered %d: %s", status,
		*body ? body : "\n");
	free(resp);
	return HOSTNAME_EXIT_REFUSED;
}

/* /services/WS/SB[/SVC] of checked names into path */
static int admin_path(char **names, int n, char *path, size_t len)
{
	static const char *const what[] = {"workspace", "sandbox", "service"};
	int i;

	for (i = 0; i < n; i++) {
		if (fw_hostname_name_ok(names[i], strlen(names[i]))) {
			fprintf(stderr, "fastwall hostname: %s '%s': %s\n", what[i], names[i],
				fw_hostname_strerror(FW_HOSTNAME_E_NAME));
			return HOSTNAME_EXIT_REFUSED;
		}
	}
	snprintf(path, len, "/services/%s/%s%s%s", names[0], names[1], n > 2 ? "/" : "",
		 n > 2 ? names[2] : "");
	return 0;
}

static int hostname_admin(const char *verb, const char *admin, const char *port, int public,
			  char **names, int n)
{
	char path[128], *end;
	long p;
	int rc;

	if (!admin) {
		fprintf(stderr, "fastwall hostname: %s needs --admin unix:PATH or HOST:PORT\n",
			verb);
		return HOSTNAME_EXIT_USAGE;
	}
	if (strcmp(verb, "list") == 0)
		return admin_call(admin, "GET", "/services");
	rc = admin_path(names, n, path, sizeof(path));
	if (rc)
		return rc;
	if (strcmp(verb, "get") == 0)
		return admin_call(admin, "GET", path);
	if (strcmp(verb, "delete") == 0)
		return admin_call(admin, "DELETE", path);
	/* expose */
	if (!port) {
		fprintf(stderr, "fastwall hostname: expose needs --port PORT\n");
		return HOSTNAME_EXIT_USAGE;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || *end || end == port || port[0] == '0' || port[0] == '+' || port[0] == '-' ||
	    p < 1 || p > 65535) {
		fprintf(stderr, "fastwall hostname: port '%s': not decimal 1-65535\n", port);
		return HOSTNAME_EXIT_USAGE;
	}
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "?port=%ld%s", p,
		 public ? "&public=true" : "");
	return admin_call(admin, "PUT", path);
}

/* DELETE /services/WS/SB/ * on the admin API: every service of the
 * sandbox, in one store statement; prints how many */
static int hostname_delete_sandbox(const char *admin, char **names)
{
	static const char *const what[] = {"workspace", "sandbox"};
	char req[256], ans[4096 + 1];
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
		if (fw_hostname_name_ok(names[i], strlen(names[i]))) {
			fprintf(stderr, "fastwall hostname: %s '%s': %s\n", what[i], names[i],
				fw_hostname_strerror(FW_HOSTNAME_E_NAME));
			return HOSTNAME_EXIT_REFUSED;
		}
	}
	fd = admin_connect(admin);
	if (fd == -EINVAL || fd == -ENAMETOOLONG) {
		fprintf(stderr,
			"fastwall hostname: admin address '%s': not unix:PATH, /PATH nor "
			"HOST:PORT\n",
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
	if (write(fd, req, (size_t)len) != len) {
		fprintf(stderr, "fastwall hostname: can't send to %s: %s\n", admin,
			strerror(errno));
		close(fd);
		return HOSTNAME_EXIT_REFUSED;
	}
	/* HTTP/1.0: the gateway closes after the answer */
	while (got < sizeof(ans) - 1 && (n = read(fd, ans + got, sizeof(ans) - 1 - got)) > 0)
		got += (size_t)n;
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
	const char *gw = NULL, *verb, *admin = NULL, *port = NULL;
	int opt, rc, n, public = 0, argc = a->argc;
	char **argv = a->argv;

	while ((opt = fw_cmd_next(a)) > 0) {
		switch (opt) {
		case 'g':
			gw = a->arg;
			break;
		case 'a':
			admin = a->arg;
			break;
		case 'p':
			port = a->arg;
			break;
		case 'P':
			public
			= 1;
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
	if (strcmp(verb, "expose") == 0 || strcmp(verb, "get") == 0 ||
	    strcmp(verb, "delete") == 0) {
		if (n < 2 || n > 3) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_admin(verb, admin, port, public, argv + optind, n);
	}
	if (strcmp(verb, "delete-sandbox") == 0) {
		if (n != 2) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_delete_sandbox(admin, argv + optind);
	}
	if (strcmp(verb, "list") == 0) {
		if (n != 0) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_admin(verb, admin, NULL, 0, NULL, 0);
	}
	fprintf(stderr, "fastwall hostname: unknown verb '%s'\n", verb);
	fw_cmd_help(a->prog, a->cmd, stderr);
	return HOSTNAME_EXIT_USAGE;
}
