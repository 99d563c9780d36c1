/* test_mpi.c - libportkern-mpi's distributed plans against single-process runs; launched by
 * tests/test_mpi.sh under mpirun with 1 .. 4 ranks.
 *
 * Every rank computes the whole (small) problem alone with the same variant and compares its
 * slab of the distributed result: bitwise where the local kernel does the same arithmetic in
 * the same order (diffusion3d, the direct conv2d variants, su3), within docs/KERNELS.md 5's
 * tolerance for conv2d's FFT (another transform size).  grid: the visibilities split (block,
 * and uneven with rank 0 empty), the bands gathered and compared with the double reference
 * within docs/KERNELS.md 1.5's bound and with one process's grid (bitwise on one rank for the
 * deterministic variants).  Then the failures: more ranks than
 * planes, a bad parameter or a bad slab on one rank, a NULL array on one rank, a PSF that
 * differs: every rank must return the same failing status, and the plans made afterwards must
 * still work (no rank left behind in a collective).
 * Rank 0 prints one line per check, "PASS: ...", "FAIL: ..." or "SKIP: ...", each the verdict
 * of all ranks (MPI_Allreduce); the script turns them into TAP.  Exit status 0 when all pass. */
#include "portkern_mpi.h"
/* the grid suite's sets and its error bound (docs/KERNELS.md 1.5), reused for the distributed
 * gridder; the rest of that suite is not called here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gr_common.h"
#pragma GCC diagnostic pop

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks, failures;

static void check(int ok, const char *fmt, ...) {
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        printf("%s: [np %d] ", all ? "PASS" : "FAIL", nranks);
        vprintf(fmt, ap);
        printf("\n");
        fflush(stdout);
        va_end(ap);
    }
    if (!all)
        failures++;
}

static void skip(const char *why, const char *what) {
    if (rank == 0) {
        printf("SKIP: [np %d] %s (%s)\n", nranks, what, why);
        fflush(stdout);
    }
}

static pk_context *new_ctx(void) {
    pk_context_options o;
    pk_context_options_init(&o);
    o.threads = 1; /* up to 4 ranks share this machine's cores */
    o.flags = PK_OPT_IGNORE_ENV;
    pk_context *c = NULL;
    if (pk_context_create(&c, &o) != PK_OK) {
        fprintf(stderr, "rank %d: pk_context_create: %s\n", rank, pk_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return c;
}

/* Deterministic data in [0.5, 1.5) by index, the same on every rank. */
static float val(size_t i) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 12345;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return 0.5f + (float)(x & 0xFFFFFF) / 16777216.0f;
}

/* The variants of backends this build and machine have (serial and OpenMP: host memory). */
static int variants_of(pk_context *ctx, const char *(*list)(pk_backend_id), char names[][32],
                       int max) {
    int n = 0;
    pk_backend_id bs[2] = {PK_BACKEND_SERIAL, PK_BACKEND_OPENMP};
    for (int b = 0; b < 2; b++) {
        if (!pk_backend_available(ctx, bs[b], NULL))
            continue;
        const char *v = list(bs[b]);
        while (v && *v && n < max) {
            size_t k = strcspn(v, ",");
            snprintf(names[n], 32, "%.*s", (int)k, v);
            n++;
            v += k;
            if (*v == ',')
                v++;
        }
    }
    return n;
}

/* ---- diffusion3d ------------------------------------------------------------------------ */
static void d3_case(pk_context *ctx, const char *variant, int nx, int ny, int nz, int count,
                    int depth, int overlap, int custom) {
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, count);
    size_t plane = (size_t)nx * ny, n = plane * nz;
    float *full = malloc(n * sizeof *full);
    for (size_t i = 0; i < n; i++)
        full[i] = val(i);
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    o.depth = depth;
    o.overlap = overlap;
    if (custom) { /* one plane on every rank but the last, which holds the rest */
        o.i0 = rank;
        o.i1 = rank == nranks - 1 ? nz : rank + 1;
    }
    pk_mpi_diffusion3d_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, &info);
    int ok = st == PK_OK;
    float *slab = NULL;
    if (ok) {
        int L = info.i1 - info.i0;
        slab = malloc((size_t)L * plane * sizeof *slab);
        memcpy(slab, full + (size_t)info.i0 * plane, (size_t)L * plane * sizeof *slab);
        st = pk_mpi_diffusion3d_plan_execute(pl, slab, count, &info);
        ok = st == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: execute: %s\n", rank, pk_mpi_last_error());
        /* the same variant on the whole field, alone */
        if (ok && pk_diffusion3d(ctx, &p, variant, full, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_diffusion3d: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok && memcmp(slab, full + (size_t)info.i0 * plane, (size_t)L * plane * sizeof *slab)) {
            size_t k = 0;
            while (slab[k] == full[(size_t)info.i0 * plane + k])
                k++;
            fprintf(stderr, "rank %d: %s depth %d overlap %d: plane %zu differs (%.9g vs %.9g)\n",
                    rank, variant, depth, info.overlap, info.i0 + k / plane, slab[k],
                    full[(size_t)info.i0 * plane + k]);
            ok = 0;
        }
    } else {
        fprintf(stderr, "rank %d: create: %s\n", rank, pk_mpi_last_error());
    }
    check(ok, "diffusion3d %s %dx%dx%d count %d depth %d overlap %d%s: slabs bitwise equal to "
              "one process (ran: %s, overlap %d)",
          variant, nx, ny, nz, count, depth, overlap, custom ? " slabs 1,1,..,rest" : " block rule",
          ok ? info.local.variant : "-", info.overlap);
    pk_mpi_diffusion3d_plan_destroy(pl);
    free(slab);
    free(full);
}

/* ---- laplace2d -------------------------------------------------------------------------- */
static void lp_case(pk_context *ctx, const char *variant, int layout, int l, int count, int depth,
                    int custom) {
    pk_laplace2d_params p = {l, count, 0.3, layout, 0};
    size_t n = (size_t)l * l;
    float *full = NULL;
    if (posix_memalign((void **)&full, 64, n * sizeof *full)) /* aligned: run in place */
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t i = 0; i < n; i++)
        full[i] = val(i + 77);
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    o.depth = depth;
    if (custom) { /* one row on every rank but the last */
        o.i0 = rank;
        o.i1 = rank == nranks - 1 ? l : rank + 1;
    }
    pk_mpi_laplace2d_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_laplace2d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, &info);
    int ok = st == PK_OK;
    if (!ok)
        fprintf(stderr, "rank %d: laplace2d create: %s\n", rank, pk_mpi_last_error());
    if (ok) {
        int L = info.i1 - info.i0;
        float *slab = malloc((size_t)L * l * sizeof *slab);
        memcpy(slab, full + (size_t)info.i0 * l, (size_t)L * l * sizeof *slab);
        ok = pk_mpi_laplace2d_plan_execute(pl, slab, count, &info) == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: laplace2d execute: %s\n", rank, pk_mpi_last_error());
        if (ok && pk_laplace2d(ctx, &p, variant, full, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_laplace2d: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok && memcmp(slab, full + (size_t)info.i0 * l, (size_t)L * l * sizeof *slab)) {
            size_t k = 0;
            while (slab[k] == full[(size_t)info.i0 * l + k])
                k++;
            fprintf(stderr, "rank %d: laplace2d %s: row %zu column %zu differs (%.9g vs %.9g)\n",
                    rank, variant, info.i0 + k / l, k % l, slab[k], full[(size_t)info.i0 * l + k]);
            ok = 0;
        }
        free(slab);
    }
    check(ok, "laplace2d %s %s l %d count %d depth %d%s: slabs bitwise equal to one process "
              "(ran: %s, depth %d)",
          variant, pk_laplace2d_layout_name(layout), l, count, depth,
          custom ? " slabs 1,1,..,rest" : " block rule", ok ? info.local.variant : "-", info.depth);
    pk_mpi_laplace2d_plan_destroy(pl);
    free(full);
}

/* ---- conv2d ----------------------------------------------------------------------------- */
static void cv_case(pk_context *ctx, const char *variant, int h, int w, int kh, int kw, int custom) {
    pk_conv2d_params p = {h, w, kh, kw, PK_CONV2D_AUTO};
    float *img = malloc((size_t)h * w * sizeof *img), *ref = malloc((size_t)h * w * sizeof *ref);
    float *psf = malloc((size_t)kh * kw * sizeof *psf);
    pk_conv2d_generate(&p, 7, img, psf);
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    if (custom) { /* two rows on every rank but the last */
        o.i0 = 2 * rank;
        o.i1 = rank == nranks - 1 ? h : 2 * rank + 2;
    }
    pk_mpi_conv2d_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_conv2d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, psf, &o, &info);
    int ok = st == PK_OK, fft = variant && strstr(variant, "fft") != NULL;
    double err = 0;
    if (!ok)
        fprintf(stderr, "rank %d: conv2d create: %s\n", rank, pk_mpi_last_error());
    if (ok) {
        int L = info.i1 - info.i0;
        float *out = malloc((size_t)L * w * sizeof *out);
        st = pk_mpi_conv2d_plan_execute(pl, img + (size_t)info.i0 * w, out, &info);
        ok = st == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: conv2d execute: %s\n", rank, pk_mpi_last_error());
        if (ok && pk_conv2d(ctx, &p, variant, img, psf, ref, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_conv2d: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok && !fft) {
            ok = memcmp(out, ref + (size_t)info.i0 * w, (size_t)L * w * sizeof *out) == 0;
        } else if (ok) {
            /* docs/KERNELS.md 5: positive data of small dynamic range, element-wise rtol 1e-5
             * (the FFT's norm-wise error, a few 1e-6 per element, and the other FFT size's
             * own) */
            pk_diff_report r;
            ok = pk_diff_f32(out, ref + (size_t)info.i0 * w, (size_t)L * w, 1e-5, 1e-10,
                             PK_DIFF_ELEMENTWISE, &r) == PK_OK;
            err = r.max_rel_err;
        }
        if (!ok)
            fprintf(stderr, "rank %d: conv2d %s rows [%d, %d) differ (max rel %.3g)\n", rank,
                    variant, info.i0, info.i1, err);
        free(out);
    }
    double maxerr = 0;
    MPI_Allreduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (fft)
        check(ok, "conv2d %s %dx%d psf %dx%d%s: within rtol 1e-5 of one process (max rel %.2g)",
              variant, h, w, kh, kw, custom ? " slabs 2,2,..,rest" : "", maxerr);
    else
        check(ok, "conv2d %s %dx%d psf %dx%d%s: slabs bitwise equal to one process", variant, h,
              w, kh, kw, custom ? " slabs 2,2,..,rest" : "");
    pk_mpi_conv2d_plan_destroy(pl);
    free(img);
    free(ref);
    free(psf);
}

/* ---- su3 -------------------------------------------------------------------------------- */
static void s3_case(pk_context *ctx, const char *variant, int layout, size_t nv) {
    pk_su3_params p = {nv, layout, 0};
    double *u = NULL, *psi = NULL, *chi = NULL, *ref = NULL; /* 64-byte aligned: the vector
                                                                 kernels run on them */
    if (posix_memalign((void **)&u, 64, nv * 18 * 8) || posix_memalign((void **)&psi, 64, nv * 24 * 8) ||
        posix_memalign((void **)&chi, 64, nv * 24 * 8) || posix_memalign((void **)&ref, 64, nv * 24 * 8))
        MPI_Abort(MPI_COMM_WORLD, 2);
    pk_lqcd_random_su3(3, nv, u);
    pk_lqcd_random_complex(4, nv * 12, psi);
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    pk_mpi_su3_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_su3_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, &info);
    int ok = st == PK_OK;
    if (!ok)
        fprintf(stderr, "rank %d: su3 create: %s\n", rank, pk_mpi_last_error());
    if (ok) {
        size_t a = (size_t)info.i0, L = (size_t)(info.i1 - info.i0);
        ok = pk_mpi_su3_plan_execute(pl, u + a * 18, psi + a * 24, chi + a * 24, &info) == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: su3 execute: %s\n", rank, pk_mpi_last_error());
        if (ok && pk_su3(ctx, &p, variant, u, psi, ref, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_su3: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok)
            ok = memcmp(chi + a * 24, ref + a * 24, L * 24 * sizeof(double)) == 0;
    }
    check(ok, "su3 %s layout %s nv %zu: sites bitwise equal to one process", variant,
          pk_su3_layout_name(layout), nv);
    pk_mpi_su3_plan_destroy(pl);
    free(u);
    free(psi);
    free(chi);
    free(ref);
}

/* ---- magicfilter3d ---------------------------------------------------------------------- */
/* transposes: pk_mpi_options.transposes (-1: the plan's choice, checked against its rule:
 * the passes apart where the variant has a host pass; this context runs them on the host). */
static void mf_case(pk_context *ctx, const char *variant, int n1, int n2, int n3, int transpose,
                    int bc, int transposes) {
    pk_magicfilter3d_params p = {n1, n2, n3, transpose, bc};
    size_t ins[3], outs[3];
    if (pk_magicfilter3d_shapes(&p, ins, outs) != PK_OK)
        MPI_Abort(MPI_COMM_WORLD, 2);
    size_t nin = ins[0] * ins[1] * ins[2], nout = outs[0] * outs[1] * outs[2];
    size_t ipl = ins[1] * ins[2], opl = outs[1] * outs[2];
    double *x = malloc(nin * sizeof *x), *ref = malloc(nout * sizeof *ref);
    for (size_t i = 0; i < nin; i++)
        x[i] = 3.0 * val(i) - 3.0; /* [-1.5, 1.5) */
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    o.transposes = transposes;
    pk_mpi_magicfilter3d_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_magicfilter3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, &info);
    int ok = st == PK_OK;
    const int host_pass = strcmp(variant, "serial-direct") != 0;
    const int want_tr = transposes >= 0 ? transposes : host_pass;
    if (ok && info.transposes != want_tr) {
        fprintf(stderr, "rank %d: magicfilter3d %s: transposes %d, expected %d\n", rank,
                variant, info.transposes, want_tr);
        ok = 0;
    }
    if (!ok)
        fprintf(stderr, "rank %d: magicfilter3d create: %s\n", rank, pk_mpi_last_error());
    if (ok) {
        int xp = 0, yp = 0;
        pk_mpi_magicfilter3d_plan_slab(pl, &xp, &yp);
        double *y = malloc((size_t)yp * opl * sizeof *y + 1);
        st = pk_mpi_magicfilter3d_plan_execute(pl, x + (size_t)info.i0 * ipl, y, &info);
        ok = st == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: magicfilter3d execute: %s\n", rank, pk_mpi_last_error());
        if (ok && info.transposes != want_tr) {
            fprintf(stderr, "rank %d: magicfilter3d %s execute: transposes %d, expected %d\n",
                    rank, variant, info.transposes, want_tr);
            ok = 0;
        }
        if (ok && pk_magicfilter3d(ctx, &p, variant, x, ref, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_magicfilter3d: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok)
            ok = memcmp(y, ref + (size_t)info.i0 * opl, (size_t)yp * opl * sizeof *y) == 0;
        if (!ok) {
            double e = 0;
            for (size_t i = 0; i < (size_t)yp * opl; i++) {
                double d = y[i] - ref[(size_t)info.i0 * opl + i];
                e = d > e ? d : -d > e ? -d : e;
            }
            fprintf(stderr, "rank %d: magicfilter3d %s planes from %d differ (max abs %.3g)\n",
                    rank, variant, info.i0, e);
        }
        free(y);
    }
    static const char *bcs[] = {"periodic", "grow", "shrink"};
    check(ok, "magicfilter3d %s %dx%dx%d %s %s, %s: slabs bitwise equal to one process",
          variant, n1, n2, n3, transpose ? "MFT" : "MF", bcs[bc],
          want_tr ? "transposes" : "halo planes");
    pk_mpi_magicfilter3d_plan_destroy(pl);
    free(x);
    free(ref);
}

/* ---- dslash ----------------------------------------------------------------------------- */
/* Rows [l0, l0 + ln) of [T][Z] planes of `site` doubles: block (t0..t1, z0..z1) of a global
 * array into a rank's [t1 - t0][z1 - z0] one. */
static void ds_block(const double *g, int Z, size_t plane, int t0, int t1, int z0, int z1,
                     double *b) {
    for (int t = t0; t < t1; t++)
        memcpy(b + (size_t)(t - t0) * (size_t)(z1 - z0) * plane,
               g + ((size_t)t * (size_t)Z + (size_t)z0) * plane,
               (size_t)(z1 - z0) * plane * sizeof *g);
}

/* pz: ranks along z (pk_mpi_options.ranks_z; 1: t only); overlap: pk_mpi_options.overlap
 * (-1, the default, and 1: the interior computed while the faces travel, info.overlap says
 * so exactly when a rank has interior sites, more than 2 planes along each split axis; 0:
 * the block whole) */
static void ds_case(pk_context *ctx, const char *variant, int X, int Y, int Z, int T,
                    int recon12, int in_place, int half, int pz, int overlap) {
    pk_dslash_params p = {X, Y, Z, T, 0.125, recon12, 0, 0, 0, 0};
    size_t vol2 = (size_t)X * Y, vol3 = vol2 * (size_t)Z, vol = vol3 * (size_t)T;
    double *u = malloc(4 * vol * 18 * sizeof *u), *psi = malloc(vol * 24 * sizeof *psi);
    double *ref = malloc(vol * 24 * sizeof *ref);
    pk_lqcd_random_su3(5, 4 * vol, u);
    pk_lqcd_random_complex(6, vol * 12, psi);
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = variant;
    o.half = half;
    o.ranks_z = pz;
    o.overlap = overlap;
    /* this rank's block (the block rule along both axes, as the plan applies it) */
    int i0 = 0, i1 = 0, z0 = 0, z1 = 0;
    int ok = pk_mpi_block(T, nranks / pz, rank / pz, &i0, &i1) == PK_OK &&
             pk_mpi_block(Z, pz, rank % pz, &z0, &z1) == PK_OK;
    size_t L = (size_t)(i1 - i0) * (size_t)(z1 - z0) * vol2; /* sites of the block */
    double *ul = malloc(4 * L * 18 * sizeof *ul + 8), *pl_psi = malloc(L * 24 * 8 + 8);
    double *chi = malloc(L * 24 * 8 + 8), *r = malloc(L * 24 * 8 + 8);
    for (int mu = 0; ok && mu < 4; mu++)
        ds_block(u + (size_t)mu * vol * 18, Z, vol2 * 18, i0, i1, z0, z1,
                 ul + (size_t)mu * L * 18);
    if (ok)
        ds_block(psi, Z, vol2 * 24, i0, i1, z0, z1, pl_psi);
    /* Bitwise: full spinors on serial and omp.  omp-vnode's lane count and split axis
     * follow the (local) lattice's extents (omp/dslash_omp.c), and its kernels of different
     * widths round differently (FMA contraction): a block of another shape than the whole
     * lattice may take other lanes, so it is held to the norm-wise bar, as half spinors are. */
    const int exact = !half && strcmp(variant, "omp-vnode") != 0;
    pk_mpi_dslash_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    double rel = 0, differ = 0;
    pk_status st = pk_mpi_dslash_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, ul, &o, &info);
    ok = ok && st == PK_OK && info.i0 == i0 && info.i1 == i1 && info.z0 == z0 &&
         info.z1 == z1 && info.rank == rank && info.nranks == nranks;
    if (!ok)
        fprintf(stderr, "rank %d: dslash create: %s\n", rank, pk_mpi_last_error());
    if (ok) {
        double *out = in_place ? pl_psi : chi;
        ok = pk_mpi_dslash_plan_execute(pl, pl_psi, out, &info) == PK_OK;
        if (!ok)
            fprintf(stderr, "rank %d: dslash execute: %s\n", rank, pk_mpi_last_error());
        /* interior sites while the faces travel: along a split axis more than 2 planes */
        const int ts = nranks / pz > 1, zs = pz > 1, dev = !strcmp(variant, "opencl");
        const int want = overlap != 0 && !dev && (ts || zs) && (!ts || i1 - i0 > 2) &&
                         (!zs || z1 - z0 > 2); /* a device refuses ranges: the block whole */
        if (ok && info.overlap != want) {
            fprintf(stderr, "rank %d: dslash info.overlap %d, expected %d\n", rank,
                    info.overlap, want);
            ok = 0;
        }
        if (ok && pk_dslash(ctx, &p, variant, u, psi, ref, NULL) != PK_OK) {
            fprintf(stderr, "rank %d: pk_dslash: %s\n", rank, pk_last_error());
            ok = 0;
        }
        if (ok)
            ds_block(ref, Z, vol2 * 24, i0, i1, z0, z1, r);
        if (ok && exact)
            ok = memcmp(out, r, L * 24 * sizeof *out) == 0;
        if (ok && !exact) { /* docs/KERNELS.md 4c: norm-wise, the bar 1e-12 */
            double loc[3] = {0, 0, 0}, all[3];
            for (size_t i = 0; i < L * 24; i++) {
                loc[0] += (out[i] - r[i]) * (out[i] - r[i]);
                loc[1] += r[i] * r[i];
                loc[2] += out[i] != r[i];
            }
            MPI_Allreduce(loc, all, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            rel = sqrt(all[0] / all[1]);
            differ = all[2];
            ok = rel <= 1e-12;
        }
        if (!ok)
            fprintf(stderr, "rank %d: dslash %s block t [%d, %d) z [%d, %d) differs\n", rank,
                    variant, i0, i1, z0, z1);
    }
    char grid[48] = "t-slabs";
    if (pz > 1)
        snprintf(grid, sizeof grid, "%d x %d blocks (t x z)", nranks / pz, pz);
    if (overlap >= 0)
        snprintf(grid + strlen(grid), sizeof grid - strlen(grid), ", overlap %d", overlap);
    if (!exact)
        check(ok, "dslash %s %dx%dx%dx%d%s%s%s, %s: within 1e-12 norm-wise of one process "
                  "(rel %.2g, %.0f of %zu reals differ)", variant, X, Y, Z, T,
              recon12 ? " recon12" : "", in_place ? " chi = psi" : "",
              half ? " half spinors" : "", grid, rel, differ, vol * 24);
    else
        check(ok, "dslash %s %dx%dx%dx%d%s%s: %s bitwise equal to one process", variant, X,
              Y, Z, T, recon12 ? " recon12" : "", in_place ? " chi = psi" : "", grid);
    pk_mpi_dslash_plan_destroy(pl);
    free(u);
    free(psi);
    free(ref);
    free(ul);
    free(pl_psi);
    free(chi);
    free(r);
}

/* ---- failures --------------------------------------------------------------------------- */
/* Every rank got status `st`: the same failing status everywhere, and (optionally) a message
 * mentioning `needle`. */
static void agreed_failure(pk_status st, const char *needle, const char *what) {
    int mine = (int)st, lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int ok = lo == hi && st != PK_OK && (!needle || strstr(pk_mpi_last_error(), needle));
    if (!ok)
        fprintf(stderr, "rank %d: %s: status %d (%s), message '%s'\n", rank, what, (int)st,
                pk_status_name(st), pk_mpi_last_error());
    check(ok, "%s: %s on every rank (%s)", what, pk_status_name(lo),
          rank == 0 ? pk_mpi_last_error() : "");
}

static void failures_cases(pk_context *ctx) {
    pk_diffusion3d_params p;
    pk_mpi_diffusion3d_plan *pl = NULL;
    pk_mpi_options o;

    /* more ranks than planes (nz = nranks - 1; 0 on one rank: nothing to split) */
    pk_diffusion3d_params_default(&p, 8, 8, nranks - 1, 1);
    pk_status st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, NULL, NULL);
    agreed_failure(st, "more ranks than", "diffusion3d with nz = ranks - 1");
    pk_mpi_diffusion3d_plan_destroy(pl);
    pl = NULL;

    /* a bad parameter on the last rank only */
    pk_diffusion3d_params_default(&p, 8, 8, 16, 1);
    if (rank == nranks - 1)
        p.nx = 0;
    st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, NULL, NULL);
    agreed_failure(st, NULL, "diffusion3d with nx = 0 on the last rank");
    pk_mpi_diffusion3d_plan_destroy(pl);
    pl = NULL;

    /* a bad depth on rank 0 only */
    pk_diffusion3d_params_default(&p, 8, 8, 16, 1);
    pk_mpi_options_init(&o);
    if (rank == 0)
        o.depth = -3;
    st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, NULL);
    agreed_failure(st, "rank 0: depth", "diffusion3d with depth -3 on rank 0");
    pk_mpi_diffusion3d_plan_destroy(pl);
    pl = NULL;

    /* slabs given by the caller that overlap (or, with one rank, do not cover nz) */
    pk_mpi_options_init(&o);
    o.i0 = rank == 0 ? 0 : 4 * rank - 1;
    o.i1 = 4 * rank + 4;
    st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, NULL);
    agreed_failure(st, "slabs", "diffusion3d with overlapping or short caller slabs");
    pk_mpi_diffusion3d_plan_destroy(pl);
    pl = NULL;

    /* an unknown variant on the last rank */
    pk_mpi_options_init(&o);
    if (rank == nranks - 1)
        o.variant = "no-such-variant";
    st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, NULL);
    agreed_failure(st, NULL, "diffusion3d with an unknown variant on the last rank");
    pk_mpi_diffusion3d_plan_destroy(pl);
    pl = NULL;

    /* a NULL field on the last rank; then the same plan runs again, correctly */
    pk_mpi_options_init(&o);
    o.variant = "serial";
    st = pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, NULL);
    if (st == PK_OK) {
        float *slab = calloc((size_t)16 * 64, sizeof *slab);
        st = pk_mpi_diffusion3d_plan_execute(pl, rank == nranks - 1 ? NULL : slab, 3, NULL);
        agreed_failure(st, "f must not be NULL", "diffusion3d execute with f NULL on the last rank");
        for (int i = 0; i < 16 * 64; i++)
            slab[i] = 1.0f;
        st = pk_mpi_diffusion3d_plan_execute(pl, slab, 3, NULL);
        int ok = st == PK_OK;
        for (int i = 0; ok && i < 64; i++) /* a constant field stays constant: 0.4 + 6 x 0.1 */
            ok = slab[i] > 0.99f && slab[i] < 1.01f;
        check(ok, "diffusion3d: the plan works after an agreed failure");
        free(slab);
    } else {
        check(0, "diffusion3d plan for the NULL-field case: %s", pk_mpi_last_error());
    }
    pk_mpi_diffusion3d_plan_destroy(pl);

    /* conv2d: a PSF that differs on the last rank; more ranks than rows */
    pk_conv2d_params cp = {16, 8, 3, 3, PK_CONV2D_DIRECT};
    float psf[9] = {0, .1f, 0, .1f, .6f, .1f, 0, .1f, 0};
    if (rank == nranks - 1 && nranks > 1)
        psf[4] = .5f;
    pk_mpi_conv2d_plan *cpl = NULL;
    st = pk_mpi_conv2d_plan_create(&cpl, MPI_COMM_WORLD, ctx, &cp, psf, NULL, NULL);
    if (nranks > 1)
        agreed_failure(st, "PSF", "conv2d with another PSF on the last rank");
    else
        check(st == PK_OK, "conv2d plan with one rank");
    pk_mpi_conv2d_plan_destroy(cpl);
    cpl = NULL;
    psf[4] = .6f;
    cp.h = nranks - 1;
    st = pk_mpi_conv2d_plan_create(&cpl, MPI_COMM_WORLD, ctx, &cp, psf, NULL, NULL);
    agreed_failure(st, "more ranks than", "conv2d with h = ranks - 1");
    pk_mpi_conv2d_plan_destroy(cpl);

    /* laplace2d: another sigma on the last rank (one rank: a sigma of 0, refused locally) */
    pk_laplace2d_params lpp = {32, 1, 0.3, PK_LAP_LEXI, 0};
    if (rank == nranks - 1)
        lpp.sigma = nranks > 1 ? 0.25 : 0.0;
    pk_mpi_laplace2d_plan *lpl = NULL;
    st = pk_mpi_laplace2d_plan_create(&lpl, MPI_COMM_WORLD, ctx, &lpp, NULL, NULL);
    agreed_failure(st, NULL, nranks > 1 ? "laplace2d with another sigma on the last rank"
                                        : "laplace2d with sigma 0");
    pk_mpi_laplace2d_plan_destroy(lpl);

    /* laplace2d hvfo on l = 40 (not a multiple of the 16 lanes): refused as one process
     * refuses it, although the padded tiles could run it */
    pk_laplace2d_params hv = {40, 1, 0.3, PK_LAP_HVFO, 0};
    st = pk_mpi_laplace2d_plan_create(&lpl, MPI_COMM_WORLD, ctx, &hv, NULL, NULL);
    agreed_failure(st, "multiple of nw", "laplace2d hvfo with l = 40");
    pk_mpi_laplace2d_plan_destroy(lpl);
    lpl = NULL;

    /* su3: a layout that differs on rank 0 */
    pk_su3_params sp = {64, PK_SU3_AOS, 0};
    if (rank == 0 && nranks > 1)
        sp.layout = PK_SU3_VFO;
    if (nranks == 1)
        sp.layout = 99; /* one rank: a bad layout, refused by the local plan */
    pk_mpi_su3_plan *spl = NULL;
    st = pk_mpi_su3_plan_create(&spl, MPI_COMM_WORLD, ctx, &sp, NULL, NULL);
    agreed_failure(st, NULL, nranks > 1 ? "su3 with another layout on rank 0"
                                        : "su3 with a bad layout");
    pk_mpi_su3_plan_destroy(spl);
    /* magicfilter3d: more ranks than planes; n3 that differs on the last rank */
    pk_magicfilter3d_params mp = {8, 8, nranks - 1, 0, PK_MF_PERIODIC};
    pk_mpi_magicfilter3d_plan *mpl = NULL;
    st = pk_mpi_magicfilter3d_plan_create(&mpl, MPI_COMM_WORLD, ctx, &mp, NULL, NULL);
    agreed_failure(st, nranks > 1 ? "more ranks than" : NULL,
                   "magicfilter3d with n3 = ranks - 1");
    pk_mpi_magicfilter3d_plan_destroy(mpl);
    mpl = NULL;
    mp.n3 = 16;
    mp.bc = rank == nranks - 1 ? 7 : PK_MF_GROW; /* a bad bc on the last rank */
    st = pk_mpi_magicfilter3d_plan_create(&mpl, MPI_COMM_WORLD, ctx, &mp, NULL, NULL);
    agreed_failure(st, "bc", "magicfilter3d with bc 7 on the last rank");
    pk_mpi_magicfilter3d_plan_destroy(mpl);
    /* transposes: a variant without a host pass; a value out of range on the last rank */
    mp = (pk_magicfilter3d_params){8, 8, 2 * nranks, 0, PK_MF_PERIODIC};
    pk_mpi_options_init(&o);
    o.transposes = 1;
    o.variant = "serial-direct";
    mpl = NULL;
    st = pk_mpi_magicfilter3d_plan_create(&mpl, MPI_COMM_WORLD, ctx, &mp, &o, NULL);
    agreed_failure(st, "no pass", "magicfilter3d transposes with serial-direct");
    pk_mpi_magicfilter3d_plan_destroy(mpl);
    pk_mpi_options_init(&o);
    o.transposes = rank == nranks - 1 ? 2 : 1;
    mpl = NULL;
    st = pk_mpi_magicfilter3d_plan_create(&mpl, MPI_COMM_WORLD, ctx, &mp, &o, NULL);
    agreed_failure(st, "transposes", "magicfilter3d transposes 2 on the last rank");
    pk_mpi_magicfilter3d_plan_destroy(mpl);

    /* dslash: t < ranks (each rank must hold a t-plane); another kappa on rank 0 */
    pk_dslash_params dp = {2, 2, 2, nranks - 1, 0.125, 0, 0, 0, 0, 0};
    double dlinks[4 * 8 * 18];
    pk_lqcd_random_su3(1, 4 * 8, dlinks);
    pk_mpi_dslash_plan *dpl = NULL;
    st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, NULL, NULL);
    agreed_failure(st, nranks > 1 ? "more ranks than" : NULL, "dslash with t = ranks - 1");
    pk_mpi_dslash_plan_destroy(dpl);
    dpl = NULL;
    dp.t = nranks;
    if (rank == 0)
        dp.kappa = nranks > 1 ? 0.25 : -1.0; /* one rank: a bad kappa, refused by the local plan */
    st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, NULL, NULL);
    agreed_failure(st, nranks > 1 ? "differ" : "kappa",
                   nranks > 1 ? "dslash with another kappa on rank 0" : "dslash with kappa -1");
    pk_mpi_dslash_plan_destroy(dpl);
    dpl = NULL;
    /* a z split: ranks_z that does not divide the ranks; z below ranks_z */
    pk_mpi_options zo;
    pk_mpi_options_init(&zo);
    dp.kappa = 0.125;
    dp.t = 2 * nranks;
    zo.ranks_z = nranks + 1;
    st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, &zo, NULL);
    agreed_failure(st, "does not divide", "dslash with ranks_z = ranks + 1");
    pk_mpi_dslash_plan_destroy(dpl);
    dpl = NULL;
    if (nranks > 1) {
        zo.ranks_z = nranks;
        dp.z = nranks - 1;
        st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, &zo, NULL);
        agreed_failure(st, "more ranks than z planes", "dslash with z = ranks_z - 1");
        pk_mpi_dslash_plan_destroy(dpl);
        dpl = NULL;
    }
    /* overlap out of -1..1 on the last rank; a t-range (the distributed plan computes all) */
    pk_mpi_options_init(&zo);
    dp.z = 2;
    dp.t = nranks; /* one t-plane a rank: dlinks' 8 sites */
    zo.overlap = rank == nranks - 1 ? 2 : -1;
    st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, &zo, NULL);
    agreed_failure(st, nranks > 1 ? NULL : "overlap", "dslash with overlap 2 on the last rank");
    pk_mpi_dslash_plan_destroy(dpl);
    /* a t-range, then a z-range: the distributed plan computes every plane */
    for (int z = 0; z < 2; z++) {
        dpl = NULL;
        dp.t_end = !z;
        dp.z_end = z;
        st = pk_mpi_dslash_plan_create(&dpl, MPI_COMM_WORLD, ctx, &dp, dlinks, NULL, NULL);
        agreed_failure(st, z ? "z_begin" : "t_begin", z ? "dslash with a z-range"
                                                         : "dslash with a t-range");
        pk_mpi_dslash_plan_destroy(dpl);
    }
}

/* ---- grid ------------------------------------------------------------------------------- */
/* The visibilities [v0, v1) of n that rank r takes: split 0: the block rule over the
 * visibilities; split 1: rank 0 none, the others uneven (rank r's share grows as r^2); with
 * one rank all of them. */
static void vis_slice(size_t n, int split, size_t *v0, size_t *v1) {
    if (split == 0 || nranks == 1) {
        *v0 = n * (size_t)rank / (size_t)nranks;
        *v1 = n * (size_t)(rank + 1) / (size_t)nranks;
        return;
    }
    size_t tot = 0, below = 0;
    for (int r = 1; r < nranks; r++) {
        tot += (size_t)r * r;
        if (r < rank)
            below += (size_t)r * r;
    }
    *v0 = rank == 0 ? 0 : n * below / tot;
    *v1 = rank == 0 ? 0 : rank == nranks - 1 ? n : n * (below + (size_t)rank * rank) / tot;
}

/* Visibilities [v0, v1) of d. */
static pk_grid_data vis_view(pk_grid_data d, size_t v0, size_t v1) {
    d.num_vis = v1 - v0;
    d.uu += v0;
    d.vv += v0;
    d.ww += v0;
    d.vis += 2 * v0;
    d.weight += v0;
    return d;
}

/* The distributed grid's options: the variant, and the bands by the block rule or (custom)
 * 3 rows a rank, the last the rest of the G rows. */
static void grid_options(pk_mpi_options *opt, const char *variant, int custom, int G) {
    pk_mpi_options_init(opt);
    opt->variant = variant;
    if (custom) {
        opt->i0 = 3 * rank;
        opt->i1 = rank == nranks - 1 ? G : 3 * rank + 3;
    }
}

/* The distributed grid of a set, its visibilities split (split) and its rows in bands (the
 * block rule, or custom: 3 rows a rank, the last the rest), gathered on every rank and
 * compared per cell with the double reference within gamma_{2n+8} A (docs/KERNELS.md 1.5:
 * a cell is the same 2n float products summed in another order, here each rank's partial
 * then the ranks' partials, still one summation tree), and with the single-process float
 * grid of the same variant within twice that (both within it of the exact sum), bitwise on
 * one rank for the deterministic variants (serial, omp-tiled).  norm to 1e-9 relative,
 * num_skipped exactly; the band inside the plan equals the caller's.  The plan has run once
 * before (a third of the slice: another box), so the run starts from a used grid. */
static void gr_case(pk_context *ctx, const char *variant, const gr_set *s, const gr_oracle *o,
                    int split, int custom) {
    const int G = s->p.grid_size;
    const size_t cells = gr_cells(s);
    pk_mpi_options opt;
    grid_options(&opt, variant, custom, G);
    pk_mpi_grid_plan *pl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &s->p, s->support, s->kern,
                                           &opt, &info);
    int ok = st == PK_OK, bits = -1;
    char msg[400] = "", msg1[400] = "";
    double norm = 0, worst1 = 0, single_norm = 0;
    int64_t sk = -7, single_sk = -7;
    size_t v0 = 0, v1 = 0;
    vis_slice(s->n, split, &v0, &v1);
    if (ok) {
        int r0 = -1, r1 = -1;
        const float *inplan = NULL;
        pk_mpi_grid_plan_band(pl, &r0, &r1, &inplan);
        ok = r0 == info.i0 && r1 == info.i1 && inplan == NULL;
        size_t bn = 2 * (size_t)(r1 - r0) * (size_t)G;
        float *band = calloc(bn ? bn : 1, sizeof *band);
        float *full = calloc(2 * cells, sizeof *full), *one = calloc(2 * cells, sizeof *one);
        pk_grid_data d = vis_view(gr_data(s), v0, v1);
        /* a first run of the first third of the slice leaves the plan's grid packed,
         * unpacked and reduced: the run that counts starts from that */
        pk_grid_data third = d;
        third.num_vis = d.num_vis / 3;
        st = pk_mpi_grid_plan_run(pl, &third, NULL, NULL, NULL, NULL);
        if (st == PK_OK)
            st = pk_mpi_grid_plan_run(pl, &d, band, &norm, &sk, &info);
        if (st != PK_OK) {
            fprintf(stderr, "rank %d: run: %s\n", rank, pk_mpi_last_error());
            ok = 0;
        }
        if (ok) {
            pk_mpi_grid_plan_band(pl, &r0, &r1, &inplan);
            ok = inplan && memcmp(inplan, band, bn * sizeof *band) == 0;
            int *cnt = malloc(2 * (size_t)nranks * sizeof *cnt), *dsp = cnt + nranks;
            int mine = (int)bn;
            MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
            dsp[0] = 0;
            for (int r = 1; r < nranks; r++)
                dsp[r] = dsp[r - 1] + cnt[r - 1];
            MPI_Allgatherv(band, mine, MPI_FLOAT, full, cnt, dsp, MPI_FLOAT, MPI_COMM_WORLD);
            free(cnt);
            ok = gr_check_grid(s, o, full, 1, msg, sizeof msg) && ok;
            ok = ok && gr_norm_ok(norm, o->norm) && sk == o->skipped;
            /* one process, the same variant, all visibilities */
            pk_grid_data all = gr_data(s);
            if (pk_grid(ctx, &s->p, variant, s->support, s->kern, &all, one, &single_norm,
                        &single_sk, NULL) != PK_OK) {
                fprintf(stderr, "rank %d: pk_grid: %s\n", rank, pk_last_error());
                ok = 0;
            } else {
                bits = memcmp(one, full, 2 * cells * sizeof *one) == 0;
                for (size_t c = 0; c < cells; c++)
                    for (int q = 0; q < 2; q++) {
                        double b = 2 * gr_bound(o, c, 1), e = fabs((double)one[2 * c + q] -
                                                                   (double)full[2 * c + q]);
                        if (!(e <= b))
                            ok = 0;
                        if (b > 0 && e / b > worst1)
                            worst1 = e / b;
                    }
                snprintf(msg1, sizeof msg1, "against one process: worst err/(2 bound) %.3f", worst1);
                ok = ok && single_sk == sk;
                int det = !strcmp(variant, "serial") || !strcmp(variant, "omp-tiled");
                if (nranks == 1 && det && !bits) {
                    fprintf(stderr, "rank %d: %s on one rank: not bitwise the single process\n",
                            rank, variant);
                    ok = 0;
                }
                if (nranks == 1 && det && norm != single_norm)
                    ok = 0;
            }
        }
        free(band);
        free(full);
        free(one);
    } else {
        fprintf(stderr, "rank %d: create: %s\n", rank, pk_mpi_last_error());
    }
    int allbits = 0;
    MPI_Allreduce(&bits, &allbits, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    check(ok, "grid %s %s (%zu vis, %d x %d) vis split %s, bands %s: bands gathered within "
              "gamma_{2n+8} A of the double reference (%s), %s, %s; norm %.15g vs %.15g, "
              "skipped %lld",
          variant, s->name, s->n, G, G, split ? "uneven, rank 0 empty" : "block",
          custom ? "3 rows a rank" : "block", msg, msg1,
          allbits == 1 ? "bitwise equal to one process" : "not bitwise (another sum order)",
          norm, o->norm, (long long)sk);
    pk_mpi_grid_plan_destroy(pl);
}

/* The distributed dirty image (pk_mpi_grid_plan_image) of the generated `small` set at scale
 * 0.1 (1024^2 grid, 32 w-planes), its visibilities split (split) and the grid's rows in
 * bands (block, or custom: 3 rows a rank, the last the rest: most bands outside the box):
 * rank 0's image is bitwise pk_image_from_grid of the gathered bands, and on one rank with
 * a deterministic variant bitwise pk_image of all visibilities.  Then the agreed failures:
 * an image before any run, a NULL image on rank 0, another image size (odd), a changed
 * kernel stack on the last rank. */
static void im_case_mpi(pk_context *ctx, const char *variant, int split, int custom) {
    pk_grid_gen_options go;
    pk_grid_gen_options_init(&go);
    go.dataset = "small";
    go.scale = 0.1;
    pk_grid_dataset ds;
    pk_status st = pk_grid_generate(&go, &ds);
    if (st != PK_OK) {
        skip("the distributed image", pk_last_error());
        pk_grid_dataset_free(&ds);
        return;
    }
    const int G = ds.params.grid_size;
    const size_t cells = (size_t)G * G;
    pk_image_params ip;
    pk_image_params_init(&ip);
    ip.grid = ds.params;
    ip.image_size = ds.image_size;
    const int N = ip.image_size;
    const int32_t *sup = ds.support.data;
    const float *kern = ds.kernels.data;
    pk_mpi_options opt;
    grid_options(&opt, variant, custom, G);
    pk_mpi_grid_plan *pl = NULL;
    st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &ds.params, sup, kern, &opt, NULL);
    float *image = calloc((size_t)N * N, sizeof *image), *want = calloc((size_t)N * N, 4);
    float *full = rank == 0 ? calloc(2 * cells, sizeof *full) : NULL;
    int ok = st == PK_OK && image && want, bits = 0, one = -1;
    if (st == PK_OK) { /* before any run: refused */
        pk_status early = pk_mpi_grid_plan_image(pl, &ip, sup, kern, image, NULL);
        agreed_failure(early, "no successful run", "image before any grid run");
    }
    size_t v0 = 0, v1 = 0;
    vis_slice(ds.data.num_vis, split, &v0, &v1);
    pk_grid_data d = vis_view(ds.data, v0, v1);
    double norm = 0;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    if (ok)
        ok = pk_mpi_grid_plan_run(pl, &d, NULL, &norm, NULL, NULL) == PK_OK;
    if (ok)
        ok = pk_mpi_grid_plan_image(pl, &ip, sup, kern, image, &info) == PK_OK;
    if (!ok)
        fprintf(stderr, "rank %d: image: %s\n", rank, pk_mpi_last_error());
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) { /* the bands on rank 0, its one-process image of them */
        int r0, r1;
        const float *band = NULL;
        pk_mpi_grid_plan_band(pl, &r0, &r1, &band);
        int mine = 2 * (r1 - r0) * G, *cnt = malloc(2 * (size_t)nranks * sizeof *cnt);
        int *dsp = cnt + nranks;
        MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
        dsp[0] = 0;
        for (int r = 1; rank == 0 && r < nranks; r++)
            dsp[r] = dsp[r - 1] + cnt[r - 1];
        MPI_Gatherv(band, mine, MPI_FLOAT, full, cnt, dsp, MPI_FLOAT, 0, MPI_COMM_WORLD);
        free(cnt);
        if (rank == 0) {
            ok = pk_image_from_grid(ctx, &ip, sup, kern, full, norm, want) == PK_OK;
            bits = ok && memcmp(image, want, (size_t)N * N * sizeof *image) == 0;
            ok = bits;
            if (!bits)
                fprintf(stderr, "rank 0: the distributed image differs from "
                                "pk_image_from_grid of the bands (%s)\n", pk_last_error());
            const int det = !strcmp(variant, "serial") || !strcmp(variant, "omp-tiled");
            if (ok && nranks == 1 && det) {
                one = pk_image(ctx, &ip, variant, sup, kern, &ds.data, want, NULL, NULL, NULL) ==
                          PK_OK &&
                      memcmp(image, want, (size_t)N * N * sizeof *image) == 0;
                ok = one;
            }
        }
        /* a 16-pixel image: 2 column batches, so with 3 or 4 ranks some hold none */
        pk_image_params small = ip;
        small.image_size = 16;
        float tiny[256], tiny_want[256];
        int sok = pk_mpi_grid_plan_image(pl, &small, sup, kern, tiny, NULL) == PK_OK;
        if (sok && rank == 0)
            sok = pk_image_from_grid(ctx, &small, sup, kern, full, norm, tiny_want) == PK_OK &&
                  memcmp(tiny, tiny_want, sizeof tiny) == 0;
        if (!sok)
            fprintf(stderr, "rank %d: the 16-pixel image: %s\n", rank, pk_mpi_last_error());
        ok = ok && sok;
    }
    check(ok && all, "image %s small x 0.1 (%zu vis, grid %d, image %d) vis split %s, bands %s: "
          "rank 0's image bitwise pk_image_from_grid of the gathered bands%s, and a 16-pixel "
          "one (2 column batches over %d ranks) (compute %.2g s, comm %.2g s on rank 0)",
          variant, ds.data.num_vis, G, N, split ? "uneven, rank 0 empty" : "block",
          custom ? "3 rows a rank" : "block", one == 1 ? " and pk_image of all visibilities" : "",
          nranks, info.compute_s, info.comm_s);
    if (pl && !custom && split == 0) { /* failures, once per variant */
        st = pk_mpi_grid_plan_image(pl, &ip, sup, kern, rank == 0 ? NULL : image, NULL);
        agreed_failure(st, "rank 0", "image with a NULL image on rank 0");
        pk_image_params odd = ip;
        odd.image_size = N - 1;
        st = pk_mpi_grid_plan_image(pl, &odd, sup, kern, image, NULL);
        agreed_failure(st, "image_size", "image of an odd size");
        size_t count = 0;
        pk_grid_kernel_count(&ds.params, sup, &count);
        float *k2 = malloc(2 * count * sizeof *k2);
        memcpy(k2, kern, 2 * count * sizeof *k2);
        if (rank == nranks - 1)
            k2[7] += 1.0f;
        st = pk_mpi_grid_plan_image(pl, &ip, sup, k2, image, NULL);
        agreed_failure(st, "hash", "image with another kernel stack on the last rank");
        free(k2);
    }
    pk_mpi_grid_plan_destroy(pl);
    free(image);
    free(want);
    free(full);
    pk_grid_dataset_free(&ds);
}

/* The agreed failures of the distributed gridder. */
static void gr_failures(pk_context *ctx, const gr_set *s) {
    pk_mpi_grid_plan *pl = NULL;
    pk_status st;
    if (nranks > 2) { /* more ranks than rows: a 2-row grid */
        pk_grid_params p = s->p;
        p.grid_size = 2;
        int32_t sup0[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, sup0, s->kern, NULL, NULL);
        agreed_failure(st, "more ranks than", "grid with grid_size 2 < ranks");
        pk_mpi_grid_plan_destroy(pl);
        pl = NULL;
    }
    /* another kernel stack on the last rank */
    float *k = malloc(2 * s->kcount * sizeof *k);
    memcpy(k, s->kern, 2 * s->kcount * sizeof *k);
    if (rank == nranks - 1)
        k[7] += 1.0f;
    st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &s->p, s->support, k, NULL, NULL);
    if (nranks > 1)
        agreed_failure(st, "differ", "grid with another kernel stack on the last rank");
    else
        check(st == PK_OK, "grid plan on one rank");
    pk_mpi_grid_plan_destroy(pl);
    pl = NULL;
    /* oversample 3 on the last rank (and so on one rank: refused by the checks) */
    pk_grid_params p = s->p;
    if (rank == nranks - 1)
        p.oversample = 3;
    st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, s->support, s->kern, NULL, NULL);
    agreed_failure(st, NULL, "grid with oversample 3 on the last rank");
    pk_mpi_grid_plan_destroy(pl);
    pl = NULL;
    /* run: a NULL visibility array on rank 0 (num_vis > 0): the local gridder refuses, every
     * rank returns its status, and the plan still runs afterwards */
    st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &s->p, s->support, s->kern, NULL, NULL);
    if (st == PK_OK) {
        pk_grid_data d = gr_data(s);
        d.num_vis = 10;
        if (rank == 0)
            d.uu = NULL;
        st = pk_mpi_grid_plan_run(pl, &d, NULL, NULL, NULL, NULL);
        agreed_failure(st, "rank 0", "grid run with uu NULL on rank 0");
        int r0, r1;
        const float *b = (const float *)1;
        pk_mpi_grid_plan_band(pl, &r0, &r1, &b);
        d.uu = s->uu;
        int64_t sk = -1;
        st = pk_mpi_grid_plan_run(pl, &d, NULL, NULL, &sk, NULL);
        check(b == NULL && st == PK_OK && sk >= 0,
              "grid run after a failed one: no band after the failure, then runs (%s)",
              pk_status_name(st));
        st = pk_mpi_grid_plan_run(pl, rank == 0 ? NULL : &d, NULL, NULL, NULL, NULL);
        agreed_failure(st, "d must not be NULL", "grid run with d NULL on rank 0");
    } else {
        check(0, "grid plan for the run failures: %s", pk_mpi_last_error());
    }
    pk_mpi_grid_plan_destroy(pl);
    free(k);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    pk_context *ctx = new_ctx();
    char names[16][32];

    int nv = variants_of(ctx, pk_diffusion3d_variants, names, 16);
    for (int v = 0; v < nv; v++) {
        d3_case(ctx, names[v], 13, 7, 23, 7, 1, 0, 0);
        d3_case(ctx, names[v], 13, 7, 23, 7, 2, 0, 0);
        d3_case(ctx, names[v], 13, 7, 23, 7, 2, 1, 0);
        d3_case(ctx, names[v], 13, 7, 23, 7, 3, 0, 1);
    }
    /* a device backend: without overlap the field stays on the device, only the boundary and
     * halo planes cross (plan_*_planes); with overlap the host path */
    if (pk_backend_available(ctx, PK_BACKEND_OPENCL, NULL) && pk_device_count(ctx, PK_BACKEND_OPENCL) > 0) {
        d3_case(ctx, "opencl", 13, 7, 23, 7, 2, 0, 0);
        d3_case(ctx, "opencl", 13, 7, 23, 7, 2, 1, 0);
        d3_case(ctx, "opencl", 13, 7, 23, 9, 3, 0, 1); /* 1-plane slabs; 3 + 3 + 3 steps */
        d3_case(ctx, "opencl", 9, 5, 31, 5, 2, 0, 0);  /* a last chunk of 1 step */
    } else {
        skip("no OpenCL device", "diffusion3d opencl through the distributed plan");
    }
    d3_case(ctx, "serial", 9, 5, 31, 9, 1, 1, 0);
    d3_case(ctx, "serial", 9, 5, 31, 5, 3, 1, 0);
    d3_case(ctx, "serial", 6, 6, nranks, 4, 2, 0, 0); /* one plane per rank */

    int nl = variants_of(ctx, pk_laplace2d_variants, names, 16);
    for (int v = 0; v < nl; v++) {
        lp_case(ctx, names[v], PK_LAP_LEXI, 37, 7, 2, 0);
        lp_case(ctx, names[v], PK_LAP_LEXI, 37, 9, 3, 1); /* halos from beyond the neighbours */
        lp_case(ctx, names[v], PK_LAP_HVFO, 48, 7, 0, 0); /* tiles padded to 16 lanes */
        lp_case(ctx, names[v], PK_LAP_LEXI, 64, 12, 0, 0);
    }

    int nc = variants_of(ctx, pk_conv2d_variants, names, 16);
    for (int v = 0; v < nc; v++) {
        cv_case(ctx, names[v], 29, 17, 5, 3, 0);
        cv_case(ctx, names[v], 29, 17, 9, 4, 1); /* halos from beyond the neighbours */
        cv_case(ctx, names[v], 6, 11, 7, 5, 0);  /* a PSF taller than the frame */
    }

    int ns = variants_of(ctx, pk_su3_variants, names, 16);
    for (int v = 0; v < ns; v++) {
        s3_case(ctx, names[v], PK_SU3_AOS, 1001);
        s3_case(ctx, names[v], PK_SU3_HVFO, 1001);
    }
    int nm = variants_of(ctx, pk_magicfilter3d_variants, names, 16);
    for (int v = 0; v < nm; v++) {
        /* both methods where the variant has a host pass, and the plan's own choice */
        const int host_pass = strcmp(names[v], "serial-direct") != 0;
        for (int m = host_pass ? -1 : 0; m < 2 - !host_pass; m++) {
            for (int bc = 0; bc < 3; bc++)
                for (int tr = 0; tr < 2; tr++)
                    mf_case(ctx, names[v], 19, 6, 23, tr, bc, m);
            mf_case(ctx, names[v], 17, 5, 6, 0, PK_MF_PERIODIC, m); /* halos wrap more than once */
            mf_case(ctx, names[v], 5, 3, 6, 1, PK_MF_GROW, m);      /* halos beyond a neighbour */
            mf_case(ctx, names[v], 5, 3, 6, 0, PK_MF_SHRINK, m);
        }
        /* transposes: fewer third-pass lines than ranks (periodic 1 x 1: one line) */
        if (host_pass) {
            mf_case(ctx, names[v], 1, 1, 9, 0, PK_MF_PERIODIC, 1);
            mf_case(ctx, names[v], 2, 1, 7, 1, PK_MF_SHRINK, 1);
        }
    }
    int nd = variants_of(ctx, pk_dslash_variants, names, 16);
    for (int v = 0; v < nd; v++) {
        ds_case(ctx, names[v], 4, 3, 2, 7, 0, 0, 0, 1, -1); /* uneven t over 2, 3, 4 ranks */
        ds_case(ctx, names[v], 4, 4, 4, 8, 1, 0, 0, 1, -1);
        ds_case(ctx, names[v], 2, 4, 3, nranks, 0, 1, 0, 1, -1); /* one t-plane per rank, chi = psi */
        ds_case(ctx, names[v], 4, 3, 2, 7, 0, 0, 1, 1, -1);      /* half-spinor faces */
        ds_case(ctx, names[v], 4, 4, 4, 8, 1, 0, 1, 1, -1);
        ds_case(ctx, names[v], 2, 4, 3, nranks, 0, 1, 1, 1, -1);
        /* overlap 0: the block whole with its halos; 1: three or more planes a rank */
        ds_case(ctx, names[v], 4, 3, 2, 7, 0, 0, 0, 1, 0);
        ds_case(ctx, names[v], 4, 3, 2, 7, 1, 1, 1, 1, 0);
        ds_case(ctx, names[v], 3, 2, 2, 3 * nranks + 1, 1, 1, 0, 1, 1);
        ds_case(ctx, names[v], 3, 2, 2, 3 * nranks + 1, 0, 0, 1, 1, 1);
        /* split along z too: every ranks_z that divides the ranks (all along z; 2 x 2 on 4),
         * uneven z, one z-plane per rank, full and half spinors, recon12 */
        for (int pz = 2; pz <= nranks; pz++) {
            if (nranks % pz)
                continue;
            ds_case(ctx, names[v], 3, 2, 5, 6, 0, 0, 0, pz, -1);
            ds_case(ctx, names[v], 2, 3, pz, 2 * (nranks / pz) + 1, 1, 1, 0, pz, -1);
            ds_case(ctx, names[v], 3, 2, 5, 6, 0, 0, 1, pz, -1);
            ds_case(ctx, names[v], 2, 3, pz, 2 * (nranks / pz) + 1, 1, 1, 1, pz, -1);
            /* overlap 0: the block whole with its halos after both exchanges */
            ds_case(ctx, names[v], 3, 2, 5, 6, 0, 1, 0, pz, 0);
            ds_case(ctx, names[v], 3, 2, 5, 6, 1, 0, 1, pz, 0);
            /* overlap 1: interior sites on every rank (3 or more planes along each split axis) */
            ds_case(ctx, names[v], 2, 3, 3 * pz + 1, 3 * (nranks / pz) + 2, 0, 1, 0, pz, 1);
            ds_case(ctx, names[v], 2, 3, 3 * pz + 2, 3 * (nranks / pz) + 1, 1, 0, 1, pz, 1);
        }
    }
    /* dslash on a device backend: the block whole (ranges refused), links resident on the
     * device, psi alone up per execute (plan_execute_psi) */
    if (pk_backend_available(ctx, PK_BACKEND_OPENCL, NULL) && pk_device_count(ctx, PK_BACKEND_OPENCL) > 0) {
        ds_case(ctx, "opencl", 4, 3, 2, 7, 0, 0, 0, 1, -1);
        ds_case(ctx, "opencl", 4, 4, 4, 8, 1, 1, 1, 1, -1);
        for (int pz = 2; pz <= nranks; pz++)
            if (nranks % pz == 0)
                ds_case(ctx, "opencl", 3, 2, 5, 6, 1, 0, 0, pz, -1);
    } else {
        skip("no OpenCL device", "dslash opencl through the distributed plan");
    }
    if (nv == 0 || nl == 0 || nc == 0 || ns == 0 || nm == 0 || nd == 0)
        skip("no serial or OpenMP backend", "some kernel has no variant here");

    {
        /* pk_mpi_cuda_aware: one of -1, 0, 1 and the same on every rank here (one MPI
         * library); the plans' messages lie in host memory */
        int aware = pk_mpi_cuda_aware(), lo = 0, hi = 0;
        MPI_Allreduce(&aware, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&aware, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        pk_mpi_su3_plan *sp = NULL;
        pk_mpi_info si;
        memset(&si, 0, sizeof si);
        pk_su3_params sq = {(size_t)nranks * 4, PK_SU3_AOS, 0};
        int hok = pk_mpi_su3_plan_create(&sp, MPI_COMM_WORLD, ctx, &sq, NULL, &si) == PK_OK &&
                  strcmp(si.halo_memory, "host") == 0;
        pk_mpi_su3_plan_destroy(sp);
        check(lo == hi && lo >= -1 && hi <= 1 && hok,
              "pk_mpi_cuda_aware %d on every rank (1 CUDA-aware, 0 not, -1 cannot say); a plan's "
              "info.halo_memory \"host\"", lo);
    }
    failures_cases(ctx);
    {
        gr_set gs[3];
        gr_oracle go[3];
        gr_make_uniform(&gs[0]);
        gr_make_central(&gs[1]);
        gr_make_nonfinite(&gs[2]);
        for (int i = 0; i < 3; i++)
            gr_oracle_make(&go[i], &gs[i]);
        int ng = variants_of(ctx, pk_grid_variants, names, 16);
        for (int v = 0; v < ng; v++) {
            gr_case(ctx, names[v], &gs[0], &go[0], 0, 0);
            gr_case(ctx, names[v], &gs[1], &go[1], 1, 1);
        }
        gr_case(ctx, "serial", &gs[0], &go[0], 1, 0);
        gr_case(ctx, "serial", &gs[2], &go[2], 1, 1);
        for (int v = 0; v < ng; v++)
            im_case_mpi(ctx, names[v], 0, 0);
        im_case_mpi(ctx, "serial", 1, 1);
        if (ng == 0)
            skip("no serial or OpenMP backend", "grid has no variant here");
        gr_failures(ctx, &gs[0]);
        for (int i = 0; i < 3; i++) {
            gr_oracle_free(&go[i]);
            gr_set_free(&gs[i]);
        }
    }

    /* everyone is still in step: a last collective */
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(sum == nranks, "all %d ranks reach the end together", nranks);
    pk_context_destroy(ctx);
    MPI_Finalize();
    return failures ? 1 : 0;
}
