/* fuzz_json.c - libFuzzer target: the CLI's reader of params.json (cli_json_parse_flat in
 * tools/cli_common.c), which `portkern run --in DIR` uses on a file of the user's.  Any input
 * must be accepted as a flat object whose keys and strings are terminated inside their
 * buffers, or refused with a reason; an accepted object must survive a round trip through
 * the CLI's JSON writer (cj_*) unchanged.  Violations abort.  See docs/RELIABILITY.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include "cli_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_json: check failed: %s\n", #cond);                         \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_object(const cli_jobject *o)
{
    CHECK(o->n >= 0 && o->n <= CLI_JMAX);
    for (int i = 0; i < o->n; ++i) {
        const cli_jvalue *v = &o->v[i];
        CHECK(memchr(v->key, '\0', sizeof v->key) != NULL);
        CHECK(cli_json_get(o, v->key) == v); /* keys are unique */
        switch (v->type) {
        case CLI_JNUM: CHECK(isfinite(v->num)); break;
        case CLI_JSTR: CHECK(memchr(v->str, '\0', sizeof v->str) != NULL); break;
        case CLI_JBOOL: CHECK(v->num == 0 || v->num == 1); break;
        case CLI_JNULL: break;
        default: CHECK(!"unknown value type");
        }
    }
}

/* Write o with the CLI's JSON writer (what `gen` writes params.json with). */
static char *write_object(const cli_jobject *o, int pretty)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    cli_json j;
    cj_init(&j, f, pretty);
    cj_open(&j, NULL, '{');
    for (int i = 0; i < o->n; ++i) {
        const cli_jvalue *v = &o->v[i];
        switch (v->type) {
        case CLI_JNUM: cj_num(&j, v->key, v->num); break;
        case CLI_JSTR: cj_str(&j, v->key, v->str); break;
        case CLI_JBOOL: cj_bool(&j, v->key, (int)v->num); break;
        default: cj_null(&j, v->key); break;
        }
    }
    cj_close(&j);
    CHECK(fclose(f) == 0);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0; /* cli_read_text refuses files over 1 MiB */
    char *text = malloc(size + 1), why[256];
    cli_jobject *obj = malloc(sizeof *obj), *again = malloc(sizeof *again);
    CHECK(text && obj && again);
    memcpy(text, data, size);
    text[size] = '\0';
    why[0] = '\0';
    if (cli_json_parse_flat(text, obj, why, sizeof why) == 0) {
        check_object(obj);
        for (int pretty = 0; pretty < 2; ++pretty) {
            char *out = write_object(obj, pretty);
            char why2[256] = "";
            int r = cli_json_parse_flat(out, again, why2, sizeof why2);
            if (r != 0) fprintf(stderr, "fuzz_json: rewritten object refused: %s\n%s\n", why2, out);
            CHECK(r == 0 && again->n == obj->n);
            for (int i = 0; i < obj->n; ++i) {
                const cli_jvalue *a = &obj->v[i], *b = &again->v[i];
                CHECK(strcmp(a->key, b->key) == 0 && a->type == b->type);
                CHECK(a->type != CLI_JSTR || strcmp(a->str, b->str) == 0);
                CHECK(a->type == CLI_JSTR || a->num == b->num);
            }
            free(out);
        }
    } else {
        CHECK(why[0] != '\0' && memchr(why, '\0', sizeof why) != NULL);
    }
    free(again);
    free(obj);
    free(text);
    return 0;
}
