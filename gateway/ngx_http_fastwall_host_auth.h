/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress: who may reach an exposed service by its hostname. A
 * service host is served only to a request with a credential for that
 * service's sandbox (a route scope in the scope header, the cookie the
 * gateway set after such a visit, or a yes from the configured auth
 * subrequest), unless the service was exposed public. Calls return
 * NGX_OK (may pass), NGX_AGAIN (the auth subrequest runs: call again when
 * woken), NGX_DONE (refused: answered and finalized here), an HTTP status
 * or NGX_ERROR.
 */

#ifndef _NGX_HTTP_FASTWALL_HOST_AUTH_H_INCLUDED_
#define _NGX_HTTP_FASTWALL_HOST_AUTH_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "gateway/scope.h"
#include "ngx_http_fastwall_hostnames.h"


/*
 * Decides on a request for the exposure row by its host (lowercase,
 * without port), with the scope key ring kr. row and host are kept on the
 * first call; a call after NGX_AGAIN passes NULL for both.
 */
ngx_int_t ngx_http_fwha_check(ngx_http_request_t *r,
    const struct fw_scope_keyring *kr, ngx_http_fwh_row_t *row,
    ngx_str_t *host);


#endif /* _NGX_HTTP_FASTWALL_HOST_AUTH_H_INCLUDED_ */
