// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Linked into both verdict table runners (bpf_verdicts and
 * bpf_cgroup_verdicts). A sanitizer that finds an error
 * (-fno-sanitize-recover) exits without a signal and without atexit: in
 * these runners it aborts instead, so that their SIGABRT handlers take
 * the pins, test interfaces, attachments, cgroups and mounts away. The
 * runtimes ask these at start; without a sanitizer nothing calls them. */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

const char *__asan_default_options(void)
{
	return "abort_on_error=1";
}

const char *__ubsan_default_options(void)
{
	return "abort_on_error=1";
}
