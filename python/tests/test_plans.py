"""Plans on every backend: creation, execute on new arrays, device-resident iteration
(upload, run, run, download), with blocks, closing, the state rules."""
import numpy as np
import pytest

import portkern
import oracles as O
from test_kernels import SKEW, check_grid, grid_set


def test_diffusion3d_plan(ctx):
    rng = np.random.default_rng(1)
    shape = (5, 8, 11)
    with ctx.diffusion3d_plan(shape, 4, **SKEW) as plan:
        assert isinstance(plan, portkern.Diffusion3DPlan) and not plan.closed
        assert plan.info.backend == ctx.backend and plan.context is ctx
        for _ in range(2):  # execute on new arrays
            f = rng.uniform(0.5, 1.5, shape).astype(np.float32)
            out, info = plan.execute(f)
            assert np.max(np.abs(out - O.diffusion3d(f, 4, SKEW))) <= O.diffusion3d_atol(f, 4)
            assert info.backend == ctx.backend
        out, _ = plan.execute(f, 6, out=f)  # another count, in place
        assert out is f
        # device-resident iteration: upload once, 3 runs, download once
        f = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        plan.upload(f)
        for count in (2, 3, 4):
            info = plan.run(count)
            assert isinstance(info, portkern.RunInfo)
        g = plan.download()
        assert np.max(np.abs(g - O.diffusion3d(f, 9, SKEW))) <= O.diffusion3d_atol(f, 9)
        o = portkern.empty(shape, np.float32)
        assert plan.download(out=o) is o
        np.testing.assert_array_equal(o, g)
        # after an execute the plan holds no resident field: run is a state error
        plan.execute(f)
        with pytest.raises(portkern.StateError):
            plan.run()
        with pytest.raises(ValueError, match="shape"):
            plan.execute(np.ones((5, 8, 12), np.float32))
    assert plan.closed
    with pytest.raises(portkern.StateError, match="closed"):
        plan.execute(f)


def test_conv2d_plan(ctx):
    rng = np.random.default_rng(2)
    psf = rng.uniform(0.1, 1, (5, 5)).astype(np.float32)
    psf /= psf.sum()
    with ctx.conv2d_plan((24, 30), psf, method="direct") as plan:
        for _ in range(3):
            im = rng.uniform(0.5, 1.5, (24, 30)).astype(np.float32)
            out, info = plan.execute(im)
            assert np.max(np.abs(out - O.conv2d(im, psf)) / O.conv2d(im, psf)) <= O.gamma(25, O.U32)
        plan.upload(im)
        plan.run()
        plan.run()  # the frame stays: a second run gives the same frame
        np.testing.assert_array_equal(plan.download(), out)


@pytest.mark.parametrize("bc", ["periodic", "grow", "shrink"])
def test_magicfilter3d_plan(ctx, bc):
    rng = np.random.default_rng(3)
    xs = (20, 17, 22) if bc == "shrink" else (6, 9, 18)
    with ctx.magicfilter3d_plan(xs, transpose=True, bc=bc) as plan:
        assert plan.shapes[0] == xs
        for make in (np.empty, portkern.empty):  # unaligned-by-chance and 64-byte aligned arrays
            x = make(xs, np.float64)
            x[...] = rng.uniform(-1.5, 1.5, xs)
            y, _ = plan.execute(x)
            assert y.shape == plan.shapes[1]
            assert np.max(np.abs(y - O.magicfilter3d(x, True, bc))) <= O.MF_ATOL
        plan.upload(x)
        plan.run()
        y2 = plan.download()
        np.testing.assert_array_equal(y2, y)


@pytest.mark.parametrize("layout", ["lexi", "hvfo"])
def test_laplace2d_plan(ctx, layout):
    rng = np.random.default_rng(4)
    l, sigma = 32, 0.25
    with ctx.laplace2d_plan(l, sigma, 5, layout=layout) as plan:
        phi = portkern.empty((l, l), np.float32)
        phi[...] = rng.uniform(-1, 1, (l, l))
        out, _ = plan.execute(phi)
        assert np.max(np.abs(out - O.laplace2d(phi, sigma, 5))) <= O.laplace2d_atol(phi, sigma, 5)
        plan.upload(phi)
        plan.run(4)
        plan.run(7)
        g = plan.download()
        assert np.max(np.abs(g - O.laplace2d(phi, sigma, 11))) <= O.laplace2d_atol(phi, sigma, 11)


@pytest.mark.parametrize("layout", ["aos", "hvfo", "recon12"])
def test_su3_plan(ctx, layout):
    nv = 29
    with ctx.su3_plan(nv, layout=layout) as plan:
        for seed in (1, 2):
            u, psi = portkern.gen.su3_data(nv, seed)
            chi, _ = plan.execute(u, psi)
            ref = O.su3(u, psi)
            b = O.su3_bound(psi, layout)
            assert np.all(np.abs(chi.real - ref.real) <= b) and np.all(np.abs(chi.imag - ref.imag) <= b)
        plan.upload(u, psi)
        plan.run()
        np.testing.assert_array_equal(plan.download(), chi)
        plan.upload(*portkern.gen.su3_data(nv, 7))
        with pytest.raises(portkern.StateError):  # no run of the current upload yet
            plan.download()


@pytest.mark.parametrize("recon12", [False, True])
def test_dslash_plan(ctx, recon12):
    lat, kappa = (2, 4, 3, 4), 0.15
    with ctx.dslash_plan(lat, kappa, recon12=recon12) as plan:
        u, psi = portkern.gen.dslash_data(lat, 3)
        chi, _ = plan.execute(u, psi)
        ref = O.dslash(u, psi, kappa)
        assert np.linalg.norm(chi - ref) / np.linalg.norm(ref) <= O.dslash_rtol(psi, ref, kappa)
        plan.upload(u, psi)
        plan.run()
        np.testing.assert_array_equal(plan.download(), chi)
        with pytest.raises(ValueError, match="psi"):
            plan.execute(u, np.zeros((2, 4, 3, 5, 4, 3), np.complex128))


def test_grid_plan(ctx):
    s = grid_set(n=300, seed=5)
    ref = O.grid(s["uu"], s["vv"], s["ww"], s["vis"], s["weight"], s["kernels"], s["support"],
                 s["oversample"], s["cell_size"], s["w_scale"], s["grid_size"])
    data = {k: s.pop(k) for k in ("uu", "vv", "ww", "vis", "weight")}
    with ctx.grid_plan(**s) as plan:
        g, norm, skipped, info = plan.execute(**data)
        check_grid(g, norm, skipped, ref)
        g2, norm2, skipped2, _ = plan.run(grid=g, **data)  # accumulates into g
        assert g2 is g
        check_grid(g, norm + norm2, skipped2, ref, k=2)


def test_context_close_closes_plans():
    ctx = portkern.Context("serial")
    p1 = ctx.diffusion3d_plan((2, 3, 4), 1)
    p2 = ctx.su3_plan(3)
    ctx.close()
    assert ctx.closed and p1.closed and p2.closed
    with pytest.raises(portkern.StateError):
        p1.execute(np.ones((2, 3, 4), np.float32))
    with pytest.raises(portkern.StateError):
        ctx.diffusion3d(np.ones((2, 3, 4), np.float32), 1)
    with pytest.raises(portkern.StateError):
        ctx.su3_plan(3)
    p1.close()  # closing twice is harmless
    ctx.close()


def test_plan_keeps_context_alive():
    plan = portkern.Context("serial").diffusion3d_plan((2, 3, 4), 2)
    import gc
    gc.collect()
    f = np.ones((2, 3, 4), np.float32)
    out, _ = plan.execute(f)
    np.testing.assert_allclose(out, f, rtol=1e-6)  # a constant field stays constant
    plan.close()


def test_plan_creation_errors(ctx):
    with pytest.raises(portkern.Error) as e:
        ctx.laplace2d_plan(20, 0.1, layout="hvfo")   # 20 % 16 != 0
    assert e.value.name == "PK_ESIZE"
    with pytest.raises(portkern.NoVariantError):
        ctx.su3_plan(4, variant="nope")
    with pytest.raises(portkern.Error):
        ctx.dslash_plan((2, 2, 2, 2), 0.0)           # kappa must be > 0
