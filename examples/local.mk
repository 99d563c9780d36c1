# examples/: short programs that use only the public API (lib/portkern.h), as a user would.
# `make check` builds and runs them as tests (they print a TAP verdict, read by the TAP
# driver of tests/local.mk); they are compiled like a user's program: the public header
# only, without the library's internal defines.
PK_EXAMPLE_PROGS = examples/oneshot examples/plan examples/iterate
check_PROGRAMS += $(PK_EXAMPLE_PROGS)
TESTS += $(PK_EXAMPLE_PROGS)

examples_oneshot_SOURCES = examples/oneshot.c
examples_oneshot_CPPFLAGS = -I$(top_srcdir)/lib
examples_plan_SOURCES = examples/plan.c
examples_plan_CPPFLAGS = -I$(top_srcdir)/lib
examples_iterate_SOURCES = examples/iterate.c
examples_iterate_CPPFLAGS = -I$(top_srcdir)/lib

# Installed beside the documentation, to be copied and compiled against the installed
# library: cc oneshot.c $(pkg-config --cflags --libs portkern).
examplesdir = $(docdir)/examples
dist_examples_DATA = examples/oneshot.c examples/plan.c examples/iterate.c
