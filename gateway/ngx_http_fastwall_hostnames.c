/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall ingress service hostnames: a request whose Host is
 * <workspace>--<sandbox>[--<service>].<base domain> or, with a routing
 * name, <hashed label>.<base domain> goes to that exposed service's
 * sandbox and port through the ingress module's resolution and cache.
 *
 * The index of exposed services (hashed label and readable name ->
 * target and port) lives in a shared memory zone, so every worker sees
 * it; the master hydrates it from the store before the workers start, the
 * admin API updates store then index, and a miss refreshes it from the
 * store once (another gateway sharing a PostgreSQL store may have exposed
 * the service).
 *
 * A worker never calls the store on its event loop: each call is a job
 * run in a thread of nginx's thread pool "default", one job at a time per
 * worker (it has one connection). A request that misses waits for the
 * next read of the store, which answers every miss waiting for it; a miss
 * the store confirmed is remembered for a while (the miss cache), so
 * unknown labels cannot keep the store busy.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "ngx_http_fastwall_common.h"
#include "ngx_http_fastwall_hostnames.h"
#include "gateway/policy_port.h"


#define NGX_HTTP_FWH_ROUTING_ENV     "FASTWALL_ROUTING_NAME"
#define NGX_HTTP_FWH_DEFAULT_STORE   "/var/lib/fastwall/ingress-services.db"
/* the seconds a client is told to wait when the store can't answer */
#define NGX_HTTP_FWH_RETRY_AFTER     "2"
/* 'r' + workspace/sandbox/service, or 'h' + label */
#define NGX_HTTP_FWH_KEY_MAX         (1 + 3 * FW_HOSTNAME_NAME_MAX + 2)


typedef struct {
    struct fw_hostname_domains *domains;      /* NULL: hostnames off */
    ngx_str_t                   routing_name; /* the effective one */
    ngx_str_t                   routing_conf; /* the directive's */
    ngx_uint_t                  store_kind;
    ngx_str_t                   store_arg;    /* NUL-terminated */
    size_t                      zone_size;
    ngx_msec_t                  refresh;      /* 0: only after a miss */
    ngx_msec_t                  store_timeout; /* a miss waits that long */
    ngx_int_t                   miss_entries; /* the miss cache; 0: off */
    ngx_msec_t                  miss_ttl;
    ngx_shm_zone_t             *shm_zone;
#if (NGX_THREADS)
    ngx_thread_pool_t          *thread_pool;
#endif
    ngx_str_t                   admin_credential; /* none: local only */
} ngx_http_fwh_main_conf_t;


typedef struct {
    ngx_flag_t                  admin;
} ngx_http_fwh_loc_conf_t;


/* the routing name given on the command line (nginx -g) */
typedef struct {
    ngx_str_t                   name;
} ngx_fastwall_routing_conf_t;


typedef struct {
    ngx_rbtree_t                rbtree;
    ngx_rbtree_node_t           sentinel;
    ngx_queue_t                 all;
    ngx_uint_t                  count;
    ngx_msec_t                  refreshed;    /* last refresh, 0: none */
    ngx_uint_t                  gen;          /* configurations loaded */
    ngx_uint_t                  ambiguous;    /* labels of 2+ services */
    /* counters of every worker, for GET /services/metrics */
    ngx_atomic_t                reads;        /* store reads by workers */
    ngx_atomic_t                read_errors;
    ngx_atomic_t                write_errors;
    ngx_atomic_t                waits;        /* misses that waited a read */
    ngx_atomic_t                miss_hits;    /* misses the cache answered */
    ngx_atomic_t                unavailable;  /* 503s for the store */
} ngx_http_fwh_shctx_t;


/* one key of the index: the row it leads to, then the key in data[] */
typedef struct {
    ngx_str_node_t              sn;
    ngx_queue_t                 all;
    /* a label 2+ stored services share: this many, and no row */
    ngx_uint_t                  ambiguous;
    ngx_http_fwh_row_t          row;
    u_char                      data[1];
} ngx_http_fwh_node_t;


/*
 * The zone outlives a reload, and for a moment the old workers run beside
 * the new ones: only the newest configuration (gen) writes the index, so
 * an old worker never puts back labels of an old routing name.
 */
typedef struct {
    ngx_http_fwh_shctx_t       *sh;
    ngx_slab_pool_t            *shpool;
    ngx_http_fwh_main_conf_t   *mcf;
    ngx_uint_t                  gen;
} ngx_http_fwh_index_t;


static ngx_int_t ngx_http_fwh_admin_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fwh_init_process(ngx_cycle_t *cycle);
static void *ngx_http_fwh_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_fwh_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_fwh_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_fwh_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_fwh_service_hosts(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwh_routing_name(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwh_admin_credential(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_fwh_store(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fwh_admin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void *ngx_fastwall_routing_create_conf(ngx_cycle_t *cycle);
static char *ngx_fastwall_routing_name(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_fwh_commands[] = {

    { ngx_string("fastwall_ingress_service_hosts"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_fwh_service_hosts,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_routing_name"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwh_routing_name,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_service_admin_credential"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwh_admin_credential,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_service_store"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fwh_store,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_ingress_service_zone_size"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fastwall_conf_set_zone_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwh_main_conf_t, zone_size),
      NULL },

    { ngx_string("fastwall_ingress_service_refresh"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwh_main_conf_t, refresh),
      NULL },

    { ngx_string("fastwall_ingress_service_store_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwh_main_conf_t, store_timeout),
      NULL },

    { ngx_string("fastwall_ingress_service_miss_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwh_main_conf_t, miss_entries),
      NULL },

    { ngx_string("fastwall_ingress_service_miss_ttl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_fwh_main_conf_t, miss_ttl),
      NULL },

    { ngx_string("fastwall_ingress_admin"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_fwh_admin,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_hostnames_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    ngx_http_fwh_create_main_conf,         /* create main configuration */
    ngx_http_fwh_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_fwh_create_loc_conf,          /* create location configuration */
    ngx_http_fwh_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_hostnames_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_hostnames_module_ctx, /* module context */
    ngx_http_fwh_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_fwh_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * A core module of its own for the one main-context directive: nginx's
 * command line (-g) takes only those, and the routing name given there
 * must win over the environment and the http-level directive.
 */
static ngx_command_t  ngx_fastwall_routing_commands[] = {

    { ngx_string("fastwall_routing_name"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_routing_name,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_core_module_t  ngx_fastwall_routing_module_ctx = {
    ngx_string("fastwall_routing"),
    ngx_fastwall_routing_create_conf,
    NULL
};


ngx_module_t  ngx_fastwall_routing_module = {
    NGX_MODULE_V1,
    &ngx_fastwall_routing_module_ctx,     /* module context */
    ngx_fastwall_routing_commands,        /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_event_t  ngx_http_fwh_refresh_event;


/* this worker's connection to the store, opened on first use */
static ngx_http_fwh_store_t  *ngx_http_fwh_worker_store;


static ngx_http_fwh_store_t *
ngx_http_fwh_store_get(ngx_http_fwh_main_conf_t *mcf, ngx_log_t *log)
{
    if (ngx_http_fwh_worker_store == NULL) {
        ngx_http_fwh_worker_store = ngx_http_fwh_store_open(mcf->store_kind,
                                        (const char *) mcf->store_arg.data,
                                        log);
    }

    return ngx_http_fwh_worker_store;
}


/* after a failed call the connection is made anew next time */
static void
ngx_http_fwh_store_drop(void)
{
    ngx_http_fwh_store_close(ngx_http_fwh_worker_store);
    ngx_http_fwh_worker_store = NULL;
}


/* index */

static size_t
ngx_http_fwh_key_readable(u_char *key, struct fw_hostname_target *t)
{
    return ngx_sprintf(key, "r%s/%s/%s", t->workspace, t->sandbox, t->service)
           - key;
}


static size_t
ngx_http_fwh_key_hashed(u_char *key, const char *label)
{
    return ngx_sprintf(key, "h%s", label) - key;
}


static ngx_http_fwh_node_t *
ngx_http_fwh_index_find(ngx_http_fwh_index_t *ix, u_char *key, size_t len)
{
    ngx_str_t  k;

    k.data = key;
    k.len = len;

    return (ngx_http_fwh_node_t *) ngx_str_rbtree_lookup(&ix->sh->rbtree, &k,
                                      ngx_crc32_short(key, len));
}


static void
ngx_http_fwh_index_free(ngx_http_fwh_index_t *ix, ngx_http_fwh_node_t *n)
{
    if (n->ambiguous) {
        ix->sh->ambiguous--;
    }

    ngx_queue_remove(&n->all);
    ngx_rbtree_delete(&ix->sh->rbtree, &n->sn.node);
    ngx_slab_free_locked(ix->shpool, n);
    ix->sh->count--;
}


static ngx_int_t
ngx_http_fwh_index_add_key(ngx_http_fwh_index_t *ix, u_char *key, size_t len,
    ngx_http_fwh_row_t *row)
{
    ngx_http_fwh_node_t  *n;

    n = ngx_http_fwh_index_find(ix, key, len);
    if (n) {
        ngx_http_fwh_index_free(ix, n);
    }

    n = ngx_slab_alloc_locked(ix->shpool,
                              offsetof(ngx_http_fwh_node_t, data) + len);
    if (n == NULL) {
        return NGX_ERROR;
    }

    n->ambiguous = 0;
    n->row = *row;
    ngx_memcpy(n->data, key, len);
    n->sn.str.data = n->data;
    n->sn.str.len = len;
    n->sn.node.key = ngx_crc32_short(key, len);

    ngx_rbtree_insert(&ix->sh->rbtree, &n->sn.node);
    ngx_queue_insert_tail(&ix->sh->all, &n->all);
    ix->sh->count++;

    return NGX_OK;
}


/* drops the target's keys: its readable one and the label it holds */
static void
ngx_http_fwh_index_del(ngx_http_fwh_index_t *ix, struct fw_hostname_target *t)
{
    size_t                len;
    u_char                key[NGX_HTTP_FWH_KEY_MAX];
    ngx_http_fwh_node_t  *n;

    len = ngx_http_fwh_key_readable(key, t);
    n = ngx_http_fwh_index_find(ix, key, len);
    if (n == NULL) {
        return;
    }

    if (n->row.label[0]) {
        len = ngx_http_fwh_key_hashed(key, n->row.label);
        ngx_http_fwh_index_free(ix, n);

        n = ngx_http_fwh_index_find(ix, key, len);
        if (n && ngx_memcmp(&n->row.target, t, sizeof(*t)) == 0) {
            ngx_http_fwh_index_free(ix, n);
        }

        return;
    }

    ngx_http_fwh_index_free(ix, n);
}


/*
 * The label a row routes by here: the stored one when it was exposed
 * under this gateway's routing name, else computed under that name; ""
 * without a routing name.
 */
static void
ngx_http_fwh_row_label(ngx_http_fwh_main_conf_t *mcf, ngx_http_fwh_row_t *row)
{
    if (mcf->routing_name.len == 0) {
        row->label[0] = '\0';
        return;
    }

    if (row->label[0]
        && ngx_strlen(row->routing_name) == mcf->routing_name.len
        && ngx_strncmp(row->routing_name, mcf->routing_name.data,
                       mcf->routing_name.len) == 0)
    {
        return;
    }

    (void) fw_hostname_hash((const char *) mcf->routing_name.data,
                            mcf->routing_name.len, &row->target, row->label);
}


/* adds a row under its readable key and its label; the caller locks */
static ngx_int_t
ngx_http_fwh_index_put(ngx_http_fwh_index_t *ix, ngx_http_fwh_row_t *row)
{
    size_t  len;
    u_char  key[NGX_HTTP_FWH_KEY_MAX];

    ngx_http_fwh_index_del(ix, &row->target);

    len = ngx_http_fwh_key_readable(key, &row->target);
    if (ngx_http_fwh_index_add_key(ix, key, len, row) != NGX_OK) {
        return NGX_ERROR;
    }

    if (row->label[0]) {
        len = ngx_http_fwh_key_hashed(key, row->label);
        if (ngx_http_fwh_index_add_key(ix, key, len, row) != NGX_OK) {
            ngx_http_fwh_index_del(ix, &row->target);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * Two or more services under one label: none is served by it rather than
 * one by chance. The label's node stays as a mark (no row) so that a
 * third row finds it too; the first service keeps its readable key.
 */
static void
ngx_http_fwh_index_ambiguous(ngx_http_fwh_index_t *ix, ngx_http_fwh_node_t *n,
    ngx_http_fwh_row_t *row, ngx_log_t *log)
{
    size_t                len;
    u_char                key[NGX_HTTP_FWH_KEY_MAX];
    ngx_http_fwh_node_t  *first;

    if (n->ambiguous) {
        n->ambiguous++;
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "fastwall ingress: service %s/%s/%s shares the label "
                      "\"%s\" too: %ui services, none routes by it",
                      row->target.workspace, row->target.sandbox,
                      row->target.service, row->label, n->ambiguous);
        return;
    }

    ngx_log_error(NGX_LOG_ALERT, log, 0,
                  "fastwall ingress: services %s/%s/%s and %s/%s/%s share "
                  "the label \"%s\": neither routes by it",
                  n->row.target.workspace, n->row.target.sandbox,
                  n->row.target.service, row->target.workspace,
                  row->target.sandbox, row->target.service, row->label);

    len = ngx_http_fwh_key_readable(key, &n->row.target);
    first = ngx_http_fwh_index_find(ix, key, len);
    if (first) {
        first->row.label[0] = '\0';
    }

    ngx_memzero(&n->row, sizeof(n->row));
    n->ambiguous = 2;
    ix->sh->ambiguous++;
}


/* replaces the whole index by rows; the caller locks */
static void
ngx_http_fwh_index_rebuild(ngx_http_fwh_index_t *ix, ngx_array_t *rows,
    ngx_log_t *log)
{
    size_t                len;
    u_char                key[NGX_HTTP_FWH_KEY_MAX];
    ngx_uint_t            i;
    ngx_queue_t          *q;
    ngx_http_fwh_row_t   *row;
    ngx_http_fwh_node_t  *n;

    while (!ngx_queue_empty(&ix->sh->all)) {
        q = ngx_queue_head(&ix->sh->all);
        n = ngx_queue_data(q, ngx_http_fwh_node_t, all);
        ngx_http_fwh_index_free(ix, n);
    }

    row = rows->elts;

    for (i = 0; i < rows->nelts; i++) {
        ngx_http_fwh_row_label(ix->mcf, &row[i]);

        if (row[i].label[0]) {
            len = ngx_http_fwh_key_hashed(key, row[i].label);
            n = ngx_http_fwh_index_find(ix, key, len);

            if (n) {
                ngx_http_fwh_index_ambiguous(ix, n, &row[i], log);
                row[i].label[0] = '\0';
            }
        }

        if (ngx_http_fwh_index_put(ix, &row[i]) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "fastwall ingress: service zone full: %ui of %ui "
                          "services indexed (fastwall_ingress_service_zone_size)",
                          i, rows->nelts);
            return;
        }
    }
}


/* rebuilds the index from rows read from the store */
static void
ngx_http_fwh_apply(ngx_http_fwh_index_t *ix, ngx_array_t *rows, ngx_log_t *log)
{
    ngx_shmtx_lock(&ix->shpool->mutex);
    if (ix->gen == ix->sh->gen) {
        ngx_http_fwh_index_rebuild(ix, rows, log);
    }
    ix->sh->refreshed = ngx_current_msec ? ngx_current_msec : 1;
    ngx_shmtx_unlock(&ix->shpool->mutex);
}


/* reads the store and rebuilds the index from it: the master's, at start */
static ngx_int_t
ngx_http_fwh_refresh(ngx_http_fwh_index_t *ix, ngx_http_fwh_store_t *st,
    ngx_pool_t *pool, ngx_log_t *log)
{
    ngx_array_t  rows;

    if (ngx_array_init(&rows, pool, 16, sizeof(ngx_http_fwh_row_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_fwh_store_list(st, &rows, log) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_fwh_apply(ix, &rows, log);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwh_lookup(ngx_http_fwh_index_t *ix, u_char *key, size_t len,
    ngx_http_fwh_row_t *row)
{
    ngx_int_t             rc;
    ngx_http_fwh_node_t  *n;

    ngx_shmtx_lock(&ix->shpool->mutex);

    n = ngx_http_fwh_index_find(ix, key, len);
    rc = (n && !n->ambiguous) ? NGX_OK : NGX_DECLINED;
    if (rc == NGX_OK) {
        *row = n->row;
    }

    ngx_shmtx_unlock(&ix->shpool->mutex);

    return rc;
}


/*
 * Jobs: the store calls of a worker. Each runs in a thread of the pool,
 * the next only after the last one finished (the worker's one connection
 * is not shared between threads); done() runs back on the event loop.
 */

typedef struct ngx_http_fwh_job_s  ngx_http_fwh_job_t;

typedef void (*ngx_http_fwh_job_done_pt)(ngx_http_fwh_job_t *job);

#define NGX_HTTP_FWH_JOB_LIST            0
#define NGX_HTTP_FWH_JOB_PUT             1
#define NGX_HTTP_FWH_JOB_DELETE          2
#define NGX_HTTP_FWH_JOB_DELETE_SANDBOX  3

struct ngx_http_fwh_job_s {
    ngx_uint_t                  op;
    /* PUT: the row; the deletes: its target */
    ngx_http_fwh_row_t          row;
    ngx_array_t                 rows;      /* LIST: the store's rows */
    ngx_int_t                   rc;        /* the store call's */
    ngx_uint_t                  deleted;   /* DELETE_SANDBOX: rows gone */
    /* the job's own, rows included: only its thread allocates meanwhile */
    ngx_pool_t                 *pool;
    ngx_http_fwh_main_conf_t   *mcf;
    ngx_http_fwh_job_done_pt    done;
    void                       *data;
    ngx_queue_t                 queue;
};


/* jobs waiting for their turn, and whether one is in a thread */
static ngx_queue_t  ngx_http_fwh_jobs;
static ngx_uint_t   ngx_http_fwh_job_busy;


/* in a thread: the only code that touches the worker's store */
static void
ngx_http_fwh_job_run(void *data, ngx_log_t *log)
{
    ngx_http_fwh_job_t *job = data;

    ngx_http_fwh_store_t  *st;

    st = ngx_http_fwh_store_get(job->mcf, log);
    if (st == NULL) {
        job->rc = NGX_ERROR;
        return;
    }

    switch (job->op) {

    case NGX_HTTP_FWH_JOB_LIST:
        job->rc = ngx_http_fwh_store_list(st, &job->rows, log);
        break;

    case NGX_HTTP_FWH_JOB_PUT:
        job->rc = ngx_http_fwh_store_put(st, &job->row, log);
        break;

    case NGX_HTTP_FWH_JOB_DELETE:
        job->rc = ngx_http_fwh_store_delete(st, &job->row.target, log);
        break;

    default:
        job->rc = ngx_http_fwh_store_delete_sandbox(st, &job->row.target,
                                                    &job->deleted, log);
    }

    if (job->rc == NGX_ERROR) {
        ngx_http_fwh_store_drop();
    }
}


static void ngx_http_fwh_job_next(void);


static void
ngx_http_fwh_job_finish(ngx_http_fwh_job_t *job)
{
    ngx_http_fwh_shctx_t  *sh;

    sh = ((ngx_http_fwh_index_t *) job->mcf->shm_zone->data)->sh;

    if (job->rc == NGX_ERROR) {
        (void) ngx_atomic_fetch_add(job->op == NGX_HTTP_FWH_JOB_LIST
                                    ? &sh->read_errors : &sh->write_errors,
                                    1);

    } else if (job->op == NGX_HTTP_FWH_JOB_LIST) {
        (void) ngx_atomic_fetch_add(&sh->reads, 1);
    }

    job->done(job);
    ngx_destroy_pool(job->pool);
}


#if (NGX_THREADS)

static void
ngx_http_fwh_job_event(ngx_event_t *ev)
{
    ngx_http_fwh_job_busy = 0;
    ngx_http_fwh_job_finish(ev->data);
    ngx_http_fwh_job_next();
}

#endif


static void
ngx_http_fwh_job_next(void)
{
    ngx_queue_t         *q;
    ngx_http_fwh_job_t  *job;
#if (NGX_THREADS)
    ngx_thread_task_t   *task;
#endif

    while (!ngx_http_fwh_job_busy && !ngx_queue_empty(&ngx_http_fwh_jobs)) {
        q = ngx_queue_head(&ngx_http_fwh_jobs);
        ngx_queue_remove(q);
        job = ngx_queue_data(q, ngx_http_fwh_job_t, queue);

#if (NGX_THREADS)
        task = ngx_thread_task_alloc(job->pool, 0);
        if (task != NULL) {
            task->ctx = job;
            task->handler = ngx_http_fwh_job_run;
            task->event.handler = ngx_http_fwh_job_event;
            task->event.data = job;

            if (ngx_thread_task_post(job->mcf->thread_pool, task) == NGX_OK) {
                ngx_http_fwh_job_busy = 1;
                return;
            }
        }

        /* the pool's queue is full: as if the store had failed */
        job->rc = NGX_ERROR;
#else
        ngx_http_fwh_job_run(job, ngx_cycle->log);
#endif

        ngx_http_fwh_job_finish(job);
    }
}


static ngx_http_fwh_job_t *
ngx_http_fwh_job_create(ngx_http_fwh_main_conf_t *mcf, ngx_uint_t op,
    ngx_http_fwh_job_done_pt done, void *data)
{
    ngx_pool_t          *pool;
    ngx_http_fwh_job_t  *job;

    pool = ngx_create_pool(NGX_DEFAULT_POOL_SIZE, ngx_cycle->log);
    if (pool == NULL) {
        return NULL;
    }

    job = ngx_pcalloc(pool, sizeof(ngx_http_fwh_job_t));
    if (job == NULL
        || ngx_array_init(&job->rows, pool, 16, sizeof(ngx_http_fwh_row_t))
           != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return NULL;
    }

    job->op = op;
    job->pool = pool;
    job->mcf = mcf;
    job->done = done;
    job->data = data;

    return job;
}


static void
ngx_http_fwh_job_post(ngx_http_fwh_job_t *job)
{
    ngx_queue_insert_tail(&ngx_http_fwh_jobs, &job->queue);
    ngx_http_fwh_job_next();
}


/*
 * Misses. A request whose host the index does not hold waits for a read
 * of the store that began after it asked: the misses queued while a read
 * runs wait for the next one, and one read answers them all. After it,
 * a host still unknown is remembered in this worker's miss cache for
 * miss_ttl: a table of miss_entries slots, a host taking its hash's slot.
 */

#define NGX_HTTP_FWH_WAITING   1
#define NGX_HTTP_FWH_READ      2     /* the store was read for it */
#define NGX_HTTP_FWH_FAILED    3     /* the store failed, or was too slow */

typedef struct {
    ngx_http_request_t         *request;
    ngx_uint_t                  state;
    ngx_queue_t                 queue;
    ngx_event_t                 timeout;
    ngx_http_event_handler_pt   read_event_handler;
} ngx_http_fwh_ctx_t;


typedef struct {
    ngx_msec_t                  expires;
    size_t                      len;      /* 0: an empty slot */
    u_char                      key[NGX_HTTP_FWH_KEY_MAX];
} ngx_http_fwh_miss_t;


static ngx_queue_t           ngx_http_fwh_waiting;  /* for the next read */
static ngx_queue_t           ngx_http_fwh_reading;  /* for the one running */
static ngx_uint_t            ngx_http_fwh_read_busy;
static ngx_http_fwh_miss_t  *ngx_http_fwh_misses;


static ngx_http_fwh_miss_t *
ngx_http_fwh_miss_slot(ngx_http_fwh_main_conf_t *mcf, u_char *key, size_t len)
{
    if (ngx_http_fwh_misses == NULL) {
        return NULL;
    }

    return &ngx_http_fwh_misses[ngx_crc32_short(key, len)
                                % (ngx_uint_t) mcf->miss_entries];
}


static ngx_uint_t
ngx_http_fwh_miss_cached(ngx_http_fwh_main_conf_t *mcf, u_char *key,
    size_t len)
{
    ngx_http_fwh_miss_t  *m;

    m = ngx_http_fwh_miss_slot(mcf, key, len);

    return m && m->len == len && ngx_memcmp(m->key, key, len) == 0
           && (ngx_msec_int_t) (m->expires - ngx_current_msec) > 0;
}


static void
ngx_http_fwh_miss_add(ngx_http_fwh_main_conf_t *mcf, u_char *key, size_t len)
{
    ngx_http_fwh_miss_t  *m;

    m = ngx_http_fwh_miss_slot(mcf, key, len);
    if (m == NULL) {
        return;
    }

    ngx_memcpy(m->key, key, len);
    m->len = len;
    m->expires = ngx_current_msec + mcf->miss_ttl;
}


/* the request goes on with its phases where it stopped */
static void
ngx_http_fwh_wait_handler(ngx_http_request_t *r)
{
    /* woken by the read, the timeout, or a finalizer nginx puts here */
}


static void
ngx_http_fwh_resume(ngx_http_fwh_ctx_t *ctx, ngx_uint_t state)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ctx->request;
    c = r->connection;

    ngx_queue_remove(&ctx->queue);
    ctx->state = state;

    if (ctx->timeout.timer_set) {
        ngx_del_timer(&ctx->timeout);
    }

    r->main->blocked--;

    /* a client that went away meanwhile left nginx's finalizer there */
    if (r->write_event_handler == ngx_http_fwh_wait_handler) {
        r->read_event_handler = ctx->read_event_handler;
        r->write_event_handler = ngx_http_core_run_phases;
    }

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_fwh_wait_timeout(ngx_event_t *ev)
{
    ngx_http_fwh_ctx_t  *ctx = ev->data;

    ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                  "fastwall ingress: the service store did not answer a "
                  "miss in time (fastwall_ingress_service_store_timeout)");

    ngx_http_fwh_resume(ctx, NGX_HTTP_FWH_FAILED);
}


static ngx_int_t ngx_http_fwh_read_start(ngx_http_fwh_main_conf_t *mcf);


static void
ngx_http_fwh_read_done(ngx_http_fwh_job_t *job)
{
    ngx_uint_t             n;
    ngx_queue_t           *q;
    ngx_http_fwh_ctx_t    *ctx;
    ngx_http_fwh_index_t  *ix;

    ix = job->mcf->shm_zone->data;
    ngx_http_fwh_read_busy = 0;

    if (job->rc == NGX_OK) {
        ngx_http_fwh_apply(ix, &job->rows, ngx_cycle->log);
    }

    n = 0;

    while (!ngx_queue_empty(&ngx_http_fwh_reading)) {
        q = ngx_queue_head(&ngx_http_fwh_reading);
        ctx = ngx_queue_data(q, ngx_http_fwh_ctx_t, queue);
        n++;
        ngx_http_fwh_resume(ctx, job->rc == NGX_OK ? NGX_HTTP_FWH_READ
                                                   : NGX_HTTP_FWH_FAILED);
    }

    if (job->rc == NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "fastwall ingress: service index refreshed from the "
                      "store after a miss: %ui keys, %ui requests answered",
                      ix->sh->count, n);

    } else {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "fastwall ingress: the service store could not be "
                      "read after a miss: %ui requests answered 503", n);
    }

    if (!ngx_queue_empty(&ngx_http_fwh_waiting)) {
        if (ngx_http_fwh_read_start(job->mcf) != NGX_OK) {
            while (!ngx_queue_empty(&ngx_http_fwh_waiting)) {
                q = ngx_queue_head(&ngx_http_fwh_waiting);
                ctx = ngx_queue_data(q, ngx_http_fwh_ctx_t, queue);
                ngx_http_fwh_resume(ctx, NGX_HTTP_FWH_FAILED);
            }
        }
    }
}


/* a read for the misses waiting now, unless one is queued or running */
static ngx_int_t
ngx_http_fwh_read_start(ngx_http_fwh_main_conf_t *mcf)
{
    ngx_http_fwh_job_t  *job;

    if (ngx_http_fwh_read_busy) {
        return NGX_OK;
    }

    job = ngx_http_fwh_job_create(mcf, NGX_HTTP_FWH_JOB_LIST,
                                  ngx_http_fwh_read_done, NULL);
    if (job == NULL) {
        return NGX_ERROR;
    }

    /* they all asked before this read begins */
    if (!ngx_queue_empty(&ngx_http_fwh_waiting)) {
        ngx_queue_add(&ngx_http_fwh_reading, &ngx_http_fwh_waiting);
        ngx_queue_init(&ngx_http_fwh_waiting);
    }

    ngx_http_fwh_read_busy = 1;
    ngx_http_fwh_job_post(job);

    return NGX_OK;
}


/*
 * A miss: NGX_AGAIN, the request waits for a read of the store (its
 * access handler is called again after it); NGX_OK, the store was read
 * for it: look again; NGX_DECLINED, the miss cache knows the host is no
 * service's; NGX_HTTP_SERVICE_UNAVAILABLE, the store did not answer.
 */
static ngx_int_t
ngx_http_fwh_miss(ngx_http_request_t *r, ngx_http_fwh_main_conf_t *mcf,
    u_char *key, size_t len)
{
    ngx_http_fwh_ctx_t    *ctx;
    ngx_http_fwh_index_t  *ix;

    ix = mcf->shm_zone->data;
    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_hostnames_module);

    if (ctx != NULL) {
        if (ctx->state == NGX_HTTP_FWH_READ) {
            return NGX_OK;
        }

        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    if (ngx_http_fwh_miss_cached(mcf, key, len)) {
        (void) ngx_atomic_fetch_add(&ix->sh->miss_hits, 1);
        return NGX_DECLINED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fwh_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_fastwall_hostnames_module);

    ctx->request = r;
    ngx_queue_insert_tail(&ngx_http_fwh_waiting, &ctx->queue);

    if (ngx_http_fwh_read_start(mcf) != NGX_OK) {
        ngx_queue_remove(&ctx->queue);
        ctx->state = NGX_HTTP_FWH_FAILED;
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    (void) ngx_atomic_fetch_add(&ix->sh->waits, 1);

    ctx->state = NGX_HTTP_FWH_WAITING;
    ctx->timeout.handler = ngx_http_fwh_wait_timeout;
    ctx->timeout.data = ctx;
    ctx->timeout.log = r->connection->log;
    ngx_add_timer(&ctx->timeout, mcf->store_timeout);

    r->main->blocked++;
    ctx->read_event_handler = r->read_event_handler;
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_fwh_wait_handler;

    return NGX_AGAIN;
}


/* a 503 for the store: header_mode's status, with Retry-After */
static ngx_int_t
ngx_http_fwh_unavailable(ngx_http_request_t *r, ngx_http_fwh_index_t *ix,
    ngx_uint_t header_mode)
{
    ngx_table_elt_t  *h;

    if (!header_mode) {
        return NGX_DECLINED;
    }

    (void) ngx_atomic_fetch_add(&ix->sh->unavailable, 1);

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif
    ngx_str_set(&h->key, "Retry-After");
    ngx_str_set(&h->value, NGX_HTTP_FWH_RETRY_AFTER);

    return NGX_HTTP_SERVICE_UNAVAILABLE;
}


/* the hook */

ngx_int_t
ngx_http_fwh_route(ngx_http_request_t *r, ngx_uint_t header_mode,
    ngx_str_t *ns, ngx_str_t *sandbox, ngx_uint_t *port,
    ngx_http_fwh_row_t *found, ngx_str_t *canonical)
{
    int                         err;
    size_t                      len, host_len, i;
    ngx_uint_t                  scoped;
    u_char                      key[NGX_HTTP_FWH_KEY_MAX];
    const char                 *host;
    ngx_int_t                   rc;
    ngx_http_fwh_row_t          row;
    ngx_http_fwh_index_t       *ix;
    ngx_http_fwh_main_conf_t   *mcf;
    struct fw_hostname_parsed   p;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_hostnames_module);

    if (mcf->domains == NULL) {
        return NGX_DECLINED;
    }

    /* a scope the client names itself routes, unless the host names an
     * exposed service: then it is that service's credential */
    scoped = ngx_http_fastwall_find_header(&r->headers_in.headers,
                                           "OpenSandbox-Ingress-To")
             || ngx_http_fastwall_find_header(&r->headers_in.headers,
                                              "OPEN-SANDBOX-INGRESS");

    /* nginx keeps Host there, or the HTTP/2 :authority when there is no
     * Host */
    host = fw_hostname_request_host(
               r->headers_in.host ? (const char *) r->headers_in.host->value.data
                                  : NULL,
               r->headers_in.host ? r->headers_in.host->value.len : 0,
               NULL, 0, &host_len);
    if (host == NULL) {
        return NGX_DECLINED;
    }

    err = fw_hostname_parse(mcf->domains, mcf->routing_name.len != 0, host,
                            host_len, &p);

    if (err == -FW_HOSTNAME_E_NO_DOMAIN || err == -FW_HOSTNAME_E_HOST) {
        return NGX_DECLINED;
    }

    if (err) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: host \"%*s\" under a service "
                      "domain is no service host: %s", host_len, host,
                      fw_hostname_strerror(err));
        return (header_mode && !scoped) ? NGX_HTTP_NOT_FOUND : NGX_DECLINED;
    }

    len = (p.kind == FW_HOSTNAME_HASHED)
          ? ngx_http_fwh_key_hashed(key, p.label)
          : ngx_http_fwh_key_readable(key, &p.target);

    ix = mcf->shm_zone->data;

    rc = ngx_http_fwh_lookup(ix, key, len, &row);

    if (rc == NGX_DECLINED) {
        /* the store first: another gateway may have exposed it since */
        rc = ngx_http_fwh_miss(r, mcf, key, len);

        switch (rc) {

        case NGX_OK:
            rc = ngx_http_fwh_lookup(ix, key, len, &row);
            if (rc == NGX_DECLINED) {
                ngx_http_fwh_miss_add(mcf, key, len);
            }
            break;

        case NGX_DECLINED:
            break;

        case NGX_HTTP_SERVICE_UNAVAILABLE:
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fastwall ingress: host \"%*s\": not in the index "
                          "and the service store did not answer",
                          host_len, host);
            return ngx_http_fwh_unavailable(r, ix, header_mode);

        default:
            /* NGX_AGAIN, NGX_ERROR */
            return rc;
        }
    }

    if (rc != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall ingress: no exposed service has the host "
                      "\"%*s\"", host_len, host);
        return (header_mode && !scoped) ? NGX_HTTP_NOT_FOUND : NGX_DECLINED;
    }

    ns->len = ngx_strlen(row.target.workspace);
    sandbox->len = ngx_strlen(row.target.sandbox);

    ns->data = ngx_pnalloc(r->pool, ns->len + sandbox->len);
    if (ns->data == NULL) {
        return NGX_ERROR;
    }

    sandbox->data = ns->data + ns->len;
    ngx_memcpy(ns->data, row.target.workspace, ns->len);
    ngx_memcpy(sandbox->data, row.target.sandbox, sandbox->len);
    *port = row.port;
    *found = row;

    /* the host a service cookie is bound to: as parsed, without port */
    for (i = 0; i < host_len && host[i] != ':'; i++) { /* void */ }

    canonical->data = ngx_pnalloc(r->pool, i);
    if (canonical->data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(canonical->data, (u_char *) host, i);
    canonical->len = i;

    return NGX_OK;
}


void
ngx_http_fwh_count(ngx_http_request_t *r, ngx_uint_t *services,
    ngx_uint_t *public)
{
    ngx_queue_t               *q;
    ngx_http_fwh_node_t       *n;
    ngx_http_fwh_index_t      *ix;
    ngx_http_fwh_main_conf_t  *mcf;

    *services = 0;
    *public = 0;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_hostnames_module);
    if (mcf->domains == NULL) {
        return;
    }

    ix = mcf->shm_zone->data;

    ngx_shmtx_lock(&ix->shpool->mutex);

    for (q = ngx_queue_head(&ix->sh->all);
         q != ngx_queue_sentinel(&ix->sh->all);
         q = ngx_queue_next(q))
    {
        n = ngx_queue_data(q, ngx_http_fwh_node_t, all);
        if (n->data[0] == 'r') {
            (*services)++;
            *public += n->row.public;
        }
    }

    ngx_shmtx_unlock(&ix->shpool->mutex);
}


/* admin API */

static ngx_int_t
ngx_http_fwh_is_local(ngx_connection_t *c)
{
    struct sockaddr_in   *sin;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6  *sin6;
#endif

    if (ngx_connection_local_sockaddr(c, NULL, 0) != NGX_OK) {
        return 0;
    }

    switch (c->local_sockaddr->sa_family) {

#if (NGX_HAVE_UNIX_DOMAIN)
    case AF_UNIX:
        return 1;
#endif

#if (NGX_HAVE_INET6)
    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) c->local_sockaddr;
        return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)
               || (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)
                   && sin6->sin6_addr.s6_addr[12] == 127);
#endif

    case AF_INET:
        sin = (struct sockaddr_in *) c->local_sockaddr;
        return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;

    default:
        return 0;
    }
}


static ngx_int_t
ngx_http_fwh_send(ngx_http_request_t *r, ngx_uint_t status, u_char *body,
    size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    if (r->headers_out.content_type.len == 0) {
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    if (len == 0) {
        r->header_only = 1;
    }

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_fwh_error(ngx_http_request_t *r, ngx_uint_t status, const char *fmt,
    ...)
{
    u_char   *p, *last;
    va_list   args;

    p = ngx_pnalloc(r->pool, 512);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    last = p + 512 - 3;

    /* the text holds checked names and nginx's own words: no quoting */
    r->headers_out.content_length_n = 0;
    va_start(args, fmt);
    last = ngx_vslprintf(ngx_cpymem(p, "{\"error\":\"", 10), last, fmt, args);
    va_end(args);
    last = ngx_cpymem(last, "\"}\n", 3);

    return ngx_http_fwh_send(r, status, p, last - p);
}


/* {"workspace":...,"host":...} of one service, into p */
static u_char *
ngx_http_fwh_json(u_char *p, ngx_http_fwh_main_conf_t *mcf,
    ngx_http_fwh_row_t *row)
{
    char  readable[FW_HOSTNAME_READABLE_MAX];

    (void) fw_hostname_readable(&row->target, readable, sizeof(readable));

    p = ngx_sprintf(p, "{\"workspace\":\"%s\",\"sandbox\":\"%s\","
                    "\"service\":\"%s\",\"port\":%ui,\"label\":\"%s\","
                    "\"host\":\"%s.%s\",\"readable_host\":\"%s.%s\","
                    "\"public\":%s}\n",
                    row->target.workspace, row->target.sandbox,
                    row->target.service, row->port, row->label,
                    row->label[0] ? row->label : readable,
                    mcf->domains->d[0].name, readable,
                    mcf->domains->d[0].name, row->public ? "true" : "false");

    return p;
}


#define NGX_HTTP_FWH_JSON_MAX  (180 + 5 * FW_HOSTNAME_READABLE_MAX            \
                                + 2 * FW_HOSTNAME_DOMAIN_MAX)


/* "/services/WS/SB[/SVC]": the names, checked */
static ngx_int_t
ngx_http_fwh_admin_target(ngx_http_request_t *r, ngx_str_t *rest,
    struct fw_hostname_target *t)
{
    u_char      *p, *end, *start;
    ngx_str_t    part[4];
    ngx_uint_t   n;

    p = rest->data;
    end = p + rest->len;
    n = 0;

    while (p < end && n < 4) {
        if (*p++ != '/') {
            return NGX_ERROR;
        }

        start = p;
        while (p < end && *p != '/') {
            p++;
        }

        part[n].data = start;
        part[n].len = p - start;
        n++;
    }

    if (p != end || n < 2 || n > 3) {
        return NGX_ERROR;
    }

    for (ngx_uint_t i = 0; i < n; i++) {
        if (fw_hostname_name_ok((const char *) part[i].data, part[i].len)
            != 0)
        {
            return NGX_DECLINED;
        }
    }

    ngx_memzero(t, sizeof(*t));
    ngx_memcpy(t->workspace, part[0].data, part[0].len);
    ngx_memcpy(t->sandbox, part[1].data, part[1].len);

    if (n == 3) {
        ngx_memcpy(t->service, part[2].data, part[2].len);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwh_admin_list(ngx_http_request_t *r, ngx_http_fwh_index_t *ix)
{
    u_char               *body, *p;
    ngx_uint_t            count;
    ngx_queue_t          *q;
    ngx_http_fwh_node_t  *n;

    ngx_shmtx_lock(&ix->shpool->mutex);

    count = ix->sh->count;
    body = ngx_pnalloc(r->pool, count * NGX_HTTP_FWH_JSON_MAX + 1);
    if (body == NULL) {
        ngx_shmtx_unlock(&ix->shpool->mutex);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = body;

    /* one line per service: its readable key */
    for (q = ngx_queue_head(&ix->sh->all);
         q != ngx_queue_sentinel(&ix->sh->all);
         q = ngx_queue_next(q))
    {
        n = ngx_queue_data(q, ngx_http_fwh_node_t, all);
        if (n->data[0] == 'r') {
            p = ngx_http_fwh_json(p, ix->mcf, &n->row);
        }
    }

    ngx_shmtx_unlock(&ix->shpool->mutex);

    return ngx_http_fwh_send(r, NGX_HTTP_OK, body, p - body);
}


/*
 * The admin API's store calls are jobs too: the handler posts one and
 * returns NGX_DONE (the request counted once more), the job's done()
 * answers, or posts the next job of the same request.
 */

static ngx_int_t
ngx_http_fwh_admin_post(ngx_http_request_t *r, ngx_uint_t op,
    ngx_http_fwh_row_t *row, ngx_http_fwh_job_done_pt done)
{
    ngx_http_fwh_job_t        *job;
    ngx_http_fwh_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_hostnames_module);

    job = ngx_http_fwh_job_create(mcf, op, done, r);
    if (job == NULL) {
        return NGX_ERROR;
    }

    job->row = *row;
    ngx_http_fwh_job_post(job);

    return NGX_OK;
}


/* the answer of a job's request, and what nginx has posted meanwhile */
static void
ngx_http_fwh_admin_finalize(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_connection_t  *c;

    c = r->connection;

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* NGX_OK: the label is free here or row's own; NGX_DECLINED: another
 * target holds it (*other; all empty when 2+ stored services share it) */
static ngx_int_t
ngx_http_fwh_label_holder(ngx_http_fwh_index_t *ix, ngx_http_fwh_row_t *row,
    struct fw_hostname_target *other)
{
    size_t                len;
    u_char                key[NGX_HTTP_FWH_KEY_MAX];
    ngx_int_t             rc;
    ngx_http_fwh_node_t  *n;

    len = ngx_http_fwh_key_hashed(key, row->label);
    rc = NGX_OK;

    ngx_shmtx_lock(&ix->shpool->mutex);
    n = ngx_http_fwh_index_find(ix, key, len);
    if (n && ngx_memcmp(&n->row.target, &row->target, sizeof(row->target))
             != 0)
    {
        *other = n->row.target;
        rc = NGX_DECLINED;
    }
    ngx_shmtx_unlock(&ix->shpool->mutex);

    return rc;
}


static ngx_int_t
ngx_http_fwh_collision(ngx_http_request_t *r, ngx_http_fwh_row_t *row,
    struct fw_hostname_target *other)
{
    struct fw_hostname_target  *t = &row->target;

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "fastwall ingress: expose of %s/%s/%s refused: "
                  "label \"%s\" is %s/%s/%s's", t->workspace,
                  t->sandbox, t->service, row->label,
                  other->workspace, other->sandbox, other->service);

    if (other->workspace[0] == '\0') {
        return ngx_http_fwh_error(r, NGX_HTTP_CONFLICT,
                                  "hostname label collision: %s is already "
                                  "several services' in the store; nothing "
                                  "was stored", row->label);
    }

    return ngx_http_fwh_error(r, NGX_HTTP_CONFLICT,
                              "hostname label collision: %s is "
                              "already %s/%s/%s; nothing was stored",
                              row->label, other->workspace,
                              other->sandbox, other->service);
}


static void
ngx_http_fwh_expose_put_done(ngx_http_fwh_job_t *job)
{
    u_char                *body, *p;
    ngx_int_t              rc;
    ngx_http_request_t    *r = job->data;
    ngx_http_fwh_row_t    *row = &job->row;
    ngx_http_fwh_index_t  *ix;

    ix = job->mcf->shm_zone->data;

    if (job->rc == NGX_DECLINED) {
        /* another gateway stored the label first: learn whose it is */
        (void) ngx_http_fwh_read_start(job->mcf);
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_CONFLICT,
                               "hostname label collision: %s is already "
                               "another service's in the store; nothing "
                               "was stored", row->label));
        return;
    }

    if (job->rc != NGX_OK) {
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the service store failed: see the "
                               "error log"));
        return;
    }

    ngx_shmtx_lock(&ix->shpool->mutex);
    rc = (ix->gen == ix->sh->gen) ? ngx_http_fwh_index_put(ix, row) : NGX_OK;
    ngx_shmtx_unlock(&ix->shpool->mutex);

    if (rc != NGX_OK) {
        /* stored: a refresh after the next miss finds it again */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall ingress: service zone full, %s/%s/%s "
                      "stored but not indexed", row->target.workspace,
                      row->target.sandbox, row->target.service);
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fastwall ingress: exposed %s/%s/%s port %ui label \"%s\"%s",
                  row->target.workspace, row->target.sandbox,
                  row->target.service, row->port, row->label,
                  row->public ? ", public" : "");

    body = ngx_pnalloc(r->pool, NGX_HTTP_FWH_JSON_MAX);
    if (body == NULL) {
        ngx_http_fwh_admin_finalize(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    p = ngx_http_fwh_json(body, job->mcf, row);

    ngx_http_fwh_admin_finalize(r,
                                ngx_http_fwh_send(r, NGX_HTTP_OK, body,
                                                  p - body));
}


/* the index was read again for a label it gave another target */
static void
ngx_http_fwh_expose_read_done(ngx_http_fwh_job_t *job)
{
    ngx_http_request_t        *r = job->data;
    ngx_http_fwh_index_t      *ix;
    struct fw_hostname_target  other;

    ix = job->mcf->shm_zone->data;

    if (job->rc != NGX_OK) {
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the service store is unreachable"));
        return;
    }

    ngx_http_fwh_apply(ix, &job->rows, r->connection->log);

    if (ngx_http_fwh_label_holder(ix, &job->row, &other) != NGX_OK) {
        ngx_http_fwh_admin_finalize(r,
                                    ngx_http_fwh_collision(r, &job->row,
                                                           &other));
        return;
    }

    if (ngx_http_fwh_admin_post(r, NGX_HTTP_FWH_JOB_PUT, &job->row,
                                ngx_http_fwh_expose_put_done)
        != NGX_OK)
    {
        ngx_http_fwh_admin_finalize(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
    }
}


static ngx_int_t
ngx_http_fwh_admin_expose(ngx_http_request_t *r, ngx_http_fwh_index_t *ix,
    struct fw_hostname_target *t)
{
    ngx_int_t                  port;
    ngx_str_t                  arg;
    ngx_http_fwh_row_t         row;
    ngx_http_fwh_main_conf_t  *mcf;
    ngx_http_fwh_job_done_pt   done;
    struct fw_hostname_target  other;

    mcf = ix->mcf;

    if (ngx_http_arg(r, (u_char *) "port", 4, &arg) != NGX_OK) {
        return ngx_http_fwh_error(r, NGX_HTTP_BAD_REQUEST,
                                  "expose needs ?port=PORT");
    }

    port = ngx_atoi(arg.data, arg.len);
    if (port < 1 || port > 65535 || arg.data[0] == '0') {
        return ngx_http_fwh_error(r, NGX_HTTP_BAD_REQUEST,
                                  "port is not decimal 1-65535");
    }

    if (port == FW_POLICY_PORT) {
        return ngx_http_fwh_error(r, NGX_HTTP_BAD_REQUEST,
                                  "port " FW_POLICY_PORT_STR " is the policy port, which "
                                  "carries no traffic");
    }

    ngx_memzero(&row, sizeof(row));
    row.target = *t;
    row.port = port;
    done = ngx_http_fwh_expose_put_done;

    /* public: served without a credential; only when asked for */
    if (ngx_http_arg(r, (u_char *) "public", 6, &arg) == NGX_OK) {
        if (arg.len == 4 && ngx_strncmp(arg.data, "true", 4) == 0) {
            row.public = 1;

        } else if (arg.len != 5 || ngx_strncmp(arg.data, "false", 5) != 0) {
            return ngx_http_fwh_error(r, NGX_HTTP_BAD_REQUEST,
                                      "public is true or false");
        }
    }

    if (mcf->routing_name.len) {
        ngx_memcpy(row.routing_name, mcf->routing_name.data,
                   mcf->routing_name.len);
        (void) fw_hostname_hash((const char *) mcf->routing_name.data,
                                mcf->routing_name.len, t, row.label);

        /* a label another target holds: refused before anything is
         * written. The store decides: a holder another gateway deleted
         * is still in this index until a refresh, so read it first */
        if (ngx_http_fwh_label_holder(ix, &row, &other) != NGX_OK) {
            if (ngx_http_fwh_admin_post(r, NGX_HTTP_FWH_JOB_LIST, &row,
                                        ngx_http_fwh_expose_read_done)
                != NGX_OK)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            r->main->count++;
            return NGX_DONE;
        }
    }

    if (ngx_http_fwh_admin_post(r, NGX_HTTP_FWH_JOB_PUT, &row, done)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->main->count++;
    return NGX_DONE;
}


static void
ngx_http_fwh_delete_done(ngx_http_fwh_job_t *job)
{
    ngx_http_request_t         *r = job->data;
    ngx_http_fwh_index_t       *ix;
    struct fw_hostname_target  *t = &job->row.target;

    ix = job->mcf->shm_zone->data;

    if (job->rc == NGX_ERROR) {
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the service store failed: see the "
                               "error log"));
        return;
    }

    ngx_shmtx_lock(&ix->shpool->mutex);
    if (ix->gen == ix->sh->gen) {
        ngx_http_fwh_index_del(ix, t);
    }
    ngx_shmtx_unlock(&ix->shpool->mutex);

    if (job->rc == NGX_DECLINED) {
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_NOT_FOUND,
                               "no exposed service %s/%s/%s",
                               t->workspace, t->sandbox, t->service));
        return;
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fastwall ingress: deleted %s/%s/%s", t->workspace,
                  t->sandbox, t->service);

    ngx_http_fwh_admin_finalize(r,
                                ngx_http_fwh_send(r, NGX_HTTP_NO_CONTENT,
                                                  NULL, 0));
}


/* drops every key of the sandbox's services; the caller locks */
static void
ngx_http_fwh_index_del_sandbox(ngx_http_fwh_index_t *ix,
    struct fw_hostname_target *t)
{
    ngx_queue_t                *q;
    ngx_http_fwh_node_t        *n;
    struct fw_hostname_target   victim;

    q = ngx_queue_head(&ix->sh->all);

    while (q != ngx_queue_sentinel(&ix->sh->all)) {
        n = ngx_queue_data(q, ngx_http_fwh_node_t, all);

        if (n->data[0] == 'r'
            && ngx_strcmp(n->row.target.workspace, t->workspace) == 0
            && ngx_strcmp(n->row.target.sandbox, t->sandbox) == 0)
        {
            /* its label's node may be the next one: start over */
            victim = n->row.target;
            ngx_http_fwh_index_del(ix, &victim);
            q = ngx_queue_head(&ix->sh->all);
            continue;
        }

        q = ngx_queue_next(q);
    }
}


static void
ngx_http_fwh_delete_sandbox_done(ngx_http_fwh_job_t *job)
{
    u_char                     *body, *p;
    ngx_http_request_t         *r = job->data;
    ngx_http_fwh_index_t       *ix;
    struct fw_hostname_target  *t = &job->row.target;

    ix = job->mcf->shm_zone->data;

    if (job->rc != NGX_OK) {
        ngx_http_fwh_admin_finalize(r,
            ngx_http_fwh_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                               "the service store failed: see the "
                               "error log"));
        return;
    }

    ngx_shmtx_lock(&ix->shpool->mutex);
    if (ix->gen == ix->sh->gen) {
        ngx_http_fwh_index_del_sandbox(ix, t);
    }
    ngx_shmtx_unlock(&ix->shpool->mutex);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fastwall ingress: deleted the %ui services of %s/%s",
                  job->deleted, t->workspace, t->sandbox);

    body = ngx_pnalloc(r->pool, 64);
    if (body == NULL) {
        ngx_http_fwh_admin_finalize(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    p = ngx_sprintf(body, "{\"deleted\":%ui}\n", job->deleted);

    ngx_http_fwh_admin_finalize(r,
                                ngx_http_fwh_send(r, NGX_HTTP_OK, body,
                                                  p - body));
}


static ngx_int_t
ngx_http_fwh_admin_delete(ngx_http_request_t *r, ngx_http_fwh_index_t *ix,
    struct fw_hostname_target *t, ngx_uint_t whole_sandbox)
{
    ngx_http_fwh_row_t  row;

    ngx_memzero(&row, sizeof(row));
    row.target = *t;

    if (ngx_http_fwh_admin_post(r,
                                whole_sandbox
                                ? NGX_HTTP_FWH_JOB_DELETE_SANDBOX
                                : NGX_HTTP_FWH_JOB_DELETE,
                                &row,
                                whole_sandbox
                                ? ngx_http_fwh_delete_sandbox_done
                                : ngx_http_fwh_delete_done)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->main->count++;
    return NGX_DONE;
}


/* GET /services/metrics: Prometheus text of the index and its store */
static ngx_int_t
ngx_http_fwh_admin_metrics(ngx_http_request_t *r, ngx_http_fwh_index_t *ix)
{
    u_char                *body, *p;
    ngx_http_fwh_shctx_t  *sh = ix->sh;

    body = ngx_pnalloc(r->pool, 2048);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = ngx_sprintf(body,
        "# HELP fastwall_ingress_service_keys Keys in the service index.\n"
        "# TYPE fastwall_ingress_service_keys gauge\n"
        "fastwall_ingress_service_keys %ui\n"
        "# HELP fastwall_ingress_service_ambiguous_labels Labels two or "
        "more stored services share: none of them routes by it.\n"
        "# TYPE fastwall_ingress_service_ambiguous_labels gauge\n"
        "fastwall_ingress_service_ambiguous_labels %ui\n"
        "# HELP fastwall_ingress_service_store_reads_total Reads of the "
        "store by workers (misses, timer, expose).\n"
        "# TYPE fastwall_ingress_service_store_reads_total counter\n"
        "fastwall_ingress_service_store_reads_total %uA\n"
        "# HELP fastwall_ingress_service_store_errors_total Store calls "
        "by workers that failed.\n"
        "# TYPE fastwall_ingress_service_store_errors_total counter\n"
        "fastwall_ingress_service_store_errors_total{call=\"read\"} %uA\n"
        "fastwall_ingress_service_store_errors_total{call=\"write\"} %uA\n"
        "# HELP fastwall_ingress_service_misses_total Requests for a host "
        "the index lacked, by what answered them.\n"
        "# TYPE fastwall_ingress_service_misses_total counter\n"
        "fastwall_ingress_service_misses_total{by=\"store\"} %uA\n"
        "fastwall_ingress_service_misses_total{by=\"miss_cache\"} %uA\n"
        "# HELP fastwall_ingress_service_unavailable_total Requests "
        "answered 503 because the store did not answer.\n"
        "# TYPE fastwall_ingress_service_unavailable_total counter\n"
        "fastwall_ingress_service_unavailable_total %uA\n",
        sh->count, sh->ambiguous, sh->reads, sh->read_errors,
        sh->write_errors, sh->waits, sh->miss_hits, sh->unavailable);

    ngx_str_set(&r->headers_out.content_type, "text/plain; version=0.0.4");

    return ngx_http_fwh_send(r, NGX_HTTP_OK, body, p - body);
}


/* the service admin API's credential, for listeners other than loopback */
static char *
ngx_http_fwh_admin_credential(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_fwh_main_conf_t *mcf = conf;

    return ngx_http_fastwall_read_secret(cf, cmd, &mcf->admin_credential);
}


static ngx_int_t
ngx_http_fwh_admin_handler(ngx_http_request_t *r)
{
    size_t                     len;
    u_char                     key[NGX_HTTP_FWH_KEY_MAX], *body, *p;
    ngx_int_t                  rc;
    ngx_str_t                  rest;
    ngx_http_fwh_row_t         row;
    ngx_http_fwh_index_t      *ix;
    ngx_uint_t                 whole_sandbox;
    ngx_http_fwh_main_conf_t  *mcf;
    struct fw_hostname_target  t;

    static ngx_str_t  prefix = ngx_string("/services");

    mcf = ngx_http_get_module_main_conf(r, ngx_http_fastwall_hostnames_module);

    /* loopback and unix sockets as before; any other listener only with
     * fastwall_ingress_service_admin_credential, and the credential */
    if (!ngx_http_fwh_is_local(r->connection)) {
        if (mcf->admin_credential.len == 0) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fastwall ingress: admin request on a listener "
                          "that is neither loopback nor a unix socket, "
                          "refused (no fastwall_ingress_service_admin_"
                          "credential)");
            return NGX_HTTP_FORBIDDEN;
        }

        if (!ngx_http_fastwall_bearer_ok(r, &mcf->admin_credential)) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "fastwall ingress: admin request without its "
                          "credential, refused");

            if (ngx_http_discard_request_body(r) != NGX_OK) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            r->headers_out.www_authenticate =
                ngx_list_push(&r->headers_out.headers);
            if (r->headers_out.www_authenticate == NULL) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            r->headers_out.www_authenticate->hash = 1;
            ngx_str_set(&r->headers_out.www_authenticate->key,
                        "WWW-Authenticate");
            ngx_str_set(&r->headers_out.www_authenticate->value,
                        "Bearer realm=\"fastwall service admin\"");

            return ngx_http_fwh_error(r, NGX_HTTP_UNAUTHORIZED,
                                      "credential required");
        }
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ix = mcf->shm_zone->data;

    if (r->uri.len < prefix.len
        || ngx_strncmp(r->uri.data, prefix.data, prefix.len) != 0)
    {
        return ngx_http_fwh_error(r, NGX_HTTP_NOT_FOUND,
                                  "the admin API is under /services");
    }

    rest.data = r->uri.data + prefix.len;
    rest.len = r->uri.len - prefix.len;

    if (rest.len == 0 || (rest.len == 1 && rest.data[0] == '/')) {
        if (r->method != NGX_HTTP_GET) {
            return ngx_http_fwh_error(r, NGX_HTTP_NOT_ALLOWED,
                                      "/services takes GET");
        }

        return ngx_http_fwh_admin_list(r, ix);
    }

    if (rest.len == 8 && ngx_strncmp(rest.data, "/metrics", 8) == 0) {
        if (r->method != NGX_HTTP_GET) {
            return ngx_http_fwh_error(r, NGX_HTTP_NOT_ALLOWED,
                                      "/services/metrics takes GET");
        }

        return ngx_http_fwh_admin_metrics(r, ix);
    }

    /* DELETE /services/WORKSPACE/SANDBOX/ *: all of the sandbox's */
    whole_sandbox = rest.len > 2 && rest.data[rest.len - 1] == '*'
                    && rest.data[rest.len - 2] == '/';
    if (whole_sandbox) {
        rest.len -= 2;
    }

    rc = ngx_http_fwh_admin_target(r, &rest, &t);

    if (rc == NGX_ERROR) {
        return ngx_http_fwh_error(r, NGX_HTTP_NOT_FOUND,
                                  "not /services/WORKSPACE/SANDBOX[/SERVICE]");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_fwh_error(r, NGX_HTTP_BAD_REQUEST,
                                  "a name is %s",
                                  fw_hostname_strerror(FW_HOSTNAME_E_NAME));
    }

    if (whole_sandbox) {
        if (r->method != NGX_HTTP_DELETE || t.service[0] != '\0') {
            return ngx_http_fwh_error(r, NGX_HTTP_NOT_ALLOWED,
                                      "/services/WORKSPACE/SANDBOX/* "
                                      "takes DELETE");
        }

        return ngx_http_fwh_admin_delete(r, ix, &t, 1);
    }

    switch (r->method) {

    case NGX_HTTP_PUT:
    case NGX_HTTP_POST:
        return ngx_http_fwh_admin_expose(r, ix, &t);

    case NGX_HTTP_DELETE:
        return ngx_http_fwh_admin_delete(r, ix, &t, 0);

    case NGX_HTTP_GET:
        len = ngx_http_fwh_key_readable(key, &t);
        if (ngx_http_fwh_lookup(ix, key, len, &row) != NGX_OK) {
            return ngx_http_fwh_error(r, NGX_HTTP_NOT_FOUND,
                                      "no exposed service %s/%s/%s",
                                      t.workspace, t.sandbox, t.service);
        }

        body = ngx_pnalloc(r->pool, NGX_HTTP_FWH_JSON_MAX);
        if (body == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        p = ngx_http_fwh_json(body, mcf, &row);

        return ngx_http_fwh_send(r, NGX_HTTP_OK, body, p - body);

    default:
        return ngx_http_fwh_error(r, NGX_HTTP_NOT_ALLOWED,
                                  "a service takes PUT, DELETE or GET");
    }
}


/* the zone: made in the master, hydrated there before workers start */

static ngx_int_t
ngx_http_fwh_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fwh_index_t  *oix = data;

    ngx_int_t              rc;
    ngx_uint_t             fresh;
    ngx_pool_t            *pool;
    ngx_http_fwh_index_t  *ix;
    ngx_http_fwh_store_t  *st;

    ix = shm_zone->data;

    if (oix) {
        ix->sh = oix->sh;
        ix->shpool = oix->shpool;

    } else {
        ix->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
        ix->sh = ngx_http_fastwall_zone_context(shm_zone,
                                                sizeof(ngx_http_fwh_shctx_t),
                                                "fastwall_ingress service",
                                                &fresh);
        if (ix->sh == NULL) {
            return NGX_ERROR;
        }

        if (fresh) {
            ngx_rbtree_init(&ix->sh->rbtree, &ix->sh->sentinel,
                            ngx_str_rbtree_insert_value);
            ngx_queue_init(&ix->sh->all);
        }
    }

    if (ngx_test_config) {
        return NGX_OK;
    }

    ngx_shmtx_lock(&ix->shpool->mutex);
    ix->gen = ++ix->sh->gen;
    ngx_shmtx_unlock(&ix->shpool->mutex);

    /* every start and reload: the routing name may have changed, and
     * with it every label */
    st = ngx_http_fwh_store_open(ix->mcf->store_kind,
                                 (const char *) ix->mcf->store_arg.data,
                                 shm_zone->shm.log);
    if (st == NULL) {
        return NGX_ERROR;
    }

    pool = ngx_create_pool(NGX_DEFAULT_POOL_SIZE, shm_zone->shm.log);
    if (pool == NULL) {
        ngx_http_fwh_store_close(st);
        return NGX_ERROR;
    }

    rc = ngx_http_fwh_refresh(ix, st, pool, shm_zone->shm.log);

    /* a connection is not carried across fork(): workers open their own */
    ngx_http_fwh_store_close(st);
    ngx_destroy_pool(pool);

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "fastwall ingress: service index hydrated from the store: "
                  "%ui keys, routing name \"%V\"", ix->sh->count,
                  &ix->mcf->routing_name);

    return NGX_OK;
}


/*
 * With fastwall_ingress_service_refresh, worker 0 reads the store on a
 * timer: a delete through another gateway sharing the store then stops
 * routing here within that time, not only at the next miss.
 */

static void
ngx_http_fwh_refresh_done(ngx_http_fwh_job_t *job)
{
    if (job->rc == NGX_OK) {
        ngx_http_fwh_apply(job->mcf->shm_zone->data, &job->rows,
                           ngx_cycle->log);
    }

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(&ngx_http_fwh_refresh_event, job->mcf->refresh);
    }
}


static void
ngx_http_fwh_refresh_handler(ngx_event_t *ev)
{
    ngx_http_fwh_job_t        *job;
    ngx_http_fwh_main_conf_t  *mcf = ev->data;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    /* the next tick is set when this read is done: they never pile up */
    job = ngx_http_fwh_job_create(mcf, NGX_HTTP_FWH_JOB_LIST,
                                  ngx_http_fwh_refresh_done, NULL);
    if (job == NULL) {
        ngx_add_timer(ev, mcf->refresh);
        return;
    }

    ngx_http_fwh_job_post(job);
}


static ngx_int_t
ngx_http_fwh_init_process(ngx_cycle_t *cycle)
{
    ngx_http_fwh_main_conf_t  *mcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    mcf = ngx_http_cycle_get_module_main_conf(cycle,
                                              ngx_http_fastwall_hostnames_module);

    if (mcf == NULL || mcf->domains == NULL) {
        return NGX_OK;
    }

    ngx_queue_init(&ngx_http_fwh_jobs);
    ngx_queue_init(&ngx_http_fwh_waiting);
    ngx_queue_init(&ngx_http_fwh_reading);

    if (mcf->miss_entries > 0) {
        ngx_http_fwh_misses = ngx_pcalloc(cycle->pool,
                                          mcf->miss_entries
                                          * sizeof(ngx_http_fwh_miss_t));
        if (ngx_http_fwh_misses == NULL) {
            return NGX_ERROR;
        }
    }

    if (ngx_worker != 0 || mcf->refresh == 0) {
        return NGX_OK;
    }

    ngx_http_fwh_refresh_event.handler = ngx_http_fwh_refresh_handler;
    ngx_http_fwh_refresh_event.data = mcf;
    ngx_http_fwh_refresh_event.log = cycle->log;
    /* a pending refresh does not hold up a graceful shutdown */
    ngx_http_fwh_refresh_event.cancelable = 1;

    ngx_add_timer(&ngx_http_fwh_refresh_event, mcf->refresh);

    return NGX_OK;
}


/* configuration */

static char *
ngx_http_fwh_service_hosts(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwh_main_conf_t *mcf = conf;

    int          err;
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (mcf->domains != NULL) {
        return "is duplicate";
    }

    mcf->domains = ngx_pcalloc(cf->pool, sizeof(struct fw_hostname_domains));
    if (mcf->domains == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        err = fw_hostname_domains_add_wildcard(mcf->domains,
                                               (const char *) value[i].data,
                                               value[i].len);
        if (err) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "fastwall_ingress_service_hosts: \"%V\": %s",
                               &value[i], fw_hostname_strerror(err));
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* a routing name as a directive's argument, refused in its name */
static ngx_int_t
ngx_http_fwh_check_routing_name(ngx_conf_t *cf, ngx_command_t *cmd,
    ngx_str_t *name)
{
    if (fw_hostname_routing_name_ok((const char *) name->data, name->len)
        == 0)
    {
        return NGX_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: \"%V\": %s", &cmd->name,
                       name, fw_hostname_strerror(FW_HOSTNAME_E_ROUTING_NAME));

    return NGX_ERROR;
}


static char *
ngx_http_fwh_routing_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwh_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->routing_conf.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_fwh_check_routing_name(cf, cmd, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    mcf->routing_conf = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_fwh_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwh_main_conf_t *mcf = conf;

    ngx_str_t  *value, arg;

    if (mcf->store_kind) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len > 7 && ngx_strncmp(value[1].data, "sqlite:", 7) == 0) {
        arg.data = value[1].data + 7;
        arg.len = value[1].len - 7;

        /* relative to the prefix; the result is NUL-terminated */
        if (ngx_conf_full_name(cf->cycle, &arg, 1) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        mcf->store_kind = NGX_HTTP_FWH_SQLITE;
        mcf->store_arg = arg;
        return NGX_CONF_OK;
    }

    if (value[1].len > 11
        && ngx_strncmp(value[1].data, "postgresql:", 11) == 0)
    {
        /* value[] strings are NUL-terminated by the parser */
        mcf->store_kind = NGX_HTTP_FWH_POSTGRESQL;
        mcf->store_arg.data = value[1].data + 11;
        mcf->store_arg.len = value[1].len - 11;
        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "fastwall_ingress_service_store: \"%V\" is neither "
                       "sqlite:FILE nor postgresql:CONNINFO", &value[1]);

    return NGX_CONF_ERROR;
}


static char *
ngx_http_fwh_admin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fwh_loc_conf_t *lcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->admin != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    lcf->admin = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fwh_admin_handler;

    return NGX_CONF_OK;
}


static void *
ngx_fastwall_routing_create_conf(ngx_cycle_t *cycle)
{
    return ngx_pcalloc(cycle->pool, sizeof(ngx_fastwall_routing_conf_t));
}


/*
 * Only on the command line: a routing name in the file belongs in the
 * http block (fastwall_ingress_routing_name), below the environment.
 * nginx parses -g with no file behind it.
 */
static char *
ngx_fastwall_routing_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_fastwall_routing_conf_t *rcf = conf;

    ngx_str_t  *value;

    if (cf->conf_file->file.fd != NGX_INVALID_FILE) {
        return "is for the command line (nginx -g); in the configuration "
               "file, use \"fastwall_ingress_routing_name\" in the http "
               "block";
    }

    if (rcf->name.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_fwh_check_routing_name(cf, cmd, &value[1]) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    rcf->name = value[1];

    return NGX_CONF_OK;
}


static void *
ngx_http_fwh_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_fwh_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwh_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    mcf->zone_size = NGX_CONF_UNSET_SIZE;
    mcf->refresh = NGX_CONF_UNSET_MSEC;
    mcf->store_timeout = NGX_CONF_UNSET_MSEC;
    mcf->miss_entries = NGX_CONF_UNSET;
    mcf->miss_ttl = NGX_CONF_UNSET_MSEC;

    return mcf;
}


static char *
ngx_http_fwh_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_fwh_main_conf_t *mcf = conf;

    char                         *env;
    size_t                        len;
    ngx_http_fwh_index_t         *ix;
    ngx_fastwall_routing_conf_t  *rcf;

    if (mcf->domains == NULL) {
        if (mcf->routing_conf.len || mcf->store_kind
            || mcf->zone_size != NGX_CONF_UNSET_SIZE
            || mcf->refresh != NGX_CONF_UNSET_MSEC
            || mcf->store_timeout != NGX_CONF_UNSET_MSEC
            || mcf->miss_entries != NGX_CONF_UNSET
            || mcf->miss_ttl != NGX_CONF_UNSET_MSEC)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the service hostname directives need "
                               "\"fastwall_ingress_service_hosts\"");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    /*
     * The command line, then the environment (empty = unset), then the
     * configuration file. The core module's configuration exists once the
     * .so is loaded, which is before any http block.
     */
    mcf->routing_name = mcf->routing_conf;

    rcf = (ngx_fastwall_routing_conf_t *)
              ngx_get_conf(cf->cycle->conf_ctx, ngx_fastwall_routing_module);
    env = getenv(NGX_HTTP_FWH_ROUTING_ENV);

    if (env && *env) {
        len = ngx_strlen(env);

        /* refused even when the command line wins: bad input is an error */
        if (fw_hostname_routing_name_ok(env, len) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               NGX_HTTP_FWH_ROUTING_ENV " \"%s\": %s", env,
                               fw_hostname_strerror(
                                   FW_HOSTNAME_E_ROUTING_NAME));
            return NGX_CONF_ERROR;
        }

        mcf->routing_name.data = ngx_pnalloc(cf->pool, len);
        if (mcf->routing_name.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(mcf->routing_name.data, env, len);
        mcf->routing_name.len = len;
    }

    if (rcf && rcf->name.len) {
        mcf->routing_name = rcf->name;
    }

    if (mcf->store_kind == 0) {
        mcf->store_kind = NGX_HTTP_FWH_SQLITE;
        ngx_str_set(&mcf->store_arg, NGX_HTTP_FWH_DEFAULT_STORE);
    }

    if (mcf->zone_size == NGX_CONF_UNSET_SIZE) {
        mcf->zone_size = 1024 * 1024;
    }

    ngx_conf_init_msec_value(mcf->refresh, 0);
    ngx_conf_init_msec_value(mcf->store_timeout, 5000);
    ngx_conf_init_value(mcf->miss_entries, 1024);
    ngx_conf_init_msec_value(mcf->miss_ttl, 1000);

    if (mcf->store_timeout == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_service_store_timeout\" "
                           "must be more than 0");
        return NGX_CONF_ERROR;
    }

    if (mcf->miss_ttl == 0) {
        mcf->miss_entries = 0;
    }

#if (NGX_THREADS)
    /* nginx's pool "default" (32 threads unless "thread_pool default"
     * says otherwise); a worker uses one thread of it at a time */
    mcf->thread_pool = ngx_thread_pool_add(cf, NULL);
    if (mcf->thread_pool == NULL) {
        return NGX_CONF_ERROR;
    }
#endif

    mcf->shm_zone = ngx_http_fastwall_zone_add(cf, "fastwall_ingress_services",
                        mcf->zone_size, &ngx_http_fastwall_hostnames_module,
                        ngx_http_fwh_init_zone, sizeof(ngx_http_fwh_index_t));
    if (mcf->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    ix = mcf->shm_zone->data;
    ix->mcf = mcf;

    return NGX_CONF_OK;
}


static void *
ngx_http_fwh_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_fwh_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fwh_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    lcf->admin = NGX_CONF_UNSET;

    return lcf;
}


static char *
ngx_http_fwh_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fwh_loc_conf_t *conf = child;

    ngx_http_fwh_main_conf_t  *mcf;

    if (conf->admin != 1) {
        return NGX_CONF_OK;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf,
                                             ngx_http_fastwall_hostnames_module);

    if (mcf->domains == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fastwall_ingress_admin\" needs "
                           "\"fastwall_ingress_service_hosts\" in the http "
                           "block");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
