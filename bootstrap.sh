#!/bin/sh
# bootstrap.sh - Quick start on a fresh Debian 12 machine: install the build dependencies,
# build portkern in _build/, then run the main job: portkern-probe and a small benchmark.
#   ./bootstrap.sh [configure options...]      (e.g. --without-cuda, --prefix=/opt/portkern)
set -e
cd "$(dirname "$0")"
pkgs="build-essential autoconf automake libtool pkgconf ocl-icd-opencl-dev opencl-c-headers
      pocl-opencl-icd clinfo libfftw3-dev"
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
# The CUDA toolkit is optional: configure finds nvcc on PATH or in /usr/local/cuda.
autoreconf -fi
mkdir -p _build
cd _build
../configure "$@"
make -j"$(nproc)"
echo
echo "== tools/portkern-probe ========================================================="
./tools/portkern-probe
echo
echo "== tools/portkern bench --size small ============================================"
./tools/portkern bench --size small
