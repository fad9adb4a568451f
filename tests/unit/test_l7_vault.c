// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The vault blob's reader and the binding matcher (user/lib/l7/vault.c):
 * blobs written by the test encoder (l7_vault_enc.h) from the header's
 * layout decode field for field; every cut, a trailing byte, and each
 * lie a record can tell are refused; then the matching semantics: hosts
 * exact or "*.domain", schemes (none: https only), ports, methods, paths
 * exact or prefix, the raw path checked too, and the first binding wins. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "l7/vault.h"
#include "l7_vault_enc.h"

#define ROOM 16

static uint8_t blob[8192];
static size_t blob_len;
static struct fw_l7_binding idx[ROOM];
static struct fw_l7_vault vault = {0, idx};

/* api.example.com, X-Api-Key, https (schemes 0: the list absent) */
static struct venc_binding api(void)
{
	struct venc_binding b = {0};

	b.auth = FW_L7_AUTH_API_KEY;
	b.name = VS("api");
	b.header = VS("X-Api-Key");
	b.value = VS("sk-test-1");
	b.nhosts = 1;
	b.hosts[0] = VS("api.example.com");
	return b;
}

static int decode(const struct venc_binding *b, unsigned int n)
{
	const char *why;

	blob_len = venc_vault(blob, sizeof(blob), b, n);
	cr_assert(blob_len > 0);
	return fw_l7_vault_decode(blob, blob_len, &vault, ROOM, &why);
}

static void refused(const struct venc_binding *b, const char *want)
{
	const char *why = NULL;

	blob_len = venc_vault(blob, sizeof(blob), b, 1);
	cr_assert(blob_len > 0);
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, &why), -EINVAL);
	cr_assert_not_null(why);
	cr_assert(strstr(why, want), "why \"%s\", wanted \"%s\"", why, want);
	cr_assert_eq(vault.nbindings, 0);
}

static struct fw_l7_request req(const char *host, unsigned int scheme, uint16_t port,
				const char *method, const char *path)
{
	struct fw_l7_request r = {0};

	r.host = host;
	r.host_len = strlen(host);
	r.scheme = scheme;
	r.port = port;
	r.method = method;
	r.method_len = strlen(method);
	r.path = path;
	r.path_len = strlen(path);
	return r;
}

static bool matches(const char *host, unsigned int scheme, uint16_t port, const char *method,
		    const char *path)
{
	struct fw_l7_request r = req(host, scheme, port, method, path);

	return fw_l7_vault_match(&vault, &r) != NULL;
}

static bool https_get(const char *host, const char *path)
{
	return matches(host, FW_L7_SCHEME_HTTPS, 443, "GET", path);
}

Test(l7_vault, decodes_every_field)
{
	struct venc_binding b[2] = {api(), api()};
	const struct fw_l7_binding *d;
	const uint8_t *at;
	size_t len;
	const char *s;

	b[1].auth = FW_L7_AUTH_BEARER;
	b[1].schemes = FW_L7_SCHEME_HTTP | FW_L7_SCHEME_HTTPS;
	b[1].name = VS("gh");
	b[1].header = VS("Authorization");
	b[1].value = VS("Bearer t0k3n");
	b[1].nports = 2;
	b[1].ports[0] = 443;
	b[1].ports[1] = 8443;
	b[1].nhosts = 2;
	b[1].hosts[1] = VS("*.github.com");
	b[1].nmethods = 1;
	b[1].methods[0] = VS("POST");
	b[1].npaths = 2;
	b[1].paths[0] = VS("/v1/*");
	b[1].paths[1] = VS("/login");
	cr_assert_eq(decode(b, 2), 0);
	cr_assert_eq(vault.nbindings, 2);
	d = &vault.bindings[1];
	cr_assert_eq(d->auth, FW_L7_AUTH_BEARER);
	cr_assert_eq(d->schemes, 3);
	cr_assert_eq(d->nports, 2);
	cr_assert_eq(fw_l7_vault_port(d, 1), 8443);
	cr_assert_eq(d->name_len, 2);
	cr_assert_eq(memcmp(d->name, "gh", 2), 0);
	cr_assert_eq(d->header_len, 13);
	cr_assert_eq(memcmp(d->header, "Authorization", 13), 0);
	cr_assert_eq(d->value_len, 12);
	cr_assert_eq(memcmp(d->value, "Bearer t0k3n", 12), 0);
	at = d->hosts;
	s = fw_l7_vault_next(&at, &len);
	cr_assert(len == 15 && memcmp(s, "api.example.com", len) == 0);
	s = fw_l7_vault_next(&at, &len);
	cr_assert(len == 12 && memcmp(s, "*.github.com", len) == 0);
	cr_assert_eq(at, d->methods);
	at = d->paths;
	fw_l7_vault_next(&at, &len);
	s = fw_l7_vault_next(&at, &len);
	cr_assert(len == 6 && memcmp(s, "/login", len) == 0);
	cr_assert_eq(d->rec + d->size, blob + blob_len);
	cr_assert_eq(d->tail, 0);
	cr_assert_eq(vault.bindings[0].rec + vault.bindings[0].size, d->rec);
}

Test(l7_vault, the_layout_is_the_headers)
{
	struct venc_binding b = api();
	uint8_t want[8 + 18 + 3 + 9 + 9 + 2 + 15];
	size_t n = 0;
	uint32_t u32;
	uint16_t u16;

	/* the bytes by hand, in host order as l7vault.h says */
	u32 = FW_L7_VAULT_MAGIC;
	memcpy(want + n, &u32, 4), n += 4;
	u16 = 1;
	memcpy(want + n, &u16, 2), n += 2;
	memcpy(want + n, &u16, 2), n += 2;
	u32 = sizeof(want) - 8;
	memcpy(want + n, &u32, 4), n += 4;
	memcpy(want + n, "\x01\x00\x00\x01\x00\x00", 6), n += 6;
	u16 = 3;
	memcpy(want + n, &u16, 2), n += 2;
	u16 = 9;
	memcpy(want + n, &u16, 2), n += 2;
	u32 = 9;
	memcpy(want + n, &u32, 4), n += 4;
	memcpy(want + n, "apiX-Api-Keysk-test-1", 21), n += 21;
	u16 = 15;
	memcpy(want + n, &u16, 2), n += 2;
	memcpy(want + n, "api.example.com", 15), n += 15;
	cr_assert_eq(n, sizeof(want));
	cr_assert_eq(fw_l7_vault_decode(want, n, &vault, ROOM, NULL), 0);
	cr_assert_eq(vault.nbindings, 1);
	cr_assert_eq(venc_vault(blob, sizeof(blob), &b, 1), n);
	cr_assert_eq(memcmp(blob, want, n), 0);
}

Test(l7_vault, an_empty_vault)
{
	cr_assert_eq(decode(NULL, 0), 0);
	cr_assert_eq(vault.nbindings, 0);
	cr_assert_not(https_get("api.example.com", "/"));
}

Test(l7_vault, every_cut_and_a_trailing_byte_are_refused)
{
	struct venc_binding b[2] = {api(), api()};
	uint8_t copy[sizeof(blob) + 1];

	b[1].nmethods = 1;
	b[1].methods[0] = VS("GET");
	b[1].npaths = 1;
	b[1].paths[0] = VS("/x");
	cr_assert_eq(decode(b, 2), 0);
	memcpy(copy, blob, blob_len);
	for (size_t cut = 0; cut < blob_len; cut++) {
		vault.nbindings = 7;
		cr_assert_eq(fw_l7_vault_decode(copy, cut, &vault, ROOM, NULL), -EINVAL, "cut %zu",
			     cut);
		cr_assert_eq(vault.nbindings, 0);
	}
	copy[blob_len] = 0;
	cr_assert_eq(fw_l7_vault_decode(copy, blob_len + 1, &vault, ROOM, NULL), -EINVAL);
}

Test(l7_vault, head_magic_version_and_room)
{
	struct venc_binding b[2] = {api(), api()};
	const char *why;

	cr_assert_eq(decode(b, 2), 0);
	cr_assert_eq(fw_l7_vault_count(blob, blob_len), 2);
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, 1, &why), -ENOSPC);
	blob[0] ^= 1;
	cr_assert_eq(fw_l7_vault_count(blob, blob_len), -EINVAL);
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, &why), -EINVAL);
	cr_assert(strstr(why, "version"));
	blob[0] ^= 1;
	blob[4] = 2;
	cr_assert_eq(fw_l7_vault_count(blob, blob_len), -EINVAL);
	cr_assert_eq(fw_l7_vault_count(blob, 7), -EINVAL);
	cr_assert_eq(fw_l7_vault_count(NULL, 0), -EINVAL);
}

Test(l7_vault, a_count_larger_than_the_records)
{
	struct venc_binding b = api();

	cr_assert_eq(decode(&b, 1), 0);
	blob[6] = 2; /* nbindings 2, one record */
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, NULL), -EINVAL);
	blob[6] = 0; /* nbindings 0, a record left over */
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, NULL), -EINVAL);
}

Test(l7_vault, record_sizes_that_lie)
{
	struct venc_binding b[2] = {api(), api()};
	uint32_t size, first;

	cr_assert_eq(decode(b, 2), 0);
	memcpy(&first, blob + 8, 4);
	for (size = 0; size < 2 * first + 2; size++) {
		if (size == first)
			continue;
		memcpy(blob + 8, &size, 4);
		cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, NULL), -EINVAL,
			     "size %u", size);
	}
	/* value_len past the record, with the record's size right */
	memcpy(blob + 8, &first, 4);
	size = 9999;
	memcpy(blob + 8 + 14, &size, 4);
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, NULL), -EINVAL);
}

Test(l7_vault, a_longer_record_is_skipped_past_its_known_fields)
{
	struct venc_binding b[2] = {api(), api()};
	static const uint8_t later[5] = {1, 2, 3, 4, 5};

	b[0].tail = later;
	b[0].tail_len = sizeof(later);
	b[1].name = VS("second");
	cr_assert_eq(decode(b, 2), 0);
	cr_assert_eq(vault.bindings[0].tail, 5);
	cr_assert_eq(vault.bindings[1].name_len, 6);
	cr_assert_eq(memcmp(vault.bindings[1].name, "second", 6), 0);
}

Test(l7_vault, lies_and_unsafe_fields_are_refused)
{
	struct venc_binding b;

	b = api();
	for (unsigned int i = 0; i < FW_L7_VAULT_MAX_LIST; i++)
		b.hosts[i] = VS("a.example");
	b.nhosts = FW_L7_VAULT_MAX_LIST; /* the most a list may hold */
	cr_assert_eq(decode(&b, 1), 0);
	blob[8 + 7] = FW_L7_VAULT_MAX_LIST + 1; /* rec.nhosts */
	cr_assert_eq(fw_l7_vault_decode(blob, blob_len, &vault, ROOM, NULL), -EINVAL);
	b = api(), b.auth = 0;
	refused(&b, "auth");
	b = api(), b.auth = 4;
	refused(&b, "auth");
	b = api(), b.schemes = 4;
	refused(&b, "scheme");
	b = api(), b.header = VS("X-Api-Key:");
	refused(&b, "field name");
	b = api(), b.header = VS("X Api");
	refused(&b, "field name");
	b = api(), b.header = VS("");
	refused(&b, "field name");
	b = api(), b.header = VS("HOST");
	refused(&b, "frames");
	b = api(), b.header = VS("Content-Length");
	refused(&b, "frames");
	b = api(), b.header = VS("transfer-encoding");
	refused(&b, "frames");
	b = api(), b.value = VS("k\r\nX-Evil: 1");
	refused(&b, "CR, LF or NUL");
	b = api(), b.value = VS("k\nx");
	refused(&b, "CR, LF or NUL");
	b = api(), b.value = (struct venc_str){"k\0x", 3};
	refused(&b, "CR, LF or NUL");
	b = api(), b.hosts[0] = VS("");
	refused(&b, "empty");
	b = api(), b.nmethods = 1, b.methods[0] = VS("G T");
	refused(&b, "method");
	b = api(), b.npaths = 1, b.paths[0] = VS("v1/*");
	refused(&b, "/");
}

Test(l7_vault, a_value_may_hold_any_other_byte)
{
	struct venc_binding b = api();
	const struct fw_l7_binding *d;

	b.value = VS("Basic dXNlcjpwYXNz \t\x01\xff");
	cr_assert_eq(decode(&b, 1), 0);
	d = &vault.bindings[0];
	cr_assert_eq(d->value_len, b.value.len);
	cr_assert_eq(memcmp(d->value, b.value.p, b.value.len), 0);
}

Test(l7_vault, hosts_exact_and_wildcard)
{
	struct venc_binding b = api();

	b.nhosts = 2;
	b.hosts[1] = VS("*.example.org");
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(https_get("api.example.com", "/"));
	cr_assert(https_get("API.Example.COM", "/"));
	cr_assert_not(https_get("api.example.co", "/"));
	cr_assert_not(https_get("x.api.example.com", "/"));
	cr_assert_not(https_get("pi.example.com", "/"));
	cr_assert(https_get("a.example.org", "/"));
	cr_assert(https_get("a.b.EXAMPLE.org", "/"));
	cr_assert_not(https_get("example.org", "/"), "the domain itself is not under it");
	cr_assert_not(https_get("badexample.org", "/"));
	cr_assert_not(https_get("a.example.org.evil", "/"));
	cr_assert_not(https_get(".example.org", "/"));
	cr_assert_not(https_get("", "/"));
}

Test(l7_vault, a_star_alone_is_no_wildcard)
{
	struct venc_binding b = api();

	b.nhosts = 2;
	b.hosts[0] = VS("*.");
	b.hosts[1] = VS("*");
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert_not(https_get("a.example.com", "/"));
	cr_assert_not(https_get("a", "/"));
}

Test(l7_vault, schemes_absent_means_https_only)
{
	struct venc_binding b = api();

	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTP, 80, "GET", "/"));
	b.schemes = FW_L7_SCHEME_HTTP;
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTP, 80, "GET", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/"));
	b.schemes = FW_L7_SCHEME_HTTP | FW_L7_SCHEME_HTTPS;
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTP, 80, "GET", "/"));
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/"));
}

Test(l7_vault, ports_are_the_original_destination)
{
	struct venc_binding b = api();

	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 8443, "GET", "/"),
		  "no ports: any");
	b.nports = 2;
	b.ports[0] = 443;
	b.ports[1] = 8443;
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/"));
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 8443, "GET", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTPS, 444, "GET", "/"));
}

Test(l7_vault, methods_upper_case_compare)
{
	struct venc_binding b = api();

	b.nmethods = 2;
	b.methods[0] = VS("GET");
	b.methods[1] = VS("POST");
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/"));
	cr_assert(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "post", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "DELETE", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GE", "/"));
	cr_assert_not(matches("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GETX", "/"));
}

Test(l7_vault, paths_exact_or_prefix)
{
	struct venc_binding b = api();

	b.npaths = 2;
	b.paths[0] = VS("/v1/models/*");
	b.paths[1] = VS("/health");
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(https_get("api.example.com", "/health"));
	cr_assert_not(https_get("api.example.com", "/health/"));
	cr_assert_not(https_get("api.example.com", "/Health"), "paths keep their case");
	cr_assert_not(https_get("api.example.com", "/healthz"));
	cr_assert(https_get("api.example.com", "/v1/models/"));
	cr_assert(https_get("api.example.com", "/v1/models/gpt/x"));
	cr_assert_not(https_get("api.example.com", "/v1/models"));
	cr_assert_not(https_get("api.example.com", "/v1/other"));
	b.paths[0] = VS("/*");
	b.npaths = 1;
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(https_get("api.example.com", "/anything"));
}

Test(l7_vault, the_raw_path_must_match_too)
{
	struct venc_binding b = api();
	struct fw_l7_request r;

	b.npaths = 1;
	b.paths[0] = VS("/v1/*");
	cr_assert_eq(decode(&b, 1), 0);
	/* "/v1/../admin" is "/admin" to nginx and perhaps not to the server */
	r = req("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/admin");
	r.raw_path = "/v1/../admin";
	r.raw_path_len = strlen(r.raw_path);
	cr_assert_null(fw_l7_vault_match(&vault, &r));
	r = req("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/v1/admin");
	r.raw_path = "/v2/../v1/admin";
	r.raw_path_len = strlen(r.raw_path);
	cr_assert_null(fw_l7_vault_match(&vault, &r));
	r.raw_path = "/v1/%61dmin";
	r.raw_path_len = strlen(r.raw_path);
	cr_assert_not_null(fw_l7_vault_match(&vault, &r));
}

/* nginx resolves dot segments but keeps "..;" and a backslash as they
 * are; Tomcat, Jetty and Spring drop a segment's parameters (";...") and
 * then resolve "..", some servers take a backslash for a slash: each
 * reaches a path outside the binding's with the credential */
Test(l7_vault, a_path_a_server_may_resolve_elsewhere_never_matches_paths)
{
	static const char *const out[] = {
		"/v1/..;/admin", "/v1/..;x=1/admin", "/v1/.;/../admin", "/v1/a/..;",
		"/v1/..\\admin", "/v1\\..\\admin",   "/v1/x\\y",
	};
	struct venc_binding b = api();
	struct fw_l7_request r;

	b.npaths = 1;
	b.paths[0] = VS("/v1/*");
	cr_assert_eq(decode(&b, 1), 0);
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		cr_assert_not(https_get("api.example.com", out[i]), "%s", out[i]);
		/* the raw form alone: "%2e%2e;" is "..;" once decoded */
		r = req("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/v1/x");
		r.raw_path = out[i];
		r.raw_path_len = strlen(out[i]);
		cr_assert_null(fw_l7_vault_match(&vault, &r), "raw %s", out[i]);
	}
	/* parameters and dots elsewhere are paths like any */
	cr_assert(https_get("api.example.com", "/v1/items;v=2"));
	cr_assert(https_get("api.example.com", "/v1/a..b/..c;d"));
	cr_assert(https_get("api.example.com", "/v1/...;/x"));
	/* a binding without paths: every path, as before */
	b.npaths = 0;
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(https_get("api.example.com", "/v1/..;/admin"));
}

Test(l7_vault, the_first_match_wins_in_vault_order)
{
	struct venc_binding b[3] = {api(), api(), api()};
	const struct fw_l7_binding *d;
	struct fw_l7_request r;

	b[0].name = VS("posts");
	b[0].nmethods = 1;
	b[0].methods[0] = VS("POST");
	b[1].name = VS("wide");
	b[1].hosts[0] = VS("*.example.com");
	b[2].name = VS("never");
	cr_assert_eq(decode(b, 3), 0);
	r = req("api.example.com", FW_L7_SCHEME_HTTPS, 443, "POST", "/");
	d = fw_l7_vault_match(&vault, &r);
	cr_assert(d && d->name_len == 5 && memcmp(d->name, "posts", 5) == 0);
	r = req("api.example.com", FW_L7_SCHEME_HTTPS, 443, "GET", "/");
	d = fw_l7_vault_match(&vault, &r);
	cr_assert(d && d->name_len == 4 && memcmp(d->name, "wide", 4) == 0);
}

Test(l7_vault, names_asks_host_scheme_and_port_only)
{
	struct venc_binding b = api();

	b.nports = 1;
	b.ports[0] = 443;
	b.nmethods = 1;
	b.methods[0] = VS("POST");
	b.npaths = 1;
	b.paths[0] = VS("/only");
	cr_assert_eq(decode(&b, 1), 0);
	cr_assert(fw_l7_vault_names(&vault, "api.example.com", 15, FW_L7_SCHEME_HTTPS, 443));
	cr_assert(fw_l7_vault_names(&vault, "API.EXAMPLE.COM", 15, FW_L7_SCHEME_HTTPS, 443));
	cr_assert_not(fw_l7_vault_names(&vault, "api.example.com", 15, FW_L7_SCHEME_HTTPS, 8443));
	cr_assert_not(fw_l7_vault_names(&vault, "api.example.com", 15, FW_L7_SCHEME_HTTP, 443));
	cr_assert_not(fw_l7_vault_names(&vault, "other.example.com", 17, FW_L7_SCHEME_HTTPS, 443));
}
