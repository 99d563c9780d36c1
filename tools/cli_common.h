/* cli_common.h - what portkern and portkern-probe share: option parsing with strict number
 * checks, error reporting with the documented exit codes, a JSON writer with proper string
 * escaping, a tiny reader for flat JSON objects (params.json), and small file helpers. */
#ifndef PK_CLI_COMMON_H
#define PK_CLI_COMMON_H

#include <stdio.h>

#include "portkern.h"

/* Exit codes of every command (documented in --help). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1  /* not equal / verification failed / runtime failure */
#define CLI_EXIT_USAGE 2 /* bad input: options, files, names that do not exist here */

/* ---- options ------------------------------------------------------------------------- */
typedef enum cli_type { CLI_FLAG, CLI_INT, CLI_DOUBLE, CLI_STRING, CLI_LIST } cli_type;

/* The values of a repeatable option, in command-line order. */
#define CLI_LIST_MAX 32
typedef struct cli_list {
    const char *v[CLI_LIST_MAX];
    int n;
} cli_list;

typedef struct cli_opt {
    const char *name;  /* long name without "--"; NULL ends a table */
    cli_type type;
    void *dest;        /* FLAG, INT: int *; DOUBLE: double *; STRING: const char **;
                          LIST (repeatable): cli_list * */
    int *seen;         /* may be NULL; set to 1 when the option is given */
    double min, max;   /* INT and DOUBLE: accepted closed range */
} cli_opt;

#define CLI_HELP (-1) /* cli_parse result: --help or -h was given */

/** Test hook for the fuzz harness (fuzz/fuzz_cli.c), 0 in the tools: when 1, each command
 *  returns CLI_EXIT_OK once its options are parsed and checked, before it reads a file,
 *  allocates a field, runs a kernel or writes anything. */
extern int cli_parse_only;

/** Parse argv[0..argc) against opts ("--name value" or "--name=value"; "--" ends the
 *  options).  Other arguments go to pos[] (at most maxpos; *npos gets their number).
 *  Returns 0, CLI_HELP, or CLI_EXIT_USAGE after printing a message naming the option. */
/* Append an option to o[n] (keeping the NULL-name terminator after it); returns n + 1. */
int cli_opt_add(cli_opt *o, int n, const char *name, cli_type type, void *dest, int *seen,
                double min, double max);
int cli_parse(const char *prog, int argc, char **argv, const cli_opt *opts, char **pos,
              int maxpos, int *npos);
/** Strict conversion: the whole string, no blanks, an integer in [min, max] (options of type
 *  CLI_DOUBLE: a finite double).  Returns 0, or -1 with a reason in why[len]. */
int cli_to_int(const char *s, double min, double max, int *out, char *why, size_t len);

/** --param NAME=VALUE options (tuning parameters, lib/portkern.h): set each on ctx, or with
 *  ctx NULL only check them (on a context of their own).  0, or the exit code after a
 *  message naming the option. */
int cli_params_set(const char *prog, pk_context *ctx, const cli_list *params);

/* ---- messages ------------------------------------------------------------------------ */
/** "PROG: message" on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/** "portkern: <pk_strerror>: <pk_last_error>" on stderr; returns the exit code of the
 *  status: CLI_EXIT_USAGE for bad requests (arguments, files, names of backends, variants
 *  or devices that do not exist here), CLI_EXIT_FAIL for failures while running. */
int cli_lib_error(const char *prog, pk_status status);
/** Progress line on stderr, only when stderr is a terminal. */
void cli_progress(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---- JSON writer --------------------------------------------------------------------- */
typedef struct cli_json {
    FILE *f;
    int pretty;       /* 1: newlines and indentation; 0: one line */
    int depth;
    int first[16];    /* per level: nothing written yet */
    char close[16];   /* per level: '}' or ']' */
} cli_json;

void cj_init(cli_json *j, FILE *f, int pretty);
/** Open '{' or '[' (key NULL at the top level and inside arrays). */
void cj_open(cli_json *j, const char *key, char bracket);
void cj_close(cli_json *j); /* closes the innermost level; a newline after the top level */
void cj_str(cli_json *j, const char *key, const char *s); /* NULL: null */
void cj_num(cli_json *j, const char *key, double v);      /* non-finite: null */
void cj_int(cli_json *j, const char *key, long long v);
void cj_bool(cli_json *j, const char *key, int v);
void cj_null(cli_json *j, const char *key);
/** A writer of members only, as inside an object: what cj_raw inserts later. */
void cj_init_members(cli_json *j, FILE *f);
/** Members written by such a writer, inserted into the current object. */
void cj_raw(cli_json *j, const char *members);

/* ---- JSON reader for flat objects ---------------------------------------------------- */
typedef enum cli_jtype { CLI_JNUM, CLI_JSTR, CLI_JBOOL, CLI_JNULL } cli_jtype;

typedef struct cli_jvalue {
    char key[64];
    cli_jtype type;
    double num;    /* CLI_JNUM; CLI_JBOOL: 0 or 1 */
    char str[256]; /* CLI_JSTR */
} cli_jvalue;

#define CLI_JMAX 64

typedef struct cli_jobject {
    int n;
    cli_jvalue v[CLI_JMAX];
} cli_jobject;

/** Parse a flat JSON object (numbers, strings, booleans, null; no nesting).
 *  Returns 0, or -1 with the reason and byte offset in why[len]. */
int cli_json_parse_flat(const char *text, cli_jobject *obj, char *why, size_t len);
/** The value of key, or NULL. */
const cli_jvalue *cli_json_get(const cli_jobject *obj, const char *key);

/* ---- small helpers ------------------------------------------------------------------- */
/** Monotonic clock, seconds. */
double cli_now_s(void);
/** amount / seconds, NaN unless both are positive. */
double cli_rate(double amount, double seconds);
/** The host threads of --threads N: N, or OpenMP's default for 0 (1 without OpenMP). */
int cli_host_threads(int threads);
/** "float32", "float64", "complex64", "complex128", "int32"; NULL for another dtype. */
const char *cli_dtype_name(pk_dtype dtype);
/** "[a, b, c]" */
void cli_shape_text(const size_t *shape, int ndim, char *buf, size_t len);

/* ---- files --------------------------------------------------------------------------- */
/** Read a whole text file (NUL-terminated, malloc'ed).  NULL with errno set on failure;
 *  files over 1 MiB are refused (EFBIG). */
char *cli_read_text(const char *path);
/** A file written whole: cli_temp_open opens TARGET.tmp.PID for writing, where TARGET is path
 *  or where a symbolic link at path points; a target that exists without write permission is
 *  refused (NULL, errno EACCES).  cli_temp_commit closes it and renames it over the target
 *  (which keeps its permission bits) when every write succeeded, else removes it (-1 with
 *  errno).  Temporaries in flight are removed on SIGINT/SIGTERM/SIGHUP; those of dead
 *  processes are removed by the next write of the same target. */
FILE *cli_temp_open(const char *path);
int cli_temp_commit(FILE *f);
/** Close and remove a temporary opened by cli_temp_open; the target is left as it was. */
void cli_temp_abort(FILE *f);
/** mkdir -p; 0 or -1 with errno set. */
int cli_mkdirs(const char *path);
/** dir + "/" + name into buf; -1 when it does not fit. */
int cli_join(char *buf, size_t len, const char *dir, const char *name);
/** Read DIR/name.npy and check its dtype, rank and every extent given (want[i] = 0: any);
 *  0, or the usage error's exit code after a message naming the file, its dtype and shape
 *  and what was expected (`what`, e.g. "complex128 [nv][3][3]"). */
int cli_read_npy(const char *prog, const char *dir, const char *name, pk_dtype dtype, int ndim,
                 const size_t *want, const char *what, pk_array *arr);
/** The seven arrays of a 'portkern gen grid' directory into arr[0..6] (uu, vv, ww, vis,
 *  weight, support, kernels): uu .. weight of one length n >= 1 (float32; vis complex64),
 *  support int32 [planes] (at most 1000000), kernels complex64 [planes][half][half] (full
 *  layout) or [count] (compact: the caller checks count against the supports).  0, or the
 *  exit code after a message naming the file (grid's run --in and run --mpi --in). */
int cli_grid_arrays(const char *prog, const char *dir, pk_array arr[7]);


/* DIR/name (params.json, grid's kernels.json), written whole: open it (DIR created, path gets
 * its name) and begin the JSON object with "kernel"; close ends it and checks the write.
 * Both return 0 or the exit code after a message. */
int cli_json_open(const char *prog, const char *dir, const char *name, const char *kernel,
                  char *path, size_t path_len, FILE **pf, cli_json *j);
int cli_json_close(const char *prog, const char *path, FILE *pf, cli_json *j);

/* Split "a,b,c" into items[max][32]; -1 on an empty or overlong item. */
int cli_split_list(const char *s, char items[][32], int max, int *n);

/** Write DIR/name as .npy (DIR created when missing); 0 or the exit code of the error. */
int cli_write_npy(const char *prog, const char *dir, const char *name, pk_dtype dtype, int ndim,
                  const size_t *shape, const void *data);

#endif /* PK_CLI_COMMON_H */
