"""Bad arrays and parameters: a TypeError / ValueError naming the argument before anything
runs, or the library's error as a portkern.Error subclass with its status name and detail;
never a crash and never a result."""
import numpy as np
import pytest

import portkern
from conftest import context_for

C128, C64, F32, F64 = np.complex128, np.complex64, np.float32, np.float64


@pytest.fixture(scope="module")
def sctx():
    return context_for("serial")


def grid_args(n=10):
    support = np.array([1, 1], np.int32)
    return dict(uu=np.zeros(n, F32), vv=np.zeros(n, F32), ww=np.zeros(n, F32),
                vis=np.ones(n, C64), weight=np.ones(n, F32),
                kernels=np.ones((2, 7, 7), C64), support=support,
                oversample=4, cell_size=1e-3, w_scale=0.0, grid_size=16)


# (kernel call, the good arguments, the array argument under test, its dtype)
CASES = {
    "diffusion3d.f": (lambda c, a: c.diffusion3d(a["f"], 2), dict(f=np.ones((4, 5, 6), F32)), "f"),
    "conv2d.image": (lambda c, a: c.conv2d(a["image"], a["psf"]),
                     dict(image=np.ones((8, 9), F32), psf=np.ones((3, 3), F32)), "image"),
    "conv2d.psf": (lambda c, a: c.conv2d(a["image"], a["psf"]),
                   dict(image=np.ones((8, 9), F32), psf=np.ones((3, 3), F32)), "psf"),
    "magicfilter3d.x": (lambda c, a: c.magicfilter3d(a["x"]), dict(x=np.ones((4, 5, 6), F64)), "x"),
    "laplace2d.phi": (lambda c, a: c.laplace2d(a["phi"], 0.1, 2), dict(phi=np.ones((8, 8), F32)), "phi"),
    "su3.u": (lambda c, a: c.su3(a["u"], a["psi"]),
              dict(u=np.ones((5, 3, 3), C128), psi=np.ones((5, 3, 4), C128)), "u"),
    "su3.psi": (lambda c, a: c.su3(a["u"], a["psi"]),
                dict(u=np.ones((5, 3, 3), C128), psi=np.ones((5, 3, 4), C128)), "psi"),
    "dslash.u": (lambda c, a: c.dslash(a["u"], a["psi"], 0.1),
                 dict(u=np.ones((4, 2, 2, 2, 2, 3, 3), C128), psi=np.ones((2, 2, 2, 2, 4, 3), C128)), "u"),
    "dslash.psi": (lambda c, a: c.dslash(a["u"], a["psi"], 0.1),
                   dict(u=np.ones((4, 2, 2, 2, 2, 3, 3), C128), psi=np.ones((2, 2, 2, 2, 4, 3), C128)), "psi"),
    "grid.vis": (lambda c, a: c.grid(**a), grid_args(), "vis"),
    "grid.ww": (lambda c, a: c.grid(**a), grid_args(), "ww"),
    "grid.support": (lambda c, a: c.grid(**a), grid_args(), "support"),
    "grid.kernels": (lambda c, a: c.grid(**a), grid_args(), "kernels"),
}


def with_arg(args, name, value):
    a = dict(args)
    a[name] = value
    return a


def other_dtype(a):
    return {F32: F64, F64: F32, C128: C64, C64: C128, np.int32: np.int64}[a.dtype.type]


@pytest.mark.parametrize("case", sorted(CASES))
def test_good_arguments_run(sctx, case):
    call, args, _ = CASES[case]
    call(sctx, args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_dtype(sctx, case):
    call, args, name = CASES[case]
    bad = args[name].astype(other_dtype(args[name]))
    with pytest.raises(TypeError, match=rf"\b{name}\b.*dtype"):
        call(sctx, with_arg(args, name, bad))


@pytest.mark.parametrize("case", sorted(CASES))
def test_byteswapped(sctx, case):
    call, args, name = CASES[case]
    bad = args[name].astype(args[name].dtype.newbyteorder(">"))
    with pytest.raises(TypeError, match=rf"\b{name}\b.*native byte order"):
        call(sctx, with_arg(args, name, bad))


@pytest.mark.parametrize("case", sorted(CASES))
def test_none_and_list(sctx, case):
    call, args, name = CASES[case]
    with pytest.raises(TypeError, match=rf"\b{name}\b.*got None"):
        call(sctx, with_arg(args, name, None))
    with pytest.raises(TypeError, match=rf"\b{name}\b.*got list"):
        call(sctx, with_arg(args, name, args[name].tolist()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_ndim(sctx, case):
    call, args, name = CASES[case]
    bad = args[name][..., None]
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call(sctx, with_arg(args, name, bad))


@pytest.mark.parametrize("case", sorted(CASES))
def test_non_contiguous(sctx, case):
    call, args, name = CASES[case]
    a = args[name]
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    bad = big[..., ::2]
    bad[...] = a
    assert bad.shape == a.shape and not bad.flags.c_contiguous
    with pytest.raises(ValueError, match=rf"\b{name}\b.*C-contiguous"):
        call(sctx, with_arg(args, name, bad))


@pytest.mark.parametrize("case", sorted(CASES))
def test_unaligned(sctx, case):
    call, args, name = CASES[case]
    a = args[name]
    raw = np.zeros(a.nbytes + 1, np.uint8)
    bad = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    assert not bad.flags.aligned
    with pytest.raises(ValueError, match=rf"\b{name}\b.*aligned"):
        call(sctx, with_arg(args, name, bad))


@pytest.mark.parametrize("call,msg", [
    (lambda c: c.su3(np.ones((5, 3, 3), C128), np.ones((4, 3, 4), C128)), r"psi.*\(5, 3, 4\)"),
    (lambda c: c.su3(np.ones((5, 3, 4), C128), np.ones((5, 3, 4), C128)), r"\bu\b.*\(\*, 3, 3\)"),
    (lambda c: c.dslash(np.ones((4, 2, 2, 2, 3, 3, 3), C128), np.ones((2, 2, 2, 2, 4, 3), C128), 0.1),
     r"\bu\b.*\(4, 2, 2, 2, 2, 3, 3\)"),
    (lambda c: c.laplace2d(np.ones((8, 9), F32), 0.1, 1), r"phi.*square"),
    (lambda c: c.grid(**with_arg(grid_args(), "weight", np.ones(9, F32))), r"weight.*\(10,\)"),
    (lambda c: c.grid(**with_arg(grid_args(), "kernels", np.ones((2, 6, 6), C64))), r"wider than the kernel"),
    (lambda c: c.grid(**with_arg(grid_args(), "kernels", np.ones(10, C64))), r"kernels.*COMPACT"),
    (lambda c: c.magicfilter3d(np.ones((15, 20, 20)), bc="shrink"), r"shrink.*>= 16"),
    (lambda c: c.magicfilter3d(np.ones((4, 4, 4)), bc="mirror"), r"bc must be one of"),
    (lambda c: c.conv2d(np.ones((4, 4), F32), np.ones((3, 3), F32), method="fast"), r"method"),
    (lambda c: c.su3(np.ones((5, 3, 3), C128), np.ones((5, 3, 4), C128), layout="soa"), r"layout"),
])
def test_shape_and_options(sctx, call, msg):
    with pytest.raises(ValueError, match=msg):
        call(sctx)


def test_output_checks(sctx):
    f = np.ones((4, 5, 6), F32)
    ro = np.ones((4, 5, 6), F32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"\bout\b.*read-only"):
        sctx.diffusion3d(f, 1, out=ro)
    with pytest.raises(ValueError, match=r"\bout\b.*shape"):
        sctx.diffusion3d(f, 1, out=np.ones((4, 5, 7), F32))
    with pytest.raises(TypeError, match=r"\bout\b.*dtype"):
        sctx.conv2d(np.ones((8, 8), F32), np.ones((3, 3), F32), out=np.ones((8, 8), F64))
    big = np.ones((5, 5, 6), F32)
    with pytest.raises(ValueError, match=r"overlaps"):
        sctx.diffusion3d(big[:4], 1, out=big[1:])
    g = np.zeros((16, 16), C64)
    g.flags.writeable = False
    with pytest.raises(ValueError, match=r"\bgrid\b.*read-only"):
        sctx.grid(**with_arg(grid_args(), "grid", g))


def test_library_errors_carry_status_and_detail(sctx):
    with pytest.raises(portkern.SizeError) as e:
        sctx.diffusion3d(np.ones((0, 4, 4), F32), 1)
    assert e.value.name == "PK_ESIZE" and e.value.status == -3
    assert "nz" in e.value.detail and e.value.where == "diffusion3d"
    assert isinstance(e.value, ValueError) and isinstance(e.value, portkern.Error)

    with pytest.raises(portkern.Error) as e:
        sctx.diffusion3d(np.ones((2, 4, 4), F32), -1)
    assert e.value.name in ("PK_EINVAL", "PK_ESIZE") and "count" in e.value.detail

    with pytest.raises(portkern.NonFiniteError) as e:
        sctx.diffusion3d(np.ones((2, 4, 4), F32), 1, cc=float("nan"))
    assert e.value.name == "PK_ENONFINITE"

    with pytest.raises(portkern.NoVariantError) as e:
        sctx.diffusion3d(np.ones((2, 4, 4), F32), 1, variant="no-such-variant")
    assert e.value.name == "PK_ENOVARIANT" and e.value.detail

    with pytest.raises(portkern.Error) as e:   # hvfo needs l % nw == 0
        sctx.laplace2d(np.ones((20, 20), F32), 0.1, 1, layout="hvfo")
    assert e.value.name == "PK_ESIZE" and e.value.detail

    with pytest.raises(portkern.Error) as e:   # a non-finite kernel sample is refused
        a = grid_args()
        a["kernels"] = a["kernels"].copy()
        a["kernels"][0, 0, 0] = np.nan
        sctx.grid(**a)
    assert e.value.name == "PK_ENONFINITE"


def test_magicfilter3d_out_is_x(ctx):
    """The one-shot call takes y = x (it goes through the plan's buffers): right, not refused."""
    import oracles as O
    x = np.random.default_rng(1).uniform(-1.5, 1.5, (4, 5, 6))
    ref = O.magicfilter3d(x)
    y, _ = ctx.magicfilter3d(x, out=x)
    assert y is x and np.max(np.abs(x - ref)) <= O.MF_ATOL


def test_grid_needs_its_keywords(sctx):
    a = grid_args()
    del a["oversample"]
    with pytest.raises(TypeError, match="oversample"):
        sctx.grid(**a)


def test_no_backend():
    ctx = portkern.Context("cuda", ignore_env=True)
    try:
        if ctx.available("cuda"):
            pytest.skip("this machine has a usable CUDA backend")
        with pytest.raises(portkern.NoBackendError) as e:
            ctx.diffusion3d(np.ones((2, 2, 2), F32), 1)
        assert e.value.name == "PK_ENOBACKEND" and e.value.detail
    finally:
        ctx.close()


def test_bad_context_arguments():
    with pytest.raises(ValueError, match="backend"):
        portkern.Context("gpu")
    with pytest.raises(ValueError, match="threads"):
        portkern.Context("openmp", threads=0)
    with pytest.raises(ValueError, match="device"):
        portkern.Context("serial", device=-2)
    with pytest.raises(TypeError):
        portkern.Context(backend=3)
