/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress: authentication of service hostnames. There is no
 * unauthenticated path to a sandbox: a readable service host is
 * guessable, so knowing it gives nothing. A request for a service host
 * passes when the exposure is public, or with one of:
 *
 *   - a route scope in OpenSandbox-Ingress-To (or OPEN-SANDBOX-INGRESS),
 *     verified by user/lib/gateway/scope.c and naming exactly the
 *     service's workspace, sandbox and port; the answer then sets the
 *     gateway's cookie for that host (user/lib/gateway/service_cookie.c);
 *   - that cookie, bound by its mac to the host, the service and the port,
 *     valid until its expiry and while its key stays in the ring;
 *   - a 2xx from the subrequest to fastwall_ingress_service_auth's URI,
 *     made with nginx's subrequest machinery as auth_request does.
 *
 * Anything else is refused here, before the resolver or the sandbox is
 * contacted. Counters of passes and refusals live in a small shared zone
 * and are served by fastwall_ingress_service_metrics.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gateway/scope.h"
#include "gateway/service_cookie.h"
#include "ngx_http_fastwall_common.h"
#include "ngx_http_fastwall_hostnames.h"
#include "ngx_http_fastwall_host_auth.h"


#define NGX_HTTP_FWHA_TTL_DEFAULT    3600
#define NGX_HTTP_FWHA_TTL_MAX        (7 * 86400)
#define NGX_HTTP_FWHA_ZONE_SIZE      NGX_HTTP_FASTWALL_ZONE_MIN


/* how a request got through: one table for the code and the metric */
#define NGX_HTTP_FWHA_PASSES(X)                                              \
    X(PUBLIC, "public")                                                      \
    X(SCOPE, "scope")                                                        \
    X(COOKIE, "cookie")                                                      \
    X(AUTH, "auth_request")

/* why one was refused */
#define NGX_HTTP_FWHA_REASONS(X)                                             \
    X(NO_CREDENTIAL, "no_credential")                                        \
    X(SCOPE_INVALID, "scope_invalid")                                        \
    X(SCOPE_OTHER, "scope_other_service")                                    \
    X(SCOPE_TWICE, "scope_twice")                                            \
    X(COOKIE_INVALID, "cookie_invalid")                                      \
    X(COOKIE_EXPIRED, "cookie_expired")                                      \
    X(AUTH_DENIED, "auth_denied")                                            \
    X(AUTH_FAILED, "auth_failed")

enum {
#define NGX_HTTP_FWHA_ENUM(name, text) NGX_HTTP_FWHA_PASS_##name,
    NGX_HTTP_FWHA_PASSES(NGX_HTTP_FWHA_ENUM)
#undef NGX_HTTP_FWHA_ENUM
    NGX_HTTP_FWHA_PASS_MAX
};

enum {
#define NGX_HTTP_FWHA_ENUM(name, text) NGX_HTTP_FWHA_REFUSE_##name,
    NGX_HTTP_FWHA_REASONS(NGX_HTTP_FWHA_ENUM)
#undef NGX_HTTP_FWHA_ENUM
    NGX_HTTP_FWHA_REFUSE_MAX
};

static const char  *ngx_http_fwha_pass_names[] = {
#define NGX_HTTP_FWHA_TEXT(name, text) text,
    NGX_HTTP_FWHA_PASSES(NGX_HTTP_FWHA_TEXT)
#undef NGX_HTTP_FWHA_TEXT
};

static const char  *ngx_http_fwha_reason_names[] = {
#define NGX_HTTP_FWHA_TEXT(name, text) text,
    NGX_HTTP_FWHA_REASONS(NGX_HTTP_FWHA_TEXT)
#undef NGX_HTTP_FWHA_TEXT
};


/* the shared counters: every worker adds, the metrics handler reads */
typedef struct {
    ngx_atomic_t                passed[NGX_HTTP_FWHA_PASS_MAX];
    ngx_atomic_t                refused[NGX_HTTP_FWHA_REFUSE_MAX];
} ngx_http_fwha_shctx_t;


typedef struct {
    ngx_shm_zone_t             *shm_zone;
} ngx_http_fwha_main_conf_t;


typedef struct {
    ngx_str_t                   auth_uri;   /* "": off */
    time_t                      cookie_ttl;
    ngx_flag_t                  metrics;
} ngx_http_fwha_loc_conf_t;


typedef struct {
    ngx_http_fwh_row_t          row;
    ngx_str_t                   host;
    ngx_str_t                   set_cookie; /* the header's value, or "" */
    ngx_uint_t                  cookie_reason; /* a refused cookie's */
    ngx_int_t                   status;     /* the subrequest's */
    ngx_http_request_t         *subrequest;
    unsigned                    asking:1;   /* the subrequest runs */
    unsigned                    done:1;     /* it finished */
} ngx_http_fwha_ctx_t;


static ngx_int_t ngx_http_fwha_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_fwha_add_variables(ngx_conf_t *cf);
static void *ngx_http_fwha_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_fwha_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_fwha_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_fwha_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_fwha_auth(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwha_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_fwha_commands[] = {

    { ngx_string("fastwall_ingress_service_auth"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_fwha_auth,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_service_cookie_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fwha_loc_conf_t, cookie_ttl),
      NULL },

    { ngx_string("fastwall_ingress_service_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_fwha_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_host_auth_module_ctx = {
    ngx_http_fwha_add_variables,           /* preconfiguration */
    ngx_http_fwha_init,                    /* postconfiguration */

    ngx_http_fwha_create_main_conf,        /* create main configuration */
    ngx_http_fwha_init_main_conf,          /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_fwha_create_loc_conf,         /* create location configuration */
    ngx_http_fwha_merge_loc_conf           /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_host_auth_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_host_auth_module_ctx, /* module context */
    ngx_http_fwha_commands,                /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_output_header_filter_pt  ngx_http_fwha_next_header_filter;

static ngx_str_t  ngx_http_fwha_cookie_name =
    ngx_string(FW_SVC_COOKIE_NAME);


static void
ngx_http_fwha_count(ngx_http_request_t *r, ngx_uint_t pass, ngx_uint_t reason)
{
    ngx_http_fwha_shctx_t      *sh;
    ngx_http_fwha_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_host_auth_module);
    sh = mcf->shm_zone->data;

    if (sh == NULL) {
        return;
    }

    if (pass < NGX_HTTP_FWHA_PASS_MAX) {
        (void) ngx_atomic_fetch_add(&sh->passed[pass], 1);

    } else {
        (void) ngx_atomic_fetch_add(&sh->refused[reason], 1);
    }
}


/*
 * The one answer of every refusal but the auth endpoint's 403 and 503: it
 * names what would pass and nothing of the service (whether it exists,
 * what else is exposed, why this credential failed: that is in the log).
 */
static ngx_int_t
ngx_http_fwha_refuse(ngx_http_request_t *r, ngx_uint_t status,
    ngx_uint_t reason)
{
    ngx_int_t                   rc;
    ngx_str_t                   type;
    ngx_http_complex_value_t    cv;

    static ngx_str_t  unauthorized = ngx_string(
        "this service needs a credential: a route scope for its sandbox "
        "and port in OpenSandbox-Ingress-To, or the cookie the gateway "
        "sets after one\n");
    static ngx_str_t  forbidden = ngx_string(
        "the service's authentication refused this request\n");
    static ngx_str_t  unavailable = ngx_string(
        "the service's authentication is unavailable; try again later\n");

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fastwall ingress: service host request refused (%ui): %s",
                  status, ngx_http_fwha_reason_names[reason]);

    ngx_http_fwha_count(r, NGX_HTTP_FWHA_PASS_MAX, reason);

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    ngx_memzero(&cv, sizeof(ngx_http_complex_value_t));
    cv.value = (status == NGX_HTTP_FORBIDDEN) ? forbidden
               : (status == NGX_HTTP_SERVICE_UNAVAILABLE) ? unavailable
               : unauthorized;
    ngx_str_set(&type, "text/plain");

    ngx_http_finalize_request(r, ngx_http_send_response(r, status, &type,
                                                        &cv));

    return NGX_DONE;
}


/* the scope header, as the route logic takes it: To, then the legacy */
static ngx_int_t
ngx_http_fwha_scope_header(ngx_http_request_t *r, ngx_str_t *scope)
{
    ngx_uint_t        i, to, legacy;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *first_to, *first_legacy;

    to = 0;
    legacy = 0;
    first_to = NULL;
    first_legacy = NULL;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0) {
            continue;
        }

        if (h[i].key.len == sizeof("OpenSandbox-Ingress-To") - 1
            && ngx_strncasecmp(h[i].key.data,
                               (u_char *) "OpenSandbox-Ingress-To",
                               h[i].key.len) == 0)
        {
            to++;
            first_to = first_to ? first_to : &h[i];

        } else if (h[i].key.len == sizeof("OPEN-SANDBOX-INGRESS") - 1
                   && ngx_strncasecmp(h[i].key.data,
                                      (u_char *) "OPEN-SANDBOX-INGRESS",
                                      h[i].key.len) == 0)
        {
            legacy++;
            first_legacy = first_legacy ? first_legacy : &h[i];
        }
    }

    if (to > 1 || legacy > 1) {
        return NGX_HTTP_BAD_REQUEST;
    }

    h = first_to ? first_to : first_legacy;
    if (h == NULL) {
        return NGX_DECLINED;
    }

    *scope = h->value;

    return NGX_OK;
}


static void
ngx_http_fwha_binding(ngx_http_fwha_ctx_t *ctx, struct fw_svc_binding *b)
{
    b->host = (const char *) ctx->host.data;
    b->host_len = ctx->host.len;
    b->workspace = ctx->row.target.workspace;
    b->sandbox = ctx->row.target.sandbox;
    b->service = ctx->row.target.service;
    b->port = (unsigned int) ctx->row.port;
}


/* NGX_OK: a copy of the gateway's cookie is good for this service */
static ngx_int_t
ngx_http_fwha_cookie(ngx_http_request_t *r, ngx_http_fwha_ctx_t *ctx,
    const struct fw_scope_keyring *kr)
{
    int                     err;
    size_t                  pos, vlen;
    ngx_uint_t              i, seen;
    const char             *val;
    ngx_list_part_t        *part;
    ngx_table_elt_t        *h;
    struct fw_svc_binding   b;

    ngx_http_fwha_binding(ctx, &b);
    seen = 0;
    err = 0;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].key.len != 6
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Cookie", 6) != 0)
        {
            continue;
        }

        pos = 0;

        /* any copy may pass: another host's cookie for a parent domain
         * can sit beside this host's own */
        while (fw_cookie_next((const char *) h[i].value.data, h[i].value.len,
                              FW_SVC_COOKIE_NAME, &pos, &val, &vlen))
        {
            seen = 1;
            err = fw_svc_cookie_verify(kr, val, vlen, &b, ngx_time());
            if (err == 0) {
                return NGX_OK;
            }
        }
    }

    if (seen) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: service cookie refused: %s",
                      fw_svc_cookie_strerror(err));
        ctx->cookie_reason = (err == -FW_SVC_COOKIE_E_EXPIRED)
                             ? NGX_HTTP_FWHA_REFUSE_COOKIE_EXPIRED
                             : NGX_HTTP_FWHA_REFUSE_COOKIE_INVALID;
    }

    return NGX_DECLINED;
}


/*
 * The sandbox never sees the gateway's cookie: each Cookie header loses
 * its pairs of that name, and one left empty is removed (a hash of 0,
 * which the ingress module drops when it rebuilds the headers).
 */
static ngx_int_t
ngx_http_fwha_strip(ngx_http_request_t *r)
{
    size_t            len, pos, vlen;
    u_char           *out;
    ngx_uint_t        i;
    const char       *val;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].key.len != 6
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Cookie", 6) != 0)
        {
            continue;
        }

        pos = 0;
        if (!fw_cookie_next((const char *) h[i].value.data, h[i].value.len,
                            FW_SVC_COOKIE_NAME, &pos, &val, &vlen))
        {
            continue;
        }

        out = ngx_pnalloc(r->pool, 2 * h[i].value.len + 1);
        if (out == NULL) {
            return NGX_ERROR;
        }

        len = fw_cookie_strip((const char *) h[i].value.data, h[i].value.len,
                              FW_SVC_COOKIE_NAME, (char *) out);
        out[len] = '\0';

        h[i].value.data = out;
        h[i].value.len = len;

        if (len == 0) {
            h[i].hash = 0;
        }
    }

    return NGX_OK;
}


/* Set-Cookie for the host of a request whose scope verified */
static ngx_int_t
ngx_http_fwha_make_cookie(ngx_http_request_t *r, ngx_http_fwha_ctx_t *ctx,
    const struct fw_scope_keyring *kr, char key_id)
{
    int                        n;
    char                       value[FW_SVC_COOKIE_TEXT_MAX];
    u_char                    *p;
    struct fw_svc_binding      b;
    ngx_http_fwha_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_host_auth_module);

    ngx_http_fwha_binding(ctx, &b);

    n = fw_svc_cookie_sign(kr, key_id, &b, ngx_time() + lcf->cookie_ttl,
                           value, sizeof(value));
    if (n < 0) {
        /* the request passes on its scope; only the cookie is missing */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: no service cookie: %s",
                      fw_svc_cookie_strerror(n));
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, ngx_http_fwha_cookie_name.len + 1 + n
                             + sizeof("; Max-Age=; Path=/; HttpOnly; "
                                      "SameSite=Lax; Secure")
                             + NGX_TIME_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->set_cookie.data = p;

    /* no Domain: the cookie goes back to this host only */
    p = ngx_sprintf(p, "%V=%*s; Max-Age=%T; Path=/; HttpOnly; SameSite=Lax",
                    &ngx_http_fwha_cookie_name, (size_t) n, value,
                    lcf->cookie_ttl);

#if (NGX_HTTP_SSL)
    if (r->connection->ssl) {
        p = ngx_cpymem(p, "; Secure", 8);
    }
#endif

    ctx->set_cookie.len = p - ctx->set_cookie.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwha_done(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    ngx_http_fwha_ctx_t *ctx = data;

    ctx->done = 1;
    ctx->status = r->headers_out.status;

    /* a subrequest nginx failed itself: no status worth trusting */
    if (rc == NGX_ERROR || rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        if (ctx->status < NGX_HTTP_SPECIAL_RESPONSE) {
            ctx->status = NGX_HTTP_BAD_GATEWAY;
        }
    }

    return rc;
}


static ngx_int_t
ngx_http_fwha_ask(ngx_http_request_t *r, ngx_http_fwha_ctx_t *ctx,
    ngx_http_fwha_loc_conf_t *lcf)
{
    ngx_http_request_t          *sr;
    ngx_http_post_subrequest_t  *ps;

    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    if (ps == NULL) {
        return NGX_ERROR;
    }

    ps->handler = ngx_http_fwha_done;
    ps->data = ctx;

    if (ngx_http_subrequest(r, &lcf->auth_uri, NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_WAITED)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the client's headers go along, its body never: a fake empty one
     * keeps the upstream from reading (or closing) the real one */
    sr->request_body = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    if (sr->request_body == NULL) {
        return NGX_ERROR;
    }

    sr->header_only = 1;

    ctx->subrequest = sr;
    ctx->asking = 1;

    return NGX_AGAIN;
}


/* the auth endpoint's challenge goes to the client, as auth_request's */
static ngx_int_t
ngx_http_fwha_challenge(ngx_http_request_t *r, ngx_http_fwha_ctx_t *ctx)
{
    ngx_table_elt_t     *h, *ho;
    ngx_http_request_t  *sr;

    sr = ctx->subrequest;
    h = sr->headers_out.www_authenticate;

    if (h == NULL && sr->upstream) {
        h = sr->upstream->headers_in.www_authenticate;
    }

    if (h == NULL) {
        return NGX_OK;
    }

    ho = ngx_list_push(&r->headers_out.headers);
    if (ho == NULL) {
        return NGX_ERROR;
    }

    *ho = *h;
    r->headers_out.www_authenticate = ho;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwha_pass(ngx_http_request_t *r, ngx_uint_t how)
{
    ngx_http_fwha_count(r, how, 0);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fastwall ingress: service host passed by %s",
                   ngx_http_fwha_pass_names[how]);

    return ngx_http_fwha_strip(r) == NGX_OK ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_fwha_check(ngx_http_request_t *r, const struct fw_scope_keyring *kr,
    ngx_http_fwh_row_t *row, ngx_str_t *host)
{
    int                        err;
    ngx_int_t                  rc;
    ngx_str_t                  scope;
    struct fw_scope            sc;
    ngx_http_fwha_ctx_t       *ctx;
    ngx_http_fwha_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_host_auth_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_host_auth_module);

    if (ctx && ctx->asking) {
        if (!ctx->done) {
            return NGX_AGAIN;
        }

        ctx->asking = 0;

        if (ctx->status >= NGX_HTTP_OK
            && ctx->status < NGX_HTTP_SPECIAL_RESPONSE)
        {
            return ngx_http_fwha_pass(r, NGX_HTTP_FWHA_PASS_AUTH);
        }

        if (ctx->status == NGX_HTTP_UNAUTHORIZED
            && ngx_http_fwha_challenge(r, ctx) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ctx->status == NGX_HTTP_UNAUTHORIZED
            || ctx->status == NGX_HTTP_FORBIDDEN)
        {
            return ngx_http_fwha_refuse(r, ctx->status,
                                        NGX_HTTP_FWHA_REFUSE_AUTH_DENIED);
        }

        /* down, timed out, a redirect, an error: closed, not open */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: the service auth request to "
                      "\"%V\" answered %i: refused", &lcf->auth_uri,
                      ctx->status);

        return ngx_http_fwha_refuse(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                    NGX_HTTP_FWHA_REFUSE_AUTH_FAILED);
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fwha_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ngx_http_set_ctx(r, ctx, ngx_http_fastwall_host_auth_module);
    }

    ctx->row = *row;
    ctx->host = *host;

    /* a scope header is the credential the client chose: it alone
     * decides, even when a cookie or the auth endpoint would say yes */
    rc = ngx_http_fwha_scope_header(r, &scope);

    if (rc == NGX_HTTP_BAD_REQUEST) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: service host request with two "
                      "copies of a scope header: refused");
        ngx_http_fwha_count(r, NGX_HTTP_FWHA_PASS_MAX,
                            NGX_HTTP_FWHA_REFUSE_SCOPE_TWICE);
        return NGX_HTTP_BAD_REQUEST;
    }

    if (rc == NGX_OK) {
        err = fw_scope_verify(kr, (const char *) scope.data, scope.len, &sc);
        if (err) {
            /* never the scope itself: it is the credential */
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "fastwall ingress: route scope for a service host "
                          "refused: %s", fw_scope_strerror(err));
            return ngx_http_fwha_refuse(r, NGX_HTTP_UNAUTHORIZED,
                                        NGX_HTTP_FWHA_REFUSE_SCOPE_INVALID);
        }

        if (sc.port != row->port
            || sc.ns_len != ngx_strlen(row->target.workspace)
            || ngx_strncmp(sc.ns, row->target.workspace, sc.ns_len) != 0
            || sc.sandbox_len != ngx_strlen(row->target.sandbox)
            || ngx_strncmp(sc.sandbox, row->target.sandbox, sc.sandbox_len)
               != 0)
        {
            return ngx_http_fwha_refuse(r, NGX_HTTP_UNAUTHORIZED,
                                        NGX_HTTP_FWHA_REFUSE_SCOPE_OTHER);
        }

        if (ngx_http_fwha_make_cookie(r, ctx, kr, sc.key_id) != NGX_OK) {
            return NGX_ERROR;
        }

        return ngx_http_fwha_pass(r, NGX_HTTP_FWHA_PASS_SCOPE);
    }

    if (row->public) {
        return ngx_http_fwha_pass(r, NGX_HTTP_FWHA_PASS_PUBLIC);
    }

    if (ngx_http_fwha_cookie(r, ctx, kr) == NGX_OK) {
        return ngx_http_fwha_pass(r, NGX_HTTP_FWHA_PASS_COOKIE);
    }

    if (lcf->auth_uri.len) {
        return ngx_http_fwha_ask(r, ctx, lcf);
    }

    return ngx_http_fwha_refuse(r, NGX_HTTP_UNAUTHORIZED,
                                ctx->cookie_reason
                                ? ctx->cookie_reason
                                : NGX_HTTP_FWHA_REFUSE_NO_CREDENTIAL);
}


/*
 * On the answer: the cookie a verified scope earned, and no Set-Cookie of
 * the gateway's name from the sandbox (a service could otherwise plant
 * one for a parent domain and shadow its siblings' cookies).
 */
static ngx_int_t
ngx_http_fwha_header_filter(ngx_http_request_t *r)
{
    ngx_uint_t            i;
    ngx_list_part_t      *part;
    ngx_table_elt_t      *h;
    ngx_http_fwha_ctx_t  *ctx;

    if (r != r->main) {
        return ngx_http_fwha_next_header_filter(r);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_host_auth_module);
    if (ctx == NULL) {
        return ngx_http_fwha_next_header_filter(r);
    }

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash != 0 && h[i].key.len == 10
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Set-Cookie", 10)
               == 0
            && h[i].value.len > ngx_http_fwha_cookie_name.len
            && ngx_strncmp(h[i].value.data, ngx_http_fwha_cookie_name.data,
                           ngx_http_fwha_cookie_name.len) == 0
            && h[i].value.data[ngx_http_fwha_cookie_name.len] == '=')
        {
            h[i].hash = 0;
        }
    }

    if (ctx->set_cookie.len) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Set-Cookie");
        h->value = ctx->set_cookie;
    }

    return ngx_http_fwha_next_header_filter(r);
}


/* metrics, Prometheus' text format */

static ngx_int_t
ngx_http_fwha_metrics_handler(ngx_http_request_t *r)
{
    u_char                     *p, *body;
    ngx_int_t                   rc;
    ngx_buf_t                  *b;
    ngx_uint_t                  i, services, pub;
    ngx_chain_t                 out;
    ngx_http_fwha_shctx_t      *sh;
    ngx_http_fwha_main_conf_t  *mcf;

    if (r->method != NGX_HTTP_GET && r->method != NGX_HTTP_HEAD) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_host_auth_module);
    sh = mcf->shm_zone->data;

    ngx_http_fwh_count(r, &services, &pub);

    body = ngx_pnalloc(r->pool, 2048);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(body,
            "# HELP fastwall_ingress_service_exposures Exposed services in "
            "the hostname index, by whether they need a credential.\n"
            "# TYPE fastwall_ingress_service_exposures gauge\n"
            "fastwall_ingress_service_exposures{access=\"public\"} %ui\n"
            "fastwall_ingress_service_exposures{access=\"authenticated\"} "
            "%ui\n"
            "# HELP fastwall_ingress_service_requests_total Service host "
            "requests let through, by the credential that did.\n"
            "# TYPE fastwall_ingress_service_requests_total counter\n",
            pub, services - pub);

    for (i = 0; i < NGX_HTTP_FWHA_PASS_MAX; i++) {
        p = ngx_sprintf(p, "fastwall_ingress_service_requests_total"
                        "{credential=\"%s\"} %uA\n",
                        ngx_http_fwha_pass_names[i],
                        sh ? sh->passed[i] : 0);
    }

    p = ngx_sprintf(p,
            "# HELP fastwall_ingress_service_refused_total Service host "
            "requests refused before the sandbox, by reason.\n"
            "# TYPE fastwall_ingress_service_refused_total counter\n");

    for (i = 0; i < NGX_HTTP_FWHA_REFUSE_MAX; i++) {
        p = ngx_sprintf(p, "fastwall_ingress_service_refused_total"
                        "{reason=\"%s\"} %uA\n",
                        ngx_http_fwha_reason_names[i],
                        sh ? sh->refused[i] : 0);
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = p - body;
    ngx_str_set(&r->headers_out.content_type, "text/plain; version=0.0.4");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body;
    b->last = p;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* variables for the auth location: which service is asked for */

static ngx_int_t
ngx_http_fwha_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    u_char               *p;
    ngx_http_fwha_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fastwall_host_auth_module);

    if (ctx == NULL || ctx->host.len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, 3 * FW_HOSTNAME_NAME_MAX + 2 + NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->data = p;

    switch (data) {
    case 0:
        p = ngx_sprintf(p, "%s/%s/%s", ctx->row.target.workspace,
                        ctx->row.target.sandbox, ctx->row.target.service);
        break;
    default:
        p = ngx_sprintf(p, "%ui", ctx->row.port);
        break;
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_fwha_vars[] = {

    { ngx_string("fastwall_ingress_service"), NULL,
      ngx_http_fwha_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_service_port"), NULL,
      ngx_http_fwha_variable, 1, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_fwha_add_variables(ngx_conf_t *cf)
{
    return ngx_http_fastwall_add_variables(cf, ngx_http_fwha_vars);
}


static ngx_int_t
ngx_http_fwha_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_uint_t  fresh;

    if (data) {
        /* a reload keeps the counters */
        shm_zone->data = data;
        return NGX_OK;
    }

    shm_zone->data = ngx_http_fastwall_zone_context(shm_zone,
                         sizeof(ngx_http_fwha_shctx_t),
                         "fastwall_ingress service auth", &fresh);

    return shm_zone->data ? NGX_OK : NGX_ERROR;
}


static ngx_int_t
ngx_http_fwha_init(ngx_conf_t *cf)
{
    ngx_http_fwha_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_fwha_header_filter;

    return NGX_OK;
}


static void *
ngx_http_fwha_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_fwha_main_conf_t));
}


static char *
ngx_http_fwha_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_fwha_main_conf_t *mcf = conf;

    ngx_str_t  name = ngx_string("fastwall_ingress_service_auth");

    mcf->shm_zone = ngx_shared_memory_add(cf, &name, NGX_HTTP_FWHA_ZONE_SIZE,
                                          &ngx_http_fastwall_host_auth_module);
    if (mcf->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    mcf->shm_zone->init = ngx_http_fwha_init_zone;

    return NGX_CONF_OK;
}


static void *
ngx_http_fwha_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_fwha_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwha_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    /* auth_uri.data NULL: unset; "" with data: off */
    lcf->cookie_ttl = NGX_CONF_UNSET;
    lcf->metrics = NGX_CONF_UNSET;

    return lcf;
}


static char *
ngx_http_fwha_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fwha_loc_conf_t *prev = parent;
    ngx_http_fwha_loc_conf_t *conf = child;

    if (conf->auth_uri.data == NULL) {
        conf->auth_uri = prev->auth_uri;
    }

    ngx_conf_merge_sec_value(conf->cookie_ttl, prev->cookie_ttl,
                             NGX_HTTP_FWHA_TTL_DEFAULT);

    if (conf->cookie_ttl < 1 || conf->cookie_ttl > NGX_HTTP_FWHA_TTL_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_service_cookie_ttl: %T s is not "
                           "between 1s and 7d", conf->cookie_ttl);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_fwha_auth(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwha_loc_conf_t *lcf = conf;

    ngx_str_t  *value;

    if (lcf->auth_uri.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        lcf->auth_uri.len = 0;
        lcf->auth_uri.data = (u_char *) "";
        return NGX_CONF_OK;
    }

    if (value[1].len == 0 || value[1].data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_service_auth: \"%V\" is neither "
                           "a URI starting with / nor off", &value[1]);
        return NGX_CONF_ERROR;
    }

    lcf->auth_uri = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_fwha_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwha_loc_conf_t *lcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->metrics != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    lcf->metrics = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fwha_metrics_handler;

    return NGX_CONF_OK;
}
