/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * fastwall layer-7 egress proxy: what the core, stream and http modules
 * of the .so share (the maps, the reports, the per-subject counters and
 * the check of a connection's peer and name).
 */

#ifndef _NGX_FASTWALL_L7_H_INCLUDED_
#define _NGX_FASTWALL_L7_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fastwall/abi.h"
#include "fastwall/l7.h"
#include "fastwall/l7vault.h"
#include "l7/pin.h"


typedef struct {
    ngx_atomic_t                  conns[FW_MAX_SUBJECTS];
} ngx_fastwall_l7_shctx_t;


typedef struct {
    /* fastwall_l7_nat, fastwall_learned, fastwall_learned_names,
     * fastwall_names; -1: not given */
    int                           nat_fd;
    int                           learned_fd;
    int                           learned_names_fd;
    int                           names_fd;
    ngx_flag_t                    maps_set;

    int                           report_fd;
    ngx_flag_t                    report_set;

    /* fastwall_l7_vaults: fastwall_l7_vaults, fastwall_l7_vault_gen
     * (include/fastwall/l7vault.h); the generations mapped read-only, or
     * NULL when the kernel would not map them (read with bpf()) */
    int                           vaults_fd;
    int                           vault_gen_fd;
    ngx_flag_t                    vaults_set;
    ngx_flag_t                    vaults_fds_owned;
    uint64_t                     *vault_gen;

    ngx_uint_t                    ech;        /* 0: deny, 1: allow */
    ngx_int_t                     subject_connections;

    ngx_shm_zone_t               *zone;
    ngx_fastwall_l7_shctx_t      *sh;

    /* fastwall_l7_ca: the CA that signs the terminating server's leaves;
     * the key only ever in this process's (locked) memory */
    X509                         *ca_cert;
    EVP_PKEY                     *ca_key;

    /* per worker: reports the full socket dropped since the last line */
    ngx_uint_t                    dropped;
    time_t                        dropped_logged;
} ngx_fastwall_l7_conf_t;


/* a connection's peer as the nat map has it */
typedef struct {
    struct fw_l7_nat_key          key;
    struct fw_l7_nat              nat;
    ngx_flag_t                    found;
} ngx_fastwall_l7_peer_t;


/* a subject's slot of the connection counters, held until released */
typedef struct {
    ngx_fastwall_l7_conf_t       *conf;
    uint32_t                      subject;
    ngx_flag_t                    held;
} ngx_fastwall_l7_hold_t;


extern ngx_module_t  ngx_fastwall_l7_module;


ngx_fastwall_l7_conf_t *ngx_fastwall_l7_conf(ngx_cycle_t *cycle);

/* 0 when c's peer has a usable nat entry of kind (in *p), else
 * FW_L7_UNTRACKED */
ngx_uint_t ngx_fastwall_l7_peer(ngx_fastwall_l7_conf_t *conf,
    ngx_connection_t *c, enum fw_l7_kind kind, ngx_fastwall_l7_peer_t *p);

/* the same for a connection another server of this nginx handed on
 * (PROXY protocol): peer is the sandbox's end, proxy_port the port it
 * was accepted on (host order) */
ngx_uint_t ngx_fastwall_l7_peer_at(ngx_fastwall_l7_conf_t *conf,
    struct sockaddr *peer, in_port_t proxy_port, enum fw_l7_kind kind,
    ngx_fastwall_l7_peer_t *p);

/* the verdict on a name sent by p: FW_L7_PINNED, FW_L7_NO_NAME, FW_L7_LEASE
 * or FW_L7_NAME; norm (FW_LEASE_NAME_SZ) gets the normalised name */
ngx_uint_t ngx_fastwall_l7_name(ngx_fastwall_l7_conf_t *conf,
    ngx_log_t *log, ngx_fastwall_l7_peer_t *p, u_char *name, size_t len,
    ngx_uint_t is_host, char *norm);

/* takes a slot of p's subject in the counters, released with c's pool:
 * FW_L7_PINNED, or FW_L7_LIMIT when the subject holds its share */
ngx_uint_t ngx_fastwall_l7_hold(ngx_fastwall_l7_conf_t *conf,
    ngx_connection_t *c, ngx_fastwall_l7_peer_t *p);

void ngx_fastwall_l7_report(ngx_fastwall_l7_conf_t *conf, ngx_log_t *log,
    ngx_uint_t type, enum fw_l7_kind kind, ngx_fastwall_l7_peer_t *p,
    ngx_uint_t reason, const char *name, uint64_t up, uint64_t down,
    uint64_t duration_ns);

const char *ngx_fastwall_l7_reason_name(ngx_uint_t reason);

/* the credential vaults (ngx_fastwall_l7_vault.c): the directive
 * `fastwall_l7_vaults fd:V,G|pin:DIR` */
char *ngx_fastwall_l7_vaults(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

struct ngx_http_request_s;


/* The subject's credential vault (egress/ngx_fastwall_l7_vault.c); the
 * request is an ngx_http_request_t, named by its struct here so the core
 * and stream files need no http header.
 *
 * 1 when a binding of subject's vault names host for scheme
 * (FW_L7_SCHEME_*) and the original port: the stream server terminates;
 * 0 otherwise (no vault, no binding, no maps configured) */
ngx_int_t ngx_fastwall_l7_vault_names(uint32_t subject, const u_char *host,
    size_t len, unsigned scheme, uint16_t port);

/* The first binding of subject's vault matching this request (scheme,
 * original port, Host, method, path): its header set on r, every value
 * the sandbox sent under that name removed first. NGX_OK: injected
 * (*binding: its name, for the report); NGX_DECLINED: no binding matched,
 * r unchanged; NGX_ERROR: fail closed (500). */
ngx_int_t ngx_fastwall_l7_inject(struct ngx_http_request_s *r, uint32_t subject,
    unsigned scheme, uint16_t port, ngx_str_t *binding);

/* subject's vault generation now, 0 for none: a minted certificate cached
 * under another generation is dropped */
uint64_t ngx_fastwall_l7_vault_gen(uint32_t subject);


/* The terminating http server (egress/ngx_http_fastwall_l7_term.c): the
 * original destination of r's connection as $fastwall_l7_upstream has
 * it, when r came through a terminated connection */
ngx_int_t ngx_http_fastwall_l7_term_upstream(struct ngx_http_request_s *r,
    ngx_str_t *upstream);


#endif /* _NGX_FASTWALL_L7_H_INCLUDED_ */
