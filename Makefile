# fastwall: one Makefile for the BPF programs, the daemon, the CLI, tests,
# demo and benchmarks. Everything generated goes under build/. V=1 shows
# full commands; SANITIZE=1 builds userspace with ASan/UBSan (build-san/).

.DELETE_ON_ERROR:
.SECONDARY:
.DEFAULT_GOAL := all

ARCH ?= x86
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PREFIX ?= /usr/local

ifeq ($(SANITIZE),1)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SAN_FLAGS :=
endif

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS ?= -O2 -g
ALL_CFLAGS := $(CFLAGS) $(WARN) $(SAN_FLAGS) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	-Iinclude -Iuser/lib -I$(BUILD) -I$(BUILD)/gen
LDLIBS := -lbpf -lelf -lz -lyaml -ljansson -lmicrohttpd -lcrypto -lpthread
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Wextra -Werror \
	-Ivmlinux/$(ARCH) -Iinclude -Ibpf -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

LIB_SRCS := $(wildcard user/lib/*/*.c)
LIB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS))
LIB := $(BUILD)/libfastwall.a

DAEMON_SRCS := $(wildcard user/daemon/*.c)
CLI_SRCS := $(wildcard user/cli/*.c)
UNIT_SRCS := $(wildcard tests/unit/*.c)
# the registry, learner and actions handler over the in-memory data plane:
# the library without datapath/, plus the fake, and the rule store's
# choice between an edit and a swap (it calls only what the fake has)
FAKE_SRCS := $(wildcard tests/unit/fake/*.c)
LIB_NODP_OBJS := $(filter-out $(BUILD)/user/lib/datapath/%,$(LIB_OBJS)) \
	$(BUILD)/user/lib/datapath/policy_update.o
# the verdict table's runner and its files of rows by feature
BPFT_SRCS := $(wildcard tests/bpf/*.c tests/bpf/rows/*.c)
ABIT_SRCS := $(wildcard tests/abi/*.c)
BENCH_SRCS := $(filter-out tests/bench/udpblast.c tests/bench/actions_bench.c \
	tests/bench/dnsproxy_drive.c tests/bench/fwpeer.c tests/bench/tcprr.c tests/bench/udpflows.c \
	tests/bench/sockrate.c tests/bench/udpsink.c tests/bench/benchlib.c tests/bench/cp_kernel.c \
	tests/bench/jitlines.c,\
	$(wildcard tests/bench/*.c))
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)

BINS := $(BUILD)/fastwalld $(BUILD)/fastwall
TEST_BINS := $(BUILD)/tests/unit_tests $(BUILD)/tests/unit_fake $(BUILD)/tests/bpf_verdicts \
	$(BUILD)/tests/bpf_cgroup_verdicts $(BUILD)/tests/abi_migrate $(BUILD)/tests/uring_probe \
	$(BUILD)/tests/cgfuzz

.PHONY: all deps test test-unit test-fake test-bpf test-san test-abi test-e2e test-container test-lint demo bench fuzz cgfuzz format lint \
	install clean help compile_commands.json

all: $(BINS) $(BPF_OBJS) ## build the BPF programs, fastwalld and the fastwall CLI

help: ## list the targets
	@grep -hE '^[a-z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort | expand -t 14

# deps checks, it installs nothing: scripts/install-deps.sh does (as root)
deps: ## check the Debian packages and bpffs; names what is missing (scripts/install-deps.sh --check)
	$(Q)scripts/install-deps.sh --check

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The version both binaries print: git describe at build time, else
# VERSION from the environment, else "unknown" (a tarball). The header is
# rewritten only when the text changes, so nothing rebuilds for nothing.
# It is "fastwall/version.h" (in $(BUILD)/gen, beside no binary): like the
# ABI headers it includes nothing and any layer may read it.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
.PHONY: FORCE
FORCE:
$(BUILD)/gen/fastwall/version.h: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)v='#define FW_VERSION "$(VERSION)"'; \
		if [ ! -f $@ ] || [ "$$(cat $@)" != "$$v" ]; then echo "$$v" > $@; fi

$(BUILD)/user/%.o: user/%.c | $(SKELS) $(BUILD)/gen/fastwall/version.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/fastwalld: $(patsubst %.c,$(BUILD)/%.o,$(DAEMON_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/fastwall: $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit_tests: $(patsubst %.c,$(BUILD)/%.o,$(UNIT_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) -lcriterion

$(BUILD)/tests/unit_fake: $(patsubst %.c,$(BUILD)/%.o,$(FAKE_SRCS)) $(LIB_NODP_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) -lcriterion

$(BUILD)/tests/bpf_verdicts: $(patsubst %.c,$(BUILD)/%.o,$(BPFT_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# the cgroup programs' packet path, with the verdict table's frame builders
$(BUILD)/tests/bpf_cgroup_verdicts: $(BUILD)/tests/bpf/cgroup/verdicts.o $(BUILD)/tests/bpf/pkt.o \
		$(BUILD)/tests/bpf/abort_on_error.o $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# rows give the fields they need, like the TC table
$(BUILD)/tests/bpf/cgroup/verdicts.o: ALL_CFLAGS += -Itests/bpf -Wno-missing-field-initializers
$(BUILD)/tests/bpf/rows/%.o: ALL_CFLAGS += -Itests/bpf

$(BUILD)/tests/abi_migrate: $(patsubst %.c,$(BUILD)/%.o,$(ABIT_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/bench_tc: $(patsubst %.c,$(BUILD)/%.o,$(BENCH_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

# control-plane operations against a plain array update, per kernel
$(BUILD)/tests/cp_kernel: $(BUILD)/tests/bench/cp_kernel.o $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/jitlines: $(BUILD)/tests/bench/jitlines.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/udpblast: $(BUILD)/tests/bench/udpblast.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

$(BUILD)/tests/actions_bench: $(BUILD)/tests/bench/actions_bench.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ -lpthread

$(BUILD)/tests/dnsproxy_drive: $(BUILD)/tests/bench/dnsproxy_drive.o $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/fwpeer: $(BUILD)/tests/bench/fwpeer.o $(BUILD)/tests/bench/benchlib.o $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/tcprr: $(BUILD)/tests/bench/tcprr.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

$(BUILD)/tests/sockrate: $(BUILD)/tests/bench/sockrate.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

$(BUILD)/tests/udpflows: $(BUILD)/tests/bench/udpflows.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

$(BUILD)/tests/udpsink: $(BUILD)/tests/bench/udpsink.o $(BUILD)/tests/bench/benchlib.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

# io_uring sends and connects from a process sandbox, and what arrived
# (tests/e2e/uring.sh, tests/vm/procs.sh)
$(BUILD)/tests/uring_probe: $(BUILD)/tests/vm/uring_probe.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^

test: deps ## run the whole suite (unit, BPF verdict table, end-to-end)
	$(Q)$(MAKE) --no-print-directory all $(TEST_BINS)
	$(Q)scripts/run-tests.sh $(BUILD)

test-unit: $(BUILD)/tests/unit_tests ## Criterion units only
	$(Q)LSAN_OPTIONS=suppressions=$(CURDIR)/tests/unit/lsan.supp $(BUILD)/tests/unit_tests

test-fake: $(BUILD)/tests/unit_fake ## registry, learner and actions units over the in-memory data plane
	$(Q)$(BUILD)/tests/unit_fake

SHUFFLE_SEED ?= $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
TRIES := FASTWALL_RULE_SET_MAX=0 FASTWALL_RULE_RANGE_MAX=0
test-bpf: $(BUILD)/tests/bpf_verdicts $(BUILD)/tests/bpf_cgroup_verdicts all ## BPF verdict tables only (TC in order, shuffled with SHUFFLE_SEED=N, with every policy in range tables, then in the tries; cgroup, the three ways)
	$(Q)$(BUILD)/tests/bpf_verdicts
	$(Q)$(BUILD)/tests/bpf_verdicts --shuffle $(SHUFFLE_SEED)
	$(Q)FASTWALL_RULE_SET_MAX=0 $(BUILD)/tests/bpf_verdicts
	$(Q)$(TRIES) $(BUILD)/tests/bpf_verdicts
	$(Q)$(BUILD)/tests/bpf_cgroup_verdicts
	$(Q)FASTWALL_RULE_SET_MAX=0 $(BUILD)/tests/bpf_cgroup_verdicts
	$(Q)$(TRIES) $(BUILD)/tests/bpf_cgroup_verdicts

# CI's sanitizer pass: the suites that need no network namespaces, built
# with ASan/UBSan in build-san/
test-san: ## the Criterion units and the BPF verdict tables under ASan/UBSan (build-san/)
	$(Q)$(MAKE) --no-print-directory SANITIZE=1 test-unit test-fake test-bpf

test-lint: all ## the tests of the lint itself (scripts/check-layers.sh, scripts/check-calls.sh)
	$(Q)bash tests/lint/check-layers.sh
	$(Q)BUILD=$(BUILD) bash tests/lint/check-calls.sh

test-abi: $(BUILD)/tests/abi_migrate ## pinned-map ABI: migration from ABI 1, refusals, swaps in both rule forms (root)
	$(Q)$(BUILD)/tests/abi_migrate
	$(Q)FASTWALL_RULE_SET_MAX=0 $(BUILD)/tests/abi_migrate
	$(Q)$(TRIES) $(BUILD)/tests/abi_migrate

test-e2e: all ## end-to-end netns tests only (a script exiting 77 is skipped)
	$(Q)for t in tests/e2e/*.sh; do case $$t in */lib.sh) continue;; esac; \
		BUILD=$(BUILD) bash $$t; rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ] || exit 1; done

test-container: all ## the image for real: podman build -f deploy/Containerfile on a debootstrap base, run as the DaemonSet runs it (about a minute; the first run adds the root's debootstrap)
	$(Q)BUILD=$(BUILD) bash tests/container/container.sh

demo: ## build, run the demo topology and explain what passes and why (KEEP=1: leave it running)
	$(Q)scripts/install-deps.sh --check demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) KEEP=$(KEEP) scripts/demo.sh

bench: deps ## benchmarks: per-packet cost, packet rate, control plane, nftables comparison (FULL=1: whole matrix; PARTS="D G": those parts only)
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/tests/bench_tc $(BUILD)/tests/udpblast \
		$(BUILD)/tests/actions_bench $(BUILD)/tests/fwpeer $(BUILD)/tests/tcprr $(BUILD)/tests/udpflows \
		$(BUILD)/tests/udpsink $(BUILD)/tests/cp_kernel $(BUILD)/tests/sockrate $(BUILD)/tests/jitlines
	$(Q)BUILD=$(BUILD) FULL=$(FULL) scripts/bench.sh

FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
FUZZ_SECONDS ?= 30
# The library is compiled once for every target, with the coverage the
# fuzzer follows and the project's warnings; each target links it.
FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined $(WARN) -std=gnu11 -D_GNU_SOURCE \
	-Iinclude -Iuser/lib -I$(BUILD) -I$(BUILD)/gen
FUZZ_LIB := $(BUILD)/fuzz/libfastwall-fuzz.a
$(BUILD)/fuzz/obj/%.o: %.c | $(SKELS) $(BUILD)/gen/fastwall/version.h
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_LIB): $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB) | $(SKELS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_EXTRA) $(FUZZ_LIB) $(LDLIBS)

# the JSON reader's fuzzer asks the unit tests' oracle (jansson)
$(BUILD)/fuzz/jtree: tests/unit/jtree_oracle.h
# the vault reader's fuzzer re-encodes with the unit tests' encoder
$(BUILD)/fuzz/l7_vault: tests/unit/l7_vault_enc.h

# the packet-path fuzzer builds its seeds with the verdict table's frame
# builders, and fuzzes the programs its skeleton embeds
$(BUILD)/fuzz/tc $(BUILD)/fuzz/guard: tests/bpf/pkt.c $(SKELS)
$(BUILD)/fuzz/tc $(BUILD)/fuzz/guard: FUZZ_EXTRA := tests/bpf/pkt.c -Itests/bpf

fuzz: deps $(FUZZ_BINS) ## run each fuzz target for FUZZ_SECONDS (default 30)
	$(Q)for f in $(FUZZ_BINS); do \
		n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		if { [ $$n = tc ] || [ $$n = guard ]; } && [ $$(id -u) != 0 ]; then \
			echo "fuzz $$n skipped: it needs root (BPF programs, namespaces)"; continue; fi; \
		echo "fuzz $$n for $(FUZZ_SECONDS)s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=8192 $(BUILD)/fuzz/corpus-$$n tests/fuzz/seeds/$$n || exit 1; \
	done

# The process sandboxes' fuzzer: a driver that forks a sandboxed child per
# input and judges what reaches the simulated internet (not a libFuzzer
# target: the kernel runs the code under test). tests/e2e/cgfuzz.sh sets
# up the pod and fastwalld; `make test` runs its short replay and fuzzing.
$(BUILD)/tests/cgfuzz: $(BUILD)/tests/fuzz/procsock/cgfuzz.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ -lpthread

CGFUZZ_SECONDS ?= 1200
cgfuzz: all $(BUILD)/tests/cgfuzz ## fuzz process sandboxes for CGFUZZ_SECONDS (default 1200; root)
	$(Q)BUILD=$(BUILD) CGFUZZ_SECONDS=$(CGFUZZ_SECONDS) bash tests/e2e/cgfuzz.sh

# gateway/ and egress/ are nginx modules and keep nginx's own indentation
format: ## clang-format every C source in place
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h' | grep -v -e '^vmlinux/' -e '^gateway/' -e '^egress/')

# every shell script: *.sh anywhere under scripts/ and tests/, and the
# scripts without an extension under scripts/ (scripts/vmtest/initramfs-init)
SHELL_SCRIPTS = $(sort $(shell find scripts tests -type f -name '*.sh') \
	$(shell find scripts -type f ! -name '*.*'))
CPPCHECK := cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	--suppress=missingIncludeSystem --suppress=unknownMacro -D__linux__
# cppcheck does not read libbpf's bpf_helpers.h (a system header), so its map
# and section macros are spelled out; the programs do arithmetic on void *
# (a GNU C extension, the way every TC program walks the packet)
CPPCHECK_BPF := --suppress=arithOperationsOnVoidPointer --suppress=missingInclude \
	-D__TARGET_ARCH_$(ARCH) -D'SEC(x)=' -D'__uint(n,v)=int n' -D'__type(n,t)=t n' \
	-D'__array(n,t)=t n' -Iinclude -Ibpf

lint: all ## clang-format, shellcheck, cppcheck (user/, tests/, bpf/), the include layers, then the data path's calls (one way between files)
	$(Q)clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h' | grep -v -e '^vmlinux/' -e '^gateway/' -e '^egress/')
	$(Q)shellcheck $(SHELL_SCRIPTS)
	$(Q)$(CPPCHECK) -Iinclude -Iuser/lib user/
	$(Q)$(CPPCHECK) -Iinclude -Iuser/lib -I$(BUILD) -Itests/bpf tests/
	$(Q)$(CPPCHECK) $(CPPCHECK_BPF) bpf/
	$(Q)scripts/check-layers.sh
	$(Q)scripts/check-calls.sh $(BUILD) user/lib/datapath

# a compilation database for clangd and clang-tidy: every C file rebuilt
# under bear, which records each compiler command
compile_commands.json: ## compile_commands.json of every C source (bear)
	$(Q)bear --output $@ -- $(MAKE) --no-print-directory -B all $(TEST_BINS)

# The JSON Schemas of the configuration and the policy, from the key
# tables fastwalld prints (docs/config.md is generated from the same)
PYTHON ?= python3
SCHEMAS := $(BUILD)/schema/fastwalld-config.schema.json $(BUILD)/schema/fastwall-policy.schema.json
$(BUILD)/schema/fastwalld-config.schema.json: $(BUILD)/fastwalld scripts/gen-schema.py
	$(call msg,GEN,$(@D))
	$(Q)$(PYTHON) scripts/gen-schema.py $(BUILD)/fastwalld $(@D)
$(BUILD)/schema/fastwall-policy.schema.json: $(BUILD)/schema/fastwalld-config.schema.json

# bash, zsh and fish completions from the binaries' --help (their command tables)
COMPLETIONS := $(addprefix $(BUILD)/bash-completion/,fastwall fastwalld _fastwall _fastwalld \
	fastwall.fish fastwalld.fish)
$(BUILD)/bash-completion/fastwall: $(BINS) scripts/gen-completion.sh include/fastwall/reasons.h \
		$(wildcard deploy/bash-completion/*.in)
	$(call msg,GEN,$(@D))
	$(Q)scripts/gen-completion.sh $(BUILD)/fastwall $(BUILD)/fastwalld $(@D)
$(filter-out %/fastwall,$(COMPLETIONS)): $(BUILD)/bash-completion/fastwall

.PHONY: schema completion deb
schema: $(SCHEMAS) ## JSON Schemas of the configuration and the policy (build/schema/)
completion: $(COMPLETIONS) ## bash, zsh and fish completions of fastwall and fastwalld (build/bash-completion/)

# SYSCONFDIR is /etc whatever PREFIX is: fastwalld reads
# /etc/fastwall/fastwalld.yaml by default. An existing config is kept.
SYSCONFDIR ?= /etc
install: all $(SCHEMAS) $(COMPLETIONS) ## install the binaries, man pages, completions, schemas and (if absent) the example config
	install -D -m 0755 $(BUILD)/fastwalld $(DESTDIR)$(PREFIX)/sbin/fastwalld
	install -D -m 0755 $(BUILD)/fastwall $(DESTDIR)$(PREFIX)/sbin/fastwall
	install -D -m 0644 docs/fastwalld.8 $(DESTDIR)$(PREFIX)/share/man/man8/fastwalld.8
	install -D -m 0644 docs/fastwall.8 $(DESTDIR)$(PREFIX)/share/man/man8/fastwall.8
	install -D -m 0644 docs/fastwall-ingress.8 $(DESTDIR)$(PREFIX)/share/man/man8/fastwall-ingress.8
	install -D -m 0644 $(BUILD)/bash-completion/fastwall $(DESTDIR)$(PREFIX)/share/bash-completion/completions/fastwall
	install -D -m 0644 $(BUILD)/bash-completion/fastwalld $(DESTDIR)$(PREFIX)/share/bash-completion/completions/fastwalld
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions $(BUILD)/bash-completion/_fastwall $(BUILD)/bash-completion/_fastwalld
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(BUILD)/bash-completion/fastwall.fish $(BUILD)/bash-completion/fastwalld.fish
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/fastwall/schema $(SCHEMAS)
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/fastwall/fastwalld.yaml ]; then \
		echo "install: keeping the existing $(DESTDIR)$(SYSCONFDIR)/fastwall/fastwalld.yaml"; \
	else \
		echo "install -D -m 0644 deploy/fastwalld.yaml $(DESTDIR)$(SYSCONFDIR)/fastwall/fastwalld.yaml"; \
		install -D -m 0644 deploy/fastwalld.yaml $(DESTDIR)$(SYSCONFDIR)/fastwall/fastwalld.yaml; \
	fi

deb: ## the Debian 12 packages (build/deb/fastwall_VERSION_ARCH.deb, with nginx-dev the gateway module libnginx-mod-http-fastwall-ingress_VERSION_ARCH.deb; hardened build in build-deb/)
	$(Q)scripts/build-deb.sh build/deb

KERNELS ?= 5.10 6.1 6.12 6.18 7.x
VMTEST_CACHE ?= /var/cache/fastwall-vmtest
.PHONY: vmtest
# VMTEST_GUARD_NIC=1: the port guard's benchmark on virtio-net as well;
# the layer-7 proxy's module when nginx-dev is there (tests/vm/l7.sh)
vmtest: all $(BUILD)/tests/bpf_verdicts $(BUILD)/tests/bpf_cgroup_verdicts $(BUILD)/tests/abi_migrate $(BUILD)/tests/cp_kernel $(BUILD)/tests/uring_probe $(if $(wildcard $(or $(NGINX_SRC),/usr/share/nginx/src)/conf_flags),l7proxy) $(if $(filter 1,$(VMTEST_GUARD_NIC)),$(BUILD)/tests/udpblast $(BUILD)/tests/udpsink) ## verdict table, loader, e2e on Debian kernels in qemu (KERNELS="5.10 6.12")
	$(Q)BUILD=$(BUILD) KERNELS="$(KERNELS)" VMTEST_CACHE="$(VMTEST_CACHE)" scripts/vmtest/vmtest.sh

clean: ## remove build/, build-san/ and build-deb/
	rm -rf build build-san build-deb

include gateway/gateway.mk
include egress/egress.mk

# files only: a staged install holds directories named *.d (fish's vendor_completions.d);
# debootstrap's root (build/rootfs) is skipped
-include $(shell find $(BUILD) -path $(BUILD)/rootfs -prune -o -type f -name '*.d' -print 2>/dev/null)
