/* PLACEHOLDER - replaced by the real unrolled and simd pass kernels. */
#include "magicfilter3d_host.h"

void pk_mf_pass_unrolled(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                         long d0, long d1)
{
    pk_mf_pass_serial(p, g, src, dst, d0, d1);
}

void pk_mf_pass_simd(const pk_mf_pass *p, const double *g, const double *src, double *dst,
                     long d0, long d1)
{
    pk_mf_pass_serial(p, g, src, dst, d0, d1);
}

const char *pk_mf_simd_isa(void) { return "generic"; }
