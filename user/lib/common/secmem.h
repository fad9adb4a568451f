/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Memory for secrets: a locked arena (slabs of mlock'd, MADV_DONTDUMP pages
 * between guard pages), wiped on free. Allocation returns NULL on failure
 * (errno set); every function is safe to call from several threads. */
#ifndef FW_SECMEM_H
#define FW_SECMEM_H

#include <stddef.h>

/* Zeroed and 16-byte aligned; a few mappings hold any number of small
 * secrets. */
void *fw_secmem_alloc(size_t n);
/* Wipes the chunk and returns it to the arena; NULL is a no-op. A pointer
 * that is not a live allocation aborts. */
void fw_secmem_free(void *p);
/* Copies at most n bytes of s (fewer at a NUL), always NUL-terminated. */
char *fw_secmem_strndup(const char *s, size_t n);
/* Once at startup: not dumpable (no core, no ptrace by non-root) and a
 * core size limit of 0. Failures are logged and otherwise ignored. */
void fw_secmem_process_init(void);

/* Makes jansson wipe every block it frees: parsed vault bodies pass
 * through its strings before they reach secmem. */
void fw_secmem_wipe_json(void);

#endif /* FW_SECMEM_H */
