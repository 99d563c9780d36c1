/* portkern - the command-line tool: run, gen, diff and bench (README.md, "Command line").
 * run, gen and bench go through the kernel descriptors (tools/cli_<kernel>.c) and the generic
 * driver (tools/cli_driver.c); diff and the command table are here.
 *
 * Exit status of every command: 0 success; 1 verification failed, arrays differ, or a
 * valid request failed while running (device error, out of memory, program build);
 * 2 bad input: options, values, files, or a backend/variant/device that does not exist. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_kernel.h"
#include "cli_mpi.h"

#define MAIN_PROG "portkern" /* library errors are reported as "portkern: ..." */

/* ---- diff ----------------------------------------------------------------------------- */

static void diff_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern diff A.npy B.npy [--rtol R] [--zero Z] [--norm]\n"
        "Compare two arrays of the same dtype and shape (float32, float64, complex64,\n"
        "complex128; complex values are compared as interleaved real numbers) with the\n"
        "differ of docs/KERNELS.md section 6, A being x (the values errors are relative to).\n"
        "\n"
        "  --rtol R   relative tolerance (default 1e-5)\n"
        "  --zero Z   pairs with both |a| and |b| <= Z are ignored (default 1e-10)\n"
        "  --norm     pass/fail on ||a - b||_2 / ||b||_2 <= rtol instead of element-wise\n"
        "\n"
        "Prints: elements compared, failures, first failing multi-index, maximum relative\n"
        "and absolute error, norm-wise relative error, verdict.\n"
        "Exit status: 0 equal; 1 not equal; 2 bad input (unreadable or malformed file,\n"
        "unsupported dtype, dtype or shape mismatch, bad option).\n");
}

static int cmd_diff(int argc, char **argv)
{
    const char *prog = "portkern diff";
    double rtol = 1e-5, zero = 1e-10;
    int norm = 0, npos, rc, k, cplx, mode;
    cli_opt opts[8];
    char *pos[2], sa[256], sb[256], first[200];
    pk_array A, B;
    pk_diff_report rep;
    pk_status s;
    size_t nreal;
    const char *tname;

    cli_opt_add(opts, 0, "rtol", CLI_DOUBLE, &rtol, NULL, 0, DBL_MAX);
    cli_opt_add(opts, 1, "zero", CLI_DOUBLE, &zero, NULL, 0, DBL_MAX);
    cli_opt_add(opts, 2, "norm", CLI_FLAG, &norm, NULL, 0, 0);
    rc = cli_parse(prog, argc, argv, opts, pos, 2, &npos);
    if (rc == CLI_HELP) {
        diff_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc)
        return rc;
    if (npos != 2)
        return cli_usage_error(prog, "needs two files A.npy B.npy; see '%s --help'", prog);
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;

    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    if ((s = pk_npy_read(pos[0], &A)) != PK_OK || (s = pk_npy_read(pos[1], &B)) != PK_OK) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }
    tname = cli_dtype_name(A.dtype);
    if (!tname || A.dtype == PK_DTYPE_I32) {
        rc = cli_usage_error(prog, "%s: dtype '%s' is not supported (float32, float64, "
                             "complex64, complex128)", pos[0], pk_dtype_descr(A.dtype));
        goto done;
    }
    if (B.dtype != A.dtype) {
        rc = cli_usage_error(prog, "dtype mismatch: %s is '%s', %s is '%s'", pos[0],
                             pk_dtype_descr(A.dtype), pos[1], pk_dtype_descr(B.dtype));
        goto done;
    }
    cli_shape_text(A.shape, A.ndim, sa, sizeof sa);
    cli_shape_text(B.shape, B.ndim, sb, sizeof sb);
    for (k = 0; k < A.ndim && A.ndim == B.ndim; ++k)
        if (A.shape[k] != B.shape[k])
            break;
    if (A.ndim != B.ndim || k != A.ndim) {
        rc = cli_usage_error(prog, "shape mismatch: %s is %s, %s is %s", pos[0], sa, pos[1],
                             sb);
        goto done;
    }

    cplx = A.dtype == PK_DTYPE_C64 || A.dtype == PK_DTYPE_C128;
    nreal = A.count * (cplx ? 2 : 1);
    mode = norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE;
    if (A.dtype == PK_DTYPE_F32 || A.dtype == PK_DTYPE_C64)
        s = pk_diff_f32(A.data, B.data, nreal, rtol, zero, mode, &rep);
    else
        s = pk_diff_f64(A.data, B.data, nreal, rtol, zero, mode, &rep);
    if (s != PK_OK && s != PK_EMISMATCH) {
        rc = cli_lib_error(MAIN_PROG, s);
        goto done;
    }

    printf("compared:       %zu %s elements, shape %s%s\n", A.count, tname, sa,
           cplx ? " (real and imaginary parts compared separately)" : "");
    printf("mode:           %s, rtol %g, zero %g\n", norm ? "norm-wise" : "element-wise", rtol,
           zero);
    printf("failed:         %zu of %zu%s%s\n", rep.num_failed, nreal,
           cplx ? " real and imaginary parts" : "", norm ? " (element-wise, for information)" : "");
    if (rep.num_failed > 0 && rep.first_fail != (size_t)-1) {
        size_t elem = cplx ? rep.first_fail / 2 : rep.first_fail;
        if (A.ndim > 0)
            pk_format_index(elem, A.shape, A.ndim, first, sizeof first);
        else
            snprintf(first, sizeof first, "[]");
        printf("first failure:  %s%s\n", first,
               !cplx ? "" : rep.first_fail % 2 ? " (imaginary part)" : " (real part)");
    } else {
        printf("first failure:  none\n");
    }
    printf("max rel error:  %.6g\n", rep.max_rel_err);
    printf("max abs error:  %.6g\n", rep.max_abs_err);
    printf("norm rel error: %.6g\n", rep.norm_rel_err);
    printf("result:         %s\n", rep.equal ? "equal" : "NOT equal");
    rc = rep.equal ? CLI_EXIT_OK : CLI_EXIT_FAIL;
done:
    pk_array_free(&A);
    pk_array_free(&B);
    return rc;
}

/* ---- bench ---------------------------------------------------------------------------- */
/* "diffusion3d,conv2d,...": the kernels for messages. */
static const char *kernel_list(void)
{
    static char list[256];
    size_t used = 0;
    for (int i = 0; cli_kernels[i] && used < sizeof list; ++i)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "",
                                 cli_kernels[i]->name);
    return list;
}

static void bench_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern bench [--kernels K,...] [--backends B,...] [--size S] [--reps N]\n"
        "                      [--threads N] [--calls N] [--json FILE] [--psf-sweep]\n"
        "                      [--param NAME=VALUE]...\n"
        "Run every kernel x available backend x variant (x the kernel's cases: su3's layouts,\n"
        "magicfilter3d's two grids, ...) as a plan with its data resident on the device: one\n"
        "untimed warm-up run (program builds), N timed runs, download, verify against the\n"
        "serial reference.  Prints min, median and max of the timed kernel times, GB/s and\n"
        "GFlop/s at the best time by the library's byte and flop models, and GB/s as a\n"
        "fraction of the device's copy bandwidth measured in the same run (bytes read +\n"
        "written per second; kernels with streaming stores can exceed 1.0x).  'portkern run'\n"
        "times one cold call instead (plan, transfers, kernel).\n"
        "\n"
        "  --kernels K,...   default: all (%s)\n"
        "  --backends B,...  default: serial,openmp,opencl,cuda; unavailable ones are\n"
        "                    listed as skipped, with the reason\n"
        "  --size S          small (default), paper or large: the sizes of each kernel's\n"
        "                    'portkern run KERNEL --preset S' ('run KERNEL --help')\n"
        "  --reps N          timed runs per variant (default 3)\n"
        "  --threads N       OpenMP threads (0: OpenMP's default)\n"
        "  --calls N         also make N one-shot calls per row in a fresh context: the first\n"
        "                    (backend start, plan, fresh pages) and the median of the others\n"
        "                    (the plan the context keeps) against the plan's run; the\n"
        "                    memory the first call added and the first-touch rate of new\n"
        "                    memory just before it (what it pays per new byte)\n"
        "  --json FILE       also write the rows as JSON to FILE (written whole: a temporary\n"
        "                    file renamed at the end)\n"
        "  --psf-sweep       conv2d: also time direct against FFT for PSFs of 3 x 3 to\n"
        "                    63 x 63 on every backend with an FFT variant: the crossover\n"
        "  --param NAME=VALUE  a tuning parameter of every context (repeatable;\n"
        "                    'portkern-probe --params' lists them); beats its environment\n"
        "                    variable\n"
        "\n"
        "JSON rows (one schema for every kernel): kernel, backend, status, device, variant,\n"
        "case, kernel_seconds (min), kernel_seconds_median, kernel_seconds_max, ms, setup_,\n"
        "upload_ and download_seconds, call_first_ and call_repeat_seconds,\n"
        "call_first_new_bytes and first_touch_gb_per_s (--calls; else null), flops, bytes,\n"
        "gflop_per_s, gb_per_s, bandwidth_gb_per_s, roof_fraction, \"<kernel>\" {the object\n"
        "of its run line, for the case}, verified, verify {...}, reason; then \"<kernel>\"\n"
        "{the kernel's own results}.\n"
        "Exit status: 0 all verified; 1 a verification or a run failed; 2 bad option.\n",
        kernel_list());
}

static void tune_usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern tune [--kernels K,...] [--backends B,...] [--size S] [--reps N]\n"
        "                     [--threads N] [--budget SECONDS] [--proxy on|off|auto]\n"
        "                     [--small on|off] [--wisdom FILE] [--json FILE]\n"
        "Measure which variant is fastest, per kernel, device and size, and keep the answer\n"
        "as wisdom, which the library's auto choice then follows (lib/portkern.h, \"Wisdom\").\n"
        "Each kernel runs as 'portkern bench' runs it: every available backend x variant x the\n"
        "kernel's cases at --size, plans on resident data, verified against the serial\n"
        "reference; for each (backend, device, case) the fastest verified variant and its\n"
        "tuning parameters become one entry (its time, the others as ratios, the device's\n"
        "identity, the library version, the date); auto then runs that variant with those\n"
        "values, unless the caller or the environment set one.\n"
        "Strategy, per backend, device and case: every variant at the default parameters\n"
        "(exhaustive); then for the fastest variant, and the second when within 1.25x of it,\n"
        "each tuning parameter its plans read in turn over its values, keeping the fastest so\n"
        "far (coordinate descent: linear in the values, not their product); a non-default\n"
        "value must win by 2%%.  The space (tools/cli_driver.c, tune_space): the OpenCL\n"
        "schemes, the ISA levels below the CPU's best, the streaming stores, CUDA grid block\n"
        "counts; conv2d.fft_taps is derived from the direct/FFT winner at the case's PSF.\n"
        "Every row is verified like bench's.  The timing stops after one run of over 0.1 s\n"
        "beyond 1.5x the case's best so far on any backend (none when the warm-up took 4x\n"
        "that and over 0.5 s, or on the serial, OpenMP and OpenCL backends, whose runs\n"
        "build no programs, that and over 2 s), and where runs do not add up once two runs\n"
        "agree within 2%% or two took over 2 s each (there a warm-up of over 2 s on those\n"
        "three backends counts as one); where they add up (diffusion3d, laplace2d)\n"
        "a row cut short is verified against the serial reference after as many runs (made\n"
        "once per data set, on the way to the reference of all the runs).  A row whose\n"
        "outputs are bitwise those of a verified row of the same data set (su3's layouts,\n"
        "laplace2d's lexi and hvfo: the same outputs whatever the layout) takes its\n"
        "verdict.  OpenMP runs first, as the yardstick, the serial backend (the reference:\n"
        "its entries used only where no other backend is) last, and its rows at the\n"
        "defaults are not run once the kernel's share of the budget is spent (said).  A\n"
        "backend beyond 1.5x the case's best is not searched.\n"
        "At paper and large sizes grid runs every variant first on a proxy, a tenth of\n"
        "the visibilities on the same grid (verified against its own reference): one\n"
        "beyond 2x the proxy's best is not run at full size (the row says so); image then\n"
        "skips the variants grid's proxy left out (their grid step cannot win).  degrid\n"
        "(its cost the FFT, as image's) has no proxy.\n"
        "image and degrid take grid's data set when grid ran before them in the same tune\n"
        "(not generated again), and image's reference is then grid's double reference\n"
        "grid through the library's FFT, correction and crop (pk_image_from_grid).\n"
        "The budget: each kernel gets an equal share of what is left when it starts (what\n"
        "one leaves over goes to the later ones); once its share is spent its search starts\n"
        "no more rows (listed); no kernel but the first is started once the whole budget\n"
        "is spent.\n"
        "Each kernel's time is printed ('tune time:': data and references, rows, the\n"
        "longest; 'tune profile:': generation, references, the rows' plans, timed runs and\n"
        "verification).  Afterwards, for each case, auto's choice with the new wisdom is printed\n"
        "against the best measured.\n"
        "\n"
        "  --kernels K,...   default: all (%s)\n"
        "  --backends B,...  default: serial,openmp,opencl,cuda\n"
        "  --size S          small, paper (default) or large\n"
        "  --reps N          timed runs per row, at most (default 3)\n"
        "  --threads N       OpenMP threads (0: OpenMP's default)\n"
        "  --budget SECONDS  the whole tune's time (default 180): shared by the kernels as\n"
        "                    above; none is started after it (those left out are listed)\n"
        "  --proxy WHEN      grid ranked on the proxy first: on, off, or\n"
        "                    auto (default: at paper and large sizes)\n"
        "  --small on|off    at paper and large sizes, tune the small class first, within\n"
        "                    the same budget (default on: ~10 s on a 2-core CPU), so that\n"
        "                    small calls follow an entry of their own (--json: the --size\n"
        "                    class's rows only)\n"
        "  --wisdom FILE     the wisdom file to merge into (default: PORTKERN_WISDOM, else\n"
        "                    $XDG_CACHE_HOME/portkern/wisdom.json or ~/.cache/portkern/...);\n"
        "                    written whole, under a lock, merged with what is there\n"
        "  --json FILE       also write the bench rows as JSON\n"
        "Exit status: 0 tuned and every row verified; 1 a row failed or was not verified, or\n"
        "the file could not be written; 2 bad option.\n",
        kernel_list());
}

static int cmd_bench(int argc, char **argv, int tuning)
{
    const char *prog = tuning ? "portkern tune" : "portkern bench";
    const char *kernels = kernel_list(), *backends = "serial,openmp,opencl,cuda";
    const char *json = NULL, *wisdom = NULL;
    double budget = 180;
    cli_bench_req req = {tuning ? "paper" : "small", 3, 0, 0, 0, tuning, NULL, -1};
    const char *proxy = "auto";
    cli_list params = {{NULL}, 0};
    const cli_kernel *want[16];
    cli_opt opts[11];
    const char *small_first = "on";
    char *pos[1], items[16][32];
    pk_backend_id list[PK_BACKEND_COUNT];
    int nk = 0, nitems, nb = 0, npos, rc, conv2d = 0;
    FILE *jf = NULL;

    cli_opt_add(opts, 0, "kernels", CLI_STRING, &kernels, NULL, 0, 0);
    cli_opt_add(opts, 1, "backends", CLI_STRING, &backends, NULL, 0, 0);
    cli_opt_add(opts, 2, "size", CLI_STRING, &req.size, NULL, 0, 0);
    cli_opt_add(opts, 3, "reps", CLI_INT, &req.reps, NULL, 1, 1000);
    cli_opt_add(opts, 4, "threads", CLI_INT, &req.threads, NULL, 0, PK_MAX_THREADS);
    cli_opt_add(opts, 5, "json", CLI_STRING, &json, NULL, 0, 0);
    if (tuning) {
        cli_opt_add(opts, 6, "budget", CLI_DOUBLE, &budget, NULL, 0, 1e9);
        cli_opt_add(opts, 7, "wisdom", CLI_STRING, &wisdom, NULL, 0, 0);
        cli_opt_add(opts, 8, "proxy", CLI_STRING, &proxy, NULL, 0, 0);
        cli_opt_add(opts, 9, "small", CLI_STRING, &small_first, NULL, 0, 0);
    } else {
        cli_opt_add(opts, 6, "psf-sweep", CLI_FLAG, &req.psf_sweep, NULL, 0, 0);
        cli_opt_add(opts, 7, "calls", CLI_INT, &req.calls, NULL, 0, 1000);
        cli_opt_add(opts, 8, "param", CLI_LIST, &params, NULL, 0, 0);
        req.params = &params;
    }
    rc = cli_parse(prog, argc, argv, opts, pos, 0, &npos);
    if (rc == CLI_HELP) {
        (tuning ? tune_usage : bench_usage)(stdout);
        return CLI_EXIT_OK;
    }
    if (rc) return rc;

    if (cli_split_list(kernels, items, 16, &nitems))
        return cli_usage_error(prog, "option --kernels: bad list '%s'", kernels);
    for (int i = 0; i < nitems; ++i) {
        const cli_kernel *k = cli_kernel_find(items[i]);
        int k2 = 0;
        if (!k)
            return cli_usage_error(prog, "option --kernels: unknown kernel '%s' (known: %s)",
                                   items[i], kernel_list());
        while (k2 < nk && want[k2] != k) ++k2;
        if (k2 == nk) want[nk++] = k; /* a kernel named twice runs once */
        conv2d |= strcmp(k->name, "conv2d") == 0;
    }
    if (req.psf_sweep && !conv2d)
        return cli_usage_error(prog, "option --psf-sweep: needs conv2d in --kernels");
    if (cli_split_list(backends, items, 16, &nitems))
        return cli_usage_error(prog, "option --backends: bad list '%s'", backends);
    for (int i = 0; i < nitems; ++i) {
        pk_backend_id be;
        int k = 0;
        if (pk_backend_from_name(items[i], &be) != PK_OK || be == PK_BACKEND_AUTO)
            return cli_usage_error(prog, "option --backends: unknown backend '%s' "
                                   "(serial, openmp, opencl, cuda)", items[i]);
        while (k < nb && list[k] != be) ++k;
        if (k == nb) list[nb++] = be; /* a backend named twice runs once */
    }
    /* tune: OpenMP first, the yardstick whose times let the others' hopeless rows stop early */
    for (int i = 1; tuning && i < nb; ++i)
        if (list[i] == PK_BACKEND_OPENMP) {
            memmove(list + 1, list, (size_t)i * sizeof *list);
            list[0] = PK_BACKEND_OPENMP;
        }
    if (!strcmp(proxy, "on") || !strcmp(proxy, "off") || !strcmp(proxy, "auto"))
        req.proxy = !strcmp(proxy, "on") ? 1 : !strcmp(proxy, "off") ? 0 : -1;
    else
        return cli_usage_error(prog, "option --proxy: '%s' (on, off or auto)", proxy);
    if (cli_size_index(req.size) < 0)
        return cli_usage_error(prog, "option --size: unknown size '%s' (small, paper, large)",
                               req.size);
    if (strcmp(small_first, "on") && strcmp(small_first, "off"))
        return cli_usage_error(prog, "option --small: '%s' (on or off)", small_first);
    if ((rc = cli_params_set(prog, NULL, &params))) return rc;
    if (cli_parse_only) /* fuzz/fuzz_cli.c: arguments checked, nothing read, run or written */
        return CLI_EXIT_OK;
    /* Open the JSON file first: a bad path fails before minutes of benchmarking. */
    if (json && !(jf = cli_temp_open(json)))
        return cli_usage_error(prog, "cannot write %s: %s", json, strerror(errno));

    cli_tune tune = {NULL, budget, cli_now_s(), 0, 0};
    pk_context_options o;
    pk_context_options_init(&o);
    o.flags = PK_OPT_IGNORE_ENV; /* the store: nothing loaded from the environment */
    if (tuning && pk_context_create(&tune.store, &o) != PK_OK) {
        if (jf) cli_temp_abort(jf);
        return cli_lib_error(MAIN_PROG, PK_ENOMEM);
    }
    /* tune at paper or large: the small class first (about 10 s on a 2-core CPU), so that
     * auto has an entry of its own there: a winner at paper size is not always the small
     * size's (diffusion3d 128^3: PoCL ahead of OpenMP's omp-tb by 1.2x, behind at 256^3) */
    if (tuning && !strcmp(small_first, "on") && cli_size_index(req.size) > CLI_SMALL) {
        cli_bench_req small = req;
        small.size = "small";
        printf("tune: the small class first (--small off: not)\n\n");
        if (cli_bench(want, nk, &small, list, nb, NULL, &tune) != 0) rc = CLI_EXIT_FAIL;
        printf("\ntune: now the %s class\n\n", req.size);
    }
    const int rc_size = cli_bench(want, nk, &req, list, nb, jf, tuning ? &tune : NULL);
    if (rc_size != 0) rc = rc_size;
    if (jf && cli_temp_commit(jf) != 0)
        rc = cli_usage_error(prog, "cannot write %s: %s", json, strerror(errno));
    if (tuning) {
        char path[4096] = "";
        pk_status s = wisdom ? PK_OK : pk_wisdom_default_path(tune.store, path, sizeof path);
        if (s == PK_OK && tune.added > 0) s = pk_wisdom_save(tune.store, wisdom ? wisdom : path);
        if (s != PK_OK) {
            cli_lib_error(MAIN_PROG, s);
            rc = CLI_EXIT_FAIL;
        } else
            printf("\nwisdom: %d entr%s %s %s%s\n", tune.added, tune.added == 1 ? "y" : "ies",
                   tune.added ? "merged into" : "(nothing written to)", wisdom ? wisdom : path,
                   tune.left_out ? "; some kernels were not tuned (budget)" : "");
        pk_context_destroy(tune.store);
    }
    return rc;
}

/* ---- main ----------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: portkern COMMAND [options]      (portkern COMMAND --help for details)\n"
        "\n"
        "Commands:\n"
        "  run KERNEL          run a kernel once; print one JSON line (times, rates)\n"
        "  gen KERNEL --out D  write a kernel's inputs as D/<name>.npy and D/params.json\n"
        "  diff A.npy B.npy    compare two arrays with the relative-tolerance differ\n"
        "  bench               every kernel x backend x variant, verified, against the\n"
        "                      measured memory bandwidth\n"
        "  tune                bench's measurements kept as wisdom: auto then takes the\n"
        "                      fastest variant measured on this machine\n"
        "Kernels: %s.\n"
        "Devices and backends: portkern-probe.\n"
        "\n"
        "  --version           print the library version\n"
        "  --help              this text\n"
        "\n"
        "Exit status: 0 success; 1 verification failed, arrays differ, or a run failed on\n"
        "the device; 2 bad input (option, value, file, unknown backend/variant/device).\n",
        kernel_list());
}

/* run and gen: the kernel operand picks the descriptor. */
static int cmd_kernel(const char *cmd, int argc, char **argv)
{
    const char *prog = strcmp(cmd, "run") == 0 ? "portkern run" : "portkern gen";
    if (strcmp(cmd, "run") == 0 && cli_mpi_requested(argc, argv))
        return cli_mpi_run(argc, argv); /* a distributed plan (tools/cli_mpi.c) */
    const char *name = cli_kernel_operand(argc, argv);
    const cli_kernel *k = cli_kernel_find(name);
    if (k) return strcmp(cmd, "run") == 0 ? cli_run(k, argc, argv) : cli_gen(k, argc, argv);
    if (!name) {
        for (int i = 0; i < argc && strcmp(argv[i], "--"); ++i)
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                cli_kernels_usage(stdout, cmd);
                return CLI_EXIT_OK;
            }
        return cli_usage_error(prog, "missing KERNEL (known: %s); see '%s --help'",
                               kernel_list(), prog);
    }
    return cli_usage_error(prog, "unknown kernel '%s' (known: %s)", name, kernel_list());
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("portkern %s\n", pk_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "gen") == 0)
        return cmd_kernel(cmd, argc - 2, argv + 2);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0 || strcmp(cmd, "tune") == 0) {
        /* minutes of progress lines: each reaches a file or pipe when it is printed, so a run
         * that dies (a driver's crash, a timeout) shows the row it died in */
        setvbuf(stdout, NULL, _IOLBF, 0);
        return cmd_bench(argc - 2, argv + 2, strcmp(cmd, "tune") == 0);
    }
    return cli_usage_error(MAIN_PROG, "unknown command '%s' (run, gen, diff, bench, tune); "
                           "see 'portkern --help'", cmd);
}
