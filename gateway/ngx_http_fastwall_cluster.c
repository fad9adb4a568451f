/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress, cross-cluster: a second module in the same .so.
 *
 * Data plane: a sandbox id <cluster>.<uuid> that names a peer cluster is
 * not resolved here; the request is rewritten for that cluster's gateway
 * (its address and scheme, its path prefix, the scope in
 * OpenSandbox-Ingress-To, x-agentbox-upstream-host, x-forwarded-proto)
 * and proxied there. On the wire it is what a gateway built like the
 * public reference sends: no x-agentbox-cross-cluster nor
 * x-agentbox-cluster-scheme, which such a gateway would route on. The
 * receiving gateway knows a hop by its own path prefix, strips it and
 * any x-agentbox-* header, and routes the sandbox as a local one; a hop
 * for yet another cluster is refused.
 *
 * Control plane: member records (soft state, a TTL) that each cluster's
 * control plane POSTs to its gateway, kept in a shared memory zone so
 * every worker sees them, and the placement of a create over them. One
 * worker publishes the records of this cluster to the peers' admin APIs,
 * periodically and on change, over connections of its event loop.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fastwall_common.h"
#include "ngx_http_fastwall_cluster.h"
#include "gateway/cluster.h"
#include "gateway/cluster_sig.h"
#include "gateway/placement.h"
#include "gateway/scope.h"


#define NGX_HTTP_FWC_PLACE_MAX      1024    /* records one placement reads */
#define NGX_HTTP_FWC_TICK           200     /* ms between looks for changes */
#define NGX_HTTP_FWC_PUB_TIMEOUT    5000    /* ms for one publication */
#define NGX_HTTP_FWC_PUB_LOG_GAP    60      /* s between two failure lines */
#define NGX_HTTP_FWC_FROM           "X-Fastwall-Cluster-From"
#define NGX_HTTP_FWC_TOKEN          "X-Fastwall-Cluster-Token"
#define NGX_HTTP_FWC_SIGNATURE      "X-Fastwall-Cluster-Signature"


typedef struct {
    ngx_str_t                   name;
    ngx_str_t                   scheme;     /* "http" or "https" */
    ngx_str_t                   authority;  /* host[:port] as written: Host */
    ngx_str_t                   host;       /* the name alone: SNI */
    ngx_str_t                   prefix;     /* "" or "/path", no final '/' */
    ngx_str_t                   addr;       /* ip:port it is reached at */
    ngx_str_t                   upstream;   /* scheme://ip:port */
    in_port_t                   port;
    ngx_uint_t                  resolve;    /* a name nginx's resolver follows */
    ngx_resolver_ctx_t         *rctx;       /* a look-up in flight */
    time_t                      rlogged;    /* last failed look-up line */
} ngx_http_fwc_peer_t;


typedef struct ngx_http_fwc_main_conf_s  ngx_http_fwc_main_conf_t;


/* a peer's admin API this gateway publishes its cluster's records to */
typedef struct {
    ngx_str_t                   peer;       /* that cluster's id */
    ngx_str_t                   url;        /* as written, for the log */
    ngx_str_t                   authority;  /* Host */
    ngx_str_t                   path;       /* .../members */
    ngx_str_t                   host;       /* the name alone, NUL-ended */
    ngx_addr_t                  addr;
    in_port_t                   port;
    ngx_uint_t                  ssl;        /* an https:// URL */
    ngx_uint_t                  resolve;    /* a name nginx's resolver follows */
    ngx_resolver_ctx_t         *rctx;
    uint64_t                    signed_ms;  /* the last signature's time */

    /* the publishing worker's state */
    ngx_http_fwc_main_conf_t   *mcf;
    ngx_peer_connection_t       pc;
    ngx_pool_t                 *pool;       /* of the one in flight */
    ngx_buf_t                  *out;
    ngx_buf_t                  *in;
    ngx_uint_t                  sent;       /* requests in out */
    ngx_uint_t                  busy;
    ngx_uint_t                  failing;
    ngx_atomic_uint_t           gen;        /* changes it last published */
    ngx_msec_t                  due;        /* next periodic publication */
    time_t                      logged;     /* last failure line */
} ngx_http_fwc_target_t;


struct ngx_http_fwc_main_conf_s {
    ngx_str_t                   id;         /* this cluster's */
    ngx_str_t                   prefix;     /* this gateway's hop prefix */
    ngx_array_t                 peers;      /* of ngx_http_fwc_peer_t */
    ngx_array_t                 targets;    /* of ngx_http_fwc_target_t */
    ngx_str_t                   token;      /* shared by the gateways */
    ngx_msec_t                  interval;   /* of publications */
    size_t                      zone_size;
    time_t                      ttl;
    ngx_shm_zone_t             *shm_zone;
    ngx_int_t                   upstream_host;  /* variable index */
    ngx_flag_t                  admin;      /* an admin location exists */

    /* signed publications: the ring, and the key id this one signs with */
    struct fw_scope_keyring    *keys;
    ngx_str_t                   keys_file;
    u_char                      key_id;     /* 0: signs nothing */
    ngx_str_t                   credential; /* of the admin API */
    ngx_array_t                 admin_servers; /* of core srv conf pointers */
    ngx_msec_t                  resolve_interval;
    ngx_resolver_t             *resolver;   /* http-level "resolver" */
    ngx_msec_t                  resolver_timeout;
#if (NGX_SSL)
    ngx_ssl_t                  *ssl;        /* of https publications */
    ngx_str_t                   ssl_trusted;
    ngx_str_t                   ssl_certificate;
    ngx_str_t                   ssl_certificate_key;
#endif
};


typedef struct {
    ngx_queue_t                 records;
    ngx_uint_t                  count;
    ngx_atomic_t                gen;        /* changes of this cluster's */
} ngx_http_fwc_shctx_t;


typedef struct {
    ngx_queue_t                 queue;
    struct fw_member            m;          /* m.expires: unix seconds */
    uint64_t                    signed_ms;  /* a peer's signature, 0: none */
} ngx_http_fwc_record_t;


typedef struct {
    ngx_http_fwc_shctx_t       *sh;
    ngx_slab_pool_t            *shpool;
} ngx_http_fwc_store_t;


typedef struct {
    ngx_http_fwc_peer_t        *peer;       /* forwarded there */
} ngx_http_fwc_ctx_t;


static ngx_int_t ngx_http_fwc_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_fwc_init(ngx_conf_t *cf);
static void *ngx_http_fwc_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_fwc_init_main_conf(ngx_conf_t *cf, void *conf);
static char *ngx_http_fwc_id(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_peer(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_prefix(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_admin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_fwc_admin_handler(ngx_http_request_t *r);
static char *ngx_http_fwc_publish(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_token(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_keys(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_key_id(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwc_credential(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_fwc_init_process(ngx_cycle_t *cycle);
static void ngx_http_fwc_publish_write(ngx_event_t *wev);
#if (NGX_SSL)
static void ngx_http_fwc_publish_tls(ngx_http_fwc_target_t *t,
    ngx_connection_t *c);
#endif
static void ngx_http_fwc_exit_process(ngx_cycle_t *cycle);


static ngx_command_t  ngx_http_fwc_commands[] = {

    { ngx_string("fastwall_ingress_cluster_id"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_id,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE23,
      ngx_http_fwc_peer,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_prefix"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_prefix,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_zone_size"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fastwall_conf_set_zone_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, zone_size),
      NULL },

    { ngx_string("fastwall_ingress_cluster_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, ttl),
      NULL },

    { ngx_string("fastwall_ingress_cluster_admin"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_fwc_admin,
      0,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_publish"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE23,
      ngx_http_fwc_publish,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_publish_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, interval),
      NULL },

    { ngx_string("fastwall_ingress_cluster_token"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_token,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_keys"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_keys,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_key_id"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_key_id,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_admin_credential"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwc_credential,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_cluster_resolve_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, resolve_interval),
      NULL },

#if (NGX_SSL)
    { ngx_string("fastwall_ingress_cluster_publish_ssl_trusted_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, ssl_trusted),
      NULL },

    { ngx_string("fastwall_ingress_cluster_publish_ssl_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, ssl_certificate),
      NULL },

    { ngx_string("fastwall_ingress_cluster_publish_ssl_certificate_key"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwc_main_conf_t, ssl_certificate_key),
      NULL },
#endif

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_cluster_module_ctx = {
    ngx_http_fwc_add_variables,            /* preconfiguration */
    ngx_http_fwc_init,                     /* postconfiguration */

    ngx_http_fwc_create_main_conf,         /* create main configuration */
    ngx_http_fwc_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_cluster_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_cluster_module_ctx, /* module context */
    ngx_http_fwc_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_fwc_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_fwc_exit_process,             /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* the reference's hop headers: a client's copies never pass */
static ngx_str_t  ngx_http_fwc_marker_names[] = {
    ngx_string("x-agentbox-cross-cluster"),
    ngx_string("x-agentbox-cluster-scheme"),
    ngx_string("x-agentbox-upstream-host"),
};

/* also replaced on a forwarded request */
static ngx_str_t  ngx_http_fwc_hop_names[] = {
    ngx_string("x-forwarded-proto"),
    ngx_string("opensandbox-ingress-to"),
    ngx_string("open-sandbox-ingress"),
    ngx_string("x-fast-sandbox-route-credential"),
};

#define NGX_HTTP_FWC_NMARKERS                                                 \
    (sizeof(ngx_http_fwc_marker_names) / sizeof(ngx_str_t))
#define NGX_HTTP_FWC_NHOP                                                     \
    (sizeof(ngx_http_fwc_hop_names) / sizeof(ngx_str_t))


static ngx_uint_t
ngx_http_fwc_named(ngx_table_elt_t *h, ngx_str_t *names, ngx_uint_t n)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (h->key.len == names[i].len
            && ngx_strncasecmp(h->key.data, names[i].data, h->key.len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* whether one of the client's headers is an x-agentbox-* hop header */
static ngx_uint_t
ngx_http_fwc_has_marker(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return 0;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (ngx_http_fwc_named(&h[i], ngx_http_fwc_marker_names,
                               NGX_HTTP_FWC_NMARKERS))
        {
            return 1;
        }
    }
}


/*
 * Whether a path is under a prefix: the prefix, then the end, a '/' or
 * the query ("/xcx" is not under "/xc").
 */
static ngx_uint_t
ngx_http_fwc_under(ngx_str_t *uri, ngx_str_t *prefix)
{
    return prefix->len && uri->len >= prefix->len
           && ngx_strncmp(uri->data, prefix->data, prefix->len) == 0
           && (uri->len == prefix->len
               || uri->data[prefix->len] == '/'
               || uri->data[prefix->len] == '?');
}


static ngx_int_t
ngx_http_fwc_push(ngx_http_request_t *r, ngx_list_t *headers, char *name,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

    h->lowcase_key = ngx_pnalloc(r->pool, h->key.len);
    if (h->lowcase_key == NULL) {
        return NGX_ERROR;
    }

    /* the proxy module skips a header by this hash and lowercase key when
     * proxy_set_header names it */
    h->hash = ngx_hash_strlow(h->lowcase_key, h->key.data, h->key.len);

    return NGX_OK;
}


/*
 * Rebuilds the header list without the markers (and, for a forwarded
 * request, without the headers the hop replaces), then adds the hop's own
 * when peer is set: nginx's lists cannot drop an element. The hop sends
 * what the reference sends once it removed its routing markers.
 */
static ngx_int_t
ngx_http_fwc_rewrite_headers(ngx_http_request_t *r, ngx_http_fwc_peer_t *peer,
    ngx_str_t *scope)
{
    ngx_uint_t        i;
    ngx_list_t        headers;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *nh;

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

        if (ngx_http_fwc_named(&h[i], ngx_http_fwc_marker_names,
                               NGX_HTTP_FWC_NMARKERS)
            || (peer && ngx_http_fwc_named(&h[i], ngx_http_fwc_hop_names,
                                           NGX_HTTP_FWC_NHOP)))
        {
            continue;
        }

        nh = ngx_list_push(&headers);
        if (nh == NULL) {
            return NGX_ERROR;
        }

        *nh = h[i];
    }

    /* the peer verifies the scope again, so it rides along whichever way
     * the client sent it; x-forwarded-proto is the scheme of the hop */
    if (peer
        && (ngx_http_fwc_push(r, &headers, "OpenSandbox-Ingress-To", scope)
               != NGX_OK
            || ngx_http_fwc_push(r, &headers, "x-agentbox-upstream-host",
                                 &peer->addr)
               != NGX_OK
            || ngx_http_fwc_push(r, &headers, "x-forwarded-proto",
                                 &peer->scheme)
               != NGX_OK))
    {
        return NGX_ERROR;
    }

    r->headers_in.headers = headers;

    /* a list of one part points its last at its own first part: the copy
     * must point at its own, not at this stack frame's */
    if (headers.last == &headers.part) {
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }

    return NGX_OK;
}


static ngx_http_fwc_peer_t *
ngx_http_fwc_find_peer(ngx_http_fwc_main_conf_t *mcf, u_char *name,
    size_t len)
{
    ngx_uint_t            i;
    ngx_http_fwc_peer_t  *peer;

    peer = mcf->peers.elts;

    for (i = 0; i < mcf->peers.nelts; i++) {
        if (peer[i].name.len == len
            && ngx_strncmp(peer[i].name.data, name, len) == 0)
        {
            return &peer[i];
        }
    }

    return NULL;
}


ngx_int_t
ngx_http_fastwall_cluster_route(ngx_http_request_t *r, ngx_str_t *sandbox,
    ngx_str_t *scope, ngx_str_t *uri, ngx_uint_t own_path,
    ngx_str_t *upstream)
{
    u_char                    *p;
    ngx_uint_t                 hop;
    ngx_str_t                  rest;
    ngx_http_fwc_ctx_t        *ctx;
    ngx_http_fwc_peer_t       *peer;
    struct fw_cluster_span     cluster, uuid;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_cluster_module);

    if (mcf->id.len == 0) {
        return NGX_DECLINED;
    }

    /*
     * A peer's hop arrives under this gateway's data-plane prefix, which
     * is what the peer knows it by: no header tells it, for the headers a
     * gateway like the reference routes on never leave it. A client that
     * writes the prefix itself is taken for a hop: the prefix is the
     * hops' path, and a hop is served as a local request is.
     */
    hop = own_path && ngx_http_fwc_under(uri, &mcf->prefix);

    if (!fw_cluster_sandbox_split((const char *) sandbox->data, sandbox->len,
                                  &cluster, &uuid)
        || (cluster.len == mcf->id.len
            && ngx_strncmp(cluster.p, mcf->id.data, cluster.len) == 0))
    {
        /* local: the hop's prefix goes, then the markers */
        if (hop) {
            rest.data = uri->data + mcf->prefix.len;
            rest.len = uri->len - mcf->prefix.len;

            if (rest.len && rest.data[0] == '/') {
                *uri = rest;

            } else {
                p = ngx_pnalloc(r->pool, rest.len + 1);
                if (p == NULL) {
                    return NGX_ERROR;
                }

                p[0] = '/';
                ngx_memcpy(p + 1, rest.data, rest.len);
                uri->data = p;
                uri->len = rest.len + 1;
            }
        }

        if (ngx_http_fwc_has_marker(r)
            && ngx_http_fwc_rewrite_headers(r, NULL, NULL) != NGX_OK)
        {
            return NGX_ERROR;
        }

        return NGX_DECLINED;
    }

    if (hop) {
        /* a peer sent it here for a third cluster: never bounce */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fastwall ingress: a cross-cluster hop for sandbox "
                      "\"%V\" of another cluster, not forwarded again",
                      sandbox);
        return NGX_HTTP_BAD_GATEWAY;
    }

    peer = ngx_http_fwc_find_peer(mcf, (u_char *) cluster.p, cluster.len);

    if (peer == NULL) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fastwall ingress: sandbox \"%V\" names a cluster "
                      "without a gateway here", sandbox);
        return NGX_HTTP_BAD_GATEWAY;
    }

    if (ngx_http_fwc_rewrite_headers(r, peer, scope) != NGX_OK) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, peer->prefix.len + uri->len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, peer->prefix.data, peer->prefix.len);
    ngx_memcpy(p + peer->prefix.len, uri->data, uri->len);
    uri->data = p;
    uri->len += peer->prefix.len;

    *upstream = peer->upstream;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fwc_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->peer = peer;
    ngx_http_set_ctx(r, ctx, ngx_http_fastwall_cluster_module);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fastwall ingress: sandbox \"%V\" forwarded to cluster "
                  "\"%V\" at %V", sandbox, &peer->name, &peer->upstream);

    return NGX_DONE;
}


/* variables */

static ngx_int_t
ngx_http_fwc_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_str_t                 *s;
    ngx_http_fwc_ctx_t        *ctx;
    ngx_http_variable_value_t *up;
    ngx_http_fwc_main_conf_t  *mcf;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fastwall_cluster_module);

    if (ctx == NULL) {
        if (data != 0) {
            /* a local route: the resolved endpoint's authority, what
             * nginx takes for Host and the TLS name by default (it cuts
             * the port off the name itself) */
            mcf = ngx_http_get_module_main_conf(r,
                                           ngx_http_fastwall_cluster_module);
            up = ngx_http_get_indexed_variable(r, mcf->upstream_host);
            if (up == NULL) {
                return NGX_ERROR;
            }

            *v = *up;
            return NGX_OK;
        }

        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {
    case 0:
        s = &ctx->peer->name;
        break;
    case 1:
        s = &ctx->peer->authority;
        break;
    default:
        s = &ctx->peer->host;
        break;
    }

    v->len = s->len;
    v->data = s->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_fwc_vars[] = {

    { ngx_string("fastwall_ingress_cluster"), NULL,
      ngx_http_fwc_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_cluster_host"), NULL,
      ngx_http_fwc_variable, 1, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fastwall_ingress_cluster_sni"), NULL,
      ngx_http_fwc_variable, 2, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_fwc_add_variables(ngx_conf_t *cf)
{
    return ngx_http_fastwall_add_variables(cf, ngx_http_fwc_vars);
}


/* member records in shared memory */

static ngx_int_t
ngx_http_fwc_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fwc_store_t  *ostore = data;

    ngx_uint_t             fresh;
    ngx_http_fwc_store_t  *store;

    store = shm_zone->data;

    if (ostore) {
        store->sh = ostore->sh;
        store->shpool = ostore->shpool;
        return NGX_OK;
    }

    store->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    /* a full zone is the publisher's 507, not a log line per record */
    store->sh = ngx_http_fastwall_zone_context(shm_zone,
                                               sizeof(ngx_http_fwc_shctx_t),
                                               "fastwall_ingress_cluster",
                                               &fresh);
    if (store->sh == NULL) {
        return NGX_ERROR;
    }

    if (fresh) {
        ngx_queue_init(&store->sh->records);
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_fwc_same_member(struct fw_member *a, struct fw_member *b)
{
    return ngx_strcmp(a->cluster, b->cluster) == 0
           && ngx_strcmp(a->ns, b->ns) == 0
           && ngx_strcmp(a->env, b->env) == 0
           && ngx_strcmp(a->pool, b->pool) == 0;
}


/* Replaces the record of (cluster, namespace, env, pool); drops expired
 * records on the way; *changed: a new record or new counts. NGX_DECLINED
 * when the zone is full; NGX_BUSY for a signed record (signed_ms) that is
 * not newer than the one kept: a replay never rolls a record back. */
static ngx_int_t
ngx_http_fwc_store_put(ngx_http_fwc_store_t *store, struct fw_member *m,
    uint64_t signed_ms, ngx_uint_t *changed)
{
    ngx_queue_t            *q, *next;
    ngx_http_fwc_record_t  *rec, *found;

    found = NULL;

    ngx_shmtx_lock(&store->shpool->mutex);

    for (q = ngx_queue_head(&store->sh->records);
         q != ngx_queue_sentinel(&store->sh->records);
         q = next)
    {
        next = ngx_queue_next(q);
        rec = ngx_queue_data(q, ngx_http_fwc_record_t, queue);

        if (found == NULL && ngx_http_fwc_same_member(&rec->m, m)) {
            found = rec;
            continue;
        }

        if (rec->m.expires <= ngx_time()) {
            ngx_queue_remove(q);
            ngx_slab_free_locked(store->shpool, rec);
            store->sh->count--;
        }
    }

    if (found && signed_ms && fw_csig_newer(signed_ms, found->signed_ms)) {
        ngx_shmtx_unlock(&store->shpool->mutex);
        return NGX_BUSY;
    }

    if (found == NULL) {
        found = ngx_slab_alloc_locked(store->shpool,
                                      sizeof(ngx_http_fwc_record_t));
        if (found == NULL) {
            ngx_shmtx_unlock(&store->shpool->mutex);
            return NGX_DECLINED;
        }

        ngx_queue_insert_tail(&store->sh->records, &found->queue);
        store->sh->count++;
        found->signed_ms = 0;
        *changed = 1;

    } else {
        *changed = found->m.expires <= ngx_time()
                   || found->m.idle != m->idle
                   || found->m.headroom != m->headroom
                   || found->m.autoscale != m->autoscale;
    }

    found->m = *m;

    /* a record the local control plane posts keeps the last signature's
     * time: an older signed one still cannot come back after it */
    if (signed_ms) {
        found->signed_ms = signed_ms;
    }

    ngx_shmtx_unlock(&store->shpool->mutex);

    return NGX_OK;
}


/* Copies the unexpired records (of ns/env when given) to the pool. */
static ngx_int_t
ngx_http_fwc_store_read(ngx_http_request_t *r, ngx_http_fwc_store_t *store,
    const char *ns, const char *env, ngx_array_t *out)
{
    ngx_queue_t            *q;
    struct fw_member       *m;
    ngx_http_fwc_record_t  *rec;

    if (ngx_array_init(out, r->pool, 8, sizeof(struct fw_member)) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_shmtx_lock(&store->shpool->mutex);

    for (q = ngx_queue_head(&store->sh->records);
         q != ngx_queue_sentinel(&store->sh->records)
         && out->nelts < NGX_HTTP_FWC_PLACE_MAX;
         q = ngx_queue_next(q))
    {
        rec = ngx_queue_data(q, ngx_http_fwc_record_t, queue);

        if (rec->m.expires <= ngx_time()
            || (ns && (ngx_strcmp(rec->m.ns, ns) != 0
                       || ngx_strcmp(rec->m.env, env) != 0)))
        {
            continue;
        }

        m = ngx_array_push(out);
        if (m == NULL) {
            ngx_shmtx_unlock(&store->shpool->mutex);
            return NGX_ERROR;
        }

        *m = rec->m;
    }

    ngx_shmtx_unlock(&store->shpool->mutex);

    return NGX_OK;
}


/* the admin API: POST|GET .../members, GET .../place */

static ngx_int_t
ngx_http_fwc_send(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    r->headers_out.status = status;

    if (len == 0) {
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return ngx_http_send_header(r);
    }

    if (body[0] == '{') {
        ngx_str_set(&r->headers_out.content_type, "application/json");

    } else {
        ngx_str_set(&r->headers_out.content_type, "text/plain");
    }
    r->headers_out.content_length_n = len;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->last = ngx_cpymem(b->pos, body, len);
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_fwc_error(ngx_http_request_t *r, ngx_uint_t status, const char *what)
{
    u_char  *p, *last;

    p = ngx_pnalloc(r->pool, 256);
    if (p == NULL) {
        return NGX_ERROR;
    }

    last = ngx_snprintf(p, 255, "{\"error\":\"%s\"}\n", what);

    return ngx_http_fwc_send(r, status, p, last - p);
}


/* the value of the first header of that name, or NULL */
static ngx_str_t *
ngx_http_fwc_header(ngx_http_request_t *r, const char *name)
{
    ngx_table_elt_t  *h;

    h = ngx_http_fastwall_find_header(&r->headers_in.headers, name);

    return h ? &h->value : NULL;
}


/* compares in a time that does not depend on where they differ */
static ngx_uint_t
ngx_http_fwc_token_ok(ngx_str_t *want, ngx_str_t *got)
{
    if (got == NULL || got->len != want->len) {
        return 0;
    }

    return ngx_http_fastwall_equal(want->data, got->data, want->len);
}


/*
 * A record a peer's gateway published (it names itself in
 * X-Fastwall-Cluster-From): only with the shared token, from a configured
 * peer, and only of that peer's own cluster, so never of this one. NULL
 * when it may be kept, else why not.
 */
static const char *
ngx_http_fwc_published_ok(ngx_http_request_t *r,
    ngx_http_fwc_main_conf_t *mcf, ngx_str_t *from, struct fw_member *m,
    u_char *text, size_t len, uint64_t *signed_ms)
{
    int              rc;
    uint64_t         now;
    ngx_str_t       *sig;
    ngx_time_t      *tp;
    struct fw_csig   parsed;

    *signed_ms = 0;

    if (mcf->token.len == 0 && mcf->keys == NULL) {
        return "published records need fastwall_ingress_cluster_token or "
               "fastwall_ingress_cluster_keys here";
    }

    if (mcf->token.len
        && !ngx_http_fwc_token_ok(&mcf->token,
                                  ngx_http_fwc_header(r, NGX_HTTP_FWC_TOKEN)))
    {
        return "bad or missing " NGX_HTTP_FWC_TOKEN;
    }

    if (mcf->keys) {
        sig = ngx_http_fwc_header(r, NGX_HTTP_FWC_SIGNATURE);
        if (sig == NULL) {
            return "unsigned (no " NGX_HTTP_FWC_SIGNATURE ")";
        }

        /* signed for this cluster by the one it names, under our ring */
        rc = fw_csig_verify(mcf->keys, (const char *) sig->data, sig->len,
                            (const char *) from->data, from->len,
                            (const char *) mcf->id.data, mcf->id.len,
                            (const char *) text, len, &parsed);
        if (rc) {
            return fw_csig_strerror(rc);
        }

        tp = ngx_timeofday();
        now = (uint64_t) tp->sec * 1000 + tp->msec;

        rc = fw_csig_fresh(parsed.ts_ms, now, (uint64_t) mcf->ttl * 1000,
                           FW_CSIG_SKEW_MS);
        if (rc) {
            return fw_csig_strerror(rc);
        }

        *signed_ms = parsed.ts_ms;
    }

    if (ngx_http_fwc_find_peer(mcf, from->data, from->len) == NULL) {
        return "published by a cluster that is no configured peer";
    }

    if (ngx_strlen(m->cluster) != from->len
        || ngx_strncmp(m->cluster, from->data, from->len) != 0)
    {
        return "a peer publishes only its own cluster's records";
    }

    return NULL;
}


static void
ngx_http_fwc_members_post(ngx_http_request_t *r)
{
    int                        err;
    size_t                     len;
    u_char                     text[FW_MEMBER_TEXT_MAX + 1], *p;
    ngx_int_t                  rc;
    ngx_buf_t                 *b;
    uint64_t                   signed_ms;
    ngx_str_t                 *from;
    ngx_uint_t                 changed;
    ngx_chain_t               *cl;
    const char                *why;
    struct fw_member           m;
    ngx_http_fwc_store_t      *store;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_cluster_module);

    len = 0;
    p = text;

    for (cl = r->request_body ? r->request_body->bufs : NULL; cl; cl = cl->next) {
        b = cl->buf;

        if (b->in_file || (size_t) (b->last - b->pos) > sizeof(text) - len) {
            ngx_http_finalize_request(r,
                ngx_http_fwc_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                   "record too long"));
            return;
        }

        p = ngx_cpymem(p, b->pos, b->last - b->pos);
        len += b->last - b->pos;
    }

    err = fw_member_parse((const char *) text, len, &m);
    if (err) {
        ngx_http_finalize_request(r,
            ngx_http_fwc_error(r, NGX_HTTP_BAD_REQUEST,
                               fw_member_strerror(err)));
        return;
    }

    from = ngx_http_fwc_header(r, NGX_HTTP_FWC_FROM);
    signed_ms = 0;

    if (from) {
        why = ngx_http_fwc_published_ok(r, mcf, from, &m, text, len,
                                        &signed_ms);

        if (why) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "fastwall ingress: a member record published by "
                          "\"%V\" refused: %s", from, why);
            ngx_http_finalize_request(r,
                ngx_http_fwc_error(r, NGX_HTTP_FORBIDDEN, why));
            return;
        }
    }

    /* only clusters this gateway knows: this one and its peers */
    len = ngx_strlen(m.cluster);

    if ((len != mcf->id.len || ngx_strncmp(m.cluster, mcf->id.data, len) != 0)
        && ngx_http_fwc_find_peer(mcf, (u_char *) m.cluster, len) == NULL)
    {
        ngx_http_finalize_request(r,
            ngx_http_fwc_error(r, NGX_HTTP_FORBIDDEN,
                               "not this cluster nor a configured peer"));
        return;
    }

    m.expires = ngx_time() + mcf->ttl;

    store = mcf->shm_zone->data;

    rc = ngx_http_fwc_store_put(store, &m, signed_ms, &changed);

    if (rc == NGX_BUSY) {
        why = fw_csig_strerror(FW_CSIG_E_REPLAY);
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: a member record published by "
                      "\"%V\" refused: %s", from, why);
        ngx_http_finalize_request(r,
            ngx_http_fwc_error(r, NGX_HTTP_FORBIDDEN, why));
        return;
    }

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "fastwall ingress: member zone full, record of "
                      "cluster \"%s\" not kept", m.cluster);
        ngx_http_finalize_request(r,
            ngx_http_fwc_error(r, NGX_HTTP_INSUFFICIENT_STORAGE,
                               "member zone full"));
        return;
    }

    /* this cluster's own record changed: the publisher sends at once */
    if (changed && len == mcf->id.len
        && ngx_strncmp(m.cluster, mcf->id.data, len) == 0)
    {
        (void) ngx_atomic_fetch_add(&store->sh->gen, 1);
    }

    rc = ngx_http_fwc_send(r, NGX_HTTP_NO_CONTENT, NULL, 0);
    ngx_http_finalize_request(r, rc);
}


static ngx_int_t
ngx_http_fwc_members_get(ngx_http_request_t *r, ngx_http_fwc_main_conf_t *mcf)
{
    int                n;
    u_char            *body, *p;
    ngx_uint_t         i;
    ngx_array_t        recs;
    struct fw_member  *m;

    if (ngx_http_fwc_store_read(r, mcf->shm_zone->data, NULL, NULL, &recs)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (recs.nelts == 0) {
        return ngx_http_fwc_send(r, NGX_HTTP_OK, (u_char *) "\n", 1);
    }

    body = ngx_pnalloc(r->pool, recs.nelts * (FW_MEMBER_TEXT_MAX + 32));
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = body;
    m = recs.elts;

    for (i = 0; i < recs.nelts; i++) {
        n = fw_member_format(&m[i], (char *) p, FW_MEMBER_TEXT_MAX);
        if (n < 0) {
            continue;
        }

        p = ngx_sprintf(p + n, " ttl=%T\n", (time_t) (m[i].expires - ngx_time()));
    }

    return ngx_http_fwc_send(r, NGX_HTTP_OK, body, p - body);
}


/* an argument, decoded as a query ('+' a space, then %XX) and
 * NUL-terminated, or NULL */
static u_char *
ngx_http_fwc_arg(ngx_http_request_t *r, char *name, size_t max, size_t *len)
{
    u_char     *raw, *dst, *src, *p;
    size_t      i;
    ngx_str_t   v;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &v) != NGX_OK
        || v.len == 0 || v.len > max)
    {
        return NULL;
    }

    raw = ngx_pnalloc(r->pool, v.len);
    p = ngx_pnalloc(r->pool, v.len + 1);
    if (raw == NULL || p == NULL) {
        return NULL;
    }

    for (i = 0; i < v.len; i++) {
        raw[i] = (v.data[i] == '+') ? ' ' : v.data[i];
    }

    dst = p;
    src = raw;
    ngx_unescape_uri(&dst, &src, v.len, 0);

    *len = dst - p;
    *dst = '\0';

    /* a NUL decoded from %00 would cut the name short: refused */
    if (ngx_strlen(p) != *len) {
        return NULL;
    }

    return p;
}


static ngx_uint_t
ngx_http_fwc_name_ok(u_char *p, size_t len)
{
    size_t  i;

    if (len == 0 || len > FW_CLUSTER_NAME_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_'
              || p[i] == '.'))
        {
            return 0;
        }
    }

    return 1;
}


static ngx_int_t
ngx_http_fwc_place(ngx_http_request_t *r, ngx_http_fwc_main_conf_t *mcf)
{
    int                     err;
    u_char                 *ns, *ref, *env, *body, *p;
    size_t                  ns_len, ref_len;
    ngx_str_t               id;
    ngx_array_t             recs;
    struct fw_place         pl;
    struct fw_cluster_ref   cref;

    ns = ngx_http_fwc_arg(r, "namespace", FW_CLUSTER_NAME_MAX, &ns_len);
    ref = ngx_http_fwc_arg(r, "ref", FW_CLUSTER_REF_MAX, &ref_len);

    if (ns == NULL || ref == NULL || !ngx_http_fwc_name_ok(ns, ns_len)) {
        return ngx_http_fwc_error(r, NGX_HTTP_BAD_REQUEST,
                                  "needs namespace=NAME&ref=REFERENCE");
    }

    err = fw_cluster_ref_parse((const char *) ref, ref_len, &cref);
    if (err) {
        return ngx_http_fwc_error(r, NGX_HTTP_BAD_REQUEST,
                                  fw_cluster_strerror(err));
    }

    if (!ngx_http_fwc_name_ok((u_char *) cref.name.p, cref.name.len)) {
        return ngx_http_fwc_error(r, NGX_HTTP_NOT_FOUND, "no such env or pool");
    }

    body = ngx_pnalloc(r->pool, 2 * FW_CLUSTER_ID_MAX + FW_CLUSTER_NAME_MAX
                                + 128);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (cref.cluster.len) {
        /* cluster::pool is obeyed as written, without placement */
        id = mcf->id;

        if (cref.cluster.len == id.len
            && ngx_strncmp(cref.cluster.p, id.data, id.len) == 0)
        {
            p = ngx_sprintf(body, "{\"decision\":\"local\",\"step\":0}\n");

        } else if (ngx_http_fwc_find_peer(mcf, (u_char *) cref.cluster.p,
                                          cref.cluster.len))
        {
            p = ngx_sprintf(body, "{\"decision\":\"forward\","
                            "\"cluster\":\"%*s\",\"target\":\"%*s::%*s\","
                            "\"step\":0}\n",
                            cref.cluster.len, cref.cluster.p,
                            cref.cluster.len, cref.cluster.p,
                            cref.name.len, cref.name.p);

        } else {
            return ngx_http_fwc_error(r, NGX_HTTP_NOT_FOUND,
                                      "unknown cluster");
        }

        return ngx_http_fwc_send(r, NGX_HTTP_OK, body, p - body);
    }

    env = ngx_pnalloc(r->pool, cref.name.len + 1);
    if (env == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(env, cref.name.p, cref.name.len);
    env[cref.name.len] = '\0';

    if (ngx_http_fwc_store_read(r, mcf->shm_zone->data, (char *) ns,
                                (char *) env, &recs)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the local cluster id, NUL-terminated for the library */
    p = ngx_pnalloc(r->pool, mcf->id.len + 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(p, mcf->id.data, mcf->id.len);
    p[mcf->id.len] = '\0';

    if (fw_place((const char *) p, recs.elts, recs.nelts, (const char *) ns,
                 (const char *) env, ngx_time(), &pl)
        != 0)
    {
        /* a bare name that is no env: not found, no fallback */
        return ngx_http_fwc_error(r, NGX_HTTP_NOT_FOUND, "no such env");
    }

    switch (pl.kind) {
    case FW_PLACE_LOCAL:
        p = ngx_sprintf(body, "{\"decision\":\"local\",\"step\":%d}\n",
                        pl.step);
        break;
    case FW_PLACE_FORWARD:
        p = ngx_sprintf(body, "{\"decision\":\"forward\",\"cluster\":\"%s\","
                        "\"target\":\"%s::%s\",\"step\":%d}\n",
                        pl.target->cluster, pl.target->cluster,
                        pl.target->pool, pl.step);
        break;
    default:
        p = ngx_sprintf(body, "{\"decision\":\"park\",\"step\":%d}\n",
                        pl.step);
        break;
    }

    return ngx_http_fwc_send(r, NGX_HTTP_OK, body, p - body);
}


static ngx_uint_t
ngx_http_fwc_ends_with(ngx_str_t *uri, const char *seg)
{
    size_t  n;

    n = ngx_strlen(seg);

    return uri->len > n && uri->data[uri->len - n - 1] == '/'
           && ngx_strncmp(uri->data + uri->len - n, seg, n) == 0;
}


/*
 * With fastwall_ingress_cluster_admin_credential every request carries
 * "Authorization: Bearer CREDENTIAL" (compared in constant time), except
 * a peer's publication (POST .../members with X-Fastwall-Cluster-From),
 * which its token or signature authenticates instead.
 */
static ngx_int_t
ngx_http_fwc_admin_auth(ngx_http_request_t *r, ngx_http_fwc_main_conf_t *mcf)
{
    ngx_str_t         got;
    ngx_table_elt_t  *h;

    if (mcf->credential.len == 0) {
        return NGX_OK;
    }

    if (r->method == NGX_HTTP_POST
        && ngx_http_fwc_ends_with(&r->uri, "members")
        && ngx_http_fwc_header(r, NGX_HTTP_FWC_FROM))
    {
        return NGX_OK;
    }

    h = r->headers_in.authorization;

    if (h && h->value.len > 7
        && ngx_strncasecmp(h->value.data, (u_char *) "Bearer ", 7) == 0)
    {
        got.data = h->value.data + 7;
        got.len = h->value.len - 7;

        if (ngx_http_fwc_token_ok(&mcf->credential, &got)) {
            return NGX_OK;
        }
    }

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.www_authenticate = ngx_list_push(&r->headers_out.headers);
    if (r->headers_out.www_authenticate == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.www_authenticate->hash = 1;
    ngx_str_set(&r->headers_out.www_authenticate->key, "WWW-Authenticate");
    ngx_str_set(&r->headers_out.www_authenticate->value,
                "Bearer realm=\"fastwall cluster admin\"");

    return ngx_http_fwc_error(r, NGX_HTTP_UNAUTHORIZED,
                              h ? "bad credential" : "credential required");
}


static ngx_int_t
ngx_http_fwc_admin_handler(ngx_http_request_t *r)
{
    ngx_int_t                  rc;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_cluster_module);

    rc = ngx_http_fwc_admin_auth(r, mcf);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_fwc_ends_with(&r->uri, "members")) {

        if (r->method == NGX_HTTP_GET) {
            rc = ngx_http_discard_request_body(r);
            if (rc != NGX_OK) {
                return rc;
            }

            return ngx_http_fwc_members_get(r, mcf);
        }

        if (r->method != NGX_HTTP_POST) {
            return NGX_HTTP_NOT_ALLOWED;
        }

        if (r->headers_in.content_length_n > FW_MEMBER_TEXT_MAX) {
            return ngx_http_fwc_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                      "record too long");
        }

        r->request_body_in_single_buf = 1;

        rc = ngx_http_read_client_request_body(r, ngx_http_fwc_members_post);
        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            return rc;
        }

        return NGX_DONE;
    }

    if (ngx_http_fwc_ends_with(&r->uri, "place")) {

        if (r->method != NGX_HTTP_GET) {
            return NGX_HTTP_NOT_ALLOWED;
        }

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_fwc_place(r, mcf);
    }

    return NGX_HTTP_NOT_FOUND;
}


/*
 * Publishing this cluster's records to the peers: one worker, a timer
 * that looks for changes every NGX_HTTP_FWC_TICK ms and publishes each
 * interval anyway; per peer one connection at a time carrying every
 * record as pipelined POSTs, all non-blocking. A failure is logged at
 * most once a minute per peer and retried at the next interval.
 */

static ngx_event_t             ngx_http_fwc_publish_event;
static ngx_http_fwc_main_conf_t *ngx_http_fwc_publisher;

/* the connections' own log: nginx's lines about a peer that is down
 * would come every interval; the publisher says it once a minute */
static ngx_log_t               ngx_http_fwc_quiet_log;


static void
ngx_http_fwc_publish_done(ngx_http_fwc_target_t *t)
{
    if (t->pc.connection) {
#if (NGX_SSL)
        if (t->pc.connection->ssl) {
            t->pc.connection->ssl->no_wait_shutdown = 1;
            (void) ngx_ssl_shutdown(t->pc.connection);
        }
#endif
        ngx_close_connection(t->pc.connection);
        t->pc.connection = NULL;
    }

    if (t->pool) {
        ngx_destroy_pool(t->pool);
        t->pool = NULL;
    }

    t->busy = 0;
}


static void
ngx_http_fwc_publish_fail(ngx_http_fwc_target_t *t, ngx_err_t err,
    const char *what, ngx_str_t *detail)
{
    ngx_str_t  none = ngx_null_string;

    if (t->logged == 0 || ngx_time() - t->logged >= NGX_HTTP_FWC_PUB_LOG_GAP) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, err,
                      "fastwall ingress: member records not published to "
                      "cluster \"%V\" at %V: %s%V (retried every %M ms, "
                      "logged at most once a minute)", &t->peer, &t->url,
                      what, detail ? detail : &none, t->mcf->interval);
        t->logged = ngx_time();
    }

    t->failing = 1;
    ngx_http_fwc_publish_done(t);
}


/* s with every byte that is not printable ASCII a space, and no edge
 * spaces, at most max bytes: a peer's answer goes to our log */
static void
ngx_http_fwc_printable(ngx_str_t *s, size_t max)
{
    u_char  *p;

    if (s->len > max) {
        s->len = max;
    }

    for (p = s->data; p < s->data + s->len; p++) {
        if (*p < ' ' || *p >= 0x7f) {
            *p = ' ';
        }
    }

    while (s->len && s->data[s->len - 1] == ' ') {
        s->len--;
    }
}


/* every answer must be a 204; of the first that is not, the status line
 * and the admin API's {"error":...} go to the log */
static void
ngx_http_fwc_publish_judge(ngx_http_fwc_target_t *t)
{
    ngx_str_t                  bad, why, detail;
    ngx_uint_t                 ok;
    struct fw_member_answers   ans;

    fw_member_answers_scan((const char *) t->in->pos,
                           t->in->last - t->in->pos, &ans);

    ok = ans.ok;
    bad.data = (u_char *) ans.bad;
    bad.len = ans.bad_len;
    why.data = (u_char *) ans.why;
    why.len = ans.why_len;

    if (ok == t->sent) {
        if (t->failing) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "fastwall ingress: member records published to "
                          "cluster \"%V\" at %V again", &t->peer, &t->url);
            /* logged stays: a peer that comes and goes is still
             * logged at most once a minute */
            t->failing = 0;
        }

        ngx_http_fwc_publish_done(t);
        return;
    }

    if (bad.data == NULL) {
        ngx_http_fwc_publish_fail(t, 0, "closed before every answer", NULL);
        return;
    }

    ngx_http_fwc_printable(&bad, 64);
    ngx_http_fwc_printable(&why, 160);

    /* a peer that echoes requests would hand our token back */
    if (t->mcf->token.len && why.len >= t->mcf->token.len
        && ngx_strlcasestrn(why.data, why.data + why.len, t->mcf->token.data,
                            t->mcf->token.len - 1))
    {
        why.len = 0;
    }

    if (t->mcf->token.len && bad.len >= t->mcf->token.len
        && ngx_strlcasestrn(bad.data, bad.data + bad.len, t->mcf->token.data,
                            t->mcf->token.len - 1))
    {
        bad.len = 3;
    }

    detail.data = ngx_pnalloc(t->pool, bad.len + 1 + why.len);
    if (detail.data == NULL) {
        ngx_http_fwc_publish_fail(t, 0, "answered ", &bad);
        return;
    }

    detail.len = ngx_sprintf(detail.data, "%V%s%V", &bad, why.len ? " " : "",
                             &why)
                 - detail.data;

    ngx_http_fwc_publish_fail(t, 0, "answered ", &detail);
}


static void
ngx_http_fwc_publish_read(ngx_event_t *rev)
{
    ssize_t                 n;
    ngx_connection_t       *c;
    ngx_http_fwc_target_t  *t;

    c = rev->data;
    t = c->data;

    if (rev->timedout) {
        ngx_http_fwc_publish_fail(t, NGX_ETIMEDOUT, "no answer", NULL);
        return;
    }

    while (t->in->last < t->in->end) {
        n = c->recv(c, t->in->last, t->in->end - t->in->last);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_fwc_publish_fail(t, 0, "event error", NULL);
            }

            return;
        }

        if (n == NGX_ERROR) {
            ngx_http_fwc_publish_fail(t, ngx_socket_errno, "read failed",
                                      NULL);
            return;
        }

        if (n == 0) {
            break;
        }

        t->in->last += n;
    }

    /* the last request asked to close: all answers are in */
    ngx_http_fwc_publish_judge(t);
}


static void
ngx_http_fwc_publish_nothing(ngx_event_t *ev)
{
}


static void
ngx_http_fwc_publish_write(ngx_event_t *wev)
{
    int                     err;
    ssize_t                 n;
    socklen_t               len;
    ngx_connection_t       *c;
    ngx_http_fwc_target_t  *t;

    c = wev->data;
    t = c->data;

    if (wev->timedout) {
        ngx_http_fwc_publish_fail(t, NGX_ETIMEDOUT, "timed out", NULL);
        return;
    }

    /* how the connect went */
    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = ngx_socket_errno;
    }

    if (err) {
        ngx_http_fwc_publish_fail(t, err, "can't connect", NULL);
        return;
    }

#if (NGX_SSL)
    if (t->ssl && c->ssl == NULL) {
        ngx_http_fwc_publish_tls(t, c);
        return;
    }
#endif

    while (t->out->pos < t->out->last) {
        n = c->send(c, t->out->pos, t->out->last - t->out->pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                ngx_http_fwc_publish_fail(t, 0, "event error", NULL);
            }

            return;
        }

        if (n <= 0) {
            ngx_http_fwc_publish_fail(t, ngx_socket_errno, "send failed",
                                      NULL);
            return;
        }

        t->out->pos += n;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    wev->handler = ngx_http_fwc_publish_nothing;

    ngx_add_timer(c->read, NGX_HTTP_FWC_PUB_TIMEOUT);
    ngx_http_fwc_publish_read(c->read);
}


#if (NGX_SSL)

/* the handshake is over: the peer's certificate must chain to the
 * trusted ones and name the URL's host, else nothing is sent */
static void
ngx_http_fwc_publish_handshake(ngx_connection_t *c)
{
    long                    rc;
    ngx_str_t               why;
    ngx_http_fwc_target_t  *t;

    t = c->data;

    if (!c->ssl->handshaked) {
        ngx_http_fwc_publish_fail(t, 0, "TLS handshake failed", NULL);
        return;
    }

    rc = SSL_get_verify_result(c->ssl->connection);

    if (rc != X509_V_OK) {
        why.data = (u_char *) X509_verify_cert_error_string(rc);
        why.len = ngx_strlen(why.data);
        ngx_http_fwc_publish_fail(t, 0, "peer certificate not trusted: ",
                                  &why);
        return;
    }

    if (ngx_ssl_check_host(c, &t->host) != NGX_OK) {
        ngx_http_fwc_publish_fail(t, 0, "peer certificate does not name ",
                                  &t->host);
        return;
    }

    c->read->handler = ngx_http_fwc_publish_read;
    c->write->handler = ngx_http_fwc_publish_write;

    ngx_http_fwc_publish_write(c->write);
}


static void
ngx_http_fwc_publish_tls(ngx_http_fwc_target_t *t, ngx_connection_t *c)
{
    ngx_int_t  rc;

    if (ngx_ssl_create_connection(t->mcf->ssl, c, NGX_SSL_CLIENT) != NGX_OK) {
        ngx_http_fwc_publish_fail(t, 0, "TLS setup failed", NULL);
        return;
    }

    if (SSL_set_tlsext_host_name(c->ssl->connection, (char *) t->host.data)
        == 0)
    {
        ngx_http_fwc_publish_fail(t, 0, "TLS setup failed", NULL);
        return;
    }

    rc = ngx_ssl_handshake(c);

    if (rc == NGX_AGAIN) {
        c->ssl->handler = ngx_http_fwc_publish_handshake;
        return;
    }

    ngx_http_fwc_publish_handshake(c);
}

#endif


/* this cluster's live records, or NGX_DECLINED when there are none */
static ngx_int_t
ngx_http_fwc_own_records(ngx_http_fwc_main_conf_t *mcf, ngx_pool_t *pool,
    ngx_array_t *out)
{
    ngx_queue_t            *q;
    struct fw_member       *m;
    ngx_http_fwc_store_t   *store;
    ngx_http_fwc_record_t  *rec;

    if (ngx_array_init(out, pool, 8, sizeof(struct fw_member)) != NGX_OK) {
        return NGX_ERROR;
    }

    store = mcf->shm_zone->data;

    ngx_shmtx_lock(&store->shpool->mutex);

    for (q = ngx_queue_head(&store->sh->records);
         q != ngx_queue_sentinel(&store->sh->records)
         && out->nelts < NGX_HTTP_FWC_PLACE_MAX;
         q = ngx_queue_next(q))
    {
        rec = ngx_queue_data(q, ngx_http_fwc_record_t, queue);

        if (rec->m.expires <= ngx_time()
            || ngx_strlen(rec->m.cluster) != mcf->id.len
            || ngx_strncmp(rec->m.cluster, mcf->id.data, mcf->id.len) != 0)
        {
            continue;
        }

        m = ngx_array_push(out);
        if (m == NULL) {
            ngx_shmtx_unlock(&store->shpool->mutex);
            return NGX_ERROR;
        }

        *m = rec->m;
    }

    ngx_shmtx_unlock(&store->shpool->mutex);

    return out->nelts ? NGX_OK : NGX_DECLINED;
}


static void
ngx_http_fwc_publish_start(ngx_http_fwc_target_t *t, ngx_log_t *log)
{
    int                        n;
    char                       text[FW_MEMBER_TEXT_MAX + 1];
    char                       sig[FW_CSIG_TEXT_MAX + 1];
    u_char                    *p;
    uint64_t                   now;
    ngx_time_t                *tp;
    size_t                     size;
    ngx_int_t                  rc;
    ngx_uint_t                 i;
    ngx_array_t                recs;
    struct fw_member          *m;
    ngx_connection_t          *c;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = t->mcf;

    t->pool = ngx_create_pool(4096, log);
    if (t->pool == NULL) {
        return;
    }

    rc = ngx_http_fwc_own_records(mcf, t->pool, &recs);
    if (rc != NGX_OK) {
        /* nothing to say: the peer lets our records run out */
        ngx_http_fwc_publish_done(t);
        return;
    }

    size = recs.nelts * (FW_MEMBER_TEXT_MAX + 512 + t->path.len
                         + t->authority.len + mcf->id.len + mcf->token.len);

    t->out = ngx_create_temp_buf(t->pool, size);
    t->in = ngx_create_temp_buf(t->pool, recs.nelts * 512 + 1024);
    if (t->out == NULL || t->in == NULL) {
        ngx_http_fwc_publish_done(t);
        return;
    }

    p = t->out->last;
    m = recs.elts;
    t->sent = 0;

    /* every signature of this peer newer than the last: the peer refuses
     * one that is not (a replay) */
    tp = ngx_timeofday();
    now = (uint64_t) tp->sec * 1000 + tp->msec;

    if (now <= t->signed_ms) {
        now = t->signed_ms + 1;
    }

    t->signed_ms = now;

    for (i = 0; i < recs.nelts; i++) {
        n = fw_member_format(&m[i], text, sizeof(text));
        if (n < 0) {
            continue;
        }

        p = ngx_sprintf(p, "POST %V HTTP/1.1\r\n"
                        "Host: %V\r\n"
                        "Content-Type: application/x-www-form-urlencoded\r\n"
                        "Content-Length: %d\r\n"
                        NGX_HTTP_FWC_FROM ": %V\r\n",
                        &t->path, &t->authority, n, &mcf->id);

        if (mcf->token.len) {
            p = ngx_sprintf(p, NGX_HTTP_FWC_TOKEN ": %V\r\n", &mcf->token);
        }

        if (mcf->key_id
            && fw_csig_sign(mcf->keys, (char) mcf->key_id,
                            (const char *) mcf->id.data, mcf->id.len,
                            (const char *) t->peer.data, t->peer.len, now,
                            text, n, sig, sizeof(sig))
               > 0)
        {
            p = ngx_sprintf(p, NGX_HTTP_FWC_SIGNATURE ": %s\r\n", sig);
        }

        p = ngx_sprintf(p, "Connection: %s\r\n\r\n%*s",
                        i + 1 < recs.nelts ? "keep-alive" : "close",
                        (size_t) n, text);
        t->sent++;
    }

    t->out->last = p;

    ngx_memzero(&t->pc, sizeof(ngx_peer_connection_t));
    t->pc.sockaddr = t->addr.sockaddr;
    t->pc.socklen = t->addr.socklen;
    t->pc.name = &t->url;
    t->pc.get = ngx_event_get_peer;
    t->pc.log = &ngx_http_fwc_quiet_log;
    t->pc.log_error = NGX_ERROR_ERR;

    t->busy = 1;

    rc = ngx_event_connect_peer(&t->pc);

    if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
        /* nginx closed the socket itself */
        t->pc.connection = NULL;
        ngx_http_fwc_publish_fail(t, ngx_socket_errno, "can't connect", NULL);
        return;
    }

    c = t->pc.connection;
    c->data = t;
    /* the TLS state lives in the publication's pool */
    c->pool = t->pool;
    c->read->handler = ngx_http_fwc_publish_read;
    c->write->handler = ngx_http_fwc_publish_write;
    /* a worker shutting down does not wait for a peer */
    c->read->cancelable = 1;
    c->write->cancelable = 1;

    ngx_add_timer(c->write, NGX_HTTP_FWC_PUB_TIMEOUT);

    if (rc == NGX_OK) {
        ngx_http_fwc_publish_write(c->write);
    }
}


static void
ngx_http_fwc_publish_tick(ngx_event_t *ev)
{
    ngx_uint_t                 i;
    ngx_msec_t                 now;
    ngx_atomic_uint_t          gen;
    ngx_http_fwc_store_t      *store;
    ngx_http_fwc_target_t     *t;
    ngx_http_fwc_main_conf_t  *mcf;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    mcf = ev->data;
    store = mcf->shm_zone->data;
    gen = store->sh->gen;
    now = ngx_current_msec;
    t = mcf->targets.elts;

    for (i = 0; i < mcf->targets.nelts; i++) {
        if (t[i].busy
            || (t[i].gen == gen && (ngx_msec_int_t) (now - t[i].due) < 0))
        {
            continue;
        }

        t[i].gen = gen;
        t[i].due = now + mcf->interval;
        ngx_http_fwc_publish_start(&t[i], ev->log);
    }

    ngx_add_timer(ev, NGX_HTTP_FWC_TICK);
}


/*
 * Following the peers' names: with nginx's "resolver" in the http block,
 * every worker looks up each peer gateway's host (and the publisher each
 * publish URL's host) every fastwall_ingress_cluster_resolve_interval;
 * a new first address replaces the old one for the next request or
 * publication. A failed look-up keeps the address the peer had.
 */

static ngx_event_t               ngx_http_fwc_resolve_event;
static ngx_http_fwc_main_conf_t *ngx_http_fwc_resolving;


/* the first address of a look-up, with the port; 0 when there is none */
static socklen_t
ngx_http_fwc_first_addr(ngx_resolver_ctx_t *ctx, in_port_t port,
    ngx_sockaddr_t *out)
{
    socklen_t  len;

    if (ctx->state != NGX_OK || ctx->naddrs == 0
        || ctx->addrs[0].socklen > sizeof(ngx_sockaddr_t))
    {
        return 0;
    }

    len = ctx->addrs[0].socklen;
    ngx_memcpy(out, ctx->addrs[0].sockaddr, len);
    ngx_inet_set_port(&out->sockaddr, port);

    return len;
}


static void
ngx_http_fwc_peer_resolved(ngx_resolver_ctx_t *ctx)
{
    u_char                buf[NGX_SOCKADDR_STRLEN];
    size_t                len;
    socklen_t             slen;
    ngx_sockaddr_t        sa;
    ngx_http_fwc_peer_t  *peer;

    peer = ctx->data;
    peer->rctx = NULL;

    slen = ngx_http_fwc_first_addr(ctx, peer->port, &sa);

    if (slen == 0) {
        /* at most once a minute: a resolver that is down would say so
         * every interval */
        if (ngx_time() - peer->rlogged >= NGX_HTTP_FWC_PUB_LOG_GAP) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "fastwall ingress: cluster \"%V\": %V could not "
                          "be resolved (%i: %s), %V kept (logged at most "
                          "once a minute)", &peer->name, &peer->host,
                          ctx->state, ngx_resolver_strerror(ctx->state),
                          &peer->addr);
            peer->rlogged = ngx_time();
        }

        ngx_resolve_name_done(ctx);
        return;
    }

    ngx_resolve_name_done(ctx);

    len = ngx_sock_ntop(&sa.sockaddr, slen, buf, NGX_SOCKADDR_STRLEN, 1);

    if (len == peer->addr.len && ngx_strncmp(buf, peer->addr.data, len) == 0)
    {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "fastwall ingress: cluster \"%V\": gateway %V moved from "
                  "%V to %*s", &peer->name, &peer->host, &peer->addr, len, buf);

    peer->addr.len = ngx_cpymem(peer->addr.data, buf, len) - peer->addr.data;
    peer->upstream.len = ngx_sprintf(peer->upstream.data, "%V://%V",
                                     &peer->scheme, &peer->addr)
                         - peer->upstream.data;
}


static void
ngx_http_fwc_target_resolved(ngx_resolver_ctx_t *ctx)
{
    socklen_t               slen;
    ngx_sockaddr_t          sa;
    ngx_http_fwc_target_t  *t;

    t = ctx->data;
    t->rctx = NULL;

    slen = ngx_http_fwc_first_addr(ctx, t->port, &sa);

    ngx_resolve_name_done(ctx);

    if (slen == 0
        || ngx_cmp_sockaddr(&sa.sockaddr, slen, t->addr.sockaddr,
                            t->addr.socklen, 1)
           == NGX_OK)
    {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "fastwall ingress: publishing to cluster \"%V\": %V has "
                  "a new address", &t->peer, &t->host);

    ngx_memcpy(t->addr.sockaddr, &sa, slen);
    t->addr.socklen = slen;
}


static ngx_resolver_ctx_t *
ngx_http_fwc_resolve(ngx_http_fwc_main_conf_t *mcf, ngx_str_t *host,
    ngx_resolver_handler_pt handler, void *data)
{
    ngx_resolver_ctx_t  *ctx;

    ctx = ngx_resolve_start(mcf->resolver, NULL);
    if (ctx == NULL || ctx == NGX_NO_RESOLVER) {
        return NULL;
    }

    ctx->name = *host;
    ctx->handler = handler;
    ctx->data = data;
    ctx->timeout = mcf->resolver_timeout;
    ctx->cancelable = 1;

    return ctx;
}


static void
ngx_http_fwc_resolve_tick(ngx_event_t *ev)
{
    ngx_uint_t                 i;
    ngx_resolver_ctx_t        *ctx;
    ngx_http_fwc_peer_t       *peer;
    ngx_http_fwc_target_t     *t;
    ngx_http_fwc_main_conf_t  *mcf;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    mcf = ev->data;
    peer = mcf->peers.elts;

    for (i = 0; i < mcf->peers.nelts; i++) {
        if (!peer[i].resolve || peer[i].rctx) {
            continue;
        }

        ctx = ngx_http_fwc_resolve(mcf, &peer[i].host,
                                   ngx_http_fwc_peer_resolved, &peer[i]);
        if (ctx == NULL) {
            continue;
        }

        /* an answer in the cache comes back at once and clears rctx */
        peer[i].rctx = ctx;

        if (ngx_resolve_name(ctx) != NGX_OK) {
            peer[i].rctx = NULL;
        }
    }

    t = mcf->targets.elts;

    for (i = 0; ngx_http_fwc_publisher == mcf && i < mcf->targets.nelts; i++) {
        if (!t[i].resolve || t[i].rctx) {
            continue;
        }

        ctx = ngx_http_fwc_resolve(mcf, &t[i].host,
                                   ngx_http_fwc_target_resolved, &t[i]);
        if (ctx == NULL) {
            continue;
        }

        t[i].rctx = ctx;

        if (ngx_resolve_name(ctx) != NGX_OK) {
            t[i].rctx = NULL;
        }
    }

    ngx_add_timer(ev, mcf->resolve_interval);
}


static void
ngx_http_fwc_resolve_start(ngx_cycle_t *cycle, ngx_http_fwc_main_conf_t *mcf)
{
    if (mcf->resolver == NULL) {
        return;
    }

    ngx_http_fwc_resolving = mcf;

    ngx_http_fwc_resolve_event.handler = ngx_http_fwc_resolve_tick;
    ngx_http_fwc_resolve_event.data = mcf;
    ngx_http_fwc_resolve_event.log = cycle->log;
    ngx_http_fwc_resolve_event.cancelable = 1;

    ngx_add_timer(&ngx_http_fwc_resolve_event, 1);
}


static ngx_int_t
ngx_http_fwc_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i;
    ngx_http_fwc_target_t     *t;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle,
                                              ngx_http_fastwall_cluster_module);

    if (mcf == NULL || mcf->id.len == 0) {
        return NGX_OK;
    }

    if (mcf->targets.nelts == 0) {
        ngx_http_fwc_resolve_start(cycle, mcf);
        return NGX_OK;
    }

    /* one publisher per gateway: the first worker */
    if (ngx_process != NGX_PROCESS_SINGLE
        && (ngx_process != NGX_PROCESS_WORKER || ngx_worker != 0))
    {
        ngx_http_fwc_resolve_start(cycle, mcf);
        return NGX_OK;
    }

    ngx_http_fwc_quiet_log = *cycle->log;
    ngx_http_fwc_quiet_log.log_level = NGX_LOG_EMERG;
    ngx_http_fwc_quiet_log.next = NULL;

    t = mcf->targets.elts;

    for (i = 0; i < mcf->targets.nelts; i++) {
        t[i].mcf = mcf;
    }

    ngx_http_fwc_publisher = mcf;

    ngx_http_fwc_publish_event.handler = ngx_http_fwc_publish_tick;
    ngx_http_fwc_publish_event.data = mcf;
    ngx_http_fwc_publish_event.log = cycle->log;
    ngx_http_fwc_publish_event.cancelable = 1;

    ngx_add_timer(&ngx_http_fwc_publish_event, 1);

    ngx_http_fwc_resolve_start(cycle, mcf);

    return NGX_OK;
}


/* a publication in flight is dropped, its socket closed */
static void
ngx_http_fwc_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t              i;
    ngx_http_fwc_peer_t    *peer;
    ngx_http_fwc_target_t  *t;

    if (ngx_http_fwc_resolving) {
        peer = ngx_http_fwc_resolving->peers.elts;

        for (i = 0; i < ngx_http_fwc_resolving->peers.nelts; i++) {
            if (peer[i].rctx) {
                ngx_resolve_name_done(peer[i].rctx);
                peer[i].rctx = NULL;
            }
        }

        t = ngx_http_fwc_resolving->targets.elts;

        for (i = 0; i < ngx_http_fwc_resolving->targets.nelts; i++) {
            if (t[i].rctx) {
                ngx_resolve_name_done(t[i].rctx);
                t[i].rctx = NULL;
            }
        }
    }

    if (ngx_http_fwc_publisher == NULL) {
        return;
    }

    t = ngx_http_fwc_publisher->targets.elts;

    for (i = 0; i < ngx_http_fwc_publisher->targets.nelts; i++) {
        if (t[i].busy) {
            ngx_http_fwc_publish_done(&t[i]);
        }
    }
}


/* configuration */

static char *
ngx_http_fwc_admin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_core_srv_conf_t  **srv;
    ngx_http_fwc_main_conf_t   *mcf;

    mcf = ngx_http_conf_get_module_main_conf(cf,
                                             ngx_http_fastwall_cluster_module);

    mcf->admin = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fwc_admin_handler;

    /* its server's listeners are checked once they are all known */
    srv = ngx_array_push(&mcf->admin_servers);
    if (srv == NULL) {
        return NGX_CONF_ERROR;
    }

    *srv = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);

    return NGX_CONF_OK;
}


/* a cluster id as a directive's first argument, refused in its name */
static ngx_int_t
ngx_http_fwc_check_id(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *id)
{
    if (fw_cluster_id_ok((const char *) id->data, id->len)) {
        return NGX_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "%V: \"%V\" is not 1-63 characters of [A-Za-z0-9_-]",
                       &cmd->name, id);

    return NGX_ERROR;
}


static char *
ngx_http_fwc_id(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->id.len) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_fwc_check_id(cf, cmd, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    mcf->id = value[1];

    return NGX_CONF_OK;
}


/* "/", "/x", "/x/y", without a query, a fragment or a final '/' */
static ngx_int_t
ngx_http_fwc_check_prefix(ngx_str_t *prefix)
{
    size_t  i;

    if (prefix->len == 0) {
        return NGX_OK;
    }

    if (prefix->data[0] != '/') {
        return NGX_ERROR;
    }

    for (i = 0; i < prefix->len; i++) {
        if (prefix->data[i] <= ' ' || prefix->data[i] >= 0x7f
            || prefix->data[i] == '?' || prefix->data[i] == '#')
        {
            return NGX_ERROR;
        }
    }

    while (prefix->len && prefix->data[prefix->len - 1] == '/') {
        prefix->len--;
    }

    return NGX_OK;
}


static char *
ngx_http_fwc_prefix(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    value = cf->args->elts;
    mcf->prefix = value[1];

    if (ngx_http_fwc_check_prefix(&mcf->prefix) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_prefix: \"%V\" is not a "
                           "path (/...) without a query", &value[1]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* a host that is a name, not an IP address: the resolver may move it */
static ngx_uint_t
ngx_http_fwc_is_name(ngx_str_t *host)
{
#if (NGX_HAVE_INET6)
    u_char  a6[16];
#endif

    if (host->len && host->data[0] == '[') {
        return 0;
    }

    if (ngx_inet_addr(host->data, host->len) != INADDR_NONE) {
        return 0;
    }

#if (NGX_HAVE_INET6)
    if (ngx_inet6_addr(host->data, host->len, a6) == NGX_OK) {
        return 0;
    }
#endif

    return 1;
}


/*
 * fastwall_ingress_cluster NAME http[s]://HOST[:PORT][/PREFIX]
 *     [address=IP[:PORT]];
 * The host stays a name for Host and SNI; the address is where the
 * gateway is reached, written out or else resolved now, as nginx does for
 * an upstream's server.
 */
static char *
ngx_http_fwc_peer(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    u_char               *p, *end, *slash;
    size_t                skip;
    in_port_t             port;
    ngx_str_t            *value, rest;
    ngx_url_t             u;
    ngx_addr_t            addr, *a;
    ngx_http_fwc_peer_t  *peer;

    value = cf->args->elts;

    if (ngx_http_fwc_check_id(cf, cmd, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_fwc_find_peer(mcf, value[1].data, value[1].len)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster: \"%V\" is duplicate",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    peer = ngx_array_push(&mcf->peers);
    if (peer == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(peer, sizeof(ngx_http_fwc_peer_t));
    peer->name = value[1];

    if (value[2].len > 8
        && ngx_strncasecmp(value[2].data, (u_char *) "https://", 8) == 0)
    {
        ngx_str_set(&peer->scheme, "https");
        skip = 8;
        port = 443;

    } else if (value[2].len > 7
               && ngx_strncasecmp(value[2].data, (u_char *) "http://", 7) == 0)
    {
        ngx_str_set(&peer->scheme, "http");
        skip = 7;
        port = 80;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster %V: \"%V\" is not "
                           "http(s)://HOST[:PORT][/PREFIX]",
                           &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    p = value[2].data + skip;
    end = value[2].data + value[2].len;
    slash = ngx_strlchr(p, end, '/');

    peer->authority.data = p;
    peer->authority.len = (slash ? slash : end) - p;
    peer->prefix.data = slash;
    peer->prefix.len = slash ? (size_t) (end - slash) : 0;

    if (peer->authority.len == 0
        || ngx_strlchr(p, p + peer->authority.len, '@')
        || ngx_http_fwc_check_prefix(&peer->prefix) != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster %V: \"%V\" is not "
                           "http(s)://HOST[:PORT][/PREFIX]",
                           &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&u, sizeof(ngx_url_t));
    u.url = peer->authority;
    u.default_port = port;
    u.no_resolve = (cf->args->nelts == 4);

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster %V: %s in \"%V\"",
                           &value[1], u.err ? u.err : "invalid host",
                           &peer->authority);
        return NGX_CONF_ERROR;
    }

    if (u.uri.len || u.host.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster %V: \"%V\" is not "
                           "HOST[:PORT]", &value[1], &peer->authority);
        return NGX_CONF_ERROR;
    }

    peer->host = u.host;

    if (cf->args->nelts == 4) {
        if (value[3].len <= 8
            || ngx_strncmp(value[3].data, "address=", 8) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster %V: unknown "
                               "parameter \"%V\"", &value[1], &value[3]);
            return NGX_CONF_ERROR;
        }

        rest.data = value[3].data + 8;
        rest.len = value[3].len - 8;

        if (ngx_parse_addr_port(cf->pool, &addr, rest.data, rest.len)
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster %V: \"%V\" is not "
                               "an IP address with an optional port",
                               &value[1], &rest);
            return NGX_CONF_ERROR;
        }

        if (ngx_inet_get_port(addr.sockaddr) == 0) {
            ngx_inet_set_port(addr.sockaddr, u.port);
        }

        a = &addr;

    } else {
        if (u.naddrs == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster %V: host \"%V\" "
                               "has no address", &value[1], &u.host);
            return NGX_CONF_ERROR;
        }

        a = &u.addrs[0];
        peer->resolve = ngx_http_fwc_is_name(&u.host);
    }

    peer->port = u.port;

    /* both strings have room for any address the resolver gives later */
    peer->addr.data = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN);
    if (peer->addr.data == NULL) {
        return NGX_CONF_ERROR;
    }

    peer->addr.len = ngx_sock_ntop(a->sockaddr, a->socklen, peer->addr.data,
                                   NGX_SOCKADDR_STRLEN, 1);

    peer->upstream.len = peer->scheme.len + 3 + peer->addr.len;
    peer->upstream.data = ngx_pnalloc(cf->pool,
                                      peer->scheme.len + 3
                                      + NGX_SOCKADDR_STRLEN);
    if (peer->upstream.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(peer->upstream.data, "%V://%V", &peer->scheme, &peer->addr);

    return NGX_CONF_OK;
}


/*
 * fastwall_ingress_cluster_publish PEER http[s]://HOST[:PORT]/PATH/members
 *     [address=IP[:PORT]];
 * the peer's admin API: at the address given, or else the host resolved
 * now (and followed by nginx's resolver when one is configured).
 */
static char *
ngx_http_fwc_publish(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    u_char                 *p, *end, *slash;
    size_t                  i, skip;
    in_port_t               port;
    ngx_str_t              *value, rest;
    ngx_url_t               u;
    ngx_addr_t              addr;
    ngx_uint_t              ssl;
    ngx_http_fwc_target_t  *t;

    value = cf->args->elts;

    if (ngx_http_fwc_check_id(cf, cmd, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    t = mcf->targets.elts;

    for (i = 0; i < mcf->targets.nelts; i++) {
        if (t[i].peer.len == value[1].len
            && ngx_strncmp(t[i].peer.data, value[1].data, value[1].len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster_publish: \"%V\" is "
                               "duplicate", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    ssl = 0;
    skip = 7;
    port = 80;

    if (value[2].len > 8
        && ngx_strncasecmp(value[2].data, (u_char *) "https://", 8) == 0)
    {
        ssl = 1;
        skip = 8;
        port = 443;
    }

    p = value[2].data + skip;
    end = value[2].data + value[2].len;
    slash = (value[2].len > skip
             && (ssl || ngx_strncasecmp(value[2].data, (u_char *) "http://", 7)
                        == 0))
            ? ngx_strlchr(p, end, '/') : NULL;

    if (slash == NULL || slash == p || ngx_strlchr(p, slash, '@')
        || end - slash < 8 || ngx_strncmp(end - 8, "/members", 8) != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_publish %V: \"%V\" is "
                           "not http(s)://HOST[:PORT]/PATH/members (the "
                           "peer's admin API)", &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < (size_t) (end - slash); i++) {
        if (slash[i] <= ' ' || slash[i] >= 0x7f || slash[i] == '?'
            || slash[i] == '#')
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster_publish %V: \"%V\" "
                               "is not http(s)://HOST[:PORT]/PATH/members "
                               "(the peer's admin API)", &value[1], &value[2]);
            return NGX_CONF_ERROR;
        }
    }

#if !(NGX_SSL)
    if (ssl) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_publish %V: https needs "
                           "nginx built with OpenSSL", &value[1]);
        return NGX_CONF_ERROR;
    }
#endif

    t = ngx_array_push(&mcf->targets);
    if (t == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(t, sizeof(ngx_http_fwc_target_t));
    t->peer = value[1];
    t->url = value[2];
    t->ssl = ssl;
    t->authority.data = p;
    t->authority.len = slash - p;
    t->path.data = slash;
    t->path.len = end - slash;

    ngx_memzero(&u, sizeof(ngx_url_t));
    u.url = t->authority;
    u.default_port = port;
    u.no_resolve = (cf->args->nelts == 4);

    if (ngx_parse_url(cf->pool, &u) != NGX_OK
        || (!u.no_resolve && u.naddrs == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_publish %V: %s in \"%V\"",
                           &value[1], u.err ? u.err : "no address",
                           &t->authority);
        return NGX_CONF_ERROR;
    }

    t->host.data = ngx_pnalloc(cf->pool, u.host.len + 1);
    if (t->host.data == NULL) {
        return NGX_CONF_ERROR;
    }

    t->host.len = u.host.len;
    *ngx_cpymem(t->host.data, u.host.data, u.host.len) = '\0';
    t->port = u.port;

    if (cf->args->nelts == 4) {
        if (value[3].len <= 8
            || ngx_strncmp(value[3].data, "address=", 8) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster_publish %V: unknown "
                               "parameter \"%V\"", &value[1], &value[3]);
            return NGX_CONF_ERROR;
        }

        rest.data = value[3].data + 8;
        rest.len = value[3].len - 8;

        if (ngx_parse_addr_port(cf->pool, &addr, rest.data, rest.len)
            != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster_publish %V: \"%V\" "
                               "is not an IP address with an optional port",
                               &value[1], &rest);
            return NGX_CONF_ERROR;
        }

        if (ngx_inet_get_port(addr.sockaddr) == 0) {
            ngx_inet_set_port(addr.sockaddr, u.port);
        }

    } else {
        addr = u.addrs[0];
        t->resolve = ngx_http_fwc_is_name(&u.host);
    }

    /* room for any address the resolver may give it later */
    t->addr.sockaddr = ngx_pcalloc(cf->pool, sizeof(ngx_sockaddr_t));
    if (t->addr.sockaddr == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(t->addr.sockaddr, addr.sockaddr, addr.socklen);
    t->addr.socklen = addr.socklen;
    t->addr.name = addr.name;

    return NGX_CONF_OK;
}


/* the shared secret of the gateways */
static char *
ngx_http_fwc_token(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    return ngx_http_fastwall_read_secret(cf, cmd, &mcf->token);
}


/* the admin API's credential */
static char *
ngx_http_fwc_credential(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    return ngx_http_fastwall_read_secret(cf, cmd, &mcf->credential);
}


static void
ngx_http_fwc_keys_wipe(void *data)
{
    fw_scope_keyring_wipe(data);
}


/* the key ring publications are signed and checked under (the route
 * scopes' format: one id=BASE64 a line), read now */
static char *
ngx_http_fwc_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    char                 err[256];
    ngx_str_t           *value, name;
    ngx_pool_cleanup_t  *cln;

    if (mcf->keys) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, sizeof(struct fw_scope_keyring));
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(cln->data, sizeof(struct fw_scope_keyring));
    cln->handler = ngx_http_fwc_keys_wipe;

    if (fw_scope_keyring_load(cln->data, (const char *) name.data, err,
                              sizeof(err))
        != 0)
    {
        /* the parser names the file and the line, never a secret */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s", &cmd->name, err);
        return NGX_CONF_ERROR;
    }

    mcf->keys = cln->data;
    mcf->keys_file = name;

    return NGX_CONF_OK;
}


static char *
ngx_http_fwc_key_id(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->key_id) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len != 1
        || !((value[1].data[0] >= '0' && value[1].data[0] <= '9')
             || (value[1].data[0] >= 'a' && value[1].data[0] <= 'z')))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is not one character of [0-9a-z]",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    mcf->key_id = value[1].data[0];

    return NGX_CONF_OK;
}


#if (NGX_SSL)

static void
ngx_http_fwc_ssl_cleanup(void *data)
{
    ngx_ssl_cleanup_ctx(data);
}


/*
 * The TLS client of https publications: nginx's own (its OpenSSL
 * context), the peer's certificate verified against the trusted
 * certificates and for the URL's host, and an optional certificate of
 * our own.
 */
static ngx_int_t
ngx_http_fwc_ssl_conf(ngx_conf_t *cf, ngx_http_fwc_main_conf_t *mcf)
{
    ngx_uint_t              i, any;
    ngx_pool_cleanup_t     *cln;
    ngx_http_fwc_target_t  *t;

    t = mcf->targets.elts;
    any = 0;

    for (i = 0; i < mcf->targets.nelts; i++) {
        any |= t[i].ssl;
    }

    if (!any) {
        if (mcf->ssl_trusted.len || mcf->ssl_certificate.len
            || mcf->ssl_certificate_key.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"fastwall_ingress_cluster_publish_ssl_*\" "
                               "need an https:// "
                               "\"fastwall_ingress_cluster_publish\"");
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (mcf->ssl_trusted.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "an https:// \"fastwall_ingress_cluster_publish\" "
                           "needs \"fastwall_ingress_cluster_publish_ssl_"
                           "trusted_certificate\" (the peers' certificates "
                           "are always verified)");
        return NGX_ERROR;
    }

    if ((mcf->ssl_certificate.len == 0) != (mcf->ssl_certificate_key.len == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_cluster_publish_ssl_"
                           "certificate\" and \"..._certificate_key\" go "
                           "together");
        return NGX_ERROR;
    }

    mcf->ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (mcf->ssl == NULL) {
        return NGX_ERROR;
    }

    mcf->ssl->log = cf->log;

    if (ngx_ssl_create(mcf->ssl, NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(mcf->ssl);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_fwc_ssl_cleanup;
    cln->data = mcf->ssl;

    if (mcf->ssl_certificate.len
        && ngx_ssl_certificate(cf, mcf->ssl, &mcf->ssl_certificate,
                               &mcf->ssl_certificate_key, NULL)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_ssl_trusted_certificate(cf, mcf->ssl, &mcf->ssl_trusted, 4)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}

#endif


static ngx_uint_t
ngx_http_fwc_loopback(struct sockaddr *sa)
{
    struct sockaddr_in   *sin;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6  *sin6;
#endif

    switch (sa->sa_family) {

#if (NGX_HAVE_UNIX_DOMAIN)
    case AF_UNIX:
        return 1;
#endif

#if (NGX_HAVE_INET6)
    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) sa;
        return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)
               || (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)
                   && sin6->sin6_addr.s6_addr[12] == 127);
#endif

    case AF_INET:
        sin = (struct sockaddr_in *) sa;
        return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;

    default:
        return 0;
    }
}


/* an admin location on a listener that is not loopback (nor a unix
 * socket) needs fastwall_ingress_cluster_admin_credential */
static ngx_int_t
ngx_http_fwc_check_admin_listeners(ngx_conf_t *cf,
    ngx_http_fwc_main_conf_t *mcf)
{
    u_char                      text[NGX_SOCKADDR_STRLEN];
    size_t                      len;
    ngx_uint_t                  p, a, i, k;
    ngx_http_conf_addr_t       *addr;
    ngx_http_conf_port_t       *port;
    ngx_http_core_srv_conf_t  **srv, **admin;
    ngx_http_core_main_conf_t  *cmcf;

    if (mcf->credential.len || mcf->admin_servers.nelts == 0) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    if (cmcf->ports == NULL) {
        return NGX_OK;
    }

    admin = mcf->admin_servers.elts;
    port = cmcf->ports->elts;

    for (p = 0; p < cmcf->ports->nelts; p++) {
        addr = port[p].addrs.elts;

        for (a = 0; a < port[p].addrs.nelts; a++) {
            if (ngx_http_fwc_loopback(addr[a].opt.sockaddr)) {
                continue;
            }

            srv = addr[a].servers.elts;

            for (i = 0; i < addr[a].servers.nelts; i++) {
                for (k = 0; k < mcf->admin_servers.nelts; k++) {
                    if (srv[i] != admin[k]) {
                        continue;
                    }

                    len = ngx_sock_ntop(addr[a].opt.sockaddr,
                                        addr[a].opt.socklen, text,
                                        NGX_SOCKADDR_STRLEN, 1);

                    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                                  "\"fastwall_ingress_cluster_admin\" on "
                                  "\"%*s\", which is not loopback, needs "
                                  "\"fastwall_ingress_cluster_admin_"
                                  "credential\"", len, text);
                    return NGX_ERROR;
                }
            }
        }
    }

    return NGX_OK;
}


static void *
ngx_http_fwc_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwc_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&mcf->peers, cf->pool, 4, sizeof(ngx_http_fwc_peer_t))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&mcf->targets, cf->pool, 4,
                       sizeof(ngx_http_fwc_target_t))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&mcf->admin_servers, cf->pool, 2,
                       sizeof(ngx_http_core_srv_conf_t *))
        != NGX_OK)
    {
        return NULL;
    }

    mcf->zone_size = NGX_CONF_UNSET_SIZE;
    mcf->ttl = NGX_CONF_UNSET;
    mcf->interval = NGX_CONF_UNSET_MSEC;
    mcf->resolve_interval = NGX_CONF_UNSET_MSEC;

    return mcf;
}


static char *
ngx_http_fwc_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_fwc_main_conf_t *mcf = conf;

    ngx_uint_t              i;
    ngx_http_fwc_target_t  *t;

    ngx_conf_init_size_value(mcf->zone_size, 256 * 1024);
    ngx_conf_init_value(mcf->ttl, FW_MEMBER_TTL);

    if (mcf->interval != NGX_CONF_UNSET_MSEC && mcf->interval < 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_publish_interval must be "
                           "at least 100ms");
        return NGX_CONF_ERROR;
    }

    /* a third of the default TTL: two publications may get lost */
    ngx_conf_init_msec_value(mcf->interval, 10000);

    if (mcf->resolve_interval != NGX_CONF_UNSET_MSEC
        && mcf->resolve_interval < 100)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_resolve_interval must be "
                           "at least 100ms");
        return NGX_CONF_ERROR;
    }

    ngx_conf_init_msec_value(mcf->resolve_interval, 10000);

    if (mcf->ttl <= 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster_ttl must be at least 1s");
        return NGX_CONF_ERROR;
    }

    if (mcf->id.len == 0) {
        if (mcf->peers.nelts || mcf->prefix.len || mcf->targets.nelts
            || mcf->token.len || mcf->keys || mcf->key_id
            || mcf->credential.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"fastwall_ingress_cluster\", "
                               "\"fastwall_ingress_cluster_prefix\", "
                               "\"fastwall_ingress_cluster_publish\", "
                               "\"fastwall_ingress_cluster_token\", "
                               "\"fastwall_ingress_cluster_keys\", "
                               "\"fastwall_ingress_cluster_key_id\" and "
                               "\"fastwall_ingress_cluster_admin_credential\" "
                               "need \"fastwall_ingress_cluster_id\"");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    t = mcf->targets.elts;

    for (i = 0; i < mcf->targets.nelts; i++) {
        if (ngx_http_fwc_find_peer(mcf, t[i].peer.data, t[i].peer.len)
            == NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_cluster_publish: \"%V\" is "
                               "not a peer (fastwall_ingress_cluster)",
                               &t[i].peer);
            return NGX_CONF_ERROR;
        }
    }

    if (mcf->targets.nelts && mcf->token.len == 0 && mcf->keys == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_cluster_publish\" needs "
                           "\"fastwall_ingress_cluster_token\" or "
                           "\"fastwall_ingress_cluster_keys\"");
        return NGX_CONF_ERROR;
    }

    if (mcf->key_id && mcf->keys == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_cluster_key_id\" needs "
                           "\"fastwall_ingress_cluster_keys\"");
        return NGX_CONF_ERROR;
    }

    if (mcf->key_id) {
        /* probes the ring for the id with a throwaway signature */
        {
            char  out[FW_CSIG_TEXT_MAX + 1];

            if (fw_csig_sign(mcf->keys, (char) mcf->key_id, "a", 1, "b", 1,
                             1, "", 0, out, sizeof(out))
                < 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "fastwall_ingress_cluster_key_id: \"%c\" "
                                   "is not in \"%V\"", mcf->key_id,
                                   &mcf->keys_file);
                return NGX_CONF_ERROR;
            }
        }
    }

    if (mcf->targets.nelts && mcf->keys && mcf->key_id == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_cluster_publish\" with "
                           "\"fastwall_ingress_cluster_keys\" needs "
                           "\"fastwall_ingress_cluster_key_id\" (the key "
                           "it signs with)");
        return NGX_CONF_ERROR;
    }

#if (NGX_SSL)
    if (ngx_http_fwc_ssl_conf(cf, mcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }
#endif

    if (ngx_http_fwc_find_peer(mcf, mcf->id.data, mcf->id.len)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fastwall_ingress_cluster: \"%V\" is this "
                           "cluster's own id", &mcf->id);
        return NGX_CONF_ERROR;
    }

    mcf->shm_zone = ngx_http_fastwall_zone_add(cf, "fastwall_ingress_cluster",
                        mcf->zone_size, &ngx_http_fastwall_cluster_module,
                        ngx_http_fwc_init_zone, sizeof(ngx_http_fwc_store_t));
    if (mcf->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fwc_init(ngx_conf_t *cf)
{
    ngx_str_t                  name = ngx_string("fastwall_ingress_upstream_host");
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_fwc_main_conf_t  *mcf;

    mcf = ngx_http_conf_get_module_main_conf(cf,
                                             ngx_http_fastwall_cluster_module);

    if (mcf->admin && mcf->id.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"fastwall_ingress_cluster_admin\" needs "
                      "\"fastwall_ingress_cluster_id\" in the http block");
        return NGX_ERROR;
    }

    mcf->upstream_host = ngx_http_get_variable_index(cf, &name);
    if (mcf->upstream_host == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (ngx_http_fwc_check_admin_listeners(cf, mcf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the http block's "resolver", when there is one, follows the peers'
     * names; without it they stay as resolved at load */
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->resolver && clcf->resolver != NGX_CONF_UNSET_PTR
        && clcf->resolver->connections.nelts)
    {
        mcf->resolver = clcf->resolver;
        mcf->resolver_timeout = clcf->resolver_timeout
                                == NGX_CONF_UNSET_MSEC
                                ? 30000 : clcf->resolver_timeout;
    }

    return NGX_OK;
}
