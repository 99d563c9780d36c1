/* c_loop.c - the C side of python/bench/overhead.py: the same tiny calls as the Python
 * benchmark, timed in a loop in C (seconds per call, best of 5 batches).
 *   cc c_loop.c $(pkg-config --cflags --libs portkern) -o c_loop   (or -I lib -L _build/.libs)
 *   ./c_loop BACKEND N */
#include <portkern.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define BEST(label, expr)                                                                      \
    do {                                                                                       \
        double best = 1e30;                                                                    \
        for (int b = 0; b < 5; ++b) {                                                          \
            double t0 = now();                                                                 \
            for (int i = 0; i < n; ++i)                                                        \
                if ((expr) != PK_OK) {                                                         \
                    fprintf(stderr, "%s: %s\n", label, pk_last_error());                       \
                    return 1;                                                                  \
                }                                                                              \
            double t = (now() - t0) / n;                                                       \
            if (t < best) best = t;                                                            \
        }                                                                                      \
        printf("%s %.3f\n", label, best * 1e6);                                                \
    } while (0)

int main(int argc, char **argv)
{
    const char *bname = argc > 1 ? argv[1] : "serial";
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    pk_context_options o;
    pk_context_options_init(&o);
    o.flags |= PK_OPT_IGNORE_ENV;
    if (pk_backend_from_name(bname, &o.backend) != PK_OK) return 2;
    pk_context *ctx;
    if (pk_context_create(&ctx, &o) != PK_OK) return 1;
    pk_run_info info;
    /* the same tiny problems as overhead.py */
    static float f[2 * 2 * 2], im[4 * 4], psf[1], out[4 * 4];
    static double u[18], psi[24], chi[24];
    for (int i = 0; i < 8; ++i) f[i] = 1;
    for (int i = 0; i < 16; ++i) im[i] = 1;
    psf[0] = 1;
    pk_lqcd_random_su3(1, 1, u);
    pk_lqcd_random_complex(2, 12, psi);
    pk_diffusion3d_params dp;
    pk_diffusion3d_params_default(&dp, 2, 2, 2, 1);
    pk_conv2d_params cp = {4, 4, 1, 1, PK_CONV2D_DIRECT};
    pk_su3_params sp = {1, PK_SU3_AOS, 0};
    pk_diffusion3d_plan *plan;
    if (pk_diffusion3d_plan_create(&plan, ctx, &dp, NULL, &info) != PK_OK) return 1;
    printf("# microseconds per call, backend %s, best of 5 x %d calls\n", bname, n);
    BEST("diffusion3d", pk_diffusion3d(ctx, &dp, NULL, f, &info));
    BEST("conv2d", pk_conv2d(ctx, &cp, NULL, im, psf, out, &info));
    BEST("su3", pk_su3(ctx, &sp, NULL, u, psi, chi, &info));
    BEST("diffusion3d_plan_execute", pk_diffusion3d_plan_execute(plan, f, 1, &info));
    pk_diffusion3d_plan_destroy(plan);
    pk_context_destroy(ctx);
    return 0;
}
