"""Each kernel, each backend and variant, against the NumPy formulas of oracles.py with the
tolerances of docs/KERNELS.md (the bound of one implementation against exact arithmetic)."""
import numpy as np
import pytest

import portkern
import oracles as O
from conftest import context_for


def ok_run_info(info, backend, variant):
    assert isinstance(info, portkern.RunInfo)
    assert info.backend == backend
    if variant is not None:
        assert info.variant == variant
    assert info.wall_s >= info.kernel_s >= 0
    assert isinstance(info.reason, str) and info.reason


def is_aligned(a):
    return a.ctypes.data % 64 == 0


# ---- diffusion3d -------------------------------------------------------------------------
# Distinct non-negative coefficients summing to 1 (swapped neighbours would show), and the
# library's defaults (all neighbours 0.1, cc 0.4).
SKEW = dict(cc=0.30, cw=0.05, ce=0.15, cs=0.08, cn=0.12, cb=0.13, ct=0.17)


@pytest.mark.kernel("diffusion3d")
@pytest.mark.parametrize("coefs", ["skew", "default"])
def test_diffusion3d(bv, coefs):
    backend, variant = bv
    ctx = context_for(backend)
    rng = np.random.default_rng(3)
    f = rng.uniform(0.5, 1.5, (6, 10, 17)).astype(np.float32)
    count = 7
    kw = SKEW if coefs == "skew" else {}
    c = SKEW if coefs == "skew" else portkern.gen.diffusion3d_params(f.shape, count)
    out, info = ctx.diffusion3d(f, count, variant=variant, **kw)
    ref = O.diffusion3d(f, count, c)
    err = np.max(np.abs(out - ref))
    assert err <= O.diffusion3d_atol(f, count), err
    assert out is not f and is_aligned(out)
    ok_run_info(info, backend, variant)
    pts = f.size
    assert info.bytes == 8 * pts * count and info.flops == 13 * pts * count


def test_diffusion3d_in_place_and_out(ctx):
    f = portkern.gen.diffusion3d_field((8, 9, 10))
    f0 = f.copy()
    ref, _ = ctx.diffusion3d(f0, 3)
    g, _ = ctx.diffusion3d(f, 3, out=f)     # in place
    assert g is f
    np.testing.assert_array_equal(f, ref)
    o = np.empty_like(f0)
    h, _ = ctx.diffusion3d(f0, 3, out=o)    # into a given array; f0 untouched
    assert h is o
    np.testing.assert_array_equal(o, ref)
    np.testing.assert_array_equal(f0, portkern.gen.diffusion3d_field((8, 9, 10)))


def test_diffusion3d_analytic(ctx):
    """The generator's field at t = count dt is the continuous solution (a sanity check of
    the generator and the default coefficients together, loose: discretisation error)."""
    n, count = 32, 20
    f0 = portkern.gen.diffusion3d_field((n, n, n), 0.0)
    dt = portkern.gen.diffusion3d_params((n, n, n))["dt"]
    exact = portkern.gen.diffusion3d_field((n, n, n), count * dt)
    f, _ = ctx.diffusion3d(f0, count)
    assert np.sqrt(np.mean((f - exact) ** 2)) < 1e-4


# ---- conv2d ------------------------------------------------------------------------------
def _is_fft(variant, method):
    return (variant or "").endswith("fft") or (variant is None and method == "fft")


@pytest.mark.kernel("conv2d")
@pytest.mark.parametrize("shape,pshape", [((37, 53), (5, 7)), ((40, 31), (11, 11)),
                                           ((9, 12), (13, 5))])  # the last: PSF wider than the image
def test_conv2d(bv, shape, pshape):
    backend, variant = bv
    ctx = context_for(backend)
    rng = np.random.default_rng(5)
    image = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    psf = rng.uniform(0.1, 1.0, pshape).astype(np.float32)
    psf /= psf.sum()
    out, info = ctx.conv2d(image, psf, variant=variant)
    ref = O.conv2d(image, psf)
    taps = psf.size
    # Section 5: positive data, direct: relative error <= gamma_{kh kw} (u = 2^-24);
    # FFT: the element-wise rule rtol 1e-5 on positive data of small dynamic range.
    rtol = 1e-5 if _is_fft(variant, None) else O.gamma(taps, O.U32)
    rel = np.max(np.abs(out - ref) / np.abs(ref))
    assert rel <= rtol, (rel, rtol)
    ok_run_info(info, backend, variant)
    assert out.shape == image.shape and out.dtype == np.float32 and is_aligned(out)


@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
def test_conv2d_method(ctx, method):
    rng = np.random.default_rng(6)
    image = rng.uniform(0.5, 1.5, (30, 41)).astype(np.float32)
    psf = rng.uniform(0.1, 1.0, (9, 9)).astype(np.float32)
    psf /= psf.sum()
    out, info = ctx.conv2d(image, psf, method=method)
    ref = O.conv2d(image, psf)
    rtol = 1e-5 if "fft" in info.variant else O.gamma(psf.size, O.U32)
    assert np.max(np.abs(out - ref) / ref) <= rtol


def test_conv2d_out_is_image(ctx):
    """out may be the image itself (the C API allows it)."""
    rng = np.random.default_rng(7)
    image = rng.uniform(0.5, 1.5, (16, 20)).astype(np.float32)
    psf = np.full((3, 3), 1 / 9, np.float32)
    ref = O.conv2d(image, psf)
    out, _ = ctx.conv2d(image, psf, method="direct", out=image)
    assert out is image
    assert np.max(np.abs(image - ref) / ref) <= O.gamma(9, O.U32)


# ---- magicfilter3d -----------------------------------------------------------------------
def test_taps_match_docs():
    np.testing.assert_array_equal(portkern.magicfilter_taps(), O.TAPS)


@pytest.mark.kernel("magicfilter3d")
@pytest.mark.parametrize("transpose", [False, True], ids=["mf", "mft"])
@pytest.mark.parametrize("bc", ["periodic", "grow", "shrink"])
def test_magicfilter3d(bv, transpose, bc):
    backend, variant = bv
    ctx = context_for(backend)
    rng = np.random.default_rng(11)
    n = (5, 19, 12)  # n3, n2, n1: one axis under 16 points (the periodic wrap goes around)
    xs = tuple(k + 15 for k in n) if bc == "shrink" else n
    x = rng.uniform(-1.5, 1.5, xs)
    y, info = ctx.magicfilter3d(x, transpose=transpose, bc=bc, variant=variant)
    ref = O.magicfilter3d(x, transpose, bc)
    assert y.shape == ref.shape == portkern.magicfilter3d_shapes(xs, transpose, bc)
    err = np.max(np.abs(y - ref))
    assert err <= O.MF_ATOL, err
    ok_run_info(info, backend, variant)


# ---- laplace2d ---------------------------------------------------------------------------
@pytest.mark.kernel("laplace2d")
@pytest.mark.parametrize("l,layout,nw", [(32, "hvfo", 0), (48, "hvfo", 8), (24, "lexi", 0),
                                         (20, "auto", 0)])
def test_laplace2d(bv, l, layout, nw):
    backend, variant = bv
    ctx = context_for(backend)
    rng = np.random.default_rng(13)
    phi = rng.uniform(-1, 1, (l, l)).astype(np.float32)
    sigma, count = 0.3, 9
    out, info = ctx.laplace2d(phi, sigma, count, layout=layout, nw=nw, variant=variant)
    ref = O.laplace2d(phi, sigma, count)
    err = np.max(np.abs(out - ref))
    assert err <= O.laplace2d_atol(phi, sigma, count), err
    ok_run_info(info, backend, variant)
    assert info.bytes == 8 * l * l * count and info.flops == 7 * l * l * count


def test_laplace2d_plane_wave(ctx):
    """Section 4a property: a plane wave is an eigenvector."""
    l, kx, ky, sigma = 32, 3, 5, 0.2
    y, x = np.mgrid[0:l, 0:l]
    phi = np.cos(2 * np.pi * (kx * x + ky * y) / l).astype(np.float32)
    out, _ = ctx.laplace2d(phi, sigma, 1)
    lam = (1 + 2 * sigma * (np.cos(2 * np.pi * kx / l) + np.cos(2 * np.pi * ky / l))) / (1 + 4 * sigma)
    assert np.max(np.abs(out - lam * phi.astype(np.float64))) < 1e-6


# ---- su3 ---------------------------------------------------------------------------------
@pytest.mark.kernel("su3")
@pytest.mark.parametrize("layout,nw", [("aos", 0), ("short", 0), ("padded", 0), ("vfo", 0),
                                       ("hvfo", 0), ("hvfo", 3), ("recon12", 0)])
def test_su3(bv, layout, nw):
    backend, variant = bv
    ctx = context_for(backend)
    nv = 37
    u, psi = portkern.gen.su3_data(nv, seed=4)
    chi, info = ctx.su3(u, psi, layout=layout, nw=nw, variant=variant)
    ref = O.su3(u, psi)
    bound = O.su3_bound(psi, layout)
    assert np.all(np.abs(chi.real - ref.real) <= bound)
    assert np.all(np.abs(chi.imag - ref.imag) <= bound)
    ok_run_info(info, backend, variant)
    assert info.flops == 264 * nv and info.bytes == 528 * nv


def test_su3_generator_is_su3():
    u = portkern.gen.su3(50, seed=9)
    eye = np.einsum("sab,scb->sac", u, u.conj())
    assert np.max(np.abs(eye - np.eye(3))) < 1e-14
    assert np.max(np.abs(np.linalg.det(u) - 1)) < 1e-14
    np.testing.assert_array_equal(u, portkern.gen.su3(50, seed=9))
    assert not np.array_equal(u, portkern.gen.su3(50, seed=10))


# ---- dslash ------------------------------------------------------------------------------
@pytest.mark.kernel("dslash")
@pytest.mark.parametrize("recon12", [False, True], ids=["full", "recon12"])
def test_dslash(bv, recon12):
    backend, variant = bv
    ctx = context_for(backend)
    lat = (4, 3, 5, 6)  # t, z, y, x: all different
    u, psi = portkern.gen.dslash_data(lat, seed=2)
    kappa = 0.125
    chi, info = ctx.dslash(u, psi, kappa, recon12=recon12, variant=variant)
    ref = O.dslash(u, psi, kappa)
    rel = np.linalg.norm(chi - ref) / np.linalg.norm(ref)
    assert rel <= O.dslash_rtol(psi, ref, kappa), rel
    ok_run_info(info, backend, variant)
    vol = np.prod(lat)
    assert info.flops == 1320 * vol
    assert info.bytes == (2688 if recon12 else 3072) * vol


def test_dslash_free_field(ctx):
    """Section 4c: U = 1 on a constant spinor gives chi = psi/(2 kappa) + 4 psi."""
    lat = (2, 2, 4, 4)
    u = np.zeros((4,) + lat + (3, 3), np.complex128)
    u[..., :, :] = np.eye(3)
    s = portkern.gen.complex_gaussian((4, 3), seed=5)
    psi = np.broadcast_to(s, lat + (4, 3)).copy()
    kappa = 0.2
    chi, _ = ctx.dslash(u, psi, kappa)
    np.testing.assert_allclose(chi, psi / (2 * kappa) + 4 * psi, rtol=0, atol=1e-13)


# ---- grid --------------------------------------------------------------------------------
def grid_set(n=400, seed=21):
    """A small gridding set: 64 x 64 grid, oversample 4, three planes (supports 1, 2, 3),
    random FULL kernels; positions reaching past the edge (skipped) and a few non-finite
    visibilities (skipped)."""
    rng = np.random.default_rng(seed)
    G, os_, support = 64, 4, np.array([1, 2, 3], np.int32)
    half = os_ // 2 + int(support.max()) * os_ + 1
    kernels = (rng.normal(size=(3, half, half)) + 1j * rng.normal(size=(3, half, half))).astype(np.complex64)
    cell = 0.01                           # grid_size * cell = 0.64
    uu = rng.uniform(-55, 55, n).astype(np.float32)
    vv = rng.uniform(-55, 55, n).astype(np.float32)
    ww = rng.uniform(-500, 500, n).astype(np.float32)
    vis = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(np.complex64)
    weight = rng.uniform(0.5, 2, n).astype(np.float32)
    vis[3] = np.nan
    weight[7] = np.inf
    return dict(uu=uu, vv=vv, ww=ww, vis=vis, weight=weight, kernels=kernels, support=support,
                oversample=os_, cell_size=cell, w_scale=0.02, grid_size=G)


def check_grid(g, norm, skipped, ref, k=1):
    R, rnorm, rskipped, N, A = ref
    bound = O.grid_bound(N, A, k)
    assert skipped == rskipped
    assert np.all(np.abs(g.real - k * R.real) <= bound)
    assert np.all(np.abs(g.imag - k * R.imag) <= bound)
    assert np.all(g[N == 0] == 0)
    assert abs(norm - k * rnorm) <= 1e-9 * abs(k * rnorm)


@pytest.fixture(scope="module")
def gset():
    s = grid_set()
    ref = O.grid(s["uu"], s["vv"], s["ww"], s["vis"], s["weight"], s["kernels"], s["support"],
                 s["oversample"], s["cell_size"], s["w_scale"], s["grid_size"])
    assert 10 < ref[2] < 200  # some skipped, most gridded
    return s, ref


@pytest.mark.kernel("grid")
@pytest.mark.parametrize("layout", ["full", "compact"])
def test_grid(bv, gset, layout):
    backend, variant = bv
    ctx = context_for(backend)
    s, ref = gset
    s = dict(s)
    if layout == "compact":
        s["kernels"] = portkern.compact_kernels(s["kernels"], s["support"], s["oversample"])
    g, norm, skipped, info = ctx.grid(variant=variant, **s)
    check_grid(g, norm, skipped, ref)
    ok_run_info(info, backend, variant)
    assert g.dtype == np.complex64 and g.shape == (64, 64)


def test_grid_accumulates(ctx, gset):
    s, ref = gset
    g, norm1, _, _ = ctx.grid(**s)
    g2, norm2, skipped, _ = ctx.grid(grid=g, **s)  # into the same grid
    assert g2 is g
    check_grid(g, norm1 + norm2, skipped, ref, k=2)


def test_grid_full_equals_compact_serial(gset):
    ctx = context_for("serial")
    s, _ = gset
    a = ctx.grid(**s)
    c = dict(s, kernels=portkern.compact_kernels(s["kernels"], s["support"], s["oversample"]))
    b = ctx.grid(**c)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1] and a[2] == b[2]
