/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A TLS ClientHello's extensions, walked only to vet what the engine's
 * own parser (nginx's ssl_preread) leaves unsaid: an encrypted
 * ClientHello, and more than one server name. The bytes are the TLS
 * records as the client sent them (the hello may span several records);
 * every length is checked against its container. No allocation. */
#ifndef FW_L7_HELLO_H
#define FW_L7_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "fastwall/reasons.h"

enum fw_l7_hello_status {
	FW_L7_HELLO_OK = 0,   /* a whole, well-formed ClientHello */
	FW_L7_HELLO_MORE = 1, /* well-formed so far, cut short: read more */
	FW_L7_HELLO_BAD = 2,  /* not a ClientHello, or a malformed one */
};

/* the encrypted_client_hello extension (draft-ietf-tls-esni) */
#define FW_L7_EXT_ECH	       0xfe0d
#define FW_L7_EXT_SERVER_NAME  0x0000
#define FW_L7_HELLO_NAME_MAX   255
#define FW_L7_HELLO_MAX_LENGTH (64 * 1024) /* a larger handshake message is refused */

struct fw_l7_hello {
	unsigned int server_name_exts;	     /* server_name extensions */
	unsigned int host_names;	     /* host_name entries over all of them */
	int ech;			     /* an encrypted_client_hello extension */
	size_t hello_len;		     /* bytes of records the hello took */
	char name[FW_L7_HELLO_NAME_MAX + 1]; /* the first host_name, NUL-terminated */
	size_t name_len;		     /* its length on the wire */
};

/* Walks buf[0..len): FW_L7_HELLO_OK with *h filled, FW_L7_HELLO_MORE or
 * FW_L7_HELLO_BAD (*h then holds what was read before). */
enum fw_l7_hello_status fw_l7_hello_walk(const uint8_t *buf, size_t len, struct fw_l7_hello *h);

/* Whether h (a FW_L7_HELLO_OK walk) may be checked by its name:
 * 0, or the enum fw_l7_reason that refuses it (two server names, ECH
 * unless ech_allowed). */
int fw_l7_hello_vet(const struct fw_l7_hello *h, int ech_allowed);

/* The one host name of a server_name extension's body ext[0..len) (as
 * OpenSSL's SSL_client_hello_get0_ext gives it) into name: 0, or -1 for
 * a malformed body, none or more than one host name, or a name holding
 * a NUL byte. */
int fw_l7_hello_server_name(const uint8_t *ext, size_t len, char name[FW_L7_HELLO_NAME_MAX + 1]);

#endif /* FW_L7_HELLO_H */
