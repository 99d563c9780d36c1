#!/usr/bin/env python3
"""portkern against its peers, side by side on the same data and the same thread count.

conv2d (docs/KERNELS.md section 5) against OpenCV; diffusion3d (section 3) against Devito;
image (section 7: the dirty image of a 'portkern gen grid' data set) against ducc0's wgridder.
Run through bench/peers.sh, which makes the virtualenv with the pinned peers
(bench/requirements.txt: benchmark-only dependencies, never the library's).

Same data: 'portkern gen' writes the inputs, the peers read them with numpy.  Each peer
runs in a child process of this script (a fresh process: its first call is a cold call;
Devito reads OMP_NUM_THREADS when it starts).  Checks, each a failure (exit 1) when broken:
- conv2d: OpenCV's output equals ours element-wise by the CLI's --verify rule (rtol 1e-5,
  zero 1e-10, docs/KERNELS.md section 6), and both equal a float64 FFT evaluation of the
  contract (the anchor) by the same rule; 'portkern bench' verified its rows.
- diffusion3d: Devito's field equals ours by the same rule on the points at least `count`
  cells from every face (Devito's zero halo and our zero-flux walls cannot reach them in
  `count` steps); 'portkern bench' verified its rows.
- image: both dirty images against a direct DFT (float64) at sample pixels (a square around
  the brightest generated source and random pixels over the image); ducc0 at several
  epsilons; the check is that ours lands the sources (the DFT's brightest sample is ours).
Exit status: 0 checks passed; 1 a check failed; 2 bad option or a tool failed.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RTOL = 1e-5  # docs/KERNELS.md sections 3, 5 and 6: the element-wise differ's defaults
ZERO = 1e-10
MARK = "PEERS-JSON "
# Targets of issue 15 (items 2 and 3).
CONV_ONE_CALL_MAX = 0.8  # ours one call <= 0.8 x OpenCV's call
AUTO_COST_MAX_MS = 2.0  # --backend auto <= 2 ms more than --backend openmp
D3_SINGLE_MIN = 1.0  # best single sweep >= Devito
D3_TB_MIN = 1.5  # omp-tb >= 1.5 x Devito


class ToolError(Exception):
    pass


PHASES = []  # (phase, 1-minute load average when it started): the load caveat in numbers


def log(msg):
    print("peers: " + msg, file=sys.stderr, flush=True)


def phase(name):
    load = os.getloadavg()[0]
    PHASES.append((name, load))
    log("%s (load average %.2f)" % (name, load))


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def emit(obj):
    print(MARK + json.dumps(obj), flush=True)


def last_json(text, marker=None):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if marker:
            if line.startswith(marker):
                return json.loads(line[len(marker):])
        elif line.startswith("{"):
            return json.loads(line)
    raise ToolError("no JSON line in the output:\n" + text[-2000:])


def differ(x, y, rtol=RTOL, zero=ZERO):
    """docs/KERNELS.md section 6, element-wise, evaluated in double; x is the first array."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        return {"equal": False, "compared": 0, "num_failed": -1, "max_rel_err": float("inf"),
                "note": "shapes differ"}
    ax, ay, d = np.abs(x), np.abs(y), np.abs(x - y)
    den = np.where(ax > zero, ax, np.where(ay > zero, ay, np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = d / den
    nan = np.isnan(x) | np.isnan(y)
    fail = (rel > rtol) | nan
    used = ~np.isnan(rel)
    mx = float(np.max(rel[used])) if used.any() else 0.0
    return {"equal": not bool(fail.any()), "compared": int(x.size),
            "num_failed": int(fail.sum()), "max_rel_err": mx,
            "max_abs_err": float(np.max(d)) if d.size else 0.0, "rtol": rtol, "zero": zero}


# ----------------------------------------------------------------------------------------
# Peer workers (child processes)

def worker_opencv(a):
    import numpy as np
    import cv2

    cv2.setNumThreads(a.threads)
    img = np.ascontiguousarray(np.load(os.path.join(a.dir, "image.npy")), dtype=np.float32)
    psf = np.ascontiguousarray(np.load(os.path.join(a.dir, "psf.npy")), dtype=np.float32)
    h, w = img.shape
    kh, kw = psf.shape
    top, left = kh // 2, kw // 2

    # filter2D correlates (no flip) with the anchor at (kw/2, kh/2): on the wrapped padding,
    # D[i + kh/2][j + kw/2] = sum psf[k][l] image[(i + k - kh/2) mod h][(j + l - kw/2) mod w],
    # which is our out[i][j] (docs/KERNELS.md section 5); filter2D refuses BORDER_WRAP itself.
    def call():
        p = cv2.copyMakeBorder(img, top, kh - 1 - top, left, kw - 1 - left, cv2.BORDER_WRAP)
        d = cv2.filter2D(p, -1, psf, borderType=cv2.BORDER_CONSTANT)
        return d

    t0 = time.perf_counter()
    d = call()
    cold = time.perf_counter() - t0
    times = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        d = call()
        times.append(time.perf_counter() - t0)
    np.save(a.save, np.ascontiguousarray(d[top:top + h, left:left + w]))
    emit({"peer": "opencv", "version": cv2.__version__, "threads": cv2.getNumThreads(),
          "timed": "cv2.copyMakeBorder(BORDER_WRAP) + cv2.filter2D(BORDER_CONSTANT)",
          "cold_seconds": cold, "seconds": times})


def worker_ducc0(a):
    """ducc0.wgridder.experimental.vis2dirty on the data set in a.dir, at each epsilon of
    a.eps: the dirty image in our orientation and normalisation (docs/KERNELS.md 7.1)."""
    import numpy as np
    import ducc0
    from ducc0.wgridder.experimental import vis2dirty

    with open(os.path.join(a.dir, "params.json")) as fh:
        p = json.load(fh)
    n, cell = int(a.image_size or p["image_size"]), float(p["cell_size_rad"])
    uvw = np.stack([np.load(os.path.join(a.dir, k + ".npy")).astype(np.float64)
                    for k in ("uu", "vv", "ww")], 1)
    vis = np.load(os.path.join(a.dir, "vis.npy")).astype(np.complex64)[:, None]
    wgt = np.load(os.path.join(a.dir, "weight.npy")).astype(np.float32)[:, None]
    # u, v, w are in wavelengths: a "frequency" of c makes ducc0's metres wavelengths.
    # flip_u and the transpose give docs/KERNELS.md 7.1's image (l = -px cell, image[y][x]);
    # found against a direct DFT (bench/peers.py image check), no division by n as ours.
    freq = np.array([299792458.0])
    out = []
    for eps in a.eps:
        def call():
            return vis2dirty(uvw=uvw, freq=freq, vis=vis, wgt=wgt, npix_x=n, npix_y=n,
                             pixsize_x=cell, pixsize_y=cell, epsilon=eps, do_wgridding=True,
                             nthreads=a.threads, flip_u=True, divide_by_n=False)
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            img = call()
            times.append(time.perf_counter() - t0)
        save = "%s-%g.npy" % (a.save, eps)
        np.save(save, np.ascontiguousarray((img / wgt.sum(dtype=np.float64)).T.astype(np.float32)))
        out.append({"epsilon": eps, "seconds": times, "image": save})
    emit({"peer": "ducc0", "version": ducc0.__version__, "threads": a.threads,
          "timed": "ducc0.wgridder.experimental.vis2dirty(do_wgridding=True)", "runs": out})


def worker_devito(a):
    import numpy as np
    from devito import Eq, Grid, Operator, TimeFunction, configuration
    import devito

    f = np.load(os.path.join(a.dir, "f.npy"))
    with open(os.path.join(a.dir, "params.json")) as fh:
        p = json.load(fh)
    count = int(p["count"])
    grid = Grid(shape=f.shape, dtype=np.float32)
    # Devito's x, y, z are the array's axes in order: x is our z (slowest), z our x.
    x, y, z = grid.dimensions
    u = TimeFunction(name="u", grid=grid, space_order=1, time_order=1)
    t = u.dimensions[0]
    c = {k: np.float32(p[k]) for k in ("cc", "cw", "ce", "cs", "cn", "cb", "ct")}
    nb = {"cw": u[t, x, y, z - 1], "ce": u[t, x, y, z + 1], "cn": u[t, x, y - 1, z],
          "cs": u[t, x, y + 1, z], "cb": u[t, x - 1, y, z], "ct": u[t, x + 1, y, z]}
    if len({float(c[k]) for k in nb}) == 1:
        rhs = c["cc"] * u + c["cw"] * sum(nb.values())
    else:
        rhs = c["cc"] * u + sum(c[k] * v for k, v in nb.items())
    op = Operator([Eq(u.forward, rhs)], opt="advanced")

    def apply():
        u.data[0] = f
        u.data[1] = 0
        t0 = time.perf_counter()
        s = op.apply(time_M=count - 1)
        wall = time.perf_counter() - t0
        return sum(v.time for v in s.values()), wall

    cold_op, cold_wall = apply()  # includes the JIT compilation (or a jit-cache hit)
    op_s, wall_s = [], []
    for _ in range(a.reps):
        o, w = apply()
        op_s.append(o)
        wall_s.append(w)
    np.save(a.save, np.ascontiguousarray(u.data[count % 2]))
    emit({"peer": "devito", "version": devito.__version__,
          "language": str(configuration["language"]), "platform": str(configuration["platform"]),
          "compiler": getattr(configuration["compiler"], "cc", str(configuration["compiler"])),
          "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "opt": "advanced",
          "equation": str(Eq(u.forward, rhs)), "count": count, "shape": list(f.shape),
          "cold_seconds": cold_op, "cold_wall_seconds": cold_wall, "seconds": op_s, "wall_seconds": wall_s})


# ----------------------------------------------------------------------------------------
# The orchestrator

class Runner:
    def __init__(self, a):
        self.a = a
        self.checks = []
        self.targets = []

    def sh(self, argv, env=None):
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)

    def pk(self, *args):
        argv = [self.a.portkern] + [str(x) for x in args]
        r = self.sh(argv)
        if r.returncode != 0:
            raise ToolError("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout[-2000:],
                                                  r.stderr[-2000:]))
        return r.stdout

    def pk_run(self, *args):
        return last_json(self.pk("run", *args))

    def pk_bench(self, kernel, extra=()):
        path = os.path.join(self.a.work, "bench-%s.json" % kernel)
        argv = [self.a.portkern, "bench", "--kernels", kernel, "--backends", "openmp", "--size",
                "paper", "--threads", str(self.a.threads), "--reps", str(self.a.reps), "--json",
                path] + list(extra)
        r = self.sh(argv)
        if r.returncode not in (0, 1) or not os.path.exists(path):
            raise ToolError("%s: exit %d\n%s" % (" ".join(argv), r.returncode, r.stderr[-2000:]))
        with open(path) as fh:
            d = json.load(fh)
        self.check("portkern bench %s: every row verified against the serial reference"
                   % kernel, r.returncode == 0 and all(x.get("verified") for x in d["rows"]
                                                       if x.get("status") == "ok"),
                   "exit %d" % r.returncode)
        return d

    def worker(self, peer, d, save, env=None):
        argv = [sys.executable, os.path.abspath(__file__), "--peer", peer, "--dir", d, "--save",
                save, "--threads", str(self.a.threads), "--reps", str(self.a.reps)]
        r = self.sh(argv, env=env)
        if r.returncode != 0:
            raise ToolError("peer %s: exit %d\n%s" % (peer, r.returncode, r.stderr[-3000:]))
        return last_json(r.stdout, MARK)

    def check(self, what, ok, detail=""):
        self.checks.append({"check": what, "ok": bool(ok), "detail": detail})
        log("check %s: %s%s" % ("ok" if ok else "FAILED", what, (" (" + detail + ")") if detail else ""))

    def target(self, what, ok, value):
        self.targets.append({"target": what, "met": bool(ok), "value": value})


def lscpu():
    info = {}
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            info[k.strip()] = v.strip()
    l3 = info.get("L3 cache", "")
    mib = None
    try:
        num, unit = l3.split()[:2]
        mib = float(num) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "K": 1 / 1024,
                            "M": 1}.get(unit, float("nan"))
    except ValueError:
        pass
    return {"model": info.get("Model name", "?"), "cpus": info.get("CPU(s)", "?"),
            "threads_per_core": info.get("Thread(s) per core", "?"),
            "cores_per_socket": info.get("Core(s) per socket", "?"),
            "sockets": info.get("Socket(s)", "?"), "l3": l3 or "?", "l3_mib": mib,
            "hypervisor": info.get("Hypervisor vendor")}


def fmt_ms(s):
    return "%.1f" % (1e3 * s) if s == s else "n/a"


def conv2d(run, a):
    import numpy as np

    T = a.threads
    results = []
    for K in a.psf:
        d = os.path.join(a.work, "conv2d-%d" % K)
        run.pk("gen", "conv2d", "--kh", K, "--kw", K, "--out", d)
        phase("conv2d %dx%d: OpenCV, %d calls after a cold one" % (K, K, a.reps))
        peer = run.worker("opencv", d, os.path.join(d, "opencv.npy"))
        phase("conv2d %dx%d: portkern run --backend openmp, %d processes" % (K, K, a.reps))
        ours = []
        for i in range(a.reps):
            extra = ["--out", os.path.join(d, "ours")] if i == 0 else []
            ours.append(run.pk_run("conv2d", "--in", d, "--backend", "openmp", "--threads", T,
                                   *extra))
        phase("conv2d %dx%d: portkern run --backend auto, %d processes" % (K, K, a.reps))
        auto = [run.pk_run("conv2d", "--in", d, "--backend", "auto", "--threads", T)
                for _ in range(a.reps)]

        img = np.load(os.path.join(d, "image.npy")).astype(np.float64)
        psf = np.load(os.path.join(d, "psf.npy")).astype(np.float64)
        out_ours = np.load(os.path.join(d, "ours", "out.npy"))
        out_cv = np.load(os.path.join(d, "opencv.npy"))
        h, w = img.shape
        kh, kw = psf.shape
        # Anchor: the contract in float64 by FFT, out = corr(image, k) with
        # k[(a - kh/2) mod h][(b - kw/2) mod w] += psf[a][b] (a PSF larger than the image wraps).
        kern = np.zeros((h, w))
        for i in range(kh):
            for j in range(kw):
                kern[(i - kh // 2) % h, (j - kw // 2) % w] += psf[i, j]
        anchor = np.fft.irfft2(np.fft.rfft2(img) * np.conj(np.fft.rfft2(kern)), s=(h, w))
        c_cv = differ(out_ours, out_cv)
        c_ours = differ(anchor, out_ours)
        c_cva = differ(anchor, out_cv)
        run.check("conv2d %dx%d: OpenCV == ours (element-wise, rtol %g)" % (K, K, RTOL),
                  c_cv["equal"], "max rel %.2e, %d failed" % (c_cv["max_rel_err"], c_cv["num_failed"]))
        run.check("conv2d %dx%d: ours == float64 anchor" % (K, K), c_ours["equal"],
                  "max rel %.2e" % c_ours["max_rel_err"])
        run.check("conv2d %dx%d: OpenCV == float64 anchor" % (K, K), c_cva["equal"],
                  "max rel %.2e" % c_cva["max_rel_err"])
        results.append({"k": K, "dir": d, "h": h, "w": w, "peer": peer, "ours_openmp": ours,
                        "ours_auto": auto, "check_opencv_vs_ours": c_cv,
                        "check_ours_vs_anchor": c_ours, "check_opencv_vs_anchor": c_cva})

    sweep = any(r["k"] != 11 for r in results)
    phase("conv2d: portkern bench --size paper%s" % (" --psf-sweep" if sweep else ""))
    bench = run.pk_bench("conv2d", ["--psf-sweep"] if sweep else [])
    rows = {r["variant"]: r for r in bench["rows"] if r.get("status") == "ok"}
    sw = {s["k"]: s for s in bench.get("conv2d", {}).get("psf_sweep", []) if not s.get("error")}
    if sweep:
        run.check("conv2d: bench's PSF sweep, FFT == direct at every K",
                  all(s.get("agree") for s in bench.get("conv2d", {}).get("psf_sweep", [])))
    for r in results:
        K = r["k"]
        variant = r["ours_openmp"][0]["variant"]
        steady = {}
        if K == 11:  # bench's paper preset: the 813 x 5271 frame, 11 x 11, seed 1
            for v, row in rows.items():
                steady[v] = row["kernel_seconds"]
        elif K in sw:
            steady[sw[K]["direct"]] = sw[K]["direct_ms"] / 1e3
            steady[sw[K]["fft"]] = sw[K]["fft_ms"] / 1e3
        r["variant"] = variant
        r["steady"] = steady
        r["steady_seconds"] = steady.get(variant, float("nan"))
        peer_s = r["peer"]["seconds"]
        one = [x["seconds"] for x in r["ours_openmp"]]
        kern = [x["kernel_seconds"] for x in r["ours_openmp"]]
        au = [x["seconds"] for x in r["ours_auto"]]
        r["summary"] = {
            "opencv_best": min(peer_s), "opencv_median": med(peer_s),
            "opencv_cold": r["peer"]["cold_seconds"],
            "ours_one_call_best": min(one), "ours_one_call_median": med(one),
            "ours_kernel_best": min(kern), "ours_kernel_median": med(kern),
            "ours_steady": r["steady_seconds"],
            "ours_auto_best": min(au), "ours_auto_median": med(au),
            "ratio_one_call": med(one) / med(peer_s),
            "ratio_one_call_best": min(one) / min(peer_s),
            "ratio_steady": r["steady_seconds"] / min(peer_s),
            "auto_cost_ms": 1e3 * (med(au) - med(one)),
        }
        s = r["summary"]
        run.target("conv2d %dx%d: one call <= %.1fx OpenCV's (medians)" % (K, K, CONV_ONE_CALL_MAX),
                   s["ratio_one_call"] <= CONV_ONE_CALL_MAX, s["ratio_one_call"])
        run.target("conv2d %dx%d: --backend auto <= %g ms over --backend openmp (medians)"
                   % (K, K, AUTO_COST_MAX_MS), s["auto_cost_ms"] <= AUTO_COST_MAX_MS,
                   s["auto_cost_ms"])
    return {"cases": results, "bench": bench}


def image(run, a):
    """Dirty image of a generated SKA set (default el82-70 --scale 0.1: 3.1 M visibilities,
    a 15000^2 image of the 18000^2 grid) by ours and by ducc0, each against a direct DFT."""
    import numpy as np

    T = a.threads
    d = os.path.join(a.work, "image")
    gen = ["gen", "grid", "--dataset", a.image_dataset, "--out", d]
    if a.image_scale != 1:
        gen += ["--scale", a.image_scale]
    run.pk(*gen)
    with open(os.path.join(d, "params.json")) as fh:
        p = json.load(fh)
    n, cell = int(p["image_size"]), float(p["cell_size_rad"])
    phase("image: portkern run image --backend openmp, %d processes" % a.image_reps)
    ours = []
    for i in range(a.image_reps):
        extra = ["--out", os.path.join(d, "ours")] if i == 0 else []
        ours.append(run.pk_run("image", "--in", d, "--backend", "openmp", "--threads", T, *extra))
    phase("image: ducc0 vis2dirty at epsilon %s, %d calls each"
          % (",".join("%g" % e for e in a.image_eps), a.image_reps))
    argv = [sys.executable, os.path.abspath(__file__), "--peer", "ducc0", "--dir", d, "--save",
            os.path.join(d, "ducc0"), "--threads", str(T), "--reps", str(a.image_reps), "--eps",
            ",".join("%g" % e for e in a.image_eps)]
    r = run.sh(argv)
    if r.returncode != 0:
        raise ToolError("peer ducc0: exit %d\n%s" % (r.returncode, r.stderr[-3000:]))
    peer = last_json(r.stdout, MARK)

    phase("image: direct DFT at the sample pixels")
    uu, vv, ww = (np.load(os.path.join(d, k + ".npy")).astype(np.float64) for k in ("uu", "vv", "ww"))
    vis = np.load(os.path.join(d, "vis.npy")).astype(np.complex128)
    wt = np.load(os.path.join(d, "weight.npy")).astype(np.float64)
    wsum = wt.sum()
    img = np.load(os.path.join(d, "ours", "image.npy"))
    by, bx = np.unravel_index(np.argmax(img), img.shape)
    rng = np.random.default_rng(1)
    h = a.image_patch // 2
    pix = [(y, x) for y in range(max(by - h, 0), min(by + h, n))
           for x in range(max(bx - h, 0), min(bx + h, n))]
    pix += [tuple(int(v) for v in rng.integers(0, n, 2)) for _ in range(a.image_random)]

    def dft(y, x):  # docs/KERNELS.md 7.1: l = -px cell, m = py cell, no division by n
        l, m = -(x - n // 2) * cell, (y - n // 2) * cell
        ph = 2 * np.pi * (uu * l + vv * m - ww * (np.sqrt(1 - l * l - m * m) - 1))
        return float(np.sum(wt * (vis.real * np.cos(ph) - vis.imag * np.sin(ph))) / wsum)

    ref = np.array([dft(y, x) for y, x in pix])

    def accuracy(im):
        got = np.array([float(im[y, x]) for y, x in pix], dtype=np.float64)
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    acc_ours = accuracy(img)
    del img
    runs = []
    for e in peer["runs"]:
        im = np.load(e["image"], mmap_mode="r")
        runs.append({"epsilon": e["epsilon"], "best": min(e["seconds"]), "median": med(e["seconds"]),
                     "accuracy": accuracy(im)})
        del im
    patch_peak = max(range(len(pix)), key=lambda i: ref[i])
    run.check("image: the DFT's brightest sample is our brightest pixel (%d, %d)" % (by, bx),
              pix[patch_peak] == (by, bx) or abs(ref[patch_peak] - ref[pix.index((by, bx))]) <=
              1e-3 * abs(ref[patch_peak]), "DFT peak at %s" % (pix[patch_peak],))
    one = [x["seconds"] for x in ours]
    res = {"dataset": a.image_dataset, "scale": a.image_scale, "num_vis": p.get("num_vis"),
           "image_size": n, "grid_size": p["grid_size"], "samples": len(pix),
           "ours": ours, "ours_best": min(one), "ours_median": med(one), "ours_accuracy": acc_ours,
           "peer": peer, "ducc0": runs}
    same = [x for x in runs if x["accuracy"] <= acc_ours]
    if same:
        best = min(same, key=lambda x: x["best"])
        res["ducc0_at_our_accuracy"] = best
        run.target("image: ours faster than ducc0 at the same accuracy (ours / ducc0, best)",
                   min(one) < best["best"], min(one) / best["best"])
    return res


def print_image(r):
    print()
    print("### image: %s --scale %g (%s visibilities), %d^2 image of the %d^2 grid"
          % (r["dataset"], r["scale"], r["num_vis"], r["image_size"], r["grid_size"]))
    print()
    print("Accuracy: relative L2 error against a direct DFT (float64) at %d sample pixels."
          % r["samples"])
    print()
    print("| | best s | median s | accuracy |")
    print("|---|---|---|---|")
    print("| ours, one call (portkern run image, openmp) | %.2f | %.2f | %.2e |"
          % (r["ours_best"], r["ours_median"], r["ours_accuracy"]))
    for x in r["ducc0"]:
        print("| ducc0 %s, epsilon %g | %.2f | %.2f | %.2e |"
              % (r["peer"]["version"], x["epsilon"], x["best"], x["median"], x["accuracy"]))


def print_conv2d(c, a, cv_version):
    print()
    print("### conv2d, %d x %d frame, %d threads (OpenCV %s; ms)" % (
        c["cases"][0]["h"], c["cases"][0]["w"], a.threads, cv_version))
    print()
    print("| PSF | OpenCV call best / median (cold) | ours one call best / median (kernel) "
          "| ours steady | one call / OpenCV | steady / OpenCV | --backend auto one call (cost) |")
    print("|---|---|---|---|---|---|---|")
    for r in c["cases"]:
        s = r["summary"]
        print("| %dx%d | %s / %s (%s) | %s / %s (%s) %s | %s | **%.2fx** (best %.2fx) | %.2fx "
              "| %s / %s (%+.1f) |" % (
                  r["k"], r["k"], fmt_ms(s["opencv_best"]), fmt_ms(s["opencv_median"]),
                  fmt_ms(s["opencv_cold"]), fmt_ms(s["ours_one_call_best"]),
                  fmt_ms(s["ours_one_call_median"]), fmt_ms(s["ours_kernel_median"]),
                  r["variant"], fmt_ms(s["ours_steady"]), s["ratio_one_call"],
                  s["ratio_one_call_best"], s["ratio_steady"], fmt_ms(s["ours_auto_best"]),
                  fmt_ms(s["ours_auto_median"]), s["auto_cost_ms"]))
    print()
    print("OpenCV: best / median of %d calls of copyMakeBorder + filter2D, cold = the first call "
          "of a fresh process; ours one call: 'portkern run' \"seconds\" (the whole call: plan, "
          "copies, kernel) over %d processes, kernel_seconds median in brackets; steady: "
          "'portkern bench' (best of %d plan runs, data resident). Ratios are times: ours / "
          "OpenCV, lower is better (one call: medians; steady: bests)." % (a.reps, a.reps, a.reps))


def diffusion3d(run, a):
    import numpy as np

    T = a.threads
    d = os.path.join(a.work, "diffusion3d")
    run.pk("gen", "diffusion3d", "--preset", "paper", "--out", d)
    with open(os.path.join(d, "params.json")) as fh:
        p = json.load(fh)
    count = int(p["count"])
    pts = p["nx"] * p["ny"] * p["nz"] * count
    env = dict(os.environ)
    env["DEVITO_LANGUAGE"] = "openmp"
    env["OMP_NUM_THREADS"] = str(T)
    env.setdefault("DEVITO_LOGGING", "WARNING")
    phase("diffusion3d: Devito, %d applies of %d steps after a first one with the JIT"
          % (a.reps, count))
    peer = run.worker("devito", d, os.path.join(d, "devito.npy"), env=env)
    phase("diffusion3d: portkern bench --size paper")
    bench = run.pk_bench("diffusion3d")
    rows = [r for r in bench["rows"] if r.get("status") == "ok"]
    for r in rows:
        r["gpts"] = pts / r["kernel_seconds"] / 1e9
        r["gpts_median"] = pts / r["kernel_seconds_median"] / 1e9
        r["temporal_blocking"] = r["variant"].endswith("-tb")
    single = [r for r in rows if not r["temporal_blocking"]]
    tb = [r for r in rows if r["temporal_blocking"]]
    best_ss = max(single, key=lambda r: r["gpts"])
    one_shot = {}
    for v in [best_ss["variant"]] + [r["variant"] for r in tb]:
        phase("diffusion3d: portkern run --variant %s, %d processes" % (v, a.reps))
        one_shot[v] = [run.pk_run("diffusion3d", "--in", d, "--backend", "openmp", "--variant", v,
                                  "--threads", T,
                                  *(["--out", os.path.join(d, "ours-" + v)] if i == 0 else []))
                       for i in range(a.reps)]

    dv = np.load(os.path.join(d, "devito.npy"))
    inner = tuple(slice(count, n - count) for n in dv.shape)
    checks = {}
    for v in one_shot:
        ours = np.load(os.path.join(d, "ours-" + v, "f.npy"))
        c = differ(ours[inner], dv[inner])
        c["whole_field_max_rel_err"] = differ(ours, dv)["max_rel_err"]
        checks[v] = c
        run.check("diffusion3d: Devito == ours (%s) on the points >= %d cells from every face "
                  "(element-wise, rtol %g)" % (v, count, RTOL), c["equal"],
                  "max rel %.2e over %d points; whole field %.2e (the walls differ)"
                  % (c["max_rel_err"], c["compared"], c["whole_field_max_rel_err"]))

    dev_best = min(peer["seconds"])
    dev_gpts = pts / dev_best / 1e9
    summary = {"points_x_steps": pts, "devito_best_seconds": dev_best,
               "devito_median_seconds": med(peer["seconds"]),
               "devito_wall_best_seconds": min(peer["wall_seconds"]),
               "devito_gpts": dev_gpts, "devito_gpts_median": pts / med(peer["seconds"]) / 1e9,
               "best_single_sweep": best_ss["variant"],
               "variants": {r["variant"]: {"gpts": r["gpts"], "gpts_median": r["gpts_median"],
                                           "ratio": r["gpts"] / dev_gpts,
                                           "temporal_blocking": r["temporal_blocking"]}
                            for r in rows},
               "one_shot": {}}
    for v, runs in one_shot.items():
        sec = [x["seconds"] for x in runs]
        ks = [x["kernel_seconds"] for x in runs]
        summary["one_shot"][v] = {"seconds_best": min(sec), "seconds_median": med(sec),
                                  "kernel_best": min(ks), "kernel_median": med(ks),
                                  "gpts_call_best": pts / min(sec) / 1e9,
                                  "gpts_call_median": pts / med(sec) / 1e9,
                                  "ratio_call_best": pts / min(sec) / 1e9 / dev_gpts}
    run.target("diffusion3d: best single sweep (%s, steady) >= Devito" % best_ss["variant"],
               best_ss["gpts"] >= D3_SINGLE_MIN * dev_gpts, best_ss["gpts"] / dev_gpts)
    for r in tb:
        run.target("diffusion3d: %s (steady) >= %.1fx Devito" % (r["variant"], D3_TB_MIN),
                   r["gpts"] >= D3_TB_MIN * dev_gpts, r["gpts"] / dev_gpts)
    return {"dir": d, "params": p, "peer": peer, "bench": bench, "one_shot": one_shot,
            "checks": checks, "summary": summary}


def print_diffusion3d(dd, a):
    s = dd["summary"]
    p = dd["params"]
    pk = dd["peer"]
    print()
    print("### diffusion3d, %d x %d x %d float32, %d steps, %d threads (Devito %s, opt=advanced; "
          "Gpts/s = points x steps / time)" % (p["nx"], p["ny"], p["nz"], p["count"], a.threads,
                                               pk["version"]))
    print()
    print("| | Gpts/s best (median) | ms best | vs Devito |")
    print("|---|---|---|---|")
    print("| Devito, operator apply | %.2f (%.2f) | %.1f (wall %.1f) | 1 |" % (
        s["devito_gpts"], s["devito_gpts_median"], 1e3 * s["devito_best_seconds"],
        1e3 * s["devito_wall_best_seconds"]))
    print("| Devito, first apply of the process (JIT compile or jit-cache hit), wall | %.2f | %.1f "
          "| |" % (s["points_x_steps"] / pk["cold_wall_seconds"] / 1e9, 1e3 * pk["cold_wall_seconds"]))
    for v, x in sorted(s["variants"].items(), key=lambda kv: -kv[1]["gpts"]):
        kind = "temporal blocking" if x["temporal_blocking"] else "single sweep"
        print("| ours steady, %s (%s) | %.2f (%.2f) | %.1f | **%.2fx** |" % (
            v, kind, x["gpts"], x["gpts_median"], 1e3 * s["points_x_steps"] / x["gpts"] / 1e9,
            x["ratio"]))
    for v, x in s["one_shot"].items():
        print("| ours one call, %s: whole call (kernel) | %.2f (%.2f) | %.1f (kernel %.1f) | %.2fx |"
              % (v, x["gpts_call_best"], x["gpts_call_median"], 1e3 * x["seconds_best"],
                 1e3 * x["kernel_best"], x["ratio_call_best"]))
    print()
    print("Devito: best / median of %d operator applies (its own timer; wall around apply in "
          "brackets) after a first apply with the JIT; ours steady: 'portkern bench' (best of %d "
          "plan runs, field resident); one call: 'portkern run' over %d processes, Gpts/s of "
          "\"seconds\" (the whole call: plan, copies, kernel). Ratios are speeds: ours / Devito, "
          "higher is better." % (a.reps, a.reps, a.reps))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--portkern", default=os.environ.get("PORTKERN", "portkern"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="threads on both sides (default: the CPUs, %(default)s)")
    ap.add_argument("--reps", type=int, default=5,
                    help="timed calls of a peer, processes of 'portkern run', bench reps (default 5)")
    ap.add_argument("--kernels", default="conv2d,diffusion3d")
    ap.add_argument("--psf", default="11,31", help="conv2d PSF sizes, square (default 11,31)")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--work", help="keep the data sets and outputs in this directory "
                    "(default: a temporary one, removed)")
    ap.add_argument("--image-dataset", default="el82-70",
                    help="image: the 'portkern gen grid' data set (default el82-70)")
    ap.add_argument("--image-scale", type=float, default=0.1,
                    help="image: its --scale (default 0.1: 3.1 M visibilities)")
    ap.add_argument("--image-reps", type=int, default=3, help="image: calls of each side")
    ap.add_argument("--image-eps", default="1e-2,1e-3,1e-4",
                    help="image: ducc0's epsilons (default 1e-2,1e-3,1e-4): the fastest one at "
                    "least as accurate as ours is the comparison")
    ap.add_argument("--image-patch", type=int, default=12,
                    help="image: DFT samples, a square of this side around the brightest pixel")
    ap.add_argument("--image-random", type=int, default=64,
                    help="image: DFT samples at random pixels")
    ap.add_argument("--peer", choices=["opencv", "devito", "ducc0"], help=argparse.SUPPRESS)
    ap.add_argument("--eps", help=argparse.SUPPRESS)
    ap.add_argument("--image-size", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        if a.peer == "ducc0":
            a.eps = [float(e) for e in a.eps.split(",")]
        {"opencv": worker_opencv, "devito": worker_devito, "ducc0": worker_ducc0}[a.peer](a)
        return 0
    if a.threads < 1 or a.reps < 1:
        ap.error("--threads and --reps must be >= 1")
    kernels = [k for k in a.kernels.split(",") if k]
    for k in kernels:
        if k not in ("conv2d", "diffusion3d", "image"):
            ap.error("--kernels: conv2d, diffusion3d and image have peers here, not %r" % k)
    try:
        a.image_eps = [float(e) for e in a.image_eps.split(",") if e]
    except ValueError:
        ap.error("--image-eps: numbers, comma-separated")
    try:
        a.psf = [int(k) for k in a.psf.split(",") if k]
        if not a.psf or min(a.psf) < 1:
            raise ValueError
    except ValueError:
        ap.error("--psf: sizes >= 1, comma-separated")
    if shutil.which(a.portkern) is None and not os.access(a.portkern, os.X_OK):
        ap.error("--portkern: %s is not an executable" % a.portkern)

    keep = a.work is not None
    a.work = os.path.abspath(a.work) if keep else tempfile.mkdtemp(prefix="portkern-peers.")
    os.makedirs(a.work, exist_ok=True)
    run = Runner(a)
    m = lscpu()
    load0 = os.getloadavg()
    t_start = time.time()
    out = {"machine": m, "threads": a.threads, "reps": a.reps, "portkern": a.portkern,
           "python": sys.version.split()[0], "loadavg_start": load0}
    try:
        out["portkern_version"] = run.pk("--version").strip()
        log("machine: %s, %s CPUs, L3 %s; load average %.2f; %d threads, %d reps"
            % (m["model"], m["cpus"], m["l3"], load0[0], a.threads, a.reps))
        if "conv2d" in kernels:
            out["conv2d"] = conv2d(run, a)
        if "diffusion3d" in kernels:
            out["diffusion3d"] = diffusion3d(run, a)
        if "image" in kernels:
            out["image"] = image(run, a)
    except ToolError as e:
        print("peers: a tool failed: %s" % e, file=sys.stderr)
        return 2
    finally:
        if not keep:
            shutil.rmtree(a.work, ignore_errors=True)
    out["loadavg_end"] = os.getloadavg()
    out["seconds"] = time.time() - t_start
    out["phases"] = [{"phase": n, "loadavg_1min": l} for n, l in PHASES]
    out["checks"] = run.checks
    out["targets"] = run.targets
    out["ok"] = all(c["ok"] for c in run.checks)

    print("## portkern against its peers (%s)" % out["portkern_version"])
    print()
    l3 = m["l3_mib"]
    print("Machine: %s, %s CPUs (%s cores per socket x %s sockets, %s threads per core)%s, L3 %s; "
          "%d threads on both sides; load average %.2f at the start, %.2f at the end (other work "
          "on the machine inflates and scatters the times)." % (
              m["model"], m["cpus"], m["cores_per_socket"], m["sockets"], m["threads_per_core"],
              (", " + m["hypervisor"] + " guest") if m["hypervisor"] else "", m["l3"], a.threads,
              load0[0], out["loadavg_end"][0]))
    if "diffusion3d" in out:
        p = out["diffusion3d"]["params"]
        field = p["nx"] * p["ny"] * p["nz"] * 4 / 2**20
        if l3 is not None:
            where = ("DRAM-bound: the two %.0f MiB fields exceed the %.0f MiB L3" % (field, l3)
                     if l3 < 2 * field else
                     "cache-resident: the two %.0f MiB fields fit the %.0f MiB L3" % (field, l3))
            print("diffusion3d figures here are %s." % where)
            out["diffusion3d"]["memory"] = where
    if "conv2d" in out:
        print_conv2d(out["conv2d"], a, out["conv2d"]["cases"][0]["peer"]["version"])
    if "diffusion3d" in out:
        print_diffusion3d(out["diffusion3d"], a)
    if "image" in out:
        print_image(out["image"])
    print()
    print("Load average (1 min) as each phase started: " +
          "; ".join("%s %.2f" % (n.split(",")[0], l) for n, l in PHASES))
    print()
    print("Targets (issues 15 and 21; benchmarks, not tests):")
    for t in run.targets:
        print("- %s: %s (%.2f)" % (t["target"], "met" if t["met"] else "NOT met", t["value"]))
    print("Checks:")
    for c in run.checks:
        print("- %s: %s%s" % (c["check"], "ok" if c["ok"] else "FAILED",
                              (" (" + c["detail"] + ")") if c["detail"] else ""))
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
        os.replace(tmp, a.json)
    if not out["ok"]:
        print("peers: a correctness check failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
