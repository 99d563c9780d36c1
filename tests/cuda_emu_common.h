/* cuda_emu_common.h - what the emulated CUDA tests (tests/test_*_cuda_emu.c) share.
 *
 * Each of them links one .cu file of cuda/ compiled for the host (tests/cuda_emu_<file>.o:
 * the .cu as C++ with cuda/emulate.h included first, tests/local.mk), the emulated runtime
 * (cuda/emulate.cc, cuda/runtime.cu) and libportkern for the references, and drives the .cu
 * file's own plan functions (through its ops table pk_cuda_<kk>_ops: create, upload, run,
 * download, destroy, the host code the CUDA backend calls) on the emulated device.
 * docs/RELIABILITY.md ("CUDA without a GPU") says what that checks.
 *
 * State: the plans get a probed pk_cuda_state (emu_state()), as a context's, so that their
 * uploads and downloads take the staging ring of runtime.cu; emu_begin makes its chunks
 * 4096 bytes (PORTKERN_TEST_CUDA_STAGING_CHUNK, unless the environment sets it), so that
 * arrays of a few KiB go through it in many chunks.
 *
 * Errors: the emulated host code records its errors with its own copy of the library's
 * error module (lib/error.c is compiled into the test: the library's is hidden), so
 * pk_last_error() here is the detail of the last emulated call.
 */
#ifndef PK_TEST_CUDA_EMU_COMMON_H
#define PK_TEST_CUDA_EMU_COMMON_H

#include "cuda_internal.h"
#include "emulate.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double emu_t0;
static pk_cuda_state emu_st;
static int emu_st_ready;

/* The CUDA backend state the plans get (probed on first use; released by emu_end). */
static pk_cuda_state *emu_state(void)
{
    if (!emu_st_ready) {
        char why[512] = "";
        memset(&emu_st, 0, sizeof emu_st);
        if (pk_cuda_probe(&emu_st, why, sizeof why) != PK_OK) {
            printf("Bail out! pk_cuda_probe on the emulation: %s\n", why);
            exit(1);
        }
        emu_st_ready = 1;
    }
    return &emu_st;
}

static double emu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* " (fault: ...)" when the emulation recorded a fault, else "". */
static const char *emu_fault_note(void)
{
    static char buf[900];
    const char *f = pk_emu_fault();
    if (!f[0]) return "";
    snprintf(buf, sizeof buf, " (emulation fault: %s)", f);
    return buf;
}

/* The status and the detail of a failed emulated call, for a test line. */
static const char *emu_why(pk_status s)
{
    static char buf[1200];
    if (s == PK_OK)
        snprintf(buf, sizeof buf, "calls ok%s", emu_fault_note());
    else
        snprintf(buf, sizeof buf, "%s: %s%s", pk_status_name(s), pk_last_error(), emu_fault_note());
    return buf;
}

/* Clear what a failed case left behind (sticky error, fault), so that the next case runs. */
static void emu_next_case(void)
{
    pk_emu_reset();
    pk_clear_error();
}

static void emu_begin(const char *what)
{
    emu_t0 = emu_now();
    const char *sched = getenv("PK_EMU_SCHEDULE");
    tap_diag("%s on the CUDA emulation (cuda/emulate.h), schedule %s", what,
             sched && *sched ? sched : "alternate");
    pk_emu_set_device(4, 0, (size_t)1 << 30);
    setenv("PORTKERN_TEST_CUDA_STAGING_CHUNK", "4096", 0);
}

/* The state released, every device and pinned allocation freed, then the TAP plan;
 * returns the exit code. */
static int emu_end(void)
{
    pk_emu_stats st;
    pk_emu_get_stats(&st);
    if (emu_st_ready) pk_cuda_release(&emu_st);
    emu_st_ready = 0;
    ok(pk_emu_allocations() == 0 && pk_emu_host_allocations() == 0,
       "no device or pinned host memory left allocated (%ld allocations, %zu bytes; %ld pinned)",
       pk_emu_allocations(), pk_emu_bytes_in_use(), pk_emu_host_allocations());
    tap_diag("%llu launches, %llu blocks, %llu threads, %llu barriers in %.2f s", st.launches,
             st.blocks, st.threads, st.barriers, emu_now() - emu_t0);
    return tap_done();
}

/* What a plan's copies did since this was last asked ("transfer: device pointers, none"),
 * then forgotten, as the run info's reason gets it (every plan starts with its xfer). */
static inline const char *emu_transfer_note(void *impl)
{
    static char buf[256];
    pk_cuda_xfer *x = (pk_cuda_xfer *)impl;
    buf[0] = '\0';
    pk_cuda_transfer_note(x, buf, sizeof buf);
    x->paths = 0;
    return buf;
}

/* s after an execute on device arrays: PK_EINTERNAL unless nothing was copied (transfer
 * seconds 0, the note "transfer: device pointers, none"). */
static inline pk_status emu_zero_copy(void *impl, pk_status s, double transfer_seconds)
{
    const char *note = emu_transfer_note(impl);
    if (s == PK_OK && (transfer_seconds != 0 || strcmp(note, "transfer: device pointers, none")))
        return pk_fail(PK_EINTERNAL, "execute on device arrays: transfer %g s, \"%s\"",
                       transfer_seconds, note);
    return s;
}

/* Plan creation under device-memory exhaustion: the k-th cudaMalloc of create failing, for
 * every k until create succeeds, must give PK_EDEVMEM with nothing left allocated (the
 * cleanup paths of create; with the sanitizers, no host memory either). */
typedef pk_status (*emu_create_fn)(const void *arg, void **impl);
static inline void emu_check_alloc_failures(const char *what, emu_create_fn create,
                                     void (*destroy)(void *), const void *arg)
{
    int good = 1, k;
    char why[1400] = "";
    const long before = pk_emu_allocations();
    for (k = 1; k < 64; ++k) {
        void *impl = NULL;
        pk_emu_fail_malloc(k);
        const pk_status s = create(arg, &impl);
        pk_emu_fail_malloc(0);
        if (s == PK_OK) {
            destroy(impl);
            break;
        }
        if (s != PK_EDEVMEM || pk_emu_allocations() != before) {
            if (good)
                snprintf(why, sizeof why, "; allocation %d: %s, %ld allocations left", k,
                         emu_why(s), pk_emu_allocations() - before);
            good = 0;
        }
        emu_next_case();
    }
    ok(good && k > 1 && k < 64,
       "%s: each of its %d device allocations failing in turn gives PK_EDEVMEM and frees the "
       "others%s", what, k - 1, why);
}

#endif
