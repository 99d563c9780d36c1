#!/usr/bin/env python3
"""An SKA1-LOW-like observation gridded with portkern and imaged with numpy.fft.

1. The data set.  --dataset NAME takes the library's (portkern.gen.grid, the bytes of
   `portkern gen grid --dataset NAME --scale F --seed S`; docs/KERNELS.md 1.7): "small"
   runs anywhere; the SKA sets ("el82-70", ...) grid onto 18000^2 cells (2.6 GB) and their
   kernels take seconds.  Without it, a smaller observation made here in NumPy by the same
   recipe, to show it: stations in a Vogel-spiral core and three logarithmic spiral arms,
   the SKA1-LOW site, a source through the zenith, uv tracks by earth rotation at 100 MHz,
   three point sources, w-kernels by the OSKAR/CASA recipe (a taper times the w phase
   screen, FFT, first quadrant; a Gaussian taper stands in for the prolate spheroidal),
   supports at 1e-3 of the plane-0 peak.
2. ctx.grid (w-projection gridding on the fastest backend here).
3. The dirty image: the inverse FFT of the grid; the brightest pixels are compared with
   where the sources are.  Saved as a PNG when matplotlib is installed (not a dependency of
   portkern).

    python ska_dirty_image.py [--stations 128] [--dumps 60] [--out dirty.png] [--backend auto]
    python ska_dirty_image.py --dataset small [--scale 1] [--seed 1] [--out dirty.png]
"""
import argparse
import time

import numpy as np

import portkern

LAT = np.deg2rad(-26.82472208)  # the SKA1-LOW site
C = 299792458.0


def stations(n, rng):
    """ENU metres: half in a Vogel-spiral core (r < 500 m), half on three log spiral arms."""
    core = n // 2
    k = np.arange(core)
    r = 500 * np.sqrt((k + 0.5) / core)
    a = k * np.pi * (3 - np.sqrt(5))
    e, nn = r * np.cos(a), r * np.sin(a)
    m = n - core
    arm = np.arange(m) % 3
    t = np.arange(m) // 3 / max(1, (m - 1) // 3)
    ra = 600 * (12000 / 600) ** t                     # 0.6 .. 12 km
    aa = 2 * np.pi * arm / 3 + 1.2 * np.log(ra / 600)
    e = np.concatenate([e, ra * np.cos(aa)]) + rng.normal(0, 5, n)
    nn = np.concatenate([nn, ra * np.sin(aa)]) + rng.normal(0, 5, n)
    return np.stack([e, nn, np.zeros(n)], 1)


def uvw_tracks(enu, dumps, freq):
    """u, v, w (wavelengths) of every baseline at `dumps` hour angles, source at dec = lat."""
    E, N, U = enu.T
    X = -np.sin(LAT) * N + np.cos(LAT) * U
    Y = E
    Z = np.cos(LAT) * N + np.sin(LAT) * U
    i, j = np.triu_indices(len(enu), 1)
    Lx, Ly, Lz = X[j] - X[i], Y[j] - Y[i], Z[j] - Z[i]
    H = np.deg2rad(np.linspace(-15, 15, dumps))[:, None]   # +-1 hour around transit
    d = LAT
    u = np.sin(H) * Lx + np.cos(H) * Ly
    v = -np.sin(d) * np.cos(H) * Lx + np.sin(d) * np.sin(H) * Ly + np.cos(d) * Lz
    w = np.cos(d) * np.cos(H) * Lx - np.cos(d) * np.sin(H) * Ly + np.sin(d) * Lz
    lam = C / freq
    return (u / lam).ravel(), (v / lam).ravel(), (w / lam).ravel()


def gauss_taper(l, fov):
    """The image-plane taper (standing in for the prolate spheroidal): exp(-8 (2l/fov)^2),
    3e-4 at the edge of the field, so that its transform (the kernel) is compact."""
    return np.exp(-8.0 * (2 * l / fov) ** 2)


def w_kernels(planes, max_w, fov, oversample, conv_size):
    """FULL stack complex64 [planes, half, half], int32 supports, w_scale."""
    w_scale = (planes - 1) ** 2 / max_w
    n_img = conv_size // oversample
    l = (np.arange(n_img) - n_img // 2) * (fov / n_img)
    L, M = np.meshgrid(l, l)
    taper = gauss_taper(L, fov) * gauss_taper(M, fov)
    n_term = np.sqrt(1 - L ** 2 - M ** 2) - 1
    half = conv_size // 2
    full = np.zeros((planes, half, half), np.complex128)
    for p in range(planes):
        wp = p * p / w_scale
        screen = np.zeros((conv_size, conv_size), np.complex128)
        o = (conv_size - n_img) // 2
        screen[o:o + n_img, o:o + n_img] = taper * np.exp(2j * np.pi * wp * n_term)
        k = np.fft.fft2(np.fft.ifftshift(screen))          # index 0 = centre
        full[p] = k[:half, :half]
    peak = abs(full[0, 0, 0])
    support = np.zeros(planes, np.int32)
    for p in range(planes):
        big = np.nonzero((np.abs(full[p, 0, 1:]) > 1e-3 * peak) | (np.abs(full[p, 1:, 0]) > 1e-3 * peak))[0]
        s = 1 + int(0.5 + (big.max() + 1) / oversample) if big.size else 0
        while oversample // 2 + s * oversample + 1 > half:
            s -= 1
        support[p] = s
    s0 = support[0]
    idx = np.abs(np.arange(-s0, s0 + 1)) * oversample
    full /= full[0][idx[:, None], idx[None, :]].real.sum()  # plane 0 sums to 1 at cell stride
    return full.astype(np.complex64), support, w_scale


def library_set(a):
    """The library's data set: gridded as generated (ctx.grid(**data)), imaged without a
    grid correction (its spheroidal taper is the library's own)."""
    data = portkern.gen.grid(a.dataset, scale=a.scale, seed=a.seed)
    i = data.info
    print(f"{a.dataset}: {i['num_vis']} visibilities, grid {data['grid_size']}^2, "
          f"{i['num_w_planes']} w-planes, supports {data['support'].min()}.."
          f"{i['max_support']} ({i['recipe']})")
    with portkern.Context(a.backend) as ctx:
        t0 = time.perf_counter()
        grid, norm, skipped, info = ctx.grid(**data)
        t = time.perf_counter() - t0
    print(f"gridded on {info.backend}/{info.variant} in {t * 1e3:.1f} ms "
          f"(kernel {info.kernel_s * 1e3:.1f} ms), norm {norm:.6g}, {skipped} skipped")
    G = data["grid_size"]
    image = np.fft.fftshift(np.fft.ifft2(np.fft.ifftshift(grid))).real * G * G / norm
    y, x = np.unravel_index(np.argmax(image), image.shape)
    cell = data["cell_size"]
    print(f"brightest pixel {image[y, x]:.3f} at (l, m) = ({(G // 2 - x) * cell:+.4f}, "
          f"{(y - G // 2) * cell:+.4f})")
    return image, cell, G, info, i["num_vis"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", help="the library's data set (portkern.gen.grid)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stations", type=int, default=128)
    ap.add_argument("--dumps", type=int, default=60)
    ap.add_argument("--grid-size", type=int, default=1024)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--out", default="dirty.png")
    a = ap.parse_args()
    if a.dataset:
        image, cell, G, info, nvis = library_set(a)
    else:
        image, cell, G, info, nvis = numpy_set(a)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG written (pip install matplotlib, or "
              "apt-get install python3-matplotlib)")
        return
    h = G // 2
    ext = np.rad2deg(np.array([h, -h, -h, h]) * cell)   # the whole field; l grows to the left
    plt.figure(figsize=(6, 5))
    plt.imshow(np.clip(image, 0, None) ** 0.5, origin="lower", extent=ext, cmap="inferno")
    plt.colorbar(label="sqrt(Jy/beam), dirty")
    plt.xlabel("l (deg)")
    plt.ylabel("m (deg)")
    plt.title(f"dirty image: {nvis} visibilities gridded by portkern ({info.variant})")
    plt.savefig(a.out, dpi=120, bbox_inches="tight")
    print(f"wrote {a.out}")


def numpy_set(a):
    """The observation made here in NumPy (the module's docstring), gridded and imaged with
    the Gaussian taper divided out; the sources' peaks checked."""
    rng = np.random.default_rng(7)

    freq, G, os_ = 100e6, a.grid_size, 4
    fov = np.deg2rad(4.0)
    cell = fov / G                                   # image pixel (rad); uv cell 1 / fov
    uu, vv, ww = uvw_tracks(stations(a.stations, rng), a.dumps, freq)
    sources = [(1.0, 0.0, 0.0), (0.6, 0.012, -0.008), (0.4, -0.02, 0.015)]  # S, l, m
    vis = np.zeros(uu.size, np.complex128)
    for S, l, m in sources:
        n = np.sqrt(1 - l * l - m * m)
        vis += S * np.exp(-2j * np.pi * (uu * l + vv * m - ww * (n - 1)))
    planes = 16
    kernels, support, w_scale = w_kernels(planes, np.abs(ww).max(), fov, os_, 512)
    weight = np.ones(uu.size, np.float32)
    print(f"{uu.size} visibilities ({a.stations} stations, {a.dumps} dumps), grid {G}^2, "
          f"{planes} w-planes, supports {support.min()}..{support.max()}")

    with portkern.Context(a.backend) as ctx:
        t0 = time.perf_counter()
        grid, norm, skipped, info = ctx.grid(
            uu.astype(np.float32), vv.astype(np.float32), ww.astype(np.float32),
            vis.astype(np.complex64), weight, kernels, support,
            oversample=os_, cell_size=cell, w_scale=w_scale, grid_size=G)
        t = time.perf_counter() - t0
    print(f"gridded on {info.backend}/{info.variant} in {t * 1e3:.1f} ms "
          f"(kernel {info.kernel_s * 1e3:.1f} ms), norm {norm:.6g}, {skipped} skipped")

    # The dirty image: the inverse FFT of the grid (u was negated on the grid, so pixel x
    # grows towards -l: east to the left, as sky images are drawn), the taper divided out
    # (grid correction) and scaled to flux by the sum of the weighted kernels (norm).
    image = np.fft.fftshift(np.fft.ifft2(np.fft.ifftshift(grid))).real * G * G / norm
    pix = (np.arange(G) - G // 2) * cell            # pixel (y, x) <-> (m, l) = (pix[y], -pix[x])
    image /= gauss_taper(pix, fov)[:, None] * gauss_taper(pix, fov)[None, :]
    for S, l, m in sources:
        x, y = G // 2 - int(round(l / cell)), G // 2 + int(round(m / cell))
        win = image[y - 3:y + 4, x - 3:x + 4]
        print(f"source S = {S:.1f} at (l, m) = ({l:+.3f}, {m:+.3f}): image peak {win.max():.3f} "
              f"within 3 pixels")
    return image, cell, G, info, uu.size


if __name__ == "__main__":
    main()
