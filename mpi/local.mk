# mpi/: libportkern-mpi, the distributed plans (docs/SCALING.md).  Built only when configure
# found MPI (--with-mpi, default check); libportkern itself never links MPI.  The library uses
# libportkern's public API only (lib/portkern.h), like any other program.
EXTRA_DIST += portkern-mpi.pc.in mpi/portkern_mpi.h mpi/mpi_internal.h mpi/mpi_common.c \
	mpi/mpi_halo.c mpi/mpi_diffusion3d.c mpi/mpi_laplace2d.c mpi/mpi_conv2d.c mpi/mpi_su3.c \
	mpi/mpi_magicfilter3d.c mpi/mpi_dslash.c mpi/mpi_grid.c \
	mpi/bench_mpi.c mpi/bench_scaling.sh mpi/scaling_model.py \
	tests/test_mpi.c
if HAVE_MPI
lib_LTLIBRARIES += libportkern-mpi.la
include_HEADERS += mpi/portkern_mpi.h
pkgconfig_DATA += portkern-mpi.pc
libportkern_mpi_la_SOURCES = mpi/portkern_mpi.h mpi/mpi_internal.h mpi/mpi_common.c \
	mpi/mpi_halo.c mpi/mpi_diffusion3d.c mpi/mpi_laplace2d.c mpi/mpi_conv2d.c mpi/mpi_su3.c \
	mpi/mpi_magicfilter3d.c mpi/mpi_dslash.c mpi/mpi_grid.c
# Own CPPFLAGS: -DPK_BUILDING_MPI marks its PK_MPI_API symbols visible; no PK_BUILDING_LIBRARY
# (libportkern's symbols are imported, as in any program).
libportkern_mpi_la_CPPFLAGS = -I$(top_srcdir)/lib -I$(top_srcdir)/mpi -I$(top_builddir) \
	-DPK_BUILDING_MPI $(MPI_CFLAGS)
libportkern_mpi_la_CFLAGS = $(PK_CFLAGS) -Wall -Wextra -Wno-unused-parameter
libportkern_mpi_la_LIBADD = libportkern.la $(MPI_LIBS)
libportkern_mpi_la_LDFLAGS = -version-info 0:0:0 -no-undefined
EXTRA_libportkern_mpi_la_DEPENDENCIES = libdir.stamp

# The test program tests/test_mpi.sh launches under mpirun, and the benchmark.
check_PROGRAMS += tests/test_mpi
tests_test_mpi_SOURCES = tests/test_mpi.c
tests_test_mpi_CPPFLAGS = -I$(top_srcdir)/lib -I$(top_srcdir)/mpi -I$(top_builddir) $(MPI_CFLAGS)
tests_test_mpi_LDADD = libportkern-mpi.la libportkern.la $(MPI_LIBS)
noinst_PROGRAMS += mpi/bench_mpi
mpi_bench_mpi_SOURCES = mpi/bench_mpi.c
mpi_bench_mpi_CPPFLAGS = $(tests_test_mpi_CPPFLAGS)
mpi_bench_mpi_LDADD = libportkern-mpi.la libportkern.la $(MPI_LIBS)
endif

# The command line's --mpi (tools/cli_mpi.c, tools/cli_mpi.h), listed here rather than in
# tools/local.mk so that the tools' own list stays as it is: compiled in every build (stubs
# without MPI), with the fuzz targets' PK_CLI_SOURCES too.
PK_CLI_SOURCES += tools/cli_mpi.c tools/cli_mpi.h
tools_portkern_probe_SOURCES += tools/cli_mpi.c tools/cli_mpi.h
# Its flags: with MPI, portkern and portkern-probe link
# libportkern-mpi; without it they build as before (the same flags both ways, so the objects
# keep one name), and --mpi says there is none.
if HAVE_MPI
PK_CLI_MPI_CPPFLAGS = -I$(top_srcdir)/mpi -DPK_HAVE_MPI $(MPI_CFLAGS)
PK_CLI_MPI_LIBS = libportkern-mpi.la $(MPI_LIBS)
else
PK_CLI_MPI_CPPFLAGS =
PK_CLI_MPI_LIBS =
endif
tools_portkern_CPPFLAGS = $(AM_CPPFLAGS) $(PK_CLI_MPI_CPPFLAGS)
tools_portkern_LDADD = $(PK_CLI_MPI_LIBS) libportkern.la
tools_portkern_probe_CPPFLAGS = $(tools_portkern_CPPFLAGS)
tools_portkern_probe_LDADD = $(tools_portkern_LDADD)
