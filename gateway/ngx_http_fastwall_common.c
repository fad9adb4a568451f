/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress: the pieces the HTTP modules of the .so share.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fastwall_common.h"


char *
ngx_http_fastwall_conf_set_zone_size_slot(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    char  *p = conf;

    size_t     *sp;
    ssize_t     size;
    ngx_str_t  *value;

    sp = (size_t *) (p + cmd->offset);

    if (*sp != NGX_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    value = cf->args->elts;
    size = ngx_parse_size(&value[1]);

    if (size == NGX_ERROR || size < NGX_HTTP_FASTWALL_ZONE_MIN) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is not a size of at least %uzk",
                           &cmd->name, &value[1],
                           (size_t) NGX_HTTP_FASTWALL_ZONE_MIN / 1024);
        return NGX_CONF_ERROR;
    }

    *sp = size;

    return NGX_CONF_OK;
}


ngx_shm_zone_t *
ngx_http_fastwall_zone_add(ngx_conf_t *cf, char *name, size_t size,
    ngx_module_t *module, ngx_shm_zone_init_pt init, size_t data_size)
{
    void            *data;
    ngx_str_t        zone_name;
    ngx_shm_zone_t  *shm_zone;

    data = ngx_pcalloc(cf->pool, data_size);
    if (data == NULL) {
        return NULL;
    }

    /* nginx keeps the name's pointer, which is to a literal */
    zone_name.data = (u_char *) name;
    zone_name.len = ngx_strlen(name);

    shm_zone = ngx_shared_memory_add(cf, &zone_name, size, module);
    if (shm_zone == NULL) {
        return NULL;
    }

    shm_zone->init = init;
    shm_zone->data = data;

    return shm_zone;
}


void *
ngx_http_fastwall_zone_context(ngx_shm_zone_t *shm_zone, size_t size,
    const char *what, ngx_uint_t *fresh)
{
    void             *sh;
    size_t            len;
    ngx_slab_pool_t  *shpool;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    *fresh = 0;

    if (shm_zone->shm.exists) {
        return shpool->data;
    }

    sh = ngx_slab_calloc(shpool, size);
    if (sh == NULL) {
        return NULL;
    }

    shpool->data = sh;

    len = sizeof(" in  zone \"\"") + ngx_strlen(what) + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NULL;
    }

    ngx_sprintf(shpool->log_ctx, " in %s zone \"%V\"%Z", what,
                &shm_zone->shm.name);

    shpool->log_nomem = 0;
    *fresh = 1;

    return sh;
}


ngx_table_elt_t *
ngx_http_fastwall_find_header(ngx_list_t *headers, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);
    part = &headers->part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        /* a hash of 0 is a header a module removed */
        if (h[i].hash != 0 && h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
}


ngx_uint_t
ngx_http_fastwall_equal(const u_char *a, const u_char *b, size_t n)
{
    u_char  diff;
    size_t  i;

    diff = 0;

    for (i = 0; i < n; i++) {
        diff |= a[i] ^ b[i];
    }

    return diff == 0;
}


ngx_int_t
ngx_http_fastwall_add_variables(ngx_conf_t *cf, ngx_http_variable_t *vars)
{
    ngx_http_variable_t  *var, *v;

    for (v = vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/* a file of one line of 16-256 visible ASCII characters, read now; its
 * content never goes to a message */
char *
ngx_http_fastwall_read_secret(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *out)
{
    u_char           *buf;
    size_t            i;
    ssize_t           n;
    ngx_str_t        *value, name;
    ngx_file_t        file;
    ngx_file_info_t   fi;

    if (out->data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = name;
    file.log = cf->log;
    file.fd = ngx_open_file(name.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "%V: can't open \"%V\"", &cmd->name, &name);
        return NGX_CONF_ERROR;
    }

    buf = NULL;
    n = NGX_ERROR;

    if (ngx_fd_info(file.fd, &fi) != NGX_FILE_ERROR
        && ngx_file_size(&fi) <= NGX_HTTP_FASTWALL_SECRET_MAX + 2)
    {
        buf = ngx_pnalloc(cf->pool, NGX_HTTP_FASTWALL_SECRET_MAX + 2);
        if (buf) {
            n = ngx_read_file(&file, buf, NGX_HTTP_FASTWALL_SECRET_MAX + 2, 0);
        }
    }

    (void) ngx_close_file(file.fd);

    /* one line: a final newline is no part of it */
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
        n--;
    }

    for (i = 0; n > 0 && i < (size_t) n; i++) {
        if (buf[i] <= ' ' || buf[i] >= 0x7f) {
            n = NGX_ERROR;
        }
    }

    if (n < NGX_HTTP_FASTWALL_SECRET_MIN || n > NGX_HTTP_FASTWALL_SECRET_MAX) {
        /* the file's content stays out of the message */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" does not hold one line of 16-256 "
                           "visible ASCII characters", &cmd->name, &name);
        return NGX_CONF_ERROR;
    }

    out->data = buf;
    out->len = n;

    return NGX_CONF_OK;
}


ngx_uint_t
ngx_http_fastwall_bearer_ok(ngx_http_request_t *r, ngx_str_t *want)
{
    ngx_table_elt_t  *h;

    h = r->headers_in.authorization;

    if (h == NULL || h->value.len <= 7
        || ngx_strncasecmp(h->value.data, (u_char *) "Bearer ", 7) != 0
        || h->value.len - 7 != want->len)
    {
        return 0;
    }

    return ngx_http_fastwall_equal(want->data, h->value.data + 7, want->len);
}
