/* cli_dslash.c - the dslash commands of portkern: run, gen, and its part of bench.
 * PLACEHOLDER: not implemented yet. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_common.h"

struct cli_ds_bench {
    int unused;
};

int cli_dslash_named(int argc, char **argv)
{
    return cli_kernel_named(argc, argv, "dslash", NULL);
}

int cli_dslash_run(int argc, char **argv)
{
    fprintf(stderr, "portkern run dslash: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_dslash_gen(int argc, char **argv)
{
    fprintf(stderr, "portkern gen dslash: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_dslash_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                  cli_ds_bench **out)
{
    *out = NULL;
    printf("dslash: not implemented yet\n");
    return CLI_EXIT_OK;
}

void cli_dslash_bench_json_rows(const cli_ds_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_dslash_bench_json(const cli_ds_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_dslash_bench_free(cli_ds_bench *b) { free(b); }
