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

# Each kernel's programs (tests/test_kk_<backend>, its other tests, tests/test_kk_cuda_emu) are
# listed in kernels.mk; these are the library's own.
PK_TEST_PROGS = \
	tests/test_errors \
	tests/test_npy \
	tests/test_fits \
	tests/test_differ \
	tests/test_ref_threads \
	tests/test_probe \
	tests/test_peak \
	tests/test_cost \
	tests/test_clcache \
	tests/test_faults \
	tests/test_threads \
	tests/test_badinput \
	tests/test_plan_cache \
	tests/test_wisdom \
	tests/test_params
check_PROGRAMS += $(PK_TEST_PROGS) $(PK_SUITE_PROGS)
TESTS += $(PK_TEST_PROGS) $(PK_SUITE_PROGS) tests/test_cli.sh tests/test_install.sh tests/test_cli_badinput.sh \
	tests/test_cli_laplace2d.sh tests/test_cli_su3.sh tests/test_cli_dslash.sh tests/test_cli_grid.sh tests/test_cli_image.sh \
	tests/test_retry_tool_crash.sh tests/test_cli_files.sh tests/test_cli_tune.sh tests/test_mpi.sh
dist_check_SCRIPTS += tests/test_cli.sh tests/test_install.sh tests/test_cli_badinput.sh \
	tests/test_cli_laplace2d.sh tests/test_cli_su3.sh tests/test_cli_dslash.sh tests/test_cli_grid.sh tests/test_cli_image.sh \
	tests/test_retry_tool_crash.sh tests/test_cli_files.sh tests/test_cli_tune.sh tests/test_mpi.sh
EXTRA_DIST += tests/test_suite.c tests/wisdom_equal.h tests/tap.h tests/tap.sh tests/cli_lib.sh \
	tests/lsan.supp tests/lsan-precise.supp tests/lsan-precise.sh tests/retry-tool-crash.sh tests/tsan.supp \
	tests/valgrind.supp tests/valgrind.sh

# test_install.sh and test_mpi.sh run `make install` in the build tree, and libtool relinks
# libportkern-mpi (and the programs) in place while it installs: a test that loads them
# meanwhile fails ("libportkern-mpi.so.0: file too short", seen under make -j check).  So
# under -j they run after every other test of the run, one after the other.  (The targets
# are named through variables: a literal one would keep Automake from writing its recipe.)
PK_INSTALL_LOG = tests/test_install.sh.log
PK_MPI_LOG = tests/test_mpi.sh.log
$(PK_INSTALL_LOG): $(filter-out $(PK_INSTALL_LOG) $(PK_MPI_LOG),$(TEST_LOGS))
$(PK_MPI_LOG): $(filter-out $(PK_INSTALL_LOG) $(PK_MPI_LOG),$(TEST_LOGS)) \
	$(filter $(PK_INSTALL_LOG),$(TEST_LOGS))

# test_plan_cache counts the library's large allocations by defining posix_memalign: the
# executable must export it for libportkern's calls to bind to it.
tests_test_plan_cache_LDFLAGS = $(AM_LDFLAGS) -rdynamic

# test_fits reads the files back with cfitsio itself.
tests_test_fits_LDADD = libportkern.la $(CFITSIO_LIBS)

# Every other test program is one .c file linking the library (Makefile.am's LDADD).
tests_test_threads_CFLAGS = $(AM_CFLAGS) -pthread
tests_test_threads_LDADD = libportkern.la -lpthread

# CUDA without a GPU (docs/RELIABILITY.md): each .cu file of cuda/ compiled by the C++ compiler
# with cuda/emulate.h included first (tests/cuda_emu_<file>.$(OBJEXT), the rule below), its
# plan run on host threads against the serial references.  No CUDA toolkit needed: built and
# run in every configuration; without a C++17 compiler the script below SKIPs in their place.
# Each kernel's tests/test_kk_cuda_emu is listed in kernels.mk (PK_EMU_TESTS).
EXTRA_DIST += tests/cuda_emu_common.h tests/cuda_devmem.h
if PK_HAVE_CXX17
# Without -DPK_BUILDING_LIBRARY: lib/error.c, lib/util.c and lib/tuning.c, which the emulated host code
# calls, are compiled in here with hidden visibility (the library's own copies are hidden
# too), so the test's copies never interpose on the library's.
PK_EMU_CPPFLAGS = -I$(top_srcdir)/lib -I$(top_srcdir)/cuda -I$(top_builddir)
PK_EMU_CXXFLAGS = -std=gnu++17 -ffp-contract=off -pthread -Wall -Wextra -Wno-unused-parameter \
	-Wno-unknown-pragmas $(PK_SANITIZER_FLAGS)
PK_EMU_CFLAGS = $(AM_CFLAGS) -pthread -Wno-unused-function
# cuda/X.cu as C++ with cuda/emulate.h first: what Automake's rule for a C++ source with the
# emulation tests' flags would run.  The objects depend on every header of lib/ and cuda/
# (GNU make's wildcard: no dependency tracking for this rule).
PK_EMU_CXXCOMPILE = $(CXX) $(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(PK_EMU_CPPFLAGS) \
	$(CPPFLAGS) $(PK_EMU_CXXFLAGS) $(CXXFLAGS)
PK_EMU_HDRS = $(wildcard $(top_srcdir)/lib/*.h $(top_srcdir)/cuda/*.h $(top_srcdir)/cuda/*.cuh)
tests/cuda_emu_%.$(OBJEXT): cuda/%.cu $(PK_EMU_HDRS) $(CONFIG_HEADER)
	$(AM_V_CXX)$(MKDIR_P) tests && \
	$(PK_EMU_CXXCOMPILE) -include $(top_srcdir)/cuda/emulate.h -c -o $@ -x c++ $<
# A C test that links C++ objects: a C++ source in nodist_EXTRA_*_SOURCES (never built)
# makes Automake link it with the C++ compiler.
PK_EMU_LINK_CXX = tests/cuda_emu_link.cc
check_LTLIBRARIES = tests/libcudaemu.la
tests_libcudaemu_la_SOURCES = cuda/emulate.h cuda/emulate.cc lib/error.c lib/util.c lib/tuning.c
tests_libcudaemu_la_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_libcudaemu_la_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_libcudaemu_la_CFLAGS = $(PK_EMU_CFLAGS)
# The emulated runtime (cuda/runtime.cu: probe, errors, copies) goes into every test.
PK_EMU_LDADD = tests/cuda_emu_runtime.$(OBJEXT) tests/libcudaemu.la libportkern.la -lpthread
PK_EMU_TESTS += tests/test_cuda_transfer_emu
check_PROGRAMS += $(PK_EMU_TESTS)
TESTS += $(PK_EMU_TESTS)
tests_test_cuda_transfer_emu_SOURCES = tests/test_cuda_transfer_emu.cc
tests_test_cuda_transfer_emu_CPPFLAGS = $(PK_EMU_CPPFLAGS)
tests_test_cuda_transfer_emu_CXXFLAGS = $(PK_EMU_CXXFLAGS)
tests_test_cuda_transfer_emu_LDADD = $(PK_EMU_LDADD)
else
TESTS += tests/test_cuda_emu_skip.sh
dist_check_SCRIPTS += tests/test_cuda_emu_skip.sh
endif

# valgrind memcheck on the serial and OpenMP tests (docs/RELIABILITY.md).
.PHONY: check-valgrind
check-valgrind: $(check_PROGRAMS)
	$(SHELL) $(top_srcdir)/tests/valgrind.sh

clean-local:
	rm -rf tests/pocl-cache tests/portkern-cache tests/tmp-* tests/valgrind-* tests/lsan-precise-* \
		tests/test_mpi.out*
