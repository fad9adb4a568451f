// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the layer-7 proxy's ClientHello walker. Whatever the
 * bytes, it reads none past the input; a hello it accepts is accepted
 * again from its own bytes alone, with the same findings, and every
 * shorter prefix of it asks for more (the proxy waits for the whole hello,
 * never decides on part of it); the name it copies is a bounded string,
 * empty when no host name was seen. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "l7/hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fw_l7_hello h, again;
	enum fw_l7_hello_status st;
	uint8_t *copy;
	size_t cut;
	int vet;

	/* an exact-size copy, so ASan sees any read past the end */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	/* the input as a server_name extension's body: a name it gives is
	 * one non-empty string of at most 255 bytes with no NUL inside */
	{
		char name[FW_L7_HELLO_NAME_MAX + 1];

		if (fw_l7_hello_server_name(copy, size, name) == 0 &&
		    (!name[0] || strlen(name) > FW_L7_HELLO_NAME_MAX || size < strlen(name) + 5))
			abort();
	}
	st = fw_l7_hello_walk(copy, size, &h);
	if (st != FW_L7_HELLO_OK && st != FW_L7_HELLO_MORE && st != FW_L7_HELLO_BAD)
		abort();
	if (memchr(h.name, '\0', sizeof(h.name)) == NULL)
		abort();
	if (st != FW_L7_HELLO_OK)
		goto out;
	if (!h.host_names && h.name[0])
		abort();
	if (h.host_names && !h.server_name_exts)
		abort();
	if (h.hello_len == 0 || h.hello_len > size)
		abort();
	vet = fw_l7_hello_vet(&h, 0);
	if (vet && vet != FW_L7_ECH && vet != FW_L7_BAD_HELLO)
		abort();
	if ((h.server_name_exts > 1 || h.host_names > 1) != (vet == FW_L7_BAD_HELLO))
		abort();
	if (fw_l7_hello_walk(copy, h.hello_len, &again) != FW_L7_HELLO_OK ||
	    again.hello_len != h.hello_len || again.ech != h.ech ||
	    again.host_names != h.host_names || again.server_name_exts != h.server_name_exts ||
	    strcmp(again.name, h.name))
		abort();
	/* a few prefixes: none, the record header, half, one byte short */
	{
		size_t cuts[] = {0, 5, h.hello_len / 2, h.hello_len - 1};

		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			cut = cuts[i];
			if (cut < h.hello_len &&
			    fw_l7_hello_walk(copy, cut, &again) != FW_L7_HELLO_MORE)
				abort();
		}
	}
out:
	free(copy);
	return 0;
}
