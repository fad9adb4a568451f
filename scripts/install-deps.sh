#!/usr/bin/env bash
# Installs the Debian packages fastwall needs. Idempotent: installs only
# what is missing, and exits quietly when nothing is. Run as root on
# Debian 12.
#
#   scripts/install-deps.sh          everything: the build, the tests
#                                    (make test), the benchmarks (make
#                                    bench), the kernel matrix (make vmtest)
#   scripts/install-deps.sh demo     what make demo needs: the build and the
#                                    demo's tools, a few dozen packages fewer
#
# --check (make deps, which make test, demo, bench and fuzz run first):
# installs nothing; fails, naming what is missing and this script, when a
# package is not installed or bpffs is not mounted at /sys/fs/bpf.
# --check demo checks the demo's set only.
set -euo pipefail

check=0
set_name=all
for arg in "$@"; do
	case $arg in
	--check) check=1 ;;
	demo) set_name=demo ;;
	*)
		echo "usage: scripts/install-deps.sh [--check] [demo]" >&2
		exit 2
		;;
	esac
done

# the demo's: building fastwalld and fastwall, and what scripts/demo.sh
# runs (the namespaces, curl, python3 for servers and probes, dig and
# dnsmasq for DNS); its inbound part runs when the ingress packages below
# are there and is skipped otherwise
DEMO_PKGS=(
	make gcc clang llvm libbpf-dev libelf-dev zlib1g-dev libyaml-dev libjansson-dev libmicrohttpd-dev libssl-dev pkg-config
	bpftool
	iproute2 curl python3 procps bind9-dnsutils dnsmasq-base
)

PKGS=(
	"${DEMO_PKGS[@]}"
	# build (the sanitizer runtime of make test-san)
	libclang-rt-14-dev
	# tests (dig, dnsmasq as the test upstream; git: the upgrade test builds the previous release;
	# prometheus: the metrics test scrapes fastwalld with it, its promtool lints the text)
	libcriterion-dev iproute2 curl python3 netcat-openbsd procps kmod bind9-dnsutils dnsmasq-base git prometheus
	# the ingress module (make ingress) and its end-to-end test: Debian's
	# nginx and its module build tree, the FastPath stand-in's gRPC
	# (openssl: the test's certificate of an https endpoint)
	nginx nginx-dev python3-grpcio python3-grpc-tools openssl
	# the ingress's service hostname stores (SQLite embedded, PostgreSQL
	# shared) and the server its end-to-end test starts
	libsqlite3-dev libpq-dev postgresql python3
	# the ingress benchmark's client
	wrk
	# the layer-7 engine benchmark (scripts/bench-l7engine.sh): nginx's
	# stream module (ssl_preread) and HAProxy, the two engines it compares
	libnginx-mod-stream haproxy
	# layer-7 credential injection: its benchmark's reference engine
	# (mitmproxy) and HTTP/2 load (h2load); its end-to-end test's python client
	mitmproxy nghttp2-client python3-requests
	# benchmarks and plots (unbound: the DNS benchmark's upstream; linux-perf and
	# strace: the profiles of make bench FULL=1; valgrind: the ingress
	# benchmark's instructions per request)
	iperf3 gnuplot-nox nftables dnsperf unbound linux-perf strace jq valgrind
	# the Debian package (make deb) and its tests: dpkg-shlibdeps and
	# dpkg-buildflags, lintian, systemd-analyze verify on the unit, the
	# JSON Schemas validated with python3-jsonschema, the manifests read
	# with python3-yaml
	dpkg-dev lintian systemd python3-yaml python3-jsonschema
	# a real systemd and a real container (tests/e2e/systemd.sh, make
	# test-container, tests/e2e/nginx-deb.sh): a Debian root made with
	# debootstrap, booted with systemd-nspawn, imported and built with podman
	# (runc: crun refuses hosts whose cgroups are a v1/v2 hybrid)
	debootstrap systemd-container podman runc
	# the zsh and fish completions run in their own shells (completion.sh)
	zsh fish
	# lint/format
	clang-format clang-tidy cppcheck shellcheck bear
	# kernel matrix (make vmtest)
	qemu-system-x86 busybox-static cpio zstd xz-utils
)

[ "$set_name" = demo ] && PKGS=("${DEMO_PKGS[@]}")

missing=()
# one dpkg-query for all: "NAME STATUS" for each package dpkg knows
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null |
	awk '/ install ok installed$/ { print $1 }') || true
for p in "${PKGS[@]}"; do
	grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
done

if [ "$check" = 1 ]; then
	bpffs=1
	mount | grep -q ' /sys/fs/bpf type bpf' || bpffs=0
	[ "${#missing[@]}" -eq 0 ] && [ "$bpffs" = 1 ] && exit 0
	[ "${#missing[@]}" -eq 0 ] || echo "missing Debian packages: ${missing[*]}" >&2
	[ "$bpffs" = 1 ] || echo "bpffs is not mounted at /sys/fs/bpf" >&2
	hint=""
	[ "$set_name" = demo ] && hint=" demo"
	echo "run scripts/install-deps.sh$hint as root (it installs them and mounts bpffs), then make again" >&2
	exit 1
fi

if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# packages such as unbound would start a system service: the tests
	# run their own instances inside namespaces, never one on the host
	policy=/usr/sbin/policy-rc.d
	own_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		own_policy=1
	fi
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi
fi

# bpffs must be mounted for pinning.
if ! mount | grep -q ' /sys/fs/bpf type bpf'; then
	mount -t bpf bpf /sys/fs/bpf
fi
