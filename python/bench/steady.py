"""Steady plan throughput from Python against `portkern bench` (docs/PERFORMANCE.md,
"Python").  bench times plan runs on device-resident data (min, median, max of N runs
after a warm-up); this does the same from Python with the same sizes, twice:
  run      plan.upload once, then N timed plan.run() calls (what bench times),
  execute  N timed plan.execute(a, out=a) calls on the caller's array (serial and OpenMP
           work on it directly: zero copy; laplace2d's hvfo converts the layout on each
           call, which bench's resident runs do not),
each timed in Python around the call (perf_counter), so the layer's overhead is included.

    portkern bench --kernels diffusion3d,laplace2d --backends serial,openmp --reps 20 --json B.json
    python steady.py --bench-json B.json [--reps 20]
"""
import argparse
import json
import time

import numpy as np

import portkern


def cases():
    """(kernel, case name as bench prints it, plan factory, data, count)."""
    f = portkern.gen.diffusion3d_field((128, 128, 128))
    yield ("diffusion3d", None, lambda c, v: c.diffusion3d_plan(f.shape, 10, variant=v), f)
    rng = np.random.default_rng(1)
    for l, count in ((256, 20), (1024, 10)):
        phi = portkern.empty((l, l), np.float32)
        phi[...] = rng.uniform(-1, 1, (l, l))
        for layout, name in (("lexi", "lexi"), ("hvfo", "hvfo/16")):
            yield ("laplace2d", f"l={l} {name}",
                   lambda c, v, l=l, count=count, layout=layout:
                   c.laplace2d_plan(l, 0.1, count, layout=layout, variant=v), phi)


def timed(fn, reps):
    """min and median seconds of fn() timed in Python, and the median of (that time - the
    call's own RunInfo.wall_s): what the Python layer adds to the library call."""
    fn()  # warm-up
    ts, layer = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        info = fn()
        t = time.perf_counter() - t0
        ts.append(t)
        layer.append(t - info.wall_s)
    return min(ts), float(np.median(ts)), float(np.median(layer))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--backends", default="serial,openmp")
    a = ap.parse_args()
    bench = {}
    if a.bench_json:
        for r in json.load(open(a.bench_json))["rows"]:
            if r.get("status") == "ok":
                bench[(r["kernel"], r["backend"], r["variant"], r["case"])] = r["kernel_seconds"]
    print(f"# ms per plan run, min (median) of {a.reps} after a warm-up; ratio = bench min / "
          f"Python min (1.00: the same throughput); "
          f"layer us: median of (Python's time - RunInfo.wall_s) per run() call")
    print(f"{'kernel':12s} {'backend':7s} {'variant':12s} {'case':15s} {'bench':>8s} "
          f"{'py run':>17s} {'ratio':>6s} {'layer us':>8s} {'py execute':>17s} {'ratio':>6s}")
    for backend in a.backends.split(","):
        ctx = portkern.Context(backend, ignore_env=True)
        for kernel, case, make, data in cases():
            for v in portkern.variants(kernel, backend):
                with make(ctx, v) as plan:
                    work = data.copy() if kernel == "diffusion3d" else portkern.empty(data.shape, data.dtype)
                    work[...] = data
                    plan.upload(work)
                    run_min, run_med, run_layer = timed(plan.run, a.reps)
                    # time only the call: refresh the data outside the timed region
                    ts = []
                    plan.execute(work, out=work)
                    for _ in range(a.reps):
                        work[...] = data
                        t0 = time.perf_counter()
                        plan.execute(work, out=work)
                        ts.append(time.perf_counter() - t0)
                    ex_min, ex_med = min(ts), float(np.median(ts))
                b = bench.get((kernel, backend, v, case))
                rb = f"{b / run_min:6.2f}" if b else "     -"
                re = f"{b / ex_min:6.2f}" if b else "     -"
                bs = f"{b * 1e3:8.3f}" if b else "       -"
                print(f"{kernel:12s} {backend:7s} {v:12s} {case or '':15s} {bs} "
                      f"{run_min * 1e3:8.3f} ({run_med * 1e3:6.3f}) {rb} {run_layer * 1e6:8.2f} "
                      f"{ex_min * 1e3:8.3f} ({ex_med * 1e3:6.3f}) {re}")
        ctx.close()


if __name__ == "__main__":
    main()
