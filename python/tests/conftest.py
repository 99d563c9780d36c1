"""Shared fixtures of portkern's tests.

Every kernel test runs on each backend this machine may have (serial, openmp, opencl; cuda
too when a CUDA build finds a GPU) and each variant the library lists for it; a backend that
cannot run here is SKIPPED with the library's reason.
"""
import os
import sys

import pytest

import portkern

sys.path.insert(0, os.path.dirname(__file__))

BACKENDS = ("serial", "openmp", "opencl", "cuda")
_contexts = {}


def context_for(backend):
    """A Context forced to `backend` (ignoring PORTKERN_* variables), shared by the tests;
    skips the test when the backend cannot run here."""
    if backend not in _contexts:
        ctx = portkern.Context(backend, ignore_env=True)
        why = [b.reason for b in ctx.backends() if b.name == backend][0]
        _contexts[backend] = (ctx, None if ctx.available(backend) else why)
    ctx, why = _contexts[backend]
    if why is not None:
        pytest.skip(f"{backend} backend unavailable: {why}")
    return ctx


@pytest.fixture(params=BACKENDS)
def ctx(request):
    """A Context per backend."""
    return context_for(request.param)


def pytest_generate_tests(metafunc):
    """`bv` = (backend, variant) for every variant of the test's kernel
    (@pytest.mark.kernel("name")) on every backend that has the kernel built."""
    if "bv" in metafunc.fixturenames:
        kernel = metafunc.definition.get_closest_marker("kernel").args[0]
        params, ids = [], []
        for b in BACKENDS:
            vs = portkern.variants(kernel, b)
            if not vs and b == "cuda":
                continue  # not built: nothing to list (a build without CUDA)
            for v in vs or [None]:
                params.append((b, v))
                ids.append(f"{b}-{v}")
        metafunc.parametrize("bv", params, ids=ids)


def pytest_configure(config):
    config.addinivalue_line("markers", "kernel(name): the kernel whose variants `bv` runs")


def pytest_sessionfinish(session, exitstatus):
    for ctx, _ in _contexts.values():
        ctx.close()
