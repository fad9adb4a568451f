# The layer-7 egress proxy: an nginx dynamic module built like the
# ingress one (gateway/gateway.mk), against a copy of Debian's nginx-dev
# tree configured with Debian's own flags (conf_flags) plus the stream
# module as a dynamic module (Debian ships it as libnginx-mod-stream), so
# that the stream headers and the module's ABI signature match
# /usr/sbin/nginx. nginx-dev holds headers only: only this module's
# target is built. Included by the top-level Makefile.

L7_OUT := $(BUILD)/l7
L7_SO := $(L7_OUT)/ngx_fastwall_l7_module.so
L7_TREE := $(L7_OUT)/nginx
L7_DEPS := $(shell sed -e '/^\#/d' egress/sources)

.PHONY: l7proxy
l7proxy: $(L7_SO) ## the layer-7 egress proxy's nginx module (needs nginx-dev), in build/l7/

$(L7_TREE)/objs/Makefile: egress/config egress/sources egress/egress.mk $(wildcard $(NGINX_SRC)/conf_flags)
	$(call msg,CONFIG,$(L7_TREE))
	$(Q)if [ ! -f $(NGINX_SRC)/conf_flags ]; then \
		echo "make l7proxy: no nginx source at $(NGINX_SRC): install nginx-dev (scripts/install-deps.sh)" >&2; \
		exit 1; fi
	$(Q)if [ ! -f /usr/include/bpf/bpf.h ]; then \
		echo "make l7proxy: no /usr/include/bpf/bpf.h: install libbpf-dev (scripts/install-deps.sh)" >&2; \
		exit 1; fi
	$(Q)rm -rf $(L7_TREE) && mkdir -p $(L7_OUT) && cp -a $(NGINX_SRC) $(L7_TREE)
	$(Q)cd $(L7_TREE) && bash -c '. ./conf_flags && ./configure \
		--with-cc-opt="-g -O2 -fPIC -Werror" --with-ld-opt=-fPIC \
		"$${NGX_CONF_FLAGS[@]}" --with-stream=dynamic --with-stream_ssl_module \
		--with-stream_ssl_preread_module --add-dynamic-module=$(CURDIR)/egress \
		--builddir=objs' >$(abspath $(L7_OUT))/configure.log 2>&1 || \
		{ tail -n 20 $(abspath $(L7_OUT))/configure.log >&2; exit 1; }

$(L7_SO): $(L7_TREE)/objs/Makefile $(L7_DEPS)
	$(call msg,NGXMOD,$@)
	$(Q)$(MAKE) --no-print-directory -s -C $(L7_TREE) -f objs/Makefile objs/ngx_fastwall_l7_module.so >/dev/null
	$(Q)cp $(L7_TREE)/objs/ngx_fastwall_l7_module.so $@
