/* cli_su3.c - the su3 commands of portkern: run, gen, and its part of bench.
 * PLACEHOLDER: not implemented yet. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_common.h"

struct cli_s3_bench {
    int unused;
};

int cli_su3_named(int argc, char **argv)
{
    return cli_kernel_named(argc, argv, "su3", NULL);
}

int cli_su3_run(int argc, char **argv)
{
    fprintf(stderr, "portkern run su3: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_su3_gen(int argc, char **argv)
{
    fprintf(stderr, "portkern gen su3: not implemented yet\n");
    return CLI_EXIT_USAGE;
}

int cli_su3_bench(const char *size, int reps, int threads, const pk_backend_id *backends, int nb,
                  cli_s3_bench **out)
{
    *out = NULL;
    printf("su3: not implemented yet\n");
    return CLI_EXIT_OK;
}

void cli_su3_bench_json_rows(const cli_s3_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_su3_bench_json(const cli_s3_bench *b, cli_json *j) { (void)b; (void)j; }
void cli_su3_bench_free(cli_s3_bench *b) { free(b); }
