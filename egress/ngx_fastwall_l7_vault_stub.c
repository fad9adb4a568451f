/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * TEMPORARY TEST STUB (branch l7term only, removed before its last
 * commit): the three vault functions of egress/ngx_fastwall_l7.h and
 * `fastwall_l7_vaults pin:DIR`, just enough to test termination. The
 * real ones are egress/ngx_fastwall_l7_vault.c. Bindings match by host,
 * scheme and port only.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <bpf/bpf.h>

#include "ngx_fastwall_l7.h"


typedef struct {
    int  vaults_fd;
    int  gen_fd;
} ngx_fastwall_l7_vault_stub_conf_t;


static void *ngx_fastwall_l7_vault_stub_create(ngx_cycle_t *cycle);
static char *ngx_fastwall_l7_vault_stub_vaults(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);


static ngx_command_t  ngx_fastwall_l7_vault_stub_commands[] = {

    { ngx_string("fastwall_l7_vaults"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_vault_stub_vaults,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_core_module_t  ngx_fastwall_l7_vault_stub_module_ctx = {
    ngx_string("fastwall_l7_vault_stub"),
    ngx_fastwall_l7_vault_stub_create,
    NULL
};


ngx_module_t  ngx_fastwall_l7_vault_stub_module = {
    NGX_MODULE_V1,
    &ngx_fastwall_l7_vault_stub_module_ctx,
    ngx_fastwall_l7_vault_stub_commands,
    NGX_CORE_MODULE,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NGX_MODULE_V1_PADDING
};


static struct fw_l7_vault_blob  stub_blob;


static void *
ngx_fastwall_l7_vault_stub_create(ngx_cycle_t *cycle)
{
    ngx_fastwall_l7_vault_stub_conf_t  *conf;

    conf = ngx_pcalloc(cycle->pool, sizeof(*conf));
    if (conf) {
        conf->vaults_fd = -1;
        conf->gen_fd = -1;
    }

    return conf;
}


static char *
ngx_fastwall_l7_vault_stub_vaults(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_fastwall_l7_vault_stub_conf_t  *vcf = conf;

    u_char      path[NGX_MAX_PATH];
    ngx_str_t  *value;

    value = cf->args->elts;

    if (ngx_strncmp(value[1].data, "pin:", 4) != 0) {
        return "stub: pin:DIR only";
    }

    ngx_snprintf(path, sizeof(path), "%*s/fastwall_l7_vaults%Z",
                 value[1].len - 4, value[1].data + 4);
    vcf->vaults_fd = bpf_obj_get((char *) path);

    ngx_snprintf(path, sizeof(path), "%*s/fastwall_l7_vault_gen%Z",
                 value[1].len - 4, value[1].data + 4);
    vcf->gen_fd = bpf_obj_get((char *) path);

    if (vcf->vaults_fd < 0 || vcf->gen_fd < 0) {
        return "stub: can't open the pins";
    }

    return NGX_CONF_OK;
}


static ngx_fastwall_l7_vault_stub_conf_t *
stub_conf(void)
{
    return (ngx_fastwall_l7_vault_stub_conf_t *) ngx_get_conf(
               ngx_cycle->conf_ctx, ngx_fastwall_l7_vault_stub_module);
}


/* the record of subject's vault matching host, scheme and port */
static u_char *
stub_match(uint32_t subject, const u_char *host, size_t len, unsigned scheme,
    uint16_t port, ngx_str_t *method)
{
    u_char                             *p, *end, *q;
    uint16_t                            n16, v;
    ngx_uint_t                          i, j;
    struct fw_l7_vault_rec              rec;
    struct fw_l7_vault_head             head;
    ngx_fastwall_l7_vault_stub_conf_t  *vcf;

    vcf = stub_conf();

    if (vcf == NULL || vcf->vaults_fd < 0
        || bpf_map_lookup_elem(vcf->vaults_fd, &subject, &stub_blob) != 0
        || stub_blob.len < sizeof(head) || stub_blob.len > FW_L7_VAULT_DATA)
    {
        return NULL;
    }

    p = stub_blob.data;
    end = p + stub_blob.len;
    ngx_memcpy(&head, p, sizeof(head));
    p += sizeof(head);

    for (i = 0; i < head.nbindings; i++) {
        if ((size_t) (end - p) < sizeof(rec)) {
            return NULL;
        }

        ngx_memcpy(&rec, p, sizeof(rec));

        if (rec.size < sizeof(rec) || rec.size > (size_t) (end - p)) {
            return NULL;
        }

        q = p + sizeof(rec);

        if ((rec.schemes ? rec.schemes : FW_L7_SCHEME_HTTPS) & scheme) {
            ngx_uint_t  port_ok = (rec.nports == 0);

            for (j = 0; j < rec.nports; j++) {
                ngx_memcpy(&v, q + 2 * j, 2);
                if (v == port) {
                    port_ok = 1;
                }
            }

            q += 2 * rec.nports + rec.name_len + rec.header_len
                 + rec.value_len;

            for (j = 0; port_ok && j < rec.nhosts; j++) {
                ngx_memcpy(&n16, q, 2);
                q += 2;

                if ((n16 == len && ngx_strncasecmp(q, (u_char *) host, len) == 0)
                    || (n16 > 2 && q[0] == '*' && q[1] == '.' && len > n16 - 1U
                        && ngx_strncasecmp(q + 1,
                                           (u_char *) host + len - (n16 - 1),
                                           n16 - 1) == 0))
                {
                    port_ok = 2;
                }

                q += n16;
            }

            for (j = 0; port_ok == 2 && j < rec.nmethods; j++) {
                ngx_memcpy(&n16, q, 2);
                q += 2;

                if (method && n16 == method->len
                    && ngx_strncmp(q, method->data, n16) == 0)
                {
                    return p;
                }

                q += n16;
            }

            if (port_ok == 2 && (rec.nmethods == 0 || method == NULL)) {
                return p;
            }
        }

        p += rec.size;
    }

    return NULL;
}


ngx_int_t
ngx_fastwall_l7_vault_names(uint32_t subject, const u_char *host, size_t len,
    unsigned scheme, uint16_t port)
{
    return stub_match(subject, host, len, scheme, port, NULL) != NULL;
}


uint64_t
ngx_fastwall_l7_vault_gen(uint32_t subject)
{
    uint64_t                            gen;
    ngx_fastwall_l7_vault_stub_conf_t  *vcf;

    vcf = stub_conf();

    if (vcf == NULL || vcf->gen_fd < 0
        || bpf_map_lookup_elem(vcf->gen_fd, &subject, &gen) != 0)
    {
        return 0;
    }

    return gen;
}


ngx_int_t
ngx_fastwall_l7_inject(ngx_http_request_t *r, uint32_t subject,
    unsigned scheme, uint16_t port, ngx_str_t *binding)
{
    u_char                  *p, *q;
    ngx_uint_t               i;
    ngx_list_part_t         *part;
    ngx_table_elt_t         *h;
    struct fw_l7_vault_rec   rec;

    p = stub_match(subject, r->headers_in.server.data,
                   r->headers_in.server.len, scheme, port, &r->method_name);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    ngx_memcpy(&rec, p, sizeof(rec));
    q = p + sizeof(rec) + 2 * rec.nports;

    binding->data = q;
    binding->len = rec.name_len;
    q += rec.name_len;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; ; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == rec.header_len
            && ngx_strncasecmp(h[i].key.data, q, rec.header_len) == 0)
        {
            h[i].hash = 0;
        }
    }

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.len = rec.header_len;
    h->key.data = ngx_pnalloc(r->pool, rec.header_len);
    h->value.len = rec.value_len;
    h->value.data = ngx_pnalloc(r->pool, rec.value_len);
    h->lowcase_key = ngx_pnalloc(r->pool, rec.header_len);

    if (h->key.data == NULL || h->value.data == NULL || h->lowcase_key == NULL)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(h->key.data, q, rec.header_len);
    ngx_strlow(h->lowcase_key, q, rec.header_len);
    ngx_memcpy(h->value.data, q + rec.header_len, rec.value_len);

    binding->data = ngx_pstrdup(r->pool, binding);

    return NGX_OK;
}
