/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress, cross-cluster: the one call the ingress module makes
 * into ngx_http_fastwall_cluster_module once a route scope is verified.
 */

#ifndef _NGX_HTTP_FASTWALL_CLUSTER_H_INCLUDED_
#define _NGX_HTTP_FASTWALL_CLUSTER_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


/*
 * Routes by the cluster the sandbox id names. own_path: uri is the
 * request's own (a header-mode scope), so under this gateway's prefix it
 * is a peer's hop. NGX_DECLINED: a local sandbox (or no cluster
 * configured), resolve it as usual; uri may have lost a hop's path
 * prefix. NGX_DONE: forwarded, upstream and uri now name the peer gateway
 * and the request carries the hop's headers. Otherwise an HTTP status
 * (502: an unknown cluster, or a hop for another cluster) or NGX_ERROR.
 */
ngx_int_t ngx_http_fastwall_cluster_route(ngx_http_request_t *r,
    ngx_str_t *sandbox, ngx_str_t *scope, ngx_str_t *uri,
    ngx_uint_t own_path, ngx_str_t *upstream);


#endif /* _NGX_HTTP_FASTWALL_CLUSTER_H_INCLUDED_ */
