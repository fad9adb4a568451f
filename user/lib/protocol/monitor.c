// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The monitor protocol (monitor.h). The request comes from a local root
 * process but is still parsed as untrusted bytes: bounded, string values
 * only, unknown keys refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/addr.h"
#include "common/json.h"
#include "protocol/monitor.h"

static const struct {
	const char *name;
	enum fw_mon_kind kind;
} kinds[] = {
	{"drop", FW_MON_DROP},
	{"dns", FW_MON_DNS},
	{"allow", FW_MON_ALLOW},
	{"l7", FW_MON_L7},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const char *fw_mon_kind_name(enum fw_mon_kind k)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (kinds[i].kind == k)
			return kinds[i].name;
	return "?";
}

const char *fw_mon_rcode_name(__u8 rcode, char *buf, size_t len)
{
	static const char *const names[] = {"NOERROR",	"FORMERR", "SERVFAIL",
					    "NXDOMAIN", "NOTIMP",  "REFUSED"};

	if (rcode < sizeof(names) / sizeof(names[0]))
		return names[rcode];
	snprintf(buf, len, "RCODE%u", rcode);
	return buf;
}

const char *fw_mon_qtype_name(__u16 qtype, char *buf, size_t len)
{
	switch (qtype) {
	case 1:
		return "A";
	case 5:
		return "CNAME";
	case 12:
		return "PTR";
	case 15:
		return "MX";
	case 16:
		return "TXT";
	case 28:
		return "AAAA";
	case 33:
		return "SRV";
	case 65:
		return "HTTPS";
	}
	snprintf(buf, len, "TYPE%u", qtype);
	return buf;
}

void fw_mon_filter_init(struct fw_mon_filter *f)
{
	memset(f, 0, sizeof(*f));
}

static int parse_kinds(const char *s, unsigned int *out, char *err, size_t errlen)
{
	unsigned int bits = 0;

	while (*s) {
		size_t n = strcspn(s, ",");
		size_t i;

		for (i = 0; i < NKINDS; i++)
			if (strlen(kinds[i].name) == n && !strncmp(s, kinds[i].name, n))
				break;
		if (i == NKINDS) {
			fw_set_reason(err, errlen,
				      "unknown event kind '%.*s' (drop, dns, allow, l7)",
				      (int)(n > 32 ? 32 : n), s);
			return -EINVAL;
		}
		bits |= kinds[i].kind;
		s += n;
		if (*s == ',')
			s++;
	}
	if (!bits) {
		fw_set_reason(err, errlen, "kind is empty (drop, dns, allow, l7)");
		return -EINVAL;
	}
	*out = bits;
	return 0;
}

int fw_mon_filter_set(struct fw_mon_filter *f, const char *key, const char *value, char *err,
		      size_t errlen)
{
	if (!strcmp(key, "kind"))
		return parse_kinds(value, &f->kinds, err, errlen);
	if (!strcmp(key, "subject")) {
		size_t n = strlen(value);
		char *end;
		unsigned long id;

		if (!n || n >= sizeof(f->subject)) {
			fw_set_reason(err, errlen, "subject must be 1-%zu bytes",
				      sizeof(f->subject) - 1);
			return -EINVAL;
		}
		errno = 0;
		id = strtoul(value, &end, 10);
		f->by_id = value[0] >= '0' && value[0] <= '9' && !*end && !errno &&
			   id < FW_MAX_SUBJECTS;
		f->subject_id = f->by_id ? (__u32)id : 0;
		memcpy(f->subject, value, n + 1);
		return 0;
	}
	if (!strcmp(key, "reason")) {
		size_t n = strlen(value);

		if (!n || n >= sizeof(f->reason)) {
			fw_set_reason(err, errlen, "reason must be 1-%zu bytes",
				      sizeof(f->reason) - 1);
			return -EINVAL;
		}
		memcpy(f->reason, value, n + 1);
		return 0;
	}
	if (!strcmp(key, "addr")) {
		struct fw_ip net;
		__u32 plen;

		if (fw_prefix_parse(value, &net, &plen, NULL)) {
			fw_set_reason(err, errlen, "addr must be an address or a CIDR");
			return -EINVAL;
		}
		f->net = net;
		f->plen = plen;
		f->has_prefix = true;
		return 0;
	}
	fw_set_reason(err, errlen, "unknown filter '%.32s' (kind, subject, reason, addr)", key);
	return -EINVAL;
}

static bool addr_match(const struct fw_mon_filter *f, const struct fw_mon_event *ev)
{
	if (fw_prefix_contains(&f->net, f->plen, &ev->src))
		return true;
	if (ev->kind != FW_MON_DNS)
		return fw_prefix_contains(&f->net, f->plen, &ev->dst);
	for (size_t i = 0; i < ev->nlearned && i < FW_MON_MAX_LEARNED; i++)
		if (fw_prefix_contains(&f->net, f->plen, &ev->learned[i]))
			return true;
	return false;
}

bool fw_mon_match(const struct fw_mon_filter *f, const struct fw_mon_event *ev)
{
	if (f->kinds && !(f->kinds & ev->kind))
		return false;
	if (f->subject[0]) {
		if (f->by_id ? ev->subject != f->subject_id
			     : !ev->name || strcmp(ev->name, f->subject) != 0)
			return false;
	}
	if (f->reason[0] && (!ev->reason || strcmp(ev->reason, f->reason) != 0))
		return false;
	if (f->has_prefix && !addr_match(f, ev))
		return false;
	return true;
}

int fw_mon_request_parse(const char *buf, size_t len, struct fw_mon_filter *f, char *err,
			 size_t errlen)
{
	struct fw_mon_filter nf;
	json_error_t jerr;
	const char *key;
	json_t *root, *v;
	char why[128];
	int ret = 0;

	if (len > FW_MON_REQ_MAX) {
		fw_set_reason(err, errlen, "request longer than %d bytes", FW_MON_REQ_MAX);
		return -EINVAL;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		fw_set_reason(err, errlen, "request is no JSON: %s",
			      fw_json_error(&jerr, why, sizeof(why)));
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		fw_set_reason(err, errlen, "request must be a JSON object");
		json_decref(root);
		return -EINVAL;
	}
	fw_mon_filter_init(&nf);
	json_object_foreach(root, key, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			fw_set_reason(err, errlen, "filter '%.32s' must be a string", key);
			ret = -EINVAL;
			break;
		}
		ret = fw_mon_filter_set(&nf, key, json_string_value(v), err, errlen);
		if (ret)
			break;
	}
	json_decref(root);
	if (!ret)
		*f = nf;
	return ret;
}

char *fw_mon_request_format(const struct fw_mon_filter *f)
{
	json_t *o = json_object();
	char kbuf[32] = "", addr[FW_ADDR_STRLEN + 8];
	char *s, *line = NULL;

	if (!o)
		return NULL;
	if (f->kinds) {
		for (size_t i = 0; i < NKINDS; i++) {
			if (!(f->kinds & kinds[i].kind))
				continue;
			if (kbuf[0])
				strcat(kbuf, ",");
			strcat(kbuf, kinds[i].name);
		}
		json_object_set_new(o, "kind", json_string(kbuf));
	}
	if (f->subject[0])
		json_object_set_new(o, "subject", json_string(f->subject));
	if (f->reason[0])
		json_object_set_new(o, "reason", json_string(f->reason));
	if (f->has_prefix)
		json_object_set_new(
			o, "addr",
			json_string(fw_prefix_str(&f->net, f->plen, addr, sizeof(addr))));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s && asprintf(&line, "%s\n", s) < 0)
		line = NULL;
	free(s);
	return line;
}

static const char *proto_name(__u8 p, char *buf, size_t len)
{
	switch (p) {
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	}
	snprintf(buf, len, "ip%u", p);
	return buf;
}

static char *dump_line(json_t *o, size_t *len)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	char *line = NULL;
	int n;

	json_decref(o);
	if (!s)
		return NULL;
	n = asprintf(&line, "%s\n", s);
	free(s);
	if (n < 0)
		return NULL;
	if (len)
		*len = (size_t)n;
	return line;
}

static void set_time(json_t *o, __u64 ns)
{
	time_t sec = (time_t)(ns / FW_NSEC_PER_SEC);
	char stamp[40], full[48];
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(full, sizeof(full), "%s.%06lluZ", stamp,
		 (unsigned long long)(ns % FW_NSEC_PER_SEC / 1000));
	json_object_set_new(o, "time", json_string(full));
}

/* jansson refuses invalid UTF-8: such a name (from a packet or a config)
 * goes as the empty string rather than losing the event */
static json_t *str_or_empty(const char *s)
{
	json_t *j = json_string(s ? s : "");

	return j ? j : json_string("");
}

char *fw_mon_event_json(const struct fw_mon_event *ev, size_t *len)
{
	char a[FW_ADDR_STRLEN], b[16];
	json_t *o = json_object(), *arr;

	if (!o)
		return NULL;
	set_time(o, ev->time_ns);
	json_object_set_new(o, "kind", json_string(fw_mon_kind_name(ev->kind)));
	json_object_set_new(o, "subject", str_or_empty(ev->name));
	json_object_set_new(o, "subject_id", json_integer(ev->subject));
	json_object_set_new(o, "reason", str_or_empty(ev->reason));
	json_object_set_new(o, "src", json_string(fw_addr_str(&ev->src, a, sizeof(a))));
	if (ev->kind == FW_MON_DNS) {
		json_object_set_new(o, "query", str_or_empty(ev->qname));
		json_object_set_new(o, "type",
				    json_string(fw_mon_qtype_name(ev->qtype, b, sizeof(b))));
		json_object_set_new(o, "verdict", json_string(ev->allowed ? "allow" : "deny"));
		json_object_set_new(o, "rcode",
				    json_string(fw_mon_rcode_name(ev->rcode, b, sizeof(b))));
		arr = json_array();
		for (size_t i = 0; arr && i < ev->nlearned && i < FW_MON_MAX_LEARNED; i++)
			json_array_append_new(
				arr, json_string(fw_addr_str(&ev->learned[i], a, sizeof(a))));
		json_object_set_new(o, "learned", arr ? arr : json_null());
		return dump_line(o, len);
	}
	json_object_set_new(o, "sport", json_integer(ev->sport));
	json_object_set_new(o, "dst", json_string(fw_addr_str(&ev->dst, a, sizeof(a))));
	json_object_set_new(o, "dport", json_integer(ev->dport));
	if (ev->kind == FW_MON_L7) {
		json_object_set_new(o, "l7", str_or_empty(ev->ifname));
		json_object_set_new(o, "server_name", str_or_empty(ev->qname));
		json_object_set_new(o, "verdict", json_string(ev->allowed ? "allow" : "deny"));
		return dump_line(o, len);
	}
	json_object_set_new(o, "proto", json_string(proto_name(ev->proto, b, sizeof(b))));
	json_object_set_new(o, "verdict", json_string(ev->kind == FW_MON_DROP ? "drop" : "allow"));
	json_object_set_new(o, "if", str_or_empty(ev->ifname));
	if (ev->kind == FW_MON_DROP)
		json_object_set_new(o, "suppressed", json_integer((json_int_t)ev->suppressed));
	else
		json_object_set_new(o, "sample", json_integer(ev->sample));
	return dump_line(o, len);
}

char *fw_mon_lost_json(__u64 n, size_t *len)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "kind", json_string("lost"));
	json_object_set_new(o, "lost", json_integer((json_int_t)n));
	return dump_line(o, len);
}

static const char *get_s(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static long long get_i(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* "192.0.2.1:80", "[2001:db8::1]:80" */
static void hostport(char *buf, size_t len, const char *addr, long long port)
{
	snprintf(buf, len, strchr(addr, ':') ? "[%s]:%lld" : "%s:%lld", addr, port);
}

int fw_mon_render_text(const char *line, size_t len, char *out, size_t outlen)
{
	char src[FW_ADDR_STRLEN + 16], dst[FW_ADDR_STRLEN + 16], stamp[32];
	const char *kind, *t, *who;
	json_t *o = json_loadb(line, len, 0, NULL);
	int ret = 0;

	if (!o || !json_is_object(o)) {
		json_decref(o);
		return -EINVAL;
	}
	kind = get_s(o, "kind");
	if (!strcmp(kind, "lost")) {
		snprintf(out, outlen, "lost %lld events", get_i(o, "lost"));
		json_decref(o);
		return 0;
	}
	/* "2026-12-01T18:00:00.123456Z" -> "18:00:00.123" */
	t = get_s(o, "time");
	snprintf(stamp, sizeof(stamp), "%.12s", strlen(t) > 11 ? t + 11 : t);
	who = get_s(o, "subject")[0] ? get_s(o, "subject") : "-";
	if (!strcmp(kind, "dns")) {
		json_t *arr = json_object_get(o, "learned");
		size_t n = 0, i;
		json_t *v;

		n = (size_t)snprintf(out, outlen, "%s %s %s DNS %s %s %s (%s) %s", stamp, who,
				     get_s(o, "src"), get_s(o, "type"), get_s(o, "query"),
				     strcmp(get_s(o, "verdict"), "allow") ? "DENIED" : "ALLOWED",
				     get_s(o, "reason"), get_s(o, "rcode"));
		json_array_foreach(arr, i, v)
		{
			if (n >= outlen)
				break;
			n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? "," : " learned ",
					      json_string_value(v) ? json_string_value(v) : "");
		}
	} else if (!strcmp(kind, "l7")) {
		hostport(src, sizeof(src), get_s(o, "src"), get_i(o, "sport"));
		hostport(dst, sizeof(dst), get_s(o, "dst"), get_i(o, "dport"));
		snprintf(out, outlen, "%s %s %s -> %s L7 %s %s %s (%s)", stamp, who, src, dst,
			 get_s(o, "l7"), get_s(o, "server_name")[0] ? get_s(o, "server_name") : "-",
			 strcmp(get_s(o, "verdict"), "allow") ? "DENIED" : "ALLOWED",
			 get_s(o, "reason"));
	} else if (!strcmp(kind, "drop") || !strcmp(kind, "allow")) {
		bool drop = kind[0] == 'd';

		hostport(src, sizeof(src), get_s(o, "src"), get_i(o, "sport"));
		hostport(dst, sizeof(dst), get_s(o, "dst"), get_i(o, "dport"));
		if (drop)
			snprintf(out, outlen, "%s %s %s -> %s %s DROPPED (%s) if=%s", stamp, who,
				 src, dst, get_s(o, "proto"), get_s(o, "reason"), get_s(o, "if"));
		else
			snprintf(out, outlen, "%s %s %s -> %s %s ALLOWED (%s) if=%s sample=1/%lld",
				 stamp, who, src, dst, get_s(o, "proto"), get_s(o, "reason"),
				 get_s(o, "if"), get_i(o, "sample"));
	} else {
		ret = -EINVAL;
	}
	json_decref(o);
	return ret;
}
