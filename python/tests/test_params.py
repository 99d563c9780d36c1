"""Tuning parameters from Python (lib/portkern.h "Tuning parameters"): portkern.params() lists
the library's table, Context.set_param / get_param / params= set and read a context's values
with their source, bad names and values raise InvalidArgumentError naming the parameter, and
conv2d.fft_taps moves method auto's switch to the FFT."""
import numpy as np
import pytest

import portkern
import oracles as O
from conftest import BACKENDS, context_for

pytestmark = pytest.mark.skipif(not hasattr(portkern.Context, "set_param"),
                                reason="the library has no tuning parameters API")

TAPS = "conv2d.fft_taps"
TAPS_ENV = "PORTKERN_CONV2D_FFT_TAPS"


def test_params_lists_the_table():
    ps = portkern.params()
    byname = {p.name: p for p in ps}
    assert len(byname) == len(ps) > 1
    p = byname[TAPS]
    assert isinstance(p, portkern.Param)
    assert p.env == TAPS_ENV and p.env_alias is None
    assert p.default == "676"
    assert "integer" in p.values and p.doc
    for p in ps:
        # one scheme: the kernel's name (conv2d.fft_taps) or, for a backend-wide setting, the
        # backend's (openmp.threads), a dot, the parameter
        owner, _, name = p.name.partition(".")
        assert (owner in portkern.KERNELS or owner in portkern.BACKENDS) and name, p
        assert p.env == "PORTKERN_" + p.name.replace(".", "_").upper()
        assert p.env_alias is None or p.env_alias.startswith("PORTKERN_")
        assert p.values and p.default and p.doc


def test_every_default_reads_back_as_default():
    with portkern.Context(ignore_env=True) as ctx:
        for p in portkern.params():
            assert ctx.get_param(p.name) == (p.default, "default")


def test_set_get_round_trip_and_reset():
    with portkern.Context(ignore_env=True) as ctx:
        ctx.set_param(TAPS, 50)
        assert ctx.get_param(TAPS) == ("50", "caller")
        ctx.set_param(TAPS, "60")
        assert ctx.get_param(TAPS) == ("60", "caller")
        ctx.set_param(TAPS, np.int64(70))  # any integer (operator.index)
        assert ctx.get_param(TAPS) == ("70", "caller")
        ctx.set_param("su3.isa", "generic")
        assert ctx.get_param("su3.isa") == ("generic", "caller")
        ctx.set_param(TAPS, None)
        assert ctx.get_param(TAPS) == ("676", "default")
        assert ctx.get_param("su3.isa") == ("generic", "caller")  # the others stay


def test_environment_source_and_reset_to_it(monkeypatch):
    monkeypatch.setenv(TAPS_ENV, "100")
    with portkern.Context() as ctx:  # the variable is read at creation
        assert ctx.get_param(TAPS) == ("100", "env")
        ctx.set_param(TAPS, 7)
        assert ctx.get_param(TAPS) == ("7", "caller")
        ctx.set_param(TAPS, None)
        assert ctx.get_param(TAPS) == ("100", "env")
    with portkern.Context(ignore_env=True) as ctx:
        assert ctx.get_param(TAPS) == ("676", "default")


def test_bad_environment_value_is_reported_naming_the_variable(monkeypatch):
    monkeypatch.setenv(TAPS_ENV, "lots")
    with portkern.Context() as ctx:
        with pytest.raises(portkern.InvalidArgumentError) as err:
            ctx.get_param(TAPS)
        assert TAPS_ENV in err.value.detail and "lots" in err.value.detail
        ctx.set_param(TAPS, 9)  # the caller's value replaces it
        assert ctx.get_param(TAPS) == ("9", "caller")


@pytest.mark.parametrize("name,value", [("conv2d.no_such_knob", 4), ("nope", "1"),
                                        (TAPS, "x"), (TAPS, 0), (TAPS, "-3"),
                                        ("su3.isa", "avx9000"), ("grid.cuda_blocks", "1,2000")])
def test_bad_name_or_value_raises_naming_the_parameter(name, value):
    with portkern.Context(ignore_env=True) as ctx:
        with pytest.raises(portkern.InvalidArgumentError) as err:
            ctx.set_param(name, value)
        e = err.value
        assert isinstance(e, ValueError) and e.name == "PK_EINVAL"
        assert e.where == "Context.set_param"
        assert name in e.detail and name in str(e)
        if name == TAPS:
            assert str(value) in e.detail
        if name not in {p.name for p in portkern.params()}:
            with pytest.raises(portkern.InvalidArgumentError, match=name):
                ctx.get_param(name)  # an unknown name cannot be read either
        assert ctx.get_param(TAPS) == ("676", "default")  # nothing changed


@pytest.mark.parametrize("value", [1.5, True, [4], b"4"])
def test_value_of_the_wrong_type_is_a_type_error(value):
    with portkern.Context(ignore_env=True) as ctx:
        with pytest.raises(TypeError, match=TAPS):
            ctx.set_param(TAPS, value)
        with pytest.raises(TypeError):
            ctx.set_param(4, 4)


def test_context_params_at_construction():
    with portkern.Context(ignore_env=True, params={TAPS: 4, "su3.isa": "generic"}) as ctx:
        assert ctx.get_param(TAPS) == ("4", "caller")
        assert ctx.get_param("su3.isa") == ("generic", "caller")
        assert ctx.get_param("dslash.isa") == ("auto", "default")
    with portkern.Context(ignore_env=True, params={}) as ctx:
        assert ctx.get_param(TAPS) == ("676", "default")


def test_context_params_errors():
    with pytest.raises(portkern.InvalidArgumentError) as err:
        portkern.Context(ignore_env=True, params={TAPS: "many"})
    assert err.value.where == "Context" and TAPS in err.value.detail
    with pytest.raises(portkern.InvalidArgumentError, match="bogus.knob"):
        portkern.Context(ignore_env=True, params={"bogus.knob": 1})
    with pytest.raises(TypeError, match="dict"):
        portkern.Context(ignore_env=True, params=[(TAPS, 4)])


def test_closed_context():
    ctx = portkern.Context(ignore_env=True)
    ctx.close()
    with pytest.raises(portkern.StateError):
        ctx.set_param(TAPS, 4)
    with pytest.raises(portkern.StateError):
        ctx.get_param(TAPS)


def fft_correlation(image, psf):
    """tests/oracles.conv2d's periodic sum, by numpy FFTs (float64): the correlation of the
    image with the PSF, shifted by (kh // 2, kw // 2)."""
    h, w = image.shape
    kh, kw = psf.shape
    k = np.zeros((h, w))
    k[:kh, :kw] = psf
    acc = np.fft.ifft2(np.fft.fft2(image.astype(np.float64)) * np.conj(np.fft.fft2(k))).real
    return np.roll(acc, (kh // 2, kw // 2), axis=(0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fft_taps_moves_auto_to_the_fft(backend):
    context_for(backend)  # skips a backend that cannot run here
    fft = [v for v in portkern.variants("conv2d", backend) if v.endswith("fft")]
    rng = np.random.default_rng(11)
    image = rng.uniform(0.5, 1.5, (36, 50)).astype(np.float32)
    psf = rng.uniform(0.1, 1.0, (3, 3)).astype(np.float32)
    psf /= psf.sum()
    ref = fft_correlation(image, psf)
    # test_kernels.test_conv2d's rules: FFT element-wise rtol 1e-5, direct gamma_{kh kw}
    rtol = 1e-5 if fft else O.gamma(psf.size, O.U32)
    with portkern.Context(backend, ignore_env=True) as ctx:
        out, info = ctx.conv2d(image, psf)  # 9 taps < 676: direct
        assert "method auto: 9 taps < 676: direct" in info.reason, info.reason
        assert not info.variant.endswith("fft")
        direct = info.variant
        ctx.set_param(TAPS, 4)
        out, info = ctx.conv2d(image, psf)
        assert "method auto: 9 taps >= 4 (conv2d.fft_taps): fft" in info.reason, info.reason
        if fft:
            assert info.variant in fft
        else:  # the backend runs its direct variant and says so
            assert info.variant == direct
            assert f"backend {backend} has no FFT variant: ran {direct}" in info.reason
        assert np.max(np.abs(out - ref) / np.abs(ref)) <= rtol
        ctx.set_param(TAPS, None)  # the kept plans are released: auto is direct again
        _, info = ctx.conv2d(image, psf)
        assert info.variant == direct and "9 taps < 676: direct" in info.reason
    with portkern.Context(backend, ignore_env=True, params={TAPS: 9}) as ctx:
        _, info = ctx.conv2d(image, psf)
        assert "9 taps >= 9 (conv2d.fft_taps): fft" in info.reason
        assert info.variant in (fft or [direct])
