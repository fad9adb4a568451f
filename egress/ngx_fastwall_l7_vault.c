/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy: the credential vaults. The
 * `fastwall_l7_vaults` directive opens the two maps fastwalld hands the
 * proxy (include/fastwall/l7vault.h): each subject's vault blob, and the
 * array of their generations, mapped read-only so a request reads its
 * subject's generation without a system call. Each worker keeps the
 * vaults it used, decoded (user/lib/l7/vault.c), and copies a blob again
 * only when its generation changed. A request that matches a binding gets
 * the binding's header, every value the sandbox sent under that name
 * removed first. No log line of this file holds a credential, at any
 * level.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/mman.h>
#include <bpf/bpf.h>

#include "ngx_fastwall_l7.h"
#include "l7/vault.h"


/* a subject's vault as this worker decoded it */
typedef struct {
    uint64_t                      generation;   /* the blob's */
    ngx_flag_t                    bad;          /* did not decode */
    struct fw_l7_vault            vault;
    size_t                        size;         /* of this allocation */
    u_char                       *data;         /* the blob's bytes */
    size_t                        len;
} ngx_fastwall_l7_vault_t;


#define NGX_FASTWALL_L7_VAULT_SWEEP  10000      /* ms */

#define ngx_fastwall_l7_gen_size                                              \
    ngx_align(FW_MAX_SUBJECTS * sizeof(uint64_t), ngx_pagesize)


static void ngx_fastwall_l7_vaults_cleanup(void *data);
static void ngx_fastwall_l7_vault_sweep(ngx_event_t *ev);


/* per worker */
static ngx_fastwall_l7_vault_t   *ngx_fastwall_l7_cache[FW_MAX_SUBJECTS];
static struct fw_l7_vault_blob   *ngx_fastwall_l7_blob;
static ngx_event_t                ngx_fastwall_l7_sweep_ev;


static ngx_int_t
ngx_fastwall_l7_vault_fds(ngx_str_t *s, int *fd)
{
    u_char     *comma;
    ngx_int_t   v;

    comma = ngx_strlchr(s->data, s->data + s->len, ',');
    if (comma == NULL) {
        return NGX_ERROR;
    }

    v = ngx_atoi(s->data, comma - s->data);
    if (v == NGX_ERROR || v > 65535) {
        return NGX_ERROR;
    }

    fd[0] = (int) v;

    v = ngx_atoi(comma + 1, s->data + s->len - comma - 1);
    if (v == NGX_ERROR || v > 65535) {
        return NGX_ERROR;
    }

    fd[1] = (int) v;

    return NGX_OK;
}


char *
ngx_fastwall_l7_vaults(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    int                     fd[2], i, own;
    void                   *gen;
    u_char                  path[NGX_MAX_PATH];
    uint32_t                len;
    ngx_str_t              *value, dir;
    ngx_pool_cleanup_t     *cln;
    struct bpf_map_info     info;
    LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);

    static const char  *names[2] = {
        "fastwall_l7_vaults", "fastwall_l7_vault_gen"
    };
    static const uint32_t  shape[2][4] = {
        { BPF_MAP_TYPE_HASH, sizeof(uint32_t),
          sizeof(struct fw_l7_vault_blob), 0 },
        { BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(uint64_t),
          FW_MAX_SUBJECTS }
    };

    if (fcf->vaults_set) {
        return "is duplicate";
    }

    value = cf->args->elts;
    own = 0;

    if (ngx_strncmp(value[1].data, "fd:", 3) == 0) {
        dir.data = value[1].data + 3;
        dir.len = value[1].len - 3;

        if (ngx_fastwall_l7_vault_fds(&dir, fd) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: \"%V\" is not two file descriptors "
                               "(fd:VAULTS,GENERATIONS)",
                               &cmd->name, &value[1]);
            return NGX_CONF_ERROR;
        }

    } else if (ngx_strncmp(value[1].data, "pin:", 4) == 0) {
        dir.data = value[1].data + 4;
        dir.len = value[1].len - 4;

        for (i = 0; i < 2; i++) {
            if (ngx_snprintf(path, sizeof(path) - 1, "%V/%s%Z", &dir, names[i])
                == path + sizeof(path) - 1)
            {
                return "has a path too long";
            }

            /* the kernel maps no read-only descriptor of a map, so the
             * generations are opened for writing, and mapped read-only */
            opts.file_flags = (i == 1) ? 0 : BPF_F_RDONLY;

            fd[i] = bpf_obj_get_opts((char *) path, &opts);
            if (fd[i] < 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, -fd[i],
                                   "%V: can't open %s", &cmd->name, path);
                if (i == 1) {
                    close(fd[0]);
                }
                return NGX_CONF_ERROR;
            }
        }

        own = 1;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is neither fd:N,N nor pin:DIR",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        if (own) {
            close(fd[0]);
            close(fd[1]);
        }
        return NGX_CONF_ERROR;
    }

    fcf->vaults_fd = fd[0];
    fcf->vault_gen_fd = fd[1];
    fcf->vaults_fds_owned = own;
    fcf->vault_gen = NULL;
    cln->handler = ngx_fastwall_l7_vaults_cleanup;
    cln->data = fcf;

    /* the layouts must be l7vault.h's: a map of another shape is refused */
    for (i = 0; i < 2; i++) {
        len = sizeof(info);
        ngx_memzero(&info, sizeof(info));

        if (bpf_obj_get_info_by_fd(fd[i], &info, &len) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               "%V: fd %d (%s) is not a BPF map",
                               &cmd->name, fd[i], names[i]);
            return NGX_CONF_ERROR;
        }

        if (info.type != shape[i][0] || info.key_size != shape[i][1]
            || info.value_size != shape[i][2]
            || (shape[i][3] && info.max_entries != shape[i][3]))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: %s is a map of type %uD, key %uD and "
                               "value %uD bytes, %uD entries, not the "
                               "layout of include/fastwall/l7vault.h",
                               &cmd->name, names[i], info.type,
                               info.key_size, info.value_size,
                               info.max_entries);
            return NGX_CONF_ERROR;
        }
    }

    /* the generations, read per request from a mapping shared with the
     * kernel; a read-only descriptor, which the kernel does not map, is
     * read with bpf() instead */
    gen = mmap(NULL, ngx_fastwall_l7_gen_size, PROT_READ, MAP_SHARED, fd[1], 0);

    if (gen == MAP_FAILED) {
        gen = NULL;
    }

    fcf->vault_gen = gen;
    fcf->vaults_set = 1;

    return NGX_CONF_OK;
}


static void
ngx_fastwall_l7_vaults_cleanup(void *data)
{
    ngx_fastwall_l7_conf_t  *fcf = data;

    if (fcf->vault_gen) {
        munmap(fcf->vault_gen, ngx_fastwall_l7_gen_size);
        fcf->vault_gen = NULL;
    }

    if (fcf->vaults_fds_owned) {
        close(fcf->vaults_fd);
        close(fcf->vault_gen_fd);
        fcf->vaults_fds_owned = 0;
    }
}


uint64_t
ngx_fastwall_l7_vault_gen(uint32_t subject)
{
    uint64_t                 gen;
    ngx_fastwall_l7_conf_t  *fcf;

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    if (!fcf->vaults_set || subject == 0 || subject >= FW_MAX_SUBJECTS) {
        return 0;
    }

    if (fcf->vault_gen) {
        /* fastwalld stores it after the blob it names is in the map */
        return __atomic_load_n(&fcf->vault_gen[subject], __ATOMIC_ACQUIRE);
    }

    if (bpf_map_lookup_elem(fcf->vault_gen_fd, &subject, &gen) != 0) {
        return 0;
    }

    return gen;
}


static void
ngx_fastwall_l7_vault_free(uint32_t subject)
{
    ngx_fastwall_l7_vault_t  *v;

    v = ngx_fastwall_l7_cache[subject];
    if (v == NULL) {
        return;
    }

    ngx_fastwall_l7_cache[subject] = NULL;

    ngx_explicit_memzero(v, v->size);
    ngx_free(v);
}


/* every vault kept whose generation changed, so that a credential taken
 * out of a vault does not stay in this worker's memory until its
 * subject's next request */
static void
ngx_fastwall_l7_vault_sweep(ngx_event_t *ev)
{
    uint32_t  s;

    for (s = 1; s < FW_MAX_SUBJECTS; s++) {
        if (ngx_fastwall_l7_cache[s]
            && ngx_fastwall_l7_cache[s]->generation
               != ngx_fastwall_l7_vault_gen(s))
        {
            ngx_fastwall_l7_vault_free(s);
        }
    }

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(ev, NGX_FASTWALL_L7_VAULT_SWEEP);
    }
}


/* subject's vault now, decoded: NULL for none, for one that does not
 * decode, and on errors (logged) */
static ngx_fastwall_l7_vault_t *
ngx_fastwall_l7_vault(uint32_t subject, ngx_log_t *log)
{
    int                       n;
    size_t                    size, len;
    uint64_t                  gen;
    const char               *why;
    ngx_fastwall_l7_conf_t   *fcf;
    ngx_fastwall_l7_vault_t  *v;

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    if (!fcf->vaults_set || subject == 0 || subject >= FW_MAX_SUBJECTS) {
        return NULL;
    }

    gen = ngx_fastwall_l7_vault_gen(subject);
    v = ngx_fastwall_l7_cache[subject];

    if (gen == 0) {
        ngx_fastwall_l7_vault_free(subject);
        return NULL;
    }

    if (v && v->generation == gen) {
        return v->bad ? NULL : v;
    }

    if (ngx_fastwall_l7_blob == NULL) {
        ngx_fastwall_l7_blob = ngx_alloc(sizeof(struct fw_l7_vault_blob), log);
        if (ngx_fastwall_l7_blob == NULL) {
            return NULL;
        }

        if (fcf->vault_gen == NULL) {
            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "fastwall l7: fastwall_l7_vault_gen can't be "
                          "mapped (a read-only descriptor), generations "
                          "are read with bpf() per request");
        }

        ngx_fastwall_l7_sweep_ev.data = ngx_fastwall_l7_cache;
        ngx_fastwall_l7_sweep_ev.handler = ngx_fastwall_l7_vault_sweep;
        ngx_fastwall_l7_sweep_ev.log = ngx_cycle->log;
        ngx_fastwall_l7_sweep_ev.cancelable = 1;
        ngx_add_timer(&ngx_fastwall_l7_sweep_ev, NGX_FASTWALL_L7_VAULT_SWEEP);
    }

    ngx_fastwall_l7_vault_free(subject);

    if (bpf_map_lookup_elem(fcf->vaults_fd, &subject, ngx_fastwall_l7_blob)
        != 0)
    {
        /* deleted since the generation was read */
        return NULL;
    }

    len = ngx_fastwall_l7_blob->len;
    if (len > FW_L7_VAULT_DATA) {
        ngx_explicit_memzero(ngx_fastwall_l7_blob->data, FW_L7_VAULT_DATA);
        len = 0;
    }

    /* room for the bindings announced, at most what the bytes can hold
     * (a count past that is refused by the decoder unread) */
    n = fw_l7_vault_count(ngx_fastwall_l7_blob->data, len);
    n = ngx_min(n, (int) (len / sizeof(struct fw_l7_vault_rec)));

    size = sizeof(ngx_fastwall_l7_vault_t)
           + (n > 0 ? n : 0) * sizeof(struct fw_l7_binding) + len;

    v = ngx_alloc(size, log);
    if (v == NULL) {
        ngx_explicit_memzero(ngx_fastwall_l7_blob->data, len);
        return NULL;
    }

    v->generation = ngx_fastwall_l7_blob->generation;
    v->size = size;
    v->vault.bindings = (struct fw_l7_binding *) (v + 1);
    v->vault.nbindings = 0;
    v->data = (u_char *) (v->vault.bindings + (n > 0 ? n : 0));
    v->len = len;
    ngx_memcpy(v->data, ngx_fastwall_l7_blob->data, len);
    ngx_explicit_memzero(ngx_fastwall_l7_blob->data, len);

    v->bad = (fw_l7_vault_decode(v->data, len, &v->vault,
                                 n > 0 ? (unsigned int) n : 0, &why)
              != 0);

    if (v->bad) {
        /* once per generation; why never quotes the blob */
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "fastwall l7: the vault of subject %uD (generation "
                      "%uL, %uz bytes) does not decode: %s; nothing is "
                      "injected for it", subject, v->generation, len,
                      ngx_fastwall_l7_blob->len > FW_L7_VAULT_DATA
                      ? "a length past the blob" : why);
    }

    ngx_fastwall_l7_cache[subject] = v;

    return v->bad ? NULL : v;
}


ngx_int_t
ngx_fastwall_l7_vault_names(uint32_t subject, const u_char *host, size_t len,
    unsigned scheme, uint16_t port)
{
    int                       n;
    char                      norm[FW_LEASE_NAME_SZ];
    ngx_fastwall_l7_vault_t  *v;

    v = ngx_fastwall_l7_vault(subject, ngx_cycle->log);
    if (v == NULL) {
        return 0;
    }

    n = fw_l7_name_norm((const char *) host, len, 0, norm);
    if (n <= 0) {
        return 0;
    }

    return fw_l7_vault_names(&v->vault, norm, n, scheme, port) ? 1 : 0;
}


static void
ngx_fastwall_l7_wipe(void *data)
{
    ngx_str_t  *s = data;

    ngx_explicit_memzero(s->data, s->len);
}


/* the request's headers without any named name, and b's header after them:
 * a list of one part, made in the request's pool, in place of the old */
static ngx_int_t
ngx_fastwall_l7_set_header(ngx_http_request_t *r,
    const struct fw_l7_binding *b)
{
    size_t               n;
    ngx_str_t           *wipe;
    ngx_uint_t           i;
    ngx_list_t          *list;
    ngx_table_elt_t     *h, *hv, *our;
    ngx_list_part_t     *part;
    ngx_pool_cleanup_t  *cln;

    n = 1;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        n += part->nelts;
    }

    list = ngx_list_create(r->pool, n, sizeof(ngx_table_elt_t));
    if (list == NULL) {
        return NGX_ERROR;
    }

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == b->header_len
                && ngx_strncasecmp(h[i].key.data, (u_char *) b->header,
                                   b->header_len) == 0)
            {
                continue;
            }

            hv = ngx_list_push(list);
            if (hv == NULL) {
                return NGX_ERROR;
            }

            *hv = h[i];
        }
    }

    our = ngx_list_push(list);
    if (our == NULL) {
        return NGX_ERROR;
    }

    our->key.len = b->header_len;
    our->key.data = ngx_pnalloc(r->pool, b->header_len + 1);
    our->lowcase_key = ngx_pnalloc(r->pool, b->header_len);
    our->value.len = b->value_len;
    our->value.data = ngx_pnalloc(r->pool, b->value_len + 1);

    /* the copy of the secret is wiped when the request ends */
    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_str_t));

    if (our->key.data == NULL || our->lowcase_key == NULL
        || our->value.data == NULL || cln == NULL)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(our->key.data, b->header, b->header_len);
    our->key.data[b->header_len] = '\0';
    our->hash = ngx_hash_strlow(our->lowcase_key, our->key.data,
                                our->key.len);
    ngx_memcpy(our->value.data, b->value, b->value_len);
    our->value.data[b->value_len] = '\0';

    wipe = cln->data;
    wipe->data = our->value.data;
    wipe->len = our->value.len;
    cln->handler = ngx_fastwall_l7_wipe;

    r->headers_in.headers = *list;

    /* the one part is the list's own: its last part must be too */
    r->headers_in.headers.last = &r->headers_in.headers.part;

    if (b->header_len == sizeof("Authorization") - 1
        && ngx_strncasecmp(our->lowcase_key, (u_char *) "authorization",
                           b->header_len) == 0)
    {
        r->headers_in.authorization = our;
        ngx_str_null(&r->headers_in.user);
        ngx_str_null(&r->headers_in.passwd);
    }

    return NGX_OK;
}


/* the request's host, normalised (l7/pin.h): the Host header's, and the
 * absolute-form URI's when there is one, which must be the same name */
static ngx_int_t
ngx_fastwall_l7_request_host(ngx_http_request_t *r, char *host)
{
    int   n, m;
    char  uri[FW_LEASE_NAME_SZ];

    n = -1;
    m = -1;

    if (r->headers_in.host) {
        n = fw_l7_name_norm((const char *) r->headers_in.host->value.data,
                            r->headers_in.host->value.len, 1, host);
        if (n <= 0) {
            return NGX_DECLINED;
        }
    }

    if (r->host_start && r->host_end) {
        m = fw_l7_name_norm((const char *) r->host_start,
                            r->host_end - r->host_start, 1,
                            n < 0 ? host : uri);
        if (m <= 0) {
            return NGX_DECLINED;
        }

        if (n >= 0 && (n != m || ngx_memcmp(host, uri, n) != 0)) {
            return NGX_DECLINED;
        }

        if (n < 0) {
            n = m;
        }
    }

    return n > 0 ? n : NGX_DECLINED;
}


ngx_int_t
ngx_fastwall_l7_inject(ngx_http_request_t *r, uint32_t subject,
    unsigned scheme, uint16_t port, ngx_str_t *binding)
{
    char                         host[FW_LEASE_NAME_SZ];
    u_char                      *q;
    ngx_int_t                    n;
    struct fw_l7_request         req;
    ngx_fastwall_l7_vault_t     *v;
    const struct fw_l7_binding  *b;

    v = ngx_fastwall_l7_vault(subject, r->connection->log);
    if (v == NULL) {
        return NGX_DECLINED;
    }

    n = ngx_fastwall_l7_request_host(r, host);
    if (n == NGX_DECLINED) {
        return NGX_DECLINED;
    }

    ngx_memzero(&req, sizeof(req));
    req.scheme = scheme;
    req.port = port;
    req.host = host;
    req.host_len = n;
    req.method = (const char *) r->method_name.data;
    req.method_len = r->method_name.len;
    req.path = (const char *) r->uri.data;
    req.path_len = r->uri.len;

    /* the path as sent, which is what proxy_pass without a URI sends */
    if (r->unparsed_uri.len) {
        q = ngx_strlchr(r->unparsed_uri.data,
                        r->unparsed_uri.data + r->unparsed_uri.len, '?');
        req.raw_path = (const char *) r->unparsed_uri.data;
        req.raw_path_len = (q ? q : r->unparsed_uri.data + r->unparsed_uri.len)
                           - r->unparsed_uri.data;
    }

    b = fw_l7_vault_match(&v->vault, &req);
    if (b == NULL) {
        return NGX_DECLINED;
    }

    /* nginx's debug log (a --with-debug build, as Debian's) writes the
     * request headers sent upstream: no credential goes where it would */
    if (r->connection->log->log_level & NGX_LOG_DEBUG_HTTP) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall l7: subject %uD, binding \"%*s\": not "
                      "injected, the error log writes debug lines (which "
                      "hold the request headers sent upstream); the "
                      "request fails", subject, (size_t) b->name_len,
                      b->name);
        return NGX_ERROR;
    }

    if (binding) {
        binding->len = b->name_len;
        binding->data = ngx_pnalloc(r->pool, b->name_len + 1);
        if (binding->data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(binding->data, b->name, b->name_len);
        binding->data[b->name_len] = '\0';
    }

    if (ngx_fastwall_l7_set_header(r, b) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fastwall l7: subject %uD, binding \"%*s\" sets its "
                   "header", subject, (size_t) b->name_len, b->name);

    return NGX_OK;
}
