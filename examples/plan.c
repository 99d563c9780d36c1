/* plan.c - a plan made once and used on several inputs: a series of image frames convolved
 * with one PSF (conv2d, the StrayLight correction), each result checked against the serial
 * reference.
 *
 *   usage: plan [BACKEND [FRAMES]]
 *          BACKEND: auto (default), serial, openmp, opencl or cuda
 *          FRAMES:  number of frames (default 4)
 *
 * A plan fixes the sizes, the backend and variant, and keeps the PSF (and, for the FFT
 * variants, its transform) on the device; per frame only the image goes up and the result
 * comes down.  Plans of the other kernels work the same way: create, then upload / run /
 * download as often as needed, then destroy.  Exit status 0 when every frame matches.
 *
 * Build against an installed portkern:
 *   cc -std=c99 plan.c $(pkg-config --cflags --libs portkern) -o plan
 *
 * The "1..N" and "ok N - ..." lines are TAP, read by `make check`, which runs this program
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
            fprintf(stderr, "plan: %s: %s (%s)\n  %s\n", #call, pk_strerror(st_),          \
                    pk_status_name(st_), pk_last_error());                                  \
            goto done;                                                                      \
        }                                                                                   \
    } while (0)

enum { H = 128, W = 160, KH = 11, KW = 11 };

/* A triangle wave in [0, 1] of the given period: smooth-looking test data without libm. */
static float ramp(int k, int period)
{
    int d = k % period - period / 2;
    return (float)(d < 0 ? -d : d) / (float)(period / 2);
}

/* Frame t: a smooth positive background that drifts with t and a point source moving
 * across the image (positive O(1) data, as in the StrayLight frames). */
static void make_frame(int t, float *image)
{
    for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j)
            image[(size_t)i * W + j] = 1.0f + 0.3f * ramp(i + 5 * t, 64) * ramp(j + 3 * t, 80);
    image[(size_t)((17 * t + 30) % H) * W + (29 * t + 40) % W] += 6.0f;
}

/* A PSF summing to 1: a binomial core (a discrete Gaussian) and a faint flat halo. */
static void make_psf(float *psf)
{
    static const float row[11] = {1, 10, 45, 120, 210, 252, 210, 120, 45, 10, 1}; /* sum 1024 */
    for (int k = 0; k < KH; ++k)
        for (int l = 0; l < KW; ++l)
            psf[k * KW + l] = 0.9f * row[k] * row[l] / (1024.0f * 1024.0f) + 0.1f / (KH * KW);
}

int main(int argc, char **argv)
{
    const char *backend_name = argc > 1 ? argv[1] : "auto";
    int frames = argc > 2 ? atoi(argv[2]) : 4;
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_conv2d_plan *plan = NULL;
    pk_conv2d_params p = {H, W, KH, KW, PK_CONV2D_AUTO}; /* h, w, kh, kw, method */
    pk_run_info info;
    float *image = NULL, *psf = NULL, *out = NULL, *ref = NULL;
    double kernel_s = 0;
    int passed = 0;

    if (frames < 1) {
        fprintf(stderr, "usage: plan [BACKEND [FRAMES >= 1]]\n");
        return 2;
    }
    printf("portkern %s\n1..%d\n", pk_version(), frames);

    image = malloc((size_t)H * W * sizeof *image);
    out = malloc((size_t)H * W * sizeof *out);
    ref = malloc((size_t)H * W * sizeof *ref);
    psf = malloc((size_t)KH * KW * sizeof *psf);
    if (!image || !out || !ref || !psf) {
        fprintf(stderr, "plan: out of memory\n");
        goto done;
    }
    make_psf(psf);

    pk_context_options_init(&opt);
    CHECK(pk_backend_from_name(backend_name, &opt.backend));
    CHECK(pk_context_create(&ctx, &opt));

    /* The plan: sizes, PSF and variant (NULL: the backend's choice for p.method) are fixed
     * here; the PSF is uploaded once.  With the auto backend the choice is made now, once,
     * and info says which backend and variant the plan will use. */
    CHECK(pk_conv2d_plan_create(&plan, ctx, &p, NULL, psf, &info));
    printf("plan: %d x %d frames, %d x %d PSF, on %s device %d (%s), variant %s\n", H, W, KH,
           KW, pk_backend_name(info.backend), info.device, info.device_name, info.variant);
    printf("  setup %.3f ms; reason: %s\n", 1e3 * info.setup_s, info.reason);

    for (int t = 0; t < frames; ++t) {
        pk_diff_report rep;
        pk_status s;

        make_frame(t, image);
        CHECK(pk_conv2d_plan_upload(plan, image)); /* host -> device */
        CHECK(pk_conv2d_plan_run(plan, &info));    /* on the device */
        CHECK(pk_conv2d_plan_download(plan, out)); /* device -> host */
        kernel_s += info.kernel_s;

        /* The serial reference of the same frame, and the element-wise differ
         * (rtol 1e-5, zero threshold 1e-10: docs/KERNELS.md sections 5 and 6). */
        CHECK(pk_conv2d_reference(&p, image, psf, ref));
        s = pk_diff_f32(out, ref, (size_t)H * W, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
        if (s != PK_OK && s != PK_EMISMATCH) { /* PK_EMISMATCH: compared, and they differ */
            fprintf(stderr, "plan: pk_diff_f32: %s\n  %s\n", pk_strerror(s), pk_last_error());
            goto done;
        }
        printf("%s %d - frame %d: kernel %.3f ms, %s the reference (max rel err %.2g)\n",
               s == PK_OK ? "ok" : "not ok", t + 1, t, 1e3 * info.kernel_s,
               s == PK_OK ? "matches" : "DIFFERS FROM", rep.max_rel_err);
        passed += s == PK_OK;
    }
    printf("%d frames, %.3f ms of kernel time per frame\n", frames, 1e3 * kernel_s / frames);

done:
    pk_conv2d_plan_destroy(plan); /* before its context */
    pk_context_destroy(ctx);
    free(image);
    free(psf);
    free(out);
    free(ref);
    return passed == frames ? 0 : 1;
}
