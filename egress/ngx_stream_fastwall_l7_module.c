/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy, TLS: `fastwall_l7_pin tls;` in a stream
 * server with `ssl_preread on;` and `proxy_pass $fastwall_l7_upstream;`.
 *
 * In nginx's stream phases (post-accept, preaccess, access, ssl, preread,
 * content, log) the ClientHello is only known once the preread phase is
 * over: ssl_preread's handler returns NGX_AGAIN until the hello's last
 * record has arrived and NGX_OK then, which moves the session straight to
 * the content phase (past any later preread handler). So the check wraps
 * the server's content handler (proxy_pass's): it runs once, with the
 * whole hello in the connection's buffer, before a byte goes upstream.
 * A refused connection is finalized there; a pinned one goes on to the
 * proxy with $fastwall_l7_upstream, the nat entry's original destination.
 *
 * With `fastwall_l7_terminate_to unix:PATH;`, a pinned connection whose
 * server name a binding of the subject's credential vault names (https,
 * the original port) goes to PATH instead, the terminating http server
 * of the same nginx (ngx_http_fastwall_l7_term.c), with a PROXY protocol
 * v1 line in front of the ClientHello: the sandbox's end and the port it
 * reached the proxy on, which that server looks the nat entry up by.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_fastwall_l7.h"
#include "l7/hello.h"


typedef struct {
    ngx_uint_t                      pin;     /* enum fw_l7_kind */
    ngx_str_t                       terminate_to;  /* "unix:PATH" */
    ngx_stream_content_handler_pt   next;
} ngx_stream_fastwall_l7_srv_conf_t;


typedef struct {
    ngx_fastwall_l7_peer_t          peer;
    ngx_uint_t                      reason;
    ngx_flag_t                      pinned;
    off_t                           preread;  /* the hello's bytes, not in
                                               * s->received */
    u_char                         *upstream_ext;  /* terminate_to's */
    u_char                          upstream[FW_L7_UPSTREAM_MAX];
    size_t                          upstream_len;
    char                            name[FW_LEASE_NAME_SZ];
} ngx_stream_fastwall_l7_ctx_t;


static void *ngx_stream_fastwall_l7_create_srv_conf(ngx_conf_t *cf);
static char *ngx_stream_fastwall_l7_merge_srv_conf(ngx_conf_t *cf,
    void *parent, void *child);
static char *ngx_stream_fastwall_l7_pin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_stream_fastwall_l7_terminate_to(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_stream_fastwall_l7_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_stream_fastwall_l7_init(ngx_conf_t *cf);
static void ngx_stream_fastwall_l7_handler(ngx_stream_session_t *s);
static ngx_int_t ngx_stream_fastwall_l7_log(ngx_stream_session_t *s);
static ngx_int_t ngx_stream_fastwall_l7_upstream_variable(
    ngx_stream_session_t *s, ngx_stream_variable_value_t *v, uintptr_t data);


static ngx_int_t  ngx_stream_fastwall_l7_sni_index = NGX_ERROR;


static ngx_command_t  ngx_stream_fastwall_l7_commands[] = {

    { ngx_string("fastwall_l7_pin"),
      NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_stream_fastwall_l7_pin,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_l7_terminate_to"),
      NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_stream_fastwall_l7_terminate_to,
      NGX_STREAM_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_stream_module_t  ngx_stream_fastwall_l7_module_ctx = {
    ngx_stream_fastwall_l7_add_variables,  /* preconfiguration */
    ngx_stream_fastwall_l7_init,           /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_stream_fastwall_l7_create_srv_conf, /* create server configuration */
    ngx_stream_fastwall_l7_merge_srv_conf   /* merge server configuration */
};


ngx_module_t  ngx_stream_fastwall_l7_module = {
    NGX_MODULE_V1,
    &ngx_stream_fastwall_l7_module_ctx,    /* module context */
    ngx_stream_fastwall_l7_commands,       /* module directives */
    NGX_STREAM_MODULE,                     /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_stream_variable_t  ngx_stream_fastwall_l7_vars[] = {

    { ngx_string("fastwall_l7_upstream"), NULL,
      ngx_stream_fastwall_l7_upstream_variable, 0,
      NGX_STREAM_VAR_NOCACHEABLE, 0 },

      ngx_stream_null_variable
};


static void *
ngx_stream_fastwall_l7_create_srv_conf(ngx_conf_t *cf)
{
    ngx_stream_fastwall_l7_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_stream_fastwall_l7_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->pin = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_stream_fastwall_l7_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_stream_fastwall_l7_srv_conf_t  *prev = parent;
    ngx_stream_fastwall_l7_srv_conf_t  *conf = child;

    ngx_conf_merge_uint_value(conf->pin, prev->pin, FW_L7_NONE);
    ngx_conf_merge_str_value(conf->terminate_to, prev->terminate_to, "");

    return NGX_CONF_OK;
}


static char *
ngx_stream_fastwall_l7_terminate_to(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_stream_fastwall_l7_srv_conf_t  *fscf = conf;

    ngx_str_t  *value;

    if (fscf->terminate_to.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    /* a path a sockaddr_un holds, and the upstream text proxy_pass
     * parses */
    if (value[1].len <= 5 || ngx_strncmp(value[1].data, "unix:", 5) != 0
        || value[1].len - 5 >= sizeof(((struct sockaddr_un *) 0)->sun_path))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is not unix:PATH (a unix socket "
                           "path of at most %uz bytes)", &cmd->name,
                           &value[1],
                           sizeof(((struct sockaddr_un *) 0)->sun_path) - 1);
        return NGX_CONF_ERROR;
    }

    fscf->terminate_to = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_stream_fastwall_l7_pin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_stream_fastwall_l7_srv_conf_t  *fscf = conf;

    ngx_str_t  *value;

    if (fscf->pin != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "tls", 3) == 0) {
        fscf->pin = FW_L7_TLS;
        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "%V: \"%V\" is not a kind a stream server pins "
                       "(tls; http is pinned in an http server)",
                       &cmd->name, &value[1]);
    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_stream_fastwall_l7_add_variables(ngx_conf_t *cf)
{
    ngx_stream_variable_t  *var, *v;

    for (v = ngx_stream_fastwall_l7_vars; v->name.len; v++) {
        var = ngx_stream_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_stream_fastwall_l7_init(ngx_conf_t *cf)
{
    ngx_str_t                           sni = ngx_string("ssl_preread_server_name");
    ngx_uint_t                          i, pinned;
    ngx_stream_handler_pt              *h;
    ngx_fastwall_l7_conf_t             *fcf;
    ngx_stream_core_srv_conf_t        **cscfp;
    ngx_stream_core_main_conf_t        *cmcf;
    ngx_stream_fastwall_l7_srv_conf_t  *fscf;

    cmcf = ngx_stream_conf_get_module_main_conf(cf, ngx_stream_core_module);
    cscfp = cmcf->servers.elts;
    pinned = 0;

    /* every server's content handler is set by now (proxy_pass sets it
     * when it is read): wrap it in the pinned servers */
    for (i = 0; i < cmcf->servers.nelts; i++) {
        fscf = cscfp[i]->ctx->srv_conf[ngx_stream_fastwall_l7_module.ctx_index];

        if (fscf->terminate_to.len && fscf->pin != FW_L7_TLS) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "fastwall_l7_terminate_to needs fastwall_l7_pin "
                          "tls in the server in %s:%ui",
                          cscfp[i]->file_name, cscfp[i]->line);
            return NGX_ERROR;
        }

        if (fscf->pin != FW_L7_TLS) {
            continue;
        }

        if (cscfp[i]->handler == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "fastwall_l7_pin tls needs proxy_pass in the "
                          "server in %s:%ui",
                          cscfp[i]->file_name, cscfp[i]->line);
            return NGX_ERROR;
        }

        fscf->next = cscfp[i]->handler;
        cscfp[i]->handler = ngx_stream_fastwall_l7_handler;
        pinned++;
    }

    if (pinned == 0) {
        return NGX_OK;
    }

    fcf = ngx_fastwall_l7_conf(cf->cycle);

    if (!fcf->maps_set) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "fastwall_l7_pin needs fastwall_l7_maps, given before "
                      "the stream block");
        return NGX_ERROR;
    }

    /* an unknown variable fails the configuration: the ssl_preread module
     * must be there */
    ngx_stream_fastwall_l7_sni_index = ngx_stream_get_variable_index(cf, &sni);
    if (ngx_stream_fastwall_l7_sni_index == NGX_ERROR) {
        return NGX_ERROR;
    }

    h = ngx_array_push(&cmcf->phases[NGX_STREAM_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_stream_fastwall_l7_log;

    return NGX_OK;
}


static ngx_uint_t
ngx_stream_fastwall_l7_check(ngx_stream_session_t *s,
    ngx_fastwall_l7_conf_t *fcf, ngx_stream_fastwall_l7_ctx_t *ctx)
{
    int                           vet;
    ngx_uint_t                    reason;
    ngx_connection_t             *c;
    struct fw_l7_hello            hello;
    ngx_stream_variable_value_t  *sni;

    c = s->connection;

    reason = ngx_fastwall_l7_peer(fcf, c, FW_L7_TLS, &ctx->peer);
    if (reason) {
        return reason;
    }

    /* ssl_preread said the hello is whole (or gave up on it): the walker
     * must find the same whole hello in the bytes read */
    if (c->buffer == NULL
        || fw_l7_hello_walk(c->buffer->pos, c->buffer->last - c->buffer->pos,
                            &hello)
           != FW_L7_HELLO_OK)
    {
        return FW_L7_BAD_HELLO;
    }

    ngx_cpystrn((u_char *) ctx->name, (u_char *) hello.name,
                sizeof(ctx->name));

    vet = fw_l7_hello_vet(&hello, fcf->ech);
    if (vet) {
        return vet;
    }

    sni = ngx_stream_get_indexed_variable(s, ngx_stream_fastwall_l7_sni_index);
    if (sni == NULL || sni->not_found || sni->len == 0) {
        return hello.host_names ? FW_L7_BAD_HELLO : FW_L7_NO_NAME;
    }

    /* the two readers of the hello must agree on its one name */
    if (sni->len != ngx_strlen(hello.name)
        || ngx_strncasecmp(sni->data, (u_char *) hello.name, sni->len) != 0)
    {
        return FW_L7_BAD_HELLO;
    }

    reason = ngx_fastwall_l7_name(fcf, c->log, &ctx->peer, sni->data, sni->len,
                                  0, ctx->name);
    if (reason != FW_L7_PINNED) {
        return reason;
    }

    return ngx_fastwall_l7_hold(fcf, c, &ctx->peer);
}


/* $fastwall_l7_upstream becomes the terminating server's socket, and the
 * PROXY line goes in front of the bytes already read (the stream proxy
 * sends c->buffer first) */
static ngx_int_t
ngx_stream_fastwall_l7_hand_off(ngx_stream_session_t *s,
    ngx_stream_fastwall_l7_srv_conf_t *fscf, ngx_stream_fastwall_l7_ctx_t *ctx)
{
    u_char            *p;
    size_t             n;
    ngx_buf_t         *b;
    ngx_connection_t  *c;

    c = s->connection;
    n = c->buffer->last - c->buffer->pos;

    b = ngx_create_temp_buf(c->pool, NGX_PROXY_PROTOCOL_MAX_HEADER + n);
    if (b == NULL) {
        return NGX_ERROR;
    }

    p = ngx_proxy_protocol_write(c, b->last, b->end);
    if (p == NULL) {
        return NGX_ERROR;
    }

    b->last = ngx_cpymem(p, c->buffer->pos, n);
    c->buffer = b;

    /* the configuration's: it outlives the session */
    ctx->upstream_ext = fscf->terminate_to.data;
    ctx->upstream_len = fscf->terminate_to.len;

    return NGX_OK;
}


static void
ngx_stream_fastwall_l7_handler(ngx_stream_session_t *s)
{
    ngx_connection_t                   *c;
    ngx_fastwall_l7_conf_t             *fcf;
    ngx_stream_fastwall_l7_ctx_t       *ctx;
    ngx_stream_fastwall_l7_srv_conf_t  *fscf;

    c = s->connection;
    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);
    fscf = ngx_stream_get_module_srv_conf(s, ngx_stream_fastwall_l7_module);

    ctx = ngx_pcalloc(c->pool, sizeof(ngx_stream_fastwall_l7_ctx_t));
    if (ctx == NULL) {
        ngx_stream_finalize_session(s, NGX_STREAM_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_stream_set_ctx(s, ctx, ngx_stream_fastwall_l7_module);

    ctx->reason = ngx_stream_fastwall_l7_check(s, fcf, ctx);

    if (ctx->reason == FW_L7_PINNED && fscf->terminate_to.len
        && ngx_fastwall_l7_vault_names(ctx->peer.nat.subject,
                                       (u_char *) ctx->name,
                                       ngx_strlen(ctx->name),
                                       FW_L7_SCHEME_HTTPS,
                                       ntohs(ctx->peer.nat.orig_port)))
    {
        ctx->preread = c->buffer->last - c->buffer->pos;

        if (ngx_stream_fastwall_l7_hand_off(s, fscf, ctx) != NGX_OK) {
            ngx_stream_finalize_session(s, NGX_STREAM_INTERNAL_SERVER_ERROR);
            return;
        }

        /* the terminating server reports its own verdicts (per request,
         * or l7-no-cert); this one reports the connection's close */
        ctx->pinned = 1;
        fscf->next(s);
        return;
    }

    ngx_fastwall_l7_report(fcf, c->log, FW_L7_REPORT_VERDICT, FW_L7_TLS,
                           &ctx->peer, ctx->reason, ctx->name, 0, 0, 0);

    if (ctx->reason != FW_L7_PINNED) {
        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "fastwall l7: closed, %s, subject %uD, name \"%s\"",
                      ngx_fastwall_l7_reason_name(ctx->reason),
                      ctx->peer.nat.subject, ctx->name);
        ngx_stream_finalize_session(s, NGX_STREAM_FORBIDDEN);
        return;
    }

    ctx->upstream_len = fw_l7_upstream_text(&ctx->peer.nat,
                                            (char *) ctx->upstream,
                                            sizeof(ctx->upstream));
    ctx->pinned = 1;
    ctx->preread = c->buffer->last - c->buffer->pos;

    fscf->next(s);
}


static ngx_int_t
ngx_stream_fastwall_l7_log(ngx_stream_session_t *s)
{
    ngx_uint_t                     reason;
    ngx_connection_t              *c;
    ngx_stream_fastwall_l7_ctx_t  *ctx;

    ctx = ngx_stream_get_module_ctx(s, ngx_stream_fastwall_l7_module);
    if (ctx == NULL || !ctx->pinned) {
        return NGX_OK;
    }

    c = s->connection;

    /* proxy_pass could not reach the pinned destination */
    reason = (s->status == NGX_STREAM_BAD_GATEWAY) ? FW_L7_UPSTREAM
                                                   : FW_L7_PINNED;

    ngx_fastwall_l7_report(ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle),
                           c->log, FW_L7_REPORT_CLOSE, FW_L7_TLS, &ctx->peer,
                           reason, ctx->name,
                           (uint64_t) (s->received + ctx->preread),
                           (uint64_t) c->sent,
                           (uint64_t) (ngx_current_msec - c->start_time)
                           * FW_NSEC_PER_MSEC);

    return NGX_OK;
}


static ngx_int_t
ngx_stream_fastwall_l7_upstream_variable(ngx_stream_session_t *s,
    ngx_stream_variable_value_t *v, uintptr_t data)
{
    ngx_stream_fastwall_l7_ctx_t  *ctx;

    ctx = ngx_stream_get_module_ctx(s, ngx_stream_fastwall_l7_module);

    /* never an address for a connection the check did not pin */
    if (ctx == NULL || !ctx->pinned) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = ctx->upstream_ext ? ctx->upstream_ext : ctx->upstream;
    v->len = ctx->upstream_len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}
