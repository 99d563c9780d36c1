/* fftw_planner.c - the library's one FFTW (single precision) planner lock.  Apart from
 * lib/util.c, which the fuzz targets and the CUDA emulation tests compile in without FFTW. */
#include "internal.h"

#ifdef PK_HAVE_FFTW
#include <fftw3.h>
/* FFTW's planner is not thread-safe (only fftwf_execute is), and its thread count is global
 * planner state: every planner call of the library (conv2d's fft variant, pk_image,
 * pk_degrid) runs in this one critical section, with the thread count it asks for. */
void pk_fftwf_planner(int nt, void (*fn)(void *arg), void *arg)
{
#pragma omp critical(pk_fftw_planner)
    {
        static int threads_ready;
        if (!threads_ready) threads_ready = fftwf_init_threads() ? 1 : -1;
        if (threads_ready > 0) fftwf_plan_with_nthreads(nt < 1 ? 1 : nt);
        fn(arg);
    }
}
#endif
