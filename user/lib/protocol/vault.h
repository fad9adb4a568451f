/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-subject credential vaults (credential-push.md): parsing and validation
 * of a vault body, and the thread-safe store the push endpoints and the
 * active-vault read share. Functions return 0 or a negative errno; on
 * -EINVAL an error text (never containing a secret) is written to err. */
#ifndef FW_VAULT_H
#define FW_VAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"
#include "policy/policy.h"

#define FW_VAULT_MAX_BODY     (1 << 20)
#define FW_VAULT_MAX_CREDS    256
#define FW_VAULT_MAX_BINDINGS 256
#define FW_VAULT_MAX_NAME     128
#define FW_VAULT_MAX_VALUE    (64 * 1024)
#define FW_VAULT_MAX_LIST     64 /* entries in each binding match list */
#define FW_VAULT_MAX_SUBJECTS 16384
#define FW_VAULT_ETAG_LEN     19 /* "\"" 16 hex digits "\"" NUL */

struct fw_vault;
struct fw_vault_store;

/* A PATCH body may bind credentials that only the vault it merges into
 * holds, so the cross-reference check waits for the merge. */
#define FW_VAULT_PARSE_PATCH (1u << 0)

/* Parses and validates body against the subject's policy (NULL = default
 * deny, no rules: every binding host is rejected). Secret values live only
 * in secmem memory. */
int fw_vault_parse(const char *body, size_t len, const struct fw_policy *policy, unsigned int flags,
		   struct fw_vault **out, char *err, size_t errlen);
/* Wipes the secrets; NULL is a no-op. */
void fw_vault_free(struct fw_vault *v);
/* Rechecks every binding host against policy, e.g. after a policy push. */
int fw_vault_check_policy(const struct fw_vault *v, const struct fw_policy *policy, char *err,
			  size_t errlen);
/* Vault JSON with every value replaced by "***"; malloc'd, caller frees. */
char *fw_vault_redacted_json(const struct fw_vault *v);
/* Vault JSON with the values, in secmem memory (free with
 * fw_secmem_free), and its ETag, a keyed hash that is stable within the
 * process. etag may be NULL. */
char *fw_vault_active_json(const struct fw_vault *v, char etag[FW_VAULT_ETAG_LEN]);

/* The vault in the layer-7 proxy's encoding (fastwall/l7vault.h: the head
 * and its records, values ready to send) into buf. *len is the encoding's
 * length whatever cap is; buf NULL only measures. -E2BIG when it does not
 * fit in cap (what was written is then to be wiped). */
int fw_vault_l7_encode(const struct fw_vault *v, void *buf, size_t cap, size_t *len);

struct fw_vault_store *fw_vault_store_new(void);
/* Vaults whose encoding takes more than max bytes are refused from now on
 * (a PATCH's merged result too; 0: no bound): the proxy's map holds no more. */
void fw_vault_store_set_l7_max(struct fw_vault_store *s, size_t max);
/* -EINVAL with a message when v would not fit that bound. */
int fw_vault_store_check_l7(struct fw_vault_store *s, const struct fw_vault *v, char *err,
			    size_t errlen);
/* uid's vault encoded as fw_vault_l7_encode does (under the store's lock);
 * -ENOENT when it has none. */
int fw_vault_store_l7_encode(struct fw_vault_store *s, const char *uid, void *buf, size_t cap,
			     size_t *len);
void fw_vault_store_free(struct fw_vault_store *s);
/* POST: creates or replaces uid's vault; takes ownership of v, also on
 * error. -ENOSPC when the store is full. */
int fw_vault_store_put(struct fw_vault_store *s, const char *uid, struct fw_vault *v);
/* PATCH: merges patch (parsed with FW_VAULT_PARSE_PATCH) into uid's vault,
 * or into an empty one: same-name credentials and bindings are replaced in
 * place, new ones appended. Takes ownership of patch; on error the stored
 * vault is unchanged. */
int fw_vault_store_patch(struct fw_vault_store *s, const char *uid, struct fw_vault *patch,
			 char *err, size_t errlen);
/* DELETE: -ENOENT when uid has no vault. */
int fw_vault_store_del(struct fw_vault_store *s, const char *uid);
/* GET: *json is malloc'd (redacted); -ENOENT when uid has no vault. */
int fw_vault_store_get_redacted_json(struct fw_vault_store *s, const char *uid, char **json);
/* The active-vault read: *json is secmem memory (fw_secmem_free); -ENOENT
 * for an unknown ip or a subject with no vault. */
int fw_vault_store_active_by_ip(struct fw_vault_store *s, const struct fw_ip *ip, char **json,
				char etag[FW_VAULT_ETAG_LEN]);
/* The same, only when ip maps to uid (NULL: any uid). */
int fw_vault_store_active_for(struct fw_vault_store *s, const struct fw_ip *ip, const char *uid,
			      char **json, char etag[FW_VAULT_ETAG_LEN]);
/* Maps ip to uid, replacing any earlier owner of ip. */
int fw_vault_store_set_ip(struct fw_vault_store *s, const char *uid, const struct fw_ip *ip);
int fw_vault_store_clear_ip(struct fw_vault_store *s, const struct fw_ip *ip);
/* The subject is gone: drops its vault and every ip mapped to it. */
void fw_vault_store_clear_uid(struct fw_vault_store *s, const char *uid);

#endif /* FW_VAULT_H */
