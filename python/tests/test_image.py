"""Context.image, Context.degrid and portkern.write_fits (docs/KERNELS.md 7): the dirty image
of the `small` data set puts the generator's sources at their pixels, the backends agree with
serial, degrid's variants with serial's, and the FITS header carries the WCS convention
(CRPIX n/2 + 1, CDELT -cell/+cell).  Bad arguments raise and write nothing."""
import math
import os

import numpy as np
import pytest

import portkern
from conftest import context_for

pytestmark = pytest.mark.skipif(not hasattr(portkern._core, "write_fits"),
                                reason="the library predates pk_image / pk_fits_write_image")

N = 512
# the generator's sources: (l, m) as fractions of l_max, flux (lib/gen/grid_gen.c)
SOURCES = ((0.10, 0.05, 1.0), (-0.45, 0.30, 0.5), (0.55, -0.50, 0.7))


@pytest.fixture(scope="module")
def small():
    return portkern.gen.grid("small")


def grid_args(s):
    return {k: s[k] for k in ("kernels", "support", "oversample", "cell_size", "w_scale",
                              "grid_size")}


def test_image_sources_at_their_pixels(small):
    ctx = context_for("serial")
    img, norm, skipped, info = ctx.image(**small, image_size=N)
    assert img.dtype == np.float32 and img.shape == (N, N)
    assert norm > 0 and skipped == 0
    assert set(info.stages) == {"zero", "grid", "fft rows", "fft cols+crop"}
    cell = small["cell_size"]
    lmax = math.sin(cell) * small.info["image_size"] / 2
    for fl, fm, flux in SOURCES:
        x, y = round(N / 2 - fl * lmax / cell), round(N / 2 + fm * lmax / cell)
        win = img[y - 3:y + 4, x - 3:x + 4]
        assert np.unravel_index(np.argmax(win), win.shape) == (3, 3)
        assert abs(img[y, x] - flux) < 0.02


@pytest.mark.parametrize("backend", ["openmp", "opencl"])
def test_image_backends_agree_with_serial(small, backend):
    ref = context_for("serial").image(**small, image_size=N)[0]
    img = context_for(backend).image(**small, image_size=N)[0]
    assert np.linalg.norm(img - ref) <= 1e-4 * np.linalg.norm(ref)


def test_image_out_and_bad_sizes(small):
    ctx = context_for("serial")
    out = np.empty((N, N), np.float32)
    img = ctx.image(**small, image_size=N, out=out)[0]
    assert img is out
    with pytest.raises(ValueError):
        ctx.image(**small, image_size=2 * small["grid_size"])
    with pytest.raises(ValueError):
        ctx.image(**small, image_size=N + 1)
    with pytest.raises(TypeError):
        ctx.image(**small)  # image_size is required


@pytest.mark.parametrize("backend", ["openmp", "opencl"])
def test_degrid_variants_agree_with_serial(small, backend):
    rng = np.random.default_rng(1)
    model = rng.uniform(-1, 1, (N, N)).astype(np.float32)
    uvw = [small[k] for k in ("uu", "vv", "ww")]
    ref, skipped, info = context_for("serial").degrid(*uvw, model=model, **grid_args(small))
    assert ref.dtype == np.complex64 and ref.shape == small["uu"].shape and skipped == 0
    vis = context_for(backend).degrid(*uvw, model=model, **grid_args(small))[0]
    assert np.linalg.norm(vis - ref) <= 1e-5 * np.linalg.norm(ref)


def test_degrid_bad_models(small):
    ctx = context_for("serial")
    uvw = [small[k] for k in ("uu", "vv", "ww")]
    with pytest.raises(TypeError):
        ctx.degrid(*uvw, model=np.zeros((N, N)), **grid_args(small))  # float64
    with pytest.raises(ValueError):
        ctx.degrid(*uvw, model=np.zeros((N, N // 2), np.float32), **grid_args(small))
    with pytest.raises(portkern.Error):
        ctx.degrid(*uvw, model=np.zeros((2048, 2048), np.float32), **grid_args(small))


def header(path):
    raw = open(path, "rb").read()
    cards = {}
    for i in range(0, len(raw), 80):
        c = raw[i:i + 80].decode("ascii")
        if c.startswith("END "):
            break
        if c[8:10] == "= ":
            v = c[10:].strip()
            cards[c[:8].strip()] = (v.split("'")[1].strip() if v.startswith("'")
                                    else v.split("/")[0].strip())
    return cards


def test_write_fits_wcs(tmp_path):
    img = np.arange(64 * 48, dtype=np.float32).reshape(48, 64)
    p = tmp_path / "a.fits"
    portkern.write_fits(p, img, 10.5, -26.82472208, 1e-4, 1.5e8, object="small")
    h = header(p)
    assert h["CTYPE1"] == "RA---SIN" and h["CTYPE2"] == "DEC--SIN" and h["CTYPE3"] == "FREQ"
    assert int(h["NAXIS1"]) == 64 and int(h["NAXIS2"]) == 48
    assert float(h["CRPIX1"]) == 33 and float(h["CRPIX2"]) == 25
    assert math.isclose(float(h["CDELT1"]), -math.degrees(1e-4), rel_tol=1e-12)
    assert math.isclose(float(h["CDELT2"]), math.degrees(1e-4), rel_tol=1e-12)
    assert float(h["CRVAL1"]) == 10.5 and float(h["CRVAL3"]) == 1.5e8
    assert h["BUNIT"] == "JY/BEAM" and h["OBJECT"] == "small"
    assert os.path.getsize(p) % 2880 == 0


def test_write_fits_bad(tmp_path):
    img = np.zeros((8, 8), np.float32)
    with pytest.raises(portkern.Error):
        portkern.write_fits(tmp_path / "x.fits", img, 0, 95, 1e-4, 1e8)  # dec beyond 90
    (tmp_path / "d.fits").mkdir()
    with pytest.raises(portkern.Error):
        portkern.write_fits(tmp_path / "d.fits", img, 0, 0, 1e-4, 1e8)  # a directory
    with pytest.raises(TypeError):
        portkern.write_fits(tmp_path / "y.fits", img.astype(np.float64), 0, 0, 1e-4, 1e8)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.fits"]
