/* oneshot.c - one call of a kernel, on whatever backend portkern picks, checked against the
 * library's serial reference.
 *
 *   usage: oneshot [BACKEND]
 *          BACKEND: auto (default: the fastest usable, see README "Backends"), serial,
 *                   openmp, opencl or cuda
 *
 * It runs diffusion3d (20 steps of the 7-point stencil on a 48^3 cosine field) and conv2d
 * (a 96 x 128 image with a 9 x 9 PSF), prints which backend, device and variant ran, the
 * times of the call and why that backend was chosen, and compares each result with the serial
 * reference using the library's differ.  Exit status 0 when both match, 1 otherwise.
 *
 * Build against an installed portkern:
 *   cc -std=c99 oneshot.c $(pkg-config --cflags --libs portkern) -o oneshot
 *
 * The "1..2" and "ok N - ..." lines are TAP, read by `make check`, which runs this program
 * as a test; they are also a readable verdict.
 */
#include <portkern.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every portkern call returns a pk_status; on failure pk_last_error() says which argument
 * or which device call failed.  CHECK prints both and jumps to the clean-up. */
#define CHECK(call)                                                                         \
    do {                                                                                    \
        pk_status st_ = (call);                                                             \
        if (st_ != PK_OK) {                                                                 \
            fflush(stdout); /* what was printed so far first */                            \
            fprintf(stderr, "oneshot: %s: %s (%s)\n  %s\n", #call, pk_strerror(st_),       \
                    pk_status_name(st_), pk_last_error());                                  \
            goto done;                                                                      \
        }                                                                                   \
    } while (0)

/* What ran, where, how long it took and why (pk_run_info is filled by every kernel call). */
static void print_run_info(const pk_run_info *info)
{
    printf("  ran on:  %s device %d (%s), variant %s%s\n", pk_backend_name(info->backend),
           info->device, info->device_name, info->variant,
           info->fell_back ? " (after a fallback)" : "");
    printf("  times:   wall %.3f ms, of which kernel %.3f ms, transfer %.3f ms, "
           "setup %.3f ms\n",
           1e3 * info->wall_s, 1e3 * info->kernel_s, 1e3 * info->transfer_s,
           1e3 * info->setup_s);
    printf("  reason:  %s\n", info->reason);
}

/* Compare a result x with the reference y: element-wise, relative tolerance 1e-5, values
 * below 1e-10 on both sides ignored (docs/KERNELS.md section 6).  Returns 1 when equal. */
static int matches(int test, const char *what, const pk_run_info *info, const float *x,
                   const float *y, size_t n)
{
    pk_diff_report rep;
    pk_status s = pk_diff_f32(x, y, n, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) { /* PK_EMISMATCH: compared, and they differ */
        fprintf(stderr, "oneshot: pk_diff_f32: %s\n  %s\n", pk_strerror(s), pk_last_error());
        printf("not ok %d - %s: could not compare\n", test, what);
        return 0;
    }
    printf("%s %d - %s on %s/%s %s the serial reference (max rel err %.2g, %zu of %zu "
           "elements off)\n",
           s == PK_OK ? "ok" : "not ok", test, what, pk_backend_name(info->backend),
           info->variant, s == PK_OK ? "matches" : "DIFFERS FROM", rep.max_rel_err,
           rep.num_failed, rep.count);
    return s == PK_OK;
}

/* A triangle wave in [0, 1] of the given period: smooth-looking test data without libm. */
static float ramp(int k, int period)
{
    int d = k % period - period / 2;
    return (float)(d < 0 ? -d : d) / (float)(period / 2);
}

int main(int argc, char **argv)
{
    const char *backend_name = argc > 1 ? argv[1] : "auto";
    pk_context_options opt;
    pk_context *ctx = NULL;
    pk_run_info info;
    int passed = 0;

    /* diffusion3d data: f is float32 [nz][ny][nx], C order (x fastest). */
    enum { NX = 48, NY = 48, NZ = 48, STEPS = 20 };
    const size_t npts = (size_t)NX * NY * NZ;
    pk_diffusion3d_params dp;
    float *field = NULL, *field_ref = NULL;

    /* conv2d data: image and output float32 [h][w], PSF float32 [kh][kw]. */
    enum { H = 96, W = 128, KH = 9, KW = 9 };
    pk_conv2d_params cp = {H, W, KH, KW, PK_CONV2D_AUTO};
    float *image = NULL, *psf = NULL, *out = NULL, *out_ref = NULL;

    printf("portkern %s\n1..2\n", pk_version());

    /* 1. A context.  The options select the backend; with "auto" the library picks the
     *    fastest usable one per call (PORTKERN_BACKEND in the environment overrides auto). */
    pk_context_options_init(&opt);
    CHECK(pk_backend_from_name(backend_name, &opt.backend));
    CHECK(pk_context_create(&ctx, &opt));
    if (opt.backend != PK_BACKEND_AUTO) {
        const char *why;
        if (!pk_backend_available(ctx, opt.backend, &why)) {
            fflush(stdout);
            fprintf(stderr, "oneshot: backend %s cannot run here: %s\n", backend_name, why);
            goto done;
        }
    }

    /* 2. diffusion3d: the cosine initial field of docs/KERNELS.md and its default
     *    coefficients; the call updates the field in place. */
    field = malloc(npts * sizeof *field);
    field_ref = malloc(npts * sizeof *field_ref);
    if (!field || !field_ref) {
        fprintf(stderr, "oneshot: out of memory\n");
        goto done;
    }
    pk_diffusion3d_params_default(&dp, NX, NY, NZ, STEPS);
    CHECK(pk_diffusion3d_field(NX, NY, NZ, 0.0, field));
    memcpy(field_ref, field, npts * sizeof *field);

    CHECK(pk_diffusion3d(ctx, &dp, NULL, field, &info)); /* NULL: the backend's best variant */
    printf("diffusion3d %d x %d x %d, %d steps:\n", NX, NY, NZ, STEPS);
    print_run_info(&info);

    CHECK(pk_diffusion3d_reference(&dp, field_ref)); /* the serial oracle, no context */
    passed += matches(1, "diffusion3d", &info, field, field_ref, npts);

    /* 3. conv2d: a smooth positive background with a few point sources, and a 9 x 9
     *    binomial PSF (a discrete Gaussian, summing to 1): the StrayLight setting, out = the
     *    image correlated with the PSF, periodic borders.  PK_CONV2D_AUTO picks direct or FFT
     *    by the PSF size. */
    image = malloc((size_t)H * W * sizeof *image);
    out = malloc((size_t)H * W * sizeof *out);
    out_ref = malloc((size_t)H * W * sizeof *out_ref);
    psf = malloc((size_t)KH * KW * sizeof *psf);
    if (!image || !out || !out_ref || !psf) {
        fprintf(stderr, "oneshot: out of memory\n");
        goto done;
    }
    for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j)
            image[(size_t)i * W + j] = 1.0f + 0.5f * ramp(i, 48) * ramp(j, 64);
    image[10 * W + 20] += 5.0f;
    image[50 * W + 100] += 3.0f;
    image[90 * W + 5] += 4.0f;
    {
        static const float row[9] = {1, 8, 28, 56, 70, 56, 28, 8, 1}; /* KH = KW = 9; sum 256 */
        for (int k = 0; k < KH; ++k)
            for (int l = 0; l < KW; ++l)
                psf[k * KW + l] = row[k] * row[l] / 65536.0f;
    }

    CHECK(pk_conv2d(ctx, &cp, NULL, image, psf, out, &info));
    printf("conv2d %d x %d image, %d x %d PSF:\n", H, W, KH, KW);
    print_run_info(&info);

    CHECK(pk_conv2d_reference(&cp, image, psf, out_ref)); /* double sums, rounded once */
    passed += matches(2, "conv2d", &info, out, out_ref, (size_t)H * W);

done:
    /* Everything is freed on every path; free(NULL) and pk_*_destroy(NULL) do nothing. */
    free(field);
    free(field_ref);
    free(image);
    free(psf);
    free(out);
    free(out_ref);
    pk_context_destroy(ctx);
    return passed == 2 ? 0 : 1;
}
