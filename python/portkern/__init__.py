"""portkern: NumPy interface to libportkern (bandwidth-bound HPC kernels on serial, OpenMP,
OpenCL and CUDA backends).

    import numpy as np, portkern
    with portkern.Context() as ctx:                     # auto backend
        f = portkern.gen.diffusion3d_field((64, 64, 64))
        f2, info = ctx.diffusion3d(f, count=10)         # a new array; out=f works in place
        print(info.backend, info.variant, info.kernel_s)

Arrays are checked, never converted silently: each must be a numpy.ndarray of the kernel's
dtype (native byte order), C-contiguous, aligned and of the documented shape, else a
TypeError (not an array, wrong dtype) or ValueError (shape, layout, read-only output) names
the argument.  Inputs and outputs are used in place (zero copy); the copies made are listed in
python/README.md.  Library failures raise portkern.Error subclasses (portkern._errors).
"""
from collections import namedtuple

import numpy as _np

from . import _errors
from ._errors import *  # noqa: F401,F403  (Error and its subclasses)
from ._errors import Error
from . import _core
from .gen import _needs
from ._core import (RunInfo, Plan, Diffusion3DPlan, Conv2DPlan, MagicFilter3DPlan,  # noqa: F401
                    Laplace2DPlan, SU3Plan, DslashPlan, GridPlan)

__all__ = ["Context", "RunInfo", "Plan", "Diffusion3DPlan", "Conv2DPlan", "MagicFilter3DPlan",
           "Laplace2DPlan", "SU3Plan", "DslashPlan", "GridPlan", "Backend", "Device",
           "DiffReport", "probe", "diff", "variants", "empty", "zeros", "magicfilter_taps",
           "magicfilter3d_shapes", "compact_kernels", "write_fits", "params", "Param", "version", "__version__",
           "gen", "Error", "BACKENDS", "KERNELS"] + [c.__name__ for c in _errors.BY_NAME.values()]

__version__ = "0.1.0"
#: Version of the libportkern actually loaded (pk_version()).
version = _core.version()
#: Version of the header the extension was compiled against.
header_version = _core.HEADER_VERSION

BACKENDS = ("serial", "openmp", "opencl", "cuda")
KERNELS = ("diffusion3d", "conv2d", "magicfilter3d", "laplace2d", "su3", "dslash", "grid")

Backend = namedtuple("Backend", "name available reason")
Backend.__doc__ = "A backend in a context: name, available (bool), reason (why not; '' if it is)."
Device = namedtuple("Device", "backend index type name vendor driver platform simd compute_units "
                    "threads_per_core global_mem_bytes fp64 compute_capability local_mem_bytes")
Device.__doc__ = "A device (pk_device_info)."
Param = namedtuple("Param", "name env env_alias values default doc")
Param.__doc__ = ("A tuning parameter (pk_param_desc): name (\"conv2d.fft_taps\"), env (its "
                 "variable, \"PORTKERN_CONV2D_FFT_TAPS\"), env_alias (an older variable read too, "
                 "or None), values (what it accepts, in words), default (as text), doc.")


class Context(_core.Context):
    """Context(backend="auto", device=None, threads=None, *, ignore_env=False, params=None)

    A libportkern context (pk_context_create).  backend: "auto" (the fastest usable, or
    PORTKERN_BACKEND), "serial", "openmp", "opencl" or "cuda"; device: an index within the
    backend (None: its default); threads: OpenMP threads (None: OpenMP's default);
    ignore_env: do not read PORTKERN_BACKEND / PORTKERN_DEVICE / PORTKERN_THREADS (nor the
    tuning parameters' variables); params: {name: value} of tuning parameters to set
    (set_param's values; an unknown name or a value it does not accept raises
    InvalidArgumentError and no context is made).

    Tuning parameters (portkern.params()): set_param(name, value) sets one (a str or an
    int; None goes back to the environment's value or the default) and releases the plans
    the one-shot calls keep; get_param(name) -> (value as text, source), source "default",
    "env" or "caller".

    A forced backend that cannot run makes every kernel call raise NoBackendError with the
    reason (backends() lists them).  Use it in a with block or call close(), which also
    closes the plans made from it.  One Context may be shared by Python threads (calls are
    serialised by its lock); give each thread its own Context to run in parallel: every
    kernel call releases the GIL.

    Kernel methods (each returns its output(s) and a RunInfo; variant= names a variant of
    variants(kernel, backend), out= an output array to write):
      diffusion3d(f, count, *, cc, cw, ce, cs, cn, cb, ct, out, variant) -> (f', info)
      conv2d(image, psf, *, method="auto"|"direct"|"fft", out, variant) -> (out, info)
      magicfilter3d(x, *, transpose=False, bc="periodic"|"grow"|"shrink", out, variant)
      laplace2d(phi, sigma, count, *, layout="auto"|"lexi"|"hvfo", nw=0, out, variant)
      su3(u, psi, *, layout="aos", nw=0, out, variant) -> (chi, info)
      dslash(u, psi, kappa, *, recon12=False, out, variant) -> (chi, info)
      grid(uu, vv, ww, vis, weight, kernels, support, *, oversample, cell_size, w_scale,
           grid_size, tile_size=0, central_radius=0, tile_factor=None, grid=None, variant)
           -> (grid, norm, num_skipped, info)
      image(uu, vv, ww, vis, weight, kernels, support, *, oversample, cell_size, w_scale,
            grid_size, image_size, ..., out, variant) -> (image, norm, num_skipped, info)
      degrid(uu, vv, ww, kernels, support, model, *, oversample, cell_size, w_scale,
             grid_size, weight=None, ..., out, variant) -> (vis, num_skipped, info)
    and a <kernel>_plan(...) factory each (python/README.md).
    """

    __slots__ = ()

    def backends(self):
        """[Backend(name, available, reason)] for serial, openmp, opencl, cuda (probing
        each: the first look at OpenCL or CUDA may take a moment)."""
        return [Backend(*t) for t in self._backends()]

    def available(self, backend):
        """True when `backend` can run in this context."""
        for b in self.backends():
            if b.name == backend:
                return b.available
        raise ValueError(f"available: unknown backend {backend!r} (one of {BACKENDS})")

    def devices(self, backend=None):
        """[Device] of one backend (a name), or of every available backend (None)."""
        return [Device(**d) for d in self._devices(backend)]

    def variants(self, kernel, backend=None):
        """Variant names of `kernel` on `backend` (default: this context's backend; for an
        "auto" context, those of every available backend, backend by backend)."""
        if backend is None and self.backend != "auto":
            backend = self.backend
        if backend is not None:
            return variants(kernel, backend)
        out = []
        for b in self.backends():
            if b.available:
                out += variants(kernel, b.name)
        return out

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return (f"portkern.Context(backend={self.backend!r}, device={self.device!r}, "
                f"threads={self.threads!r}) [{state}]")


def variants(kernel, backend):
    """Variant names of `kernel` on `backend` built into the library (the first is the
    backend's default); [] when the backend has none (or was not built)."""
    return _core.variants(kernel, backend)


def params():
    """[Param(name, env, env_alias, values, default, doc)]: every tuning parameter of the
    library (pk_param_info), in its table's order; Context.set_param / get_param use the
    names."""
    return [Param(*t) for t in _needs("param_list", "params")()]


def probe(ignore_env=False):
    """What this machine can run: {"version", "backends": [{"name", "available", "reason",
    "devices": [Device]}]} (portkern-probe without the bandwidth measurement)."""
    with Context(ignore_env=ignore_env) as ctx:
        out = []
        for b in ctx.backends():
            devs = ctx.devices(b.name) if b.available else []
            out.append({"name": b.name, "available": b.available, "reason": b.reason,
                        "devices": devs})
        return {"version": version, "backends": out}


def empty(shape, dtype):
    """An uninitialised C-contiguous array whose data start on a 64-byte boundary: the
    serial and OpenMP plans of laplace2d and magicfilter3d work directly on such arrays
    (others go through the plan's buffers, which costs a copy inside the library).  The
    outputs portkern allocates are aligned so already."""
    dtype = _np.dtype(dtype)
    shape = (shape,) if _np.isscalar(shape) else tuple(shape)
    n = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    buf = _np.empty(n + 64, _np.uint8)
    off = (-buf.ctypes.data) % 64
    return buf[off:off + n].view(dtype).reshape(shape)


def zeros(shape, dtype):
    """empty(shape, dtype), zeroed."""
    a = empty(shape, dtype)
    a[...] = 0
    return a


def magicfilter_taps():
    """The 16 magic filter taps f_-8 .. f_7 (float64) the library uses."""
    return _core.magicfilter_taps()


def magicfilter3d_shapes(x_shape, transpose=False, bc="periodic"):
    """Shape of y for an x of x_shape (bc "shrink": x has n + 15 points per axis)."""
    return _core.magicfilter3d_shapes(tuple(x_shape), transpose=transpose, bc=bc)


def write_fits(path, image, ra_deg, dec_deg, cell_rad, freq_hz, *, bandwidth_hz=0.0,
               bunit="JY/BEAM", object=None, telescope=None):
    """Write a sky image (float32 [ny, nx], row y, column x, as Context.image returns it) as a
    FITS file with a celestial WCS (pk_fits_write_image, docs/KERNELS.md 7): RA---SIN /
    DEC--SIN about (ra_deg, dec_deg), CRPIX (nx/2 + 1, ny/2 + 1) (the pixel [n/2, n/2] of the
    phase centre, 1-based), CDELT1 = -cell, CDELT2 = +cell in degrees (RA grows to the left),
    a degenerate FREQ axis (freq_hz, bandwidth_hz; 0: 1 Hz), BUNIT.  Written whole (a
    temporary renamed into place).  Errors: InvalidArgumentError (a bad value), IOError-like
    portkern.Error for a path that cannot be written, UnsupportedError without cfitsio."""
    return _needs("write_fits", "write_fits")(path, image, float(ra_deg), float(dec_deg),
                                              float(cell_rad), float(freq_hz),
                                              float(bandwidth_hz), bunit, object, telescope)


def compact_kernels(kernels, support, oversample):
    """A FULL kernel stack (complex64 [planes, half, half]) as the COMPACT one (1-D
    complex64: per plane the m x m corner the gridder can read, m = oversample/2 +
    support*oversample + 1); grid() and grid_plan() take either."""
    return _core.compact_kernels(kernels, support, oversample=oversample)


DiffReport = namedtuple("DiffReport", "equal count num_failed first_fail max_rel_err "
                        "max_abs_err norm_rel_err")
DiffReport.__doc__ = ("Result of portkern.diff: equal (bool), count (numbers compared), "
                      "num_failed, first_fail (index tuple of the first failure, or None), "
                      "max_rel_err, max_abs_err, norm_rel_err.  bool(report) is report.equal.")
DiffReport.__bool__ = lambda self: bool(self.equal)

_REAL_OF = {_np.dtype(_np.complex64): _np.float32, _np.dtype(_np.complex128): _np.float64}


def diff(a, b, rtol=1e-5, zero=1e-10, norm=False):
    """Compare a against b as `portkern diff` does (docs/KERNELS.md section 6): element-wise
    (|a - b| / |a| <= rtol, or relative to |b| when |a| <= zero; both ~0 ignored) or, with
    norm=True, ||a - b||_2 / ||b||_2 <= rtol.  a and b: arrays of one dtype (float32,
    float64, complex64, complex128: complex values compare as their interleaved real and
    imaginary parts) and one shape.  Non-contiguous arrays are copied first (numpy
    ascontiguousarray); nothing is converted between dtypes.  Returns a DiffReport (truthy
    when equal)."""
    if not isinstance(a, _np.ndarray) or not isinstance(b, _np.ndarray):
        raise TypeError("diff: a and b must be numpy.ndarray, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    if a.dtype != b.dtype:
        raise TypeError(f"diff: a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"diff: a and b must have one shape, got {a.shape} and {b.shape}")
    dt = a.dtype.newbyteorder("=")
    if dt not in (_np.float32, _np.float64) and dt not in _REAL_OF:
        raise TypeError(f"diff: dtype must be float32, float64, complex64 or complex128, "
                        f"got {a.dtype}")
    x = _np.ascontiguousarray(a, dtype=dt)
    y = _np.ascontiguousarray(b, dtype=dt)
    pairs = dt in _REAL_OF
    if pairs:
        x, y = x.view(_REAL_OF[dt]), y.view(_REAL_OF[dt])
    r = _core.diff(x.reshape(-1), y.reshape(-1), float(rtol), float(zero), bool(norm))
    ff = r["first_fail"]
    if ff < 0:
        first = None
    else:
        first = tuple(int(i) for i in _np.unravel_index(ff // 2 if pairs else ff, a.shape))
    return DiffReport(r["equal"], r["count"], r["num_failed"], first, r["max_rel_err"],
                      r["max_abs_err"], r["norm_rel_err"])


from . import gen  # noqa: E402
