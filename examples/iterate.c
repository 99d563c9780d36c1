/* iterate.c - device-resident iteration: the field is uploaded once, stepped in several
 * batches without coming back to the host, and downloaded once at the end (diffusion3d, the
 * 7-point diffusion stencil).  The result is compared with the serial reference run for the
 * same total number of steps.
 *
 *   usage: iterate [BACKEND [N [BATCHES [STEPS]]]]
 *          BACKEND: auto (default), serial, openmp, opencl or cuda
 *          N:       field edge, the field is N^3 (default 64)
 *          BATCHES x STEPS: steps run, in plan_run calls of STEPS steps (default 4 x 25)
 *
 * Between batches the field stays on the device; the host may do its own work, decide
 * whether to go on, or take a snapshot with plan_download (the plan can run on after it).
 * The comparison uses the element-wise tolerance of docs/KERNELS.md section 3 (rtol 1e-5),
 * stated there for up to 100 steps.  Exit status 0 when the result matches.
 *
 * Build against an installed portkern:
 *   cc -std=c99 iterate.c $(pkg-config --cflags --libs portkern) -o iterate
 *
 * The "1..1" and "ok 1 - ..." lines are TAP, read by `make check`, which runs this program
 * as a test.
 */
#include <portkern.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        pk_status st_ = (call);                                                             \
        if (st_ != PK_OK) {                                                                 \
            fflush(stdout); /* what was printed so far first */                            \
            fprintf(stderr, "iterate: %s: %s (%s)\n  %s\n", #call, pk_strerror(st_),       \
                    pk_status_name(st_), pk_last_error());                                  \
            goto done;                                                                      \
        }                                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    const char *backend_name = argc > 1 ? argv[1] : "auto";
    int n = argc > 2 ? atoi(argv[2]) : 64;
    int batches = argc > 3 ? atoi(argv[3]) : 4;
    int steps = argc > 4 ? atoi(argv[4]) : 25;
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_diffusion3d_plan *plan = NULL;
    pk_diffusion3d_params p;
    pk_run_info info;
    pk_diff_report rep;
    pk_status s;
    float *field = NULL, *ref = NULL;
    size_t npts;
    double kernel_s = 0, wall_s = 0, first_s = 0;
    int total, passed = 0;

    if (n < 1 || n > 2048 || batches < 1 || steps < 0 || (long long)batches * steps > 1000000) {
        fprintf(stderr, "usage: iterate [BACKEND [N [BATCHES [STEPS]]]]\n"
                        "  1 <= N <= 2048, BATCHES >= 1, STEPS >= 0, BATCHES x STEPS <= 1e6\n");
        return 2;
    }
    total = batches * steps;
    npts = (size_t)n * n * n;
    printf("portkern %s\n1..1\n", pk_version());

    field = malloc(npts * sizeof *field);
    ref = malloc(npts * sizeof *ref);
    if (!field || !ref) {
        fprintf(stderr, "iterate: out of memory for a %d^3 field\n", n);
        goto done;
    }
    /* The cosine initial field and default coefficients of docs/KERNELS.md; p.count is the
     * total, for the reference run below (plan_run takes its own count). */
    pk_diffusion3d_params_default(&p, n, n, n, total);
    CHECK(pk_diffusion3d_field(n, n, n, 0.0, field));
    memcpy(ref, field, npts * sizeof *ref);

    pk_context_options_init(&opt);
    CHECK(pk_backend_from_name(backend_name, &opt.backend));
    CHECK(pk_context_create(&ctx, &opt));

    /* Plan: backend, device and variant are chosen once (NULL: the backend's best). */
    CHECK(pk_diffusion3d_plan_create(&plan, ctx, &p, NULL, &info));
    printf("plan: %d^3 field on %s device %d (%s), variant %s\n  reason: %s\n", n,
           pk_backend_name(info.backend), info.device, info.device_name, info.variant,
           info.reason);

    CHECK(pk_diffusion3d_plan_upload(plan, field)); /* once */
    for (int b = 0; b < batches; ++b) {
        CHECK(pk_diffusion3d_plan_run(plan, steps, &info)); /* no host copies */
        kernel_s += info.kernel_s;
        wall_s += info.wall_s;
        if (b == 0)
            first_s = info.kernel_s;
        printf("  batch %d: %d steps, kernel %.3f ms\n", b + 1, steps, 1e3 * info.kernel_s);
    }
    CHECK(pk_diffusion3d_plan_download(plan, field)); /* once */

    if (total > 0)
        printf("%d steps: %.4f ms per step (kernel), %.4f ms per step (plan_run wall), "
               "%.2f Gpoints/s\n",
               total, 1e3 * kernel_s / total, 1e3 * wall_s / total,
               kernel_s > 0 ? (double)npts * total / kernel_s * 1e-9 : 0.0);
    /* The first run can carry one-time costs (PoCL, for one, compiles a kernel at its first
     * launch); the later batches show the steady state. */
    if (batches > 1 && steps > 0)
        printf("  after the first batch: %.4f ms per step (kernel)\n",
               1e3 * (kernel_s - first_s) / (total - steps));

    /* The serial reference, all steps in one call, and the element-wise differ. */
    CHECK(pk_diffusion3d_reference(&p, ref));
    s = pk_diff_f32(field, ref, npts, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) { /* PK_EMISMATCH: compared, and they differ */
        fprintf(stderr, "iterate: pk_diff_f32: %s\n  %s\n", pk_strerror(s), pk_last_error());
        goto done;
    }
    printf("%s 1 - %d x %d steps on %s/%s %s the serial reference's %d steps "
           "(max rel err %.2g)\n",
           s == PK_OK ? "ok" : "not ok", batches, steps, pk_backend_name(info.backend),
           info.variant, s == PK_OK ? "match" : "DIFFER FROM", total, rep.max_rel_err);
    passed = s == PK_OK;

done:
    pk_diffusion3d_plan_destroy(plan); /* before its context */
    pk_context_destroy(ctx);
    free(field);
    free(ref);
    return passed ? 0 : 1;
}
