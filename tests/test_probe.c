/* test_probe.c - the device probe: every backend is usable or says why; devices describe
 * themselves; bandwidth is measured; auto chooses a usable backend and says which. */
#include "portkern.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    pk_context *ctx;
    if (pk_context_create(&ctx, NULL) != PK_OK) {
        printf("Bail out! %s\n", pk_last_error());
        return 1;
    }
    for (int b = PK_BACKEND_SERIAL; b < (int)PK_BACKEND_COUNT; ++b) {
        const char *why = NULL;
        int avail = pk_backend_available(ctx, (pk_backend_id)b, &why);
        int n = pk_device_count(ctx, (pk_backend_id)b);
        ok(why != NULL && (avail ? (*why == '\0' && n >= 1) : (*why != '\0' && n == 0)),
           "%s: %s%s (%d device(s))", pk_backend_name((pk_backend_id)b),
           avail ? "usable" : "unusable: ", avail ? "" : why, n);
        for (int i = 0; i < n; ++i) {
            pk_device_info di;
            int s = pk_device_get_info(ctx, (pk_backend_id)b, i, &di);
            ok(s == PK_OK && di.name[0] && di.compute_units >= 1 && di.type >= PK_DEVICE_CPU &&
                   (int)di.backend == b && di.index == i,
               "%s device %d: %s, %d units, %.1f GiB, fp64 %d", pk_backend_name((pk_backend_id)b),
               i, di.name, di.compute_units, di.global_mem_bytes / 1073741824.0, di.fp64);
            double bw = 0;
            s = pk_measure_bandwidth(ctx, (pk_backend_id)b, i, (size_t)32 << 20, 2, &bw);
            ok(s == PK_OK && bw > 1e8 && bw < 1e14, "%s device %d: copy bandwidth %.1f GB/s%s%s",
               pk_backend_name((pk_backend_id)b), i, bw / 1e9, s ? " " : "", s ? pk_last_error() : "");
        }
    }
    ok(pk_backend_available(ctx, PK_BACKEND_SERIAL, NULL), "the serial backend is always usable");
    pk_device_info cpu;
    memset(&cpu, 0, sizeof cpu);
    int cs = pk_device_get_info(ctx, PK_BACKEND_SERIAL, 0, &cpu);
    ok(cs == PK_OK && cpu.simd[0] &&
           cpu.threads_per_core >= 1, "host CPU: SIMD level %s, %d thread(s) per core", cpu.simd,
       cpu.threads_per_core);

    /* auto picks a usable backend and says why */
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, 8, 8, 8, 2);
    float f[512];
    pk_diffusion3d_field(8, 8, 8, 0.0, f);
    pk_run_info info;
    int s = pk_diffusion3d(ctx, &p, NULL, f, &info);
    ok(s == PK_OK && pk_backend_available(ctx, info.backend, NULL) && info.reason[0] &&
           info.variant[0] && info.device_name[0],
       "auto ran %s/%s on %s (%s)", pk_backend_name(info.backend), info.variant, info.device_name,
       info.reason);
    int better = 0; /* nothing earlier in the auto order was usable */
    if (info.backend == PK_BACKEND_SERIAL)
        better = pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL);
    ok(!better && info.backend != PK_BACKEND_AUTO, "auto did not pass over a faster usable backend");
    pk_context_destroy(ctx);

    /* the environment picks a default; an explicit option beats it */
    setenv("PORTKERN_BACKEND", "serial", 1);
    pk_context_create(&ctx, NULL);
    s = pk_diffusion3d(ctx, &p, NULL, f, &info);
    ok(s == PK_OK && info.backend == PK_BACKEND_SERIAL && strstr(info.reason, "PORTKERN_BACKEND"),
       "PORTKERN_BACKEND=serial is honoured (%s)", info.reason);
    pk_context_destroy(ctx);
    pk_context_options opt;
    pk_context_options_init(&opt);
    opt.backend = PK_BACKEND_OPENMP;
    pk_context_create(&ctx, &opt);
    if (pk_backend_available(ctx, PK_BACKEND_OPENMP, NULL)) {
        s = pk_diffusion3d(ctx, &p, NULL, f, &info);
        ok(s == PK_OK && info.backend == PK_BACKEND_OPENMP, "an explicit backend beats PORTKERN_BACKEND");
    } else {
        tap_skip("OpenMP backend unavailable", "an explicit backend beats PORTKERN_BACKEND");
    }
    unsetenv("PORTKERN_BACKEND");
    pk_context_destroy(ctx);
    return tap_done();
}
