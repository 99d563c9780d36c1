/* cli_grid.c - the grid commands of portkern: run, gen, and its part of bench.
 * PLACEHOLDER: not implemented yet. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_common.h"

struct cli_gr_bench {
    int unused;
};

int cli_grid_named(int argc, char **argv) { return cli_kernel_named(argc, argv, "grid", NULL); }

int cli_grid_run(int argc, char **argv)
{
    fprintf(stderr, "portkern run grid: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_grid_gen(int argc, char **argv)
{
    fprintf(stderr, "portkern gen grid: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_grid_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                   cli_gr_bench **out)
{
    *out = NULL;
    printf("grid: not implemented yet\n");
    return CLI_EXIT_OK;
}

void cli_grid_bench_json_rows(const cli_gr_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_grid_bench_json(const cli_gr_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_grid_bench_free(cli_gr_bench *b) { free(b); }
