"""The package surface: version, probe, backends and devices, variants, RunInfo, errors,
diff, generators, aligned arrays."""
import numpy as np
import pytest

import portkern
from portkern import _core, _errors


def test_version():
    assert portkern.version == _core.HEADER_VERSION == "0.1.0"
    assert portkern.__version__ == "0.1.0"


def test_probe():
    p = portkern.probe(ignore_env=True)
    names = [b["name"] for b in p["backends"]]
    assert names == list(portkern.BACKENDS)
    serial = p["backends"][0]
    assert serial["available"] and serial["reason"] == ""
    assert len(serial["devices"]) == 1 and serial["devices"][0].type == "cpu"
    for b in p["backends"]:
        assert b["available"] or b["reason"]  # an unusable backend says why


def test_context_backends_and_devices():
    with portkern.Context("serial", ignore_env=True) as ctx:
        assert ctx.backend == "serial" and ctx.device is None and ctx.threads is None
        bs = ctx.backends()
        assert [b.name for b in bs] == list(portkern.BACKENDS)
        assert all(isinstance(b.available, bool) for b in bs)
        devs = ctx.devices()
        assert {d.backend for d in devs} == {b.name for b in bs if b.available}
        d = ctx.devices("serial")[0]
        assert d.index == 0 and d.compute_units >= 1 and d.fp64 and d.global_mem_bytes > 0
        assert "serial" in repr(ctx)
    assert ctx.closed and "closed" in repr(ctx)


def test_context_options():
    with portkern.Context("openmp", threads=1, ignore_env=True) as ctx:
        assert ctx.threads == 1
    with portkern.Context("serial", device=0) as ctx:
        assert ctx.device == 0
        f = np.ones((2, 2, 2), np.float32)
        assert ctx.diffusion3d(f, 1)[1].device == 0


def test_variants():
    for k in portkern.KERNELS:
        vs = portkern.variants(k, "serial")
        assert vs and all(isinstance(v, str) and v for v in vs)
    assert "omp-tb" in portkern.variants("diffusion3d", "openmp")
    with pytest.raises(ValueError):
        portkern.variants("fft3d", "serial")
    with pytest.raises(ValueError):
        portkern.variants("su3", "auto")
    with portkern.Context("serial") as ctx:
        assert ctx.variants("su3") == portkern.variants("su3", "serial")


def test_run_info_fields():
    with portkern.Context("serial", ignore_env=True) as ctx:
        _, info = ctx.diffusion3d(np.ones((4, 4, 4), np.float32), 2)
    d = info.as_dict()
    assert set(d) == {"backend", "device", "device_name", "variant", "reason", "wall_s",
                      "kernel_s", "transfer_s", "setup_s", "layout_s", "bytes", "flops",
                      "fell_back", "stages"}
    assert d["backend"] == "serial" and d["variant"] == "serial" and d["fell_back"] is False
    assert "chosen" in d["reason"] and d["device_name"]
    assert info.num_stages == 0 and info.stages == {}
    assert "serial" in repr(info)
    with pytest.raises(AttributeError):
        info.wall_s = 1.0


def test_run_info_grid_stages():
    from test_kernels import grid_set
    with portkern.Context("openmp", ignore_env=True) as ctx:
        if not ctx.available("openmp"):
            pytest.skip("openmp unavailable")
        *_, info = ctx.grid(variant="omp-tiled", **grid_set(100))
    assert info.num_stages == len(info.stages) > 0
    assert all(isinstance(k, str) and v >= 0 for k, v in info.stages.items())


def test_error_classes_cover_every_status():
    names = _core.status_names()
    assert set(n for n, _ in names.values()) - {"PK_OK"} == set(_errors.BY_NAME)
    for status, (name, text) in names.items():
        if status == 0:
            continue
        e = _errors.make(status, name, text, "some detail", "f")
        assert isinstance(e, portkern.Error) and e.name == name and e.status == status
        assert "some detail" in str(e) and name in str(e)
    assert issubclass(portkern.SizeError, ValueError)
    assert issubclass(portkern.OutOfMemoryError, MemoryError)


def test_diff():
    a = np.linspace(1, 2, 30, dtype=np.float32).reshape(5, 6)
    r = portkern.diff(a, a.copy())
    assert r and r.equal and r.count == 30 and r.num_failed == 0 and r.first_fail is None
    b = a.copy()
    b[3, 4] *= 1 + 1e-3
    r = portkern.diff(b, a)
    assert not r and r.num_failed == 1 and r.first_fail == (3, 4)
    assert r.max_rel_err == pytest.approx(1e-3 / (1 + 1e-3), rel=1e-4)  # relative to |b[3, 4]|
    assert portkern.diff(b, a, norm=True, rtol=1e-3)
    z = (a + 1j * a).astype(np.complex128)
    w = z.copy()
    w[1, 2] += 1j
    r = portkern.diff(w, z)
    assert r.count == 60 and r.first_fail == (1, 2)
    assert portkern.diff(a[:, ::2], a[:, ::2].copy())   # non-contiguous: copied first
    with pytest.raises(TypeError):
        portkern.diff(a, a.astype(np.float64))
    with pytest.raises(ValueError):
        portkern.diff(a, a.T)
    with pytest.raises(TypeError):
        portkern.diff(a.astype(np.int32), a.astype(np.int32))


def test_generators():
    f = portkern.gen.diffusion3d_field((4, 5, 6))
    assert f.dtype == np.float32 and f.shape == (4, 5, 6)
    assert 0 <= f.min() and f.max() <= 1
    p = portkern.gen.diffusion3d_params((8, 8, 8), 3)
    assert p["cw"] == pytest.approx(0.1) and p["cc"] == pytest.approx(0.4)
    z = portkern.gen.complex_gaussian((1000,), seed=3)
    assert abs(np.std(z.real) - 1) < 0.1 and abs(np.mean(z.imag)) < 0.1
    np.testing.assert_array_equal(z, portkern.gen.complex_gaussian(1000, seed=3))
    u, psi = portkern.gen.dslash_data((2, 2, 2, 4), seed=1)
    assert u.shape == (4, 2, 2, 2, 4, 3, 3) and psi.shape == (2, 2, 2, 4, 4, 3)
    u2, psi2 = portkern.gen.su3_data(5, seed=1)
    assert psi2.shape == (5, 3, 4)


def test_empty_is_aligned():
    for shape, dt in [((3, 5), np.float32), (7, np.complex128), ((2, 3, 4), np.float64)]:
        a = portkern.empty(shape, dt)
        assert a.ctypes.data % 64 == 0 and a.flags.c_contiguous and a.dtype == dt
        z = portkern.zeros(shape, dt)
        assert not z.any()


def test_outputs_are_new_and_aligned():
    with portkern.Context("serial") as ctx:
        x = np.ones((4, 5, 6))
        y, _ = ctx.magicfilter3d(x)
        assert y.ctypes.data % 64 == 0 and y.flags.c_contiguous and y.flags.writeable
        assert not np.shares_memory(x, y)


def test_release_cache_and_limit():
    with portkern.Context("serial", ignore_env=True) as ctx:
        f = np.ones((4, 4, 4), np.float32)
        ctx.diffusion3d(f, 1)
        assert "plan reused" in ctx.diffusion3d(f, 1)[1].reason
        ctx.release_cache()
        assert "plan reused" not in ctx.diffusion3d(f, 1)[1].reason
        if hasattr(ctx, "set_cache_limit"):
            ctx.set_cache_limit(0)  # keep nothing
            ctx.diffusion3d(f, 1)
            assert "plan reused" not in ctx.diffusion3d(f, 1)[1].reason
