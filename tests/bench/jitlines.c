// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* jitlines: where a BPF program's sampled time goes, by source line.
 *
 *   jitlines save PROG_ID >lines.txt      (while the program is loaded)
 *   perf record -a -F 4000 -o perf.data -- sleep 20
 *   perf script -i perf.data -F ip,sym,symoff | jitlines count lines.txt
 *
 * save writes the line table of program PROG_ID's main function: its
 * kernel symbol (bpf_prog_TAG_NAME) on the first line, then one line per
 * BPF line info record, the offset in the JIT image where the kernel
 * placed it, file:line and the source text. count reads perf script's
 * "ADDR SYM+0xOFF" lines, keeps those of that symbol and puts each offset
 * on the last source line starting at or before it; it prints the
 * samples per line, most first, with their share. perf annotate does this
 * only when perf is linked with a disassembler, bpftool only with libbfd;
 * neither is needed here, and the count runs after the program is gone. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct line {
	__u64 off;	  /* from the main function's start */
	const char *text; /* file:line and the source */
	__u64 samples;
};

static int by_off(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int by_samples(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return x->samples > y->samples ? -1 : x->samples < y->samples;
}

/* The line table of program id's main function, as described above. */
static int save(const char *id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n, rec, jrec;
	struct bpf_line_info *li;
	__u64 *jli, ksym = 0;
	struct btf *btf;
	int fd;

	fd = bpf_prog_get_fd_by_id((__u32)strtoul(id, NULL, 10));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "jitlines: program %s: %s\n", id, strerror(errno));
		return 1;
	}
	n = info.nr_jited_line_info < info.nr_line_info ? info.nr_jited_line_info
							: info.nr_line_info;
	if (!n || !info.nr_jited_ksyms) {
		fprintf(stderr, "jitlines: program %s has no JIT line information\n", id);
		return 1;
	}
	printf("bpf_prog_%02x%02x%02x%02x%02x%02x%02x%02x_%s\n", info.tag[0], info.tag[1],
	       info.tag[2], info.tag[3], info.tag[4], info.tag[5], info.tag[6], info.tag[7],
	       info.name);
	rec = info.line_info_rec_size;
	jrec = info.jited_line_info_rec_size;
	li = calloc(n, rec);
	jli = calloc(n, jrec);
	if (!li || !jli)
		return 1;
	memset(&info, 0, sizeof(info));
	info.nr_line_info = n;
	info.line_info_rec_size = rec;
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = n;
	info.jited_line_info_rec_size = jrec;
	info.jited_line_info = (__u64)(unsigned long)jli;
	info.nr_jited_ksyms = 1; /* the main function's start */
	info.jited_ksyms = (__u64)(unsigned long)&ksym;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "jitlines: program %s: %s\n", id, strerror(errno));
		return 1;
	}
	btf = btf__load_from_kernel_by_id(info.btf_id);
	for (__u32 i = 0; i < n; i++) {
		const struct bpf_line_info *l = (const void *)((char *)li + (size_t)i * rec);
		const char *f = btf ? btf__name_by_offset(btf, l->file_name_off) : NULL;
		const char *t = btf ? btf__name_by_offset(btf, l->line_off) : NULL;
		const char *slash = f ? strrchr(f, '/') : NULL;

		while (t && (*t == '\t' || *t == ' '))
			t++;
		/* other functions' lines lie past the main one's image */
		printf("%llx %s:%u %.100s\n", (unsigned long long)(jli[i] - ksym),
		       slash ? slash + 1
		       : f   ? f
			     : "?",
		       BPF_LINE_INFO_LINE_NUM(l->line_col), t ? t : "");
	}
	btf__free(btf);
	free(li);
	free(jli);
	return 0;
}

/* The samples of perf script's output on stdin, per line of table. */
static int count(const char *table)
{
	char sym[160], buf[512];
	struct line *lines = NULL;
	__u64 total = 0, outside = 0;
	size_t n = 0, cap = 0;
	FILE *f = fopen(table, "r");

	if (!f || !fgets(sym, sizeof(sym) - 1, f) || strncmp(sym, "bpf_prog_", 9)) {
		fprintf(stderr, "jitlines: %s is not a table of jitlines save\n", table);
		return 1;
	}
	sym[strcspn(sym, "\n")] = 0;
	while (fgets(buf, sizeof(buf), f)) {
		unsigned long long off;
		int pos = 0;

		buf[strcspn(buf, "\n")] = 0;
		if (sscanf(buf, "%llx %n", &off, &pos) != 1)
			continue;
		if (n == cap) {
			struct line *m = realloc(lines, (cap = cap ? 2 * cap : 1024) * sizeof(*m));

			if (!m)
				return 1;
			lines = m;
		}
		lines[n] = (struct line){.off = off, .text = strdup(buf + pos)};
		n++;
	}
	fclose(f);
	if (!n) {
		fprintf(stderr, "jitlines: %s has no lines\n", table);
		return 1;
	}
	qsort(lines, n, sizeof(*lines), by_off);
	while (fgets(buf, sizeof(buf), stdin)) {
		const char *at = strstr(buf, sym);
		unsigned long long off;
		size_t lo = 0, hi = n;

		/* the name may be longer than the 15 bytes the kernel keeps */
		at = at ? at + strlen(sym) + strcspn(at + strlen(sym), "+ \t\n") : NULL;
		if (!at || *at != '+') {
			outside += strstr(buf, "bpf_prog_") != NULL;
			continue;
		}
		if (sscanf(at + 1, "%llx", &off) != 1)
			continue;
		while (hi - lo > 1) { /* the last line starting at or before off */
			size_t mid = (lo + hi) / 2;

			if (lines[mid].off <= off)
				lo = mid;
			else
				hi = mid;
		}
		lines[lo].samples++;
		total++;
	}
	if (total) {
		qsort(lines, n, sizeof(*lines), by_samples);
		printf("%llu samples in %s (%llu in other BPF programs)\n",
		       (unsigned long long)total, sym, (unsigned long long)outside);
		for (size_t i = 0; i < n && lines[i].samples; i++)
			printf("%6llu %5.1f%%  %s\n", (unsigned long long)lines[i].samples,
			       100.0 * (double)lines[i].samples / (double)total, lines[i].text);
	} else {
		fprintf(stderr, "jitlines: no samples of %s\n", sym);
	}
	for (size_t i = 0; i < n; i++)
		free((void *)lines[i].text);
	free(lines);
	return total ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "save"))
		return save(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "count"))
		return count(argv[2]);
	fprintf(stderr, "usage: jitlines save PROG_ID >TABLE\n"
			"       perf script -F ip,sym,symoff | jitlines count TABLE\n");
	return 2;
}
