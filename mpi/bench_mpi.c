/* bench_mpi.c - libportkern-mpi's benchmark (docs/SCALING.md): a ping-pong of the transport
 * and the distributed diffusion3d (or laplace2d), in one run.
 *   mpirun -np R mpi/bench_mpi [--n 256] [--count 20] [--depth D] [--overlap 0|1]
 *                              [--threads T] [--variant V] [--reps 3] [--no-pingpong]
 *                              [--kernel diffusion3d|laplace2d]   (laplace2d: n x n, 7 flops)
 * Rank 0 prints one JSON line: the ping-pong between ranks 0 and 1 (half the round trip and
 * the bandwidth per message size), then the kernel's run: the best of --reps timed
 * plan_run calls of --count steps (after one untimed warm-up run), its GFlop/s by the
 * library's model (13 flops per point per step, laplace2d 7), and per rank the compute, communication and
 * agreement seconds and the halo bytes sent in that best run. */
#include "portkern_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void pingpong(void) {
    static const size_t sizes[] = {8, 4096, 65536, 262144, 1048576, 4194304};
    size_t ns = sizeof sizes / sizeof sizes[0];
    char *buf = calloc(sizes[ns - 1], 1);
    if (rank == 0)
        printf("\"pingpong\": [");
    for (size_t k = 0; k < ns; k++) {
        int reps = sizes[k] <= 65536 ? 2000 : 200;
        double best = 1e30;
        for (int trial = 0; trial < 3; trial++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (rank == 0) {
                    MPI_Send(buf, (int)sizes[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)sizes[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, (int)sizes[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)sizes[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            double t = (MPI_Wtime() - t0) / reps / 2; /* one way */
            if (t < best)
                best = t;
        }
        if (rank == 0)
            printf("%s{\"bytes\": %zu, \"one_way_us\": %.3f, \"gb_per_s\": %.3f}", k ? ", " : "",
                   sizes[k], best * 1e6, (double)sizes[k] / best / 1e9);
    }
    if (rank == 0)
        printf("], ");
    free(buf);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int n = 256, count = 20, threads = 0, reps = 3, do_pp = 1, lap = 0;
    pk_mpi_options o;
    pk_mpi_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-pingpong")) {
            do_pp = 0;
            continue;
        }
        if (!v) {
            if (rank == 0)
                fprintf(stderr, "bench_mpi: %s needs a value\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (!strcmp(a, "--n"))
            n = atoi(v);
        else if (!strcmp(a, "--count"))
            count = atoi(v);
        else if (!strcmp(a, "--depth"))
            o.depth = atoi(v);
        else if (!strcmp(a, "--overlap"))
            o.overlap = atoi(v);
        else if (!strcmp(a, "--threads"))
            threads = atoi(v);
        else if (!strcmp(a, "--variant"))
            o.variant = v;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v);
        else if (!strcmp(a, "--kernel"))
            lap = !strcmp(v, "laplace2d");
        else {
            if (rank == 0)
                fprintf(stderr, "bench_mpi: unknown option %s\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        i++;
    }
    if (rank == 0)
        printf("{\"ranks\": %d, ", nranks);
    if (do_pp && nranks >= 2)
        pingpong();

    pk_context_options co;
    pk_context_options_init(&co);
    co.threads = threads;
    pk_context *ctx = NULL;
    if (pk_context_create(&ctx, &co) != PK_OK)
        MPI_Abort(MPI_COMM_WORLD, 3);
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, n, n, n, count);
    pk_laplace2d_params lp = {n, count, 0.1, PK_LAP_LEXI, 0};
    pk_mpi_diffusion3d_plan *pl = NULL;
    pk_mpi_laplace2d_plan *lpl = NULL;
    pk_mpi_info info;
    memset(&info, 0, sizeof info);
    pk_status st = lap ? pk_mpi_laplace2d_plan_create(&lpl, MPI_COMM_WORLD, ctx, &lp, &o, &info)
                       : pk_mpi_diffusion3d_plan_create(&pl, MPI_COMM_WORLD, ctx, &p, &o, &info);
    if (st != PK_OK) {
        if (rank == 0)
            fprintf(stderr, "bench_mpi: %s\n", pk_mpi_last_error());
        MPI_Finalize();
        return 1;
    }
    int L = info.i1 - info.i0;
    size_t plane = lap ? (size_t)n : (size_t)n * n; /* floats per split row or plane */
    float *full = malloc(plane * n * sizeof *full);
    if (lap)
        for (size_t i = 0; i < plane * n; i++)
            full[i] = 1.0f + 0.5f * (float)((i * 2654435761u) % 1000) / 1000.0f;
    else
        pk_diffusion3d_field(n, n, n, 0.0, full);
    const float *mine0 = full + (size_t)info.i0 * plane;
#define UPLOAD() (lap ? pk_mpi_laplace2d_plan_upload(lpl, mine0) \
                      : pk_mpi_diffusion3d_plan_upload(pl, mine0))
#define RUN(i) (lap ? pk_mpi_laplace2d_plan_run(lpl, count, i) \
                    : pk_mpi_diffusion3d_plan_run(pl, count, i))
    UPLOAD();
    RUN(&info); /* warm-up: pages, plans, threads */
    double best = 1e30;
    pk_mpi_info bi = info;
    for (int r = 0; r < reps; r++) {
        UPLOAD();
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        st = RUN(&info);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0, tmax = 0;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (st != PK_OK)
            break;
        if (tmax < best) {
            best = tmax;
            bi = info;
        }
    }
    double mine[6] = {bi.compute_s, bi.comm_s, bi.agree_s, bi.halo_bytes, (double)L,
                      (double)bi.messages};
    double *all = malloc(6 * (size_t)nranks * sizeof *all);
    MPI_Gather(mine, 6, MPI_DOUBLE, all, 6, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double pts = (double)plane * n * count;
        printf("\"%s\": {\"n\": %d, \"count\": %d, \"threads\": %d, \"depth\": %d, "
               "\"overlap\": %d, \"variant\": \"%s\", \"backend\": \"%s\", \"seconds\": %.6f, "
               "\"gflops\": %.3f, \"per_rank\": [",
               lap ? "laplace2d" : "diffusion3d", n, count, threads, bi.depth, bi.overlap,
               bi.local.variant, pk_backend_name(bi.local.backend), best,
               (lap ? 7.0 : 13.0) * pts / best / 1e9);
        for (int r = 0; r < nranks; r++)
            printf("%s{\"rank\": %d, \"planes\": %.0f, \"compute_s\": %.6f, \"comm_s\": %.6f, "
                   "\"agree_s\": %.6f, \"halo_bytes\": %.0f, \"messages\": %.0f}",
                   r ? ", " : "", r, all[6 * r + 4], all[6 * r], all[6 * r + 1], all[6 * r + 2],
                   all[6 * r + 3], all[6 * r + 5]);
        printf("], \"status\": \"%s\"}}\n", pk_status_name(st));
    }
    free(all);
    free(full);
    pk_mpi_diffusion3d_plan_destroy(pl);
    pk_mpi_laplace2d_plan_destroy(lpl);
    pk_context_destroy(ctx);
    MPI_Finalize();
    return st == PK_OK ? 0 : 1;
}
