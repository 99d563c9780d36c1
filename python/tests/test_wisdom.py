"""Wisdom from Python (lib/portkern.h "Wisdom"): entries saved by one context are loaded by
another, and plain auto then takes the entry's variant, saying so in the RunInfo's reason."""
import json

import numpy as np
import pytest

import portkern

pytestmark = pytest.mark.skipif(not hasattr(portkern.Context, "wisdom_load"),
                                reason="the library has no wisdom API")


def test_save_load_and_auto_follows(tmp_path):
    path = str(tmp_path / "wisdom.json")
    f = portkern.gen.diffusion3d_field((8, 10, 12))
    with portkern.Context(ignore_env=True) as ctx:
        _, info = ctx.diffusion3d(f, 2)
        assert "wisdom" not in info.reason
        assert ctx.wisdom() == []
    # an entry written as `portkern tune` would: serial's 'serial' for this size and shape
    entry = {"kernel": "diffusion3d", "backend": "serial", "device": 0,
             "variant": "serial", "size_class": "test", "size_bytes": info.plan_bytes,
             "params": "", "seconds": 1e-6, "runners_up": "", "date": "2026-11-25T00:00:00Z"}
    with portkern.Context("serial", ignore_env=True) as ser:
        dev = ser.devices("serial")[0]
    entry.update(device_name=dev.name, driver=dev.driver, compute_units=dev.compute_units,
                 version=portkern.version)
    with open(path, "w") as fh:
        json.dump({"portkern_wisdom": 1, "entries": [entry]}, fh)
    with portkern.Context(ignore_env=True) as ctx:
        ctx.wisdom_load(path)
        got = ctx.wisdom()
        assert len(got) == 1 and got[0]["variant"] == "serial" and got[0]["backend"] == "serial"
        out, info = ctx.diffusion3d(f, 2)
        assert info.backend == "serial" and info.variant == "serial"
        assert "wisdom: serial" in info.reason
        ref, _ = portkern.Context("serial", ignore_env=True).diffusion3d(f, 2)
        np.testing.assert_array_equal(out, ref)
        ctx.wisdom_save(str(tmp_path / "copy.json"))
        ctx.wisdom_forget()
        assert ctx.wisdom() == []
    with portkern.Context(ignore_env=True) as ctx:
        ctx.wisdom_load(str(tmp_path / "copy.json"))
        assert [e["variant"] for e in ctx.wisdom()] == ["serial"]


def test_corrupt_file_is_refused_with_the_reason(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"portkern_wisdom": 1, "entries": [ {"kernel": 3} ]}')
    with portkern.Context(ignore_env=True) as ctx:
        with pytest.raises(portkern.Error) as err:
            ctx.wisdom_load(str(bad))
        assert err.value.name == "PK_EFORMAT"
        assert "bad.json" in ctx.wisdom_note()
        assert ctx.wisdom() == []
