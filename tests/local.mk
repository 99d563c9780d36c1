# tests/: TAP tests run by `make check` through Automake's tap-driver.sh.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
LOG_DRIVER_FLAGS = --comments
# Tests never touch the user's caches; PoCL needs a writable cache dir; two cores are shared
# between OpenMP and PoCL's threads.
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	POCL_CACHE_DIR='$(abs_top_builddir)/tests/pocl-cache'; \
	PORTKERN_CACHE_DIR='$(abs_top_builddir)/tests/portkern-cache'; \
	export top_srcdir top_builddir POCL_CACHE_DIR PORTKERN_CACHE_DIR; \
	unset PORTKERN_BACKEND PORTKERN_DEVICE;

PK_TEST_PROGS = \
	tests/test_errors \
	tests/test_npy \
	tests/test_differ \
	tests/test_probe \
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
	tests/test_clcache
check_PROGRAMS += $(PK_TEST_PROGS)
TESTS += $(PK_TEST_PROGS) tests/test_cli.sh tests/test_install.sh
dist_check_SCRIPTS += tests/test_cli.sh tests/test_install.sh
EXTRA_DIST += tests/tap.h tests/d3_common.h tests/cv_common.h tests/mf_common.h

tests_test_errors_LDADD = libportkern.la
tests_test_npy_LDADD = libportkern.la
tests_test_differ_LDADD = libportkern.la
tests_test_probe_LDADD = libportkern.la
tests_test_d3_serial_LDADD = libportkern.la
tests_test_d3_openmp_LDADD = libportkern.la
tests_test_d3_opencl_LDADD = libportkern.la
tests_test_d3_cuda_LDADD = libportkern.la
# conv2d tests: the StrayLight frame generator is not exported; each test compiles it in.
tests_test_cv_serial_SOURCES = tests/test_cv_serial.c lib/gen/conv2d_gen.c
tests_test_cv_serial_LDADD = libportkern.la
tests_test_cv_openmp_SOURCES = tests/test_cv_openmp.c lib/gen/conv2d_gen.c
tests_test_cv_openmp_LDADD = libportkern.la
tests_test_cv_opencl_SOURCES = tests/test_cv_opencl.c lib/gen/conv2d_gen.c
tests_test_cv_opencl_LDADD = libportkern.la
tests_test_cv_cuda_SOURCES = tests/test_cv_cuda.c lib/gen/conv2d_gen.c
tests_test_cv_cuda_LDADD = libportkern.la
tests_test_mf_serial_LDADD = libportkern.la
tests_test_mf_openmp_LDADD = libportkern.la
tests_test_mf_opencl_LDADD = libportkern.la
tests_test_mf_cuda_LDADD = libportkern.la
# The cache test is black-box: public API and environment variables only.
tests_test_clcache_LDADD = libportkern.la

clean-local:
	rm -rf tests/pocl-cache tests/portkern-cache tests/tmp-*
