// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Placement: member records and the five-step decision. The order of the
 * steps is the point: an idle pod here beats one elsewhere (a hop costs a
 * round trip), an idle pod elsewhere beats scaling here, and scaling here
 * beats forwarding to a cluster that would have to scale too (a hop and a
 * second queue, no capacity gained). Nothing placeable parks locally, so
 * the operator sees it; it never bounces between clusters. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/placement.h"

static const char *const member_errors[FW_MEMBER_E_MAX] = {
#define FW_MEMBER_TEXT(name, num, text) [num] = text,
	FW_MEMBER_ERRORS(FW_MEMBER_TEXT)
#undef FW_MEMBER_TEXT
};

const char *fw_member_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code <= 0 || code >= FW_MEMBER_E_MAX || !member_errors[code])
		return "unknown error";
	return member_errors[code];
}

/* a Kubernetes-style name: letters, digits, '.', '_', '-' */
static int name_ok(const char *p, size_t len)
{
	size_t i;

	if (len == 0 || len > FW_CLUSTER_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

/* decimal 0..FW_MEMBER_COUNT_MAX without sign or leading zero */
static int count_parse(const char *p, size_t len, long *out)
{
	long v = 0;
	size_t i;

	if (len == 0 || len > 7 || (len > 1 && p[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	if (v > FW_MEMBER_COUNT_MAX)
		return -1;
	*out = v;
	return 0;
}

enum { K_CLUSTER, K_NS, K_ENV, K_POOL, K_IDLE, K_AUTOSCALE, K_HEADROOM, K_MAX };

static const char *const member_keys[K_MAX] = {
	[K_CLUSTER] = "cluster",   [K_NS] = "namespace", [K_ENV] = "env",
	[K_POOL] = "pool",	   [K_IDLE] = "idle",	 [K_AUTOSCALE] = "autoscale",
	[K_HEADROOM] = "headroom",
};

static int set_name(char *dst, const char *p, size_t len)
{
	if (!name_ok(p, len))
		return -FW_MEMBER_E_NAME;
	memcpy(dst, p, len);
	dst[len] = '\0';
	return 0;
}

static int member_field(struct fw_member *m, int k, const char *v, size_t vlen)
{
	long n;

	switch (k) {
	case K_CLUSTER:
		if (!fw_cluster_id_ok(v, vlen))
			return -FW_MEMBER_E_CLUSTER;
		memcpy(m->cluster, v, vlen);
		m->cluster[vlen] = '\0';
		return 0;
	case K_NS:
		return set_name(m->ns, v, vlen);
	case K_ENV:
		return set_name(m->env, v, vlen);
	case K_POOL:
		return set_name(m->pool, v, vlen);
	case K_IDLE:
		if (count_parse(v, vlen, &n))
			return -FW_MEMBER_E_COUNT;
		m->idle = (uint32_t)n;
		return 0;
	case K_AUTOSCALE:
		if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
			return -FW_MEMBER_E_FLAG;
		m->autoscale = v[0] == '1';
		return 0;
	default:
		if (vlen == 2 && v[0] == '-' && v[1] == '1') {
			m->headroom = FW_MEMBER_UNBOUNDED;
			return 0;
		}
		if (count_parse(v, vlen, &n))
			return -FW_MEMBER_E_COUNT;
		m->headroom = (int32_t)n;
		return 0;
	}
}

int fw_member_parse(const char *text, size_t len, struct fw_member *out)
{
	unsigned int seen = 0;
	const char *p = text, *end, *amp, *eq;
	int k, err;

	memset(out, 0, sizeof(*out));
	if (len > FW_MEMBER_TEXT_MAX)
		return -FW_MEMBER_E_TOO_LONG;
	if (len && text[len - 1] == '\n')
		len--;
	if (len && text[len - 1] == '\r')
		len--;
	end = text + len;
	if (p == end)
		return -FW_MEMBER_E_MISSING;

	while (p <= end) {
		amp = memchr(p, '&', (size_t)(end - p));
		if (!amp)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if (!eq || eq == p)
			return -FW_MEMBER_E_SYNTAX;
		for (k = 0; k < K_MAX; k++)
			if (strlen(member_keys[k]) == (size_t)(eq - p) &&
			    memcmp(member_keys[k], p, (size_t)(eq - p)) == 0)
				break;
		if (k == K_MAX)
			return -FW_MEMBER_E_UNKNOWN_KEY;
		if (seen & (1u << k))
			return -FW_MEMBER_E_DUPLICATE;
		seen |= 1u << k;
		err = member_field(out, k, eq + 1, (size_t)(amp - eq - 1));
		if (err)
			return err;
		p = amp + 1;
	}

	if ((seen & 0x1f) != 0x1f) /* cluster, namespace, env, pool, idle */
		return -FW_MEMBER_E_MISSING;
	return 0;
}

int fw_member_format(const struct fw_member *m, char *out, size_t outlen)
{
	int n;

	n = snprintf(out, outlen,
		     "cluster=%s&namespace=%s&env=%s&pool=%s&idle=%u&autoscale=%u"
		     "&headroom=%d",
		     m->cluster, m->ns, m->env, m->pool, m->idle, m->autoscale, m->headroom);
	if (n < 0 || (size_t)n >= outlen)
		return -1;
	return n;
}

/* the first "\r\n\r\n" in [p, end), or NULL */
static const char *head_end(const char *p, const char *end)
{
	for (; end - p >= 4; p++)
		if (memcmp(p, "\r\n\r\n", 4) == 0)
			return p;
	return NULL;
}

void fw_member_answers_scan(const char *buf, size_t len, struct fw_member_answers *out)
{
	const char *p = buf, *end = buf + len, *eol, *body;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		/* "HTTP/1.x NNN" at a line's start */
		if (eol - p >= 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ') {
			if (memcmp(p + 9, "204", 3) == 0) {
				out->ok++;
			} else if (!out->bad) {
				out->bad = p + 9;
				out->bad_len = (size_t)(eol - out->bad);
				if (out->bad_len && out->bad[out->bad_len - 1] == '\r')
					out->bad_len--;
				body = head_end(p, end);
				if (body && end - body - 4 >= 10 &&
				    memcmp(body + 4, "{\"error\":\"", 10) == 0) {
					out->why = body + 4;
					eol = memchr(out->why, '\n', (size_t)(end - out->why));
					if (!eol)
						eol = end;
					out->why_len = (size_t)(eol - out->why);
				}
			}
		}
		p = eol < end ? eol + 1 : end;
	}
}

static int can_grow(const struct fw_member *m)
{
	return m->autoscale && m->headroom != 0;
}

int fw_member_live(const struct fw_member *m, int64_t now)
{
	return now < m->expires && (m->idle > 0 || can_grow(m));
}

/* headroom as a rank: unbounded above every count */
static int64_t headroom_rank(const struct fw_member *m)
{
	return m->headroom == FW_MEMBER_UNBOUNDED ? INT64_MAX : m->headroom;
}

int fw_member_rank(const struct fw_member *a, const struct fw_member *b)
{
	int ta = a->idle > 0 ? 0 : 1, tb = b->idle > 0 ? 0 : 1, c;

	if (ta != tb)
		return ta - tb;
	if (ta == 0 && a->idle != b->idle)
		return a->idle > b->idle ? -1 : 1;
	if (ta == 1 && headroom_rank(a) != headroom_rank(b))
		return headroom_rank(a) > headroom_rank(b) ? -1 : 1;
	c = strcmp(a->cluster, b->cluster);
	if (c)
		return c;
	return strcmp(a->pool, b->pool);
}

int fw_place(const char *local_cluster, const struct fw_member *recs, size_t n, const char *ns,
	     const char *env, int64_t now, struct fw_place *out)
{
	const struct fw_member *best_idle = NULL, *best_grow = NULL, *m;
	uint64_t local_idle = 0;
	int local_grow = 0, known = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		m = &recs[i];
		if (now >= m->expires || strcmp(m->ns, ns) != 0 || strcmp(m->env, env) != 0)
			continue;
		known = 1;
		if (strcmp(m->cluster, local_cluster) == 0) {
			local_idle += m->idle;
			local_grow |= can_grow(m);
			continue;
		}
		if (!fw_member_live(m, now))
			continue;
		if (m->idle > 0) {
			if (!best_idle || fw_member_rank(m, best_idle) < 0)
				best_idle = m;
		} else if (!best_grow || fw_member_rank(m, best_grow) < 0) {
			best_grow = m;
		}
	}
	if (!known)
		return -ENOENT;

	if (local_idle > 0) {
		out->kind = FW_PLACE_LOCAL, out->step = 1;
	} else if (best_idle) {
		out->kind = FW_PLACE_FORWARD, out->step = 2, out->target = best_idle;
	} else if (local_grow) {
		out->kind = FW_PLACE_LOCAL, out->step = 3;
	} else if (best_grow) {
		out->kind = FW_PLACE_FORWARD, out->step = 4, out->target = best_grow;
	} else {
		out->kind = FW_PLACE_PARK, out->step = 5;
	}
	return 0;
}
