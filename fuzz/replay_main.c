/* replay_main.c - runs a fuzz target (fuzz_*.c) without libFuzzer: on the files and
 * directories given as arguments, or with none on $top_srcdir/fuzz/corpus/PK_FUZZ_TARGET.
 * Prints TAP (one line per input), so `make check` replays the committed corpus (seeds and
 * every input that once found a bug) under whatever build it is: plain, ASan + UBSan,
 * valgrind.  The target's own output goes to /dev/null unless PK_FUZZ_VERBOSE is set. */
#undef main /* fuzz_cli.c's program renames the tool's main; this one is the real one */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#ifndef PK_FUZZ_TARGET
#define PK_FUZZ_TARGET "npy"
#endif

static int n_run = 0, quiet = 1;

static void run_one(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("not ok %d - %s: cannot open\n", ++n_run, path);
        return;
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            printf("Bail out! out of memory\n");
            exit(1);
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    /* an exact-size copy: ASan sees a read one byte past the input */
    unsigned char *in = malloc(len ? len : 1);
    if (!in) exit(1);
    memcpy(in, buf, len);
    free(buf);
    fflush(stdout);
    fflush(stderr);
    int out = -1, err = -1, nul = -1;
    if (quiet && (nul = open("/dev/null", O_WRONLY)) >= 0) {
        out = dup(1);
        err = dup(2);
        dup2(nul, 1);
        dup2(nul, 2);
    }
    LLVMFuzzerTestOneInput(in, len);
    fflush(stdout);
    fflush(stderr);
    if (nul >= 0) {
        dup2(out, 1);
        dup2(err, 2);
        close(out);
        close(err);
        close(nul);
    }
    free(in);
    printf("ok %d - %s %s (%zu bytes)\n", ++n_run, PK_FUZZ_TARGET, path, len);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char **names = NULL;
        size_t n = 0;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (n + 1) * sizeof *names);
            size_t len = strlen(path) + strlen(e->d_name) + 2;
            names[n] = malloc(len);
            snprintf(names[n++], len, "%s/%s", path, e->d_name);
        }
        if (d) closedir(d);
        if (n) qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n; ++i) {
            run_one(names[i]);
            free(names[i]);
        }
        free(names);
    } else {
        run_one(path);
    }
}

int main(int argc, char **argv)
{
    quiet = getenv("PK_FUZZ_VERBOSE") == NULL;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1) {
        for (int i = 1; i < argc; ++i) run_path(argv[i]);
    } else {
        const char *top = getenv("top_srcdir");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", top ? top : ".", PK_FUZZ_TARGET);
        struct stat st;
        if (stat(dir, &st) != 0) {
            printf("1..0 # SKIP no corpus at %s\n", dir);
            return 0;
        }
        run_path(dir);
    }
    printf("1..%d\n", n_run);
    return 0;
}
