// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ClientHello walker (hello.h). The handshake message is read through
 * a cursor that steps over record headers, so a hello cut into several
 * records is walked in place, without copying it together. */
#include <string.h>

#include "l7/hello.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_RECORD_MAX	     (16384 + 2048) /* the largest a record may claim */
#define TLS_CLIENT_HELLO     1

struct cursor {
	const uint8_t *buf;
	size_t len;
	size_t pos;	/* next byte of buf */
	size_t rec_end; /* end of the current record's payload in buf */
	int bad;	/* a record header that is not a handshake's */
	int more;	/* buf ended first */
};

/* The next byte of the handshake stream, stepping into the next record
 * when this one is used up; -1 when there is none (c->bad or c->more). */
static int next_byte(struct cursor *c)
{
	while (c->pos == c->rec_end) {
		size_t rl;

		if (c->len - c->pos < 5) {
			/* even a partial header must look like a handshake */
			if (c->pos < c->len && c->buf[c->pos] != TLS_RECORD_HANDSHAKE)
				c->bad = 1;
			else if (c->len - c->pos > 1 && c->buf[c->pos + 1] != 3)
				c->bad = 1;
			else
				c->more = 1;
			return -1;
		}
		rl = (size_t)c->buf[c->pos + 3] << 8 | c->buf[c->pos + 4];
		if (c->buf[c->pos] != TLS_RECORD_HANDSHAKE || c->buf[c->pos + 1] != 3 || !rl ||
		    rl > TLS_RECORD_MAX) {
			c->bad = 1;
			return -1;
		}
		c->pos += 5;
		c->rec_end = c->pos + rl;
	}
	if (c->pos == c->len) {
		c->more = 1;
		return -1;
	}
	return c->buf[c->pos++];
}

/* n bytes (n <= 4) as a big-endian number into *v; 0 or -1 */
static int read_be(struct cursor *c, unsigned int n, size_t *v)
{
	*v = 0;
	while (n--) {
		int b = next_byte(c);

		if (b < 0)
			return -1;
		*v = *v << 8 | (size_t)b;
	}
	return 0;
}

static int skip(struct cursor *c, size_t n)
{
	while (n--)
		if (next_byte(c) < 0)
			return -1;
	return 0;
}

static enum fw_l7_hello_status status_of(const struct cursor *c)
{
	return c->bad ? FW_L7_HELLO_BAD : c->more ? FW_L7_HELLO_MORE : FW_L7_HELLO_BAD;
}

/* the server_name extension's body, len bytes */
static int walk_server_name(struct cursor *c, size_t len, struct fw_l7_hello *h)
{
	size_t list, type, nl;

	if (len < 2 || read_be(c, 2, &list))
		return -1;
	if (list != len - 2 || list < 3)
		return -2;
	while (list) {
		if (list < 3 || read_be(c, 1, &type) || read_be(c, 2, &nl))
			return c->bad || c->more ? -1 : -2;
		list -= 3;
		if (nl > list || !nl)
			return -2;
		list -= nl;
		if (type != 0) {
			if (skip(c, nl))
				return -1;
			continue;
		}
		if (nl > FW_L7_HELLO_NAME_MAX)
			return -2;
		for (size_t i = 0; i < nl; i++) {
			int b = next_byte(c);

			if (b < 0)
				return -1;
			if (!h->host_names)
				h->name[i] = (char)b;
		}
		if (!h->host_names)
			h->name_len = nl;
		h->host_names++;
	}
	return 0;
}

enum fw_l7_hello_status fw_l7_hello_walk(const uint8_t *buf, size_t len, struct fw_l7_hello *h)
{
	struct cursor c = {.buf = buf, .len = len};
	size_t type, hl, v, used, exts, et, el;
	int rc;

	memset(h, 0, sizeof(*h));
	if (read_be(&c, 1, &type))
		return status_of(&c);
	if (type != TLS_CLIENT_HELLO || read_be(&c, 3, &hl))
		return c.more ? FW_L7_HELLO_MORE : FW_L7_HELLO_BAD;
	/* client_version, random, and at least the three length fields */
	if (hl > FW_L7_HELLO_MAX_LENGTH || hl < 2 + 32 + 1 + 2 + 1)
		return FW_L7_HELLO_BAD;
	used = 0; /* bytes of the handshake body read, whatever records carry them */
#define TAKE(n)                                                                                    \
	do {                                                                                       \
		if ((size_t)(n) > hl - used)                                                       \
			return FW_L7_HELLO_BAD;                                                    \
		used += (n);                                                                       \
	} while (0)
	TAKE(2 + 32);
	if (skip(&c, 2 + 32))
		return status_of(&c);
	TAKE(1);
	if (read_be(&c, 1, &v))
		return status_of(&c);
	if (v > 32)
		return FW_L7_HELLO_BAD;
	TAKE(v);
	if (skip(&c, v))
		return status_of(&c);
	TAKE(2);
	if (read_be(&c, 2, &v))
		return status_of(&c);
	if (v < 2 || v % 2)
		return FW_L7_HELLO_BAD;
	TAKE(v);
	if (skip(&c, v))
		return status_of(&c);
	TAKE(1);
	if (read_be(&c, 1, &v))
		return status_of(&c);
	if (v < 1)
		return FW_L7_HELLO_BAD;
	TAKE(v);
	if (skip(&c, v))
		return status_of(&c);
	if (used < hl) {
		TAKE(2);
		if (read_be(&c, 2, &exts))
			return status_of(&c);
		if (exts != hl - used)
			return FW_L7_HELLO_BAD;
		while (used < hl) {
			TAKE(4);
			if (read_be(&c, 2, &et) || read_be(&c, 2, &el))
				return status_of(&c);
			TAKE(el);
			if (et == FW_L7_EXT_SERVER_NAME) {
				h->server_name_exts++;
				rc = walk_server_name(&c, el, h);
				if (rc == -1)
					return status_of(&c);
				if (rc)
					return FW_L7_HELLO_BAD;
				continue;
			}
			if (et == FW_L7_EXT_ECH)
				h->ech = 1;
			if (skip(&c, el))
				return status_of(&c);
		}
	}
#undef TAKE
	h->hello_len = c.pos;
	return FW_L7_HELLO_OK;
}

int fw_l7_hello_vet(const struct fw_l7_hello *h, int ech_allowed)
{
	if (h->server_name_exts > 1 || h->host_names > 1)
		return FW_L7_BAD_HELLO;
	if (h->ech && !ech_allowed)
		return FW_L7_ECH;
	return 0;
}

int fw_l7_hello_server_name(const uint8_t *ext, size_t len, char name[FW_L7_HELLO_NAME_MAX + 1])
{
	/* one "record" that is the body: the cursor never looks for another */
	struct cursor c = {.buf = ext, .len = len, .rec_end = len};
	struct fw_l7_hello h = {0};

	name[0] = '\0';
	if (walk_server_name(&c, len, &h) || c.pos != len || h.host_names != 1 ||
	    strlen(h.name) != h.name_len)
		return -1;
	memcpy(name, h.name, h.name_len + 1);
	return 0;
}
