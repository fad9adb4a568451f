/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Memory for secrets: page-backed, locked against swap, left out of core
 * dumps and wiped on free. Allocation returns NULL on failure (errno set);
 * every function is safe to call from several threads. */
#ifndef FW_SECMEM_H
#define FW_SECMEM_H

#include <stddef.h>

/* Zeroed, page-granular: keep secrets small and few. */
void *fw_secmem_alloc(size_t n);
/* Wipes and unmaps; NULL is a no-op. */
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
