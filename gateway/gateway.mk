# The nginx dynamic module, built against Debian's nginx-dev the way
# Debian's libnginx-mod-* packages are: a copy of its source tree,
# configured with Debian's own flags (conf_flags) so the module's ABI
# signature matches /usr/sbin/nginx, then `make modules`. Included by the
# top-level Makefile.

NGINX_SRC ?= /usr/share/nginx/src
# the module's compiler and linker options (scripts/build-deb.sh passes
# Debian's hardening flags)
INGRESS_CC_OPT ?= -g -O2 -fPIC -Werror
INGRESS_LD_OPT ?= -fPIC
INGRESS_OUT := $(BUILD)/ingress
INGRESS_SO := $(INGRESS_OUT)/ngx_http_fastwall_ingress_module.so
INGRESS_TREE := $(INGRESS_OUT)/nginx
# the module's sources and headers, the list gateway/config reads too
INGRESS_DEPS := $(shell sed -e '/^\#/d' gateway/sources)

.PHONY: ingress
ingress: $(INGRESS_SO) ## the nginx ingress module (needs nginx-dev), in build/ingress/

# a new nginx-dev (a new conf_flags) configures the copy afresh
$(INGRESS_TREE)/objs/Makefile: gateway/config gateway/sources gateway/gateway.mk $(wildcard $(NGINX_SRC)/conf_flags)
	$(call msg,CONFIG,$(INGRESS_TREE))
	$(Q)if [ ! -f $(NGINX_SRC)/conf_flags ]; then \
		echo "make ingress: no nginx source at $(NGINX_SRC): install nginx-dev (scripts/install-deps.sh)" >&2; \
		exit 1; fi
	$(Q)for h in /usr/include/sqlite3.h /usr/include/postgresql/libpq-fe.h; do \
		[ -f $$h ] || { echo "make ingress: no $$h: install libsqlite3-dev and libpq-dev (scripts/install-deps.sh)" >&2; \
		exit 1; }; done
	$(Q)rm -rf $(INGRESS_TREE) && mkdir -p $(INGRESS_OUT) && cp -a $(NGINX_SRC) $(INGRESS_TREE)
	$(Q)cd $(INGRESS_TREE) && bash -c '. ./conf_flags && ./configure \
		--with-cc-opt="$(INGRESS_CC_OPT)" --with-ld-opt="$(INGRESS_LD_OPT)" \
		"$${NGX_CONF_FLAGS[@]}" --add-dynamic-module=$(CURDIR)/gateway \
		--builddir=objs' >$(abspath $(INGRESS_OUT))/configure.log 2>&1 || \
		{ tail -n 20 $(abspath $(INGRESS_OUT))/configure.log >&2; exit 1; }

$(INGRESS_SO): $(INGRESS_TREE)/objs/Makefile $(INGRESS_DEPS)
	$(call msg,NGXMOD,$@)
	$(Q)$(MAKE) --no-print-directory -s -C $(INGRESS_TREE) -f objs/Makefile modules >/dev/null
	$(Q)cp $(INGRESS_TREE)/objs/ngx_http_fastwall_ingress_module.so $@
