// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* HTTP routing over libmicrohttpd. libmicrohttpd because it is a small,
 * long-maintained C server in Debian that handles keep-alive, pipelining,
 * slow clients (per-connection timeouts, epoll thread pool) and body
 * streaming itself, with no process model of its own to fit around. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol/envelope.h"
#include "http.h"
#include "common/log.h"
#include "common/secmem.h"

#define FW_HTTP_THREADS	  4
#define FW_HTTP_CODES	  600 /* status codes counted: 0-599 */
#define FW_HTTP_TIMEOUT_S 10  /* libmicrohttpd's idle timeout: no byte for that long */
#define FW_HTTP_MAX_CONN  4096
/* One address holds at most this many connections, so one client that
 * opens sockets and sits on them cannot lock out the others (the Fastlet
 * asking for status). */
#define FW_HTTP_PER_IP 64
/* Deadlines a connection must meet however slowly it trickles bytes (the
 * idle timeout restarts on every byte): its request headers within
 * FW_HTTP_HEADER_S of connecting, or of the previous reply on a kept-alive
 * connection; the body within FW_HTTP_REQUEST_S of the headers. */
#define FW_HTTP_HEADER_S  10
#define FW_HTTP_REQUEST_S 30
/* Bodies being received, all connections together: past it a request is
 * drained and answered 503 instead of being held. */
#define FW_HTTP_BODY_BUDGET (32u << 20)

/* A connection the reaper watches, from libmicrohttpd's notify-connection
 * callback. */
struct fw_http_conn {
	int fd;
	_Atomic uint64_t deadline_ms; /* CLOCK_MONOTONIC; UINT64_MAX once shut down */
	struct fw_http_conn *prev, *next;
};

struct fw_http {
	struct fw_actions *a;
	struct MHD_Daemon *tcp;
	struct MHD_Daemon *unix_d;
	char unix_path[108];
	/* the reaper: shuts down connections past their deadline */
	pthread_t reaper;
	bool reaper_started, stopping;
	pthread_mutex_t lock; /* conns, stopping */
	pthread_cond_t wake;
	struct fw_http_conn *conns;
	atomic_size_t body_bytes; /* sum of every fw_req's cap */
	/* requests answered, by route and status code (relaxed atomics: the
	 * metrics listener reads them while the pool writes) */
	uint64_t (*requests)[FW_HTTP_CODES];
};

/* One request's body as it arrives. Bodies over the cap are drained and
 * answered 400 without being kept; those past the budget, 503. The buffer
 * grows as the bytes come, never past FW_ENV_BODY_MAX + 1. */
struct fw_req {
	struct fw_http *h;
	char *buf;
	size_t len, cap;
	bool too_large, over_budget;
	unsigned int route; /* its row of routes[], found once as it arrives */
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

/* The status the last reply of this thread queued, for the counters. */
static __thread int last_status;

static enum MHD_Result send_reply(struct MHD_Connection *c, struct fw_reply *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	last_status = r->status;
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

static uint64_t now_ms(void);

static void conn_set_deadline(struct MHD_Connection *c, unsigned int seconds)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct fw_http_conn *conn = info ? info->socket_context : NULL;

	if (conn && conn->deadline_ms != UINT64_MAX)
		conn->deadline_ms = now_ms() + seconds * 1000ull;
}

struct framing {
	const char *length;
	unsigned int lengths;
	bool conflicting_length, chunked;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct framing *fr = cls;

	(void)kind;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		if (fr->lengths++ && strcmp(fr->length, value ? value : ""))
			fr->conflicting_length = true;
		fr->length = value ? value : "";
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		fr->chunked = true;
	}
	return MHD_YES;
}

static void body_release(struct fw_req *req)
{
	if (req->buf) {
		/* vault bodies carry secrets: leave nothing behind in the heap */
		explicit_bzero(req->buf, req->cap);
		free(req->buf);
	}
	atomic_fetch_sub(&req->h->body_bytes, req->cap);
	req->buf = NULL;
	req->len = req->cap = 0;
}

/* Room for need bytes: doubling, capped at the largest body, and taken
 * from the listener-wide budget. -ENOBUFS past the budget. */
static int body_grow(struct fw_req *req, size_t need)
{
	size_t cap = req->cap ? req->cap : 4096;
	size_t total;
	char *grown;

	while (cap < need)
		cap *= 2;
	if (cap > FW_ENV_BODY_MAX + 1)
		cap = FW_ENV_BODY_MAX + 1;
	total = atomic_fetch_add(&req->h->body_bytes, cap - req->cap) + (cap - req->cap);
	if (total > FW_HTTP_BODY_BUDGET) {
		atomic_fetch_sub(&req->h->body_bytes, cap - req->cap);
		return -ENOBUFS;
	}
	/* a fresh block, so the old one can be wiped: it may hold secrets */
	grown = malloc(cap);
	if (!grown) {
		atomic_fetch_sub(&req->h->body_bytes, cap - req->cap);
		return -ENOMEM;
	}
	if (req->buf) {
		memcpy(grown, req->buf, req->len + 1);
		explicit_bzero(req->buf, req->cap);
		free(req->buf);
	}
	req->buf = grown;
	req->cap = cap;
	return 0;
}

/* One route: a path on one listener, the one method it takes (NULL when
 * the handler answers several itself, with its own 405), and its handler.
 * The table is what the listeners serve and what requests are counted
 * by (fw_http_requests): a request to any other path is 404 and counted
 * as "other", the last row of the counters. */
struct fw_route {
	const char *path;
	enum fw_listener listener;
	const char *method;
	void (*handle)(struct fw_http *h, struct MHD_Connection *c, const char *method,
		       const struct fw_req *req, struct fw_reply *r);
};

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static const char *body_of(const struct fw_req *req)
{
	return req->buf ? req->buf : "";
}

static void handle_actions(struct fw_http *h, struct MHD_Connection *c, const char *method,
			   const struct fw_req *req, struct fw_reply *r)
{
	(void)c;
	(void)method;
	fw_actions_post(h->a, body_of(req), req->len, r);
}

static void handle_status(struct fw_http *h, struct MHD_Connection *c, const char *method,
			  const struct fw_req *req, struct fw_reply *r)
{
	(void)c;
	(void)method;
	(void)req;
	fw_actions_status(h->a, r);
}

static void handle_policy(struct fw_http *h, struct MHD_Connection *c, const char *method,
			  const struct fw_req *req, struct fw_reply *r)
{
	fw_actions_policy(h->a, method, header(c, "X-Fast-Sandbox-Uid"),
			  header(c, "X-Fast-Sandbox-Generation"), body_of(req), req->len, r);
}

static void handle_vault(struct fw_http *h, struct MHD_Connection *c, const char *method,
			 const struct fw_req *req, struct fw_reply *r)
{
	fw_actions_vault(h->a, method, header(c, "X-Fast-Sandbox-Uid"),
			 header(c, "X-Fast-Sandbox-Generation"), body_of(req), req->len, r);
}

static void handle_vault_active(struct fw_http *h, struct MHD_Connection *c, const char *method,
				const struct fw_req *req, struct fw_reply *r)
{
	(void)method;
	(void)req;
	fw_actions_vault_active(h->a,
				MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "clientIp"),
				header(c, MHD_HTTP_HEADER_IF_NONE_MATCH), r);
}

static void handle_l7_ca(struct fw_http *h, struct MHD_Connection *c, const char *method,
			 const struct fw_req *req, struct fw_reply *r)
{
	(void)c;
	(void)method;
	(void)req;
	fw_actions_l7_ca(h->a, r);
}

static const struct fw_route routes[FW_HTTP_ROUTES - 1] = {
	{"/_fastlet/v1/actions", FW_TCP, "POST", handle_actions},
	{"/_fastlet/v1/actions/status", FW_TCP, "GET", handle_status},
	{"/policy", FW_TCP, NULL, handle_policy},
	{"/credential-vault", FW_TCP, NULL, handle_vault},
	{"/credential-vault/_active", FW_UNIX, "GET", handle_vault_active},
	{"/l7/ca.crt", FW_TCP, "GET", handle_l7_ca},
};
#define FW_ROUTE_OTHER (FW_HTTP_ROUTES - 1)

/* The row of url on listener which, or FW_ROUTE_OTHER. */
static unsigned int route_of(enum fw_listener which, const char *url)
{
	for (unsigned int i = 0; i < FW_ROUTE_OTHER; i++)
		if (routes[i].listener == which && !strcmp(url, routes[i].path))
			return i;
	return FW_ROUTE_OTHER;
}

static const char *route_name(unsigned int i)
{
	return i < FW_ROUTE_OTHER ? routes[i].path : "other";
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **con_cls)
{
	struct fw_ctx *ctx = cls;
	struct fw_req *req = *con_cls;
	struct fw_reply r = {};
	unsigned int route;

	(void)version;
	if (!req) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		struct framing fr = {};

		conn_set_deadline(c, FW_HTTP_REQUEST_S);
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		req->h = ctx->h;
		req->route = route_of(ctx->which, url);
		*con_cls = req;
		/* two lengths, or a length and chunking, frame the body two
		 * ways: whichever a proxy in front picked, we must not pick
		 * the other (request smuggling) */
		MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &fr);
		if (fr.conflicting_length || (fr.lengths && fr.chunked))
			return send_text(c, 400, "conflicting Content-Length or Transfer-Encoding",
					 NULL);
		/* refuse a declared oversize body before reading any of it */
		if (cl && strtoull(cl, NULL, 10) > FW_ENV_BODY_MAX)
			return send_text(c, 400, "request body too large", NULL);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (req->too_large || req->over_budget || req->len + n > FW_ENV_BODY_MAX) {
			req->too_large = !req->over_budget;
			body_release(req); /* drained, never kept */
			return MHD_YES;
		}
		if (req->len + n + 1 > req->cap && body_grow(req, req->len + n + 1)) {
			/* what it had so far goes too: it will be answered 503,
			 * and the budget is a bound only if a refused body
			 * holds nothing while it drains */
			req->over_budget = true;
			body_release(req);
			return MHD_YES;
		}
		memcpy(req->buf + req->len, upload_data, n);
		req->len += n;
		req->buf[req->len] = '\0';
		return MHD_YES;
	}
	if (req->too_large)
		return send_text(c, 400, "request body too large", NULL);
	if (req->over_budget)
		return send_text(c, 503, "too many request bodies in flight, try again", NULL);

	route = req->route;
	if (route == FW_ROUTE_OTHER)
		return send_text(c, 404, "404 page not found", NULL);
	if (routes[route].method && strcmp(method, routes[route].method)) {
		r.status = 405;
		r.allow = routes[route].method;
	} else {
		routes[route].handle(ctx->h, c, method, req, &r);
	}
	if (r.status == 405 && !r.body)
		return send_text(c, 405, "method not allowed", r.allow);
	return send_reply(c, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct fw_ctx *ctx = cls;
	const struct fw_req *req;
	enum MHD_Result ret;

	last_status = 0;
	ret = serve(cls, c, url, method, version, upload_data, upload_data_size, con_cls);
	req = *con_cls;
	if (req && last_status > 0 && last_status < FW_HTTP_CODES && ctx->h->requests)
		__atomic_add_fetch(&ctx->h->requests[req->route][last_status], 1, __ATOMIC_RELAXED);
	return ret;
}

void fw_http_requests(struct fw_http *h,
		      void (*fn)(void *ctx, const char *path, int code, uint64_t n), void *ctx)
{
	if (!h || !h->requests)
		return;
	for (unsigned int r = 0; r < FW_HTTP_ROUTES; r++)
		for (int code = 0; code < FW_HTTP_CODES; code++) {
			uint64_t n = __atomic_load_n(&h->requests[r][code], __ATOMIC_RELAXED);

			if (n)
				fn(ctx, route_name(r), code, n);
		}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct fw_req *req = *con_cls;

	(void)cls;
	(void)toe;
	/* a kept-alive connection has until then for its next headers */
	conn_set_deadline(c, FW_HTTP_HEADER_S);
	if (req) {
		body_release(req);
		free(req);
	}
	*con_cls = NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct fw_http *h = ((struct fw_ctx *)cls)->h;
	struct fw_http_conn *conn = *socket_context;
	const union MHD_ConnectionInfo *info;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		conn = calloc(1, sizeof(*conn));
		if (!conn || !info) {
			/* unwatched, but still under the idle timeout */
			free(conn);
			return;
		}
		conn->fd = info->connect_fd;
		conn->deadline_ms = now_ms() + FW_HTTP_HEADER_S * 1000;
		pthread_mutex_lock(&h->lock);
		conn->next = h->conns;
		if (h->conns)
			h->conns->prev = conn;
		h->conns = conn;
		pthread_mutex_unlock(&h->lock);
		*socket_context = conn;
		return;
	}
	if (!conn)
		return;
	/* libmicrohttpd closes the socket after this returns: unlinking
	 * under the lock keeps the reaper off a reused descriptor */
	pthread_mutex_lock(&h->lock);
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		h->conns = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	pthread_mutex_unlock(&h->lock);
	free(conn);
	*socket_context = NULL;
}

static void *reaper(void *arg)
{
	struct fw_http *h = arg;
	struct timespec ts;

	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		uint64_t now = now_ms();

		for (struct fw_http_conn *conn = h->conns; conn; conn = conn->next) {
			if (conn->deadline_ms > now)
				continue;
			/* libmicrohttpd sees end of stream and closes it */
			shutdown(conn->fd, SHUT_RDWR);
			conn->deadline_ms = UINT64_MAX;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
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
int fw_http_resolve(const char *listen, struct sockaddr_storage *ss)
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
	/* without it the listener serves, uncounted */
	h->requests = calloc(FW_HTTP_ROUTES, sizeof(*h->requests));
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&h->reaper, NULL, reaper, h);
	if (err) {
		fw_err("can't start the http reaper: %s", strerror(-err));
		goto fail;
	}
	h->reaper_started = true;
	err = fw_http_resolve(listen, &ss);
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
		(unsigned int)FW_HTTP_MAX_CONN, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned int)FW_HTTP_PER_IP, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, &ctx_tcp, MHD_OPTION_EXTERNAL_LOGGER,
		on_mhd_log, NULL, MHD_OPTION_END);
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
				     on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION,
				     on_connection, &ctx_unix, MHD_OPTION_EXTERNAL_LOGGER,
				     on_mhd_log, NULL, MHD_OPTION_END);
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
	if (h->reaper_started) {
		pthread_mutex_lock(&h->lock);
		h->stopping = true;
		pthread_cond_signal(&h->wake);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->reaper, NULL);
	}
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h->requests);
	free(h);
}
