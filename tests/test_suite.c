/* test_suite.c - one kernel's suite on one backend against the reference: the source of every
 * tests/test_<kk>_<backend> program (kernels.mk).  The program's CPPFLAGS name the suite and
 * the backend: -DPK_SUITE=kk includes tests/kk_common.h and runs its kk_run_suite(backend),
 * -DPK_SUITE_BACKEND=PK_BACKEND_SERIAL (or _OPENMP, _OPENCL, _CUDA) says on which backend. */
#define PK_SUITE_STR_(x) #x
#define PK_SUITE_STR(x) PK_SUITE_STR_(x)
#define PK_SUITE_CAT_(a, b) a##b
#define PK_SUITE_CAT(a, b) PK_SUITE_CAT_(a, b)

#if !defined(PK_SUITE) || !defined(PK_SUITE_BACKEND)
#error "compile with -DPK_SUITE=kk -DPK_SUITE_BACKEND=PK_BACKEND_... (see kernels.mk)"
#endif

#include PK_SUITE_STR(PK_SUITE_CAT(PK_SUITE, _common).h)

int main(void) { return PK_SUITE_CAT(PK_SUITE, _run_suite)(PK_SUITE_BACKEND); }
