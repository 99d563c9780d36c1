/* cli_laplace2d.c - the laplace2d commands of portkern: run, gen, and its part of bench.
 * PLACEHOLDER: not implemented yet. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_common.h"

struct cli_lp_bench {
    int unused;
};

int cli_laplace2d_named(int argc, char **argv)
{
    return cli_kernel_named(argc, argv, "laplace2d", NULL);
}

int cli_laplace2d_run(int argc, char **argv)
{
    fprintf(stderr, "portkern run laplace2d: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_laplace2d_gen(int argc, char **argv)
{
    fprintf(stderr, "portkern gen laplace2d: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_laplace2d_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                  cli_lp_bench **out)
{
    *out = NULL;
    printf("laplace2d: not implemented yet\n");
    return CLI_EXIT_OK;
}

void cli_laplace2d_bench_json_rows(const cli_lp_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_laplace2d_bench_json(const cli_lp_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_laplace2d_bench_free(cli_lp_bench *b) { free(b); }
