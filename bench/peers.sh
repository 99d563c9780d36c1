#!/bin/bash
# portkern against its peers (docs/PERFORMANCE.md "Peers"): OpenCV for conv2d, Devito for
# diffusion3d, ducc0's wgridder for image (--kernels image: not in the default set, minutes),
# on the same inputs ('portkern gen'), the same thread count, side by side.
#
# The peers are benchmark-only dependencies: this script installs them (bench/requirements.txt,
# pinned) into a virtualenv of its own and nowhere else; the library never uses them.
#
#   bench/peers.sh [--venv DIR] [--portkern PATH] [peers.py options]
#
# --venv DIR       the virtualenv (default ${XDG_CACHE_HOME:-~/.cache}/portkern-peers); made
#                  when missing, (re)installed when bench/requirements.txt changed
# --portkern PATH  the portkern binary (default: tools/portkern of the build tree - the
#                  current directory, the source tree, or _build/ in it - else portkern on PATH)
# Everything else goes to peers.py: --threads N (default: the CPUs), --reps N (default 5),
# --kernels conv2d,diffusion3d[,image], --psf 11,31, --json OUT, --work DIR (keep the data
# there), --image-dataset el82-70 --image-scale 0.1 --image-eps 1e-2,1e-3,1e-4;
# listed below.
# Exit status: 0 every correctness check passed; 1 a peer's output differs from ours beyond
# the kernel's tolerance; 2 bad option, or a tool or an install failed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
venv=
portkern=
pass=()
while [ $# -gt 0 ]; do
    case $1 in
    --venv) [ $# -ge 2 ] || { echo "peers.sh: --venv needs a directory" >&2; exit 2; }
        venv=$2; shift 2 ;;
    --venv=*) venv=${1#--venv=}; shift ;;
    --portkern) [ $# -ge 2 ] || { echo "peers.sh: --portkern needs a path" >&2; exit 2; }
        portkern=$2; shift 2 ;;
    --portkern=*) portkern=${1#--portkern=}; shift ;;
    -h|--help)
        sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
        echo
        "${PYTHON:-python3}" "$here/peers.py" --help
        exit 0 ;;
    *) pass+=("$1"); shift ;;
    esac
done

if [ -z "$portkern" ]; then
    for c in "$PWD/tools/portkern" "$here/../tools/portkern" "$here/../_build/tools/portkern"; do
        if [ -x "$c" ]; then portkern=$c; break; fi
    done
fi
if [ -z "$portkern" ]; then
    portkern=$(command -v portkern || true)
fi
if [ -z "$portkern" ] || [ ! -x "$portkern" ]; then
    echo "peers.sh: no portkern binary: build the tree (tools/portkern) or give --portkern PATH" >&2
    exit 2
fi
case $portkern in /*) ;; *) portkern=$PWD/$portkern ;; esac

venv=${venv:-${XDG_CACHE_HOME:-$HOME/.cache}/portkern-peers}
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "peers.sh: no $python" >&2; exit 2; }

# Debian splits venv/ensurepip into python3-venv.
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "peers.sh: installing python3-venv (apt-get)" >&2
        apt-get install -y python3-venv >&2 || { apt-get update >&2 && apt-get install -y python3-venv >&2; } ||
            { echo "peers.sh: apt-get install python3-venv failed" >&2; exit 2; }
    else
        echo "peers.sh: $python cannot make a virtualenv: install python3-venv (Debian/Ubuntu)" >&2
        exit 2
    fi
fi

req=$here/requirements.txt
stamp=$venv/.portkern-peers-requirements
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
    echo "peers.sh: installing the peers into $venv (benchmark-only: $(grep -v '^#' "$req" | head -3 | tr '\n' ' '))" >&2
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv" || { echo "peers.sh: python -m venv $venv failed" >&2; exit 2; }
    fi
    rm -f "$stamp"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2 ||
        { echo "peers.sh: pip install into $venv failed (PyPI reachable?)" >&2; exit 2; }
    cp "$req" "$stamp"
fi

exec "$venv/bin/python" "$here/peers.py" --portkern "$portkern" ${pass[@]+"${pass[@]}"}
