"""Data generators of the C library (reproducible: the same seed gives the same data on
every machine).

The grid (SKA1-LOW tracks, w-kernel stacks) and conv2d (StrayLight frame, PSF) generators
of `portkern gen` live in lib/gen/ and are compiled into the tool only: libportkern does not
export them, so they are not here (python/README.md, "Missing").
"""
import numpy as _np

from . import _core


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
