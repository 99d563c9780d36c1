/* portkern-probe - what this machine can run: every backend (usable or not, and why), every
 * device, each device's measured copy bandwidth and, on the host backends, the FMA peak.
 * Always exits 0 once the probe ran: a missing backend is a finding, not an error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_mpi.h"

static const char *const prog = "portkern-probe";

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: portkern-probe [--json] [--no-bandwidth] [--bytes N] [--params]\n"
            "List every backend (serial, openmp, opencl, cuda), whether it is usable and if\n"
            "not why, every device, the measured memory bandwidth of each device and the FMA\n"
            "peak of the host backends: with the bandwidth, the roof of a kernel.\n"
            "\n"
            "  --json          one JSON document on stdout instead of text\n"
            "  --no-bandwidth  skip the measurements, bandwidth and FMA peak (fast)\n"
            "  --bytes N       bytes per array of the copy kernel (default: the library's)\n"
            "  --params        list the tuning parameters instead (probes nothing): name,\n"
            "                  value, source (default, env or caller), environment variable,\n"
            "                  accepted values, default and what it does\n"
            "  --mpi           under mpirun: each rank's host and the backend, device and\n"
            "                  variant auto picks there, and whether its MPI takes GPU\n"
            "                  memory (CUDA-aware), printed by rank 0 (with --json: one\n"
            "                  JSON document); needs a build with MPI\n"
            "  --version       print the library version\n"
            "  --help          this text\n"
            "\n"
            "Bandwidth is a copy kernel's bytes read + written per second (STREAM's\n"
            "convention), best of 5 runs, in GB/s (1e9 bytes/s).  Serial measures one host\n"
            "thread, openmp all of them.  The FMA peak is double-precision flop/s of\n"
            "independent FMA chains in the widest vectors the CPU has (the SIMD level shown),\n"
            "best of 5 runs; serial: one thread, openmp: all of them.\n"
            "Exit status: 0 when the probe ran (even with backends missing), 1 when the\n"
            "library could not start, 2 on bad options.\n");
}

typedef struct probe_dev {
    pk_device_info info;
    pk_status status;    /* of pk_device_get_info */
    pk_status bw_status; /* of pk_measure_bandwidth */
    char bw_error[256];
    double bw;           /* bytes/s; 0 when not measured */
    int host;            /* serial, openmp: the FMA peak is measured too */
    pk_status peak_status;
    char peak_error[256];
    double peak;         /* flop/s; 0 when not measured */
} probe_dev;

static const char *type_name(pk_device_type t)
{
    switch (t) {
    case PK_DEVICE_CPU: return "cpu";
    case PK_DEVICE_GPU: return "gpu";
    case PK_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

static void probe_device(pk_context *ctx, pk_backend_id b, int i, int bandwidth, size_t bytes,
                         probe_dev *d)
{
    memset(d, 0, sizeof *d);
    d->status = pk_device_get_info(ctx, b, i, &d->info);
    if (d->status != PK_OK) {
        snprintf(d->bw_error, sizeof d->bw_error, "%s: %s", pk_strerror(d->status),
                 pk_last_error());
        return;
    }
    d->host = b == PK_BACKEND_SERIAL || b == PK_BACKEND_OPENMP;
    if (!bandwidth)
        return;
    d->bw_status = pk_measure_bandwidth(ctx, b, i, bytes, 5, &d->bw);
    if (d->bw_status != PK_OK) {
        d->bw = 0;
        snprintf(d->bw_error, sizeof d->bw_error, "%s: %s", pk_strerror(d->bw_status),
                 pk_last_error());
    }
    if (d->host && (d->peak_status = pk_measure_peak_flops(ctx, b, i, &d->peak)) != PK_OK) {
        d->peak = 0;
        snprintf(d->peak_error, sizeof d->peak_error, "%s: %s", pk_strerror(d->peak_status),
                 pk_last_error());
    }
}

static void print_device_text(const probe_dev *d, int bandwidth)
{
    const pk_device_info *in = &d->info;
    if (d->status != PK_OK) {
        printf("  device %d: no information (%s)\n", in->index, d->bw_error);
        return;
    }
    printf("  device %d: %s\n", in->index, in->name);
    printf("    vendor %s, type %s", in->vendor[0] ? in->vendor : "?", type_name(in->type));
    if (in->platform[0])
        printf(", platform %s", in->platform);
    printf("\n    driver %s\n", in->driver[0] ? in->driver : "?");
    printf("    compute units %d", in->compute_units);
    if (in->threads_per_core > 0)
        printf(" (%d threads/core)", in->threads_per_core);
    printf(", memory %.1f GiB, fp64 %s", (double)in->global_mem_bytes / (1024.0 * 1024 * 1024),
           in->fp64 ? "yes" : "no");
    if (in->cc_major > 0)
        printf(", compute capability %d.%d", in->cc_major, in->cc_minor);
    if (in->simd[0])
        printf(", SIMD %s", in->simd);
    printf("\n");
    if (!bandwidth)
        return;
    if (d->bw_status == PK_OK)
        printf("    copy bandwidth %.1f GB/s (bytes read + written)\n", d->bw / 1e9);
    else
        printf("    copy bandwidth not measured: %s\n", d->bw_error);
    if (d->host && d->peak_status == PK_OK)
        printf("    FMA peak %.1f GFlop/s (double, %s)\n", d->peak / 1e9,
               in->simd[0] ? in->simd : "scalar");
    else if (d->host)
        printf("    FMA peak not measured: %s\n", d->peak_error);
}

static void print_device_json(cli_json *j, const probe_dev *d, int bandwidth)
{
    const pk_device_info *in = &d->info;
    char cc[24];
    cj_open(j, NULL, '{');
    cj_int(j, "index", in->index);
    if (d->status != PK_OK) {
        cj_str(j, "error", d->bw_error);
        cj_close(j);
        return;
    }
    cj_str(j, "name", in->name);
    cj_str(j, "vendor", in->vendor);
    cj_str(j, "driver", in->driver);
    cj_str(j, "platform", in->platform);
    cj_str(j, "type", type_name(in->type));
    cj_int(j, "compute_units", in->compute_units);
    cj_int(j, "threads_per_core", in->threads_per_core);
    cj_num(j, "global_mem_bytes", (double)in->global_mem_bytes);
    cj_bool(j, "fp64", in->fp64);
    snprintf(cc, sizeof cc, "%d.%d", in->cc_major, in->cc_minor);
    cj_str(j, "compute_capability", in->cc_major > 0 ? cc : NULL);
    cj_str(j, "simd", in->simd);
    if (bandwidth && d->bw_status == PK_OK) {
        cj_num(j, "bandwidth_gb_per_s", d->bw / 1e9);
        cj_null(j, "bandwidth_error");
    } else {
        cj_null(j, "bandwidth_gb_per_s");
        cj_str(j, "bandwidth_error", bandwidth ? d->bw_error : "not measured (--no-bandwidth)");
    }
    if (d->host) {
        const int ok = bandwidth && d->peak_status == PK_OK;
        cj_num(j, "peak_gflop_per_s", ok ? d->peak / 1e9 : NAN);
        cj_str(j, "peak_error", ok ? NULL : bandwidth ? d->peak_error
                                                      : "not measured (--no-bandwidth)");
    }
    cj_close(j);
}

/* --params: every tuning parameter as a context made here sees it (the environment read). */
static int list_params(int json)
{
    static const char *const source_name[] = {"default", "env", "caller"};
    pk_context *ctx = NULL;
    pk_status s = pk_context_create(&ctx, NULL);
    cli_json j;
    if (s != PK_OK) {
        cli_lib_error(prog, s);
        return CLI_EXIT_FAIL;
    }
    if (json) {
        cj_init(&j, stdout, 1);
        cj_open(&j, NULL, '{');
        cj_str(&j, "portkern_version", pk_version());
        cj_open(&j, "params", '[');
    } else {
        printf("portkern %s tuning parameters (set: --param NAME=VALUE, pk_context_set_param, "
               "or the variable)\n", pk_version());
    }
    for (int i = 0; i < pk_param_count(); ++i) {
        pk_param_desc d;
        pk_param_source src = PK_PARAM_DEFAULT;
        char value[64];
        if (pk_param_info(i, &d) != PK_OK) continue;
        const pk_status vs = pk_context_get_param(ctx, d.name, value, sizeof value, &src);
        const char *problem = vs != PK_OK ? pk_last_error() : "";
        if (json) {
            cj_open(&j, NULL, '{');
            cj_str(&j, "name", d.name);
            cj_str(&j, "value", value);
            cj_str(&j, "source", source_name[src]);
            cj_str(&j, "env", d.env);
            if (d.env_alias)
                cj_str(&j, "env_alias", d.env_alias);
            else
                cj_null(&j, "env_alias");
            cj_str(&j, "values", d.values);
            cj_str(&j, "default", d.def);
            cj_str(&j, "doc", d.doc);
            if (vs != PK_OK)
                cj_str(&j, "error", problem);
            else
                cj_null(&j, "error");
            cj_close(&j);
        } else {
            char env[160];
            snprintf(env, sizeof env, "%s%s%s%s", d.env, d.env_alias ? " (older name: " : "",
                     d.env_alias ? d.env_alias : "", d.env_alias ? ")" : "");
            printf("\n%s = %s (%s)%s%s\n  %s\n  values: %s; default %s\n  environment: %s\n",
                   d.name, value, source_name[src], vs != PK_OK ? ": INVALID: " : "", problem,
                   d.doc, d.values, d.def, env);
        }
    }
    if (json) {
        cj_close(&j);
        cj_close(&j);
    }
    pk_context_destroy(ctx);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    int json = 0, no_bw = 0, version = 0, bytes_arg = 0, seen_bytes = 0, params = 0, npos, rc;
    const cli_opt opts[] = {
        {"json", CLI_FLAG, &json, NULL, 0, 0},
        {"params", CLI_FLAG, &params, NULL, 0, 0},
        {"no-bandwidth", CLI_FLAG, &no_bw, NULL, 0, 0},
        {"bytes", CLI_INT, &bytes_arg, &seen_bytes, 1, 2147483647.0},
        {"version", CLI_FLAG, &version, NULL, 0, 0},
        {NULL, CLI_FLAG, NULL, NULL, 0, 0},
    };
    char *pos[1];
    pk_context *ctx = NULL;
    pk_context_options copt;
    pk_status s;
    cli_json j;
    int b;

    if (cli_mpi_requested(argc - 1, argv + 1))
        return cli_mpi_probe(argc - 1, argv + 1); /* each rank's host and backend */
    rc = cli_parse(prog, argc - 1, argv + 1, opts, pos, 0, &npos);
    if (rc == CLI_HELP) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (rc)
        return rc;
    if (version) {
        printf("portkern-probe %s\n", pk_version());
        return CLI_EXIT_OK;
    }
    if (params) return list_params(json);

    /* Probe everything the machine has; PORTKERN_BACKEND only picks a default. */
    pk_context_options_init(&copt);
    copt.flags |= PK_OPT_IGNORE_ENV;
    s = pk_context_create(&ctx, &copt);
    if (s != PK_OK) {
        cli_lib_error(prog, s);
        return CLI_EXIT_FAIL;
    }

    if (json) {
        cj_init(&j, stdout, 1);
        cj_open(&j, NULL, '{');
        cj_str(&j, "portkern_version", pk_version());
        if (no_bw)
            cj_null(&j, "bandwidth_bytes_per_array");
        else if (seen_bytes)
            cj_int(&j, "bandwidth_bytes_per_array", bytes_arg);
        else
            cj_str(&j, "bandwidth_bytes_per_array", "default");
        cj_str(&j, "bandwidth_model", "copy kernel, bytes read + written per second");
        cj_str(&j, "peak_model", "host backends: double-precision FMA flop/s of independent "
                                 "chains, widest SIMD");
        cj_open(&j, "backends", '[');
    } else {
        printf("portkern %s device probe\n", pk_version());
    }

    for (b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        const char *why = NULL;
        int usable = pk_backend_available(ctx, (pk_backend_id)b, &why);
        int n = usable ? pk_device_count(ctx, (pk_backend_id)b) : 0, i;
        const char *name = pk_backend_name((pk_backend_id)b);

        if (json) {
            cj_open(&j, NULL, '{');
            cj_str(&j, "name", name);
            cj_bool(&j, "usable", usable);
            cj_str(&j, "reason", why ? why : "");
            cj_open(&j, "devices", '[');
        } else {
            printf("\n%s: %s%s%s\n", name, usable ? "usable" : "NOT usable",
                   !usable && why && why[0] ? ": " : "", !usable && why ? why : "");
            if (usable && n == 0)
                printf("  no devices\n");
        }
        for (i = 0; i < n; ++i) {
            probe_dev d;
            probe_device(ctx, (pk_backend_id)b, i, !no_bw, seen_bytes ? (size_t)bytes_arg : 0,
                         &d);
            d.info.index = i;
            if (json)
                print_device_json(&j, &d, !no_bw);
            else
                print_device_text(&d, !no_bw);
            fflush(stdout);
        }
        if (json) {
            cj_close(&j); /* devices */
            cj_close(&j); /* backend */
        }
    }
    if (json) {
        cj_close(&j); /* backends */
        cj_close(&j);
    }
    pk_context_destroy(ctx);
    return CLI_EXIT_OK;
}
