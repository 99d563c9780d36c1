#!/bin/sh
# bootstrap.sh - Quick start on a fresh Debian 12 machine: install the build dependencies,
# build portkern in _build/, then run the main job: portkern-probe and a small benchmark.
#   ./bootstrap.sh [configure options...]      (e.g. --without-cuda, --prefix=/opt/portkern)
set -e
cd "$(dirname "$0")"
pkgs="build-essential autoconf automake libtool pkgconf ocl-icd-opencl-dev opencl-c-headers
      pocl-opencl-icd clinfo libfftw3-dev libcfitsio-dev
      libvkfft-dev"
missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing Debian packages:$missing"
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
# Configure's options (and the compiler variables it reads from the environment) of the last
# bootstrap are kept in _build/.bootstrap-options.  When they differ, or when _build was
# configured by something else, the old build is removed first (make distclean): objects,
# the library and the programs of the old configuration would otherwise survive into the
# new one - a program linked for one --prefix and installed under another cannot find
# libportkern.so.0.
opts=$(for a in "$@"; do printf 'arg %s\n' "$a"; done
       env | grep -E '^(CC|CFLAGS|CPPFLAGS|LDFLAGS|LIBS|NVCC|PKG_CONFIG_PATH)=' | sort)
if [ -f _build/config.status ] && [ "$(cat _build/.bootstrap-options 2>/dev/null)" != "$opts" ]; then
  echo "bootstrap: configure options differ from those of the build in _build/: cleaning it"
  if ! (cd _build && make distclean >/dev/null 2>&1); then
    echo "bootstrap: make distclean failed; removing _build/"
    rm -rf _build
  fi
fi
# The CUDA toolkit is optional: configure finds nvcc on PATH or in /usr/local/cuda.
autoreconf -fi
mkdir -p _build
rm -f _build/.bootstrap-options
cd _build
../configure "$@"
printf '%s\n' "$opts" > .bootstrap-options
make -j"$(nproc)"
echo
echo "== tools/portkern-probe ========================================================="
./tools/portkern-probe
echo
echo "== tools/portkern bench --size small ============================================"
./tools/portkern bench --size small
