/* cli_mpi.c - the command line's MPI part: `mpirun -np N portkern run KERNEL --mpi ...` runs a
 * distributed plan of libportkern-mpi (mpi/portkern_mpi.h) on generated data, each rank its
 * slab on its own context; rank 0 prints one JSON line with every rank's compute and
 * communication seconds, the other ranks print nothing.  `mpirun -np N portkern-probe --mpi`
 * lists each rank's host and the backend auto picks there.  Kept apart from the generic
 * driver (tools/cli_driver.c, which needs no MPI): a build without MPI compiles only the
 * stubs at the end, which refuse --mpi. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#endif
#include "cli_common.h"
#include "cli_mpi.h"

#include <stdio.h>
#include <string.h>

int cli_mpi_requested(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--"); ++i)
        if (strcmp(argv[i], "--mpi") == 0)
            return 1;
    return 0;
}

#ifdef PK_HAVE_MPI
#include "portkern_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* The kernels with a distributed plan here, and the options each takes (besides the common
 * ones: --mpi --variant --backend --threads --repeat --seed). */
static const struct {
    const char *name, *opts;
} mpi_kernels[] = {
    {"diffusion3d", " nx ny nz count verify "},
    {"laplace2d", " l count sigma layout nw verify "},
    {"conv2d", " h w kh kw verify "},
    {"su3", " nv verify "},
    {"magicfilter3d", " n1 n2 n3 size transpose bc transposes verify "},
    {"dslash", " x y z t dims kappa recon12 half ranks-z overlap verify "},
    {"grid", " dataset scale in out verify image "},
    {NULL, NULL},
};

/* grid's data set, the whole of it on every rank (generated, or read from --in DIR); each
 * rank grids its block of the visibilities. */
typedef struct mpi_grid {
    pk_grid_params p;
    pk_grid_data d; /* all visibilities */
    const int32_t *support;
    const float *kernels;
    int image_size; /* the data set's (params.json's image_size; 0: none given) */
    char name[256];
    pk_grid_dataset gen;
    pk_array arr[7];
} mpi_grid;

typedef struct mpi_args {
    const char *variant, *backend, *size, *dims, *bc, *dataset, *in, *out, *layout;
    int mpi, threads, repeat, seed, count, transpose, recon12, half, ranks_z, verify;
    int overlap; /* dslash: pk_mpi_options.overlap (-1: the default) */
    int image;   /* grid: the dirty image of the summed grid (pk_mpi_grid_plan_image) */
    int transposes; /* magicfilter3d: pk_mpi_options.transposes (-1: the default) */
    int nx, ny, nz, h, w, kh, kw, nv, n1, n2, n3, x, y, z, t, l, nw;
    double kappa, scale, sigma;
    mpi_grid *grid;
    long long items;     /* this rank's items (grid: its visibilities), -1: none to report */
    int verify_failed;   /* rank 0: --verify found a difference */
} mpi_args;

/* The CPUs this process may run on (its affinity mask); 0 where that cannot be asked. */
static int cpus_allowed(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
#endif
    return 0;
}

/* Deterministic data in [-1, 1) by global index and seed: the same field for any number of
 * ranks. */
static double hval(uint64_t i, int seed)
{
    uint64_t x = i * 0x9E3779B97F4A7C15ull + (uint64_t)seed * 0xD1B54A32D192ED03ull + 1;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (double)(x & 0xFFFFFF) / 8388608.0 - 1.0;
}

/* "AxBxC" (sep 'x') or "A,B,C,D" (sep ','): n integers >= 1, or one for all. */
static int parse_ints(const char *prog, const char *opt, const char *s, char sep, int n, int *out)
{
    int k = 0;
    const char *p = s;
    while (k < n) {
        char buf[32], why[128];
        size_t len = strcspn(p, sep == 'x' ? "x" : ",");
        if (len == 0 || len >= sizeof buf)
            break;
        memcpy(buf, p, len);
        buf[len] = 0;
        if (cli_to_int(buf, 1, 2147483647.0, &out[k], why, sizeof why))
            return cli_usage_error(prog, "--%s %s: %s", opt, s, why);
        k++;
        p += len;
        if (!*p)
            break;
        p++;
    }
    if (k == 1 && !*p) {
        for (int i = 1; i < n; ++i)
            out[i] = out[0];
        return 0;
    }
    if (k != n || *p)
        return cli_usage_error(prog, "--%s %s: expected %d integers >= 1 separated by '%c' (or "
                                     "one for all)", opt, s, n, sep);
    return 0;
}

/* The fastest repeat's info of each rank, gathered on rank 0 and printed as one JSON line. */
static void report(MPI_Comm comm, const char *kernel, const char *params_json,
                   const pk_mpi_info *best, int repeat, long long items)
{
    int rank = 0, n = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    enum { ND = 15, NS = 4, SL = 128 };
    double mine[ND] = {best->i0, best->i1, best->compute_s, best->comm_s, best->agree_s,
                       best->wall_s, best->halo_bytes, (double)best->messages,
                       best->local.device, (double)items, best->z0, best->z1,
                       best->overlap, pk_mpi_cuda_aware(), cpus_allowed()};
    char smine[NS][SL];
    int len = SL;
    memset(smine, 0, sizeof smine);
    MPI_Get_processor_name(smine[0], &len);
    snprintf(smine[1], SL, "%s", pk_backend_name(best->local.backend));
    snprintf(smine[2], SL, "%s", best->local.variant);
    snprintf(smine[3], SL, "%s", best->halo_memory);
    double *all = rank == 0 ? malloc((size_t)n * ND * sizeof *all) : NULL;
    char *sall = rank == 0 ? malloc((size_t)n * NS * SL) : NULL;
    int ok = rank != 0 || (all && sall);
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (!ok) { /* rank 0 out of memory: nothing to print */
        free(all);
        free(sall);
        return;
    }
    MPI_Gather(mine, ND, MPI_DOUBLE, all, ND, MPI_DOUBLE, 0, comm);
    MPI_Gather(smine, NS * SL, MPI_CHAR, sall, NS * SL, MPI_CHAR, 0, comm);
    if (rank == 0) {
        double wall = 0, comp = 0, comm_s = 0;
        for (int r = 0; r < n; ++r) {
            const double *a = all + (size_t)r * ND;
            wall = a[5] > wall ? a[5] : wall;
            comp = a[2] > comp ? a[2] : comp;
            comm_s = a[3] > comm_s ? a[3] : comm_s;
        }
        cli_json j;
        cj_init(&j, stdout, 0);
        cj_open(&j, NULL, '{');
        cj_str(&j, "kernel", kernel);
        cj_bool(&j, "mpi", 1);
        cj_int(&j, "ranks", n);
        cj_raw(&j, params_json);
        cj_int(&j, "repeat", repeat);
        cj_num(&j, "wall_s", wall);
        cj_num(&j, "max_compute_s", comp);
        cj_num(&j, "max_comm_s", comm_s);
        cj_open(&j, "per_rank", '[');
        for (int r = 0; r < n; ++r) {
            const double *a = all + (size_t)r * ND;
            const char *s = sall + (size_t)r * NS * SL;
            cj_open(&j, NULL, '{');
            cj_int(&j, "rank", r);
            cj_str(&j, "host", s);
            cj_str(&j, "backend", s + SL);
            cj_int(&j, "device", (long long)a[8]);
            cj_str(&j, "variant", s + 2 * SL);
            cj_int(&j, "i0", (long long)a[0]);
            cj_int(&j, "i1", (long long)a[1]);
            if (a[11] > 0) { /* dslash: the z-planes too */
                cj_int(&j, "z0", (long long)a[10]);
                cj_int(&j, "z1", (long long)a[11]);
                cj_bool(&j, "overlap", a[12] != 0); /* interior while the faces travel */
            }
            cj_num(&j, "compute_s", a[2]);
            cj_num(&j, "comm_s", a[3]);
            cj_num(&j, "agree_s", a[4]);
            cj_num(&j, "wall_s", a[5]);
            cj_num(&j, "halo_bytes", a[6]);
            cj_int(&j, "messages", (long long)a[7]);
            /* the messages' buffers, and whether this rank's MPI takes GPU memory (-1: the
             * library cannot say) */
            if (a[14] > 0) /* the CPUs the rank may run on (its affinity mask) */
                cj_int(&j, "cpus", (long long)a[14]);
            cj_str(&j, "halo_memory", s + 3 * SL);
            if (a[13] >= 0)
                cj_bool(&j, "mpi_cuda_aware", a[13] > 0);
            else
                cj_null(&j, "mpi_cuda_aware");
            if (a[9] >= 0)
                cj_int(&j, "num_vis", (long long)a[9]);
            cj_close(&j);
        }
        cj_close(&j);
        cj_close(&j);
        fflush(stdout);
    }
    free(all);
    free(sall);
}

/* PK_OK on every rank when every rank's allocations succeeded, else PK_ENOMEM on every
 * rank (a rank that stopped alone would leave the others in the plan's collectives). */
static pk_status agree_alloc(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all ? PK_OK : PK_ENOMEM;
}

/* Keep the info of the fastest call (every rank keeps its own; wall_s decides). */
static void keep_best(pk_mpi_info *best, const pk_mpi_info *info, int first)
{
    if (first || info->wall_s < best->wall_s)
        *best = *info;
}

/* Rank 0 gathers every rank's nrows rows of row_bytes bytes, in rank order, into *all (total
 * rows, allocated there; NULL on the other ranks).  Collective; PK_ENOMEM on every rank when
 * rank 0 has no memory for them. */
static pk_status gather_rows(const void *mine, int nrows, size_t row_bytes, size_t total,
                             void **all)
{
    int rank = 0, n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    *all = rank == 0 ? malloc(total * row_bytes + 8) : NULL;
    int *cnt = rank == 0 ? malloc(2 * (size_t)n * sizeof *cnt) : NULL;
    pk_status st = agree_alloc(rank != 0 || (*all && cnt));
    if (st != PK_OK) {
        free(*all);
        *all = NULL;
        free(cnt);
        return st;
    }
    MPI_Datatype rt;
    MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &rt);
    MPI_Type_commit(&rt);
    MPI_Gather(&nrows, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        cnt[n] = 0;
        for (int r = 1; r < n; ++r)
            cnt[n + r] = cnt[n + r - 1] + cnt[r - 1];
    }
    MPI_Gatherv(mine, nrows, rt, *all, cnt, cnt ? cnt + n : NULL, rt, 0, MPI_COMM_WORLD);
    MPI_Type_free(&rt);
    free(cnt);
    return PK_OK;
}

/* Rank 0: the verdict of a gathered result against one process's (rep from the differ,
 * bitwise from memcmp) into pj as "verify" and "verify_rule", and into a->verify_failed. */
static void append_verdict(mpi_args *a, char *pj, size_t pjlen, const pk_diff_report *rep,
                           int bitwise, const char *mode, double rtol, const char *rule)
{
    a->verify_failed = !rep->equal;
    size_t k = strlen(pj);
    snprintf(pj + k, pjlen - k, ", \"verify\": {\"equal\": %s, \"bitwise\": %s, \"mode\": "
             "\"%s\", \"rtol\": %g, \"max_rel_err\": %.6g, \"max_abs_err\": %.6g, "
             "\"norm_rel_err\": %.6g, \"num_failed\": %zu}, \"verify_rule\": \"%s\"",
             rep->equal ? "true" : "false", bitwise ? "true" : "false", mode, rtol,
             rep->max_rel_err, rep->max_abs_err, rep->norm_rel_err, rep->num_failed, rule);
}

/* ---- grid ------------------------------------------------------------------------------- */
static void grid_free(mpi_grid *g)
{
    pk_grid_dataset_free(&g->gen);
    for (int i = 0; i < 7; ++i)
        pk_array_free(&g->arr[i]);
}

/* A number of DIR/params.json (required). */
static int grid_param(const char *prog, const char *path, const cli_jobject *o, const char *key,
                      double *v)
{
    const cli_jvalue *x = cli_json_get(o, key);
    if (!x || x->type != CLI_JNUM)
        return cli_usage_error(prog, "%s: the number \"%s\" is needed (a 'portkern gen grid' "
                                     "directory)", path, key);
    *v = x->num;
    return 0;
}

/* The whole data set on this rank: the generated --dataset (in memory, compact kernels), or
 * DIR/params.json's grid_size, oversample, cell_size_rad, w_scale and the seven arrays of
 * 'portkern gen grid' (kernels.npy 3-D: full, 1-D: compact).  0 or the exit code after a
 * message. */
static int grid_load(const char *prog, const mpi_args *a, mpi_grid *g)
{
    memset(g, 0, sizeof *g);
    if (!a->in) {
        pk_grid_gen_options o;
        pk_grid_gen_options_init(&o);
        o.dataset = a->dataset ? a->dataset : "small";
        o.scale = a->scale;
        o.seed = (uint64_t)a->seed;
        o.kernel_layout = PK_GRID_KERNELS_COMPACT;
        pk_status st = pk_grid_generate(&o, &g->gen);
        if (st != PK_OK)
            return cli_usage_error(prog, "--dataset %s: %s", o.dataset, pk_last_error());
        g->p = g->gen.params;
        g->d = g->gen.data;
        g->support = g->gen.support.data;
        g->kernels = g->gen.kernels.data;
        g->image_size = g->gen.image_size;
        snprintf(g->name, sizeof g->name, "%s", g->gen.name);
        return 0;
    }
    char path[4096], why[160];
    if (cli_join(path, sizeof path, a->in, "params.json"))
        return cli_usage_error(prog, "path too long: %s", a->in);
    char *text = cli_read_text(path);
    if (!text)
        return cli_usage_error(prog, "%s: %s", path, strerror(errno));
    cli_jobject *o = malloc(sizeof *o);
    int bad = !o || cli_json_parse_flat(text, o, why, sizeof why);
    free(text);
    if (bad) {
        free(o);
        return cli_usage_error(prog, "%s: %s", path, o ? why : "out of memory");
    }
    double gs = 0, os = 0, cell = 0, ws = 0;
    int rc = grid_param(prog, path, o, "grid_size", &gs);
    if (!rc)
        rc = grid_param(prog, path, o, "oversample", &os);
    if (!rc)
        rc = grid_param(prog, path, o, "cell_size_rad", &cell);
    if (!rc)
        rc = grid_param(prog, path, o, "w_scale", &ws);
    const cli_jvalue *nm = cli_json_get(o, "dataset"), *is = cli_json_get(o, "image_size");
    snprintf(g->name, sizeof g->name, "%s", nm && nm->type == CLI_JSTR ? nm->str : a->in);
    if (is && is->type == CLI_JNUM && is->num >= 2 && is->num <= INT_MAX)
        g->image_size = (int)is->num;
    free(o);
    if (rc)
        return rc;
    if (!(gs >= 2 && gs <= INT_MAX && os >= 2 && os <= 1024))
        return cli_usage_error(prog, "%s: grid_size %g, oversample %g out of range", path, gs,
                               os);
    if ((rc = cli_grid_arrays(prog, a->in, g->arr)))
        return rc;
    const pk_array *k = &g->arr[6];
    const size_t planes = g->arr[5].shape[0];
    pk_grid_params_init(&g->p);
    g->p.grid_size = (int)gs;
    g->p.oversample = (int)os;
    g->p.cell_size_rad = cell;
    g->p.w_scale = ws;
    g->p.num_w_planes = (int)planes;
    g->p.kernel_layout = k->ndim == 3 ? PK_GRID_KERNELS_FULL : PK_GRID_KERNELS_COMPACT;
    g->p.conv_size_half = k->ndim == 3 ? (int)k->shape[1] : 0;
    g->support = g->arr[5].data;
    g->kernels = k->data;
    size_t count = 0;
    const pk_status st = pk_grid_kernel_count(&g->p, g->support, &count);
    if (st != PK_OK)
        return cli_lib_error(prog, st);
    if (k->ndim == 1 && count != k->shape[0])
        return cli_usage_error(prog, "%s/kernels.npy: %zu complex samples, the supports need %zu",
                               a->in, k->shape[0], count);
    g->d.num_vis = g->arr[0].shape[0];
    g->d.uu = g->arr[0].data;
    g->d.vv = g->arr[1].data;
    g->d.ww = g->arr[2].data;
    g->d.vis = g->arr[3].data;
    g->d.weight = g->arr[4].data;
    return 0;
}

/* Rank 0 gathers the bands into the whole grid (NULL on the other ranks, and when it has no
 * memory for it: the status says so on every rank). */
static pk_status grid_gather(pk_mpi_grid_plan *pl, int G, float **full)
{
    int r0 = 0, r1 = 0;
    const float *band = NULL;
    pk_mpi_grid_plan_band(pl, &r0, &r1, &band);
    void *all = NULL;
    pk_status st = gather_rows(band, r1 - r0, 8 * (size_t)G, (size_t)G, &all);
    *full = all;
    return st;
}

/* --verify on rank 0: the gathered grid against the double reference of all visibilities
 * (what `portkern run grid --verify` compares one process's grid with; docs/KERNELS.md 1.5):
 * norm-wise 1e-5, norm 1e-9 relative, num_skipped exactly.  Appends "verify" to pj. */
static void grid_verify(mpi_args *a, const float *full, double norm, int64_t sk, char *pj,
                        size_t pjlen)
{
    const mpi_grid *g = a->grid;
    size_t n2 = 2 * (size_t)g->p.grid_size * (size_t)g->p.grid_size;
    double *ref = calloc(n2, sizeof *ref), nref = 0;
    int64_t skref = -1;
    const double t0 = cli_now_s();
    if (!ref || pk_grid_reference_f64(&g->p, g->support, g->kernels, &g->d, ref, &nref,
                                      &skref) != PK_OK) {
        fprintf(stderr, "portkern run: --verify: %s\n", ref ? pk_last_error() : "out of memory");
        a->verify_failed = 1;
        free(ref);
        return;
    }
    const double ref_s = cli_now_s() - t0;
    double num = 0, den = 0;
    for (size_t i = 0; i < n2; ++i) {
        const double d = (double)full[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    free(ref);
    const double rel = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
    const double nrel = nref != 0 ? fabs(norm - nref) / fabs(nref) : fabs(norm);
    const int equal = rel <= 1e-5 && nrel <= 1e-9 && sk == skref;
    a->verify_failed = !equal;
    size_t k = strlen(pj);
    snprintf(pj + k, pjlen - k, ", \"verify\": {\"equal\": %s, \"mode\": \"norm\", \"rtol\": "
             "1e-05, \"norm_rel_err\": %.6g, \"norm_ref\": %.17g, \"norm_rel_diff\": %.6g, "
             "\"num_skipped_ref\": %lld, \"num_skipped_equal\": %s, \"reference_seconds\": "
             "%.6g}, \"verify_rule\": \"the bands gathered on rank 0: ||grid - ref||_2 / "
             "||ref||_2 <= rtol (ref: double-accumulating reference of all visibilities, one "
             "process), |norm - norm_ref| <= 1e-9 |norm_ref|, num_skipped exact\"",
             equal ? "true" : "false", rel, nref, nrel, (long long)skref,
             sk == skref ? "true" : "false", ref_s);
}

/* --image: the dirty image of the last run's summed grid (pk_mpi_grid_plan_image), the
 * fastest of --repeat (rank 0's times);
 * with --verify rank 0 compares it with pk_image_from_grid of the gathered grid (bitwise
 * expected); with --out it writes DIR/image.npy (float32 [N][N]).  Appends to pj. */
static pk_status grid_image(mpi_args *a, pk_mpi_grid_plan *pl, const float *full, double norm,
                            char *pj, size_t pjlen)
{
    const mpi_grid *g = a->grid;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pk_image_params ip;
    pk_image_params_init(&ip);
    ip.grid = g->p;
    ip.image_size = g->image_size;
    const size_t nn = (size_t)g->image_size * (size_t)g->image_size;
    float *img = rank == 0 && nn ? malloc(nn * sizeof *img) : NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    /* image_size 0 (none in params.json) or no memory on rank 0: the library refuses; the
     * fastest of --repeat images (the first pays the work arrays' page faults) */
    pk_status st = PK_OK;
    for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
        pk_mpi_info one;
        memset(&one, 0, sizeof one);
        st = pk_mpi_grid_plan_image(pl, &ip, g->support, g->kernels, img, &one);
        if (r == 0 || one.wall_s < info.wall_s)
            info = one;
    }
    size_t len = strlen(pj);
    if (st == PK_OK)
        snprintf(pj + len, pjlen - len, ", \"image\": {\"image_size\": %d, \"seconds\": %.6g, "
                 "\"compute_s\": %.6g, \"comm_s\": %.6g, \"sent_bytes\": %.17g}",
                 g->image_size, info.wall_s, info.compute_s, info.comm_s, info.halo_bytes);
    if (st == PK_OK && rank == 0 && a->verify && full) {
        float *want = malloc(nn * sizeof *want);
        const int same = want &&
                         pk_image_from_grid(NULL, &ip, g->support, g->kernels, full, norm, want) ==
                             PK_OK &&
                         memcmp(want, img, nn * sizeof *img) == 0;
        len = strlen(pj);
        snprintf(pj + len, pjlen - len, ", \"image_verify\": {\"bitwise\": %s, \"rule\": \"rank "
                 "0's image against pk_image_from_grid of the gathered grid, bitwise\"}",
                 same ? "true" : "false");
        if (!same)
            a->verify_failed = 1;
        free(want);
    }
    if (st == PK_OK && a->out) {
        int rc = 0;
        if (rank == 0) {
            const size_t shape[2] = {(size_t)g->image_size, (size_t)g->image_size};
            rc = cli_write_npy("portkern run", a->out, "image.npy", PK_DTYPE_F32, 2, shape, img);
        }
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rc)
            st = PK_EIO;
    }
    free(img);
    return st;
}

static pk_status run_grid(mpi_args *a, pk_context *ctx, const pk_mpi_options *o, char *pj,
                          size_t pjlen, pk_mpi_info *best)
{
    const mpi_grid *g = a->grid;
    int rank = 0, n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_mpi_grid_plan *pl = NULL;
    pk_status st = pk_mpi_grid_plan_create(&pl, MPI_COMM_WORLD, ctx, &g->p, g->support,
                                           g->kernels, o, &info);
    if (st != PK_OK)
        return st;
    /* this rank's block of the visibilities (empty when there are more ranks than them) */
    size_t nv = g->d.num_vis, v0 = nv * (size_t)rank / (size_t)n,
           v1 = nv * (size_t)(rank + 1) / (size_t)n;
    pk_grid_data d = g->d;
    d.num_vis = v1 - v0;
    if (d.num_vis) {
        d.uu += v0;
        d.vv += v0;
        d.ww += v0;
        d.vis += 2 * v0;
        d.weight += v0;
    }
    a->items = (long long)d.num_vis;
    double norm = 0;
    int64_t sk = 0;
    for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
        norm = 0;
        st = pk_mpi_grid_plan_run(pl, &d, NULL, &norm, &sk, &info);
        keep_best(best, &info, r == 0);
    }
    int box[4] = {0, 0, 0, 0};
    if (st == PK_OK)
        pk_mpi_grid_plan_box(pl, box);
    snprintf(pj, pjlen, "\"dataset\": \"%s\", \"num_vis\": %zu, \"grid_size\": %d, "
             "\"num_w_planes\": %d, \"oversample\": %d, \"kernel_layout\": \"%s\", \"norm\": "
             "%.17g, \"num_skipped\": %lld, \"box\": [%d, %d, %d, %d], "
             "\"reduced_bytes_per_rank\": %.17g",
             g->name, nv, g->p.grid_size, g->p.num_w_planes, g->p.oversample,
             g->p.kernel_layout == PK_GRID_KERNELS_FULL ? "full" : "compact", norm,
             (long long)sk, box[0], box[1], box[2], box[3],
             8.0 * (double)(box[1] - box[0]) * (double)(box[3] - box[2]));
    float *full = NULL;
    if (st == PK_OK && (a->verify || (a->out && !a->image)))
        st = grid_gather(pl, g->p.grid_size, &full);
    if (st == PK_OK && rank == 0 && a->verify)
        grid_verify(a, full, norm, sk, pj, pjlen);
    if (st == PK_OK && a->out && !a->image) {
        int rc = 0;
        if (rank == 0) {
            const size_t shape[2] = {(size_t)g->p.grid_size, (size_t)g->p.grid_size};
            rc = cli_write_npy("portkern run", a->out, "grid.npy", PK_DTYPE_C64, 2, shape, full);
        }
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rc)
            st = PK_EIO;
    }
    if (st == PK_OK && a->image)
        st = grid_image(a, pl, full, norm, pj, pjlen);
    MPI_Bcast(&a->verify_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(full);
    pk_mpi_grid_plan_destroy(pl);
    return st;
}

/* --verify of the float row slabs (diffusion3d's planes, conv2d's rows): rank 0 gathers
 * every rank's slab (rows of `row` floats) into the whole array and compares it with one
 * process's result of the same variant (`ref`, rank 0's, already computed: NULL on the other
 * ranks), element-wise with the differ (docs/KERNELS.md 6: rtol 1e-5, zero 1e-10), and says
 * whether it is bitwise.  Appends "verify" to pj on rank 0. */
static pk_status slab_verify(mpi_args *a, const float *slab, int i0, int i1, size_t row,
                             const float *ref, size_t nrows, char *pj, size_t pjlen)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pk_status st = agree_alloc(rank != 0 || ref);
    void *all = NULL;
    if (st == PK_OK)
        st = gather_rows(slab, i1 - i0, row * sizeof(float), nrows, &all);
    if (st == PK_OK && rank == 0) {
        pk_diff_report rep;
        memset(&rep, 0, sizeof rep);
        pk_diff_f32(all, ref, nrows * row, 1e-5, 1e-10, PK_DIFF_ELEMENTWISE, &rep);
        append_verdict(a, pj, pjlen, &rep, memcmp(all, ref, nrows * row * sizeof(float)) == 0,
                       "elementwise", 1e-5, "the slabs gathered on rank 0 against one "
                       "process's run of the same variant (rank 0's), the differ element-wise");
    }
    MPI_Bcast(&a->verify_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    return st;
}

/* dslash's blocks: the (t, z) planes of `plane` doubles as gather_rows lays them (rank by
 * rank, each rank's block [t][z]; the ranks a grid of n / pz along t by pz along z, the block
 * rule on both axes) to the global order [T][Z] (to_global 1), or back (0).  Rank 0. */
static void ds_block_order(const double *from, double *to, int T, int Z, int pz, int n,
                           size_t plane, int to_global)
{
    size_t g = 0; /* planes of the ranks before */
    for (int r = 0; r < n; ++r) {
        int t0 = 0, t1 = 0, z0 = 0, z1 = 0;
        pk_mpi_block(T, n / pz, r / pz, &t0, &t1);
        pk_mpi_block(Z, pz, r % pz, &z0, &z1);
        for (int t = t0; t < t1; ++t)
            for (int z = z0; z < z1; ++z, ++g) {
                const size_t at = ((size_t)t * (size_t)Z + (size_t)z) * plane;
                if (to_global)
                    memcpy(to + at, from + g * plane, plane * sizeof *to);
                else
                    memcpy(to + g * plane, from + at, plane * sizeof *to);
            }
    }
}

/* The same for float64 results whose inputs are per-rank (su3, magicfilter3d, dslash):
 * the caller has gathered the inputs and computed ref on rank 0 (NULL elsewhere, or on a
 * failure there); the output rows are gathered here. */
static pk_status slab_verify64(mpi_args *a, const double *out, int nrows, size_t row,
                               const double *ref, size_t total, int mode, double rtol,
                               const char *rule, char *pj, size_t pjlen)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pk_status st = agree_alloc(rank != 0 || ref);
    void *all = NULL;
    if (st == PK_OK)
        st = gather_rows(out, nrows, row * sizeof(double), total, &all);
    if (st == PK_OK && rank == 0) {
        pk_diff_report rep;
        memset(&rep, 0, sizeof rep);
        pk_diff_f64(all, ref, total * row, rtol, 1e-10, mode, &rep);
        append_verdict(a, pj, pjlen, &rep, memcmp(all, ref, total * row * sizeof(double)) == 0,
                       mode == PK_DIFF_NORM ? "norm" : "elementwise", rtol, rule);
    }
    MPI_Bcast(&a->verify_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    return st;
}

/* diffusion3d and laplace2d: row slabs of float (planes of nx ny, rows of l) stepped in
 * place `count` times; the data by global index (the same field for any number of ranks);
 * --verify against one process's call of the same variant on the whole field. */
typedef struct stencil_ops {
    pk_status (*create)(void **pl, pk_context *ctx, const void *p, const pk_mpi_options *o,
                        pk_mpi_info *info);
    pk_status (*execute)(void *pl, float *f, int count, pk_mpi_info *info);
    void (*destroy)(void *pl);
    pk_status (*whole)(pk_context *ctx, const void *p, const char *variant, float *f);
} stencil_ops;

static pk_status d3_create(void **pl, pk_context *ctx, const void *p, const pk_mpi_options *o,
                           pk_mpi_info *info)
{
    pk_mpi_diffusion3d_plan *q = NULL;
    const pk_status st = pk_mpi_diffusion3d_plan_create(&q, MPI_COMM_WORLD, ctx, p, o, info);
    *pl = q;
    return st;
}
static pk_status d3_execute(void *pl, float *f, int count, pk_mpi_info *info)
{
    return pk_mpi_diffusion3d_plan_execute(pl, f, count, info);
}
static void d3_destroy(void *pl) { pk_mpi_diffusion3d_plan_destroy(pl); }
static pk_status d3_whole(pk_context *ctx, const void *p, const char *variant, float *f)
{
    return pk_diffusion3d(ctx, p, variant, f, NULL);
}
static const stencil_ops d3_stencil = {d3_create, d3_execute, d3_destroy, d3_whole};

static pk_status lp_create(void **pl, pk_context *ctx, const void *p, const pk_mpi_options *o,
                           pk_mpi_info *info)
{
    pk_mpi_laplace2d_plan *q = NULL;
    const pk_status st = pk_mpi_laplace2d_plan_create(&q, MPI_COMM_WORLD, ctx, p, o, info);
    *pl = q;
    return st;
}
static pk_status lp_execute(void *pl, float *f, int count, pk_mpi_info *info)
{
    return pk_mpi_laplace2d_plan_execute(pl, f, count, info);
}
static void lp_destroy(void *pl) { pk_mpi_laplace2d_plan_destroy(pl); }
static pk_status lp_whole(pk_context *ctx, const void *p, const char *variant, float *f)
{
    return pk_laplace2d(ctx, p, variant, f, NULL);
}
static const stencil_ops lp_stencil = {lp_create, lp_execute, lp_destroy, lp_whole};

static pk_status run_stencil(const stencil_ops *k, const void *p, int nrows, size_t row,
                             mpi_args *a, pk_context *ctx, const pk_mpi_options *o, char *pj,
                             size_t pjlen, pk_mpi_info *best)
{
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    void *pl = NULL;
    pk_status st = k->create(&pl, ctx, p, o, &info);
    if (st != PK_OK)
        return st;
    const size_t L = (size_t)(info.i1 - info.i0);
    float *f = malloc(L * row * sizeof *f + 4);
    st = agree_alloc(f != NULL);
    for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
        for (size_t i = 0; i < L * row; ++i)
            f[i] = (float)(1.0 + 0.5 * hval((size_t)info.i0 * row + i, a->seed));
        st = k->execute(pl, f, a->count, &info);
        keep_best(best, &info, r == 0);
    }
    if (st == PK_OK && a->verify) { /* one process: rank 0, the whole field */
        float *ref = NULL;
        if (info.rank == 0) {
            const size_t nall = row * (size_t)nrows;
            ref = malloc(nall * sizeof *ref + 4);
            for (size_t i = 0; ref && i < nall; ++i)
                ref[i] = (float)(1.0 + 0.5 * hval(i, a->seed));
            if (ref && k->whole(ctx, p, info.local.variant, ref) != PK_OK) {
                fprintf(stderr, "portkern run: --verify: %s\n", pk_last_error());
                free(ref);
                ref = NULL;
            }
        }
        st = slab_verify(a, f, info.i0, info.i1, row, ref, (size_t)nrows, pj, pjlen);
        free(ref);
    }
    free(f);
    k->destroy(pl);
    return st;
}

static pk_status run_kernel(const char *kernel, mpi_args *a, pk_context *ctx, char *pj,
                            size_t pjlen, pk_mpi_info *best)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    o.variant = a->variant;
    o.half = a->half;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = PK_OK;
    if (strcmp(kernel, "grid") == 0)
        return run_grid(a, ctx, &o, pj, pjlen, best);
    if (strcmp(kernel, "diffusion3d") == 0) {
        pk_diffusion3d_params p;
        pk_diffusion3d_params_default(&p, a->nx, a->ny, a->nz, a->count);
        snprintf(pj, pjlen, "\"nx\": %d, \"ny\": %d, \"nz\": %d, \"count\": %d", a->nx, a->ny,
                 a->nz, a->count);
        st = run_stencil(&d3_stencil, &p, a->nz, (size_t)a->nx * a->ny, a, ctx, &o, pj, pjlen,
                         best);
    } else if (strcmp(kernel, "laplace2d") == 0) {
        pk_laplace2d_params p = {a->l, a->count, a->sigma, PK_LAP_LEXI, a->nw};
        if (a->layout) /* checked by the parser */
            pk_laplace2d_layout_from_name(a->layout, &p.layout);
        snprintf(pj, pjlen, "\"l\": %d, \"count\": %d, \"sigma\": %.17g, \"layout\": \"%s\"",
                 a->l, a->count, a->sigma, pk_laplace2d_layout_name(p.layout));
        st = run_stencil(&lp_stencil, &p, a->l, (size_t)a->l, a, ctx, &o, pj, pjlen, best);
    } else if (strcmp(kernel, "conv2d") == 0) {
        pk_conv2d_params p = {a->h, a->w, a->kh, a->kw, PK_CONV2D_AUTO};
        snprintf(pj, pjlen, "\"h\": %d, \"w\": %d, \"kh\": %d, \"kw\": %d", a->h, a->w, a->kh,
                 a->kw);
        size_t nk = (size_t)a->kh * a->kw;
        float *psf = malloc(nk * sizeof *psf + 4);
        if ((st = agree_alloc(psf != NULL)) != PK_OK) {
            free(psf);
            return st;
        }
        for (size_t i = 0; i < nk; ++i)
            psf[i] = (float)((1.0 + 0.5 * hval(i, a->seed + 1)) / (double)nk);
        pk_mpi_conv2d_plan *pl = NULL;
        st = pk_mpi_conv2d_plan_create(&pl, comm, ctx, &p, psf, &o, &info);
        if (st != PK_OK) {
            free(psf);
            return st;
        }
        size_t n = (size_t)(info.i1 - info.i0) * a->w;
        float *img = malloc(n * sizeof *img + 4), *out = malloc(n * sizeof *out + 4);
        st = agree_alloc(img && out);
        for (size_t i = 0; st == PK_OK && i < n; ++i)
            img[i] = (float)(1.0 + 0.5 * hval((size_t)info.i0 * a->w + i, a->seed));
        for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
            st = pk_mpi_conv2d_plan_execute(pl, img, out, &info);
            keep_best(best, &info, r == 0);
        }
        if (st == PK_OK && a->verify) { /* one process: rank 0, the whole frame */
            float *ref = NULL, *whole = NULL;
            if (info.rank == 0) {
                size_t nall = (size_t)a->h * a->w;
                ref = malloc(nall * sizeof *ref + 4);
                whole = malloc(nall * sizeof *whole + 4);
                for (size_t i = 0; whole && i < nall; ++i)
                    whole[i] = (float)(1.0 + 0.5 * hval(i, a->seed));
                if (ref && whole &&
                    pk_conv2d(ctx, &p, info.local.variant, whole, psf, ref, NULL) != PK_OK) {
                    fprintf(stderr, "portkern run: --verify: %s\n", pk_last_error());
                    free(ref);
                    ref = NULL;
                }
            }
            st = slab_verify(a, out, info.i0, info.i1, (size_t)a->w, ref, (size_t)a->h, pj,
                             pjlen);
            free(ref);
            free(whole);
        }
        free(img);
        free(out);
        free(psf);
        pk_mpi_conv2d_plan_destroy(pl);
    } else if (strcmp(kernel, "su3") == 0) {
        pk_su3_params p = {(size_t)a->nv, PK_SU3_AOS, 0};
        snprintf(pj, pjlen, "\"nv\": %d, \"layout\": \"aos\"", a->nv);
        pk_mpi_su3_plan *pl = NULL;
        st = pk_mpi_su3_plan_create(&pl, comm, ctx, &p, &o, &info);
        if (st != PK_OK)
            return st;
        size_t L = (size_t)(info.i1 - info.i0);
        double *u = malloc(L * 18 * 8 + 8), *psi = malloc(L * 24 * 8 + 8);
        double *chi = malloc(L * 24 * 8 + 8);
        st = agree_alloc(u && psi && chi);
        if (st == PK_OK) {
            pk_lqcd_random_su3((uint64_t)a->seed * 7919u + (uint64_t)info.rank, L, u);
            pk_lqcd_random_complex((uint64_t)a->seed * 7919u + 4099u + (uint64_t)info.rank,
                                   L * 12, psi);
        }
        for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
            st = pk_mpi_su3_plan_execute(pl, u, psi, chi, &info);
            keep_best(best, &info, r == 0);
        }
        if (st == PK_OK && a->verify) { /* the inputs are per rank: gathered with the result */
            void *U = NULL, *PSI = NULL;
            double *ref = NULL;
            size_t nv = (size_t)a->nv;
            st = gather_rows(u, (int)L, 18 * sizeof(double), nv, &U);
            if (st == PK_OK)
                st = gather_rows(psi, (int)L, 24 * sizeof(double), nv, &PSI);
            if (st == PK_OK && info.rank == 0) {
                ref = malloc(nv * 24 * sizeof *ref + 8);
                if (ref && pk_su3(ctx, &p, info.local.variant, U, PSI, ref, NULL) != PK_OK) {
                    fprintf(stderr, "portkern run: --verify: %s\n", pk_last_error());
                    free(ref);
                    ref = NULL;
                }
            }
            if (st == PK_OK)
                st = slab_verify64(a, chi, (int)L, 24, ref, nv, PK_DIFF_ELEMENTWISE, 1e-5,
                                   "the sites gathered on rank 0 (u, psi and chi) against one "
                                   "process's run of the same variant, the differ element-wise",
                                   pj, pjlen);
            free(U);
            free(PSI);
            free(ref);
        }
        free(u);
        free(psi);
        free(chi);
        pk_mpi_su3_plan_destroy(pl);
    } else if (strcmp(kernel, "magicfilter3d") == 0) {
        static const char *bcs[] = {"periodic", "grow", "shrink"};
        int bc = -1;
        for (int i = 0; i < 3; ++i)
            if (strcmp(a->bc, bcs[i]) == 0)
                bc = i;
        pk_magicfilter3d_params p = {a->n1, a->n2, a->n3, a->transpose, bc};
        snprintf(pj, pjlen, "\"n1\": %d, \"n2\": %d, \"n3\": %d, \"transpose\": %s, \"bc\": "
                 "\"%s\"", a->n1, a->n2, a->n3, a->transpose ? "true" : "false", a->bc);
        pk_mpi_magicfilter3d_plan *pl = NULL;
        o.transposes = a->transposes;
        st = pk_mpi_magicfilter3d_plan_create(&pl, comm, ctx, &p, &o, &info);
        if (st != PK_OK)
            return st;
        const size_t used = strlen(pj); /* the method the plan took */
        snprintf(pj + used, pjlen - used, ", \"transposes\": %s",
                 info.transposes ? "true" : "false");
        size_t ins[3], outs[3];
        int xp = 0, yp = 0;
        pk_magicfilter3d_shapes(&p, ins, outs);
        pk_mpi_magicfilter3d_plan_slab(pl, &xp, &yp);
        size_t nx = (size_t)xp * ins[1] * ins[2], ny = (size_t)yp * outs[1] * outs[2];
        double *x = malloc(nx * sizeof *x + 8), *y = malloc(ny * sizeof *y + 8);
        st = agree_alloc(x && y);
        for (size_t i = 0; st == PK_OK && i < nx; ++i)
            x[i] = 1.5 * hval((size_t)info.i0 * ins[1] * ins[2] + i, a->seed);
        for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
            st = pk_mpi_magicfilter3d_plan_execute(pl, x, y, &info);
            keep_best(best, &info, r == 0);
        }
        if (st == PK_OK && a->verify) { /* x's planes gathered (grow, shrink: the extra 15 on
                                           the last rank), one process on rank 0 */
            void *X = NULL;
            double *ref = NULL;
            size_t pin = ins[1] * ins[2], pout = outs[1] * outs[2];
            st = gather_rows(x, xp, pin * sizeof(double), ins[0], &X);
            if (st == PK_OK && info.rank == 0) {
                ref = malloc(outs[0] * pout * sizeof *ref + 8);
                if (ref && pk_magicfilter3d(ctx, &p, info.local.variant, X, ref, NULL) != PK_OK) {
                    fprintf(stderr, "portkern run: --verify: %s\n", pk_last_error());
                    free(ref);
                    ref = NULL;
                }
            }
            if (st == PK_OK)
                st = slab_verify64(a, y, yp, pout, ref, outs[0], PK_DIFF_ELEMENTWISE, 1e-5,
                                   "the planes gathered on rank 0 (x and y) against one "
                                   "process's run of the same variant, the differ element-wise",
                                   pj, pjlen);
            free(X);
            free(ref);
        }
        free(x);
        free(y);
        pk_mpi_magicfilter3d_plan_destroy(pl);
    } else { /* dslash */
        pk_dslash_params p = {a->x, a->y, a->z, a->t, a->kappa, a->recon12, 0, 0, 0, 0};
        int i0 = 0, i1 = 0, z0 = 0, z1 = 0, rank = 0, n = 1, pz = a->ranks_z;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &n);
        o.ranks_z = pz;
        o.overlap = a->overlap;
        snprintf(pj, pjlen, "\"x\": %d, \"y\": %d, \"z\": %d, \"t\": %d, \"kappa\": %.17g, "
                 "\"recon12\": %s, \"half\": %s, \"ranks_z\": %d", a->x, a->y, a->z, a->t,
                 a->kappa, a->recon12 ? "true" : "false", a->half ? "true" : "false", pz);
        /* the links go to plan creation: this rank's block by the block rule (which the plan
         * applies too); a t or z below the ranks, or a ranks_z that does not divide them, is
         * refused by the plan, on every rank */
        size_t vol2 = (size_t)a->x * a->y, L = 0; /* L: the block's (t, z) planes */
        if (n % pz == 0 && pk_mpi_block(a->t, n / pz, rank / pz, &i0, &i1) == PK_OK &&
            pk_mpi_block(a->z, pz, rank % pz, &z0, &z1) == PK_OK)
            L = (size_t)(i1 - i0) * (size_t)(z1 - z0);
        double *u = malloc(4 * L * vol2 * 18 * 8 + 8), *psi = malloc(L * vol2 * 24 * 8 + 8);
        double *chi = malloc(L * vol2 * 24 * 8 + 8);
        if (u && psi && chi) {
            pk_lqcd_random_su3((uint64_t)a->seed * 7919u + (uint64_t)rank, 4 * L * vol2, u);
            pk_lqcd_random_complex((uint64_t)a->seed * 7919u + 4099u + (uint64_t)rank,
                                   L * vol2 * 12, psi);
        }
        pk_mpi_dslash_plan *pl = NULL;
        st = pk_mpi_dslash_plan_create(&pl, comm, ctx, &p, u && psi && chi ? u : NULL, &o,
                                       &info);
        for (int r = 0; st == PK_OK && r < a->repeat; ++r) {
            st = pk_mpi_dslash_plan_execute(pl, psi, chi, &info);
            keep_best(best, &info, r == 0);
        }
        if (st == PK_OK && a->verify) { /* links (per mu) and psi gathered by (t, z) plane */
            const size_t P = (size_t)a->t * (size_t)a->z, lrow = vol2 * 18, srow = vol2 * 24;
            double *U = rank == 0 ? malloc(4 * P * lrow * sizeof *U + 8) : NULL, *ref = NULL;
            double *PSI = rank == 0 ? malloc(P * srow * sizeof *PSI + 8) : NULL;
            void *part = NULL;
            st = agree_alloc(rank != 0 || (U && PSI));
            for (int mu = 0; st == PK_OK && mu < 4; ++mu) {
                st = gather_rows(u + (size_t)mu * L * lrow, (int)L, lrow * sizeof(double), P,
                                 &part);
                if (st == PK_OK && rank == 0)
                    ds_block_order(part, U + (size_t)mu * P * lrow, a->t, a->z, pz, n, lrow, 1);
                free(part);
                part = NULL;
            }
            if (st == PK_OK)
                st = gather_rows(psi, (int)L, srow * sizeof(double), P, &part);
            if (st == PK_OK && rank == 0)
                ds_block_order(part, PSI, a->t, a->z, pz, n, srow, 1);
            free(part);
            part = NULL;
            if (st == PK_OK && rank == 0) {
                ref = malloc(P * srow * sizeof *ref + 8);
                part = malloc(P * srow * sizeof *ref + 8);
                if (ref && part &&
                    pk_dslash(ctx, &p, info.local.variant, U, PSI, part, NULL) == PK_OK) {
                    ds_block_order(part, ref, a->t, a->z, pz, n, srow, 0); /* as gathered */
                } else {
                    fprintf(stderr, "portkern run: --verify: %s\n",
                            ref && part ? pk_last_error() : "out of memory");
                    free(ref);
                    ref = NULL;
                }
            }
            if (st == PK_OK)
                st = slab_verify64(a, chi, (int)L, srow, ref, P, PK_DIFF_NORM, 1e-12,
                                   "the blocks gathered on rank 0 (links, psi, chi) against "
                                   "one process's run of the same variant, norm-wise 1e-12 "
                                   "(docs/KERNELS.md 4c; full spinors: bitwise)", pj, pjlen);
            free(U);
            free(PSI);
            free(ref);
            free(part);
        }
        free(u);
        free(psi);
        free(chi);
        pk_mpi_dslash_plan_destroy(pl);
    }
    return st;
}

/* Whether the option `name` was given. */
static int given(const cli_opt *opts, const int *seen, int n, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(opts[i].name, name) == 0)
            return seen[i];
    return 0;
}

static void mpi_run_usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N portkern run KERNEL --mpi [options]\n"
        "Runs KERNEL's distributed plan (libportkern-mpi, docs/SCALING.md) on generated data,\n"
        "each rank its slab on its own context; rank 0 prints one JSON line with every rank's\n"
        "host, backend, variant, slab and compute / communication seconds (of its fastest\n"
        "repeat); the other ranks print nothing.\n"
        "kernels and their options:\n"
        "  diffusion3d    --nx N --ny N --nz N (64) --count N (10)\n"
        "  laplace2d      --l N (256) --count N (10) --sigma F (0.1) --layout lexi|hvfo\n"
        "                 (lexi) --nw N (hvfo lanes; 0: the default)\n"
        "  conv2d         --h N --w N (256) --kh N --kw N (11)\n"
        "  su3            --nv N (1048576; aos)\n"
        "  magicfilter3d  --size N1xN2xN3 | --n1 N --n2 N --n3 N (64) --transpose\n"
        "                 --bc periodic|grow|shrink --transposes 0|1 (1: the passes apart\n"
        "                 with two MPI_Alltoallw transposes, BigDFT's way; 0: the slab with\n"
        "                 halo planes; the default: transposes where the kernel runs on the\n"
        "                 host)\n"
        "  dslash         --dims X,Y,Z,T | --x N --y N --z N --t N (8,8,8,16) --kappa F\n"
        "                 (0.125) --recon12 --half (half-spinor faces: 12 doubles a site)\n"
        "                 --ranks-z N (split z over N ranks too: a grid of ranks/N along t\n"
        "                 by N along z; 1, the default: t only) --overlap 0|1 (1, the\n"
        "                 default: blocks compute their interior sites while the t and z\n"
        "                 faces travel, then the boundary; 0: the block with its halo\n"
        "                 planes after the exchange)\n"
        "  grid           --dataset NAME (small) --scale F (1) | --in DIR (a 'portkern gen\n"
        "                 grid' directory); every rank loads the set and grids its block of\n"
        "                 the visibilities, the grid is reduced to row bands\n"
        "                 (MPI_Reduce_scatter); --verify: rank 0 gathers the bands and\n"
        "                 compares with the double reference of all visibilities (norm-wise\n"
        "                 1e-5, norm 1e-9, num_skipped exact; exit 1 when not equal); --out\n"
        "                 DIR: rank 0 writes DIR/grid.npy (complex64 [G][G]); --image: the\n"
        "                 dirty image of the summed grid, its FFT over the bands (row FFTs,\n"
        "                 an MPI_Alltoallw transpose, column FFTs; the data set's\n"
        "                 image_size), gathered on rank 0 (--out: DIR/image.npy float32\n"
        "                 [N][N] instead of the grid; --verify: also against the image of the\n"
        "                 gathered grid, bitwise)\n"
        "common: --variant V, --backend B, --threads N (per rank; default 1; rank 0 notes when\n"
        "        a rank may run on fewer CPUs: mpirun binds a rank to one core unless told\n"
        "        --bind-to none), --repeat N (1), --seed S (1).\n"
        "--verify (every kernel but grid, which says above): rank 0 gathers the slabs (and the\n"
        "per-rank inputs of su3, magicfilter3d and dslash) and compares them with its own\n"
        "one-process run of the same variant (the differ: element-wise, rtol 1e-5; dslash\n"
        "norm-wise 1e-12); exit 1 when not equal; the JSON line gets \"verify\" {equal,\n"
        "bitwise, ...}.\n");
}

int cli_mpi_run(int argc, char **argv)
{
    const char *prog = "portkern run";
    int inited = 0, rank = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpi_args a;
    memset(&a, 0, sizeof a);
    a.bc = "periodic";
    a.threads = 1;
    a.repeat = 1;
    a.seed = 1;
    a.count = 10;
    a.nx = a.ny = a.nz = 64;
    a.l = 256;
    a.sigma = 0.1;
    a.h = a.w = 256;
    a.kh = a.kw = 11;
    a.nv = 1 << 20;
    a.n1 = a.n2 = a.n3 = 64;
    a.x = a.y = a.z = 8;
    a.t = 16;
    a.ranks_z = 1;
    a.overlap = -1;
    a.transposes = -1;
    a.kappa = 0.125;
    a.scale = 1;
    a.items = -1;
    mpi_grid grid;
    memset(&grid, 0, sizeof grid);
    enum { NO = 48 };
    cli_opt opts[NO + 1];
    int seen[NO];
    memset(seen, 0, sizeof seen);
    memset(opts, 0, sizeof opts);
    int n = 0;
    const double IM = 2147483647.0;
    n = cli_opt_add(opts, n, "mpi", CLI_FLAG, &a.mpi, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "variant", CLI_STRING, &a.variant, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "backend", CLI_STRING, &a.backend, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "threads", CLI_INT, &a.threads, &seen[n], 0, PK_MAX_THREADS);
    n = cli_opt_add(opts, n, "repeat", CLI_INT, &a.repeat, &seen[n], 1, 1000000);
    n = cli_opt_add(opts, n, "seed", CLI_INT, &a.seed, &seen[n], 0, IM);
    int ncommon = n;
    n = cli_opt_add(opts, n, "nx", CLI_INT, &a.nx, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "ny", CLI_INT, &a.ny, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "nz", CLI_INT, &a.nz, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "count", CLI_INT, &a.count, &seen[n], 0, IM);
    n = cli_opt_add(opts, n, "l", CLI_INT, &a.l, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "sigma", CLI_DOUBLE, &a.sigma, &seen[n], 1e-30, 1e30);
    n = cli_opt_add(opts, n, "layout", CLI_STRING, &a.layout, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "nw", CLI_INT, &a.nw, &seen[n], 0, IM);
    n = cli_opt_add(opts, n, "h", CLI_INT, &a.h, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "w", CLI_INT, &a.w, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "kh", CLI_INT, &a.kh, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "kw", CLI_INT, &a.kw, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "nv", CLI_INT, &a.nv, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "n1", CLI_INT, &a.n1, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "n2", CLI_INT, &a.n2, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "n3", CLI_INT, &a.n3, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "size", CLI_STRING, &a.size, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "transpose", CLI_FLAG, &a.transpose, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "bc", CLI_STRING, &a.bc, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "x", CLI_INT, &a.x, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "y", CLI_INT, &a.y, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "z", CLI_INT, &a.z, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "t", CLI_INT, &a.t, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "dims", CLI_STRING, &a.dims, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "kappa", CLI_DOUBLE, &a.kappa, &seen[n], 1e-300, 1e300);
    n = cli_opt_add(opts, n, "recon12", CLI_FLAG, &a.recon12, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "half", CLI_FLAG, &a.half, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "ranks-z", CLI_INT, &a.ranks_z, &seen[n], 1, IM);
    n = cli_opt_add(opts, n, "overlap", CLI_INT, &a.overlap, &seen[n], 0, 1);
    n = cli_opt_add(opts, n, "transposes", CLI_INT, &a.transposes, &seen[n], 0, 1);
    n = cli_opt_add(opts, n, "dataset", CLI_STRING, &a.dataset, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "scale", CLI_DOUBLE, &a.scale, &seen[n], 1e-300, 1);
    n = cli_opt_add(opts, n, "in", CLI_STRING, &a.in, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "out", CLI_STRING, &a.out, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "verify", CLI_FLAG, &a.verify, &seen[n], 0, 0);
    n = cli_opt_add(opts, n, "image", CLI_FLAG, &a.image, &seen[n], 0, 0);

    /* Every rank parses the same words; only rank 0 says what is wrong. */
    int saved = -1;
    if (rank != 0) {
        int null = open("/dev/null", O_WRONLY);
        saved = dup(2);
        if (null >= 0) {
            dup2(null, 2);
            close(null);
        }
    }
    char *pos[2];
    int npos = 0, rc = cli_parse(prog, argc, argv, opts, pos, 2, &npos);
    const char *kernel = npos > 0 ? pos[0] : NULL;
    int k = -1;
    if (rc == CLI_HELP) {
        if (rank == 0)
            mpi_run_usage(stdout);
        rc = CLI_EXIT_OK;
        goto done;
    }
    if (rc)
        goto done;
    for (int i = 0; kernel && mpi_kernels[i].name; ++i)
        if (strcmp(kernel, mpi_kernels[i].name) == 0)
            k = i;
    if (k < 0 || npos != 1) {
        rc = cli_usage_error(prog, "--mpi: %s: the distributed kernels are diffusion3d, "
                                   "laplace2d, conv2d, su3, magicfilter3d, dslash and grid",
                             npos != 1 ? "one KERNEL expected" : kernel);
        goto done;
    }
    for (int i = ncommon; i < n; ++i) {
        char word[40];
        snprintf(word, sizeof word, " %s ", opts[i].name);
        if (seen[i] && !strstr(mpi_kernels[k].opts, word)) {
            rc = cli_usage_error(prog, "--%s: not an option of %s --mpi (see --mpi --help)",
                                 opts[i].name, kernel);
            goto done;
        }
    }
    if (a.size) {
        int v[3];
        if (given(opts, seen, n, "n1") || given(opts, seen, n, "n2") || given(opts, seen, n, "n3")) {
            rc = cli_usage_error(prog, "--size: not together with --n1, --n2, --n3");
            goto done;
        }
        if ((rc = parse_ints(prog, "size", a.size, 'x', 3, v)))
            goto done;
        a.n1 = v[0], a.n2 = v[1], a.n3 = v[2];
    }
    if (a.dims) {
        int v[4];
        if (given(opts, seen, n, "x") || given(opts, seen, n, "y") || given(opts, seen, n, "z") ||
            given(opts, seen, n, "t")) {
            rc = cli_usage_error(prog, "--dims: not together with --x, --y, --z, --t");
            goto done;
        }
        if ((rc = parse_ints(prog, "dims", a.dims, ',', 4, v)))
            goto done;
        a.x = v[0], a.y = v[1], a.z = v[2], a.t = v[3];
    }
    int layout;
    if (a.layout && pk_laplace2d_layout_from_name(a.layout, &layout) != PK_OK) {
        rc = cli_usage_error(prog, "--layout %s: lexi or hvfo", a.layout);
        goto done;
    }
    if (strcmp(a.bc, "periodic") && strcmp(a.bc, "grow") && strcmp(a.bc, "shrink")) {
        rc = cli_usage_error(prog, "--bc %s: periodic, grow or shrink", a.bc);
        goto done;
    }
    pk_context_options copt;
    pk_context_options_init(&copt);
    copt.threads = a.threads;
    if (a.backend && pk_backend_from_name(a.backend, &copt.backend) != PK_OK) {
        rc = cli_usage_error(prog, "--backend %s: unknown (auto, serial, openmp, opencl, cuda)",
                             a.backend);
        goto done;
    }
    if (k >= 0 && strcmp(kernel, "grid") == 0) {
        /* every rank loads the whole set; a failure is agreed, rank 0 says why */
        if (a.in && (a.dataset || given(opts, seen, n, "scale") || given(opts, seen, n, "seed"))) {
            rc = cli_usage_error(prog, "--dataset, --scale and --seed generate data: not with "
                                       "--in DIR");
            goto done;
        }
        int lrc = grid_load(prog, &a, &grid), worst = 0;
        MPI_Allreduce(&lrc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (worst) {
            if (rank == 0 && !lrc)
                fprintf(stderr, "%s: another rank could not load the grid data set\n", prog);
            rc = worst;
            goto done;
        }
        a.grid = &grid;
    }
    if (saved >= 0) { /* from here on a failure is agreed: rank 0 reports it */
        dup2(saved, 2);
        close(saved);
        saved = -1;
    }
    { /* threads beyond a rank's CPUs share them (mpirun binds a rank to one core by default) */
        const int cpus = cpus_allowed(), few = a.threads > 1 && cpus > 0 && cpus < a.threads;
        int any = 0, least = cpus > 0 ? cpus : INT_MAX;
        MPI_Allreduce(&few, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        int fewest = 0;
        MPI_Allreduce(&least, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (any && rank == 0)
            fprintf(stderr, "%s: note: --threads %d but a rank may run on %d CPU%s only (its "
                    "affinity: mpirun binds each rank to one core by default; --bind-to none, "
                    "or --map-by slot:PE=%d)\n", prog, a.threads, fewest,
                    fewest == 1 ? "" : "s", a.threads);
    }
    pk_context *ctx = NULL;
    pk_status st = pk_context_create(&ctx, &copt);
    int bad = st != PK_OK, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (bad)
            cli_lib_error(prog, st);
        pk_context_destroy(ctx);
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    char pj[2048];
    pk_mpi_info best;
    memset(&best, 0, sizeof best);
    pj[0] = 0;
    st = run_kernel(kernel, &a, ctx, pj, sizeof pj, &best);
    if (st == PK_OK) {
        report(MPI_COMM_WORLD, kernel, pj, &best, a.repeat, a.items);
        rc = a.verify_failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    } else {
        if (rank == 0)
            fprintf(stderr, "%s: %s: %s\n", prog, pk_status_name(st), pk_mpi_last_error());
        rc = st == PK_EINVAL || st == PK_ESIZE || st == PK_ENULL ? CLI_EXIT_USAGE
                                                                  : CLI_EXIT_FAIL;
    }
    pk_context_destroy(ctx);
done:
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    grid_free(&grid);
    MPI_Finalize();
    return rc;
}

int cli_mpi_probe(int argc, char **argv)
{
    const char *prog = "portkern-probe";
    int inited = 0, rank = 0, n = 1;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int mpi = 0, json = 0, npos = 0;
    const cli_opt opts[] = {
        {"mpi", CLI_FLAG, &mpi, NULL, 0, 0},
        {"json", CLI_FLAG, &json, NULL, 0, 0},
        {NULL, CLI_FLAG, NULL, NULL, 0, 0},
    };
    char *pos[1];
    int rc = cli_parse(prog, argc, argv, opts, pos, 0, &npos);
    if (rc == CLI_HELP) {
        if (rank == 0)
            printf("usage: mpirun -np N portkern-probe --mpi [--json]\n"
                   "Each rank's host, and the backend, device and variant auto picks there for a\n"
                   "small diffusion3d plan (its reason says why); rank 0 prints them all.\n");
        MPI_Finalize();
        return CLI_EXIT_OK;
    }
    if (rc) {
        MPI_Finalize();
        return rc;
    }
    enum { SL = 512, NS = 6 };
    char mine[NS][SL];
    memset(mine, 0, sizeof mine);
    int len = SL;
    MPI_Get_processor_name(mine[0], &len);
    pk_context *ctx = NULL;
    pk_run_info li;
    memset(&li, 0, sizeof li);
    pk_status st = pk_context_create(&ctx, NULL);
    pk_diffusion3d_plan *pl = NULL;
    if (st == PK_OK) {
        pk_diffusion3d_params p;
        pk_diffusion3d_params_default(&p, 32, 32, 32, 1);
        st = pk_diffusion3d_plan_create(&pl, ctx, &p, NULL, &li);
    }
    if (st == PK_OK) {
        snprintf(mine[1], SL, "%s", pk_backend_name(li.backend));
        snprintf(mine[2], SL, "%d %.128s", li.device, li.device_name);
        snprintf(mine[3], SL, "%s", li.variant);
        snprintf(mine[4], SL, "%s", li.reason);
    } else {
        snprintf(mine[1], SL, "none");
        snprintf(mine[4], SL, "%s", pk_last_error());
    }
    pk_diffusion3d_plan_destroy(pl);
    pk_context_destroy(ctx);
    const int aware = pk_mpi_cuda_aware();
    snprintf(mine[5], SL, "%s", aware > 0 ? "yes" : aware == 0 ? "no" : "unknown");
    char *all = rank == 0 ? malloc((size_t)n * NS * SL) : NULL;
    MPI_Gather(mine, NS * SL, MPI_CHAR, all, NS * SL, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0 && all) {
        cli_json j;
        if (json) {
            cj_init(&j, stdout, 1);
            cj_open(&j, NULL, '{');
            cj_str(&j, "portkern_version", pk_version());
            cj_int(&j, "ranks", n);
            cj_open(&j, "per_rank", '[');
        } else {
            printf("portkern %s, %d MPI ranks\n", pk_version(), n);
        }
        for (int r = 0; r < n; ++r) {
            const char *s = all + (size_t)r * NS * SL;
            if (json) {
                cj_open(&j, NULL, '{');
                cj_int(&j, "rank", r);
                cj_str(&j, "host", s);
                cj_str(&j, "backend", s + SL);
                cj_str(&j, "device", s + 2 * SL);
                cj_str(&j, "variant", s + 3 * SL);
                cj_str(&j, "reason", s + 4 * SL);
                if (strcmp(s + 5 * SL, "unknown") == 0)
                    cj_null(&j, "mpi_cuda_aware");
                else
                    cj_bool(&j, "mpi_cuda_aware", strcmp(s + 5 * SL, "yes") == 0);
                cj_close(&j);
            } else {
                printf("rank %d on %s: %s (device %s), variant %s, CUDA-aware MPI: %s\n  %s\n",
                       r, s, s + SL, s + 2 * SL, s + 3 * SL, s + 5 * SL, s + 4 * SL);
            }
        }
        if (json) {
            cj_close(&j);
            cj_close(&j);
        }
        fflush(stdout);
    }
    free(all);
    MPI_Finalize();
    return rank == 0 && !all ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

#else /* no MPI in this build */

static int no_mpi(const char *prog)
{
    return cli_usage_error(prog, "--mpi: this build has no MPI (configure found none, or "
                                 "--without-mpi): no libportkern-mpi");
}

int cli_mpi_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return no_mpi("portkern run");
}

int cli_mpi_probe(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return no_mpi("portkern-probe");
}
#endif
