"""portkern.gen.grid and portkern.gen.conv2d (pk_grid_generate, pk_conv2d_generate): the
same seed gives the same data; the data are the bytes `portkern gen grid` / `gen conv2d`
write for the same arguments; they grid and convolve through the Context to what the tool's
`run` computes from its own files; bad arguments raise.

The tool is found as PORTKERN_TOOL, PORTKERN_BUILD_DIR/tools/portkern, _build/tools/portkern
of the source tree these tests are in, or `portkern` on PATH; without it the comparisons
with the tool are skipped (saying so).
"""
import json
import os
import shutil
import subprocess
import threading

import numpy as np
import pytest

import portkern

pytestmark = pytest.mark.skipif(not hasattr(portkern._core, "grid_generate"),
                                reason="the libportkern built against has no pk_grid_generate")

GRID_KEYS = ("uu", "vv", "ww", "vis", "weight", "kernels", "support")


def _tool():
    cands = [os.environ.get("PORTKERN_TOOL")]
    if os.environ.get("PORTKERN_BUILD_DIR"):
        cands.append(os.path.join(os.environ["PORTKERN_BUILD_DIR"], "tools", "portkern"))
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "_build", "tools", "portkern"))
    cands.append(shutil.which("portkern"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


TOOL = _tool()
needs_tool = pytest.mark.skipif(TOOL is None, reason="no portkern tool found (PORTKERN_TOOL, "
                                "PORTKERN_BUILD_DIR/tools/portkern, _build/tools/portkern)")


def _run_tool(*args):
    r = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"portkern {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r


def _grid_or_skip(*args, **kw):
    """gen.grid, skipping when this build has no FFTW (double) for the kernels."""
    try:
        return portkern.gen.grid(*args, **kw)
    except portkern.UnsupportedError as e:
        pytest.skip(f"no grid kernels in this build: {e}")


# ---- grid -----------------------------------------------------------------------------------
def test_grid_small_fields_and_reproducible():
    a = _grid_or_skip("small", scale=0.1, seed=5)
    b = portkern.gen.grid("small", scale=0.1, seed=5)
    c = portkern.gen.grid("small", scale=0.1, seed=6)
    assert isinstance(a, dict) and set(a) == set(GRID_KEYS) | {
        "oversample", "cell_size", "w_scale", "grid_size"}
    n = a.info["num_vis"]
    assert n == 5000 and a["uu"].shape == (n,) and a["vis"].dtype == np.complex64
    assert a["uu"].dtype == a["weight"].dtype == np.float32 and a["support"].dtype == np.int32
    assert a["kernels"].ndim == 1 and a["kernels"].dtype == np.complex64
    assert a["support"].shape == (32,) and a["support"].max() == a.info["max_support"] == 16
    assert a["grid_size"] == 1024 and a["oversample"] == 4
    assert a.info["dataset"] == "small" and a.info["seed"] == 5 and "layout" not in a.info
    for k in GRID_KEYS:
        assert np.array_equal(a[k], b[k]), k
        assert a[k].flags["C_CONTIGUOUS"] and a[k].flags["WRITEABLE"]
    assert a["w_scale"] == b["w_scale"]
    # the seed orders the visibilities (and draws the random uvw); the kernels do not move
    assert not np.array_equal(a["uu"], c["uu"])
    assert np.array_equal(a["kernels"], c["kernels"])


def test_grid_full_layout_compacts_to_compact():
    a = _grid_or_skip("small", scale=0.05, seed=2)
    f = portkern.gen.grid("small", scale=0.05, seed=2, kernel_layout="full")
    assert f["kernels"].ndim == 3 and f["kernels"].shape[0] == 32
    assert f.info["kernel_layout"] == "full"
    assert np.array_equal(portkern.compact_kernels(f["kernels"], f["support"], f["oversample"]),
                          a["kernels"])
    assert np.array_equal(f["uu"], a["uu"])


@needs_tool
@pytest.mark.parametrize("args", [
    ("small", 0.2, 3, {}),
    ("small", 0.3, 5, {"unit_vis": True, "kernel_layout": "full"}),
    ("el82-70", 0.005, 7, {}),
])
def test_grid_equals_the_tool(tmp_path, args):
    dataset, scale, seed, kw = args
    d = _grid_or_skip(dataset, scale=scale, seed=seed, **kw)
    cli = ["gen", "grid", "--dataset", dataset, "--scale", repr(scale), "--seed", str(seed),
           "--out", str(tmp_path)]
    if kw.get("unit_vis"):
        cli.append("--unit-vis")
    if kw.get("kernel_layout"):
        cli += ["--kernels", kw["kernel_layout"]]
    _run_tool(*cli)
    for k in GRID_KEYS:
        f = np.load(tmp_path / f"{k}.npy")
        assert f.dtype == d[k].dtype and f.shape == d[k].shape, k
        assert f.tobytes() == d[k].tobytes(), f"{k}.npy differs"
    params = json.loads((tmp_path / "params.json").read_text())
    for k, v in (("oversample", "oversample"), ("cell_size_rad", "cell_size"),
                 ("w_scale", "w_scale"), ("grid_size", "grid_size")):
        assert params[k] == d[v], k
    for k in ("num_vis", "max_support", "image_size", "fft_size", "max_w", "max_abs_w_data",
              "num_beyond_max_w", "unit_vis", "recipe", "kernel_layout", "dataset", "seed",
              "num_stations", "num_times", "layout", "frequency_hz"):
        if k in params:
            assert d.info[k] == params[k], k


@needs_tool
def test_grid_grids_as_the_tool_runs(tmp_path):
    d = _grid_or_skip("small", scale=0.2, seed=4)
    gen_dir, out_dir = tmp_path / "in", tmp_path / "out"
    _run_tool("gen", "grid", "--dataset", "small", "--scale", "0.2", "--seed", "4",
              "--out", str(gen_dir))
    _run_tool("run", "grid", "--in", str(gen_dir), "--backend", "serial", "--verify",
              "--out", str(out_dir))
    with portkern.Context("serial", ignore_env=True) as ctx:
        grid, norm, skipped, info = ctx.grid(**d)
    ref = np.load(out_dir / "grid.npy")
    assert grid.dtype == ref.dtype and grid.shape == ref.shape
    # the same serial variant on the same bytes: the same grid, bit for bit
    assert np.array_equal(grid, ref)
    assert skipped == 0 and norm > 0


def test_grid_ska_layout_file(tmp_path):
    lay = tmp_path / "stations.txt"
    lay.write_text("# E N U\n0 0 0\n100 0 1\n0 200 2\n-300, 50, 0\n")
    d = _grid_or_skip("el82-70", scale=0.01, seed=1, layout=lay)
    assert d.info["num_stations"] == 4 and d.info["layout"] == str(lay)
    assert d.info["num_vis"] == 6 * d.info["num_times"] and d["uu"].shape == (d.info["num_vis"],)


def test_grid_bad_arguments(tmp_path):
    with pytest.raises(portkern.InvalidArgumentError, match="unknown data set 'el99'"):
        portkern.gen.grid("el99")
    for scale in (0, -1, 1.5, float("nan")):
        with pytest.raises(portkern.InvalidArgumentError, match="scale"):
            portkern.gen.grid("small", scale=scale)
    with pytest.raises(portkern.InvalidArgumentError, match="no station layout"):
        portkern.gen.grid("small", layout=tmp_path / "x.txt")
    with pytest.raises(portkern.InputOutputError, match="missing.txt"):
        portkern.gen.grid("el82-70", scale=0.01, layout=tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("0 0 0\n1 two 3\n")
    with pytest.raises(portkern.FormatError, match="bad.txt"):
        portkern.gen.grid("el82-70", scale=0.01, layout=bad)
    with pytest.raises(ValueError, match="kernel_layout"):
        portkern.gen.grid("small", kernel_layout="tiled")
    with pytest.raises(ValueError, match="seed"):
        portkern.gen.grid("small", seed=-1)
    with pytest.raises(TypeError, match="seed"):
        portkern.gen.grid("small", seed=1.5)
    with pytest.raises(TypeError, match="dataset"):
        portkern.gen.grid(None)
    assert issubclass(portkern.InvalidArgumentError, portkern.Error)


def test_grid_threads_release_the_gil():
    """Two threads generate at once (the FFTW planner is serialised inside the library):
    both get the single-threaded result."""
    ref = _grid_or_skip("small", scale=0.05, seed=9)
    out, errs = [None, None], []

    def work(i):
        try:
            out[i] = portkern.gen.grid("small", scale=0.05, seed=9)
        except Exception as e:  # noqa: BLE001 (reported below)
            errs.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    for d in out:
        for k in GRID_KEYS:
            assert np.array_equal(d[k], ref[k]), k


# ---- conv2d ---------------------------------------------------------------------------------
def test_conv2d_reproducible_and_shaped():
    im, psf = portkern.gen.conv2d(40, 60, 5, 7, seed=3)
    im2, psf2 = portkern.gen.conv2d(40, 60, 5, 7, seed=3)
    im3, _ = portkern.gen.conv2d(40, 60, 5, 7, seed=4)
    assert im.shape == (40, 60) and psf.shape == (5, 7)
    assert im.dtype == psf.dtype == np.float32
    assert np.array_equal(im, im2) and np.array_equal(psf, psf2)
    assert not np.array_equal(im, im3)
    assert abs(psf.astype(np.float64).sum() - 1) < 1e-6 and im.min() > 0


@needs_tool
@pytest.mark.parametrize("h,w,kh,kw,seed", [(50, 70, 5, 7, 11), (203, 1317, 11, 11, 1)])
def test_conv2d_equals_the_tool(tmp_path, h, w, kh, kw, seed):
    im, psf = portkern.gen.conv2d(h, w, kh, kw, seed=seed)
    gen_dir, out_dir = tmp_path / "in", tmp_path / "out"
    _run_tool("gen", "conv2d", "--h", str(h), "--w", str(w), "--kh", str(kh), "--kw", str(kw),
              "--seed", str(seed), "--out", str(gen_dir))
    assert np.load(gen_dir / "image.npy").tobytes() == im.tobytes()
    assert np.load(gen_dir / "psf.npy").tobytes() == psf.tobytes()
    _run_tool("run", "conv2d", "--in", str(gen_dir), "--backend", "serial", "--method",
              "direct", "--out", str(out_dir))
    with portkern.Context("serial", ignore_env=True) as ctx:
        out, _ = ctx.conv2d(im, psf, method="direct")
    assert np.array_equal(out, np.load(out_dir / "out.npy"))


def test_conv2d_defaults_are_the_straylight_frame():
    im, psf = portkern.gen.conv2d()
    assert im.shape == (813, 5271) and psf.shape == (11, 11)
    assert np.array_equal(portkern.gen.conv2d(seed=1)[0], im)


def test_conv2d_bad_arguments():
    with pytest.raises(portkern.SizeError, match="h, w"):
        portkern.gen.conv2d(0, 10)
    with pytest.raises(portkern.SizeError, match="kh, kw"):
        portkern.gen.conv2d(10, 10, -1, 3)
    with pytest.raises(ValueError, match="seed"):
        portkern.gen.conv2d(10, 10, 3, 3, seed=2 ** 32)
    with pytest.raises(TypeError, match="h must be an int"):
        portkern.gen.conv2d(10.0, 10)
