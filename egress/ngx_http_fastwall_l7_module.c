/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy, HTTP: `fastwall_l7_pin http;` in an http
 * server with `proxy_pass http://$fastwall_l7_upstream;`. nginx parses
 * every request (and refuses the malformed and the ambiguous ones, such
 * as Content-Length with Transfer-Encoding, with its own 400); the access
 * phase handler checks each request's Host, and the host of an
 * absolute-form URI, against the names that taught the connection's
 * original destination. A refused request gets 403 and its connection
 * closes; the counters' slot and the close report belong to the
 * connection, whatever number of requests it carries. A pinned request
 * that a binding of its subject's vault names for plain http (scheme
 * "http", the original port) gets the binding's header
 * (ngx_fastwall_l7_vault.c) and is reported l7-injected.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_fastwall_l7.h"


typedef struct {
    ngx_uint_t                      pin;     /* enum fw_l7_kind */
} ngx_http_fastwall_l7_srv_conf_t;


/* the connection's: lives in its pool, found through its cleanup */
typedef struct {
    ngx_connection_t               *connection;
    ngx_fastwall_l7_peer_t          peer;
    ngx_flag_t                      held;     /* the counters' slot taken */
    ngx_flag_t                      pinned;   /* a request went upstream */
    uint64_t                        bytes_up;
    uint64_t                        bytes_down;
    ngx_msec_t                      start;
    u_char                          upstream[FW_L7_UPSTREAM_MAX];
    size_t                          upstream_len;
    char                            name[FW_LEASE_NAME_SZ];
} ngx_http_fastwall_l7_conn_t;


static void *ngx_http_fastwall_l7_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_fastwall_l7_merge_srv_conf(ngx_conf_t *cf,
    void *parent, void *child);
static char *ngx_http_fastwall_l7_pin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_fastwall_l7_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_fastwall_l7_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_fastwall_l7_access(ngx_http_request_t *r);
static ngx_int_t ngx_http_fastwall_l7_log(ngx_http_request_t *r);
static void ngx_http_fastwall_l7_close(void *data);
static ngx_int_t ngx_http_fastwall_l7_upstream_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_command_t  ngx_http_fastwall_l7_commands[] = {

    { ngx_string("fastwall_l7_pin"),
      NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_fastwall_l7_pin,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_l7_module_ctx = {
    ngx_http_fastwall_l7_add_variables,    /* preconfiguration */
    ngx_http_fastwall_l7_init,             /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_fastwall_l7_create_srv_conf,  /* create server configuration */
    ngx_http_fastwall_l7_merge_srv_conf,   /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_l7_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_l7_module_ctx,      /* module context */
    ngx_http_fastwall_l7_commands,         /* module directives */
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


static ngx_http_variable_t  ngx_http_fastwall_l7_vars[] = {

    { ngx_string("fastwall_l7_upstream"), NULL,
      ngx_http_fastwall_l7_upstream_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static void *
ngx_http_fastwall_l7_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_fastwall_l7_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fastwall_l7_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->pin = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_fastwall_l7_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fastwall_l7_srv_conf_t  *prev = parent;
    ngx_http_fastwall_l7_srv_conf_t  *conf = child;

    ngx_conf_merge_uint_value(conf->pin, prev->pin, FW_L7_NONE);

    return NGX_CONF_OK;
}


static char *
ngx_http_fastwall_l7_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fastwall_l7_srv_conf_t  *fscf = conf;

    ngx_str_t               *value;
    ngx_fastwall_l7_conf_t  *fcf;

    if (fscf->pin != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len != 4 || ngx_strncmp(value[1].data, "http", 4) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is not a kind an http server pins "
                           "(http; tls is pinned in a stream server)",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    fcf = ngx_fastwall_l7_conf(cf->cycle);

    if (!fcf->maps_set) {
        return "needs fastwall_l7_maps, given before the http block";
    }

    fscf->pin = FW_L7_HTTP;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_fastwall_l7_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fastwall_l7_access;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fastwall_l7_log;

    return NGX_OK;
}


/* the connection's state, made with its first request */
static ngx_http_fastwall_l7_conn_t *
ngx_http_fastwall_l7_conn(ngx_connection_t *c, ngx_flag_t create)
{
    ngx_pool_cleanup_t           *cln;
    ngx_http_fastwall_l7_conn_t  *fc;

    for (cln = c->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_fastwall_l7_close) {
            return cln->data;
        }
    }

    if (!create) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(c->pool, sizeof(ngx_http_fastwall_l7_conn_t));
    if (cln == NULL) {
        return NULL;
    }

    fc = cln->data;
    ngx_memzero(fc, sizeof(ngx_http_fastwall_l7_conn_t));
    fc->connection = c;
    fc->start = c->start_time;
    cln->handler = ngx_http_fastwall_l7_close;

    return fc;
}


static ngx_uint_t
ngx_http_fastwall_l7_check(ngx_http_request_t *r, ngx_fastwall_l7_conf_t *fcf,
    ngx_http_fastwall_l7_conn_t *fc)
{
    ngx_uint_t  reason;

    reason = ngx_fastwall_l7_peer(fcf, r->connection, FW_L7_HTTP, &fc->peer);
    if (reason) {
        return reason;
    }

    /* the absolute-form URI's host (it is what nginx routes by) ... */
    if (r->host_start && r->host_end) {
        reason = ngx_fastwall_l7_name(fcf, r->connection->log, &fc->peer,
                                      r->host_start,
                                      r->host_end - r->host_start, 1,
                                      fc->name);
        if (reason != FW_L7_PINNED) {
            return reason;
        }
    }

    /* ... and the Host header, which an HTTP/1.1 request must have */
    if (r->headers_in.host) {
        reason = ngx_fastwall_l7_name(fcf, r->connection->log, &fc->peer,
                                      r->headers_in.host->value.data,
                                      r->headers_in.host->value.len, 1,
                                      fc->name);
        if (reason != FW_L7_PINNED) {
            return reason;
        }

    } else if (r->host_start == NULL) {
        fc->name[0] = '\0';
        return FW_L7_NO_NAME;
    }

    if (!fc->held) {
        reason = ngx_fastwall_l7_hold(fcf, r->connection, &fc->peer);
        if (reason != FW_L7_PINNED) {
            return reason;
        }

        fc->held = 1;
    }

    return FW_L7_PINNED;
}


static ngx_int_t
ngx_http_fastwall_l7_access(ngx_http_request_t *r)
{
    ngx_int_t                         rc;
    ngx_str_t                         binding;
    ngx_uint_t                        reason;
    ngx_fastwall_l7_conf_t           *fcf;
    ngx_http_fastwall_l7_conn_t      *fc;
    ngx_http_fastwall_l7_srv_conf_t  *fscf;

    fscf = ngx_http_get_module_srv_conf(r, ngx_http_fastwall_l7_module);

    if (fscf->pin != FW_L7_HTTP || r != r->main) {
        return NGX_DECLINED;
    }

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    fc = ngx_http_fastwall_l7_conn(r->connection, 1);
    if (fc == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    reason = ngx_http_fastwall_l7_check(r, fcf, fc);
    rc = NGX_DECLINED;

    /* a pinned request that a binding of its subject's vault names (for
     * plain http) gets the binding's credential */
    if (reason == FW_L7_PINNED) {
        rc = ngx_fastwall_l7_inject(r, fc->peer.nat.subject,
                                    FW_L7_SCHEME_HTTP,
                                    ntohs(fc->peer.nat.orig_port), &binding);
        if (rc == NGX_OK) {
            reason = FW_L7_INJECTED;
        }
    }

    ngx_fastwall_l7_report(fcf, r->connection->log, FW_L7_REPORT_VERDICT,
                           FW_L7_HTTP, &fc->peer, reason, fc->name, 0, 0, 0);

    if (rc == NGX_ERROR) {
        r->keepalive = 0;
        fc->upstream_len = 0;

        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!FW_L7_REASON_PASSES(reason)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall l7: refused, %s, subject %uD, name \"%s\"",
                      ngx_fastwall_l7_reason_name(reason),
                      fc->peer.nat.subject, fc->name);

        /* nothing more on this connection */
        r->keepalive = 0;
        fc->upstream_len = 0;

        return NGX_HTTP_FORBIDDEN;
    }

    fc->upstream_len = fw_l7_upstream_text(&fc->peer.nat,
                                           (char *) fc->upstream,
                                           sizeof(fc->upstream));
    fc->pinned = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_log(ngx_http_request_t *r)
{
    ngx_http_fastwall_l7_conn_t  *fc;

    fc = ngx_http_fastwall_l7_conn(r->connection, 0);
    if (fc != NULL) {
        fc->bytes_up += r->request_length;
        fc->bytes_down = r->connection->sent;
    }

    return NGX_OK;
}


static void
ngx_http_fastwall_l7_close(void *data)
{
    ngx_http_fastwall_l7_conn_t  *fc = data;

    if (!fc->pinned) {
        return;
    }

    /* the connection is closed by now: what it counted was kept by the
     * log phase of each request */
    ngx_fastwall_l7_report(ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle),
                           ngx_cycle->log, FW_L7_REPORT_CLOSE, FW_L7_HTTP,
                           &fc->peer, FW_L7_PINNED, fc->name, fc->bytes_up,
                           fc->bytes_down,
                           (uint64_t) (ngx_current_msec - fc->start)
                           * FW_NSEC_PER_MSEC);
}


static ngx_int_t
ngx_http_fastwall_l7_upstream_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                     up;
    ngx_http_fastwall_l7_conn_t  *fc;

    fc = ngx_http_fastwall_l7_conn(r->connection, 0);

    /* never an address for a request the check did not pin (or that
     * did not come through a terminated connection) */
    if (fc == NULL || fc->upstream_len == 0) {
        if (ngx_http_fastwall_l7_term_upstream(r, &up) != NGX_OK) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->data = up.data;
        v->len = up.len;
        v->valid = 1;
        v->no_cacheable = 0;
        v->not_found = 0;

        return NGX_OK;
    }

    v->data = fc->upstream;
    v->len = fc->upstream_len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}
