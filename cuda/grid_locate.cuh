/* grid_locate.cuh - the gridder's per-visibility geometry in device code (docs/KERNELS.md
 * 1.2), shared by cuda/grid.cu and cuda/degrid.cu (degridding is gridding's adjoint: the same
 * cells, planes, offsets and skips).  Self-contained device code: no library calls, no warp
 * intrinsics (the emulation compiles it for the host). */
#ifndef PK_CUDA_GRID_LOCATE_CUH
#define PK_CUDA_GRID_LOCATE_CUH

/* What a plan's kernels share (passed by value). */
struct gr_geom {
    int g, os, num_planes;
    float grid_scale, w_scale;
    int u_origin, v_origin, th; /* tile lattice: tile column of cell u is (u - u_origin) / 32 */
    int ctu, ctv;               /* the centre tile */
};

/* pk_gr_locate in device arithmetic: _rn intrinsics so that nothing is contracted into an
 * FMA, C roundf (halves away from zero), correctly rounded sqrt. */
__device__ __forceinline__ int gr_locate(const gr_geom &q, const int *support, float uu, float vv,
                                         float ww, float vre, float vim, float wt, int &w, int &s,
                                         int &gu, int &gv, int &ou, int &ov)
{
    if (!isfinite(uu) || !isfinite(vv) || !isfinite(ww) || !isfinite(vre) || !isfinite(vim) ||
        !isfinite(wt))
        return 1;
    const float pos_u = __fmul_rn(-uu, q.grid_scale), pos_v = __fmul_rn(vv, q.grid_scale);
    const float ru = roundf(pos_u), rv = roundf(pos_v);
    if (!(fabsf(ru) <= (float)q.g) || !(fabsf(rv) <= (float)q.g)) return 1;
    const float wf = roundf(__fsqrt_rn(fabsf(__fmul_rn(ww, q.w_scale))));
    w = wf < (float)(q.num_planes - 1) ? (int)wf : q.num_planes - 1;
    s = support[w];
    gu = (int)ru + q.g / 2;
    gv = (int)rv + q.g / 2;
    if (gu - s < 0 || gu + s >= q.g || gv - s < 0 || gv + s >= q.g) return 1;
    ou = (int)roundf(__fmul_rn(__fsub_rn(ru, pos_u), (float)q.os));
    ov = (int)roundf(__fmul_rn(__fsub_rn(rv, pos_v), (float)q.os));
    return 0;
}

#endif /* PK_CUDA_GRID_LOCATE_CUH */
