"""Per-call overhead of the Python layer on tiny problems (docs/PERFORMANCE.md, "Python").

For each call: microseconds per call from Python (mean of the best of 5 batches); when the
C program c_loop (this directory) is given, the same call timed the same way in a C loop,
and the difference (two processes: on a loaded machine the OpenMP and OpenCL rows carry
their scheduling noise); the median of the call's own RunInfo.wall_s (the library's time
inside the call); and "layer", the median over 2000 calls of (the call's time measured in
Python - its RunInfo.wall_s): what this layer adds, measured call by call in one process.  _noop is a context call of nothing under the same lock and GIL release: the
floor of the layer.

    python overhead.py [--backend serial] [--n 20000] [--c-loop ./c_loop]
"""
import argparse
import subprocess
import time

import numpy as np

import portkern


def best(fn, n, batches=5):
    t = 1e30
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = min(t, (time.perf_counter() - t0) / n)
    return t * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="serial")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--c-loop", default=None)
    a = ap.parse_args()
    ctx = portkern.Context(a.backend, ignore_env=True)
    f = np.ones((2, 2, 2), np.float32)
    im = np.ones((4, 4), np.float32)
    psf = np.ones((1, 1), np.float32)
    out = portkern.empty((4, 4), np.float32)
    u, psi = portkern.gen.su3_data(1)
    chi = portkern.empty((1, 3, 4), np.complex128)
    plan = ctx.diffusion3d_plan((2, 2, 2), 1)
    calls = {
        "diffusion3d": lambda: ctx.diffusion3d(f, 1, out=f),
        "conv2d": lambda: ctx.conv2d(im, psf, method="direct", out=out),
        "su3": lambda: ctx.su3(u, psi, out=chi),
        "diffusion3d_plan_execute": lambda: plan.execute(f, 1, out=f),
    }
    c = {}
    if a.c_loop:
        txt = subprocess.run([a.c_loop, a.backend, str(a.n)], check=True, capture_output=True,
                             text=True).stdout
        for line in txt.splitlines():
            if not line.startswith("#"):
                k, v = line.split()
                c[k] = float(v)
    print(f"# backend {a.backend}, microseconds per call, best of 5 x {a.n} calls")
    print(f"{'call':26s} {'python':>8s} {'C loop':>8s} {'py - C':>8s} {'wall_s':>8s} {'layer':>8s}")
    for name, fn in calls.items():
        fn()
        t = best(fn, a.n)
        walls, layer = [], []
        for _ in range(2000):
            t0 = time.perf_counter()
            info = fn()[-1]
            dt = time.perf_counter() - t0
            walls.append(info.wall_s)
            layer.append(dt - info.wall_s)
        w = np.median(walls) * 1e6
        lay = np.median(layer) * 1e6
        cl = c.get(name)
        print(f"{name:26s} {t:8.2f} {cl if cl is not None else float('nan'):8.2f} "
              f"{t - cl if cl is not None else float('nan'):8.2f} {w:8.2f} {lay:8.2f}")
    t = best(ctx._noop, a.n)
    print(f"{'_noop (lock + GIL release)':26s} {t:8.2f}")
    plan.close()
    ctx.close()


if __name__ == "__main__":
    main()
