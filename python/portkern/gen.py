"""Data generators of the C library (reproducible: the same seed gives the same data on
every machine), the same as `portkern gen KERNEL` writes: grid (SKA1-LOW tracks and random
uvw with their w-kernel stacks, pk_grid_generate) and conv2d (StrayLight frame and PSF,
pk_conv2d_generate), diffusion3d's field and the lattice-QCD data.
"""
import os as _os

import numpy as _np

from . import _core
from . import _errors

_U64 = 2 ** 64


def _needs(fn, where):
    """The extension's generator, or UnsupportedError when the library it was built against
    predates it."""
    f = getattr(_core, fn, None)
    if f is None:
        raise _errors.make(-17, "PK_EUNSUPPORTED", "operation not supported",
                           f"the libportkern this package was built against has no {fn}", where)
    return f


def _seed(seed, top, where):
    if isinstance(seed, bool) or not isinstance(seed, (int, _np.integer)):
        raise TypeError(f"{where}: seed must be an int, got {type(seed).__name__}")
    if not 0 <= int(seed) < top:
        raise ValueError(f"{where}: seed must be in [0, {top - 1}], got {seed}")
    return int(seed)


class GridData(dict):
    """A grid data set (portkern.gen.grid): a dict of exactly ctx.grid's keyword arguments,
    uu, vv, ww (float32 [n], wavelengths), vis (complex64 [n]), weight (float32 [n], uniform
    weighting), kernels (complex64: 1-D compact, or [planes, half, half] full), support
    (int32 [planes]), oversample, cell_size, w_scale and grid_size, so that
    ctx.grid(**data) grids it; .info is what `portkern gen grid` writes into params.json
    after those: dataset, scale, seed, num_vis, num_w_planes, max_support, image_size,
    fft_size, max_w, max_abs_w_data, num_beyond_max_w, unit_vis, recipe, kernel_layout and,
    for the SKA sets, num_stations, num_times, layout and frequency_hz."""

    def __init__(self, kwargs, info):
        super().__init__(kwargs)
        self.info = info

    def __repr__(self):
        i = self.info
        return (f"<GridData {i['dataset']} scale={i['scale']} seed={i['seed']}: "
                f"{i['num_vis']} visibilities, {i['num_w_planes']} planes, "
                f"{i['kernel_layout']} kernels, grid {self['grid_size']}>")


def grid(dataset="synthetic", scale=1.0, seed=1, *, layout=None, unit_vis=False,
         kernel_layout="compact"):
    """The data set `portkern gen grid --dataset DATASET --scale SCALE --seed SEED` writes,
    in memory (the same bytes): "el82-70", "el56-82", "el30-56" (SKA1-LOW tracks; layout: a
    station file, one "E N [U]" line in metres per station, None: the built-in 512 stations),
    "synthetic" or "small" (random uvw).  scale in (0, 1]: SKA sets keep round(scale * 240)
    time dumps, random sets the first round(scale * n) draws; unit_vis: every visibility
    1 + 0i; kernel_layout "compact" or "full".  Returns a GridData (ctx.grid(**data)).
    Library errors (an unknown data set, a bad scale or layout file, a build without FFTW
    in double precision: UnsupportedError) raise portkern.Error subclasses.  The SKA sets'
    kernels take seconds; the GIL is released meanwhile."""
    where = "gen.grid"
    if not isinstance(dataset, str):
        raise TypeError(f"{where}: dataset must be a str, got {type(dataset).__name__}")
    if kernel_layout not in ("compact", "full"):
        raise ValueError(f"{where}: kernel_layout must be 'compact' or 'full', "
                         f"got {kernel_layout!r}")
    seed = _seed(seed, _U64, where)
    path = None if layout is None else _os.fspath(layout)
    kwargs, info = _needs("grid_generate", where)(dataset, float(scale), seed, path,
                                                   bool(unit_vis), kernel_layout == "full")
    info.update(scale=float(scale), seed=seed, unit_vis=bool(unit_vis))
    if info["num_stations"]:
        info["layout"] = path if path is not None else "procedural (built-in)"
    else:
        for k in ("num_stations", "num_times", "frequency_hz"):
            del info[k]
    return GridData(kwargs, info)


def conv2d(h=813, w=5271, kh=11, kw=11, seed=1):
    """(image, psf) as `portkern gen conv2d --h H --w W --kh KH --kw KW --seed SEED` writes
    them: image float32 [h, w], a PROBA-V-like StrayLight frame (smooth background, sharp
    edges, texture, point sources; about 0.3 .. 6), psf float32 [kh, kw], a bright
    off-centre core with faint wide wings and a ghost, summing to 1.  The defaults are the
    StrayLight frame and PSF.  Sizes below 1 raise SizeError."""
    where = "gen.conv2d"
    dims = []
    for name, v in (("h", h), ("w", w), ("kh", kh), ("kw", kw)):
        if isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
            raise TypeError(f"{where}: {name} must be an int, got {type(v).__name__}")
        dims.append(int(v))
    return _needs("conv2d_generate", where)(*dims, _seed(seed, 2 ** 32, where))


def _shape(shape):
    return (int(shape),) if _np.isscalar(shape) else tuple(int(s) for s in shape)


def diffusion3d_field(shape, t=0.0):
    """The cosine field of docs/KERNELS.md section 3 on shape (nz, ny, nx), float32: at
    t = 0 the initial field, at t = count * dt the continuous solution."""
    return _core.diffusion3d_field(tuple(shape), t=float(t))


def diffusion3d_params(shape, count=0):
    """The default coefficients {cc, cw, ce, cs, cn, cb, ct} and dt for shape (nz, ny, nx)."""
    return _core.diffusion3d_params(tuple(shape), int(count))


def su3(shape, seed=1):
    """Random SU(3) matrices (unitary, det 1): complex128 of shape + (3, 3)."""
    u = _np.empty(_shape(shape) + (3, 3), _np.complex128)
    _core.lqcd_random("su3", int(seed), u)
    return u


def complex_gaussian(shape, seed=1):
    """Complex numbers with Gaussian real and imaginary parts (sigma 1), complex128."""
    z = _np.empty(_shape(shape), _np.complex128)
    _core.lqcd_random("complex", int(seed), z)
    return z


def su3_data(nv, seed=1):
    """(u, psi) as `portkern gen su3 --nv NV --seed S` writes them: u [nv, 3, 3] SU(3) from
    seed, psi [nv, 3, 4] Gaussian from seed + 1."""
    return su3(nv, seed), complex_gaussian((nv, 3, 4), seed + 1)


def dslash_data(shape, seed=1):
    """(u, psi) as `portkern gen dslash --seed S` writes them for a lattice shape
    (t, z, y, x): u [4, t, z, y, x, 3, 3] SU(3) links from seed, psi [t, z, y, x, 4, 3]
    Gaussian from seed + 1."""
    lat = _shape(shape)
    if len(lat) != 4:
        raise ValueError(f"dslash_data: shape must be (t, z, y, x), got {shape!r}")
    return su3((4,) + lat, seed), complex_gaussian(lat + (4, 3), seed + 1)
