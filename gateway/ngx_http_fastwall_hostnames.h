/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress service hostnames: the hook the access handler calls
 * before it looks for a route scope, and the store of exposed services
 * (SQLite or PostgreSQL) the index is hydrated from. Store calls return
 * NGX_OK, NGX_DECLINED (a label taken, or no such row) or NGX_ERROR.
 */

#ifndef _NGX_HTTP_FASTWALL_HOSTNAMES_H_INCLUDED_
#define _NGX_HTTP_FASTWALL_HOSTNAMES_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gateway/hostname.h"


#define NGX_HTTP_FWH_SQLITE       1
#define NGX_HTTP_FWH_POSTGRESQL   2


/* one exposed service as the store keeps it */
typedef struct {
    struct fw_hostname_target   target;
    ngx_uint_t                  port;
    /* the routing name and label it was exposed under ("" when none) */
    char                        routing_name[FW_HOSTNAME_ROUTING_MAX + 1];
    char                        label[FW_HOSTNAME_LABEL_LEN + 1];
    /* served without a credential (ngx_http_fastwall_host_auth.c) */
    ngx_uint_t                  public;
} ngx_http_fwh_row_t;


typedef struct ngx_http_fwh_store_s  ngx_http_fwh_store_t;


/*
 * Routes a request whose Host is a service host: NGX_OK with the
 * workspace (namespace), sandbox and port set; NGX_DECLINED when the
 * request is not for a service host (the scope logic goes on);
 * NGX_HTTP_NOT_FOUND for a service host no exposed service has when the
 * Host would otherwise have been the scope (header_mode);
 * NGX_HTTP_SERVICE_UNAVAILABLE (with Retry-After set) when the store did
 * not answer for a host the index lacks (header_mode); NGX_AGAIN while
 * the request waits for the store: the phase handler returns NGX_AGAIN
 * and is called again, from the start, when it answered; NGX_ERROR. On
 * NGX_OK, found is the exposure and canonical its host as the request
 * named it (lowercase, without port): ngx_http_fastwall_host_auth.c
 * decides whether the request may have it. A scope header routes only
 * when the host names no exposed service; otherwise it is a credential.
 */
ngx_int_t ngx_http_fwh_route(ngx_http_request_t *r, ngx_uint_t header_mode,
    ngx_str_t *ns, ngx_str_t *sandbox, ngx_uint_t *port,
    ngx_http_fwh_row_t *found, ngx_str_t *canonical);
/* how many services the index holds, and how many of them are public */
void ngx_http_fwh_count(ngx_http_request_t *r, ngx_uint_t *services,
    ngx_uint_t *public);


ngx_http_fwh_store_t *ngx_http_fwh_store_open(ngx_uint_t kind,
    const char *arg, ngx_log_t *log);
void ngx_http_fwh_store_close(ngx_http_fwh_store_t *st);
/* appends every valid row to rows (of ngx_http_fwh_row_t) */
ngx_int_t ngx_http_fwh_store_list(ngx_http_fwh_store_t *st, ngx_array_t *rows,
    ngx_log_t *log);
/* inserts or updates the row of its target; NGX_DECLINED: its label is
 * another target's, and nothing was written */
ngx_int_t ngx_http_fwh_store_put(ngx_http_fwh_store_t *st,
    ngx_http_fwh_row_t *row, ngx_log_t *log);
/* NGX_DECLINED: no such target */
ngx_int_t ngx_http_fwh_store_delete(ngx_http_fwh_store_t *st,
    struct fw_hostname_target *t, ngx_log_t *log);
/* deletes every service of t's workspace and sandbox (t's service is
 * ignored) in one statement; *deleted: how many */
ngx_int_t ngx_http_fwh_store_delete_sandbox(ngx_http_fwh_store_t *st,
    struct fw_hostname_target *t, ngx_uint_t *deleted, ngx_log_t *log);


#endif /* _NGX_HTTP_FASTWALL_HOSTNAMES_H_INCLUDED_ */
