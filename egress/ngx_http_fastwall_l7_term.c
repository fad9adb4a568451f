/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy, TLS termination for credential
 * injection: `fastwall_l7_terminate on;` in an http server listening on
 * a unix socket with `ssl proxy_protocol`, which the stream server hands
 * the connections whose server name the subject's vault names
 * (`fastwall_l7_terminate_to`), and `upstream { fastwall_l7_origin; }`,
 * the balancer that sends each request to the connection's original
 * destination.
 *
 * The handshake: a ClientHello callback on the server's SSL_CTX, which
 * runs for every hello (one that offers a session too), checks the
 * connection's peer (the same uid, SO_PEERCRED), its PROXY line's sandbox
 * end in fastwall_l7_nat, the hello's server name against the names that
 * taught the original destination and against the vault, and sets the
 * session id context to a hash of {subject, destination, name}, so a
 * session resumes only for the same three. On a full handshake a
 * certificate callback serves a leaf for the name signed by
 * fastwall_l7_ca (minted, cached per worker). Anything else fails the
 * handshake (l7-no-cert).
 *
 * Each request: Host (or :authority) must be the server name, else 421
 * (l7-misdirected); then the vault's binding, if one matches, sets its
 * header (l7-injected). The balancer connects to the original destination
 * and keeps idle connections per worker by {address, port, server name}:
 * a connection is verified for one name and never serves another.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <bpf/bpf.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ngx_fastwall_l7.h"
#include "l7/hello.h"
#include "l7/pin.h"


/* leaves a worker keeps; one is minted again after a day (it is valid
 * for seven, or until the CA ends) */
#define NGX_HTTP_FASTWALL_L7_LEAVES      4096
#define NGX_HTTP_FASTWALL_L7_LEAF_DAYS   7
#define NGX_HTTP_FASTWALL_L7_LEAF_REUSE  86400

/* an idle upstream connection: closed after this long idle, after this
 * many requests or this long open (nginx's keepalive defaults) */
#define NGX_HTTP_FASTWALL_L7_IDLE        60000
#define NGX_HTTP_FASTWALL_L7_REQUESTS    1000
#define NGX_HTTP_FASTWALL_L7_LIFE        3600000

/* TLS sessions with origins a worker keeps for resumption, one per
 * {address, port, server name} in a slot its hash picks */
#define NGX_HTTP_FASTWALL_L7_SESSIONS    1024


typedef struct ngx_http_fastwall_l7_term_srv_conf_s
    ngx_http_fastwall_l7_term_srv_conf_t;


/* a kept upstream connection, and the key it may be reused by */
typedef struct {
    ngx_queue_t                            queue;
    ngx_http_fastwall_l7_term_srv_conf_t  *conf;
    ngx_connection_t                      *connection;
    socklen_t                              socklen;
    ngx_sockaddr_t                         sockaddr;
    size_t                                 sni_len;
    u_char                                 sni[FW_LEASE_NAME_SZ];
} ngx_http_fastwall_l7_idle_t;


/* a server's (terminate) and an upstream block's (origin, keepalive) */
struct ngx_http_fastwall_l7_term_srv_conf_s {
    ngx_flag_t                             terminate;
    ngx_flag_t                             origin;
    ngx_int_t                              keepalive;
    ngx_queue_t                            idle;     /* most recent first */
    ngx_queue_t                            free;
};


/* an origin's TLS session, resumed only for the same address, port and
 * server name: the name it was verified for */
typedef struct {
    SSL_SESSION                           *session;
    socklen_t                              socklen;
    ngx_sockaddr_t                         sockaddr;
    size_t                                 sni_len;
    u_char                                 sni[FW_LEASE_NAME_SZ];
} ngx_http_fastwall_l7_session_t;


/* a terminated connection's: made by the certificate callback */
typedef struct {
    ngx_fastwall_l7_peer_t                 peer;
    ngx_flag_t                             reported;  /* l7-pinned sent */
    ngx_flag_t                             certified; /* the leaf is set */
    ngx_flag_t                             injected;  /* l7-injected sent */
    uint64_t                               gen;       /* the vault's, seen */
    ngx_sockaddr_t                         origin;
    socklen_t                              origin_len;
    ngx_str_t                              upstream;
    u_char                                 upstream_text[FW_L7_UPSTREAM_MAX];
    ngx_str_t                              sni;
    char                                   sni_text[FW_LEASE_NAME_SZ];
} ngx_http_fastwall_l7_term_conn_t;


/* a request's */
typedef struct {
    ngx_http_fastwall_l7_term_conn_t      *tc;
    ngx_uint_t                             failed;   /* a reason, or 0 */
} ngx_http_fastwall_l7_term_ctx_t;


typedef struct {
    ngx_http_fastwall_l7_term_srv_conf_t  *conf;
    ngx_http_request_t                    *request;
    ngx_http_fastwall_l7_term_conn_t      *tc;
    ngx_http_fastwall_l7_term_ctx_t       *ctx;
} ngx_http_fastwall_l7_origin_peer_t;


/* a minted leaf in the worker's cache, keyed "subject name" */
typedef struct {
    ngx_str_node_t                         sn;
    ngx_queue_t                            queue;
    uint64_t                               generation;
    time_t                                 minted;
    X509                                  *cert;
    u_char                                 key[1];
} ngx_http_fastwall_l7_leaf_t;


static void *ngx_http_fastwall_l7_term_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_fastwall_l7_term_merge_srv_conf(ngx_conf_t *cf,
    void *parent, void *child);
static char *ngx_http_fastwall_l7_origin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_fastwall_l7_term_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_fastwall_l7_term_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_fastwall_l7_term_init_process(ngx_cycle_t *cycle);
static int ngx_http_fastwall_l7_term_hello(SSL *ssl, int *al, void *arg);
static int ngx_http_fastwall_l7_term_cert(SSL *ssl, void *arg);
static ngx_int_t ngx_http_fastwall_l7_term_access(ngx_http_request_t *r);
static ngx_int_t ngx_http_fastwall_l7_term_log(ngx_http_request_t *r);
static ngx_int_t ngx_http_fastwall_l7_sni_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_fastwall_l7_origin_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_fastwall_l7_origin_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_fastwall_l7_origin_get(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_fastwall_l7_origin_free(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);
static ngx_int_t ngx_http_fastwall_l7_origin_set_session(
    ngx_peer_connection_t *pc, void *data);
static void ngx_http_fastwall_l7_origin_save_session(
    ngx_peer_connection_t *pc, void *data);
static void ngx_http_fastwall_l7_idle_close_handler(ngx_event_t *ev);
static void ngx_http_fastwall_l7_idle_dummy_handler(ngx_event_t *ev);
static void ngx_http_fastwall_l7_idle_close(ngx_connection_t *c);


static ngx_command_t  ngx_http_fastwall_l7_term_commands[] = {

    { ngx_string("fastwall_l7_terminate"),
      NGX_HTTP_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_fastwall_l7_term_srv_conf_t, terminate),
      NULL },

    { ngx_string("fastwall_l7_origin"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_fastwall_l7_origin,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fastwall_l7_keepalive"),
      NGX_HTTP_UPS_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_fastwall_l7_term_srv_conf_t, keepalive),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fastwall_l7_term_module_ctx = {
    ngx_http_fastwall_l7_term_add_variables, /* preconfiguration */
    ngx_http_fastwall_l7_term_init,        /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_fastwall_l7_term_create_srv_conf, /* create server configuration */
    ngx_http_fastwall_l7_term_merge_srv_conf,  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_fastwall_l7_term_module = {
    NGX_MODULE_V1,
    &ngx_http_fastwall_l7_term_module_ctx, /* module context */
    ngx_http_fastwall_l7_term_commands,    /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_fastwall_l7_term_init_process, /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_fastwall_l7_term_vars[] = {

    { ngx_string("fastwall_l7_sni"), NULL,
      ngx_http_fastwall_l7_sni_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/* the terminated connection's state hangs off its SSL object, which an
 * HTTP/2 stream's connection shares */
static int  ngx_http_fastwall_l7_term_index = -1;

/* the worker's leaves and their one key */
static ngx_rbtree_t       ngx_http_fastwall_l7_leaves;
static ngx_rbtree_node_t  ngx_http_fastwall_l7_leaves_sentinel;
static ngx_queue_t        ngx_http_fastwall_l7_leaves_lru;
static ngx_uint_t         ngx_http_fastwall_l7_nleaves;
static EVP_PKEY          *ngx_http_fastwall_l7_leaf_key;

/* the worker's origin sessions (zero after the fork: each its own) */
static ngx_http_fastwall_l7_session_t
    ngx_http_fastwall_l7_sessions[NGX_HTTP_FASTWALL_L7_SESSIONS];


static void *
ngx_http_fastwall_l7_term_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_fastwall_l7_term_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fastwall_l7_term_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->terminate = NGX_CONF_UNSET;
    conf->keepalive = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_fastwall_l7_term_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_fastwall_l7_term_srv_conf_t  *prev = parent;
    ngx_http_fastwall_l7_term_srv_conf_t  *conf = child;

    ngx_conf_merge_value(conf->terminate, prev->terminate, 0);

    return NGX_CONF_OK;
}


static char *
ngx_http_fastwall_l7_origin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fastwall_l7_term_srv_conf_t  *tscf = conf;

    ngx_http_upstream_server_t    *us;
    ngx_http_upstream_srv_conf_t  *uscf;

    if (tscf->origin) {
        return "is duplicate";
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    /* nginx wants a server in an upstream block: this one has no
     * address, the balancer gives each request its own */
    us = ngx_array_push(uscf->servers);
    if (us == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(us, sizeof(ngx_http_upstream_server_t));
    ngx_str_set(&us->name, "fastwall_l7_origin");

    uscf->peer.init_upstream = ngx_http_fastwall_l7_origin_init;
    tscf->origin = 1;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_term_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_fastwall_l7_term_vars; v->name.len; v++) {
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
ngx_http_fastwall_l7_term_init(ngx_conf_t *cf)
{
    SSL_CTX                               *ctx;
    ngx_uint_t                             i, n;
    ngx_http_handler_pt                   *h;
    ngx_fastwall_l7_conf_t                *fcf;
    ngx_http_ssl_srv_conf_t               *sscf;
    ngx_http_core_srv_conf_t             **cscfp;
    ngx_http_core_main_conf_t             *cmcf;
    ngx_http_upstream_srv_conf_t         **uscfp;
    ngx_http_upstream_main_conf_t         *umcf;
    ngx_http_fastwall_l7_term_srv_conf_t  *tscf;

    /* idle connections are kept by the origin balancer alone */
    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->srv_conf == NULL) {
            continue;
        }

        tscf = ngx_http_conf_upstream_srv_conf(uscfp[i],
                                           ngx_http_fastwall_l7_term_module);

        if (tscf->keepalive != NGX_CONF_UNSET && !tscf->origin) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "fastwall_l7_keepalive needs fastwall_l7_origin in "
                          "the upstream \"%V\" in %s:%ui", &uscfp[i]->host,
                          uscfp[i]->file_name, uscfp[i]->line);
            return NGX_ERROR;
        }
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;
    fcf = ngx_fastwall_l7_conf(cf->cycle);
    n = 0;

    /* the ssl module made each server's SSL_CTX while merging, before
     * any postconfiguration */
    for (i = 0; i < cmcf->servers.nelts; i++) {
        tscf = ngx_http_conf_get_module_srv_conf(cscfp[i],
                                           ngx_http_fastwall_l7_term_module);

        if (!tscf->terminate) {
            continue;
        }

        sscf = ngx_http_conf_get_module_srv_conf(cscfp[i],
                                                 ngx_http_ssl_module);
        ctx = sscf->ssl.ctx;

        if (ctx == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "fastwall_l7_terminate needs \"listen ... ssl\" "
                          "and a (placeholder) ssl_certificate in the server "
                          "in %s:%ui", cscfp[i]->file_name, cscfp[i]->line);
            return NGX_ERROR;
        }

        if (fcf->ca_cert == NULL || !fcf->maps_set) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "fastwall_l7_terminate needs fastwall_l7_ca and "
                          "fastwall_l7_maps, given before the http block");
            return NGX_ERROR;
        }

        /* the checks on every hello (a resumed one too), the leaf on
         * every full handshake */
        SSL_CTX_set_client_hello_cb(ctx, ngx_http_fastwall_l7_term_hello,
                                    NULL);
        SSL_CTX_set_cert_cb(ctx, ngx_http_fastwall_l7_term_cert, NULL);

        n++;
    }

    if (n == 0) {
        return NGX_OK;
    }

    if (ngx_http_fastwall_l7_term_index == -1) {
        ngx_http_fastwall_l7_term_index = SSL_get_ex_new_index(0, NULL, NULL,
                                                               NULL, NULL);
        if (ngx_http_fastwall_l7_term_index == -1) {
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_get_ex_new_index() failed");
            return NGX_ERROR;
        }
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fastwall_l7_term_access;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fastwall_l7_term_log;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_term_init_process(ngx_cycle_t *cycle)
{
    ngx_rbtree_init(&ngx_http_fastwall_l7_leaves,
                    &ngx_http_fastwall_l7_leaves_sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_queue_init(&ngx_http_fastwall_l7_leaves_lru);
    ngx_http_fastwall_l7_nleaves = 0;

    return NGX_OK;
}


/* ---- the leaves ---- */

static ngx_int_t
ngx_http_fastwall_l7_add_ext(X509 *x, X509V3_CTX *v3, int nid,
    const char *value)
{
    X509_EXTENSION  *ext;

    ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
    if (ext == NULL) {
        return NGX_ERROR;
    }

    if (X509_add_ext(x, ext, -1) != 1) {
        X509_EXTENSION_free(ext);
        return NGX_ERROR;
    }

    X509_EXTENSION_free(ext);

    return NGX_OK;
}


/* a leaf for name, signed by the CA: SAN DNS:name, CN name (when it
 * fits), a random serial, valid from an hour ago for seven days (never
 * past the CA), a server's key usage, SHA-256 (an EdDSA CA: its own) */
static X509 *
ngx_http_fastwall_l7_mint(ngx_fastwall_l7_conf_t *fcf, ngx_log_t *log,
    const u_char *name, size_t len)
{
    int              id;
    X509            *x;
    BIGNUM          *bn;
    const EVP_MD    *md;
    X509_NAME       *subject;
    X509V3_CTX       v3;
    GENERAL_NAME    *gn;
    GENERAL_NAMES   *gens;
    ASN1_INTEGER    *serial;
    ASN1_IA5STRING  *ia5;
    u_char           rnd[16];

    if (ngx_http_fastwall_l7_leaf_key == NULL) {
        ngx_http_fastwall_l7_leaf_key = EVP_EC_gen("P-256");
        if (ngx_http_fastwall_l7_leaf_key == NULL) {
            ngx_ssl_error(NGX_LOG_ALERT, log, 0,
                          "fastwall l7: can't make the leaves' key");
            return NULL;
        }
    }

    x = X509_new();
    bn = NULL;
    serial = NULL;
    gens = NULL;

    if (x == NULL || X509_set_version(x, 2) != 1
        || RAND_bytes(rnd, sizeof(rnd)) != 1)
    {
        goto failed;
    }

    rnd[0] &= 0x7f;

    bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
    if (bn == NULL) {
        goto failed;
    }

    serial = BN_to_ASN1_INTEGER(bn, NULL);
    if (serial == NULL || X509_set_serialNumber(x, serial) != 1) {
        goto failed;
    }

    if (X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x),
                           NGX_HTTP_FASTWALL_L7_LEAF_DAYS * 86400L)
           == NULL)
    {
        goto failed;
    }

    if (ASN1_TIME_compare(X509_get0_notAfter(x),
                          X509_get0_notAfter(fcf->ca_cert))
        > 0
        && X509_set1_notAfter(x, X509_get0_notAfter(fcf->ca_cert)) != 1)
    {
        goto failed;
    }

    /* a common name holds 64 characters: longer names go in the SAN
     * alone, which is then critical */
    subject = X509_get_subject_name(x);

    if (len <= 64
        && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, name,
                                      (int) len, -1, 0)
           != 1)
    {
        goto failed;
    }

    if (X509_set_issuer_name(x, X509_get_subject_name(fcf->ca_cert)) != 1
        || X509_set_pubkey(x, ngx_http_fastwall_l7_leaf_key) != 1)
    {
        goto failed;
    }

    X509V3_set_ctx(&v3, fcf->ca_cert, x, NULL, NULL, 0);

    if (ngx_http_fastwall_l7_add_ext(x, &v3, NID_basic_constraints,
                                     "critical,CA:FALSE") != NGX_OK
        || ngx_http_fastwall_l7_add_ext(x, &v3, NID_key_usage,
                                        "critical,digitalSignature")
           != NGX_OK
        || ngx_http_fastwall_l7_add_ext(x, &v3, NID_ext_key_usage,
                                        "serverAuth") != NGX_OK
        || ngx_http_fastwall_l7_add_ext(x, &v3, NID_subject_key_identifier,
                                        "hash") != NGX_OK
        || ngx_http_fastwall_l7_add_ext(x, &v3, NID_authority_key_identifier,
                                        "keyid") != NGX_OK)
    {
        goto failed;
    }

    /* the name as one DNS entry, never through a text form that a comma
     * could extend */
    gens = sk_GENERAL_NAME_new_null();
    gn = GENERAL_NAME_new();
    ia5 = ASN1_IA5STRING_new();

    if (gens == NULL || gn == NULL || ia5 == NULL
        || ASN1_STRING_set(ia5, name, (int) len) != 1)
    {
        GENERAL_NAME_free(gn);
        ASN1_IA5STRING_free(ia5);
        goto failed;
    }

    GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);

    if (sk_GENERAL_NAME_push(gens, gn) == 0) {
        GENERAL_NAME_free(gn);
        goto failed;
    }

    if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, len > 64,
                          X509V3_ADD_DEFAULT)
        != 1)
    {
        goto failed;
    }

    /* EdDSA signs without a separate digest */
    id = EVP_PKEY_get_id(fcf->ca_key);
    md = (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) ? NULL : EVP_sha256();

    if (X509_sign(x, fcf->ca_key, md) <= 0) {
        goto failed;
    }

    GENERAL_NAMES_free(gens);
    ASN1_INTEGER_free(serial);
    BN_free(bn);

    return x;

failed:

    ngx_ssl_error(NGX_LOG_ALERT, log, 0,
                  "fastwall l7: can't mint a certificate for \"%*s\"",
                  len, name);

    GENERAL_NAMES_free(gens);
    ASN1_INTEGER_free(serial);
    BN_free(bn);
    X509_free(x);

    return NULL;
}


static void
ngx_http_fastwall_l7_leaf_drop(ngx_http_fastwall_l7_leaf_t *leaf)
{
    ngx_rbtree_delete(&ngx_http_fastwall_l7_leaves, &leaf->sn.node);
    ngx_queue_remove(&leaf->queue);
    X509_free(leaf->cert);
    ngx_free(leaf);
    ngx_http_fastwall_l7_nleaves--;
}


/* the worker's leaf for {subject, its vault's generation, name}: cached,
 * else minted (a connection holds its own reference to it) */
static X509 *
ngx_http_fastwall_l7_leaf(ngx_fastwall_l7_conf_t *fcf, ngx_log_t *log,
    uint32_t subject, const u_char *name, size_t len)
{
    X509                         *cert;
    u_char                        key[NGX_INT32_LEN + 1 + FW_LEASE_NAME_SZ];
    uint32_t                      hash;
    uint64_t                      gen;
    ngx_str_t                     k;
    ngx_queue_t                  *q;
    ngx_http_fastwall_l7_leaf_t  *leaf;

    gen = ngx_fastwall_l7_vault_gen(subject);

    k.data = key;
    k.len = ngx_snprintf(key, sizeof(key), "%uD %*s", subject, len, name)
            - key;
    hash = ngx_crc32_short(k.data, k.len);

    leaf = (ngx_http_fastwall_l7_leaf_t *)
               ngx_str_rbtree_lookup(&ngx_http_fastwall_l7_leaves, &k, hash);

    if (leaf) {
        if (leaf->generation == gen
            && ngx_time() - leaf->minted < NGX_HTTP_FASTWALL_L7_LEAF_REUSE)
        {
            ngx_queue_remove(&leaf->queue);
            ngx_queue_insert_head(&ngx_http_fastwall_l7_leaves_lru,
                                  &leaf->queue);
            return leaf->cert;
        }

        ngx_http_fastwall_l7_leaf_drop(leaf);
    }

    cert = ngx_http_fastwall_l7_mint(fcf, log, name, len);
    if (cert == NULL) {
        return NULL;
    }

    if (ngx_http_fastwall_l7_nleaves >= NGX_HTTP_FASTWALL_L7_LEAVES) {
        q = ngx_queue_last(&ngx_http_fastwall_l7_leaves_lru);
        ngx_http_fastwall_l7_leaf_drop(
            ngx_queue_data(q, ngx_http_fastwall_l7_leaf_t, queue));
    }

    leaf = ngx_alloc(sizeof(ngx_http_fastwall_l7_leaf_t) + k.len, log);
    if (leaf == NULL) {
        X509_free(cert);
        return NULL;
    }

    ngx_memcpy(leaf->key, k.data, k.len);
    leaf->sn.str.data = leaf->key;
    leaf->sn.str.len = k.len;
    leaf->sn.node.key = hash;
    leaf->generation = gen;
    leaf->minted = ngx_time();
    leaf->cert = cert;

    ngx_rbtree_insert(&ngx_http_fastwall_l7_leaves, &leaf->sn.node);
    ngx_queue_insert_head(&ngx_http_fastwall_l7_leaves_lru, &leaf->queue);
    ngx_http_fastwall_l7_nleaves++;

    return cert;
}


/* ---- the handshake ---- */

/* the original destination as a sockaddr, and as text */
static void
ngx_http_fastwall_l7_term_origin(ngx_http_fastwall_l7_term_conn_t *tc)
{
    struct fw_l7_nat     *nat;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    nat = &tc->peer.nat;
    ngx_memzero(&tc->origin, sizeof(ngx_sockaddr_t));

    if (nat->family == FW_FAM_V4) {
        sin = &tc->origin.sockaddr_in;
        sin->sin_family = AF_INET;
        sin->sin_port = nat->orig_port;
        ngx_memcpy(&sin->sin_addr, &nat->orig_dst.b[12], 4);
        tc->origin_len = sizeof(struct sockaddr_in);

    } else {
        sin6 = &tc->origin.sockaddr_in6;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = nat->orig_port;
        ngx_memcpy(&sin6->sin6_addr, nat->orig_dst.b, 16);
        tc->origin_len = sizeof(struct sockaddr_in6);
    }

    tc->upstream.data = tc->upstream_text;
    tc->upstream.len = fw_l7_upstream_text(nat, (char *) tc->upstream_text,
                                           sizeof(tc->upstream_text));
}


/* the host name of the ClientHello OpenSSL is processing into name;
 * 0, or -1 when it has none (or a malformed or doubled one) */
static ngx_int_t
ngx_http_fastwall_l7_hello_name(SSL *ssl, char *name)
{
    size_t                len;
    const unsigned char  *ext;

    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &len)
        != 1
        || fw_l7_hello_server_name(ext, len, name) != 0)
    {
        return -1;
    }

    return 0;
}


/* pid is a process of this nginx: this one, or another of the master's
 * children (the worker whose stream server wrote the PROXY line). The
 * proxy's user alone is not enough: it is nobody by default, which
 * other processes on the node (a process sandbox among them) may run
 * as, and one of those could write a PROXY line naming another
 * sandbox's connection. */
static ngx_flag_t
ngx_http_fastwall_l7_term_ours(pid_t pid)
{
    int      fd;
    long     ppid;
    char    *p;
    ssize_t  n;
    u_char   path[sizeof("/proc//stat") + NGX_INT64_LEN];
    char     stat[512];

    if (pid == ngx_pid) {
        return 1;
    }

    if (ngx_process != NGX_PROCESS_WORKER || pid <= 0) {
        return 0;
    }

    ngx_snprintf(path, sizeof(path), "/proc/%P/stat%Z", (ngx_pid_t) pid);

    fd = open((char *) path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, stat, sizeof(stat) - 1);
    close(fd);

    if (n <= 0) {
        return 0;
    }

    stat[n] = '\0';

    /* "pid (comm) state ppid ...": comm may hold anything, so after its
     * last ')' */
    p = strrchr(stat, ')');
    if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1) {
        return 0;
    }

    return ppid == (long) ngx_parent;
}


/* the peer, its PROXY line's sandbox end in fastwall_l7_nat, the
 * ClientHello's server name against the names that taught the original
 * destination and against the vault: FW_L7_PINNED, or the reason */
static ngx_uint_t
ngx_http_fastwall_l7_term_check(ngx_connection_t *c, SSL *ssl,
    ngx_fastwall_l7_conf_t *fcf, ngx_http_fastwall_l7_term_conn_t *tc)
{
    char                   sni[FW_L7_HELLO_NAME_MAX + 1];
    socklen_t              len;
    ngx_addr_t             addr;
    ngx_uint_t             reason;
    struct ucred           cred;
    ngx_proxy_protocol_t  *pp;

    /* the stream server of this nginx, and nothing else, writes the
     * PROXY line: the socket's peer must be this user, and (below) a
     * process of this nginx */
    len = sizeof(cred);

    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1
        || cred.uid != geteuid())
    {
        ngx_log_error(NGX_LOG_WARN, c->log, 0,
                      "fastwall l7: refused, the terminating socket's peer "
                      "(uid %d) is not this proxy's user",
                      (len == sizeof(cred)) ? (int) cred.uid : -1);
        return FW_L7_UNTRACKED;
    }

    pp = c->proxy_protocol;

    if (pp == NULL
        || ngx_parse_addr(c->pool, &addr, pp->src_addr.data,
                          pp->src_addr.len)
           != NGX_OK)
    {
        return FW_L7_UNTRACKED;
    }

    ngx_inet_set_port(addr.sockaddr, pp->src_port);

    reason = ngx_fastwall_l7_peer_at(fcf, addr.sockaddr, pp->dst_port,
                                     FW_L7_TLS, &tc->peer);
    if (reason) {
        return reason;
    }

    /* after the lookup, so that the refusal reports the connection the
     * line names */
    if (!ngx_http_fastwall_l7_term_ours(cred.pid)) {
        ngx_log_error(NGX_LOG_WARN, c->log, 0,
                      "fastwall l7: refused, the terminating socket's peer "
                      "(pid %P) is not a process of this proxy",
                      (ngx_pid_t) cred.pid);
        return FW_L7_UNTRACKED;
    }

    if (ngx_http_fastwall_l7_hello_name(ssl, sni) != 0) {
        return FW_L7_NO_NAME;
    }

    reason = ngx_fastwall_l7_name(fcf, c->log, &tc->peer, (u_char *) sni,
                                  ngx_strlen(sni), 0, tc->sni_text);
    if (reason != FW_L7_PINNED) {
        return reason;
    }

    tc->sni.data = (u_char *) tc->sni_text;
    tc->sni.len = ngx_strlen(tc->sni_text);

    if (!ngx_fastwall_l7_vault_names(tc->peer.nat.subject, tc->sni.data,
                                     tc->sni.len, FW_L7_SCHEME_HTTPS,
                                     ntohs(tc->peer.nat.orig_port)))
    {
        return FW_L7_NO_CERT;
    }

    ngx_http_fastwall_l7_term_origin(tc);
    tc->gen = ngx_fastwall_l7_vault_gen(tc->peer.nat.subject);

    return FW_L7_PINNED;
}


/* A session resumes only where every part of its key is the same: the
 * subject, the original destination and port, and the server name. The
 * session id context is that key's SHA-256, so OpenSSL refuses a ticket
 * or session id made under another (a full handshake follows). */
static ngx_int_t
ngx_http_fastwall_l7_term_sid_ctx(SSL *ssl,
    ngx_http_fastwall_l7_term_conn_t *tc)
{
    u_char        md[EVP_MAX_MD_SIZE];
    uint32_t      subject;
    unsigned int  n;
    EVP_MD_CTX   *mdc;
    ngx_int_t     rc;

    subject = tc->peer.nat.subject;
    rc = NGX_ERROR;

    mdc = EVP_MD_CTX_new();
    if (mdc == NULL) {
        return NGX_ERROR;
    }

    if (EVP_DigestInit_ex(mdc, EVP_sha256(), NULL) == 1
        && EVP_DigestUpdate(mdc, &subject, sizeof(subject)) == 1
        && EVP_DigestUpdate(mdc, &tc->origin, tc->origin_len) == 1
        && EVP_DigestUpdate(mdc, tc->sni.data, tc->sni.len) == 1
        && EVP_DigestFinal_ex(mdc, md, &n) == 1
        && n <= SSL_MAX_SID_CTX_LENGTH
        && SSL_set_session_id_context(ssl, md, n) == 1)
    {
        rc = NGX_OK;
    }

    EVP_MD_CTX_free(mdc);

    return rc;
}


/* Every ClientHello, a resumed one too, before OpenSSL looks at a
 * session it offers: the checks, and the session id context that keeps
 * a session to its own subject, destination and name. */
static int
ngx_http_fastwall_l7_term_hello(SSL *ssl, int *al, void *arg)
{
    int                                n;
    char                               sni[FW_L7_HELLO_NAME_MAX + 1];
    char                               norm[FW_LEASE_NAME_SZ];
    ngx_uint_t                         reason;
    ngx_connection_t                  *c;
    ngx_fastwall_l7_conf_t            *fcf;
    ngx_http_fastwall_l7_term_conn_t  *tc;

    c = ngx_ssl_get_connection(ssl);
    *al = SSL_AD_HANDSHAKE_FAILURE;

    /* the second hello after a HelloRetryRequest: the same name, or
     * nothing (the checks ran on the first) */
    tc = SSL_get_ex_data(ssl, ngx_http_fastwall_l7_term_index);

    if (tc != NULL) {
        n = ngx_http_fastwall_l7_hello_name(ssl, sni) == 0
            ? fw_l7_name_norm(sni, ngx_strlen(sni), 0, norm) : -1;

        if (n != (int) tc->sni.len
            || ngx_memcmp(norm, tc->sni.data, tc->sni.len) != 0)
        {
            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          "fastwall l7: handshake refused, the second "
                          "ClientHello names another server");
            return SSL_CLIENT_HELLO_ERROR;
        }

        return SSL_CLIENT_HELLO_SUCCESS;
    }

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    tc = ngx_pcalloc(c->pool, sizeof(ngx_http_fastwall_l7_term_conn_t));
    if (tc == NULL) {
        return SSL_CLIENT_HELLO_ERROR;
    }

    reason = ngx_http_fastwall_l7_term_check(c, ssl, fcf, tc);

    if (reason != FW_L7_PINNED) {
        ngx_fastwall_l7_report(fcf, c->log, FW_L7_REPORT_VERDICT, FW_L7_TLS,
                               &tc->peer, reason, tc->sni_text, 0, 0, 0);

        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "fastwall l7: handshake refused, %s, subject %uD, "
                      "name \"%s\"", ngx_fastwall_l7_reason_name(reason),
                      tc->peer.nat.subject, tc->sni_text);
        return SSL_CLIENT_HELLO_ERROR;
    }

    if (ngx_http_fastwall_l7_term_sid_ctx(ssl, tc) != NGX_OK
        || SSL_set_ex_data(ssl, ngx_http_fastwall_l7_term_index, tc) != 1)
    {
        *al = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }

    return SSL_CLIENT_HELLO_SUCCESS;
}


/* A full handshake (a resumed one sends no certificate): the leaf for
 * the name the hello callback checked. */
static int
ngx_http_fastwall_l7_term_cert(SSL *ssl, void *arg)
{
    X509                              *leaf;
    ngx_connection_t                  *c;
    ngx_fastwall_l7_conf_t            *fcf;
    ngx_http_fastwall_l7_term_conn_t  *tc;

    c = ngx_ssl_get_connection(ssl);

    tc = SSL_get_ex_data(ssl, ngx_http_fastwall_l7_term_index);
    if (tc == NULL) {
        return 0;
    }

    if (tc->certified) {
        return 1;
    }

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    leaf = ngx_http_fastwall_l7_leaf(fcf, c->log, tc->peer.nat.subject,
                                     tc->sni.data, tc->sni.len);

    /* the placeholder goes: only the leaf is ever served */
    SSL_certs_clear(ssl);

    if (leaf == NULL
        || SSL_use_certificate(ssl, leaf) != 1
        || SSL_use_PrivateKey(ssl, ngx_http_fastwall_l7_leaf_key) != 1)
    {
        if (leaf != NULL) {
            ngx_ssl_error(NGX_LOG_ALERT, c->log, 0,
                          "fastwall l7: can't serve the certificate");
        }

        ngx_fastwall_l7_report(fcf, c->log, FW_L7_REPORT_VERDICT, FW_L7_TLS,
                               &tc->peer, FW_L7_NO_CERT, tc->sni_text,
                               0, 0, 0);
        return 0;
    }

    tc->certified = 1;

    return 1;
}


static ngx_http_fastwall_l7_term_conn_t *
ngx_http_fastwall_l7_term_conn(ngx_http_request_t *r)
{
    if (ngx_http_fastwall_l7_term_index == -1 || r->connection->ssl == NULL) {
        return NULL;
    }

    return SSL_get_ex_data(r->connection->ssl->connection,
                           ngx_http_fastwall_l7_term_index);
}


/* ---- the requests ---- */

/* name (a Host or an absolute URI's host) is the connection's server
 * name, in any case, its port and a trailing dot dropped */
static ngx_flag_t
ngx_http_fastwall_l7_same_name(ngx_http_fastwall_l7_term_conn_t *tc,
    u_char *name, size_t len)
{
    int   n;
    char  norm[FW_LEASE_NAME_SZ];

    n = fw_l7_name_norm((const char *) name, len, 1, norm);

    return n > 0 && (size_t) n == tc->sni.len
           && ngx_memcmp(norm, tc->sni.data, n) == 0;
}


/* the host nginx routes by (an absolute URI's, else Host or
 * :authority), or the Host header when both are sent, that is not the
 * connection's server name; NULL when none */
static ngx_str_t *
ngx_http_fastwall_l7_other_host(ngx_http_request_t *r,
    ngx_http_fastwall_l7_term_conn_t *tc)
{
    static ngx_str_t  none = ngx_string("");

    if (r->headers_in.server.len == 0) {
        return &none;
    }

    if (!ngx_http_fastwall_l7_same_name(tc, r->headers_in.server.data,
                                        r->headers_in.server.len))
    {
        return &r->headers_in.server;
    }

    if (r->headers_in.host
        && !ngx_http_fastwall_l7_same_name(tc, r->headers_in.host->value.data,
                                           r->headers_in.host->value.len))
    {
        return &r->headers_in.host->value;
    }

    return NULL;
}


/* The connection's nat entry is still the one its handshake found: the
 * subject's vault changed since the last request (a push, or the id
 * retired, its entries reaped, and went to another subject, whose vault
 * this connection must never get). One lookup per change. */
static ngx_flag_t
ngx_http_fastwall_l7_term_live(ngx_fastwall_l7_conf_t *fcf,
    ngx_http_fastwall_l7_term_conn_t *tc)
{
    uint64_t          gen;
    struct fw_l7_nat  nat;

    gen = ngx_fastwall_l7_vault_gen(tc->peer.nat.subject);

    if (gen == tc->gen) {
        return 1;
    }

    if (bpf_map_lookup_elem(fcf->nat_fd, &tc->peer.key, &nat) != 0
        || nat.subject != tc->peer.nat.subject
        || nat.orig_port != tc->peer.nat.orig_port
        || ngx_memcmp(&nat.orig_dst, &tc->peer.nat.orig_dst,
                      sizeof(nat.orig_dst))
           != 0)
    {
        return 0;
    }

    tc->gen = gen;

    return 1;
}


static ngx_int_t
ngx_http_fastwall_l7_term_access(ngx_http_request_t *r)
{
    char                                   name[FW_LEASE_NAME_SZ];
    ngx_int_t                              rc;
    ngx_str_t                             *host;
    ngx_str_t                              binding;
    ngx_fastwall_l7_conf_t                *fcf;
    ngx_http_fastwall_l7_term_ctx_t       *ctx;
    ngx_http_fastwall_l7_term_conn_t      *tc;
    ngx_http_fastwall_l7_term_srv_conf_t  *tscf;

    tscf = ngx_http_get_module_srv_conf(r, ngx_http_fastwall_l7_term_module);

    if (!tscf->terminate || r != r->main) {
        return NGX_DECLINED;
    }

    /* no state: the handshake did not go through the callback */
    tc = ngx_http_fastwall_l7_term_conn(r);
    if (tc == NULL) {
        return NGX_HTTP_FORBIDDEN;
    }

    fcf = ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle);

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fastwall_l7_term_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->tc = tc;
    ngx_http_set_ctx(r, ctx, ngx_http_fastwall_l7_term_module);

    if (!ngx_http_fastwall_l7_term_live(fcf, tc)) {
        ngx_fastwall_l7_report(fcf, r->connection->log, FW_L7_REPORT_VERDICT,
                               FW_L7_TLS, &tc->peer, FW_L7_UNTRACKED,
                               tc->sni_text, 0, 0, 0);

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall l7: closed, the connection's nat entry is "
                      "gone (subject %uD retired?), name \"%V\"",
                      tc->peer.nat.subject, &tc->sni);

        return NGX_HTTP_CLOSE;
    }

    host = ngx_http_fastwall_l7_other_host(r, tc);

    if (host != NULL) {
        ngx_cpystrn((u_char *) name, host->data,
                    ngx_min(host->len, sizeof(name) - 1) + 1);

        ngx_fastwall_l7_report(fcf, r->connection->log, FW_L7_REPORT_VERDICT,
                               FW_L7_TLS, &tc->peer, FW_L7_MISDIRECTED, name,
                               0, 0, 0);

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "fastwall l7: misdirected, subject %uD, host \"%V\" "
                      "on a connection for \"%V\"", tc->peer.nat.subject,
                      host, &tc->sni);

        return NGX_HTTP_MISDIRECTED_REQUEST;
    }

    rc = ngx_fastwall_l7_inject(r, tc->peer.nat.subject, FW_L7_SCHEME_HTTPS,
                                ntohs(tc->peer.nat.orig_port), &binding);

    if (rc == NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fastwall l7: binding \"%V\" for \"%V\"", &binding,
                       &tc->sni);

        /* once per connection, as l7-pinned: a report per request
         * cost the proxy and fastwalld more than the injection */
        if (!tc->injected) {
            ngx_fastwall_l7_report(fcf, r->connection->log,
                                   FW_L7_REPORT_VERDICT, FW_L7_TLS, &tc->peer,
                                   FW_L7_INJECTED, tc->sni_text, 0, 0, 0);
            tc->injected = 1;
        }

        return NGX_OK;
    }

    if (rc != NGX_DECLINED) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!tc->reported) {
        ngx_fastwall_l7_report(fcf, r->connection->log, FW_L7_REPORT_VERDICT,
                               FW_L7_TLS, &tc->peer, FW_L7_PINNED,
                               tc->sni_text, 0, 0, 0);
        tc->reported = 1;
    }

    return NGX_OK;
}


/* a request the origin failed: its certificate (l7-upstream-cert) or its
 * connection (l7-upstream-failed) */
static ngx_int_t
ngx_http_fastwall_l7_term_log(ngx_http_request_t *r)
{
    ngx_http_fastwall_l7_term_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_fastwall_l7_term_module);

    if (ctx == NULL || ctx->failed == 0) {
        return NGX_OK;
    }

    ngx_fastwall_l7_report(ngx_fastwall_l7_conf((ngx_cycle_t *) ngx_cycle),
                           r->connection->log, FW_L7_REPORT_VERDICT,
                           FW_L7_TLS, &ctx->tc->peer, ctx->failed,
                           ctx->tc->sni_text, 0, 0, 0);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_sni_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_fastwall_l7_term_conn_t  *tc;

    tc = ngx_http_fastwall_l7_term_conn(r);

    if (tc == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = tc->sni.data;
    v->len = tc->sni.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


ngx_int_t
ngx_http_fastwall_l7_term_upstream(ngx_http_request_t *r,
    ngx_str_t *upstream)
{
    ngx_http_fastwall_l7_term_conn_t  *tc;

    tc = ngx_http_fastwall_l7_term_conn(r);

    if (tc == NULL) {
        return NGX_DECLINED;
    }

    *upstream = tc->upstream;

    return NGX_OK;
}


/* ---- the origin: the balancer and its idle connections ---- */

static ngx_int_t
ngx_http_fastwall_l7_origin_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_int_t                              i;
    ngx_http_fastwall_l7_idle_t           *idle;
    ngx_http_fastwall_l7_term_srv_conf_t  *tscf;

    tscf = ngx_http_conf_upstream_srv_conf(us,
                                           ngx_http_fastwall_l7_term_module);

    ngx_conf_init_value(tscf->keepalive, 0);

    us->peer.init = ngx_http_fastwall_l7_origin_init_peer;

    ngx_queue_init(&tscf->idle);
    ngx_queue_init(&tscf->free);

    if (tscf->keepalive <= 0) {
        return NGX_OK;
    }

    /* each worker has its own copy of these after the fork */
    idle = ngx_pcalloc(cf->pool,
                       sizeof(ngx_http_fastwall_l7_idle_t) * tscf->keepalive);
    if (idle == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < tscf->keepalive; i++) {
        idle[i].conf = tscf;
        ngx_queue_insert_head(&tscf->free, &idle[i].queue);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_origin_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_fastwall_l7_term_ctx_t     *ctx;
    ngx_http_fastwall_l7_term_conn_t    *tc;
    ngx_http_fastwall_l7_origin_peer_t  *op;

    /* only a terminated connection has an origin */
    tc = ngx_http_fastwall_l7_term_conn(r);
    if (tc == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fastwall_l7_origin: the request did not come through "
                      "fastwall_l7_terminate");
        return NGX_ERROR;
    }

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fastwall_l7_term_module);
    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fastwall_l7_term_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ctx->tc = tc;
        ngx_http_set_ctx(r, ctx, ngx_http_fastwall_l7_term_module);
    }

    op = ngx_palloc(r->pool, sizeof(ngx_http_fastwall_l7_origin_peer_t));
    if (op == NULL) {
        return NGX_ERROR;
    }

    op->conf = ngx_http_conf_upstream_srv_conf(us,
                                           ngx_http_fastwall_l7_term_module);
    op->request = r;
    op->tc = tc;
    op->ctx = ctx;

    r->upstream->peer.data = op;
    r->upstream->peer.get = ngx_http_fastwall_l7_origin_get;
    r->upstream->peer.free = ngx_http_fastwall_l7_origin_free;
    r->upstream->peer.set_session = ngx_http_fastwall_l7_origin_set_session;
    r->upstream->peer.save_session = ngx_http_fastwall_l7_origin_save_session;
    r->upstream->peer.tries = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fastwall_l7_origin_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_fastwall_l7_origin_peer_t  *op = data;

    ngx_queue_t                       *q;
    ngx_connection_t                  *c;
    ngx_http_fastwall_l7_idle_t       *idle;
    ngx_http_fastwall_l7_term_conn_t  *tc;

    tc = op->tc;

    pc->sockaddr = &tc->origin.sockaddr;
    pc->socklen = tc->origin_len;
    pc->name = &tc->upstream;
    pc->cached = 0;
    pc->connection = NULL;

    /* a kept connection to this address, made for this name */
    for (q = ngx_queue_head(&op->conf->idle);
         q != ngx_queue_sentinel(&op->conf->idle);
         q = ngx_queue_next(q))
    {
        idle = ngx_queue_data(q, ngx_http_fastwall_l7_idle_t, queue);

        if (idle->sni_len != tc->sni.len
            || ngx_memcmp(idle->sni, tc->sni.data, tc->sni.len) != 0
            || ngx_memn2cmp((u_char *) &idle->sockaddr, (u_char *) pc->sockaddr,
                            idle->socklen, pc->socklen)
               != 0)
        {
            continue;
        }

        ngx_queue_remove(q);
        ngx_queue_insert_head(&op->conf->free, q);

        c = idle->connection;
        c->idle = 0;
        c->sent = 0;
        c->data = NULL;
        c->log = pc->log;
        c->read->log = pc->log;
        c->write->log = pc->log;
        c->pool->log = pc->log;

        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        pc->connection = c;
        pc->cached = 1;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                       "fastwall l7: origin %V for \"%V\": kept connection",
                       pc->name, &tc->sni);

        return NGX_DONE;
    }

    return NGX_OK;
}


static void
ngx_http_fastwall_l7_origin_free(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_fastwall_l7_origin_peer_t  *op = data;

    ngx_queue_t                       *q;
    ngx_connection_t                  *c;
    ngx_http_upstream_t               *u;
    ngx_http_fastwall_l7_idle_t       *idle;
    ngx_http_fastwall_l7_term_conn_t  *tc;

    /* one peer: never another try */
    pc->tries = 0;

    c = pc->connection;
    u = op->request->upstream;
    tc = op->tc;

    if (state & NGX_PEER_FAILED) {
        /* a completed handshake that failed: the certificate did not
         * verify, or not for the name */
        if (c && c->ssl && c->ssl->handshaked
            && (SSL_get_verify_result(c->ssl->connection) != X509_V_OK
                || ngx_ssl_check_host(c, &tc->sni) != NGX_OK))
        {
            op->ctx->failed = FW_L7_UPSTREAM_CERT;

        } else {
            op->ctx->failed = FW_L7_UPSTREAM;
        }

        return;
    }

    if (c == NULL || op->conf->keepalive <= 0
        || c->read->eof || c->read->error || c->read->timedout
        || c->write->error || c->write->timedout
        || !u->keepalive || !u->request_body_sent
        || c->requests >= NGX_HTTP_FASTWALL_L7_REQUESTS
        || ngx_current_msec - c->start_time > NGX_HTTP_FASTWALL_L7_LIFE
        || ngx_terminate || ngx_exiting
        || ngx_handle_read_event(c->read, 0) != NGX_OK)
    {
        return;
    }

    /* the least recently used goes when all are taken */
    if (ngx_queue_empty(&op->conf->free)) {
        q = ngx_queue_last(&op->conf->idle);
        ngx_queue_remove(q);
        idle = ngx_queue_data(q, ngx_http_fastwall_l7_idle_t, queue);
        ngx_http_fastwall_l7_idle_close(idle->connection);

    } else {
        q = ngx_queue_head(&op->conf->free);
        ngx_queue_remove(q);
        idle = ngx_queue_data(q, ngx_http_fastwall_l7_idle_t, queue);
    }

    ngx_queue_insert_head(&op->conf->idle, q);

    idle->connection = c;
    idle->socklen = pc->socklen;
    ngx_memcpy(&idle->sockaddr, pc->sockaddr, pc->socklen);
    idle->sni_len = tc->sni.len;
    ngx_memcpy(idle->sni, tc->sni.data, tc->sni.len);

    pc->connection = NULL;

    c->read->delayed = 0;
    ngx_add_timer(c->read, NGX_HTTP_FASTWALL_L7_IDLE);

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    c->write->handler = ngx_http_fastwall_l7_idle_dummy_handler;
    c->read->handler = ngx_http_fastwall_l7_idle_close_handler;

    c->data = idle;
    c->idle = 1;
    c->log = ngx_cycle->log;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->pool->log = ngx_cycle->log;

    if (c->read->ready) {
        ngx_http_fastwall_l7_idle_close_handler(c->read);
    }
}


/* the slot of the request's {address, port, server name}, and whether it
 * holds that key's session */
static ngx_http_fastwall_l7_session_t *
ngx_http_fastwall_l7_session_slot(ngx_peer_connection_t *pc,
    ngx_http_fastwall_l7_term_conn_t *tc, ngx_flag_t *same)
{
    uint32_t                         crc;
    ngx_http_fastwall_l7_session_t  *s;

    ngx_crc32_init(crc);
    ngx_crc32_update(&crc, (u_char *) pc->sockaddr, pc->socklen);
    ngx_crc32_update(&crc, tc->sni.data, tc->sni.len);
    ngx_crc32_final(crc);

    s = &ngx_http_fastwall_l7_sessions[crc % NGX_HTTP_FASTWALL_L7_SESSIONS];

    *same = s->session != NULL
            && s->sni_len == tc->sni.len
            && ngx_memcmp(s->sni, tc->sni.data, tc->sni.len) == 0
            && ngx_memn2cmp((u_char *) &s->sockaddr, (u_char *) pc->sockaddr,
                            s->socklen, pc->socklen) == 0;

    return s;
}


/* a new connection to the origin offers the session its key last got */
static ngx_int_t
ngx_http_fastwall_l7_origin_set_session(ngx_peer_connection_t *pc,
    void *data)
{
    ngx_http_fastwall_l7_origin_peer_t  *op = data;

    ngx_flag_t                       same;
    ngx_http_fastwall_l7_session_t  *s;

    s = ngx_http_fastwall_l7_session_slot(pc, op->tc, &same);

    if (!same) {
        return NGX_OK;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "fastwall l7: origin session offered for \"%V\"",
                   &op->tc->sni);

    return ngx_ssl_set_session(pc->connection, s->session);
}


/* a verified connection's session (a full handshake's, or a TLS 1.3
 * ticket that came after it) replaces its key's */
static void
ngx_http_fastwall_l7_origin_save_session(ngx_peer_connection_t *pc,
    void *data)
{
    ngx_http_fastwall_l7_origin_peer_t  *op = data;

    ngx_flag_t                        same;
    ngx_ssl_session_t                *session;
    ngx_http_fastwall_l7_session_t   *s;
    ngx_http_fastwall_l7_term_conn_t *tc;

    tc = op->tc;

    /* only one whose certificate verified for the name */
    if (SSL_get_verify_result(pc->connection->ssl->connection) != X509_V_OK
        || ngx_ssl_check_host(pc->connection, &tc->sni) != NGX_OK)
    {
        return;
    }

    session = ngx_ssl_get_session(pc->connection);
    if (session == NULL) {
        return;
    }

    s = ngx_http_fastwall_l7_session_slot(pc, tc, &same);

    if (s->session) {
        ngx_ssl_free_session(s->session);
    }

    s->session = session;
    s->socklen = pc->socklen;
    ngx_memcpy(&s->sockaddr, pc->sockaddr, pc->socklen);
    s->sni_len = tc->sni.len;
    ngx_memcpy(s->sni, tc->sni.data, tc->sni.len);
}


/* an idle connection the origin wrote to or closed, or that timed out */
static void
ngx_http_fastwall_l7_idle_close_handler(ngx_event_t *ev)
{
    int                           n;
    char                          buf[1];
    ngx_connection_t             *c;
    ngx_http_fastwall_l7_idle_t  *idle;

    c = ev->data;

    if (!c->close && !ev->timedout) {
        n = recv(c->fd, buf, 1, MSG_PEEK);

        if (n == -1 && ngx_socket_errno == NGX_EAGAIN) {
            ev->ready = 0;

            if (ngx_handle_read_event(c->read, 0) == NGX_OK) {
                return;
            }
        }
    }

    idle = c->data;

    ngx_queue_remove(&idle->queue);
    ngx_queue_insert_head(&idle->conf->free, &idle->queue);

    ngx_http_fastwall_l7_idle_close(c);
}


static void
ngx_http_fastwall_l7_idle_dummy_handler(ngx_event_t *ev)
{
}


static void
ngx_http_fastwall_l7_idle_close(ngx_connection_t *c)
{
    if (c->ssl) {
        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;

        if (ngx_ssl_shutdown(c) == NGX_AGAIN) {
            c->ssl->handler = ngx_http_fastwall_l7_idle_close;
            return;
        }
    }

    ngx_destroy_pool(c->pool);
    ngx_close_connection(c);
}
