# tests/: TAP tests run by `make check` through Automake's tap-driver.sh.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
LOG_DRIVER_FLAGS = --comments
# Tests never touch the user's caches (nor read the user's wisdom: auto's choices stay the
# fixed order; tests/test_wisdom.c sets its own); PoCL needs a writable cache dir; two cores
# are shared between OpenMP and PoCL's threads.
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	POCL_CACHE_DIR='$(abs_top_builddir)/tests/pocl-cache'; \
	PORTKERN_CACHE_DIR='$(abs_top_builddir)/tests/portkern-cache'; \
	PORTKERN_WISDOM=0; \
	export top_srcdir top_builddir POCL_CACHE_DIR PORTKERN_CACHE_DIR PORTKERN_WISDOM; \
	unset PORTKERN_BACKEND PORTKERN_DEVICE; \
	MPIRUN='$(MPIRUN)'; export MPIRUN;
# Whether this configuration has libportkern-mpi (tests/test_mpi.sh: a tests/test_mpi left by
# an earlier configuration with MPI is not a reason to run).
if HAVE_MPI
AM_TESTS_ENVIRONMENT += PK_HAVE_MPI=1; export PK_HAVE_MPI;
else
AM_TESTS_ENVIRONMENT += PK_HAVE_MPI=0; export PK_HAVE_MPI;
endif
if PK_ASAN
# --enable-sanitizers: LeakSanitizer ignores what PoCL and LLVM keep until exit
# (tests/lsan.supp); a failed huge malloc returns NULL as libc's does (the PK_ENOMEM tests need
# it); any UBSan report is fatal; programs a test compiles link the sanitizer runtimes too.
AM_TESTS_ENVIRONMENT += \
	LSAN_OPTIONS="suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0$${LSAN_OPTIONS:+:$$LSAN_OPTIONS}"; \
	ASAN_OPTIONS="allocator_may_return_null=1$${ASAN_OPTIONS:+:$$ASAN_OPTIONS}"; \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1$${UBSAN_OPTIONS:+:$$UBSAN_OPTIONS}"; \
	CC='$(CC) $(PK_SANITIZER_FLAGS)'; \
	export LSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS CC;
endif
if PK_SANITIZE
# A crash of the sanitizer itself (LSan's tracer, TSan's shadow mapping), with no finding, is
# run again, twice at most, and said so; a finding never is (tests/retry-tool-crash.sh).
LOG_COMPILER = $(SHELL) $(abs_top_srcdir)/tests/retry-tool-crash.sh
endif
if PK_TSAN
# --enable-sanitizers=thread: any report is fatal (tests/tsan.supp: see docs/RELIABILITY.md);
# a failed huge malloc returns NULL, as above.
AM_TESTS_ENVIRONMENT += \
	TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$(abs_top_srcdir)/tests/tsan.supp$${TSAN_OPTIONS:+:$$TSAN_OPTIONS}"; \
	CC='$(CC) $(PK_SANITIZER_FLAGS)'; \
	export TSAN_OPTIONS CC;
endif

PK_TEST_PROGS = \
	tests/test_errors \
	tests/test_npy \
	tests/test_fits \
	tests/test_differ \
	tests/test_probe \
	tests/test_peak \
	tests/test_cost \
	tests/test_d3_serial \
	tests/test_d3_openmp \
	tests/test_d3_opencl \
	tests/test_d3_cuda \
	tests/test_cv_serial \
	tests/test_cv_openmp \
	tests/test_cv_opencl \
	tests/test_cv_cuda \
	tests/test_mf_serial \
	tests/test_mf_openmp \
	tests/test_mf_opencl \
	tests/test_mf_cuda \
	tests/test_gr_serial \
	tests/test_gr_openmp \
	tests/test_gr_opencl \
	tests/test_gr_cuda \
	tests/test_gr_gen \
	tests/test_image \
	tests/test_lp_serial \
	tests/test_lp_openmp \
	tests/test_lp_opencl \
	tests/test_lp_cuda \
	tests/test_s3_serial \
	tests/test_s3_openmp \
	tests/test_s3_opencl \
	tests/test_s3_cuda \
	tests/test_ds_serial \
	tests/test_ds_openmp \
	tests/test_ds_opencl \
	tests/test_ds_cuda \
	tests/test_clcache \
	tests/test_faults \
	tests/test_threads \
	tests/test_badinput \
	tests/test_plan_cache \
	tests/test_wisdom \
	tests/test_params
check_PROGRAMS += $(PK_TEST_PROGS)
TESTS += $(PK_TEST_PROGS) tests/test_cli.sh tests/test_install.sh tests/test_cli_badinput.sh \
	tests/test_cli_laplace2d.sh tests/test_cli_su3.sh tests/test_cli_dslash.sh tests/test_cli_grid.sh tests/test_cli_image.sh \
	tests/test_retry_tool_crash.sh tests/test_cli_files.sh tests/test_cli_tune.sh tests/test_mpi.sh
dist_check_SCRIPTS += tests/test_cli.sh tests/test_install.sh tests/test_cli_badinput.sh \
	tests/test_cli_laplace2d.sh tests/test_cli_su3.sh tests/test_cli_dslash.sh tests/test_cli_grid.sh tests/test_cli_image.sh \
	tests/test_retry_tool_crash.sh tests/test_cli_files.sh tests/test_cli_tune.sh tests/test_mpi.sh
EXTRA_DIST += tests/wisdom_equal.h tests/tap.h tests/tap.sh tests/cli_lib.sh tests/d3_common.h tests/cv_common.h tests/mf_common.h \
	tests/lp_common.h tests/s3_common.h tests/ds_common.h tests/gr_common.h \
	tests/lsan.supp tests/lsan-precise.supp tests/lsan-precise.sh tests/retry-tool-crash.sh tests/tsan.supp \
	tests/valgrind.supp tests/valgrind.sh

# test_plan_cache counts the library's large allocations by defining posix_memalign: the
# executable must export it for libportkern's calls to bind to it.
tests_test_plan_cache_LDFLAGS = $(AM_LDFLAGS) -rdynamic

# test_fits reads the files back with cfitsio itself.
tests_test_fits_LDADD = libportkern.la $(CFITSIO_LIBS)

# grid (gr): test_gr_gen tests the generator's hidden pieces (pk_gg_*), so it compiles
# lib/gen/grid_gen.c in (its copy stays its own: the library's is hidden), and the public
# pk_grid_generate against them.
tests_test_gr_gen_SOURCES = tests/test_gr_gen.c lib/gen/grid_gen.c lib/gen/grid_gen.h
# Own CPPFLAGS: its objects must not be the library's libtool ones.
tests_test_gr_gen_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_gr_gen_LDADD = libportkern.la $(FFTW3_LIBS)
# image and degrid (docs/KERNELS.md 7): the generator's kernels of any size (its own copy of
# grid_gen.c, as test_gr_gen) and a double FFT of its own for the oracle.
tests_test_image_SOURCES = tests/test_image.c tests/im_common.h lib/gen/grid_gen.c lib/gen/grid_gen.h
tests_test_image_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_image_CFLAGS = $(AM_CFLAGS) -pthread
tests_test_image_LDADD = libportkern.la $(FFTW3_LIBS) -lpthread
# Every other test program is one .c file linking the library (Makefile.am's LDADD).
tests_test_threads_CFLAGS = $(AM_CFLAGS) -pthread
tests_test_threads_LDADD = libportkern.la -lpthread

# CUDA without a GPU (docs/RELIABILITY.md): each .cu file of cuda/ compiled by the C++ compiler
# with cuda/emulate.h (tests/cuda_emu_*.cc), its plan run on host threads against the serial
# references.  No CUDA toolkit needed: built and run in every configuration; without a C++17
# compiler the script below SKIPs in their place.
PK_EMU_TESTS = \
	tests/test_d3_cuda_emu \
	tests/test_cv_cuda_emu \
	tests/test_mf_cuda_emu \
	tests/test_gr_cuda_emu \
	tests/test_im_cuda_emu \
	tests/test_lp_cuda_emu \
	tests/test_s3_cuda_emu \
	tests/test_ds_cuda_emu \
	tests/test_cuda_transfer_emu
EXTRA_DIST += tests/cuda_emu_common.h tests/cuda_devmem.h
if PK_HAVE_CXX17
# Without -DPK_BUILDING_LIBRARY: lib/error.c, lib/util.c and lib/tuning.c, which the emulated host code
# calls, are compiled in here with hidden visibility (the library's own copies are hidden
# too), so the test's copies never interpose on the library's.
PK_EMU_CPPFLAGS = -I$(top_srcdir)/lib -I$(top_srcdir)/cuda -I$(top_builddir)
PK_EMU_CXXFLAGS = -std=gnu++17 -ffp-contract=off -pthread -Wall -Wextra -Wno-unused-parameter \
	-Wno-unknown-pragmas $(PK_SANITIZER_FLAGS)
PK_EMU_CFLAGS = $(AM_CFLAGS) -pthread -Wno-unused-function
check_LTLIBRARIES = tests/libcudaemu.la
tests_libcudaemu_la_SOURCES = cuda/emulate.h cuda/emulate.cc tests/cuda_emu_runtime.cc \
	lib/error.c lib/util.c lib/tuning.c
tests_libcudaemu_la_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_libcudaemu_la_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_libcudaemu_la_CFLAGS = $(PK_EMU_CFLAGS)
PK_EMU_LDADD = tests/libcudaemu.la libportkern.la -lpthread
check_PROGRAMS += $(PK_EMU_TESTS)
TESTS += $(PK_EMU_TESTS)
tests_test_d3_cuda_emu_SOURCES = tests/test_d3_cuda_emu.c tests/cuda_emu_diffusion3d.cc
tests_test_cv_cuda_emu_SOURCES = tests/test_cv_cuda_emu.c tests/cuda_emu_conv2d.cc \
	tests/cuda_emu_conv2d_fft.cc
tests_test_mf_cuda_emu_SOURCES = tests/test_mf_cuda_emu.c tests/cuda_emu_magicfilter3d.cc \
	lib/ref/magicfilter3d_ref.c
tests_test_gr_cuda_emu_SOURCES = tests/test_gr_cuda_emu.c tests/cuda_emu_grid.cc \
	lib/ref/grid_ref.c
# the image on CUDA: image.cu over grid.cu's plan and conv2d_fft.cu's cuFFT loader; the
# oracles of tests/im_common.h (the generator's kernels, FFTW double)
tests_test_im_cuda_emu_SOURCES = tests/test_im_cuda_emu.c tests/im_common.h \
	tests/cuda_emu_image.cc tests/cuda_emu_degrid.cc tests/cuda_emu_grid.cc \
	tests/cuda_emu_conv2d_fft.cc \
	lib/ref/grid_ref.c lib/gen/grid_gen.c lib/gen/grid_gen.h
tests_test_im_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_im_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_im_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_im_cuda_emu_LDADD = $(PK_EMU_LDADD) $(FFTW3_LIBS)
tests_test_lp_cuda_emu_SOURCES = tests/test_lp_cuda_emu.c tests/cuda_emu_laplace2d.cc \
	lib/ref/laplace2d_ref.c
tests_test_s3_cuda_emu_SOURCES = tests/test_s3_cuda_emu.c tests/cuda_emu_su3.cc
tests_test_ds_cuda_emu_SOURCES = tests/test_ds_cuda_emu.c tests/cuda_emu_dslash.cc
tests_test_cuda_transfer_emu_SOURCES = tests/test_cuda_transfer_emu.cc
tests_test_cuda_transfer_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_cuda_transfer_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_cuda_transfer_emu_LDADD = $(PK_EMU_LDADD)
tests_test_d3_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_cv_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_mf_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_gr_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_lp_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_s3_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_ds_cuda_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_d3_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_cv_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_mf_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_gr_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_lp_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_s3_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_ds_cuda_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_d3_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_cv_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_mf_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_gr_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_lp_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_s3_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_ds_cuda_emu_CFLAGS = $(PK_EMU_CFLAGS)
tests_test_d3_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_cv_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_mf_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_gr_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_lp_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_s3_cuda_emu_LDADD = $(PK_EMU_LDADD)
tests_test_ds_cuda_emu_LDADD = $(PK_EMU_LDADD)
else
TESTS += tests/test_cuda_emu_skip.sh
dist_check_SCRIPTS += tests/test_cuda_emu_skip.sh
endif

# valgrind memcheck on the serial and OpenMP tests (docs/RELIABILITY.md).
.PHONY: check-valgrind
check-valgrind: $(check_PROGRAMS)
	$(SHELL) $(top_srcdir)/tests/valgrind.sh

clean-local:
	rm -rf tests/pocl-cache tests/portkern-cache tests/tmp-* tests/valgrind-* tests/lsan-precise-*
