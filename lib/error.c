/* error.c - status names and texts (from PK_STATUS_MAP) and the thread-local detail. */
#include "internal.h"

#include <stdio.h>

static _Thread_local char pk_error_detail[1024];

const char *pk_strerror(int status)
{
    switch (status) {
#define PK_STATUS_TEXT_(name, code, text) case code: return text;
        PK_STATUS_MAP(PK_STATUS_TEXT_)
#undef PK_STATUS_TEXT_
    }
    return "unknown status code";
}

const char *pk_status_name(int status)
{
    switch (status) {
#define PK_STATUS_NAME_(name, code, text) case code: return "PK_" #name;
        PK_STATUS_MAP(PK_STATUS_NAME_)
#undef PK_STATUS_NAME_
    }
    return "PK_UNKNOWN";
}

const char *pk_last_error(void) { return pk_error_detail; }

void pk_clear_error(void) { pk_error_detail[0] = '\0'; }

pk_status pk_fail(pk_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pk_error_detail, sizeof pk_error_detail, fmt, ap);
    va_end(ap);
    return status;
}
