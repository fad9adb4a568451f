// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* HTTP routing over libmicrohttpd. libmicrohttpd because it is a small,
 * long-maintained C server in Debian that handles keep-alive, pipelining,
 * slow clients (per-connection timeouts, epoll thread pool) and body
 * streaming itself, with no process model of its own to fit around. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "envelope.h"
#include "http.h"
#include "log.h"
#include "secmem.h"

#define FW_HTTP_THREADS	  4
#define FW_HTTP_TIMEOUT_S 30
#define FW_HTTP_MAX_CONN  1024

struct fw_http {
	struct fw_actions *a;
	struct MHD_Daemon *tcp;
	struct MHD_Daemon *unix_d;
	char unix_path[108];
};

/* One request's body as it arrives. Bodies over the cap are drained and
 * answered 400 without being kept. */
struct fw_req {
	char *buf;
	size_t len, cap;
	bool too_large;
};

enum fw_listener { FW_TCP, FW_UNIX };

struct fw_ctx {
	struct fw_http *h;
	enum fw_listener which;
};

static void free_body(void *p)
{
	free(p);
}

static void free_secret(void *p)
{
	fw_secmem_free(p);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct fw_reply *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (r->body)
		resp = MHD_create_response_from_buffer_with_free_callback(
			r->len, r->body, r->secret ? free_secret : free_body);
	else
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		fw_reply_free(r);
		return MHD_NO;
	}
	r->body = NULL; /* the response owns it now */
	if (r->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	if (r->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
	if (r->etag[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, r->etag);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(c, (unsigned int)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *text,
				 const char *allow)
{
	struct fw_reply r = {.status = status, .allow = allow};

	if (asprintf(&r.body, "%s\n", text) < 0)
		return MHD_NO;
	r.len = strlen(r.body);
	r.content_type = "text/plain; charset=utf-8";
	return send_reply(c, &r);
}

static void route_tcp(struct fw_http *h, struct MHD_Connection *c, const char *url,
		      const char *method, const struct fw_req *req, struct fw_reply *r,
		      bool *handled)
{
	const char *uid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Fast-Sandbox-Uid");
	const char *gen =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Fast-Sandbox-Generation");

	*handled = true;
	if (!strcmp(url, "/_fastlet/v1/actions/status")) {
		if (strcmp(method, "GET")) {
			r->status = 405;
			r->allow = "GET";
			return;
		}
		fw_actions_status(h->a, r);
	} else if (!strcmp(url, "/_fastlet/v1/actions")) {
		if (strcmp(method, "POST")) {
			r->status = 405;
			r->allow = "POST";
			return;
		}
		fw_actions_post(h->a, req->buf ? req->buf : "", req->len, r);
	} else if (!strcmp(url, "/policy")) {
		fw_actions_policy(h->a, method, uid, gen, req->buf ? req->buf : "", req->len, r);
	} else if (!strcmp(url, "/credential-vault")) {
		fw_actions_vault(h->a, method, uid, gen, req->buf ? req->buf : "", req->len, r);
	} else {
		*handled = false;
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct fw_ctx *ctx = cls;
	struct fw_req *req = *con_cls;
	struct fw_reply r = {};
	bool handled = false;

	(void)version;
	if (!req) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);

		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		/* refuse a declared oversize body before reading any of it */
		if (cl && strtoull(cl, NULL, 10) > FW_ENV_BODY_MAX)
			return send_text(c, 400, "request body too large", NULL);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (req->too_large || req->len + n > FW_ENV_BODY_MAX) {
			req->too_large = true;
			return MHD_YES;
		}
		if (req->len + n + 1 > req->cap) {
			size_t cap = req->cap ? req->cap : 4096;
			char *grown;

			while (cap < req->len + n + 1)
				cap *= 2;
			grown = realloc(req->buf, cap);
			if (!grown)
				return MHD_NO;
			req->buf = grown;
			req->cap = cap;
		}
		memcpy(req->buf + req->len, upload_data, n);
		req->len += n;
		req->buf[req->len] = '\0';
		return MHD_YES;
	}
	if (req->too_large)
		return send_text(c, 400, "request body too large", NULL);

	if (ctx->which == FW_TCP) {
		route_tcp(ctx->h, c, url, method, req, &r, &handled);
	} else if (!strcmp(url, "/credential-vault/_active")) {
		handled = true;
		if (strcmp(method, "GET")) {
			r.status = 405;
			r.allow = "GET";
		} else {
			fw_actions_vault_active(
				ctx->h->a,
				MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "clientIp"),
				MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_IF_NONE_MATCH),
				&r);
		}
	}
	if (!handled)
		return send_text(c, 404, "404 page not found", NULL);
	if (r.status == 405 && !r.body)
		return send_text(c, 405, "method not allowed", r.allow);
	return send_reply(c, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct fw_req *req = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (req) {
		/* vault bodies carry secrets: leave nothing behind in the heap */
		if (req->buf)
			explicit_bzero(req->buf, req->cap);
		free(req->buf);
		free(req);
	}
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	fw_debug("http: %s", line);
}

static struct fw_ctx ctx_tcp, ctx_unix;

/* "127.0.0.1:18080", "[::1]:18080", "localhost:18080" */
static int resolve_listen(const char *listen, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon = strrchr(listen, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res;
	size_t n;

	if (!colon || (n = (size_t)(colon - listen)) >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, n);
	host[n] = '\0';
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	if (getaddrinfo(host, colon + 1, &hints, &res))
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int unix_listener(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[108];
	char *slash;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	/* root-only from the first moment the path exists */
	mode_t old = umask(0177);

	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (err || chmod(path, 0600) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int fw_http_start(struct fw_http **out, struct fw_actions *a, const char *listen,
		  const char *vault_socket)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	struct sockaddr_storage ss;
	struct fw_http *h;
	int ufd, err;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->a = a;
	err = resolve_listen(listen, &ss);
	if (err) {
		fw_err("can't resolve actions.listen %s", listen);
		goto fail;
	}
	ctx_tcp = (struct fw_ctx){h, FW_TCP};
	h->tcp = MHD_start_daemon(
		flags | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, on_request,
		&ctx_tcp, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned int)FW_HTTP_THREADS, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)FW_HTTP_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)FW_HTTP_MAX_CONN, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
	if (!h->tcp) {
		err = -EADDRINUSE;
		fw_err("can't listen on %s: %s", listen, strerror(errno ? errno : EADDRINUSE));
		goto fail;
	}
	ufd = unix_listener(vault_socket);
	if (ufd < 0) {
		err = ufd;
		fw_err("can't listen on %s: %s", vault_socket, strerror(-err));
		goto fail;
	}
	snprintf(h->unix_path, sizeof(h->unix_path), "%s", vault_socket);
	ctx_unix = (struct fw_ctx){h, FW_UNIX};
	h->unix_d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &ctx_unix,
				     MHD_OPTION_LISTEN_SOCKET, ufd, MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)FW_HTTP_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED,
				     on_completed, NULL, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log,
				     NULL, MHD_OPTION_END);
	if (!h->unix_d) {
		close(ufd);
		err = -EIO;
		fw_err("can't serve %s", vault_socket);
		goto fail;
	}
	fw_info("actions protocol on http://%s, active vault on unix:%s", listen, vault_socket);
	*out = h;
	return 0;
fail:
	fw_http_stop(h);
	return err;
}

void fw_http_stop(struct fw_http *h)
{
	if (!h)
		return;
	if (h->tcp)
		MHD_stop_daemon(h->tcp);
	if (h->unix_d) {
		MHD_stop_daemon(h->unix_d);
		unlink(h->unix_path);
	}
	free(h);
}
