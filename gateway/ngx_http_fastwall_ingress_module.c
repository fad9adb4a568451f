/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress: an access-phase handler that takes a signed route
 * scope from a header or the first path segment, verifies it, resolves
 * where the sandbox's port is reachable through FastPath ResolveEndpoint
 * (an in-memory gRPC subrequest), caches the answer in shared memory, and
 * hands proxy_pass the upstream and the raw rest of the URI in variables.
 * A header and a body filter turn the Fastlet's proxy-error markers into
 * 503 and drop the cache entry of a route that stopped working.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gateway/scope.h"
#include "gateway/fastpath.h"
#include "gateway/policy_port.h"
#include "ngx_http_fastwall_common.h"
#include "ngx_http_fastwall_cluster.h"
#include "ngx_http_fastwall_hostnames.h"
#include "ngx_http_fastwall_host_auth.h"


#define NGX_HTTP_FWI_MODE_HEADER     0
#define NGX_HTTP_FWI_MODE_URI        1

#define NGX_HTTP_FWI_EXPIRY_MARGIN   5      /* seconds before expires_at */
#define NGX_HTTP_FWI_PENDING         3000   /* ms a resolve may hold a key */
#define NGX_HTTP_FWI_WAIT            2500   /* ms a second miss waits */
#define NGX_HTTP_FWI_POLL            10     /* ms between its looks */
#define NGX_HTTP_FWI_SCOPES          256    /* verified scopes per worker */
#define NGX_HTTP_FWI_MAC_TEXT        22     /* base64url of the 16-byte mac */
#define NGX_HTTP_FWI_PEERS           64     /* parsed endpoints per worker */
#define NGX_HTTP_FWI_PEER_TEXT       64     /* longest one kept */


/*
 * A scope this worker verified: the text before the mac (the part that
 * names the route), the mac's text, and the route it named. A request
 * whose scope has the same text before the mac and, compared in constant
 * time, the same mac text is the same string, verified with the same key
 * ring: it skips parsing and the HMAC. Process memory, one table per
 * configuration, so a reload's new key ring starts with an empty one.
 * The route only: the cache key adds the access mode of the location
 * that asks, which another location may set otherwise.
 */
typedef struct {
    uint32_t                    hash;      /* of the text before the mac */
    u_short                     prefix_len;
    u_short                     ns_len;
    u_short                     sandbox_len;
    ngx_uint_t                  port;
    u_char                      mac[NGX_HTTP_FWI_MAC_TEXT];
    u_char                      data[1];   /* prefix, ns, \0, sandbox */
} ngx_http_fwi_scope_t;


typedef struct {
    ngx_str_t                   keys_path;
    struct fw_scope_keyring    *keyring;
    ngx_str_t                   resolver;
    ngx_str_t                   resolver_url; /* grpc[s]://ADDRESS:PORT */
    ngx_flag_t                  resolver_tls;
    size_t                      cache_size;
    ngx_shm_zone_t             *shm_zone;
    ngx_http_fwi_scope_t      **scopes;    /* NGX_HTTP_FWI_SCOPES slots */
} ngx_http_fwi_main_conf_t;


typedef struct {
    ngx_flag_t                  enable;
    ngx_uint_t                  mode;
    ngx_uint_t                  access_mode;
} ngx_http_fwi_loc_conf_t;


typedef struct {
    ngx_rbtree_t                rbtree;
    ngx_rbtree_node_t           sentinel;
    ngx_queue_t                 lru;
} ngx_http_fwi_shctx_t;


/* one cache entry: key, then upstream, then credential in data[] */
typedef struct {
    ngx_rbtree_node_t           node;
    ngx_queue_t                 lru;
    time_t                      valid_until;   /* 0: no answer yet */
    time_t                      touched;       /* last moved up the LRU */
    ngx_msec_t                  pending_until; /* 0: nobody resolving */
    ngx_uint_t                  gen;           /* resolves finished */
    ngx_uint_t                  fail_status;   /* the last one's, or 0 */
    u_short                     key_len;
    u_short                     upstream_len;
    u_short                     cred_len;
    u_char                      data[1];
} ngx_http_fwi_node_t;


typedef struct {
    ngx_http_fwi_shctx_t       *sh;
    ngx_slab_pool_t            *shpool;
} ngx_http_fwi_cache_t;


/* an IP endpoint's address (ngx_sockaddr_t would add a Unix path) */
typedef union {
    struct sockaddr             sockaddr;
    struct sockaddr_in          sockaddr_in;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6         sockaddr_in6;
#endif
} ngx_http_fwi_sockaddr_t;


typedef struct {
    ngx_str_t                   ns;
    ngx_str_t                   sandbox;
    ngx_uint_t                  port;
    u_char                     *key;       /* ns \0 sandbox \0 port \0 mode */
    size_t                      key_len;
    uint32_t                    hash;

    ngx_str_t                   upstream;  /* scheme://host[:port] */
    ngx_str_t                   uri;       /* raw rest, query included */
    ngx_str_t                   credential;
    ngx_addr_t                  peer;      /* for the balancer, parsed once */
    ngx_http_fwi_sockaddr_t     peer_sa;   /* peer.sockaddr, when memoized */

    ngx_http_request_t         *subrequest;
    ngx_msec_t                  wait_until;
    ngx_uint_t                  wait_gen;  /* n->gen when it began waiting */
    ngx_int_t                   status;    /* when done: NGX_OK or HTTP */

    unsigned                    resolving:1;
    unsigned                    done:1;
    unsigned                    owner:1;   /* holds the key's pending mark */
    unsigned                    waiting:1; /* on another request's resolve */
    unsigned                    routed:1;  /* the request goes upstream */
    unsigned                    swallow:1; /* replace the body by nothing */
    unsigned                    scope_header:2; /* NGX_HTTP_FWI_SCOPE_* */
    unsigned                    authing:1; /* a service host's auth runs */
    unsigned                    store_wait:1; /* waits for the store */
    unsigned                    refused:1; /* answered by the host auth */
} ngx_http_fwi_ctx_t;


/* the client's scope header that carried the verified scope, if one did */
#define NGX_HTTP_FWI_SCOPE_NONE      0
#define NGX_HTTP_FWI_SCOPE_TO        1    /* OpenSandbox-Ingress-To */
#define NGX_HTTP_FWI_SCOPE_LEGACY    2    /* OPEN-SANDBOX-INGRESS */


enum {
    NGX_HTTP_FWI_HIT,
    NGX_HTTP_FWI_WAIT_OTHER,
    NGX_HTTP_FWI_FAILED,       /* the resolve waited on failed: ctx->status */
    NGX_HTTP_FWI_RESOLVE
};


static ngx_int_t ngx_http_fwi_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fwi_start(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx);
static ngx_int_t ngx_http_fwi_service(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx, ngx_http_fwh_row_t *row, ngx_str_t *host);
static ngx_int_t ngx_http_fwi_routed(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx, ngx_str_t *scope);
static ngx_int_t ngx_http_fwi_set_key(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx, u_char *ns, size_t ns_len, u_char *sandbox,
    size_t sandbox_len, ngx_uint_t port);
static ngx_int_t ngx_http_fwi_resolve(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx);
static ngx_int_t ngx_http_fwi_resolve_done(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static void ngx_http_fwi_wait_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fwi_finish(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx);
static ngx_int_t ngx_http_fwi_retry_later(ngx_http_request_t *r);
static ngx_int_t ngx_http_fwi_cache_lookup(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx);
static void ngx_http_fwi_cache_store(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx, time_t valid_until);
static void ngx_http_fwi_cache_drop(ngx_http_request_t *r,
    ngx_http_fwi_ctx_t *ctx);
static ngx_int_t ngx_http_fwi_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_fwi_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_fwi_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_fwi_init(ngx_conf_t *cf);
static void *ngx_http_fwi_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_fwi_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_fwi_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_fwi_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_fwi_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwi_resolver(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwi_balancer(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_conf_enum_t  ngx_http_fwi_modes[] = {
    { ngx_string("header"), NGX_HTTP_FWI_MODE_HEADER },
    { ngx_string("uri"), NGX_HTTP_FWI_MODE_URI },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_fwi_access_modes[] = {
    { ngx_string("direct-fastlet-proxy"), FW_FASTPATH_DIRECT_FASTLET_PROXY },
    { ngx_string("central-proxy"), FW_FASTPATH_CENTRAL_PROXY },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_fwi_commands[] = {

    { ngx_string("fastwall_ingress"),
      NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fwi_loc_conf_t, enable),
      NULL },

    { ngx_string("fastwall_ingress_mode"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fwi_loc_conf_t, mode),
      &ngx_http_fwi_modes },

    { ngx_string("fastwall_ingress_access_mode"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fwi_loc_conf_t, access_mode),
      &ngx_http_fwi_access_modes },

    { ngx_string("fastwall_ingress_keys"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwi_keys,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_resolver"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwi_resolver,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cache_size"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fastwall_conf_set_zone_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwi_main_conf_t, cache_size),
      NULL },

    { ngx_string("fastwall_ingress_upstream"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_fwi_balancer,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_ingress_module_ctx = {
    ngx_http_fwi_add_variables,            /* preconfiguration */
    ngx_http_fwi_init,                     /* postconfiguration */

    ngx_http_fwi_create_main_conf,         /* create main configuration */
    ngx_http_fwi_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_fwi_create_loc_conf,          /* create location configuration */
    ngx_http_fwi_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_ingress_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_ingress_module_ctx, /* module context */
    ngx_http_fwi_commands,                 /* module directives */
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


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;

static ngx_str_t  ngx_http_fwi_resolve_uri = ngx_string(FW_FASTPATH_RESOLVE);
static ngx_str_t  ngx_http_fwi_post = ngx_string("POST");
static ngx_str_t  ngx_http_fwi_cred_name =
    ngx_string(FW_FASTPATH_CREDENTIAL_HEADER);
/* the scope's headers by nginx's hash of their lower-case names */
static ngx_str_t   ngx_http_fwi_to_lc = ngx_string("opensandbox-ingress-to");
static ngx_str_t   ngx_http_fwi_legacy_lc =
    ngx_string("open-sandbox-ingress");
static ngx_uint_t  ngx_http_fwi_to_hash;
static ngx_uint_t  ngx_http_fwi_legacy_hash;

/* its lower-case form and hash, for the header lists, set at init */
static u_char      ngx_http_fwi_cred_lc_data[
                       sizeof(FW_FASTPATH_CREDENTIAL_HEADER)];
static ngx_str_t   ngx_http_fwi_cred_lc = {
    sizeof(FW_FASTPATH_CREDENTIAL_HEADER) - 1, ngx_http_fwi_cred_lc_data
};
static ngx_uint_t  ngx_http_fwi_cred_hash;


/*
 * The first request header of a lower-case name, and how many the request
 * has, by the name's hash, which nginx computed for every header it
 * parsed (HTTP/1 and HTTP/2): no case-insensitive compare per header. A
 * hash of 0 is a removed header.
 */
static ngx_table_elt_t *
ngx_http_fwi_find_request_header(ngx_http_request_t *r, ngx_str_t *lc,
    ngx_uint_t hash, ngx_uint_t *copies)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *first;

    first = NULL;
    *copies = 0;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return first;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == hash && h[i].key.len == lc->len
            && ngx_memcmp(h[i].lowcase_key, lc->data, lc->len) == 0)
        {
            if (first == NULL) {
                first = &h[i];
            }

            (*copies)++;
        }
    }
}


/*
 * The scope and the URI the upstream gets. Header mode: the first of
 * OpenSandbox-Ingress-To, OPEN-SANDBOX-INGRESS and Host, the URI as the
 * client sent it; ctx->scope_header says which header, the one copy the
 * upstream gets (ngx_http_fwi_set_headers). Two copies of one scope
 * header are 400: which of them the client meant is anybody's guess.
 * URI mode: the first path segment, and the raw rest.
 */
static ngx_int_t
ngx_http_fwi_route(ngx_http_request_t *r, ngx_http_fwi_loc_conf_t *lcf,
    ngx_http_fwi_ctx_t *ctx, ngx_str_t *scope, ngx_str_t *uri)
{
    u_char           *p, *end, *seg;
    ngx_uint_t        to_copies, legacy_copies;
    ngx_table_elt_t  *h, *legacy;

    if (lcf->mode == NGX_HTTP_FWI_MODE_HEADER) {
        h = ngx_http_fwi_find_request_header(r, &ngx_http_fwi_to_lc,
                                             ngx_http_fwi_to_hash,
                                             &to_copies);
        legacy = ngx_http_fwi_find_request_header(r, &ngx_http_fwi_legacy_lc,
                                                  ngx_http_fwi_legacy_hash,
                                                  &legacy_copies);

        if (to_copies > 1 || legacy_copies > 1) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "fastwall ingress: %ui copies of "
                          "OpenSandbox-Ingress-To and %ui of "
                          "OPEN-SANDBOX-INGRESS: which is the route is "
                          "ambiguous", to_copies, legacy_copies);
            return NGX_HTTP_BAD_REQUEST;
        }

        if (h != NULL) {
            ctx->scope_header = NGX_HTTP_FWI_SCOPE_TO;

        } else if (legacy != NULL) {
            h = legacy;
            ctx->scope_header = NGX_HTTP_FWI_SCOPE_LEGACY;
        }

        if (h != NULL) {
            *scope = h->value;

        } else if (r->headers_in.host) {
            *scope = r->headers_in.host->value;

            /* a scope has no colon: what follows one is the port */
            p = ngx_strlchr(scope->data, scope->data + scope->len, ':');
            if (p) {
                scope->len = p - scope->data;
            }

        } else {
            return NGX_DECLINED;
        }

        *uri = r->unparsed_uri;
        return NGX_OK;
    }

    p = r->unparsed_uri.data;
    end = p + r->unparsed_uri.len;

    if (p == end || *p != '/') {
        return NGX_DECLINED;
    }

    seg = ++p;

    while (p < end && *p != '/' && *p != '?') {
        p++;
    }

    scope->data = seg;
    scope->len = p - seg;

    if (p < end && *p == '/') {
        uri->data = p;
        uri->len = end - p;
        return NGX_OK;
    }

    /* "/<scope>" or "/<scope>?query": the rest is "/" and the query */
    uri->len = 1 + (end - p);
    uri->data = ngx_pnalloc(r->pool, uri->len);
    if (uri->data == NULL) {
        return NGX_ERROR;
    }

    uri->data[0] = '/';
    ngx_memcpy(uri->data + 1, p, end - p);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwi_handler(ngx_http_request_t *r)
{
    ngx_int_t                  rc;
    ngx_http_fwi_ctx_t        *ctx;
    ngx_http_fwi_loc_conf_t   *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_ingress_module);

    if (!lcf->enable || r != r->main) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_ingress_module);

    if (ctx == NULL || ctx->authing) {

        if (ctx == NULL) {
            ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fwi_ctx_t));
            if (ctx == NULL) {
                return NGX_ERROR;
            }

            ngx_http_set_ctx(r, ctx, ngx_http_fastwall_ingress_module);

            rc = ngx_http_fwi_start(r, ctx);

        } else {
            /* woken: the service host's auth subrequest may be done */
            rc = ngx_http_fwi_service(r, ctx, NULL, NULL);
        }

        if (rc == NGX_AGAIN && ctx->store_wait) {
            /* the service store is being read: start again after it */
            ngx_http_set_ctx(r, NULL, ngx_http_fastwall_ingress_module);
            return NGX_AGAIN;
        }

        ctx->authing = (rc == NGX_AGAIN);

        if (rc == NGX_AGAIN) {
            return NGX_AGAIN;
        }

        if (rc == NGX_DONE && ctx->refused) {
            /* refused and answered by the host auth */
            ctx->done = 1;
            return NGX_DONE;
        }

        if (rc == NGX_DONE) {
            /* forwarded to another cluster's gateway: no resolve here */
            ctx->done = 1;
            ctx->status = NGX_OK;
            ctx->routed = 1;
            return NGX_OK;
        }

        if (rc != NGX_OK) {
            ctx->done = 1;
            ctx->status = rc;
            return rc;
        }

    } else if (ctx->resolving) {
        return NGX_AGAIN;

    } else if (ctx->done) {
        if (ctx->refused) {
            return NGX_DONE;
        }

        return ngx_http_fwi_finish(r, ctx);
    }

    /* a new request, or a second miss looking again */

    switch (ngx_http_fwi_cache_lookup(r, ctx)) {

    case NGX_HTTP_FWI_HIT:
        ctx->done = 1;
        ctx->status = NGX_OK;
        return ngx_http_fwi_finish(r, ctx);

    case NGX_HTTP_FWI_FAILED:
        ctx->done = 1;
        return ngx_http_fwi_finish(r, ctx);

    case NGX_HTTP_FWI_WAIT_OTHER:
        if (ctx->wait_until == 0) {
            ctx->wait_until = ngx_current_msec + NGX_HTTP_FWI_WAIT;

        } else if ((ngx_msec_int_t) (ngx_current_msec - ctx->wait_until)
                   >= 0)
        {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fastwall ingress: gave up waiting for another "
                          "resolve of %V/%V:%ui", &ctx->ns, &ctx->sandbox,
                          ctx->port);
            ctx->done = 1;
            ctx->status = NGX_HTTP_SERVICE_UNAVAILABLE;
            return ngx_http_fwi_finish(r, ctx);
        }

        r->read_event_handler = ngx_http_test_reading;
        r->write_event_handler = ngx_http_fwi_wait_handler;
        r->connection->write->delayed = 1;
        ngx_add_timer(r->connection->write, NGX_HTTP_FWI_POLL);
        return NGX_AGAIN;

    default:
        return ngx_http_fwi_resolve(r, ctx);
    }
}


/*
 * The length of the text before the mac, its last dot included, when the
 * scope ends in a dot and a mac's worth of text; else 0. Not a check: a
 * scope is valid only if fw_scope_verify said so for the same string.
 */
static size_t
ngx_http_fwi_scope_prefix(ngx_str_t *scope)
{
    size_t  n;

    if (scope->len <= NGX_HTTP_FWI_MAC_TEXT) {
        return 0;
    }

    n = scope->len - NGX_HTTP_FWI_MAC_TEXT;

    return scope->data[n - 1] == '.' ? n : 0;
}


/* NGX_OK: the scope is one this worker verified, its route in ctx */
static ngx_int_t
ngx_http_fwi_scope_cached(ngx_http_request_t *r,
    ngx_http_fwi_main_conf_t *mcf, ngx_str_t *scope, ngx_http_fwi_ctx_t *ctx)
{
    size_t                 n;
    uint32_t               hash;
    ngx_http_fwi_scope_t  *e;

    n = ngx_http_fwi_scope_prefix(scope);
    if (n == 0) {
        return NGX_DECLINED;
    }

    hash = ngx_murmur_hash2(scope->data, n);
    e = mcf->scopes[hash % NGX_HTTP_FWI_SCOPES];

    /* the text before the mac names the route and is no secret */
    if (e == NULL || e->hash != hash || e->prefix_len != n
        || ngx_memcmp(e->data, scope->data, n) != 0)
    {
        return NGX_DECLINED;
    }

    /* the mac in constant time, so no timing tells how much of a guess
     * matched; a mismatch goes to the full check, which says why */
    if (!ngx_http_fastwall_equal(e->mac, scope->data + n,
                                 NGX_HTTP_FWI_MAC_TEXT))
    {
        return NGX_DECLINED;
    }

    /* without memory the full check runs and says so */
    if (ngx_http_fwi_set_key(r, ctx, e->data + n, e->ns_len,
                             e->data + n + e->ns_len + 1, e->sandbox_len,
                             e->port)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* keeps a verified scope, in place of the slot's older one */
static void
ngx_http_fwi_scope_remember(ngx_http_fwi_main_conf_t *mcf, ngx_str_t *scope,
    ngx_http_fwi_ctx_t *ctx)
{
    size_t                  n;
    uint32_t                hash;
    ngx_http_fwi_scope_t   *e, **slot;

    n = ngx_http_fwi_scope_prefix(scope);
    if (n == 0) {
        return;
    }

    /* without memory the next request only verifies again */
    e = ngx_alloc(offsetof(ngx_http_fwi_scope_t, data) + n + ctx->ns.len + 1
                  + ctx->sandbox.len, ngx_cycle->log);
    if (e == NULL) {
        return;
    }

    hash = ngx_murmur_hash2(scope->data, n);

    e->hash = hash;
    e->prefix_len = (u_short) n;
    e->ns_len = (u_short) ctx->ns.len;
    e->sandbox_len = (u_short) ctx->sandbox.len;
    e->port = ctx->port;
    ngx_memcpy(e->mac, scope->data + n, NGX_HTTP_FWI_MAC_TEXT);
    ngx_memcpy(e->data, scope->data, n);
    /* the key's "ns\0sandbox" */
    ngx_memcpy(e->data + n, ctx->key, ctx->ns.len + 1 + ctx->sandbox.len);

    slot = &mcf->scopes[hash % NGX_HTTP_FWI_SCOPES];

    if (*slot) {
        ngx_free(*slot);
    }

    *slot = e;
}


static void
ngx_http_fwi_scopes_free(void *data)
{
    ngx_http_fwi_scope_t **scopes = data;

    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_FWI_SCOPES; i++) {
        if (scopes[i]) {
            ngx_free(scopes[i]);
            scopes[i] = NULL;
        }
    }
}


/*
 * ctx->key ("ns\0sandbox\0port\0mode") for a route, ns and sandbox into
 * it. The location's access mode is part of it: FastPath answers another
 * endpoint and credential for each mode, so an answer (and a resolve in
 * flight) serves only requests of the mode it was asked for.
 */
static ngx_int_t
ngx_http_fwi_set_key(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx,
    u_char *ns, size_t ns_len, u_char *sandbox, size_t sandbox_len,
    ngx_uint_t port)
{
    u_char                   *p;
    ngx_http_fwi_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_ingress_module);

    ctx->key = ngx_pnalloc(r->pool,
                           ns_len + sandbox_len + 3 + 2 * NGX_INT_T_LEN);
    if (ctx->key == NULL) {
        return NGX_ERROR;
    }

    /* the fields hold no NUL (control characters are refused) */
    p = ngx_cpymem(ctx->key, ns, ns_len);
    *p++ = '\0';
    p = ngx_cpymem(p, sandbox, sandbox_len);
    *p++ = '\0';
    p = ngx_sprintf(p, "%ui", port);
    *p++ = '\0';
    p = ngx_sprintf(p, "%ui", lcf->access_mode);

    ctx->key_len = p - ctx->key;
    ctx->ns.data = ctx->key;
    ctx->ns.len = ns_len;
    ctx->sandbox.data = ctx->key + ns_len + 1;
    ctx->sandbox.len = sandbox_len;
    ctx->port = port;
    ctx->hash = ngx_crc32_short(ctx->key, ctx->key_len);

    return NGX_OK;
}


/*
 * Checks the scope; 401 and 501 are answered here, without the resolver.
 * ctx->ns and ctx->sandbox point into ctx->key.
 */
static ngx_int_t
ngx_http_fwi_start(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    int                         err;
    ngx_int_t                   rc;
    ngx_str_t                   scope, host;
    struct fw_scope             sc;
    ngx_http_fwh_row_t          row;
    ngx_http_fwi_loc_conf_t    *lcf;
    ngx_http_fwi_main_conf_t   *mcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_ingress_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_ingress_module);

    /* a service host (ngx_http_fastwall_hostnames.c) names its target */
    rc = ngx_http_fwh_route(r, lcf->mode == NGX_HTTP_FWI_MODE_HEADER,
                            &ctx->ns, &ctx->sandbox, &ctx->port, &row, &host);
    if (rc == NGX_OK) {
        return ngx_http_fwi_service(r, ctx, &row, &host);
    }

    if (rc == NGX_AGAIN) {
        /* the request waits for the service store */
        ctx->store_wait = 1;
        return NGX_AGAIN;
    }

    if (rc != NGX_DECLINED) {
        return rc;
    }

    switch (ngx_http_fwi_route(r, lcf, ctx, &scope, &ctx->uri)) {
    case NGX_OK:
        break;
    case NGX_ERROR:
        return NGX_ERROR;
    case NGX_HTTP_BAD_REQUEST:
        return NGX_HTTP_BAD_REQUEST;
    default:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: no route scope in the request");
        return NGX_HTTP_UNAUTHORIZED;
    }

    if (ngx_http_fwi_scope_cached(r, mcf, &scope, ctx) != NGX_OK) {

        err = fw_scope_verify(mcf->keyring, (const char *) scope.data,
                              scope.len, &sc);
        if (err) {
            /* never the scope itself: it is the credential */
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "fastwall ingress: route scope refused: %s",
                          fw_scope_strerror(err));
            return NGX_HTTP_UNAUTHORIZED;
        }

        if (ngx_http_fwi_set_key(r, ctx, (u_char *) sc.ns, sc.ns_len,
                                 (u_char *) sc.sandbox, sc.sandbox_len,
                                 sc.port)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        ngx_http_fwi_scope_remember(mcf, &scope, ctx);
    }

    return ngx_http_fwi_routed(r, ctx, &scope);
}


/*
 * A service host's request, once ngx_http_fastwall_host_auth.c let it
 * through (row and host NULL when it is called again after the auth
 * subrequest): NGX_AGAIN while that runs, NGX_DONE when it was refused
 * and answered there.
 */
static ngx_int_t
ngx_http_fwi_service(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx,
    ngx_http_fwh_row_t *row, ngx_str_t *host)
{
    ngx_int_t                  rc;
    ngx_str_t                  scope;
    ngx_http_fwi_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_ingress_module);

    rc = ngx_http_fwha_check(r, mcf->keyring, row, host);

    if (rc == NGX_DONE) {
        ctx->refused = 1;
    }

    if (rc != NGX_OK) {
        return rc;
    }

    /* a service's sandbox name is one DNS label, never another
     * cluster's <cluster>.<uuid>: the cluster hook keeps it local */
    ngx_str_null(&scope);
    ctx->uri = r->unparsed_uri;

    if (ngx_http_fwi_set_key(r, ctx, ctx->ns.data, ctx->ns.len,
                             ctx->sandbox.data, ctx->sandbox.len, ctx->port)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_fwi_routed(r, ctx, &scope);
}


/* the checks and the forward every route gets, however it was named */
static ngx_int_t
ngx_http_fwi_routed(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx,
    ngx_str_t *scope)
{
    ngx_int_t  rc;

    if (ctx->port == FW_POLICY_PORT) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: %V/%V: the policy port carries "
                      "no traffic", &ctx->ns, &ctx->sandbox);
        return NGX_HTTP_NOT_IMPLEMENTED;
    }

    /* NGX_DECLINED: a local sandbox; NGX_DONE: forwarded; or a status.
     * A peer's hop carries its scope in a header and its path as it is:
     * a service host, a scope in Host or in the path is never one. */
    rc = ngx_http_fastwall_cluster_route(r, &ctx->sandbox, scope, &ctx->uri,
                                         ctx->scope_header
                                         != NGX_HTTP_FWI_SCOPE_NONE,
                                         &ctx->upstream);

    return (rc == NGX_DECLINED) ? NGX_OK : rc;
}


static ngx_int_t
ngx_http_fwi_resolve(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    long                        n;
    size_t                      size;
    ngx_buf_t                  *b;
    ngx_chain_t                *cl;
    ngx_http_request_t         *sr;
    ngx_http_request_body_t    *rb;
    ngx_http_fwi_loc_conf_t    *lcf;
    ngx_http_post_subrequest_t *ps;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_fastwall_ingress_module);

    size = fw_fastpath_request_size(ctx->ns.len, ctx->sandbox.len);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_ERROR;
    }

    n = fw_fastpath_request_encode((const char *) ctx->ns.data, ctx->ns.len,
                                   (const char *) ctx->sandbox.data,
                                   ctx->sandbox.len, (uint32_t) ctx->port,
                                   lcf->access_mode, 0, b->pos, size);
    if (n < 0) {
        return NGX_ERROR;
    }

    b->last = b->pos + n;
    b->last_buf = 1;

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    cl->next = NULL;

    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));
    if (ps == NULL) {
        return NGX_ERROR;
    }

    ps->handler = ngx_http_fwi_resolve_done;
    ps->data = ctx;

    if (ngx_http_subrequest(r, &ngx_http_fwi_resolve_uri, NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY
                            |NGX_HTTP_SUBREQUEST_WAITED)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a POST of our own body, and none of the client's headers */
    sr->method = NGX_HTTP_POST;
    sr->method_name = ngx_http_fwi_post;

    ngx_memzero(&sr->headers_in, sizeof(ngx_http_headers_in_t));

    if (ngx_list_init(&sr->headers_in.headers, r->pool, 2,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    sr->headers_in.content_length_n = n;
    sr->headers_in.keep_alive_n = -1;

    rb = ngx_pcalloc(r->pool, sizeof(ngx_http_request_body_t));
    if (rb == NULL) {
        return NGX_ERROR;
    }

    rb->bufs = cl;
    sr->request_body = rb;

    ctx->subrequest = sr;
    ctx->resolving = 1;

    return NGX_AGAIN;
}


static ngx_int_t
ngx_http_fwi_grpc_status(ngx_http_request_t *sr)
{
    ngx_table_elt_t  *h;

    if (sr->upstream == NULL) {
        return NGX_ERROR;
    }

    h = ngx_http_fastwall_find_header(&sr->upstream->headers_in.trailers,
                                 "grpc-status");
    if (h == NULL) {
        /* a Trailers-Only answer: the status rides in the headers */
        h = ngx_http_fastwall_find_header(&sr->upstream->headers_in.headers,
                                     "grpc-status");
    }

    if (h == NULL) {
        return NGX_ERROR;
    }

    return ngx_atoi(h->value.data, h->value.len);
}


/*
 * Maps the resolver's answer to the request's fate: NGX_OK with the
 * upstream and credential set, 404, or 503.
 */
static ngx_int_t
ngx_http_fwi_classify(ngx_http_request_t *r, ngx_http_request_t *sr,
    ngx_int_t rc, ngx_http_fwi_ctx_t *ctx, time_t *valid_until)
{
    int                           err;
    long                          base;
    ngx_int_t                     gs;
    ngx_buf_t                    *b;
    struct fw_fastpath_resolved   res;

    *valid_until = 0;

    if (rc != NGX_OK || sr->headers_out.status != NGX_HTTP_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: resolver unreachable for %V/%V:%ui "
                      "(rc %i, status %ui)", &ctx->ns, &ctx->sandbox,
                      ctx->port, rc, sr->headers_out.status);
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    gs = ngx_http_fwi_grpc_status(sr);

    if (gs == FW_GRPC_NOT_FOUND) {
        return NGX_HTTP_NOT_FOUND;
    }

    if (gs != FW_GRPC_OK) {
        /* not ready, not published, overloaded, unavailable, timed out,
         * or anything else: all one answer, so none leaks which */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fastwall ingress: resolve of %V/%V:%ui: grpc status %i",
                      &ctx->ns, &ctx->sandbox, ctx->port, gs);
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    b = sr->out ? sr->out->buf : NULL;

    if (b == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: resolver answered OK without "
                      "a message");
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    err = fw_fastpath_response_decode(b->pos, b->last - b->pos, &res);
    if (err) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: bad ResolveEndpoint response: %s",
                      strerror(-err));
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    base = fw_fastpath_endpoint_base(res.proxy_endpoint.p,
                                     res.proxy_endpoint.len);
    if (base < 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: resolver gave a proxy endpoint "
                      "that is not http(s)://host[:port]");
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    if (res.credential.len == 0 || res.other_headers != 0
        || !fw_fastpath_header_value_ok(res.credential.p, res.credential.len))
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: resolver's required headers are "
                      "not exactly one valid " FW_FASTPATH_CREDENTIAL_HEADER);
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    ctx->upstream.len = base;
    ctx->upstream.data = ngx_pnalloc(r->pool, base);
    ctx->credential.len = res.credential.len;
    ctx->credential.data = ngx_pnalloc(r->pool, res.credential.len);

    if (ctx->upstream.data == NULL || ctx->credential.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ctx->upstream.data, res.proxy_endpoint.p, base);
    ngx_memcpy(ctx->credential.data, res.credential.p, res.credential.len);

    if (res.expires_at > (int64_t) ngx_time() + NGX_HTTP_FWI_EXPIRY_MARGIN) {
        *valid_until = (time_t) res.expires_at - NGX_HTTP_FWI_EXPIRY_MARGIN;
    }

    return NGX_OK;
}


/* Runs once per resolve: a failed connect may call it twice. */
static ngx_int_t
ngx_http_fwi_resolve_done(ngx_http_request_t *sr, void *data, ngx_int_t rc)
{
    time_t               valid_until;
    ngx_http_request_t  *r;
    ngx_http_fwi_ctx_t  *ctx = data;

    if (ctx->done) {
        return rc;
    }

    r = sr->parent;

    ctx->resolving = 0;
    ctx->done = 1;
    ctx->status = ngx_http_fwi_classify(r, sr, rc, ctx, &valid_until);

    ngx_http_fwi_cache_store(r, ctx,
                             ctx->status == NGX_OK ? valid_until : 0);

    return rc;
}


static void
ngx_http_fwi_wait_handler(ngx_http_request_t *r)
{
    ngx_event_t  *wev;

    wev = r->connection->write;

    if (wev->delayed) {
        if (ngx_handle_write_event(wev, 0) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        }

        return;
    }

    if (ngx_handle_read_event(r->connection->read, 0) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_core_run_phases;

    ngx_http_core_run_phases(r);
}


static ngx_int_t
ngx_http_fwi_retry_later(ngx_http_request_t *r)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Retry-After");
    ngx_str_set(&h->value, "1");

    return NGX_OK;
}


/*
 * Whether a client header stays off the upstream: any copy of the
 * credential header, and of the two scope headers every copy but the one
 * that carried the verified scope (in URI mode, or a scope in Host, none
 * did), so the credential never rides beside a scope nobody checked.
 */
static ngx_uint_t
ngx_http_fwi_dropped(ngx_http_fwi_ctx_t *ctx, ngx_table_elt_t *h)
{
    /* removed: a Cookie the host auth emptied of the gateway's cookie */
    if (h->hash == 0) {
        return 1;
    }

    if (h->key.len == ngx_http_fwi_cred_name.len
        && ngx_strncasecmp(h->key.data, ngx_http_fwi_cred_name.data,
                           h->key.len) == 0)
    {
        return 1;
    }

    if (h->key.len == ngx_http_fwi_to_lc.len
        && ngx_strncasecmp(h->key.data, ngx_http_fwi_to_lc.data,
                           h->key.len) == 0)
    {
        return ctx->scope_header != NGX_HTTP_FWI_SCOPE_TO;
    }

    if (h->key.len == ngx_http_fwi_legacy_lc.len
        && ngx_strncasecmp(h->key.data, ngx_http_fwi_legacy_lc.data,
                           h->key.len) == 0)
    {
        return ctx->scope_header != NGX_HTTP_FWI_SCOPE_LEGACY;
    }

    return 0;
}


/*
 * The client headers ngx_http_fwi_dropped names are removed, and the
 * resolver's credential is added. nginx's lists cannot drop an element
 * and proxy_pass forwards every one, so a request that carries one gets a
 * rebuilt list; any other (nearly all) only gets one more.
 */
static ngx_int_t
ngx_http_fwi_set_headers(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    ngx_uint_t        i, copies;
    ngx_list_t        headers;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *nh;

    copies = 0;
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

        if (ngx_http_fwi_dropped(ctx, &h[i])) {
            copies++;
        }
    }

    /* the push below goes through "last": a list rebuilt elsewhere and
     * assigned by value may still point it at the copy's source, so it is
     * set to the final part the walk found */
    r->headers_in.headers.last = part;

    if (copies) {
        if (ngx_list_init(&headers, r->pool, 20, sizeof(ngx_table_elt_t))
            != NGX_OK)
        {
            return NGX_ERROR;
        }

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

            if (ngx_http_fwi_dropped(ctx, &h[i])) {
                continue;
            }

            nh = ngx_list_push(&headers);
            if (nh == NULL) {
                return NGX_ERROR;
            }

            *nh = h[i];
        }

    }

    nh = ngx_list_push(copies ? &headers : &r->headers_in.headers);
    if (nh == NULL) {
        return NGX_ERROR;
    }

    nh->key = ngx_http_fwi_cred_name;
    nh->value = ctx->credential;
    nh->lowcase_key = ngx_http_fwi_cred_lc.data;
    nh->hash = ngx_http_fwi_cred_hash;

    if (copies) {
        r->headers_in.headers = headers;

        /* a one-part list's last part is the list itself, not the copy */
        if (headers.last == &headers.part) {
            r->headers_in.headers.last = &r->headers_in.headers.part;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwi_finish(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    if (ctx->status == NGX_HTTP_SERVICE_UNAVAILABLE) {
        if (ngx_http_fwi_retry_later(r) != NGX_OK) {
            return NGX_ERROR;
        }

        return ctx->status;
    }

    if (ctx->status != NGX_OK) {
        return ctx->status;
    }

    if (!ctx->routed) {
        if (ngx_http_fwi_set_headers(r, ctx) != NGX_OK) {
            return NGX_ERROR;
        }

        ctx->routed = 1;
    }

    return NGX_OK;
}


/* shared cache */

static void
ngx_http_fwi_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t     **p;
    ngx_http_fwi_node_t    *n, *t;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            n = (ngx_http_fwi_node_t *) node;
            t = (ngx_http_fwi_node_t *) temp;

            p = (ngx_memn2cmp(n->data, t->data, n->key_len, t->key_len) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


static ngx_http_fwi_node_t *
ngx_http_fwi_cache_find(ngx_http_fwi_cache_t *cache, ngx_http_fwi_ctx_t *ctx)
{
    ngx_int_t             rc;
    ngx_rbtree_node_t    *node, *sentinel;
    ngx_http_fwi_node_t  *n;

    node = cache->sh->rbtree.root;
    sentinel = cache->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (ctx->hash < node->key) {
            node = node->left;
            continue;
        }

        if (ctx->hash > node->key) {
            node = node->right;
            continue;
        }

        n = (ngx_http_fwi_node_t *) node;

        rc = ngx_memn2cmp(ctx->key, n->data, ctx->key_len, n->key_len);

        if (rc == 0) {
            return n;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_fwi_cache_free(ngx_http_fwi_cache_t *cache, ngx_http_fwi_node_t *n)
{
    ngx_queue_remove(&n->lru);
    ngx_rbtree_delete(&cache->sh->rbtree, &n->node);
    ngx_slab_free_locked(cache->shpool, n);
}


/* allocates, evicting the least recently used entries nobody resolves */
static ngx_http_fwi_node_t *
ngx_http_fwi_cache_alloc(ngx_http_fwi_cache_t *cache, size_t size)
{
    ngx_uint_t            tries;
    ngx_queue_t          *q;
    ngx_http_fwi_node_t  *n, *victim;

    for (tries = 0; tries < 8; tries++) {
        n = ngx_slab_alloc_locked(cache->shpool, size);
        if (n != NULL) {
            return n;
        }

        victim = NULL;

        for (q = ngx_queue_last(&cache->sh->lru);
             q != ngx_queue_sentinel(&cache->sh->lru);
             q = ngx_queue_prev(q))
        {
            n = ngx_queue_data(q, ngx_http_fwi_node_t, lru);
            if (n->pending_until == 0) {
                victim = n;
                break;
            }
        }

        if (victim == NULL) {
            return NULL;
        }

        ngx_http_fwi_cache_free(cache, victim);
    }

    return NULL;
}


static ngx_http_fwi_node_t *
ngx_http_fwi_cache_insert(ngx_http_fwi_cache_t *cache,
    ngx_http_fwi_ctx_t *ctx, ngx_str_t *upstream, ngx_str_t *cred)
{
    size_t                size;
    ngx_http_fwi_node_t  *n;

    size = offsetof(ngx_http_fwi_node_t, data) + ctx->key_len
           + upstream->len + cred->len;

    n = ngx_http_fwi_cache_alloc(cache, size);
    if (n == NULL) {
        return NULL;
    }

    n->node.key = ctx->hash;
    n->key_len = (u_short) ctx->key_len;
    n->upstream_len = (u_short) upstream->len;
    n->cred_len = (u_short) cred->len;
    n->valid_until = 0;
    n->touched = ngx_time();
    n->pending_until = 0;
    n->gen = 0;
    n->fail_status = 0;

    ngx_memcpy(n->data, ctx->key, ctx->key_len);
    ngx_memcpy(n->data + ctx->key_len, upstream->data, upstream->len);
    ngx_memcpy(n->data + ctx->key_len + upstream->len, cred->data, cred->len);

    ngx_rbtree_insert(&cache->sh->rbtree, &n->node);
    ngx_queue_insert_head(&cache->sh->lru, &n->lru);

    return n;
}


/*
 * A hit copies the answer out; a key another request is resolving makes
 * this one wait; otherwise this request marks the key and resolves it, so
 * that concurrent misses of one key make one call.
 */
static ngx_int_t
ngx_http_fwi_cache_lookup(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    u_char                    *p;
    ngx_str_t                  none = ngx_null_string;
    ngx_http_fwi_node_t       *n;
    ngx_http_fwi_cache_t      *cache;
    ngx_http_fwi_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_ingress_module);
    cache = mcf->shm_zone->data;

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_fwi_cache_find(cache, ctx);

    if (n && n->valid_until > ngx_time()) {
        ctx->upstream.len = n->upstream_len;
        ctx->credential.len = n->cred_len;
        p = ngx_pnalloc(r->pool, n->upstream_len + n->cred_len);
        if (p == NULL) {
            ngx_shmtx_unlock(&cache->shpool->mutex);
            return NGX_HTTP_FWI_RESOLVE;
        }

        ngx_memcpy(p, n->data + n->key_len, n->upstream_len + n->cred_len);
        ctx->upstream.data = p;
        ctx->credential.data = p + n->upstream_len;

        /* once a second is recent enough for eviction, and spares the
         * workers' hits most writes to the shared list */
        if (n->touched != ngx_time()) {
            n->touched = ngx_time();
            ngx_queue_remove(&n->lru);
            ngx_queue_insert_head(&cache->sh->lru, &n->lru);
        }

        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_HTTP_FWI_HIT;
    }

    /* the resolve this request waited on failed: its answer is this
     * request's too (a new request would resolve again) */
    if (n && ctx->waiting && n->gen != ctx->wait_gen && n->fail_status
        && n->pending_until == 0)
    {
        ctx->status = n->fail_status;
        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_HTTP_FWI_FAILED;
    }

    if (n && n->pending_until
        && (ngx_msec_int_t) (n->pending_until - ngx_current_msec) > 0)
    {
        if (!ctx->waiting) {
            ctx->waiting = 1;
            ctx->wait_gen = n->gen;
        }

        ngx_shmtx_unlock(&cache->shpool->mutex);
        return NGX_HTTP_FWI_WAIT_OTHER;
    }

    if (n == NULL) {
        n = ngx_http_fwi_cache_insert(cache, ctx, &none, &none);
    }

    if (n) {
        /* the expired answer, if any, is of no use any more */
        n->valid_until = 0;
        n->fail_status = 0;
        n->pending_until = ngx_current_msec + NGX_HTTP_FWI_PENDING;
        if (n->pending_until == 0) {
            n->pending_until = 1;
        }

        ctx->owner = 1;
    }

    ngx_shmtx_unlock(&cache->shpool->mutex);

    return NGX_HTTP_FWI_RESOLVE;
}


/*
 * Keeps an answer until valid_until (0: keep none) and lets the waiters
 * go: they take a kept answer, or a failure's status, or else resolve.
 */
static void
ngx_http_fwi_cache_store(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx,
    time_t valid_until)
{
    ngx_uint_t                 gen;
    ngx_http_fwi_node_t       *n;
    ngx_http_fwi_cache_t      *cache;
    ngx_http_fwi_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_ingress_module);
    cache = mcf->shm_zone->data;

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_fwi_cache_find(cache, ctx);
    gen = n ? n->gen + 1 : 1;

    /* a mark this request does not hold belongs to another resolve */
    if (n && !ctx->owner && n->pending_until) {
        ngx_shmtx_unlock(&cache->shpool->mutex);
        return;
    }

    ctx->owner = 0;

    if (valid_until <= ngx_time()) {
        if (n) {
            n->pending_until = 0;
            n->valid_until = 0;
            n->gen = gen;
            /* NGX_ERROR: the waiters try for themselves */
            n->fail_status = (ctx->status > NGX_OK) ? ctx->status : 0;
        }

        ngx_shmtx_unlock(&cache->shpool->mutex);
        return;
    }

    if (n) {
        ngx_http_fwi_cache_free(cache, n);
    }

    n = ngx_http_fwi_cache_insert(cache, ctx, &ctx->upstream,
                                  &ctx->credential);
    if (n) {
        n->valid_until = valid_until;
        n->gen = gen;

    } else {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fastwall ingress: cache full, answer not kept");
    }

    ngx_shmtx_unlock(&cache->shpool->mutex);
}


static void
ngx_http_fwi_cache_drop(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    ngx_http_fwi_node_t       *n;
    ngx_http_fwi_cache_t      *cache;
    ngx_http_fwi_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_ingress_module);
    cache = mcf->shm_zone->data;

    ngx_shmtx_lock(&cache->shpool->mutex);

    n = ngx_http_fwi_cache_find(cache, ctx);
    if (n && n->pending_until == 0) {
        ngx_http_fwi_cache_free(cache, n);
    }

    ngx_shmtx_unlock(&cache->shpool->mutex);
}


static ngx_int_t
ngx_http_fwi_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fwi_cache_t  *ocache = data;

    ngx_uint_t             fresh;
    ngx_http_fwi_cache_t  *cache;

    cache = shm_zone->data;

    if (ocache) {
        cache->sh = ocache->sh;
        cache->shpool = ocache->shpool;
        return NGX_OK;
    }

    cache->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    cache->sh = ngx_http_fastwall_zone_context(shm_zone,
                                               sizeof(ngx_http_fwi_shctx_t),
                                               "fastwall_ingress cache",
                                               &fresh);
    if (cache->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_rbtree_init(&cache->sh->rbtree, &cache->sh->sentinel,
                        ngx_http_fwi_rbtree_insert_value);
        ngx_queue_init(&cache->sh->lru);
    }

    return NGX_OK;
}


/* filters: a stale route's marker becomes an empty 503 */

static ngx_uint_t
ngx_http_fwi_is_marker(ngx_str_t *v)
{
    static ngx_str_t  markers[] = {
        ngx_string("stale_route"),
        ngx_string("credential_rejected"),
        ngx_string("route_unavailable"),
        ngx_string("upstream_unavailable"),
    };

    ngx_uint_t  i;

    for (i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
        if (v->len == markers[i].len
            && ngx_strncasecmp(v->data, markers[i].data, v->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_fwi_header_filter(ngx_http_request_t *r)
{
    ngx_uint_t            i, status;
    ngx_list_part_t      *part;
    ngx_table_elt_t      *h, *marker;
    ngx_http_upstream_t  *u;
    ngx_http_fwi_ctx_t   *ctx;

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_ingress_module);

    if (ctx == NULL || !ctx->routed) {
        return ngx_http_next_header_filter(r);
    }

    u = r->upstream;
    status = r->headers_out.status;

    if (u == NULL || u->headers_in.status_n == 0) {
        /* nginx's own answer: no response came from the upstream */
        if (status == NGX_HTTP_BAD_GATEWAY) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fastwall ingress: upstream of %V/%V:%ui failed, "
                          "route dropped", &ctx->ns, &ctx->sandbox, ctx->port);
            ngx_http_fwi_cache_drop(r, ctx);
        }

        return ngx_http_next_header_filter(r);
    }

    /* markers count on failures only: not on 2xx, nor on an upgrade */
    if (status < 300) {
        return ngx_http_next_header_filter(r);
    }

    marker = ngx_http_fastwall_find_header(&u->headers_in.headers,
                                      "X-Fast-Sandbox-Proxy-Error");
    if (marker == NULL || !ngx_http_fwi_is_marker(&marker->value)) {
        return ngx_http_next_header_filter(r);
    }

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "fastwall ingress: %V/%V:%ui: upstream says \"%V\", "
                  "route dropped", &ctx->ns, &ctx->sandbox, ctx->port,
                  &marker->value);

    ngx_http_fwi_cache_drop(r, ctx);

    /* nothing of the upstream's answer reaches the client */
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

        h[i].hash = 0;
    }

    r->headers_out.status = NGX_HTTP_SERVICE_UNAVAILABLE;
    r->headers_out.status_line.len = 0;
    r->headers_out.content_type.len = 0;
    r->headers_out.content_type_len = 0;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;
    r->headers_out.location = NULL;
    r->headers_out.refresh = NULL;
    r->headers_out.last_modified_time = -1;
    r->headers_out.last_modified = NULL;
    r->headers_out.etag = NULL;
    r->headers_out.content_encoding = NULL;
    ngx_http_clear_content_length(r);
    ngx_http_clear_accept_ranges(r);
    r->headers_out.content_length_n = 0;

    if (ngx_http_fwi_retry_later(r) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->swallow = 1;

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_fwi_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t           *b;
    ngx_uint_t           last;
    ngx_chain_t         *cl, out;
    ngx_http_fwi_ctx_t  *ctx;

    if (r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_ingress_module);

    if (ctx == NULL || !ctx->swallow) {
        return ngx_http_next_body_filter(r, in);
    }

    last = 0;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (b->last_buf) {
            last = 1;
        }

        /* consumed, so the upstream may reuse its buffers */
        b->pos = b->last;
        if (b->in_file) {
            b->file_pos = b->file_last;
        }
    }

    if (!last) {
        return NGX_OK;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


/* variables */

static ngx_int_t
ngx_http_fwi_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_str_t                 *s, host;
    ngx_http_fwi_ctx_t        *ctx;
    ngx_http_fwi_main_conf_t  *mcf;

    if (data == 2 || data == 4) {
        mcf = ngx_http_get_module_main_conf(r,
                                            ngx_http_fastwall_ingress_module);
        s = (data == 4) ? &mcf->resolver_url : &mcf->resolver;

        /* with TLS the bare address is no variable: a location still
         * written "grpc_pass grpc://$fastwall_ingress_resolver" fails
         * (503) instead of talking plaintext */
        if (data == 2 && mcf->resolver_tls) {
            v->not_found = 1;
            return NGX_OK;
        }

    } else {
        ctx = ngx_http_get_module_ctx(r->main,
                                      ngx_http_fastwall_ingress_module);

        if (ctx == NULL || !ctx->routed) {
            v->not_found = 1;
            return NGX_OK;
        }

        s = (data == 0) ? &ctx->upstream : &ctx->uri;

        if (data == 3) {
            /* the authority: what follows "scheme://" */
            host.data = ngx_strlchr(ctx->upstream.data,
                                    ctx->upstream.data + ctx->upstream.len,
                                    '/');
            if (host.data == NULL) {
                v->not_found = 1;
                return NGX_OK;
            }

            host.data += 2;
            host.len = ctx->upstream.data + ctx->upstream.len - host.data;
            s = &host;
        }
    }

    if (s->len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = s->len;
    v->data = s->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwi_route_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char              *p;
    ngx_http_fwi_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fastwall_ingress_module);

    if (ctx == NULL || ctx->ns.len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, ctx->ns.len + ctx->sandbox.len + 2 + NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->data = p;
    p = ngx_sprintf(p, "%V/%V:%ui", &ctx->ns, &ctx->sandbox, ctx->port);
    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_fwi_vars[] = {

    { ngx_string("fastwall_ingress_upstream"), NULL,
      ngx_http_fwi_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_uri"), NULL,
      ngx_http_fwi_variable, 1, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_upstream_host"), NULL,
      ngx_http_fwi_variable, 3, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_resolver"), NULL,
      ngx_http_fwi_variable, 2, 0, 0 },

    { ngx_string("fastwall_ingress_resolver_url"), NULL,
      ngx_http_fwi_variable, 4, 0, 0 },

    { ngx_string("fastwall_ingress_route"), NULL,
      ngx_http_fwi_route_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_fwi_add_variables(ngx_conf_t *cf)
{
    return ngx_http_fastwall_add_variables(cf, ngx_http_fwi_vars);
}


/*
 * The balancer of an upstream{} block with "fastwall_ingress_upstream":
 * its one peer is the resolved proxy endpoint. Unlike proxy_pass with
 * variables, such a block can hold "keepalive", which then reuses
 * connections to the same Fastlet across requests.
 */

/*
 * A worker's last parsed endpoints by their text: a hit copies the address
 * instead of parsing it again. The text maps to one address for good, so
 * nothing ever needs dropping; a slot is just taken over.
 */
typedef struct {
    size_t                      len;       /* of text; 0: empty */
    socklen_t                   socklen;
    ngx_http_fwi_sockaddr_t     sockaddr;
    u_char                      text[NGX_HTTP_FWI_PEER_TEXT];
} ngx_http_fwi_peer_memo_t;

static ngx_http_fwi_peer_memo_t  ngx_http_fwi_peers[NGX_HTTP_FWI_PEERS];


static ngx_int_t
ngx_http_fwi_peer_addr(ngx_http_request_t *r, ngx_http_fwi_ctx_t *ctx)
{
    u_char                    *p, *end;
    ngx_str_t                  authority;
    ngx_http_fwi_peer_memo_t  *m;

    if (ctx->peer.sockaddr) {
        return NGX_OK;
    }

    p = ctx->upstream.data;
    end = p + ctx->upstream.len;

    p = ngx_strlchr(p, end, '/');
    if (p == NULL || end - p < 3) {
        return NGX_ERROR;
    }

    authority.data = p + 2;
    authority.len = end - authority.data;

    m = NULL;

    if (ctx->upstream.len <= NGX_HTTP_FWI_PEER_TEXT) {
        m = &ngx_http_fwi_peers[ngx_murmur_hash2(ctx->upstream.data,
                                                 ctx->upstream.len)
                                % NGX_HTTP_FWI_PEERS];

        /* a copy: another request may take the slot over meanwhile */
        if (m->len == ctx->upstream.len
            && ngx_memcmp(m->text, ctx->upstream.data, m->len) == 0)
        {
            ngx_memcpy(&ctx->peer_sa, &m->sockaddr, m->socklen);
            ctx->peer.sockaddr = &ctx->peer_sa.sockaddr;
            ctx->peer.socklen = m->socklen;
            ctx->peer.name = authority;
            return NGX_OK;
        }
    }

    if (ngx_parse_addr_port(r->pool, &ctx->peer, authority.data,
                            authority.len)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: proxy endpoint \"%V\" is not an IP "
                      "address, which fastwall_ingress_upstream needs",
                      &ctx->upstream);
        ctx->peer.sockaddr = NULL;
        return NGX_ERROR;
    }

    if (ngx_inet_get_port(ctx->peer.sockaddr) == 0) {
        ngx_inet_set_port(ctx->peer.sockaddr,
                          ctx->upstream.len > 5
                          && ngx_strncasecmp(ctx->upstream.data,
                                             (u_char *) "https", 5) == 0
                          ? 443 : 80);
    }

    ctx->peer.name = authority;

    if (m && ctx->peer.socklen <= (socklen_t) sizeof(ngx_http_fwi_sockaddr_t)) {
        ngx_memcpy(&m->sockaddr, ctx->peer.sockaddr, ctx->peer.socklen);
        m->socklen = ctx->peer.socklen;
        ngx_memcpy(m->text, ctx->upstream.data, ctx->upstream.len);
        m->len = ctx->upstream.len;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwi_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_fwi_ctx_t  *ctx = data;

    pc->sockaddr = ctx->peer.sockaddr;
    pc->socklen = ctx->peer.socklen;
    pc->name = &ctx->peer.name;
    pc->cached = 0;
    pc->connection = NULL;

    return NGX_OK;
}


static void
ngx_http_fwi_free_peer(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    /* one peer: nothing to try next */
    pc->tries = 0;
}


static ngx_int_t
ngx_http_fwi_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_fwi_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fastwall_ingress_module);

    if (ctx == NULL || !ctx->routed) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: upstream \"%V\" used in a location "
                      "without \"fastwall_ingress on\"", &us->host);
        return NGX_ERROR;
    }

    if (ngx_http_fwi_peer_addr(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    r->upstream->peer.get = ngx_http_fwi_get_peer;
    r->upstream->peer.free = ngx_http_fwi_free_peer;
    r->upstream->peer.data = ctx;
    r->upstream->peer.tries = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwi_init_upstream(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    us->peer.init = ngx_http_fwi_init_peer;

    return NGX_OK;
}


static char *
ngx_http_fwi_balancer(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_upstream_server_t    *us;
    ngx_http_upstream_srv_conf_t  *uscf;

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        return "must come before \"keepalive\" and any other balancer";
    }

    if (uscf->servers && uscf->servers->nelts) {
        return "takes the place of \"server\" lines";
    }

    /* nginx wants a server in every upstream block: a placeholder, which
     * nothing reads since the balancer is this module's */
    us = ngx_array_push(uscf->servers);
    if (us == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(us, sizeof(ngx_http_upstream_server_t));

    uscf->peer.init_upstream = ngx_http_fwi_init_upstream;

    return NGX_CONF_OK;
}


/* configuration */

static ngx_int_t
ngx_http_fwi_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fwi_handler;

    ngx_http_fwi_to_hash = ngx_hash_key(ngx_http_fwi_to_lc.data,
                                        ngx_http_fwi_to_lc.len);
    ngx_http_fwi_legacy_hash = ngx_hash_key(ngx_http_fwi_legacy_lc.data,
                                            ngx_http_fwi_legacy_lc.len);
    ngx_http_fwi_cred_hash = ngx_hash_strlow(ngx_http_fwi_cred_lc.data,
                                             ngx_http_fwi_cred_name.data,
                                             ngx_http_fwi_cred_name.len);

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_fwi_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_fwi_body_filter;

    return NGX_OK;
}


static void
ngx_http_fwi_wipe_keys(void *data)
{
    fw_scope_keyring_wipe(data);
}


static char *
ngx_http_fwi_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwi_main_conf_t *mcf = conf;

    char                 err[512];
    ngx_str_t           *value;
    ngx_pool_cleanup_t  *cln;

    if (mcf->keyring != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    mcf->keys_path = value[1];

    if (ngx_conf_full_name(cf->cycle, &mcf->keys_path, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, sizeof(struct fw_scope_keyring));
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_fwi_wipe_keys;
    mcf->keyring = cln->data;
    ngx_memzero(mcf->keyring, sizeof(struct fw_scope_keyring));

    /* ngx_conf_full_name leaves the name NUL-terminated */
    if (fw_scope_keyring_load(mcf->keyring, (const char *) mcf->keys_path.data,
                              err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "fastwall_ingress_keys: %s",
                           err);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_fwi_resolver(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwi_main_conf_t *mcf = conf;

    ngx_str_t   *value, rest;
    ngx_addr_t   addr;

    if (mcf->resolver.len) {
        return "is duplicate";
    }

    value = cf->args->elts;
    rest = value[1];

    /* grpcs:// is FastPath over TLS (nginx's grpc_ssl_* directives in the
     * resolver's location verify it); bare or grpc:// is plaintext */
    if (rest.len > 8 && ngx_strncmp(rest.data, "grpcs://", 8) == 0) {
        mcf->resolver_tls = 1;
        rest.data += 8;
        rest.len -= 8;

    } else if (rest.len > 7 && ngx_strncmp(rest.data, "grpc://", 7) == 0) {
        rest.data += 7;
        rest.len -= 7;
    }

    /* an address and a port: grpc_pass takes it from a variable, where a
     * host name would need a resolver at run time */
    if (ngx_parse_addr_port(cf->pool, &addr, rest.data, rest.len) != NGX_OK
        || ngx_inet_get_port(addr.sockaddr) == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_resolver: \"%V\" is not "
                           "ADDRESS:PORT, grpc://ADDRESS:PORT or "
                           "grpcs://ADDRESS:PORT (an IP address, then a "
                           "port)", &value[1]);
        return NGX_CONF_ERROR;
    }

    mcf->resolver = rest;

    mcf->resolver_url.len = (mcf->resolver_tls ? 8 : 7) + rest.len;
    mcf->resolver_url.data = ngx_pnalloc(cf->pool, mcf->resolver_url.len);
    if (mcf->resolver_url.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(mcf->resolver_url.data, "%s%V",
                mcf->resolver_tls ? "grpcs://" : "grpc://", &rest);

    return NGX_CONF_OK;
}


static void *
ngx_http_fwi_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_fwi_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwi_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    mcf->cache_size = NGX_CONF_UNSET_SIZE;

    return mcf;
}


static char *
ngx_http_fwi_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_fwi_main_conf_t *mcf = conf;

    ngx_pool_cleanup_t  *cln;

    if (mcf->cache_size == NGX_CONF_UNSET_SIZE) {
        mcf->cache_size = 1024 * 1024;
    }

    mcf->shm_zone = ngx_http_fastwall_zone_add(cf, "fastwall_ingress",
                        mcf->cache_size, &ngx_http_fastwall_ingress_module,
                        ngx_http_fwi_init_zone, sizeof(ngx_http_fwi_cache_t));
    if (mcf->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    mcf->scopes = ngx_pcalloc(cf->pool,
                              NGX_HTTP_FWI_SCOPES * sizeof(void *));
    if (mcf->scopes == NULL) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_fwi_scopes_free;
    cln->data = mcf->scopes;

    return NGX_CONF_OK;
}


static void *
ngx_http_fwi_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_fwi_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwi_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    lcf->enable = NGX_CONF_UNSET;
    lcf->mode = NGX_CONF_UNSET_UINT;
    lcf->access_mode = NGX_CONF_UNSET_UINT;

    return lcf;
}


static char *
ngx_http_fwi_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fwi_loc_conf_t *prev = parent;
    ngx_http_fwi_loc_conf_t *conf = child;

    ngx_http_fwi_main_conf_t  *mcf;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_uint_value(conf->mode, prev->mode,
                              NGX_HTTP_FWI_MODE_HEADER);
    ngx_conf_merge_uint_value(conf->access_mode, prev->access_mode,
                              FW_FASTPATH_DIRECT_FASTLET_PROXY);

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf,
                                             ngx_http_fastwall_ingress_module);

    if (mcf->keyring == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress on\" needs "
                           "\"fastwall_ingress_keys\" in the http block");
        return NGX_CONF_ERROR;
    }

    if (mcf->resolver.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress on\" needs "
                           "\"fastwall_ingress_resolver\" in the http block");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
