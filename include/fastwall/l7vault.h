/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Credential injection by the layer-7 proxy (docs/egress-l7.md,
 * "Credentials"): how fastwalld hands each subject's active vault to the
 * proxy. Two maps fastwalld creates at the proxy's start and never pins
 * (no file anywhere names them; the values hold secrets), handed to the
 * proxy on fixed descriptors: the hash's read-only; the array's
 * read-write, because the kernel mmaps a BPF map only through a
 * descriptor open for writing (MAP_SHARED of a read-only one is EINVAL),
 * and the proxy maps it PROT_READ (an mprotect to writable then fails).
 * Their kernel names are cut to 15 characters: fw_l7_vaults and
 * fw_l7_vault_gen.
 *
 *   fastwall_l7_vaults     hash, BPF_F_NO_PREALLOC, FW_MAX_SUBJECTS
 *                          entries: subject id (__u32) -> struct
 *                          fw_l7_vault_blob, the vault in the encoding
 *                          below. Kernel memory: never swapped, never in
 *                          a core dump.
 *   fastwall_l7_vault_gen  array, BPF_F_MMAPABLE, FW_MAX_SUBJECTS x __u64:
 *                          the generation of the subject's blob, 0 for
 *                          none. The proxy reads it per request from its
 *                          mapping (no system call) and copies the blob
 *                          only when it changed.
 *
 * Writer: fastwalld alone, on the event loop. A put writes the blob
 * (with its new generation) first, then the generation (atomic store);
 * a delete zeroes the generation first, then deletes the blob. A reader
 * that copied a blob whose generation differs from the one it read keeps
 * the blob's and reads again at the next request. Generations come from
 * one counter of fastwalld's, so a vault removed and pushed again never
 * repeats one. No BPF program reads either map.
 *
 * The encoding (host byte order, no padding, nothing aligned): a
 * struct fw_l7_vault_head, then nbindings records, each a struct
 * fw_l7_vault_rec followed by, in this order:
 *   nports __u16 ports, the original destination ports it applies to
 *     (none: any);
 *   name_len bytes: the binding's name (for reports; no secret);
 *   header_len bytes: the header field name to set (apiKey: auth.name;
 *     bearer and basic: "Authorization");
 *   value_len bytes: the header's whole value, ready to send ("Bearer
 *     x", "Basic base64(user:password)", or the api key itself); never
 *     holds CR, LF or NUL (refused at push);
 *   nhosts, then nmethods, then npaths strings, each a __u16 length and
 *     its bytes (no NUL): hosts lower-case, exact or "*.domain" (any name
 *     strictly under domain); methods upper-case, none: any; paths start
 *     with "/", exact, or a prefix when they end in "*"; none: any.
 * rec.size is the record's whole length, so a reader skips what it does
 * not know. A blob that does not parse exactly (a length past the end,
 * trailing bytes, a count over FW_L7_VAULT_MAX_LIST, a bad magic or
 * version) injects nothing. */
#ifndef FASTWALL_L7VAULT_H
#define FASTWALL_L7VAULT_H

#include "fastwall/abi.h"

#define FW_L7_VAULT_MAGIC    0x564c5746u /* "FWLV" */
#define FW_L7_VAULT_VERSION  1
#define FW_L7_VAULT_DATA     (128 * 1024 - 16) /* encoded bytes a subject's vault may take */
#define FW_L7_VAULT_MAX_LIST 64		       /* entries in each match list */

enum fw_l7_auth {
	FW_L7_AUTH_API_KEY = 1, /* the value in the named header */
	FW_L7_AUTH_BEARER = 2,	/* Authorization: Bearer <value> */
	FW_L7_AUTH_BASIC = 3,	/* Authorization: Basic base64(<value>), value "user:password" */
};

/* match.schemes: a vault without the list matches https only (plain
 * HTTP gets a credential only where a binding names "http") */
#define FW_L7_SCHEME_HTTP  0x1
#define FW_L7_SCHEME_HTTPS 0x2

struct fw_l7_vault_blob {
	__u64 generation; /* as fastwall_l7_vault_gen had it when written */
	__u32 len;	  /* bytes of data used */
	__u32 pad;
	__u8 data[FW_L7_VAULT_DATA];
};

struct fw_l7_vault_head {
	__u32 magic; /* FW_L7_VAULT_MAGIC */
	__u16 version;
	__u16 nbindings;
} __attribute__((packed));

struct fw_l7_vault_rec {
	__u32 size;   /* of the record, this head included */
	__u8 auth;    /* enum fw_l7_auth */
	__u8 schemes; /* FW_L7_SCHEME_* */
	__u8 nports, nhosts, nmethods, npaths;
	__u16 name_len, header_len;
	__u32 value_len;
} __attribute__((packed));

#endif /* FASTWALL_L7VAULT_H */
