# tools/: the command-line programs users run.
bin_PROGRAMS += tools/portkern tools/portkern-probe
# The command line without its main (fuzz/ links it into its targets).
PK_CLI_SOURCES = tools/cli_common.c tools/cli_common.h \
	tools/cli_kernel.h tools/cli_driver.c tools/cli_diffusion3d.c \
	tools/cli_conv2d.c tools/cli_magicfilter3d.c tools/cli_laplace2d.c tools/cli_su3.c \
	tools/cli_dslash.c tools/cli_grid.c
tools_portkern_SOURCES = tools/portkern.c $(PK_CLI_SOURCES)
tools_portkern_probe_SOURCES = tools/portkern-probe.c tools/cli_common.c tools/cli_common.h
