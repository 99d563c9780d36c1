#!/bin/sh
# test_install.sh - install the library into a scratch root (make install DESTDIR=...), then
# build and run a small external program against it with nothing but
# `pkg-config --cflags --libs portkern` (PKG_CONFIG_SYSROOT_DIR maps the configured prefix
# into the scratch root, as for a staged install).
echo "1..4"
: "${top_builddir:=.}"
tmp=`mktemp -d "${TMPDIR:-/tmp}/pk-install.XXXXXX"` || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"
if ${MAKE:-make} -C "$top_builddir" install DESTDIR="$root" >"$tmp/install.log" 2>&1; then
  echo "ok 1 - make install DESTDIR=<scratch root>"
else
  echo "not ok 1 - make install DESTDIR=<scratch root>"; sed 's/^/# /' "$tmp/install.log" | tail -20
  exit 1
fi
pc=`find "$root" -name portkern.pc | head -n 1`
libdir=`find "$root" -name 'libportkern.so*' | head -n 1`
libdir=`dirname "$libdir"`
cat > "$tmp/user.c" <<'CEOF'
#include <portkern.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    enum { N = 12 };
    static float f[N * N * N], ref[N * N * N];
    pk_diffusion3d_params p;
    pk_context *ctx;
    pk_run_info info;
    pk_diffusion3d_params_default(&p, N, N, N, 5);
    pk_diffusion3d_field(N, N, N, 0.0, f);
    memcpy(ref, f, sizeof f);
    if (pk_context_create(&ctx, NULL) != PK_OK) return 2;
    int s = pk_diffusion3d(ctx, &p, NULL, f, &info);
    pk_diffusion3d_reference(&p, ref);
    int d = pk_diff_f32(f, ref, N * N * N, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, NULL);
    printf("portkern %s: ran %s/%s: %s\n", pk_version(), pk_backend_name(info.backend),
           info.variant, d == PK_OK ? "equal to the reference" : pk_last_error());
    pk_context_destroy(ctx);
    return s == PK_OK && d == PK_OK ? 0 : 1;
}
CEOF
PKG_CONFIG_PATH=`dirname "$pc"`; PKG_CONFIG_SYSROOT_DIR="$root"
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
flags=`pkg-config --cflags --libs portkern` && echo "ok 2 - pkg-config portkern: $flags" \
  || { echo "not ok 2 - pkg-config portkern"; exit 1; }
if ${CC:-cc} -o "$tmp/user" "$tmp/user.c" $flags >"$tmp/cc.log" 2>&1; then
  echo "ok 3 - an external program compiles and links with pkg-config's flags only"
else
  echo "not ok 3 - an external program compiles and links"; sed 's/^/# /' "$tmp/cc.log"; exit 1
fi
if out=`LD_LIBRARY_PATH="$libdir" "$tmp/user" 2>&1`; then
  echo "ok 4 - it runs against the installed library: $out"
else
  echo "not ok 4 - it runs against the installed library"; echo "$out" | sed 's/^/# /'; exit 1
fi
