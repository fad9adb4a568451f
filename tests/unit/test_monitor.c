// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The monitor protocol: filters from the command line and from the
 * request line, what they match, and the event lines a reader gets as
 * JSON and as text. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "protocol/monitor.h"

static struct fw_mon_event drop_event(void)
{
	struct fw_mon_event ev = {
		.kind = FW_MON_DROP,
		.time_ns = 1764612000123456789ull,
		.subject = 7,
		.name = "sandbox-b",
		.reason = "default-deny",
		.sport = 41000,
		.dport = 80,
		.proto = 6,
		.ifname = "sb-b",
	};

	fw_addr_parse("10.42.0.3", &ev.src, NULL);
	fw_addr_parse("198.51.100.10", &ev.dst, NULL);
	return ev;
}

static struct fw_mon_event dns_event(void)
{
	struct fw_mon_event ev = {
		.kind = FW_MON_DNS,
		.time_ns = 1764612000000000000ull,
		.subject = 3,
		.name = "sandbox-a",
		.reason = "dns-allowed-name",
		.qname = "api.example.com",
		.qtype = 1,
		.allowed = true,
		.rcode = 0,
		.nlearned = 2,
	};

	fw_addr_parse("10.42.0.2", &ev.src, NULL);
	fw_addr_parse("198.51.100.10", &ev.learned[0], NULL);
	fw_addr_parse("2001:db8::10", &ev.learned[1], NULL);
	return ev;
}

static void set_ok(struct fw_mon_filter *f, const char *k, const char *v)
{
	char err[128] = "";

	cr_assert_eq(fw_mon_filter_set(f, k, v, err, sizeof(err)), 0, "%s=%s: %s", k, v, err);
}

static void set_bad(const char *k, const char *v, const char *want)
{
	struct fw_mon_filter f, before;
	char err[128] = "";

	fw_mon_filter_init(&f);
	set_ok(&f, "subject", "x");
	before = f;
	cr_assert_eq(fw_mon_filter_set(&f, k, v, err, sizeof(err)), -EINVAL, "%s=%s", k, v);
	cr_assert(strstr(err, want), "%s=%s: '%s' lacks '%s'", k, v, err, want);
	cr_assert(!memcmp(&f, &before, sizeof(f)), "a refused filter changed nothing");
}

Test(monitor_filter, empty_matches_all)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event(), n = dns_event();

	fw_mon_filter_init(&f);
	cr_assert(fw_mon_match(&f, &d));
	cr_assert(fw_mon_match(&f, &n));
}

Test(monitor_filter, kinds)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event(), n = dns_event();

	fw_mon_filter_init(&f);
	set_ok(&f, "kind", "dns");
	cr_assert(!fw_mon_match(&f, &d));
	cr_assert(fw_mon_match(&f, &n));
	set_ok(&f, "kind", "drop,allow");
	cr_assert_eq(f.kinds, FW_MON_DROP | FW_MON_ALLOW);
	cr_assert(fw_mon_match(&f, &d));
	cr_assert(!fw_mon_match(&f, &n));
	set_bad("kind", "drop,bogus", "unknown event kind 'bogus'");
	set_bad("kind", "", "kind is empty");
	set_bad("kind", ",", "unknown event kind ''");
	set_bad("kind", "dro", "unknown event kind");
}

Test(monitor_filter, subject_by_name_or_id)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event();

	fw_mon_filter_init(&f);
	set_ok(&f, "subject", "sandbox-b");
	cr_assert(fw_mon_match(&f, &d));
	set_ok(&f, "subject", "sandbox-a");
	cr_assert(!fw_mon_match(&f, &d));
	set_ok(&f, "subject", "7");
	cr_assert(f.by_id);
	cr_assert(fw_mon_match(&f, &d));
	set_ok(&f, "subject", "8");
	cr_assert(!fw_mon_match(&f, &d));
	/* a uid that starts with a digit but is no number is a name */
	set_ok(&f, "subject", "7b");
	cr_assert(!f.by_id);
	d.name = NULL; /* no subject: a name never matches */
	set_ok(&f, "subject", "sandbox-b");
	cr_assert(!fw_mon_match(&f, &d));
	set_bad("subject", "", "subject must be");
}

Test(monitor_filter, reason)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event(), n = dns_event();

	fw_mon_filter_init(&f);
	set_ok(&f, "reason", "default-deny");
	cr_assert(fw_mon_match(&f, &d));
	cr_assert(!fw_mon_match(&f, &n));
	set_ok(&f, "reason", "dns-allowed-name");
	cr_assert(fw_mon_match(&f, &n));
	set_bad("reason", "", "reason must be");
	set_bad("reason", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"reason must be");
}

Test(monitor_filter, addr_and_cidr)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event(), n = dns_event();

	fw_mon_filter_init(&f);
	set_ok(&f, "addr", "198.51.100.0/24");
	cr_assert(fw_mon_match(&f, &d), "destination in the CIDR");
	cr_assert(fw_mon_match(&f, &n), "a learned address in the CIDR");
	set_ok(&f, "addr", "10.42.0.3");
	cr_assert(fw_mon_match(&f, &d), "the source itself");
	cr_assert(!fw_mon_match(&f, &n));
	set_ok(&f, "addr", "2001:db8::/32");
	cr_assert(!fw_mon_match(&f, &d));
	cr_assert(fw_mon_match(&f, &n), "the learned IPv6 address");
	set_ok(&f, "addr", "203.0.113.0/24");
	cr_assert(!fw_mon_match(&f, &d));
	cr_assert(!fw_mon_match(&f, &n));
	set_bad("addr", "10.0.0.0/33", "addr must be");
	set_bad("addr", "example.com", "addr must be");
	set_bad("color", "red", "unknown filter 'color'");
}

Test(monitor_filter, all_filters_at_once)
{
	struct fw_mon_filter f;
	struct fw_mon_event d = drop_event();

	fw_mon_filter_init(&f);
	set_ok(&f, "kind", "drop");
	set_ok(&f, "subject", "sandbox-b");
	set_ok(&f, "reason", "default-deny");
	set_ok(&f, "addr", "198.51.100.10/32");
	cr_assert(fw_mon_match(&f, &d));
	d.dport = 443; /* no filter on ports */
	cr_assert(fw_mon_match(&f, &d));
	d.reason = "pass-rule";
	cr_assert(!fw_mon_match(&f, &d));
}

Test(monitor_request, round_trip)
{
	struct fw_mon_filter f, g;
	char err[128], *line;

	fw_mon_filter_init(&f);
	set_ok(&f, "kind", "drop,dns");
	set_ok(&f, "subject", "sb \"q\"");
	set_ok(&f, "reason", "default-deny");
	set_ok(&f, "addr", "10.42.0.5/24");
	line = fw_mon_request_format(&f);
	cr_assert(line);
	cr_assert_eq(line[strlen(line) - 1], '\n');
	cr_assert_eq(fw_mon_request_parse(line, strlen(line) - 1, &g, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert(!memcmp(&f, &g, sizeof(f)));
	free(line);

	fw_mon_filter_init(&f);
	line = fw_mon_request_format(&f);
	cr_assert_str_eq(line, "{}\n");
	free(line);
}

static void req_bad(const char *req, const char *want)
{
	struct fw_mon_filter f;
	char err[160] = "";

	fw_mon_filter_init(&f);
	set_ok(&f, "subject", "kept");
	cr_assert_eq(fw_mon_request_parse(req, strlen(req), &f, err, sizeof(err)), -EINVAL, "%s",
		     req);
	cr_assert(strstr(err, want), "%s: '%s' lacks '%s'", req, err, want);
	cr_assert_str_eq(f.subject, "kept", "a refused request changes nothing");
}

Test(monitor_request, refusals)
{
	char big[FW_MON_REQ_MAX + 2];

	req_bad("", "request is no JSON");
	req_bad("{\"kind\":", "request is no JSON");
	req_bad("[]", "must be a JSON object");
	req_bad("{\"kind\":1}", "filter 'kind' must be a string");
	req_bad("{\"subject\":null}", "must be a string");
	req_bad("{\"kind\":\"dns\",\"kind\":\"drop\"}", "request is no JSON");
	req_bad("{\"subject\":\"a\\u0000b\"}", "request is no JSON");
	req_bad("{\"port\":\"80\"}", "unknown filter 'port'");
	req_bad("{\"addr\":\"300.1.1.1\"}", "addr must be");
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	req_bad(big, "longer than");
}

static json_t *parsed(char *line, size_t len)
{
	json_t *o;

	cr_assert(line);
	cr_assert_eq(line[len - 1], '\n');
	cr_assert(!memchr(line, '\n', len - 1), "one line");
	o = json_loadb(line, len, 0, NULL);
	cr_assert(o && json_is_object(o), "%s", line);
	free(line);
	return o;
}

#define S(o, k) json_string_value(json_object_get(o, k))
#define I(o, k) json_integer_value(json_object_get(o, k))

Test(monitor_event, drop_json)
{
	struct fw_mon_event ev = drop_event();
	size_t len = 0;
	char *line = fw_mon_event_json(&ev, &len);
	json_t *o = parsed(line, len);

	cr_assert_str_eq(S(o, "kind"), "drop");
	cr_assert_str_eq(S(o, "time"), "2025-12-01T18:00:00.123456Z");
	cr_assert_str_eq(S(o, "subject"), "sandbox-b");
	cr_assert_eq(I(o, "subject_id"), 7);
	cr_assert_str_eq(S(o, "reason"), "default-deny");
	cr_assert_str_eq(S(o, "src"), "10.42.0.3");
	cr_assert_eq(I(o, "sport"), 41000);
	cr_assert_str_eq(S(o, "dst"), "198.51.100.10");
	cr_assert_eq(I(o, "dport"), 80);
	cr_assert_str_eq(S(o, "proto"), "tcp");
	cr_assert_str_eq(S(o, "verdict"), "drop");
	cr_assert_str_eq(S(o, "if"), "sb-b");
	json_decref(o);
}

Test(monitor_event, dns_json)
{
	struct fw_mon_event ev = dns_event();
	size_t len = 0;
	char *line = fw_mon_event_json(&ev, &len);
	json_t *o = parsed(line, len), *l;

	cr_assert_str_eq(S(o, "kind"), "dns");
	cr_assert_str_eq(S(o, "query"), "api.example.com");
	cr_assert_str_eq(S(o, "type"), "A");
	cr_assert_str_eq(S(o, "verdict"), "allow");
	cr_assert_str_eq(S(o, "rcode"), "NOERROR");
	l = json_object_get(o, "learned");
	cr_assert_eq(json_array_size(l), 2);
	cr_assert_str_eq(json_string_value(json_array_get(l, 0)), "198.51.100.10");
	cr_assert_str_eq(json_string_value(json_array_get(l, 1)), "2001:db8::10");
	json_decref(o);
}

Test(monitor_event, untrusted_names_stay_one_line)
{
	struct fw_mon_event ev = dns_event();
	size_t len = 0;
	char *line;
	json_t *o;

	ev.qname = "evil\n{\"kind\":\"lost\"}";
	ev.name = "\xff\xfe"; /* not UTF-8: left out, the event kept */
	line = fw_mon_event_json(&ev, &len);
	o = parsed(line, len);
	cr_assert_str_eq(S(o, "query"), "evil\n{\"kind\":\"lost\"}");
	cr_assert_str_eq(S(o, "subject"), "");
	json_decref(o);
}

static void text_of(const struct fw_mon_event *ev, char *out, size_t outlen)
{
	size_t len = 0;
	char *line = fw_mon_event_json(ev, &len);

	cr_assert(line);
	cr_assert_eq(fw_mon_render_text(line, len, out, outlen), 0);
	free(line);
}

Test(monitor_event, text)
{
	struct fw_mon_event d = drop_event(), n = dns_event();
	char out[512];
	size_t len = 0;
	char *line;

	text_of(&d, out, sizeof(out));
	cr_assert_str_eq(out,
			 "18:00:00.123 sandbox-b 10.42.0.3:41000 -> 198.51.100.10:80 tcp DROPPED "
			 "(default-deny) if=sb-b");
	text_of(&n, out, sizeof(out));
	cr_assert_str_eq(out, "18:00:00.000 sandbox-a 10.42.0.2 DNS A api.example.com ALLOWED "
			      "(dns-allowed-name) NOERROR learned 198.51.100.10,2001:db8::10");
	d.kind = FW_MON_ALLOW;
	d.reason = "pass-rule";
	d.sample = 100;
	fw_addr_parse("2001:db8::10", &d.dst, NULL);
	text_of(&d, out, sizeof(out));
	cr_assert_str_eq(out, "18:00:00.123 sandbox-b 10.42.0.3:41000 -> [2001:db8::10]:80 tcp "
			      "ALLOWED (pass-rule) if=sb-b sample=1/100");
	line = fw_mon_lost_json(42, &len);
	cr_assert_eq(fw_mon_render_text(line, len, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "lost 42 events");
	free(line);
	cr_assert_eq(fw_mon_render_text("{\"kind\":\"x\"}", 12, out, sizeof(out)), -EINVAL);
	cr_assert_eq(fw_mon_render_text("nope", 4, out, sizeof(out)), -EINVAL);
}

/* A verdict of the layer-7 proxy: the connection, its kind and the name
 * it was on; kind "l7" filters it. */
Test(monitor_event, l7)
{
	struct fw_mon_event ev = drop_event();
	struct fw_mon_filter f;
	char out[512];
	size_t len = 0;
	char *line;
	json_t *o;

	ev.kind = FW_MON_L7;
	ev.reason = "l7-name";
	ev.sport = 41000;
	ev.dport = 443;
	ev.ifname = "tls";
	ev.qname = "evil.example.net";
	ev.allowed = false;
	line = fw_mon_event_json(&ev, &len);
	o = parsed(line, len);
	cr_assert_str_eq(S(o, "kind"), "l7");
	cr_assert_str_eq(S(o, "l7"), "tls");
	cr_assert_str_eq(S(o, "server_name"), "evil.example.net");
	cr_assert_str_eq(S(o, "verdict"), "deny");
	cr_assert_str_eq(S(o, "dst"), "198.51.100.10");
	cr_assert_eq(I(o, "dport"), 443);
	json_decref(o);
	text_of(&ev, out, sizeof(out));
	cr_assert_str_eq(out, "18:00:00.123 sandbox-b 10.42.0.3:41000 -> 198.51.100.10:443 L7 tls "
			      "evil.example.net DENIED (l7-name)");
	ev.qname = "";
	ev.allowed = true;
	ev.reason = "l7-pinned";
	text_of(&ev, out, sizeof(out));
	cr_assert_str_eq(out,
			 "18:00:00.123 sandbox-b 10.42.0.3:41000 -> 198.51.100.10:443 L7 tls - "
			 "ALLOWED (l7-pinned)");

	fw_mon_filter_init(&f);
	set_ok(&f, "kind", "l7");
	cr_assert(fw_mon_match(&f, &ev));
	ev.kind = FW_MON_DROP;
	cr_assert_not(fw_mon_match(&f, &ev));
}
