"""NumPy formulas of the seven kernels, written from docs/KERNELS.md, independently of the C
references (lib/ref/): the stencils with np.roll / np.pad, conv2d as the periodic wrap sum,
su3 by einsum, dslash from the gamma matrices, the magic filter from the taps as printed in
the docs, grid as a loop over visibilities.  All accumulate in float64, so against them a
backend's error is its own error bound alone (the "one implementation" bounds of the docs).
"""
import numpy as np

U32 = 2.0 ** -24  # unit roundoff, float
U64 = 2.0 ** -53  # unit roundoff, double


def gamma(n, u):
    return n * u / (1 - n * u)


# ---- diffusion3d (section 3) -------------------------------------------------------------
COEF_NAMES = ("cc", "cw", "ce", "cs", "cn", "cb", "ct")


def diffusion3d(f, count, coefs):
    """count steps of the 7-point stencil with zero-flux walls (a neighbour outside the field
    is the point itself: edge padding), coefficients as applied (rounded to float)."""
    cc, cw, ce, cs, cn, cb, ct = (float(np.float32(coefs[k])) for k in COEF_NAMES)
    g = f.astype(np.float64)
    for _ in range(count):
        p = np.pad(g, 1, mode="edge")
        g = (cc * g
             + cw * p[1:-1, 1:-1, :-2] + ce * p[1:-1, 1:-1, 2:]    # x - 1, x + 1
             + cn * p[1:-1, :-2, 1:-1] + cs * p[1:-1, 2:, 1:-1]    # y - 1, y + 1
             + cb * p[:-2, 1:-1, 1:-1] + ct * p[2:, 1:-1, 1:-1])   # z - 1, z + 1
    return g


def diffusion3d_atol(f0, count):
    """Section 3: |f_n - exact_n| <= 8 n 2^-24 max|f_0| per element (non-negative
    coefficients summing to 1)."""
    return 8 * count * U32 * float(np.max(np.abs(f0)))


# ---- conv2d (section 5) ------------------------------------------------------------------
def conv2d(image, psf):
    """out[(i + kh/2) % h][(j + kw/2) % w] = sum_{k,l} image[(i+k) % h][(j+l) % w] psf[k][l]."""
    kh, kw = psf.shape
    im = image.astype(np.float64)
    acc = np.zeros_like(im)
    for k in range(kh):
        for l in range(kw):
            acc += float(psf[k, l]) * np.roll(im, (-k, -l), axis=(0, 1))
    return np.roll(acc, (kh // 2, kw // 2), axis=(0, 1))


# ---- magicfilter3d (section 2) -----------------------------------------------------------
# f_-8 .. f_7 as printed in docs/KERNELS.md section 2.
TAPS = np.array([float(s) for s in """
8.4334247333529341094733325815816e-7
-0.1290557201342060969516786758559028e-4
0.8762984476210559564689161894116397e-4
-0.30158038132690463167163703826169879e-3
0.174723713672993903449447812749852942e-2
-0.942047030201080385922711540948195075e-2
0.2373821463724942397566389712597274535e-1
0.612625895831207982195380597e-1
0.9940415697834003993178616713
-0.604895289196983516002834636e-1
-0.2103025160930381434955489412839065067e-1
0.1337263414854794752733423467013220997e-1
-0.344128144493493857280881509686821861e-2
0.49443227688689919192282259476750972e-3
-0.5185986881173432922848639136911487e-4
2.72734492911979659657715313017228e-6""".split()])


def _mf_axis(x, axis, transpose, bc):
    """One 1-D pass along `axis`."""
    x = np.moveaxis(x, axis, -1)
    n_in = x.shape[-1]
    if not transpose:   # MF: y(i) = sum_{l=-8..7} f_l x(i + l)
        ls, taps = np.arange(-8, 8), TAPS
    else:               # MFT: y(i) = sum_{l=-7..8} f_{-l} x(i + l)
        ls, taps = np.arange(-7, 9), TAPS[::-1]
    if bc == "periodic":
        n = n_in
        y = sum(t * np.roll(x, -l, axis=-1) for l, t in zip(ls, taps))
    elif bc == "grow":  # output n + 15, output j is the sum at i = j - 7 (MF) / j - 8 (MFT)
        n = n_in + 15
        shift = 7 if not transpose else 8
        xp = np.concatenate([np.zeros(x.shape[:-1] + (16,)), x, np.zeros(x.shape[:-1] + (16,))], -1)
        j = np.arange(n)
        y = sum(t * xp[..., j - shift + l + 16] for l, t in zip(ls, taps))
    else:               # shrink: output n, output i at input i + 8 (MF) / i + 7 (MFT)
        n = n_in - 15
        shift = 8 if not transpose else 7
        i = np.arange(n)
        y = sum(t * x[..., i + shift + l] for l, t in zip(ls, taps))
    return np.moveaxis(y, -1, axis)


def magicfilter3d(x, transpose=False, bc="periodic"):
    y = x.astype(np.float64)
    for axis in (2, 1, 0):
        y = _mf_axis(y, axis, transpose, bc)
    return y


MF_ATOL = 1e-13  # section 2: absolute, on O(1) data (|x| <= 1.5)


# ---- laplace2d (section 4a) --------------------------------------------------------------
def laplace2d(phi, sigma, count):
    """The linear map T of section 4a (rounded a and inv, exact arithmetic otherwise)."""
    a = float(np.float32(sigma))
    inv = float(np.float32(1.0 / (1.0 + 4.0 * a)))
    g = phi.astype(np.float64)
    for _ in range(count):
        g = (g + a * ((np.roll(g, -1, 1) + np.roll(g, 1, 1)) + (np.roll(g, 1, 0) + np.roll(g, -1, 0)))) * inv
    return g


def laplace2d_atol(phi0, sigma, count):
    """Section 4a, one implementation against T^k: k gamma_5 nu^k max|phi_0| (float)."""
    a = float(np.float32(sigma))
    inv = float(np.float32(1.0 / (1.0 + 4.0 * a)))
    nu = (1 + 4 * a) * inv
    return count * gamma(5, U32) * nu ** count * float(np.max(np.abs(phi0))) + 1e-12


# ---- su3 (section 4b) --------------------------------------------------------------------
def su3(u, psi):
    return np.einsum("scd,sdk->sck", u, psi)


SU3_REBUILD = {"aos": 0.0, "padded": 0.0, "vfo": 0.0, "hvfo": 0.0, "short": 10 * U64,
               "recon12": 10 * np.sqrt(3.0) * U64}


def su3_bound(psi, layout):
    """Per real part of chi[s][c][k]: (2 sqrt2 gamma_6 + R) |psi(s,.,k)|_2 (double)."""
    coef = 2 * np.sqrt(2.0) * gamma(6, U64) + SU3_REBUILD[layout]
    spin_norm = np.sqrt(np.sum(np.abs(psi) ** 2, axis=1))  # [nv, 4]
    return coef * spin_norm[:, None, :]                     # [nv, 1, 4] -> [nv, 3, 4]


# ---- dslash (section 4c) -----------------------------------------------------------------
I = 1j
GAMMA = [np.array(g, dtype=np.complex128) for g in (
    [[0, 0, 0, I], [0, 0, I, 0], [0, -I, 0, 0], [-I, 0, 0, 0]],   # x
    [[0, 0, 0, -1], [0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0]],   # y
    [[0, 0, I, 0], [0, 0, 0, -I], [-I, 0, 0, 0], [0, I, 0, 0]],   # z
    [[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]])]    # t
AXIS = (3, 2, 1, 0)  # mu = x, y, z, t -> lattice axis of [t, z, y, x]


def dslash(u, psi, kappa):
    """chi(n) = psi(n)/(2 kappa) + 1/2 sum_mu [(1 - g_mu) U_mu(n) psi(n + mu)
                                              + (1 + g_mu) U_mu(n - mu)^+ psi(n - mu)]."""
    one = np.eye(4)
    chi = psi / (2 * kappa)
    for mu in range(4):
        ax = AXIS[mu]
        fwd = np.einsum("...ab,...sb->...sa", u[mu], np.roll(psi, -1, axis=ax))
        ub = np.roll(u[mu], 1, axis=ax)
        bwd = np.einsum("...ba,...sb->...sa", ub.conj(), np.roll(psi, 1, axis=ax))
        chi = chi + 0.5 * (np.einsum("st,...tc->...sc", one - GAMMA[mu], fwd)
                           + np.einsum("st,...tc->...sc", one + GAMMA[mu], bwd))
    return chi


def dslash_rtol(psi, chi_ref, kappa):
    """Norm-wise: 2 gamma_24 (1/(2 kappa) + 39.2) ||psi||_2 / ||chi_ref||_2 (double)."""
    return (2 * gamma(24, U64) * (1 / (2 * kappa) + 39.2) * np.linalg.norm(psi)
            / np.linalg.norm(chi_ref))


# ---- grid (section 1) --------------------------------------------------------------------
def cround(x):
    """C round(): halves away from zero (exact for float32 values, done in double)."""
    x = float(x)
    return float(np.copysign(np.floor(abs(x) + 0.5), x))


def grid(uu, vv, ww, vis, weight, kernels, support, oversample, cell_size, w_scale, grid_size):
    """The loop of section 1.2, accumulating in double.  Returns (grid complex128, norm,
    num_skipped, N, A): N[y, x] footprints covering each cell and A[y, x] = sum |vis w|_1
    |c|_1 over them, for the bound gamma_{2N+8} A."""
    f32 = np.float32
    G, os_ = grid_size, oversample
    scale = f32(G * cell_size)
    wsf = f32(w_scale)
    centre = G // 2
    planes = len(support)
    out = np.zeros((G, G), np.complex128)
    N = np.zeros((G, G), np.int64)
    A = np.zeros((G, G))
    norm, skipped = 0.0, 0
    for i in range(len(uu)):
        v = vis[i]
        if not all(np.isfinite([uu[i], vv[i], ww[i], weight[i], v.real, v.imag])):
            skipped += 1
            continue
        pos_u = f32(-uu[i]) * scale
        pos_v = f32(vv[i]) * scale
        w = int(cround(np.sqrt(f32(abs(f32(ww[i]) * wsf)))))
        w = min(w, planes - 1)
        s = int(support[w])
        ru, rv = cround(pos_u), cround(pos_v)
        if abs(ru) > G or abs(rv) > G:
            skipped += 1
            continue
        gu, gv = int(ru) + centre, int(rv) + centre
        if gu - s < 0 or gu + s >= G or gv - s < 0 or gv + s >= G:
            skipped += 1
            continue
        off_u = int(cround(f32(f32(ru) - pos_u) * f32(os_)))
        off_v = int(cround(f32(f32(rv) - pos_v) * f32(os_)))
        j = np.arange(-s, s + 1)
        c = kernels[w][np.abs(off_v + j * os_)[:, None], np.abs(off_u + j * os_)[None, :]]
        c = c.astype(np.complex128)
        if ww[i] > 0:
            c = c.conj()
        a = np.complex64(v) * f32(weight[i])  # float, as the loop forms vis * weight
        out[gv - s:gv + s + 1, gu - s:gu + s + 1] += complex(a) * c
        norm += float(np.sum(c.real)) * float(weight[i])
        N[gv - s:gv + s + 1, gu - s:gu + s + 1] += 1
        A[gv - s:gv + s + 1, gu - s:gu + s + 1] += (abs(a.real) + abs(a.imag)) * (np.abs(c.real) + np.abs(c.imag))
    return out, norm, skipped, N, A


def grid_bound(N, A, k=1):
    """Section 1.5, per cell and component, after k runs of the set into one grid."""
    n = 2.0 * k * N + 8
    return n * U32 / (1 - n * U32) * k * A
