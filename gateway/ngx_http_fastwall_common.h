/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress: what the HTTP modules of the .so share, the handler
 * of their zone size directives, the set-up of their shared memory zones,
 * a header lookup and the registration of their variables. Calls return
 * NGX_OK or NGX_ERROR, a directive handler NGX_CONF_OK or an error.
 */

#ifndef _NGX_HTTP_FASTWALL_COMMON_H_INCLUDED_
#define _NGX_HTTP_FASTWALL_COMMON_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


/* the smallest zone any of the modules takes */
#define NGX_HTTP_FASTWALL_ZONE_MIN   (32 * 1024)


/*
 * A zone size directive: the size_t at cmd->offset of conf, which
 * create_main_conf set to NGX_CONF_UNSET_SIZE. A value that is no size or
 * is under NGX_HTTP_FASTWALL_ZONE_MIN is refused with a message that
 * names the directive and the value.
 */
char *ngx_http_fastwall_conf_set_zone_size_slot(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);


/*
 * Adds the zone name of size bytes for module, with its init handler and
 * data_size zeroed bytes of data that the handler finds in
 * shm_zone->data. NULL on an error (nginx said why).
 */
ngx_shm_zone_t *ngx_http_fastwall_zone_add(ngx_conf_t *cf, char *name,
    size_t size, ngx_module_t *module, ngx_shm_zone_init_pt init,
    size_t data_size);


/*
 * For an init handler that had no old cycle's data: the context at the
 * start of the zone's slab pool. A zone that exists already has one
 * (*fresh = 0); otherwise one of size zeroed bytes is made (*fresh = 1)
 * for the caller to set up, and the pool's messages name the zone as
 * "<what> zone". A full pool logs nothing: each caller says what a
 * failed allocation means. NULL when the pool has no room for it.
 */
void *ngx_http_fastwall_zone_context(ngx_shm_zone_t *shm_zone, size_t size,
    const char *what, ngx_uint_t *fresh);


/* the first live header of that name, in any case, or NULL */
ngx_table_elt_t *ngx_http_fastwall_find_header(ngx_list_t *headers,
    const char *name);


/* 1 when the n bytes of a and b are equal, in a time that does not
 * depend on where they differ */
ngx_uint_t ngx_http_fastwall_equal(const u_char *a, const u_char *b,
    size_t n);


/* adds every variable of vars, which ends with ngx_http_null_variable */
ngx_int_t ngx_http_fastwall_add_variables(ngx_conf_t *cf,
    ngx_http_variable_t *vars);


/* A secret file's one line of NGX_HTTP_FASTWALL_SECRET_MIN-MAX visible
 * ASCII characters (a final newline dropped) into out, read at
 * configuration; its content never goes to a message. */
#define NGX_HTTP_FASTWALL_SECRET_MIN  16
#define NGX_HTTP_FASTWALL_SECRET_MAX  256
char *ngx_http_fastwall_read_secret(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_str_t *out);
/* "Authorization: Bearer WANT", compared in constant time */
ngx_uint_t ngx_http_fastwall_bearer_ok(ngx_http_request_t *r, ngx_str_t *want);

#endif /* _NGX_HTTP_FASTWALL_COMMON_H_INCLUDED_ */
