/* magicfilter3d.cl - one pass of the BigDFT magic filter (docs/KERNELS.md section 2): a 1-D
 * 16-tap convolution along the lines of src followed by a transposition,
 *     dst[j][d] = sum_{k<16} g[k] * src[d][j + k + off],   j < nout, d < ndat,
 * where src[d][t] wraps t modulo nin (PK_MF_BC 0, periodic; nin may be < 16 and wrap several
 * times), reads 0 outside [0, nin) (1, grow) or is always inside (2, shrink).  The library
 * runs this pass three times (x -> w1 -> w2 -> y), once per axis.
 *
 * Two kernels, chosen by the host per device type (PORTKERN_CL_MF_SCHEME=tile|vec):
 *
 * "tile" (GPUs and other devices): the design of Videau et al. and BigDFT's OpenCL magic
 * filter:
 *  - a work-group of 16 x 16 items owns a tile of 16 lines (d0 .. d0 + 15) x 16 outputs
 *    (j0 .. j0 + 15); local dimension 0 runs along d, dimension 1 along j;
 *  - the tile's input is 16 lines x 31 points (16 outputs + 15 of halo), held in a local
 *    buffer of 16 rows x 33 doubles: 32 loaded columns, the 33rd pads the row so that the
 *    16 items reading down a column (stride 33 doubles) hit 16 different banks;
 *  - each item loads two elements: the 256 items are numbered i = 16 ly + lx, item i loads
 *    column i % 32 of rows i / 32 and i / 32 + 8, so 32 consecutive items read 32
 *    consecutive points of one line (coalesced reads along the line);
 *  - after the barrier, item (lx, ly) computes output j0 + ly of line d0 + lx from row lx of
 *    the buffer and writes dst[j0 + ly][d0 + lx]: 16 consecutive items write 16 consecutive
 *    doubles (coalesced writes along d).  The transposition happens in local memory;
 *  - wrap-around, zero padding and bounds are handled at the load only; the global sizes
 *    are rounded up to multiples of 16 and out-of-range items load zeros / store nothing.
 *
 * "vec" (CPUs): PoCL runs the work-items of a group as loops; the tile kernel's local-memory
 * round trip, barrier and per-item scalar loads (PoCL vectorises neither phase well) make
 * it 3 to 4.5 times slower there than the following.  A work-item instead computes 16
 * consecutive outputs of one line as a double16 (16 unaligned vector loads straight from
 * the line, one FMA per tap) and stores them down a column of dst; see the kernel below.
 *
 * In both, the taps are compiled in as double literals (the decimal strings of BigDFT's
 * convrot_n_per, as in lib/ref/magicfilter3d_ref.c; the host checks that the plan's taps are
 * these), reversed for the transposed filter MFT, and each output is summed in tap order
 * k = 0 .. 15, as the reference does.
 *
 * Build options from the host:
 *   PK_MF_T    0: MF (g[k] = f_{k-8}), 1: MFT (g[k] = f_{7-k});
 *   PK_MF_BC   0 periodic, 1 grow, 2 shrink;
 *   PK_MF_VEC  0: the tile kernel, 1: the vector kernel;
 *   PK_IDX     int, or long when an array or a line count does not fit int.
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* a * b + c may become one FMA where the device has it. */
#pragma OPENCL FP_CONTRACT ON

#ifndef PK_IDX
#define PK_IDX int
#endif
typedef PK_IDX pk_idx;

#define PK_MF_TILE 16  /* lines and outputs per work-group */
#define PK_MF_PITCH 33 /* doubles per local row: 32 loaded + 1 against bank conflicts */

/* f_{-8} .. f_{7} */
#define PK_F0 8.4334247333529341094733325815816e-7
#define PK_F1 -0.1290557201342060969516786758559028e-4
#define PK_F2 0.8762984476210559564689161894116397e-4
#define PK_F3 -0.30158038132690463167163703826169879e-3
#define PK_F4 0.174723713672993903449447812749852942e-2
#define PK_F5 -0.942047030201080385922711540948195075e-2
#define PK_F6 0.2373821463724942397566389712597274535e-1
#define PK_F7 0.612625895831207982195380597e-1
#define PK_F8 0.9940415697834003993178616713
#define PK_F9 -0.604895289196983516002834636e-1
#define PK_F10 -0.2103025160930381434955489412839065067e-1
#define PK_F11 0.1337263414854794752733423467013220997e-1
#define PK_F12 -0.344128144493493857280881509686821861e-2
#define PK_F13 0.49443227688689919192282259476750972e-3
#define PK_F14 -0.5185986881173432922848639136911487e-4
#define PK_F15 2.72734492911979659657715313017228e-6

/* The taps in pass order. */
#if PK_MF_T
#define PK_G0 PK_F15
#define PK_G1 PK_F14
#define PK_G2 PK_F13
#define PK_G3 PK_F12
#define PK_G4 PK_F11
#define PK_G5 PK_F10
#define PK_G6 PK_F9
#define PK_G7 PK_F8
#define PK_G8 PK_F7
#define PK_G9 PK_F6
#define PK_G10 PK_F5
#define PK_G11 PK_F4
#define PK_G12 PK_F3
#define PK_G13 PK_F2
#define PK_G14 PK_F1
#define PK_G15 PK_F0
#else
#define PK_G0 PK_F0
#define PK_G1 PK_F1
#define PK_G2 PK_F2
#define PK_G3 PK_F3
#define PK_G4 PK_F4
#define PK_G5 PK_F5
#define PK_G6 PK_F6
#define PK_G7 PK_F7
#define PK_G8 PK_F8
#define PK_G9 PK_F9
#define PK_G10 PK_F10
#define PK_G11 PK_F11
#define PK_G12 PK_F12
#define PK_G13 PK_F13
#define PK_G14 PK_F14
#define PK_G15 PK_F15
#endif

/* Point t of a line of nin points. */
double pk_mf_at(__global const double *restrict line, int t, int nin)
{
#if PK_MF_BC == 0
    if ((uint)t >= (uint)nin) { /* only near the ends: true modulo, any number of wraps */
        t %= nin;
        if (t < 0) t += nin;
    }
    return line[t];
#else
    return t >= 0 && t < nin ? line[t] : 0.0;
#endif
}

#if !PK_MF_VEC
/* The tile kernel (GPUs): NDRange (round_up(ndat, 16), round_up(nout, 16)), work-groups of
 * 16 x 16. */
__kernel __attribute__((reqd_work_group_size(PK_MF_TILE, PK_MF_TILE, 1)))
void pk_mf_pass(__global const double *restrict src, __global double *restrict dst,
                int nin, int nout, pk_idx ndat, int off)
{
    __local double tile[PK_MF_TILE * PK_MF_PITCH];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const pk_idx d0 = (pk_idx)get_group_id(0) * PK_MF_TILE;
    const int j0 = (int)get_group_id(1) * PK_MF_TILE;

    /* Load: item i = 16 ly + lx fills column c of rows r and r + 8. */
    const int i = ly * PK_MF_TILE + lx, c = i & 31, r = i >> 5;
    const int t = j0 + off + c;
    for (int h = 0; h < 2; ++h) {
        const int row = r + 8 * h;
        const pk_idx d = d0 + row;
        double v = 0.0;
        if (d < ndat) v = pk_mf_at(src + d * nin, t, nin);
        tile[row * PK_MF_PITCH + c] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Output j0 + ly of line d0 + lx: taps k read row lx, columns ly .. ly + 15. */
    __local const double *p = tile + lx * PK_MF_PITCH + ly;
    double s = PK_G0 * p[0];
    s = PK_G1 * p[1] + s;
    s = PK_G2 * p[2] + s;
    s = PK_G3 * p[3] + s;
    s = PK_G4 * p[4] + s;
    s = PK_G5 * p[5] + s;
    s = PK_G6 * p[6] + s;
    s = PK_G7 * p[7] + s;
    s = PK_G8 * p[8] + s;
    s = PK_G9 * p[9] + s;
    s = PK_G10 * p[10] + s;
    s = PK_G11 * p[11] + s;
    s = PK_G12 * p[12] + s;
    s = PK_G13 * p[13] + s;
    s = PK_G14 * p[14] + s;
    s = PK_G15 * p[15] + s;

    const pk_idx d = d0 + lx;
    const int j = j0 + ly;
    if (d < ndat && j < nout) dst[(pk_idx)j * ndat + d] = s;
}

#else
/* The vector kernel (CPUs): NDRange (ceil(nout / 16), round_up(ndat, 16)), work-groups of
 * 1 x 16.  Work-item (J, d) computes the 16 outputs j0 = 16 J .. j0 + 15 of line d as one
 * double16, from 16 unaligned vector loads of the line (interior tiles) or of a private
 * copy of the 31-point window (tiles that wrap or leave the line), and stores them down
 * column d of dst.  The j tiles run fastest, so the 16 lines of a work-group stay in the
 * cache from one work-group to the next, and the 16 items of a group fill the same
 * 16-double runs of dst. */
#define PK_MF_SUM(q)                                                                          \
    s = PK_G0 * vload16(0, (q));                                                              \
    s = PK_G1 * vload16(0, (q) + 1) + s;                                                      \
    s = PK_G2 * vload16(0, (q) + 2) + s;                                                      \
    s = PK_G3 * vload16(0, (q) + 3) + s;                                                      \
    s = PK_G4 * vload16(0, (q) + 4) + s;                                                      \
    s = PK_G5 * vload16(0, (q) + 5) + s;                                                      \
    s = PK_G6 * vload16(0, (q) + 6) + s;                                                      \
    s = PK_G7 * vload16(0, (q) + 7) + s;                                                      \
    s = PK_G8 * vload16(0, (q) + 8) + s;                                                      \
    s = PK_G9 * vload16(0, (q) + 9) + s;                                                      \
    s = PK_G10 * vload16(0, (q) + 10) + s;                                                    \
    s = PK_G11 * vload16(0, (q) + 11) + s;                                                    \
    s = PK_G12 * vload16(0, (q) + 12) + s;                                                    \
    s = PK_G13 * vload16(0, (q) + 13) + s;                                                    \
    s = PK_G14 * vload16(0, (q) + 14) + s;                                                    \
    s = PK_G15 * vload16(0, (q) + 15) + s

__kernel __attribute__((reqd_work_group_size(1, PK_MF_TILE, 1)))
void pk_mf_pass(__global const double *restrict src, __global double *restrict dst,
                int nin, int nout, pk_idx ndat, int off)
{
    const pk_idx d = (pk_idx)get_global_id(1);
    if (d >= ndat) return;
    const int j0 = (int)get_group_id(0) * PK_MF_TILE;
    const int t0 = j0 + off;
    __global const double *line = src + d * nin;
    double16 s;
    if (t0 >= 0 && t0 + 31 <= nin) {
        __global const double *q = line + t0;
        PK_MF_SUM(q);
    } else {
        /* The window w[c] = line[t0 + c] with the boundary condition, copied in contiguous
         * runs (no per-point modulo, no gathers). */
        double w[32];
#if PK_MF_BC == 0
        if (nin >= 32) { /* at most one wrap: [b, nin) then [0, ...) */
            int b = t0 % nin;
            if (b < 0) b += nin;
            const int n1 = min(32, nin - b);
            for (int c = 0; c < n1; ++c) w[c] = line[b + c];
            for (int c = n1; c < 32; ++c) w[c] = line[c - n1];
        } else {
            for (int c = 0; c < 32; ++c) w[c] = pk_mf_at(line, t0 + c, nin);
        }
#else
        const int lo = clamp(-t0, 0, 32), hi = clamp(nin - t0, 0, 32); /* inside: [lo, hi) */
        for (int c = 0; c < lo; ++c) w[c] = 0.0;
        for (int c = lo; c < hi; ++c) w[c] = line[t0 + c];
        for (int c = hi; c < 32; ++c) w[c] = 0.0;
#endif
        PK_MF_SUM(w);
    }
    double o[PK_MF_TILE];
    vstore16(s, 0, o);
    const int m_end = min(PK_MF_TILE, nout - j0);
    __global double *out = dst + (pk_idx)j0 * ndat + d;
    for (int m = 0; m < m_end; ++m) out[(pk_idx)m * ndat] = o[m];
}
#endif
