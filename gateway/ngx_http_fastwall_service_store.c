/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * The store of exposed services behind the hostname index: one table,
 * fastwall_services, in an SQLite file (the embedded default) or in a
 * PostgreSQL database several gateways share. The target is the primary
 * key; a unique index on (routing_name, label) makes a label collision a
 * constraint error, so two gateways can never persist one label twice.
 * Calls block: the master makes them at start and reload, before any
 * worker serves; a worker makes them only in a thread of its thread pool,
 * one at a time (ngx_http_fastwall_hostnames.c), so a slow store never
 * stalls its event loop.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <sqlite3.h>
#include <libpq-fe.h>

#include "ngx_http_fastwall_hostnames.h"


struct ngx_http_fwh_store_s {
    ngx_uint_t   kind;
    sqlite3     *db;
    PGconn      *pg;
};


#define NGX_HTTP_FWH_SCHEMA_TABLE                                            \
    "CREATE TABLE IF NOT EXISTS fastwall_services ("                         \
    " workspace TEXT NOT NULL, sandbox TEXT NOT NULL, service TEXT NOT NULL," \
    " port INTEGER NOT NULL, routing_name TEXT NOT NULL,"                    \
    " label TEXT NOT NULL,"                                                  \
    " public INTEGER NOT NULL DEFAULT 0,"                                    \
    " PRIMARY KEY (workspace, sandbox, service))"

/*
 * A table made before exposures could be public lacks the column: it is
 * added with the default, so every existing exposure stays authenticated.
 */
#define NGX_HTTP_FWH_HAS_PUBLIC                                              \
    "SELECT public FROM fastwall_services LIMIT 0"

#define NGX_HTTP_FWH_ADD_PUBLIC                                              \
    "ALTER TABLE fastwall_services"                                          \
    " ADD COLUMN public INTEGER NOT NULL DEFAULT 0"

#define NGX_HTTP_FWH_SCHEMA_INDEX                                            \
    "CREATE UNIQUE INDEX IF NOT EXISTS fastwall_services_label"              \
    " ON fastwall_services (routing_name, label) WHERE label <> ''"

#define NGX_HTTP_FWH_SELECT                                                  \
    "SELECT workspace, sandbox, service, port, routing_name, label, public"  \
    " FROM fastwall_services ORDER BY workspace, sandbox, service"


/* a store the master can't open stops nginx; a worker's (it opens its
 * own connection, again after each failure) is an error it recovers from */
#define NGX_HTTP_FWH_OPEN_LEVEL                                              \
    (ngx_process == NGX_PROCESS_WORKER ? NGX_LOG_ERR : NGX_LOG_EMERG)


static const char  *ngx_http_fwh_upsert[] = {
    NULL,
    "INSERT INTO fastwall_services (workspace, sandbox, service, port,"
    " routing_name, label, public) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    " ON CONFLICT (workspace, sandbox, service) DO UPDATE SET"
    " port = excluded.port, routing_name = excluded.routing_name,"
    " label = excluded.label, public = excluded.public",
    "INSERT INTO fastwall_services (workspace, sandbox, service, port,"
    " routing_name, label, public) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    " ON CONFLICT (workspace, sandbox, service) DO UPDATE SET"
    " port = excluded.port, routing_name = excluded.routing_name,"
    " label = excluded.label, public = excluded.public"
};

static const char  *ngx_http_fwh_delete_sandbox[] = {
    NULL,
    "DELETE FROM fastwall_services WHERE workspace = ?1 AND sandbox = ?2",
    "DELETE FROM fastwall_services WHERE workspace = $1 AND sandbox = $2"
};

static const char  *ngx_http_fwh_delete[] = {
    NULL,
    "DELETE FROM fastwall_services"
    " WHERE workspace = ?1 AND sandbox = ?2 AND service = ?3",
    "DELETE FROM fastwall_services"
    " WHERE workspace = $1 AND sandbox = $2 AND service = $3"
};


static void
ngx_http_fwh_pg_quiet(void *arg, const char *message)
{
    /* "relation already exists, skipping" and the like: not for stderr */
}


/* a row read back is untrusted: names, port and label are checked */
static ngx_int_t
ngx_http_fwh_row_set(ngx_http_fwh_row_t *row, const char *ws, const char *sb,
    const char *svc, long port, const char *routing, const char *label,
    long pub)
{
    size_t  rl, ll;

    if (ws == NULL || sb == NULL || svc == NULL || routing == NULL
        || label == NULL
        || fw_hostname_target_set(&row->target, ws, sb, svc) != 0
        || port < 1 || port > 65535)
    {
        return NGX_ERROR;
    }

    rl = ngx_strlen(routing);
    ll = ngx_strlen(label);

    if ((rl && fw_hostname_routing_name_ok(routing, rl) != 0)
        || (ll && !fw_hostname_is_hash_label(label, ll)))
    {
        return NGX_ERROR;
    }

    ngx_memcpy(row->routing_name, routing, rl + 1);
    ngx_memcpy(row->label, label, ll + 1);
    row->port = (ngx_uint_t) port;
    row->public = (pub != 0);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwh_sqlite_exec(ngx_http_fwh_store_t *st, const char *sql,
    ngx_log_t *log)
{
    char  *msg;

    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                      "fastwall ingress: sqlite service store: %s", msg);
        sqlite3_free(msg);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fwh_pg_exec(ngx_http_fwh_store_t *st, const char *sql,
    ngx_log_t *log)
{
    PGresult  *res;

    res = PQexec(st->pg, sql);

    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                      "fastwall ingress: postgresql service store: %s",
                      PQerrorMessage(st->pg));
        PQclear(res);
        return NGX_ERROR;
    }

    PQclear(res);

    return NGX_OK;
}


/*
 * The unique index on labels. A store that already holds two rows under
 * one label (written before the index, or by hand) can't have it: that
 * is said at alert and the store is used all the same, since the index
 * routes none of those rows (ngx_http_fastwall_hostnames.c).
 */
static ngx_int_t
ngx_http_fwh_sqlite_index(ngx_http_fwh_store_t *st, ngx_log_t *log)
{
    int    rc;
    char  *msg;

    rc = sqlite3_exec(st->db, NGX_HTTP_FWH_SCHEMA_INDEX, NULL, NULL, &msg);

    if (rc == SQLITE_OK) {
        return NGX_OK;
    }

    if (rc == SQLITE_CONSTRAINT) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "fastwall ingress: the sqlite service store holds two "
                      "services under one label, so it has no unique index "
                      "on labels: %s", msg);
        sqlite3_free(msg);
        return NGX_OK;
    }

    ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                  "fastwall ingress: sqlite service store: %s", msg);
    sqlite3_free(msg);

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_fwh_pg_index(ngx_http_fwh_store_t *st, ngx_log_t *log)
{
    char      *state;
    PGresult  *res;

    res = PQexec(st->pg, NGX_HTTP_FWH_SCHEMA_INDEX);

    if (PQresultStatus(res) == PGRES_COMMAND_OK) {
        PQclear(res);
        return NGX_OK;
    }

    state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

    /* 23505: unique_violation */
    if (state && ngx_strcmp(state, "23505") == 0) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "fastwall ingress: the postgresql service store holds "
                      "two services under one label, so it has no unique "
                      "index on labels: %s", PQerrorMessage(st->pg));
        PQclear(res);
        return NGX_OK;
    }

    ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                  "fastwall ingress: postgresql service store: %s",
                  PQerrorMessage(st->pg));
    PQclear(res);

    return NGX_ERROR;
}


ngx_http_fwh_store_t *
ngx_http_fwh_store_open(ngx_uint_t kind, const char *arg, ngx_log_t *log)
{
    const char            *keys[6], *values[6];
    ngx_int_t              pub;
    PGresult              *res;
    sqlite3_stmt          *stmt;
    ngx_http_fwh_store_t  *st;

    st = ngx_calloc(sizeof(ngx_http_fwh_store_t), log);
    if (st == NULL) {
        return NULL;
    }

    st->kind = kind;

    if (kind == NGX_HTTP_FWH_SQLITE) {
        if (sqlite3_open_v2(arg, &st->db,
                            SQLITE_OPEN_READWRITE|SQLITE_OPEN_CREATE, NULL)
            != SQLITE_OK)
        {
            ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                          "fastwall ingress: can't open the sqlite service "
                          "store \"%s\": %s", arg,
                          st->db ? sqlite3_errmsg(st->db) : "out of memory");
            goto failed;
        }

        /* workers write in turn: wait for another's lock, briefly */
        sqlite3_busy_timeout(st->db, 2000);

        if (ngx_http_fwh_sqlite_exec(st, "PRAGMA journal_mode=WAL", log)
               != NGX_OK
            || ngx_http_fwh_sqlite_exec(st, NGX_HTTP_FWH_SCHEMA_TABLE, log)
               != NGX_OK
            || ngx_http_fwh_sqlite_index(st, log) != NGX_OK)
        {
            goto failed;
        }

        if (sqlite3_prepare_v2(st->db, NGX_HTTP_FWH_HAS_PUBLIC, -1, &stmt,
                               NULL)
            == SQLITE_OK)
        {
            sqlite3_finalize(stmt);

        } else if (ngx_http_fwh_sqlite_exec(st, NGX_HTTP_FWH_ADD_PUBLIC, log)
                   != NGX_OK)
        {
            goto failed;
        }

        return st;
    }

    /*
     * libpq waits forever by default: for a connection, and for an answer
     * from a server the network lost. 5 s to connect, and TCP keepalives
     * that find a lost server in about 11 s, unless the connection string
     * says otherwise (expanded last, it wins). A unix socket ignores them.
     */
    keys[0] = "connect_timeout";
    values[0] = "5";
    keys[1] = "keepalives_idle";
    values[1] = "5";
    keys[2] = "keepalives_interval";
    values[2] = "2";
    keys[3] = "keepalives_count";
    values[3] = "3";
    keys[4] = "dbname";
    values[4] = arg;
    keys[5] = NULL;
    values[5] = NULL;

    st->pg = PQconnectdbParams(keys, values, 1);

    if (st->pg == NULL || PQstatus(st->pg) != CONNECTION_OK) {
        /* never the connection string: it may hold a password */
        ngx_log_error(NGX_HTTP_FWH_OPEN_LEVEL, log, 0,
                      "fastwall ingress: can't connect to the postgresql "
                      "service store: %s",
                      st->pg ? PQerrorMessage(st->pg) : "out of memory");
        goto failed;
    }

    PQsetNoticeProcessor(st->pg, ngx_http_fwh_pg_quiet, NULL);

    if (ngx_http_fwh_pg_exec(st, NGX_HTTP_FWH_SCHEMA_TABLE, log) != NGX_OK
        || ngx_http_fwh_pg_index(st, log) != NGX_OK)
    {
        goto failed;
    }

    res = PQexec(st->pg, NGX_HTTP_FWH_HAS_PUBLIC);
    pub = (PQresultStatus(res) == PGRES_TUPLES_OK);
    PQclear(res);

    if (!pub && ngx_http_fwh_pg_exec(st, NGX_HTTP_FWH_ADD_PUBLIC, log) != NGX_OK)
    {
        goto failed;
    }

    return st;

failed:

    ngx_http_fwh_store_close(st);

    return NULL;
}


void
ngx_http_fwh_store_close(ngx_http_fwh_store_t *st)
{
    if (st == NULL) {
        return;
    }

    if (st->db) {
        sqlite3_close(st->db);
    }

    if (st->pg) {
        PQfinish(st->pg);
    }

    ngx_free(st);
}


/* a connection the database dropped is made again before the call */
static void
ngx_http_fwh_pg_check(ngx_http_fwh_store_t *st)
{
    if (PQstatus(st->pg) != CONNECTION_OK) {
        PQreset(st->pg);
    }
}


/*
 * One statement on the connection. A server restarted since the last
 * call shows only now, as a broken connection: then once more on a new
 * one (the statements are idempotent and autocommitted).
 */
static PGresult *
ngx_http_fwh_pg_query(ngx_http_fwh_store_t *st, const char *sql,
    int nparams, const char **params)
{
    PGresult  *res;

    ngx_http_fwh_pg_check(st);

    res = PQexecParams(st->pg, sql, nparams, NULL, params, NULL, NULL, 0);

    if (PQstatus(st->pg) == CONNECTION_BAD) {
        PQclear(res);
        PQreset(st->pg);
        res = PQexecParams(st->pg, sql, nparams, NULL, params, NULL, NULL,
                           0);
    }

    return res;
}


/* appends one row read back when it is a valid service, else skips it */
static ngx_int_t
ngx_http_fwh_rows_add(ngx_array_t *rows, const char *ws, const char *sb,
    const char *svc, long port, const char *routing, const char *label,
    long pub, ngx_log_t *log)
{
    ngx_http_fwh_row_t  *row, tmp;

    if (ngx_http_fwh_row_set(&tmp, ws, sb, svc, port, routing, label, pub)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "fastwall ingress: a service store row that "
                      "is not a valid service, skipped");
        return NGX_OK;
    }

    row = ngx_array_push(rows);
    if (row == NULL) {
        return NGX_ERROR;
    }

    *row = tmp;

    return NGX_OK;
}


ngx_int_t
ngx_http_fwh_store_list(ngx_http_fwh_store_t *st, ngx_array_t *rows,
    ngx_log_t *log)
{
    int            i, n, rc;
    PGresult      *res;
    sqlite3_stmt  *stmt;

    if (st->kind == NGX_HTTP_FWH_SQLITE) {
        if (sqlite3_prepare_v2(st->db, NGX_HTTP_FWH_SELECT, -1, &stmt, NULL)
            != SQLITE_OK)
        {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "fastwall ingress: sqlite service store: %s",
                          sqlite3_errmsg(st->db));
            return NGX_ERROR;
        }

        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            if (ngx_http_fwh_rows_add(rows,
                    (const char *) sqlite3_column_text(stmt, 0),
                    (const char *) sqlite3_column_text(stmt, 1),
                    (const char *) sqlite3_column_text(stmt, 2),
                    (long) sqlite3_column_int64(stmt, 3),
                    (const char *) sqlite3_column_text(stmt, 4),
                    (const char *) sqlite3_column_text(stmt, 5),
                    (long) sqlite3_column_int64(stmt, 6), log)
                != NGX_OK)
            {
                sqlite3_finalize(stmt);
                return NGX_ERROR;
            }
        }

        sqlite3_finalize(stmt);

        if (rc != SQLITE_DONE) {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "fastwall ingress: sqlite service store: %s",
                          sqlite3_errmsg(st->db));
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    res = ngx_http_fwh_pg_query(st, NGX_HTTP_FWH_SELECT, 0, NULL);

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "fastwall ingress: postgresql service store: %s",
                      PQerrorMessage(st->pg));
        PQclear(res);
        return NGX_ERROR;
    }

    n = PQntuples(res);

    for (i = 0; i < n; i++) {
        if (ngx_http_fwh_rows_add(rows, PQgetvalue(res, i, 0),
                                  PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                                  strtol(PQgetvalue(res, i, 3), NULL, 10),
                                  PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
                                  strtol(PQgetvalue(res, i, 6), NULL, 10),
                                  log)
            != NGX_OK)
        {
            PQclear(res);
            return NGX_ERROR;
        }
    }

    PQclear(res);

    return NGX_OK;
}


/* runs one statement of text parameters; NGX_DECLINED on a constraint
 * violation, else the rows it changed in *changed */
static ngx_int_t
ngx_http_fwh_store_run(ngx_http_fwh_store_t *st, const char **sqls,
    const char **params, int nparams, ngx_uint_t *changed, ngx_log_t *log)
{
    int            i, rc, xrc;
    char          *state;
    PGresult      *res;
    sqlite3_stmt  *stmt;

    if (st->kind == NGX_HTTP_FWH_SQLITE) {
        if (sqlite3_prepare_v2(st->db, sqls[NGX_HTTP_FWH_SQLITE], -1, &stmt,
                               NULL)
            != SQLITE_OK)
        {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "fastwall ingress: sqlite service store: %s",
                          sqlite3_errmsg(st->db));
            return NGX_ERROR;
        }

        for (i = 0; i < nparams; i++) {
            sqlite3_bind_text(stmt, i + 1, params[i], -1, SQLITE_STATIC);
        }

        rc = sqlite3_step(stmt);
        xrc = sqlite3_extended_errcode(st->db);
        sqlite3_finalize(stmt);

        /* the label's unique index; a trigger's RAISE is a constraint
         * error too, but a failure */
        if (rc == SQLITE_CONSTRAINT && xrc == SQLITE_CONSTRAINT_UNIQUE) {
            return NGX_DECLINED;
        }

        if (rc != SQLITE_DONE) {
            ngx_log_error(NGX_LOG_ERR, log, 0,
                          "fastwall ingress: sqlite service store: %s",
                          sqlite3_errmsg(st->db));
            return NGX_ERROR;
        }

        *changed = sqlite3_changes(st->db);
        return NGX_OK;
    }

    res = ngx_http_fwh_pg_query(st, sqls[NGX_HTTP_FWH_POSTGRESQL], nparams,
                                params);

    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

        /* 23505: unique_violation */
        if (state && ngx_strcmp(state, "23505") == 0) {
            PQclear(res);
            return NGX_DECLINED;
        }

        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "fastwall ingress: postgresql service store: %s",
                      PQerrorMessage(st->pg));
        PQclear(res);
        return NGX_ERROR;
    }

    *changed = (ngx_uint_t) strtoul(PQcmdTuples(res), NULL, 10);
    PQclear(res);

    return NGX_OK;
}


ngx_int_t
ngx_http_fwh_store_put(ngx_http_fwh_store_t *st, ngx_http_fwh_row_t *row,
    ngx_log_t *log)
{
    char         port[NGX_INT_T_LEN + 1];
    const char  *params[7];
    ngx_uint_t   changed;

    *ngx_sprintf((u_char *) port, "%ui", row->port) = '\0';

    params[0] = row->target.workspace;
    params[1] = row->target.sandbox;
    params[2] = row->target.service;
    params[3] = port;
    params[4] = row->routing_name;
    params[5] = row->label;
    params[6] = row->public ? "1" : "0";

    return ngx_http_fwh_store_run(st, ngx_http_fwh_upsert, params, 7, &changed,
                                  log);
}


ngx_int_t
ngx_http_fwh_store_delete(ngx_http_fwh_store_t *st,
    struct fw_hostname_target *t, ngx_log_t *log)
{
    ngx_int_t    rc;
    const char  *params[3];
    ngx_uint_t   changed;

    params[0] = t->workspace;
    params[1] = t->sandbox;
    params[2] = t->service;

    changed = 0;

    rc = ngx_http_fwh_store_run(st, ngx_http_fwh_delete, params, 3, &changed,
                                log);
    if (rc != NGX_OK) {
        return rc == NGX_DECLINED ? NGX_ERROR : rc;
    }

    return changed ? NGX_OK : NGX_DECLINED;
}


ngx_int_t
ngx_http_fwh_store_delete_sandbox(ngx_http_fwh_store_t *st,
    struct fw_hostname_target *t, ngx_uint_t *deleted, ngx_log_t *log)
{
    ngx_int_t    rc;
    const char  *params[2];

    params[0] = t->workspace;
    params[1] = t->sandbox;

    *deleted = 0;

    /* one statement: every gateway's next read sees all of them gone, or
     * none */
    rc = ngx_http_fwh_store_run(st, ngx_http_fwh_delete_sandbox, params, 2,
                                deleted, log);

    return rc == NGX_DECLINED ? NGX_ERROR : rc;
}
