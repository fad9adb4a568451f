// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Protocol Buffers by hand for the one call the ingress makes: varints and
 * length-delimited fields, unknown fields skipped, groups refused. Field
 * numbers are those of gateway/proto/fastpath_v2.proto. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "gateway/fastpath.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

struct pb_out {
	unsigned char *p;
	size_t len, max;
};

static void put_byte(struct pb_out *o, unsigned char b)
{
	if (o->len < o->max)
		o->p[o->len] = b;
	o->len++;
}

static void put_varint(struct pb_out *o, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(o, (unsigned char)(v | 0x80));
		v >>= 7;
	}
	put_byte(o, (unsigned char)v);
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_bytes(struct pb_out *o, unsigned int field, const void *p, size_t len)
{
	put_varint(o, (uint64_t)field << 3 | WT_LEN);
	put_varint(o, len);
	for (size_t i = 0; i < len; i++)
		put_byte(o, ((const unsigned char *)p)[i]);
}

static size_t field_size(size_t len)
{
	return 1 + varint_size(len) + len;
}

size_t fw_fastpath_request_size(size_t ns_len, size_t name_len)
{
	size_t nn = field_size(ns_len) + field_size(name_len);

	/* frame prefix, sandbox{namespaced_name{...}}, target{port},
	 * access_mode, expected_generation */
	return 5 + field_size(field_size(nn)) + field_size(6) + 2 + 11;
}

long fw_fastpath_request_encode(const char *ns, size_t ns_len, const char *name, size_t name_len,
				uint32_t port, enum fw_fastpath_access_mode mode,
				uint64_t expected_generation, unsigned char *out, size_t outlen)
{
	struct pb_out o = {out, 5, outlen};
	size_t nn = field_size(ns_len) + field_size(name_len), msg;

	/* sandbox = 1 { namespaced_name = 1 { namespace = 1, name = 2 } } */
	put_varint(&o, 1 << 3 | WT_LEN);
	put_varint(&o, field_size(nn));
	put_varint(&o, 1 << 3 | WT_LEN);
	put_varint(&o, nn);
	put_bytes(&o, 1, ns, ns_len);
	put_bytes(&o, 2, name, name_len);
	/* target = 2 { port = 1 } */
	put_varint(&o, 2 << 3 | WT_LEN);
	put_varint(&o, 1 + varint_size(port));
	put_varint(&o, 1 << 3 | WT_VARINT);
	put_varint(&o, port);
	/* access_mode = 3; zero is the wire default and is not written */
	if (mode) {
		put_varint(&o, 3 << 3 | WT_VARINT);
		put_varint(&o, (uint64_t)mode);
	}
	if (expected_generation) {
		put_varint(&o, 4 << 3 | WT_VARINT);
		put_varint(&o, expected_generation);
	}
	if (o.len > outlen)
		return -ENOSPC;
	msg = o.len - 5;
	out[0] = 0; /* not compressed */
	out[1] = (unsigned char)(msg >> 24);
	out[2] = (unsigned char)(msg >> 16);
	out[3] = (unsigned char)(msg >> 8);
	out[4] = (unsigned char)msg;
	return (long)o.len;
}

struct pb_in {
	const unsigned char *p, *end;
};

static int get_varint(struct pb_in *in, uint64_t *v)
{
	uint64_t r = 0;

	for (unsigned int shift = 0; shift < 64; shift += 7) {
		unsigned char b;

		if (in->p >= in->end)
			return -EBADMSG;
		b = *in->p++;
		/* the tenth byte may only carry the top bit */
		if (shift == 63 && b > 1)
			return -EBADMSG;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EBADMSG;
}

/* Reads one field's key; for WT_LEN also its body, for the others skips or
 * returns the value. */
struct pb_field {
	uint64_t num;
	unsigned int type;
	uint64_t value;
	struct pb_in body;
};

static int get_field(struct pb_in *in, struct pb_field *f)
{
	uint64_t key, len;
	int err;

	err = get_varint(in, &key);
	if (err)
		return err;
	f->num = key >> 3;
	f->type = key & 7;
	if (f->num == 0)
		return -EBADMSG;
	switch (f->type) {
	case WT_VARINT:
		return get_varint(in, &f->value);
	case WT_I64:
		if (in->end - in->p < 8)
			return -EBADMSG;
		in->p += 8;
		return 0;
	case WT_I32:
		if (in->end - in->p < 4)
			return -EBADMSG;
		in->p += 4;
		return 0;
	case WT_LEN:
		err = get_varint(in, &len);
		if (err)
			return err;
		if (len > (uint64_t)(in->end - in->p))
			return -EBADMSG;
		f->body.p = in->p;
		f->body.end = in->p + len;
		in->p += len;
		return 0;
	}
	return -EBADMSG; /* groups (3, 4) and the unused 6, 7 */
}

static struct fw_str body_str(const struct pb_field *f)
{
	return (struct fw_str){(const char *)f->body.p, (size_t)(f->body.end - f->body.p)};
}

static int decode_endpoint(struct pb_in in, struct fw_fastpath_resolved *out)
{
	struct pb_field f;
	int err;

	while (in.p < in.end) {
		err = get_field(&in, &f);
		if (err)
			return err;
		if (f.num == 1 && f.type == WT_LEN)
			out->component_name = body_str(&f);
		else if (f.num == 2 && f.type == WT_LEN)
			out->protocol = body_str(&f);
		else if (f.num == 3 && f.type == WT_VARINT)
			out->endpoint_port = f.value > 65535 ? 0 : (uint32_t)f.value;
	}
	return 0;
}

static int decode_header(struct pb_in in, struct fw_fastpath_resolved *out)
{
	struct fw_str name = {0}, value = {0};
	struct pb_field f;
	int err;

	while (in.p < in.end) {
		err = get_field(&in, &f);
		if (err)
			return err;
		if (f.num == 1 && f.type == WT_LEN)
			name = body_str(&f);
		else if (f.num == 2 && f.type == WT_LEN)
			value = body_str(&f);
	}
	out->headers++;
	if (name.len == sizeof(FW_FASTPATH_CREDENTIAL_HEADER) - 1 &&
	    strncasecmp(name.p, FW_FASTPATH_CREDENTIAL_HEADER, name.len) == 0)
		out->credential = value;
	else
		out->other_headers++;
	return 0;
}

int fw_fastpath_response_decode(const unsigned char *frame, size_t len,
				struct fw_fastpath_resolved *out)
{
	struct pb_in in;
	struct pb_field f;
	uint32_t msg;
	int err;

	memset(out, 0, sizeof(*out));
	if (len < 5)
		return -EBADMSG;
	if (frame[0] != 0)
		return -EPROTO;
	msg = (uint32_t)frame[1] << 24 | (uint32_t)frame[2] << 16 | (uint32_t)frame[3] << 8 |
	      frame[4];
	if (msg > FW_FASTPATH_MSG_MAX)
		return -EMSGSIZE;
	if (msg != len - 5)
		return -EBADMSG;
	in.p = frame + 5;
	in.end = frame + len;
	while (in.p < in.end) {
		err = get_field(&in, &f);
		if (err)
			return err;
		switch (f.num) {
		case 1:
			if (f.type == WT_LEN)
				out->sandbox_uid = body_str(&f);
			break;
		case 2:
			if (f.type == WT_LEN && (err = decode_endpoint(f.body, out)))
				return err;
			break;
		case 3:
			if (f.type == WT_LEN)
				out->proxy_endpoint = body_str(&f);
			break;
		case 4:
			if (f.type == WT_LEN && (err = decode_header(f.body, out)))
				return err;
			break;
		case 5:
			if (f.type == WT_VARINT)
				out->route_generation = f.value;
			break;
		case 6:
			if (f.type == WT_VARINT)
				out->expires_at = (int64_t)f.value;
			break;
		}
	}
	if (!out->proxy_endpoint.len)
		return -EPROTO;
	return 0;
}

static int host_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

long fw_fastpath_endpoint_base(const char *url, size_t len)
{
	size_t i, host, port_digits = 0;

	if (len > FW_FASTPATH_ENDPOINT_MAX)
		return -EINVAL;
	if (len > 7 && strncasecmp(url, "http://", 7) == 0)
		i = 7;
	else if (len > 8 && strncasecmp(url, "https://", 8) == 0)
		i = 8;
	else
		return -EINVAL;
	host = i;
	if (url[i] == '[') {
		/* an IPv6 literal: hex digits, colons, dots */
		for (i++; i < len && url[i] != ']'; i++)
			if (!(url[i] == ':' || url[i] == '.' || (url[i] >= '0' && url[i] <= '9') ||
			      (url[i] >= 'a' && url[i] <= 'f') || (url[i] >= 'A' && url[i] <= 'F')))
				return -EINVAL;
		if (i == len || i == host + 1)
			return -EINVAL;
		i++;
	} else {
		while (i < len && host_char((unsigned char)url[i]))
			i++;
		if (i == host)
			return -EINVAL;
	}
	if (i < len && url[i] == ':') {
		unsigned long port = 0;

		for (i++; i < len && url[i] >= '0' && url[i] <= '9'; i++) {
			port = port * 10 + (unsigned long)(url[i] - '0');
			if (++port_digits > 5)
				return -EINVAL;
		}
		if (!port_digits || port < 1 || port > 65535)
			return -EINVAL;
	}
	if (i == len)
		return (long)i;
	if (i == len - 1 && url[i] == '/')
		return (long)i;
	return -EINVAL;
}

int fw_fastpath_header_value_ok(const char *v, size_t len)
{
	if (len == 0 || len > FW_FASTPATH_HEADER_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			return 0;
	return 1;
}
