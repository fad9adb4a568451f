# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Part of lib.sh.
# --- the ingress gateway (ingress.sh, hostnames.sh, xcluster.sh) ----------
# The real nginx with this build's module, against the stand-ins of
# FastPath and of the Fastlets in ingress_servers.py.
FW_NGINX=/usr/sbin/nginx
# shellcheck disable=SC2034 # for the scripts that source this
FW_NGX_MODULE=$FW_BUILD/ingress/ngx_http_fastwall_ingress_module.so
# shellcheck disable=SC2034
FW_NGX_SERVERS=$FW_E2E_DIR/ingress_servers.py

# fw_ingress_require NAME [PYTHON-MODULE...]: without nginx and nginx-dev,
# the test NAME is skipped (the script exits 77, which scripts/run-tests.sh
# and make test-e2e count as skipped); else what
# fw_require checks, the Python modules the stand-ins import (grpc and
# grpc_tools, and those named) and a module built by make ingress.
fw_ingress_require() {
	local name=$1 mods
	shift
	if [ ! -f /usr/share/nginx/src/conf_flags ] || [ ! -x "$FW_NGINX" ]; then
		echo "$name: skipped: nginx or nginx-dev is not installed (scripts/install-deps.sh installs both)"
		exit 77
	fi
	fw_require
	mods=$(printf ', %s' grpc grpc_tools "$@")
	mods=${mods#, }
	"$FW_PY" -c "import $mods" 2>/dev/null ||
		fw_die "$FW_PY can't import $mods: install python3-grpcio python3-grpc-tools"
	make -s -C "$FW_ROOT" BUILD="$BUILD" ingress >/dev/null || fw_die "make ingress failed"
}

# fw_fastpath_stubs: the FastPath stand-in's gRPC code in $FW_TMP/gen,
# generated from the pinned .proto.
fw_fastpath_stubs() {
	mkdir -p "$FW_TMP/gen"
	"$FW_PY" -m grpc_tools.protoc -I"$FW_ROOT/gateway/proto" --python_out="$FW_TMP/gen" \
		--grpc_python_out="$FW_TMP/gen" "$FW_ROOT/gateway/proto/fastpath_v2.proto" ||
		fw_die "can't generate the stand-in from the proto"
}
