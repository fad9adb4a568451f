/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* FastPath v2 ResolveEndpoint on the wire (gateway/proto/fastpath_v2.proto):
 * the request as one gRPC message, the response decoded from one gRPC
 * message, and the proxy endpoint URL check. Plain C, no allocation: the
 * decoded strings point into the caller's buffer. Parsers of untrusted
 * bytes: every length is bounded. Return 0 or a negative errno. */
#ifndef FW_FASTPATH_H
#define FW_FASTPATH_H

#include <stddef.h>
#include <stdint.h>

#define FW_FASTPATH_SERVICE	      "fastsandbox.fastpath.v2.FastPath"
#define FW_FASTPATH_RESOLVE	      "/" FW_FASTPATH_SERVICE "/ResolveEndpoint"
#define FW_FASTPATH_CREDENTIAL_HEADER "X-Fast-Sandbox-Route-Credential"

#define FW_FASTPATH_MSG_MAX	 65536 /* a response larger than this is refused */
#define FW_FASTPATH_ENDPOINT_MAX 512
#define FW_FASTPATH_HEADER_MAX	 4096

enum fw_fastpath_access_mode {
	FW_FASTPATH_CENTRAL_PROXY = 0,
	FW_FASTPATH_DIRECT_FASTLET_PROXY = 1,
};

/* gRPC status codes the ingress tells apart */
enum fw_grpc_status {
	FW_GRPC_OK = 0,
	FW_GRPC_DEADLINE_EXCEEDED = 4,
	FW_GRPC_NOT_FOUND = 5,
	FW_GRPC_RESOURCE_EXHAUSTED = 8,
	FW_GRPC_FAILED_PRECONDITION = 9,
	FW_GRPC_UNAVAILABLE = 14,
};

struct fw_str {
	const char *p;
	size_t len;
};

struct fw_fastpath_resolved {
	struct fw_str sandbox_uid;
	struct fw_str component_name;
	struct fw_str protocol;
	uint32_t endpoint_port;
	struct fw_str proxy_endpoint;
	struct fw_str credential; /* the X-Fast-Sandbox-Route-Credential value */
	unsigned int headers;	  /* required headers seen, that one included */
	unsigned int other_headers;
	uint64_t route_generation;
	int64_t expires_at;
};

/* Upper bound of the request frame for fields of these lengths. */
size_t fw_fastpath_request_size(size_t ns_len, size_t name_len);
/* Writes the gRPC frame (5-byte prefix + message) into out; returns its
 * length, or -ENOSPC. */
long fw_fastpath_request_encode(const char *ns, size_t ns_len, const char *name, size_t name_len,
				uint32_t port, enum fw_fastpath_access_mode mode,
				uint64_t expected_generation, unsigned char *out, size_t outlen);
/* Decodes one whole uncompressed gRPC frame holding a response. -EBADMSG
 * for a malformed frame or message, -EMSGSIZE past FW_FASTPATH_MSG_MAX,
 * -EPROTO for a compressed frame or a response without a proxy endpoint. */
int fw_fastpath_response_decode(const unsigned char *frame, size_t len,
				struct fw_fastpath_resolved *out);
/* Checks a proxy endpoint: http:// or https://, a host (no user info),
 * an optional port, nothing after but an optional "/". Returns the length
 * of scheme://host[:port] (the prefix a request's path is appended to), or
 * -EINVAL. */
long fw_fastpath_endpoint_base(const char *url, size_t len);
/* A header value safe to forward: visible ASCII and spaces, bounded. */
int fw_fastpath_header_value_ok(const char *v, size_t len);

#endif /* FW_FASTPATH_H */
