/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The Sandbox Actions handler: the subject lifecycle (absent -> denying ->
 * active), fencing, restart adoption, policy and credential-vault pushes,
 * and the active-vault read, as transport-free functions that turn a
 * request into a reply. The HTTP layer (user/daemon/http.c) only routes.
 * Thread-safe: calls for one subject are serialised, calls for different
 * subjects and status run in parallel. */
#ifndef FW_ACTIONS_H
#define FW_ACTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/prom.h"
#include "protocol/pending.h"
#include "subjects/registry.h"
#include "protocol/vault.h"

struct fw_reply {
	int status;
	const char *content_type; /* NULL = no body */
	char *body;		  /* malloc'd, or secmem when secret */
	size_t len;
	bool secret; /* body is secmem memory: wipe on free */
	char etag[FW_VAULT_ETAG_LEN];
	const char *allow; /* Allow header for 405 */
};

void fw_reply_free(struct fw_reply *r);

#define FW_ACTIONS_OPS	 4   /* invalid, SET_BINDING, LIFECYCLE_HOOK, REMOVE_BINDING */
#define FW_ACTIONS_CODES 600 /* status codes 0-599 */

struct fw_actions {
	struct fw_registry *reg;
	char instance_id[64];
	bool restart_wipe;
	bool bind_host_veth;
	__u64 grace_ns;
	__u64 started_ns;
	bool grace_over;
	__u64 last_sweep_ns;
	struct fw_vault_store *vaults;
	struct fw_pending *pending;
	/* a subject's vault changed (pushed, patched, deleted): uid and its
	 * kernel id (0: none); called with the subject's entry lock held.
	 * May be NULL; set before the listeners start. */
	void (*on_vault)(void *ctx, const char *uid, __u32 id);
	void *vault_ctx;
	/* the layer-7 CA bundle GET /l7/ca.crt serves (NULL: 404); set once,
	 * atomic */
	char *l7_ca;
	size_t l7_ca_len;
	/* envelopes answered, by operation (0: not a valid envelope) and
	 * status code; relaxed atomics, read by the metrics listener */
	__u64 op_replies[FW_ACTIONS_OPS][FW_ACTIONS_CODES];
	/* time to answer an envelope, by operation: per-bucket counts (the
	 * last one above every bound) and the sum, relaxed atomics */
	__u64 op_latency[FW_ACTIONS_OPS][FW_LAT_BUCKETS + 1];
	__u64 op_latency_sum_ns[FW_ACTIONS_OPS];
};

/* The handler's settings (the actions section of the configuration). */
struct fw_actions_opts {
	bool restart_wipe;    /* remove adopted subjects at start (reference behaviour) */
	bool bind_host_veth;  /* anti-spoof on attachment.hostVeth */
	__u64 grace_ns;	      /* adopted subjects nobody replays are removed after */
	__u64 pending_ttl_ns; /* cached pushes for unknown subjects */
};

/* Mints the instance id; with restart_wipe removes every adopted protocol
 * subject before returning (the reference behaviour). */
int fw_actions_init(struct fw_actions *a, struct fw_registry *reg,
		    const struct fw_actions_opts *opts);
void fw_actions_fini(struct fw_actions *a);

/* GET /_fastlet/v1/actions/status */
void fw_actions_status(struct fw_actions *a, struct fw_reply *out);
/* POST /_fastlet/v1/actions */
void fw_actions_post(struct fw_actions *a, const char *body, size_t len, struct fw_reply *out);
/* Calls fn for every (operation, status code) answered at least once:
 * operation "SET_BINDING", "LIFECYCLE_HOOK", "REMOVE_BINDING", or
 * "invalid" for a body that is no valid envelope. Any thread. */
void fw_actions_op_counts(struct fw_actions *a,
			  void (*fn)(void *ctx, const char *op, int code, __u64 n), void *ctx);
/* Calls fn for each operation (the names above, every one of them) with
 * its latency histogram: FW_LAT_BUCKETS + 1 per-bucket counts and
 * the sum in ns. Any thread. */
void fw_actions_op_latency(struct fw_actions *a,
			   void (*fn)(void *ctx, const char *op, const __u64 *counts, __u64 sum_ns),
			   void *ctx);
/* /policy and /credential-vault; uid and generation are the raw header
 * values (NULL when absent). */
void fw_actions_policy(struct fw_actions *a, const char *method, const char *uid, const char *gen,
		       const char *body, size_t len, struct fw_reply *out);
void fw_actions_vault(struct fw_actions *a, const char *method, const char *uid, const char *gen,
		      const char *body, size_t len, struct fw_reply *out);
/* GET /credential-vault/_active?clientIp=... (unix socket only) */
/* A process sandbox root started (e held, its run_policy set): the
 * vault pushes cached for its name apply now, its policy pushes drop. */
void fw_actions_run_added(struct fw_actions *a, struct fw_entry *e);
void fw_actions_vault_active(struct fw_actions *a, const char *client_ip, const char *if_none_match,
			     struct fw_reply *out);
/* Takes pem (malloc'd), the certificates GET /l7/ca.crt serves. */
void fw_actions_set_l7_ca(struct fw_actions *a, char *pem, size_t len);
/* GET /l7/ca.crt: the layer-7 proxy's CA bundle; 404 when credential
 * injection is off. */
void fw_actions_l7_ca(struct fw_actions *a, struct fw_reply *out);
/* Called about once a second: ends the restart grace period (removing
 * adopted subjects nobody replayed) and sweeps the pending cache. */
void fw_actions_tick(struct fw_actions *a);
/* After a reload: protocol subjects whose binding holds an address they
 * lost to a static subject that is gone now take it back, so that no
 * address is left without a subject. */
void fw_actions_reclaim(struct fw_actions *a);

#endif /* FW_ACTIONS_H */
