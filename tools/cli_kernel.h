/* cli_kernel.h - a kernel's part of the portkern command line: one descriptor per kernel
 * (tools/cli_<kernel>.c) that the generic driver (tools/cli_driver.c) runs for `run`, `gen`
 * and `bench`.  The driver owns everything the kernels share: the common options, params.json
 * in and out, the context, timing, the JSON schema of a run line and of a bench row, the
 * bench table with min/median/max, the roof, exit codes.  A descriptor keeps only what is
 * the kernel's own: its parameters, its files, how to generate, run and verify it. */
#ifndef PK_CLI_KERNEL_H
#define PK_CLI_KERNEL_H

#include <stddef.h>

#include "cli_common.h"

/* ---- parameters: options of run and gen that are also keys of params.json ---------------- */
typedef enum cli_ptype {
    CLI_P_INT,    /* int */
    CLI_P_COUNT,  /* size_t, given as a whole number up to max (past INT_MAX) */
    CLI_P_DOUBLE, /* double, finite */
    CLI_P_NAME,   /* int id of a name (cli_names) */
    CLI_P_TEXT,   /* const char *, resolved by the kernel (magicfilter3d's "20x18x17") */
    CLI_P_BOOL,   /* int 0 or 1: the flags --name and --no-name (not both); params.json true,
                     false, 0 or 1 */
    CLI_P_FLAG    /* int 0 or 1: the flag --name alone (an option only, never in params.json) */
} cli_ptype;

#define CLI_IN_RUN 1u    /* an option of `run` */
#define CLI_IN_GEN 2u    /* an option of `gen` */
#define CLI_IN_PARAMS 4u /* written to params.json by gen, read from it by run --in (a parameter
                            only there, without RUN or GEN, is no option) */
#define CLI_IN_ALL (CLI_IN_RUN | CLI_IN_GEN | CLI_IN_PARAMS)

/* The names of a NAME parameter and the ids they stand for. */
typedef struct cli_names {
    const char *const *names; /* NULL-terminated, in the order messages list them */
    const int *ids;           /* ids[i] is names[i]'s; NULL: i */
} cli_names;

/** The name of id (NULL when it has none). */
const char *cli_name_of(const cli_names *n, int id);

typedef struct cli_param {
    const char *name; /* the option --name and the params.json key; NULL ends a table */
    cli_ptype type;
    size_t off;       /* offset of the value in the kernel's args struct */
    double min, max;  /* INT, COUNT, DOUBLE: accepted closed range */
    double def;       /* the default (NAME: its id; BOOL, FLAG: 0 or 1; TEXT: NULL always) */
    unsigned in;      /* CLI_IN_* */
    const cli_names *names; /* NAME */
    /* Its lines in `run/gen KERNEL --help` (options only): "--name ARG  help", the help
     * wrapped; no help: the line of another parameter covers it (ARG then names several
     * options: "N --ny N --nz N"). */
    const char *arg, *help;
} cli_param;

/* --seed's line, the same for every kernel that generates data. */
#define CLI_SEED_HELP "seed of the generated data (default 1): the same seed gives the same " \
                      "data on every machine"

#define CLI_PMAX 32
#define CLI_SEEN_OPT 1  /* given on the command line */
#define CLI_SEEN_FILE 2 /* taken from params.json or an input file's shape */

/* One command on one kernel: what the hooks get. */
typedef struct cli_kernel cli_kernel;
typedef struct cli_call {
    const cli_kernel *k;
    const char *prog;           /* "portkern run" / "portkern gen" */
    unsigned where;             /* CLI_IN_RUN (run, bench) or CLI_IN_GEN */
    void *args;                 /* the kernel's args struct */
    unsigned char seen[CLI_PMAX]; /* per entry of k->params: 0, CLI_SEEN_OPT or CLI_SEEN_FILE */
} cli_call;

/** 0, CLI_SEEN_OPT or CLI_SEEN_FILE for the parameter `name` of the call's kernel. */
int cli_seen(const cli_call *c, const char *name);
void cli_set_seen(cli_call *c, const char *name, int how);

/** A TEXT option that gives several INT parameters at once (magicfilter3d's --size N1xN2xN3,
 *  dslash's --dims X,Y,Z,T): its sep-separated integers, each in its parameter's range, into
 *  names[0..n) (with `one`, a single integer into all of them), marked as given on the command
 *  line; not together with any of them.  0 (also when the option is absent) or the usage
 *  error's exit code. */
int cli_extents(cli_call *c, const char *option, char sep, const char *const *names, int n,
                int one);

/** The values of a parsed params.json (path names it in messages) for what the command line
 *  did not set: a key the kernel does not know is a warning, a value of the wrong type or
 *  range a usage error (its exit code returned).  TEXT parameters point into obj afterwards. */
int cli_params_apply(cli_call *c, const char *path, const cli_jobject *obj);


/* ---- arrays: a kernel's .npy files and the buffers of its run ---------------------------- */
#define CLI_A_IN 1u  /* an input: run --in reads it, the generator fills it, gen writes it */
#define CLI_A_OUT 2u /* an output: allocated before the run, run --out writes it */
#define CLI_A_REF 4u /* the reference's output: allocated before the reference runs */

/* One array of the kernel's data struct, which the driver allocates (calloc), reads, writes
 * and frees.  Its shape is C order, comma-separated items: an extent, or the name of an INT
 * or COUNT parameter with an optional "+N" ("nv,3,3", "n3+15,n2+15,n1+15").  Reading an input
 * sets a named parameter from its extent, and refuses an extent that disagrees with the value
 * the command line, params.json or an earlier array gave. */
typedef struct cli_array {
    const char *file; /* DIR/file (REF: a name for messages); NULL ends a table */
    pk_dtype dtype;
    const char *shape; /* NULL: the kernel's shape hook gives it */
    size_t off;        /* offset of the array's pointer in the data struct */
    unsigned role;     /* CLI_A_* */
} cli_array;

/* The differ's verdict of a run against its reference, and how to report it. */
typedef struct cli_verdict {
    pk_diff_report rep;
    double rtol;
    int norm;
    size_t shape[8]; /* names the first failure as a multi-index */
    int ndim;
    char note[128];  /* what bench adds to a row that failed (grid: norm, num_skipped) */
} cli_verdict;

/* The sizes of --preset and bench --size. */
enum { CLI_SMALL, CLI_PAPER, CLI_LARGE };
/** CLI_SMALL, CLI_PAPER or CLI_LARGE for "small", "paper" or "large"; -1 for another name. */
int cli_size_index(const char *name);

/** The differ's verdict of the first output array against the first REF array (complex
 *  values as interleaved reals), element-wise with zero threshold k->zero or norm-wise; the
 *  first failure named by the array's shape.  A kernel without a check hook gets this, with
 *  k->norm. */
pk_status cli_check_diff(const cli_kernel *k, const void *args, void *data, int norm,
                         cli_verdict *v);
/** O(1) random data, uniform in [-1, 1), the same for a seed everywhere (splitmix64): n
 *  float32 (24 random bits) or float64 (53) values. */
void cli_uniform(pk_dtype dtype, unsigned long long seed, size_t n, void *x);
/** max |x[i]| of n float32 or float64 values. */
double cli_max_abs(pk_dtype dtype, const void *x, size_t n);
/** The verdict by an absolute bound (kernels whose contract bounds the error absolutely):
 *  the differ's relative and norm-wise figures (without scale, pairs with both sides <= atol
 *  left out of the relative ones), then equal, num_failed, first_fail and max_abs_err from
 *  |y - ref| <= atol (times the element's scale when scale is given: it fills out[j] for
 *  the elements i0 + j, j < n, of a block) for every element (a NaN fails and enters no
 *  figure, as in the differ); float32 or float64. */
pk_status cli_check_atol(pk_dtype dtype, const void *ref, const void *y, size_t n, double atol,
                         void (*scale)(const void *ctx, size_t i0, size_t n, double *out),
                         const void *ctx, cli_verdict *v);

/* ---- bench: every case x backend x variant as a plan on resident data --------------------- */
typedef struct cli_bench_req {
    const char *size; /* small, paper, large */
    int reps, threads;
    int psf_sweep;    /* conv2d's --psf-sweep */
    int calls;        /* --calls N: one-shot calls per row besides the plan (0: none) */
    int tune;         /* portkern tune: the tuning parameters searched too, timing cut short
                         (cli_bench_time's cut and agreement) where the runs allow it */
    const cli_list *params; /* --param NAME=VALUE: tuning parameters of every context (NULL:
                               none); checked before the bench starts */
    int proxy;        /* tune --proxy: 1 on, 0 off, -1 auto (paper and large sizes) */
} cli_bench_req;

enum { CLI_ROW_OK, CLI_ROW_SKIPPED, CLI_ROW_FAILED };

typedef struct cli_bench_row {
    pk_backend_id backend;
    int device;
    char variant[32];
    int c;            /* the case; -1 for a skipped backend */
    char case_name[48];
    int status;       /* CLI_ROW_* */
    char reason[600]; /* skipped/failed: why; ok: the library's reason */
    double t_min, t_median, t_max; /* kernel seconds of the timed runs */
    double setup_s, upload_s, download_s, verify_s;
    double call_first_s, call_repeat_s; /* --calls: the library's wall of the first one-shot
                                           call in a fresh context, median of the later ones */
    double call_first_new; /* --calls: resident bytes the first call added (its plan, work) */
    double fresh_bps;      /* --calls: first touch of new memory just before it, B/s */
    pk_run_info info; /* of the fastest timed run */
    double bw;        /* the device's measured copy bandwidth, B/s; 0: not measured */
    int verified;
    cli_verdict v;
    char *json;       /* the members of the kernel's run_json object for this row */
    char tuning[160]; /* tune: the parameters set for this row, "name=value;..." ("": none) */
    int winner;       /* tune: the fastest of its backend, device and case (its wisdom entry) */
    double wall_s;    /* the row's wall, plan to verdict (tune's account of where time goes) */
    unsigned long long out_hash; /* tune: a hash of the outputs (where the verdict is theirs) */
    int hashed, same_as;  /* tune: out_hash made; verified as the outputs of row same_as - 1 */
    int short_runs;   /* tune, runs_add_up: cut short after this many runs (warm-up included),
                         verified against the reference after as many; 0: all runs */
} cli_bench_row;

/* The backends a benchmark runs: one context per backend (forced), its variants, or why it
 * is skipped. */
typedef struct cli_bench_set {
    pk_context *ctx[PK_BACKEND_COUNT];
    char vars[PK_BACKEND_COUNT][16][32];
    char skip[PK_BACKEND_COUNT][320];
    int nvars[PK_BACKEND_COUNT];
} cli_bench_set;

#define CLI_CASES 8
typedef struct cli_bench_result {
    const cli_kernel *k;
    const cli_bench_req *req;
    cli_bench_row *rows;
    int nrows, cap;
    int ndefault;                 /* tune: the rows before its search (the variants at the
                                     defaults), which the kernel's report and object see */
    cli_bench_set set;            /* the contexts, one per backend */
    int ncases, ndata;
    void *args[CLI_CASES];        /* per case */
    int data_of[CLI_CASES];       /* per case: its data set */
    void *data[CLI_CASES];        /* per data set: inputs, outputs, reference */
    void *extra;                  /* the report's own results (free()d) */
    int failed;        /* set by the report hook when the kernel's own extras failed: exit 1 */
    double setup_wall_s;          /* the data sets and references (bench_setup), wall */
    double gen_wall_s, ref_wall_s; /* tune's profile: of setup_wall_s, the inputs' generation
                                      and the references' (short references included) */
    double proxy_wall_s;          /* tune: the proxy's wall (tune_proxy), within the kernel's */
    double t0;                    /* when the kernel started (cli_now_s) */
    double deadline;              /* tune: the end of the kernel's share of the budget, after
                                     which its search starts no row (0: none) */
    int search_left;              /* tune: the search's rows not started (the share spent) */
    int serial_left;              /* tune: serial rows at the defaults not run (likewise) */
    int is_proxy;                 /* tune: the proxy's cases (k->proxy applied to each) */
    struct cli_bench_result *px;  /* tune: the kernel's proxy, its rows (its data freed) */
#define CLI_SHORT_REFS 4
    void *sref[CLI_CASES][CLI_SHORT_REFS]; /* tune, runs_add_up: per data set, the reference
                                              after n runs of a row cut short (see short_ref) */
    int sref_failed;
    double sref_last_s; /* the wall of the reference the last short_ref call made (0: cached) */
} cli_bench_result;

/* GB/s and GFlop/s of a row at its best time (NaN when not ok). */
double cli_row_gbs(const cli_bench_row *r);
double cli_row_gflops(const cli_bench_row *r);
/* The kernel's plan on (args, data): one warm-up run, then reps timed runs; t[3] gets
 * min/median/max of kernel_s, *best the info of the fastest run.  On failure *stage (may be
 * NULL) names the run that failed ("warm-up run" or "timed run").  short_ (tune) ends the
 * timing early: after the first timed run when it took more than cut seconds and 0.1 s
 * (cut > 0: a variant that cannot win), after the warm-up when it took 4 x cut and 0.5 s
 * (the warm-up then stands for the timing), and (short_ 1, kernels whose runs do not add up)
 * once two timed runs agree within 2%; *runs (may be NULL) gets the number of runs made,
 * the warm-up included. */
pk_status cli_bench_time(const cli_kernel *k, void *plan, const void *args, void *data, int reps,
                         int short_, double cut, double t[3], pk_run_info *best,
                         const char **stage, int *runs);

/* What the driver asks of a kernel's library calls (its `call` hook). */
typedef enum cli_op {
    CLI_ONESHOT,       /* run: the one-shot call, inputs to outputs */
    CLI_REFERENCE,     /* the serial reference of the outputs after `runs` runs, into the REF
                          arrays (run: 1; bench: the warm-up and the timed runs, once per
                          data set) */
    CLI_PLAN_CREATE,   /* bench: *plan for the args */
    CLI_PLAN_UPLOAD,   /* the inputs into the plan */
    CLI_PLAN_RUN,      /* one run on the resident data (info) */
    CLI_PLAN_DOWNLOAD, /* the outputs out of the plan */
    CLI_PLAN_DESTROY
} cli_op;

/* ---- the descriptor --------------------------------------------------------------------- */
struct cli_kernel {
    const char *name;
    /* Optional: the kernel whose data sets this one reads (image, degrid: "grid"): run --in
     * accepts a params.json of either kernel, and gen writes that kernel's name there. */
    const char *data_of;
    const char *summary;          /* one line: `portkern run --help` lists it */
    /* The kernel's prose in `run KERNEL --help` and `gen KERNEL --help` (what it computes,
     * its files, its JSON object): the driver lists the options from the parameters. */
    const char *run_help, *gen_help;
    const char *(*variants)(pk_backend_id be);
    size_t args_size, data_size;
    const cli_param *params;
    void (*preset)(int size, void *args); /* CLI_SMALL..CLI_LARGE: the sizes of bench */
    int (*resolve)(cli_call *c); /* optional: after options and params.json */
    const cli_array *arrays;
    const char *(*shape)(const void *args, const cli_array *a); /* optional: for shape NULL */
    /* Optional: run --in DIR after the inputs of the table were read (grid's data set, which
     * the table does not describe; diffusion3d's defaults of the file's size). */
    int (*load)(cli_call *c, const char *dir, void *data);
    int (*generate)(cli_call *c, void *data); /* run without --in, gen: inputs allocated */
    /* Optional: gen writes these instead of the table's inputs (grid). */
    int (*write_inputs)(cli_call *c, const char *dir, const void *data);
    /* Optional: params.json keys gen writes after the table's, for information only (grid:
     * the data set's counts and recipe); run --in skips the keys info_keys lists (NULL-ended)
     * instead of warning about them. */
    void (*params_info)(cli_json *j, const void *args, const void *data);
    const char *const *info_keys;
    /* The kernel's library calls, one case an operation: ctx and variant for ONESHOT and
     * PLAN_CREATE, info for ONESHOT, PLAN_CREATE and PLAN_RUN, runs for REFERENCE. */
    pk_status (*call)(cli_op op, void **plan, pk_context *ctx, const char *variant,
                      const void *args, void *data, int runs, pk_run_info *info);
    double rtol;                  /* --verify's default */
    const char *verify_rule;      /* what passes */
    /* The verdict of the outputs against the reference (v->rtol set). */
    pk_status (*check)(const void *args, void *data, cli_verdict *v); /* optional */
    double zero; /* cli_check_diff's zero threshold; norm: 1 to compare norm-wise */
    int norm;
    /* Optional: outputs beyond the table's, with --out DIR or (dir NULL) without it: named by
     * the kernel's own options (grid's --intensity FILE). */
    int (*write_outputs)(cli_call *c, const char *dir, const void *data);
    void (*run_json)(cli_json *j, const void *args, const void *data, const pk_run_info *info);
    void (*data_free)(void *data); /* optional: what the data holds beyond the table's arrays */
    const char *flops_model, *bytes_model; /* what the library's counts mean, in words */

    /* bench: the defaults and the preset of the size, then case c of it (optional: one case);
     * returns the data set the case runs on (cases of a data set share its inputs, outputs
     * and reference, of the runs of a row), or -1 past the last case. */
    int (*bench_case)(int size, int c, void *args);
    void (*case_name)(const void *args, char *buf, size_t len); /* optional */
    int (*case_runs)(const void *args, const char *variant); /* optional: 0 leaves a row out */
    /* Optional (tune at paper and large sizes): the args of a case shrunk in place to a
     * proxy that ranks the variants as the case does at a fraction of its cost (grid, image,
     * degrid: a tenth of the visibilities); returns what the proxy is, in words. */
    const char *(*proxy)(void *args);
    /* The check hook's verdict depends on the outputs (the OUT arrays), the inputs and the
     * reference only (no other result of the run): tune then takes a row whose outputs are
     * bitwise those of a verified row of its case as verified (a kernel without a check hook
     * is such).  2: also of another case on the same data set, where the check reads nothing
     * of a case's args that the cases of a data set do not share (su3's layouts: chi comes
     * back in AoS; laplace2d's lexi and hvfo: phi comes back lexicographic). */
    int verdict_of_outputs;
    /* Optional (tune, not on a proxy): a data set of an earlier kernel of the same tune
     * (prior: its result; image and degrid take grid's) instead of generating the same one
     * again: 0 taken (its inputs borrowed, the prior's to free), -1 not the same data set
     * (then generate), else an exit code. */
    int (*borrow)(cli_call *c, void *data, const cli_bench_result *prior);
    /* Optional (tune): the reference of a data set from what prior already verified (image:
     * grid's double reference grid through pk_image_from_grid), instead of CLI_REFERENCE:
     * PK_OK made, PK_EUNSUPPORTED not possible here (not the same data set and parameters,
     * or prior's reference gone: then CLI_REFERENCE), else a failure.  May free prior's
     * reference arrays (NULL then). */
    pk_status (*ref_from)(const void *args, void *data, cli_bench_result *prior);
    int runs_add_up; /* each run steps the data in place (the reference is of reps + 1 runs):
                        bench always makes all reps timed runs */
    /* Optional, runs_add_up (tune): the REF arrays hold the reference after `from` runs; step
     * them on to the reference after `to` runs, bitwise what CLI_REFERENCE with to runs makes
     * (the reference steps one at a time from the input).  tune then makes a data set's
     * references after 1 .. CLI_SHORT_REFS - 1 runs (for its rows cut short) on the way to
     * its own, once. */
    pk_status (*ref_more)(const void *args, void *data, int from, int to);
    void (*describe)(const cli_bench_result *r); /* the lines above the table */
    void (*report)(cli_bench_result *r);         /* optional: after the table */
    void (*bench_json)(cli_json *j, const cli_bench_result *r); /* optional: its object */
    /* Optional: a row's fields beside its run_json's (what the report measured: a roof). */
    void (*row_json)(cli_json *j, const cli_bench_result *r, const cli_bench_row *row);
};

/** The kernels in the order of `portkern --help` and bench; NULL-terminated. */
extern const cli_kernel *const cli_kernels[];
const cli_kernel *cli_kernel_find(const char *name);
/** The kernel operand of a run/gen command line (argv after the command), or NULL. */
const char *cli_kernel_operand(int argc, char **argv);
/** The parameters' defaults into a kernel's args. */
void cli_args_init(const cli_kernel *k, void *args);
/** `portkern run --help` / `gen --help`: the kernels and their one-line summaries. */
void cli_kernels_usage(FILE *f, const char *cmd);

int cli_run(const cli_kernel *k, int argc, char **argv);
int cli_gen(const cli_kernel *k, int argc, char **argv);
/** bench: each kernel's rows printed, and with json the rows and each kernel's own object
 *  written there.  Returns the exit code (1: a failure or an unverified row). */
/* `portkern tune`: bench's verified rows become wisdom entries of `store` (the fastest
 * variant per kernel, size, case and device), kernels are started only within the budget,
 * and afterwards auto's choice with that wisdom is set against the best measured. */
typedef struct cli_tune {
    pk_context *store;    /* the entries land here; the caller saves them */
    double budget_s, t0;  /* no kernel starts once budget_s has passed since t0 */
    int added, left_out;  /* entries added; kernels not started (budget) */
} cli_tune;
/** bench (tune NULL) or tune over kernels[nk]; JSON rows to json when not NULL. */
int cli_bench(const cli_kernel *const *kernels, int nk, const cli_bench_req *req,
              const pk_backend_id *backends, int nb, FILE *json, cli_tune *tune);

#endif /* PK_CLI_KERNEL_H */
