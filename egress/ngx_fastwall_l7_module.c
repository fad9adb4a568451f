/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy: the main-level directives (the maps, the
 * report socket, ECH, the per-subject connection limit) and the check the
 * stream and http modules share: a connection's peer through
 * fastwall_l7_nat, the destination's lease in fastwall_learned, and its
 * names in fastwall_learned_names and fastwall_names. The maps are read
 * with the bpf() syscall; the name rules are user/lib/l7/pin.c. Also the
 * CA the terminating server signs its leaves with (fastwall_l7_ca), and
 * what keeps its key out of core dumps and swap.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "ngx_fastwall_l7.h"


static void *ngx_fastwall_l7_create_conf(ngx_cycle_t *cycle);
static char *ngx_fastwall_l7_init_conf(ngx_cycle_t *cycle, void *conf);
static char *ngx_fastwall_l7_maps(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_fastwall_l7_report_slot(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_fastwall_l7_subject_connections(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_fastwall_l7_ca(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_fastwall_l7_ca_free(void *data);
static void ngx_fastwall_l7_harden(ngx_log_t *log);
static ngx_int_t ngx_fastwall_l7_init_process(ngx_cycle_t *cycle);
static ngx_flag_t ngx_fastwall_l7_can_lock(void);
static ngx_int_t ngx_fastwall_l7_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_fastwall_l7_close_fd(void *data);
static void ngx_fastwall_l7_release(void *data);


static ngx_conf_enum_t  ngx_fastwall_l7_ech[] = {
    { ngx_string("deny"), 0 },
    { ngx_string("allow"), 1 },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_fastwall_l7_commands[] = {

    { ngx_string("fastwall_l7_maps"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_maps,
      0,
      0,
      NULL },

    { ngx_string("fastwall_l7_vaults"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_vaults,
      0,
      0,
      NULL },

    { ngx_string("fastwall_l7_report"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_report_slot,
      0,
      0,
      NULL },

    { ngx_string("fastwall_l7_ech"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      0,
      offsetof(ngx_fastwall_l7_conf_t, ech),
      &ngx_fastwall_l7_ech },

    { ngx_string("fastwall_l7_subject_connections"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_subject_connections,
      0,
      0,
      NULL },

    { ngx_string("fastwall_l7_ca"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_fastwall_l7_ca,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_core_module_t  ngx_fastwall_l7_module_ctx = {
    ngx_string("fastwall_l7"),
    ngx_fastwall_l7_create_conf,
    ngx_fastwall_l7_init_conf
};


ngx_module_t  ngx_fastwall_l7_module = {
    NGX_MODULE_V1,
    &ngx_fastwall_l7_module_ctx,           /* module context */
    ngx_fastwall_l7_commands,              /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_fastwall_l7_init_process,          /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


#define NGX_FASTWALL_L7_REASON_NAME(id, verdict, name, meaning)  name,

static const char  *ngx_fastwall_l7_reasons[] = {
    FW_L7_REASONS(NGX_FASTWALL_L7_REASON_NAME)
};


static void *
ngx_fastwall_l7_create_conf(ngx_cycle_t *cycle)
{
    ngx_fastwall_l7_conf_t  *conf;

    conf = ngx_pcalloc(cycle->pool, sizeof(ngx_fastwall_l7_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->nat_fd = -1;
    conf->learned_fd = -1;
    conf->learned_names_fd = -1;
    conf->names_fd = -1;
    conf->report_fd = -1;
    conf->ech = NGX_CONF_UNSET_UINT;
    conf->subject_connections = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_fastwall_l7_init_conf(ngx_cycle_t *cycle, void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    ngx_conf_init_uint_value(fcf->ech, 0);
    ngx_conf_init_value(fcf->subject_connections, 0);

    return NGX_CONF_OK;
}


ngx_fastwall_l7_conf_t *
ngx_fastwall_l7_conf(ngx_cycle_t *cycle)
{
    return (ngx_fastwall_l7_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                                   ngx_fastwall_l7_module);
}


/* an fd of ours, closed with the configuration that opened it */
static ngx_int_t
ngx_fastwall_l7_own_fd(ngx_conf_t *cf, int fd)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(cf->pool, sizeof(int));
    if (cln == NULL) {
        close(fd);
        return NGX_ERROR;
    }

    *(int *) cln->data = fd;
    cln->handler = ngx_fastwall_l7_close_fd;

    return NGX_OK;
}


static void
ngx_fastwall_l7_close_fd(void *data)
{
    close(*(int *) data);
}


/* "3,4,5,6" into four fds the process inherited */
static ngx_int_t
ngx_fastwall_l7_parse_fds(ngx_str_t *s, int *fd, ngx_uint_t n)
{
    u_char      *p, *last, *comma;
    ngx_int_t    v;
    ngx_uint_t   i;

    p = s->data;
    last = s->data + s->len;

    for (i = 0; i < n; i++) {
        comma = ngx_strlchr(p, last, ',');
        if ((comma == NULL) != (i == n - 1)) {
            return NGX_ERROR;
        }

        if (comma == NULL) {
            comma = last;
        }

        v = ngx_atoi(p, comma - p);
        if (v == NGX_ERROR || v > 65535) {
            return NGX_ERROR;
        }

        fd[i] = (int) v;
        p = comma + 1;
    }

    return NGX_OK;
}


static char *
ngx_fastwall_l7_maps(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    int                        fd[4], i;
    u_char                     path[NGX_MAX_PATH];
    ngx_str_t                 *value, dir;
    struct bpf_map_info        info;
    LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);

    static const char  *names[4] = {
        "fastwall_l7_nat", "fastwall_learned", "fastwall_learned_names",
        "fastwall_names"
    };
    static const uint32_t  sizes[4][2] = {
        { sizeof(struct fw_l7_nat_key), sizeof(struct fw_l7_nat) },
        { sizeof(struct fw_learned_key), sizeof(struct fw_lease) },
        { sizeof(struct fw_learned_key), sizeof(struct fw_lease_names) },
        { sizeof(uint32_t), sizeof(struct fw_lease_name) }
    };

    if (fcf->maps_set) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strncmp(value[1].data, "fd:", 3) == 0) {
        value[1].data += 3;
        value[1].len -= 3;

        if (ngx_fastwall_l7_parse_fds(&value[1], fd, 4) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: \"fd:%V\" is not four file descriptors "
                               "(fd:NAT,LEARNED,LEARNED_NAMES,NAMES)",
                               &cmd->name, &value[1]);
            return NGX_CONF_ERROR;
        }

    } else if (ngx_strncmp(value[1].data, "pin:", 4) == 0) {
        dir.data = value[1].data + 4;
        dir.len = value[1].len - 4;

        for (i = 0; i < 4; i++) {
            if (ngx_snprintf(path, sizeof(path) - 1, "%V/%s%Z", &dir, names[i])
                == path + sizeof(path) - 1)
            {
                return "has a path too long";
            }

            fd[i] = bpf_obj_get_opts((char *) path, &opts);
            if (fd[i] < 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, -fd[i],
                                   "%V: can't open %s", &cmd->name, path);
                while (i-- > 0) {
                    close(fd[i]);
                }
                return NGX_CONF_ERROR;
            }
        }

        for (i = 0; i < 4; i++) {
            if (ngx_fastwall_l7_own_fd(cf, fd[i]) != NGX_OK) {
                while (++i < 4) {
                    close(fd[i]);
                }
                return NGX_CONF_ERROR;
            }
        }

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is neither fd:N,N,N,N nor pin:DIR",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    /* the layouts must be abi.h's: a map of another shape is refused */
    for (i = 0; i < 4; i++) {
        uint32_t  len = sizeof(info);

        ngx_memzero(&info, sizeof(info));

        if (bpf_obj_get_info_by_fd(fd[i], &info, &len) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               "%V: fd %d (%s) is not a BPF map",
                               &cmd->name, fd[i], names[i]);
            return NGX_CONF_ERROR;
        }

        if (info.key_size != sizes[i][0] || info.value_size != sizes[i][1]) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: %s has key %uD and value %uD bytes, "
                               "not %uD and %uD", &cmd->name, names[i],
                               info.key_size, info.value_size,
                               sizes[i][0], sizes[i][1]);
            return NGX_CONF_ERROR;
        }
    }

    fcf->nat_fd = fd[0];
    fcf->learned_fd = fd[1];
    fcf->learned_names_fd = fd[2];
    fcf->names_fd = fd[3];
    fcf->maps_set = 1;

    return NGX_CONF_OK;
}


static char *
ngx_fastwall_l7_report_slot(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    int                  fd;
    ngx_int_t            n;
    ngx_str_t           *value;
    struct sockaddr_un   sun;

    if (fcf->report_set) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strncmp(value[1].data, "fd:", 3) == 0) {
        n = ngx_atoi(value[1].data + 3, value[1].len - 3);
        if (n == NGX_ERROR || n > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: \"%V\" is not a file descriptor",
                               &cmd->name, &value[1]);
            return NGX_CONF_ERROR;
        }

        fd = (int) n;

        if (ngx_nonblocking(fd) == -1) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_socket_errno,
                               "%V: fd %d", &cmd->name, fd);
            return NGX_CONF_ERROR;
        }

    } else if (ngx_strncmp(value[1].data, "unix:", 5) == 0) {
        ngx_memzero(&sun, sizeof(sun));
        sun.sun_family = AF_UNIX;

        if (value[1].len - 5 >= sizeof(sun.sun_path) || value[1].len == 5) {
            return "has an empty or too long path";
        }

        ngx_memcpy(sun.sun_path, value[1].data + 5, value[1].len - 5);

        fd = socket(AF_UNIX, SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
        if (fd == -1) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_socket_errno,
                               "%V: socket()", &cmd->name);
            return NGX_CONF_ERROR;
        }

        if (ngx_fastwall_l7_own_fd(cf, fd) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        if (connect(fd, (struct sockaddr *) &sun, sizeof(sun)) == -1) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_socket_errno,
                               "%V: can't connect to %s", &cmd->name,
                               sun.sun_path);
            return NGX_CONF_ERROR;
        }

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is neither fd:N nor unix:PATH",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    fcf->report_fd = fd;
    fcf->report_set = 1;

    return NGX_CONF_OK;
}


static char *
ngx_fastwall_l7_subject_connections(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    ngx_str_t   *value, name = ngx_string("fastwall_l7_subjects");

    if (fcf->subject_connections != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    fcf->subject_connections = ngx_atoi(value[1].data, value[1].len);
    if (fcf->subject_connections == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is not a number of connections",
                           &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    if (fcf->subject_connections == 0) {
        return NGX_CONF_OK;
    }

    /* the counters, and the slab pool's own pages around them */
    fcf->zone = ngx_shared_memory_add(cf, &name,
                                      sizeof(ngx_fastwall_l7_shctx_t)
                                      + 16 * ngx_pagesize,
                                      &ngx_fastwall_l7_module);
    if (fcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    fcf->zone->init = ngx_fastwall_l7_init_zone;
    fcf->zone->data = fcf;

    return NGX_CONF_OK;
}


/* the whole PEM of an inherited pipe (fd:N, closed after) or a file */
static ngx_int_t
ngx_fastwall_l7_ca_read(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t *src,
    u_char *buf, size_t size, size_t *len)
{
    int         fd;
    ssize_t     n;
    ngx_int_t   v;
    ngx_err_t   err;
    u_char      path[NGX_MAX_PATH];

    if (ngx_strncmp(src->data, "fd:", 3) == 0) {
        v = ngx_atoi(src->data + 3, src->len - 3);
        if (v == NGX_ERROR || v > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: \"%V\" is not a file descriptor",
                               &cmd->name, src);
            return NGX_ERROR;
        }

        fd = (int) v;

    } else if (ngx_strncmp(src->data, "file:", 5) == 0) {
        if (src->len - 5 >= sizeof(path) || src->len == 5) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%V: an empty or too long path", &cmd->name);
            return NGX_ERROR;
        }

        ngx_cpystrn(path, src->data + 5, src->len - 5 + 1);

        fd = open((char *) path, O_RDONLY|O_CLOEXEC);
        if (fd == -1) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               "%V: can't open %s", &cmd->name, path);
            return NGX_ERROR;
        }

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" is neither fd:N nor file:PATH",
                           &cmd->name, src);
        return NGX_ERROR;
    }

    *len = 0;

    for ( ;; ) {
        n = read(fd, buf + *len, size - *len);

        if (n == -1 && ngx_errno == NGX_EINTR) {
            continue;
        }

        if (n <= 0) {
            break;
        }

        *len += n;

        if (*len == size) {
            n = -1;
            ngx_set_errno(EFBIG);
            break;
        }
    }

    err = ngx_errno;

    /* read once: the descriptor (a pipe fastwalld wrote whole) is not
     * needed again */
    close(fd);

    if (n < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, err, "%V: can't read \"%V\"",
                           &cmd->name, src);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static char *
ngx_fastwall_l7_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_fastwall_l7_conf_t  *fcf = conf;

    BIO                 *bio;
    X509                *cert;
    size_t               len;
    EVP_PKEY            *key;
    ngx_str_t           *value;
    ngx_pool_cleanup_t  *cln;
    u_char               pem[64 * 1024];

    if (fcf->ca_cert) {
        return "is duplicate";
    }

    value = cf->args->elts;

    /* the master, and the workers it forks, never dump the key */
    ngx_fastwall_l7_harden(cf->log);

    if (ngx_fastwall_l7_ca_read(cf, cmd, &value[1], pem, sizeof(pem), &len)
        != NGX_OK)
    {
        OPENSSL_cleanse(pem, sizeof(pem));
        return NGX_CONF_ERROR;
    }

    cert = NULL;
    key = NULL;

    bio = BIO_new_mem_buf(pem, (int) len);
    if (bio != NULL) {
        cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (cert != NULL) {
            key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
        }

        BIO_free(bio);
    }

    OPENSSL_cleanse(pem, sizeof(pem));

    /* no OpenSSL error text: it could quote the key's bytes */
    ERR_clear_error();

    if (cert == NULL || key == NULL) {
        X509_free(cert);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: \"%V\" does not hold a PEM certificate then "
                           "its private key", &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    if (X509_check_private_key(cert, key) != 1
        || X509_check_ca(cert) == 0)
    {
        ERR_clear_error();
        X509_free(cert);
        EVP_PKEY_free(key);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: the certificate of \"%V\" is not a CA's or "
                           "not the key's", &cmd->name, &value[1]);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return NGX_CONF_ERROR;
    }

    fcf->ca_cert = cert;
    fcf->ca_key = key;
    cln->handler = ngx_fastwall_l7_ca_free;
    cln->data = fcf;

    return NGX_CONF_OK;
}


static void
ngx_fastwall_l7_ca_free(void *data)
{
    ngx_fastwall_l7_conf_t  *fcf = data;

    X509_free(fcf->ca_cert);
    EVP_PKEY_free(fcf->ca_key);
    fcf->ca_cert = NULL;
    fcf->ca_key = NULL;
}


/* no core file, no ptrace by another process of the user */
static void
ngx_fastwall_l7_harden(ngx_log_t *log)
{
    struct rlimit  rl;

    rl.rlim_cur = 0;
    rl.rlim_max = 0;

    if (setrlimit(RLIMIT_CORE, &rl) == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_errno,
                      "fastwall l7: setrlimit(RLIMIT_CORE, 0) failed");
    }

    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_errno,
                      "fastwall l7: prctl(PR_SET_DUMPABLE, 0) failed");
    }
}


/* a worker: nginx made it dumpable again after setuid() (and may have
 * set RLIMIT_CORE from worker_rlimit_core); lock its memory so the key
 * and the leaves' key never reach swap */
static ngx_int_t
ngx_fastwall_l7_init_process(ngx_cycle_t *cycle)
{
    ngx_fastwall_l7_conf_t  *fcf;

    fcf = ngx_fastwall_l7_conf(cycle);

    if (fcf == NULL || fcf->ca_key == NULL) {
        return NGX_OK;
    }

    ngx_fastwall_l7_harden(cycle->log);

    /* MCL_FUTURE under a bounded RLIMIT_MEMLOCK would make allocations
     * past it fail later: lock only when nothing bounds it */
    if (!ngx_fastwall_l7_can_lock()) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "fastwall l7: memory not locked, the CA key may be "
                      "swapped out (the proxy needs CAP_IPC_LOCK)");
        return NGX_OK;
    }

    if (mlockall(MCL_CURRENT|MCL_FUTURE) == -1) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "fastwall l7: mlockall() failed, the CA key may be "
                      "swapped out");
    }

    return NGX_OK;
}


/* CAP_IPC_LOCK in the effective set, or no RLIMIT_MEMLOCK */
static ngx_flag_t
ngx_fastwall_l7_can_lock(void)
{
    struct rlimit                     rl;
    struct __user_cap_data_struct     data[_LINUX_CAPABILITY_U32S_3];
    struct __user_cap_header_struct   hdr;

    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY) {
        return 1;
    }

    ngx_memzero(&hdr, sizeof(hdr));
    hdr.version = _LINUX_CAPABILITY_VERSION_3;

    if (syscall(SYS_capget, &hdr, data) != 0) {
        return 0;
    }

    return (data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective
            & CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}


static ngx_int_t
ngx_fastwall_l7_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_fastwall_l7_conf_t  *fcf = shm_zone->data;
    ngx_fastwall_l7_conf_t  *ocf = data;

    ngx_slab_pool_t  *shpool;

    /* a reload keeps the counters: the old workers' connections still
     * hold their slots and release them when they end */
    if (ocf) {
        fcf->sh = ocf->sh;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        fcf->sh = shpool->data;
        return NGX_OK;
    }

    fcf->sh = ngx_slab_calloc(shpool, sizeof(ngx_fastwall_l7_shctx_t));
    if (fcf->sh == NULL) {
        return NGX_ERROR;
    }

    shpool->data = fcf->sh;

    return NGX_OK;
}


const char *
ngx_fastwall_l7_reason_name(ngx_uint_t reason)
{
    if (reason >= FW_L7_REASON_MAX) {
        return "?";
    }

    return ngx_fastwall_l7_reasons[reason];
}


ngx_uint_t
ngx_fastwall_l7_peer(ngx_fastwall_l7_conf_t *conf, ngx_connection_t *c,
    enum fw_l7_kind kind, ngx_fastwall_l7_peer_t *p)
{
    if (ngx_connection_local_sockaddr(c, NULL, 0) != NGX_OK) {
        ngx_memzero(p, sizeof(ngx_fastwall_l7_peer_t));
        return FW_L7_UNTRACKED;
    }

    return ngx_fastwall_l7_peer_at(conf, c->sockaddr,
                                   ngx_inet_get_port(c->local_sockaddr), kind,
                                   p);
}


ngx_uint_t
ngx_fastwall_l7_peer_at(ngx_fastwall_l7_conf_t *conf, struct sockaddr *peer,
    in_port_t proxy_port, enum fw_l7_kind kind, ngx_fastwall_l7_peer_t *p)
{
    ngx_memzero(p, sizeof(ngx_fastwall_l7_peer_t));

    if (!conf->maps_set) {
        return FW_L7_UNTRACKED;
    }

    if (fw_l7_nat_key_of(peer, proxy_port, &p->key) != 0) {
        return FW_L7_UNTRACKED;
    }

    if (bpf_map_lookup_elem(conf->nat_fd, &p->key, &p->nat) != 0) {
        return FW_L7_UNTRACKED;
    }

    if (!fw_l7_nat_usable(&p->key, &p->nat, kind)) {
        return FW_L7_UNTRACKED;
    }

    p->found = 1;

    return 0;
}


ngx_uint_t
ngx_fastwall_l7_name(ngx_fastwall_l7_conf_t *conf, ngx_log_t *log,
    ngx_fastwall_l7_peer_t *p, u_char *name, size_t len, ngx_uint_t is_host,
    char *norm)
{
    ngx_uint_t              i, n, reason;
    struct timespec         ts;
    struct fw_lease         lease;
    struct fw_lease_name    names[FW_LEASE_NAMES];
    struct fw_lease_names   ids;
    struct fw_learned_key   lk;

    /* no name, or an address, is refused whatever the lease */
    reason = fw_l7_name_verdict((const char *) name, len, is_host, NULL, 0,
                                norm);
    if (reason != FW_L7_NAME) {
        return reason;
    }

    ngx_memzero(&lk, sizeof(lk));
    lk.subject = p->nat.subject;
    lk.addr = p->nat.orig_dst;

    if (bpf_map_lookup_elem(conf->learned_fd, &lk, &lease) != 0) {
        return FW_L7_LEASE;
    }

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0
        || lease.expires_ns
           <= (uint64_t) ts.tv_sec * FW_NSEC_PER_SEC + ts.tv_nsec)
    {
        return FW_L7_LEASE;
    }

    if (bpf_map_lookup_elem(conf->learned_names_fd, &lk, &ids) != 0) {
        return FW_L7_NAME;
    }

    for (i = 0, n = 0; i < FW_LEASE_NAMES; i++) {
        if (ids.ids[i] == 0) {
            continue;
        }

        if (bpf_map_lookup_elem(conf->names_fd, &ids.ids[i], &names[n]) != 0) {
            ngx_log_debug1(NGX_LOG_DEBUG_CORE, log, 0,
                           "fastwall l7: name id %uD is gone", ids.ids[i]);
            continue;
        }

        n++;
    }

    return fw_l7_name_verdict((const char *) name, len, is_host, names, n,
                              norm);
}


ngx_uint_t
ngx_fastwall_l7_hold(ngx_fastwall_l7_conf_t *conf, ngx_connection_t *c,
    ngx_fastwall_l7_peer_t *p)
{
    ngx_atomic_t            *slot;
    ngx_pool_cleanup_t      *cln;
    ngx_fastwall_l7_hold_t  *hold;

    if (conf->subject_connections <= 0 || conf->sh == NULL) {
        return FW_L7_PINNED;
    }

    if (p->nat.subject >= FW_MAX_SUBJECTS) {
        return FW_L7_LIMIT;
    }

    cln = ngx_pool_cleanup_add(c->pool, sizeof(ngx_fastwall_l7_hold_t));
    if (cln == NULL) {
        return FW_L7_LIMIT;
    }

    hold = cln->data;
    hold->conf = conf;
    hold->subject = p->nat.subject;
    hold->held = 0;
    cln->handler = ngx_fastwall_l7_release;

    slot = &conf->sh->conns[p->nat.subject];

    if ((ngx_int_t) ngx_atomic_fetch_add(slot, 1)
        >= conf->subject_connections)
    {
        (void) ngx_atomic_fetch_add(slot, -1);
        return FW_L7_LIMIT;
    }

    hold->held = 1;

    return FW_L7_PINNED;
}


static void
ngx_fastwall_l7_release(void *data)
{
    ngx_fastwall_l7_hold_t  *hold = data;

    if (hold->held) {
        (void) ngx_atomic_fetch_add(&hold->conf->sh->conns[hold->subject], -1);
        hold->held = 0;
    }
}


void
ngx_fastwall_l7_report(ngx_fastwall_l7_conf_t *conf, ngx_log_t *log,
    ngx_uint_t type, enum fw_l7_kind kind, ngx_fastwall_l7_peer_t *p,
    ngx_uint_t reason, const char *name, uint64_t up, uint64_t down,
    uint64_t duration_ns)
{
    ngx_err_t            err;
    struct fw_l7_report  r;

    if (conf->report_fd == -1) {
        return;
    }

    ngx_memzero(&r, sizeof(r));
    r.version = FW_L7_REPORT_VERSION;
    r.type = (uint8_t) type;
    r.kind = kind;
    r.reason = (uint32_t) reason;
    r.client = p->key.client;
    r.client_port = p->key.client_port;

    if (p->found) {
        r.subject = p->nat.subject;
        r.family = p->nat.family;
        r.dst = p->nat.orig_dst;
        r.dst_port = p->nat.orig_port;
    }

    r.bytes_up = up;
    r.bytes_down = down;
    r.duration_ns = duration_ns;

    if (name) {
        ngx_cpystrn((u_char *) r.name, (u_char *) name, sizeof(r.name));
    }

    if (send(conf->report_fd, &r, sizeof(r), MSG_DONTWAIT|MSG_NOSIGNAL)
        == (ssize_t) sizeof(r))
    {
        return;
    }

    /* never block a connection on fastwalld: count, and say so once a
     * minute */
    err = ngx_socket_errno;
    conf->dropped++;

    if (ngx_time() - conf->dropped_logged >= 60) {
        ngx_log_error(NGX_LOG_WARN, log, err,
                      "fastwall l7: %ui report(s) dropped (socket full or "
                      "closed)", conf->dropped);
        conf->dropped = 0;
        conf->dropped_logged = ngx_time();
    }
}
