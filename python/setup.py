"""Build of portkern's C extension (portkern._core) against libportkern.

Where the library comes from:
  * PORTKERN_BUILD_DIR=/path/to/_build  - an uninstalled build tree (development, CI): the
    header from the source tree (lib/portkern.h; the source directory is read from the build
    tree's Makefile, abs_top_srcdir), the library from BUILD_DIR/.libs, which the extension
    carries as its run path.
  * otherwise pkg-config portkern        - an installed library: pkg-config's cflags and libs,
    plus a run path to its libdir (so a prefix outside the loader's directories works without
    LD_LIBRARY_PATH; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig finds a prefix install).
"""
import os
import re
import shlex
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExtAlways(build_ext):
    """Always compile: the macros below depend on the header found, which setuptools'
    timestamp check cannot see (a stale build/ would keep an old choice)."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True


def fail(msg):
    sys.stderr.write("portkern setup: " + msg + "\n")
    raise SystemExit(1)


def from_build_dir(build_dir):
    build_dir = os.path.abspath(build_dir)
    libdir = os.path.join(build_dir, ".libs")
    if not os.path.isfile(os.path.join(libdir, "libportkern.so")):
        fail(f"PORTKERN_BUILD_DIR={build_dir}: no .libs/libportkern.so there (run make first)")
    srcdir = os.environ.get("PORTKERN_SOURCE_DIR")
    if not srcdir:
        try:
            with open(os.path.join(build_dir, "Makefile")) as f:
                m = re.search(r"^abs_top_srcdir = (.*)$", f.read(), re.M)
            srcdir = m.group(1).strip() if m else None
        except OSError:
            srcdir = None
    if not srcdir:
        srcdir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    include = os.path.join(srcdir, "lib")
    if not os.path.isfile(os.path.join(include, "portkern.h")):
        fail(f"no lib/portkern.h under {srcdir} (set PORTKERN_SOURCE_DIR)")
    return dict(include_dirs=[include], library_dirs=[libdir], libraries=["portkern"],
                runtime_library_dirs=[libdir], extra_compile_args=[], extra_link_args=[])


def from_pkg_config():
    def pc(*args):
        try:
            return subprocess.run(["pkg-config", *args, "portkern"], check=True,
                                  capture_output=True, text=True).stdout.strip()
        except FileNotFoundError:
            fail("pkg-config not found (install pkg-config, or set PORTKERN_BUILD_DIR)")
        except subprocess.CalledProcessError as e:
            fail("pkg-config portkern failed: " + e.stderr.strip() +
                 "\n  install portkern (make install) and set PKG_CONFIG_PATH to its "
                 "lib/pkgconfig, or build against a build tree with PORTKERN_BUILD_DIR=_build")
    cfg = dict(include_dirs=[], library_dirs=[], libraries=[], runtime_library_dirs=[],
               extra_compile_args=[], extra_link_args=[])
    for tok in shlex.split(pc("--cflags")):
        if tok.startswith("-I"):
            cfg["include_dirs"].append(tok[2:])
        else:
            cfg["extra_compile_args"].append(tok)
    for tok in shlex.split(pc("--libs")):
        if tok.startswith("-L"):
            cfg["library_dirs"].append(tok[2:])
        elif tok.startswith("-l"):
            cfg["libraries"].append(tok[2:])
        else:
            cfg["extra_link_args"].append(tok)
    libdir = pc("--variable=libdir")
    if libdir:
        cfg["runtime_library_dirs"].append(libdir)
    return cfg


def header_of(cfg):
    for d in cfg["include_dirs"] + ["/usr/local/include", "/usr/include"]:
        h = os.path.join(d, "portkern.h")
        if os.path.isfile(h):
            return h
    return None


build_dir = os.environ.get("PORTKERN_BUILD_DIR")
cfg = from_build_dir(build_dir) if build_dir else from_pkg_config()

# The plan executes that the library declares (the plan-execute branch adds conv2d, su3,
# dslash and grid's); without one, the extension's Plan.execute is upload + run + download.
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
header = header_of(cfg)
text = open(header).read() if header else ""
for k in ("conv2d", "su3", "dslash", "grid"):
    if re.search(r"\bpk_%s_plan_execute\s*\(" % k, text):
        macros.append(("PKPY_HAVE_%s_PLAN_EXECUTE" % k.upper(), "1"))
if re.search(r"\bpk_context_set_cache_limit\s*\(", text):
    macros.append(("PKPY_HAVE_CACHE_LIMIT", "1"))
if re.search(r"\bpk_wisdom_load\s*\(", text):
    macros.append(("PKPY_HAVE_WISDOM", "1"))
if re.search(r"\bpk_grid_generate\s*\(", text):
    macros.append(("PKPY_HAVE_GEN", "1"))
if re.search(r"\bpk_image\s*\(", text) and re.search(r"\bpk_fits_write_image\s*\(", text):
    macros.append(("PKPY_HAVE_IMAGE", "1"))
if re.search(r"\bpk_context_set_param\s*\(", text):
    macros.append(("PKPY_HAVE_PARAMS", "1"))

ext = Extension(
    "portkern._core",
    sources=["src/_core.c"],
    include_dirs=cfg["include_dirs"] + [numpy.get_include()],
    library_dirs=cfg["library_dirs"],
    libraries=cfg["libraries"],
    runtime_library_dirs=cfg["runtime_library_dirs"],
    define_macros=macros,
    extra_compile_args=cfg["extra_compile_args"] + ["-std=c99", "-Wall", "-Wextra",
                                                     "-Wno-missing-field-initializers",
                                                     "-Wno-cast-function-type"],
    extra_link_args=cfg["extra_link_args"],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExtAlways})
