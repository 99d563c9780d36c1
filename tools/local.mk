# tools/: the command-line programs users run.
bin_PROGRAMS += tools/portkern tools/portkern-probe
# The command line without its main (fuzz/ links it into its targets); each kernel's
# descriptor (tools/cli_<kernel>.c) is listed in kernels.mk (PK_CLI_KERNEL_FILES).
PK_CLI_SOURCES = tools/cli_common.c tools/cli_common.h \
	tools/cli_kernel.h tools/cli_driver.c $(PK_CLI_KERNEL_FILES)
nodist_tools_portkern_SOURCES = tools/cli_kernels.h
tools_portkern_SOURCES = tools/portkern.c $(PK_CLI_SOURCES)
tools_portkern_probe_SOURCES = tools/portkern-probe.c tools/cli_common.c tools/cli_common.h

# The kernels of tools/cli_driver.c's table (cli_kernels[]), in kernels.mk's order: one
# PK_CLI_KERNEL(name) line per name of PK_CLI_KERNELS, in the build tree (rewritten only when
# the list changes).  Every program that compiles tools/cli_driver.c has its objects wait
# for it (here and fuzz/local.mk), also when make is asked for that program alone.
tools/cli_kernels.h: Makefile
	$(AM_V_GEN)$(MKDIR_P) tools && \
	{ echo '/* generated from kernels.mk (PK_CLI_KERNELS) by tools/local.mk - do not edit */'; \
	  for k in $(PK_CLI_KERNELS); do echo "PK_CLI_KERNEL($$k)"; done; } > $@-t && \
	if cmp -s $@-t $@; then rm -f $@-t; else mv -f $@-t $@; fi
BUILT_SOURCES += tools/cli_kernels.h
CLEANFILES += tools/cli_kernels.h
$(tools_portkern_OBJECTS): tools/cli_kernels.h
