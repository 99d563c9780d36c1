/* fuzz_params.c - libFuzzer target: params.json of every kernel, as `portkern run KERNEL --in
 * DIR` reads it (cli_json_parse_flat, then cli_params_apply with the kernel's parameter table,
 * tools/cli_driver.c).  The oracle, per kernel: no crash, no sanitizer report; a file that is
 * accepted leaves every parameter inside the range and the names its table declares (what the
 * kernel's run relies on) for what it set, and one that is refused is refused with the usage
 * exit code. */
#include "cli_kernel.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz_params: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                          \
            abort();                                                                    \
        }                                                                               \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* The refusals' messages stay on stderr, where libFuzzer writes its statistics and any
     * report (replay_main sends the target's output to /dev/null by itself). */
    (void)argc;
    (void)argv;
    return 0;
}

/* Every parameter an accepted file set within what the table declares (the others keep the
 * kernel's defaults, which may mean "from the data set"). */
static void check_args(const cli_call *c)
{
    const cli_kernel *k = c->k;
    const void *args = c->args;
    for (int i = 0; k->params && k->params[i].name; ++i) {
        const cli_param *p = &k->params[i];
        if (c->seen[i] != CLI_SEEN_FILE) continue;
        const void *f = (const char *)args + p->off;
        switch (p->type) {
        case CLI_P_INT: CHECK(*(const int *)f >= p->min && *(const int *)f <= p->max); break;
        case CLI_P_COUNT:
            CHECK((double)*(const size_t *)f >= p->min && (double)*(const size_t *)f <= p->max);
            break;
        case CLI_P_DOUBLE:
            CHECK(*(const double *)f >= p->min && *(const double *)f <= p->max);
            break;
        case CLI_P_NAME: CHECK(cli_name_of(p->names, *(const int *)f) != NULL); break;
        case CLI_P_TEXT: break; /* resolved by the kernel */
        case CLI_P_BOOL:
        case CLI_P_FLAG: CHECK(*(const int *)f == 0 || *(const int *)f == 1); break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0; /* cli_read_text refuses files over 1 MiB */
    char *text = malloc(size + 1);
    cli_jobject *obj = malloc(sizeof *obj);
    char why[256];
    if (!text || !obj) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    if (memchr(data, '\0', size) == NULL && cli_json_parse_flat(text, obj, why, sizeof why) == 0)
        for (int n = 0; cli_kernels[n]; ++n) {
            const cli_kernel *k = cli_kernels[n];
            void *args = calloc(1, k->args_size);
            if (!args) abort();
            cli_call c;
            memset(&c, 0, sizeof c);
            c.k = k;
            c.prog = "fuzz_params";
            c.args = args;
            cli_args_init(k, args);
            const int rc = cli_params_apply(&c, "params.json", obj);
            CHECK(rc == 0 || rc == CLI_EXIT_USAGE);
            if (rc == 0) check_args(&c);
            free(args);
        }
    free(obj);
    free(text);
    return 0;
}
