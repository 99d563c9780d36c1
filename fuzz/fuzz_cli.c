/* fuzz_cli.c - libFuzzer target: the option parsing of the `portkern` tool (tools/portkern.c
 * and tools/cli_*.c, compiled into this program with their main renamed pk_cli_tool_main).
 *
 * The input is split at NUL bytes into at most 64 arguments (each its own allocation, so
 * AddressSanitizer sees a read past any argument's end), and `portkern ARGS...` runs with
 * cli_parse_only set: every command parses and checks its options as usual and returns 0
 * where it would start reading files, allocating fields, running kernels or writing output.
 * The oracle: no crash, no sanitizer report, and an exit status of 0 (accepted) or 2 (bad
 * input) - never 1, which would mean something ran. */
#include "cli_common.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pk_cli_tool_main(int argc, char **argv); /* tools/portkern.c's main, renamed */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cli_parse_only = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    cli_parse_only = 1;
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = strdup("portkern");
    size_t start = 0;
    for (size_t i = 0; size > 0 && i <= size && argc <= MAX_ARGS; ++i) { /* empty: no args */
        if (i < size && data[i] != '\0') continue;
        size_t n = i - start;
        char *arg = malloc(n + 1);
        if (!arg) abort();
        memcpy(arg, data + start, n);
        arg[n] = '\0';
        argv[argc++] = arg;
        start = i + 1;
    }
    /* an input ending in NUL terminates its last argument rather than adding an empty one */
    if (size > 0 && data[size - 1] == '\0' && argc > 1 && argv[argc - 1][0] == '\0')
        free(argv[--argc]);
    argv[argc] = NULL;
    int rc = pk_cli_tool_main(argc, argv);
    if (rc != CLI_EXIT_OK && rc != CLI_EXIT_USAGE) {
        fprintf(stderr, "fuzz_cli: exit status %d (expected 0 or 2) for:", rc);
        for (int i = 0; i < argc; ++i) fprintf(stderr, " '%s'", argv[i]);
        fprintf(stderr, "\n");
        abort();
    }
    for (int i = 0; i < argc; ++i) free(argv[i]);
    return 0;
}
