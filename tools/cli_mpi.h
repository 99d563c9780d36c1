/* cli_mpi.h - the command line's MPI part (tools/cli_mpi.c): `portkern run KERNEL --mpi` and
 * `portkern-probe --mpi`.  In a build without MPI the calls say so and return
 * CLI_EXIT_USAGE. */
#ifndef PK_CLI_MPI_H
#define PK_CLI_MPI_H

/** 1 when argv[0..argc) holds --mpi before any "--". */
int cli_mpi_requested(int argc, char **argv);
/** `portkern run KERNEL --mpi ...`: argv[0..argc) are the words after "run". */
int cli_mpi_run(int argc, char **argv);
/** `portkern-probe --mpi [--json]`: argv[0..argc) are the words after the program name. */
int cli_mpi_probe(int argc, char **argv);

#endif
