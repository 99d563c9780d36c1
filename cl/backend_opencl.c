/* backend_opencl.c - the OpenCL backend: every device of every platform, lazily created
 * contexts and queues, program building with an in-memory and an on-disk binary cache, and
 * the copy-bandwidth measurement.
 *
 * The on-disk cache (format version PK_CLCACHE_FORMAT) holds one file per program:
 *   "PKCLBIN\0"  u32 format  u32 key length  key  u64 payload length  u64 payload FNV-1a  payload
 * (integers little-endian).  The key string names everything the binary depends on (library
 * version, source hash, build options, platform, device, driver); its 64-bit FNV-1a hash
 * names the file.  Entries are published by rename() of a temporary file in the same
 * directory, so readers see a whole entry or none; an entry that fails any check is deleted
 * and rebuilt from source.  Cache trouble never fails a call.
 */
#include "opencl_internal.h"

#include "cl/bandwidth_cl.h" /* generated in the build tree */

#include <CL/cl_ext.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define PK_CLCACHE_FORMAT 1u
#define PK_CLCACHE_MAGIC "PKCLBIN"           /* 8 bytes with the NUL */
#define PK_CLCACHE_MAX_PAYLOAD (1u << 30)    /* larger files are not ours */
#define PK_CL_STD "-cl-std=CL1.2"
/* Appended to every source by PORTKERN_TEST_CL_BREAK_BUILD=1, to test build failures. */
#define PK_CL_BREAK_SUFFIX \
    "\n__kernel void pk_test_break_build(void) { = ; } /* PORTKERN_TEST_CL_BREAK_BUILD */\n"

/* ---- errors --------------------------------------------------------------------------- */
const char *pk_cl_error_name(cl_int err)
{
    switch (err) {
#define PK_CL_ERR_(name) case name: return #name;
    PK_CL_ERR_(CL_SUCCESS)
    PK_CL_ERR_(CL_DEVICE_NOT_FOUND)
    PK_CL_ERR_(CL_DEVICE_NOT_AVAILABLE)
    PK_CL_ERR_(CL_COMPILER_NOT_AVAILABLE)
    PK_CL_ERR_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    PK_CL_ERR_(CL_OUT_OF_RESOURCES)
    PK_CL_ERR_(CL_OUT_OF_HOST_MEMORY)
    PK_CL_ERR_(CL_PROFILING_INFO_NOT_AVAILABLE)
    PK_CL_ERR_(CL_MEM_COPY_OVERLAP)
    PK_CL_ERR_(CL_IMAGE_FORMAT_MISMATCH)
    PK_CL_ERR_(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    PK_CL_ERR_(CL_BUILD_PROGRAM_FAILURE)
    PK_CL_ERR_(CL_MAP_FAILURE)
    PK_CL_ERR_(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    PK_CL_ERR_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    PK_CL_ERR_(CL_COMPILE_PROGRAM_FAILURE)
    PK_CL_ERR_(CL_LINKER_NOT_AVAILABLE)
    PK_CL_ERR_(CL_LINK_PROGRAM_FAILURE)
    PK_CL_ERR_(CL_DEVICE_PARTITION_FAILED)
    PK_CL_ERR_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    PK_CL_ERR_(CL_INVALID_VALUE)
    PK_CL_ERR_(CL_INVALID_DEVICE_TYPE)
    PK_CL_ERR_(CL_INVALID_PLATFORM)
    PK_CL_ERR_(CL_INVALID_DEVICE)
    PK_CL_ERR_(CL_INVALID_CONTEXT)
    PK_CL_ERR_(CL_INVALID_QUEUE_PROPERTIES)
    PK_CL_ERR_(CL_INVALID_COMMAND_QUEUE)
    PK_CL_ERR_(CL_INVALID_HOST_PTR)
    PK_CL_ERR_(CL_INVALID_MEM_OBJECT)
    PK_CL_ERR_(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    PK_CL_ERR_(CL_INVALID_IMAGE_SIZE)
    PK_CL_ERR_(CL_INVALID_SAMPLER)
    PK_CL_ERR_(CL_INVALID_BINARY)
    PK_CL_ERR_(CL_INVALID_BUILD_OPTIONS)
    PK_CL_ERR_(CL_INVALID_PROGRAM)
    PK_CL_ERR_(CL_INVALID_PROGRAM_EXECUTABLE)
    PK_CL_ERR_(CL_INVALID_KERNEL_NAME)
    PK_CL_ERR_(CL_INVALID_KERNEL_DEFINITION)
    PK_CL_ERR_(CL_INVALID_KERNEL)
    PK_CL_ERR_(CL_INVALID_ARG_INDEX)
    PK_CL_ERR_(CL_INVALID_ARG_VALUE)
    PK_CL_ERR_(CL_INVALID_ARG_SIZE)
    PK_CL_ERR_(CL_INVALID_KERNEL_ARGS)
    PK_CL_ERR_(CL_INVALID_WORK_DIMENSION)
    PK_CL_ERR_(CL_INVALID_WORK_GROUP_SIZE)
    PK_CL_ERR_(CL_INVALID_WORK_ITEM_SIZE)
    PK_CL_ERR_(CL_INVALID_GLOBAL_OFFSET)
    PK_CL_ERR_(CL_INVALID_EVENT_WAIT_LIST)
    PK_CL_ERR_(CL_INVALID_EVENT)
    PK_CL_ERR_(CL_INVALID_OPERATION)
    PK_CL_ERR_(CL_INVALID_GL_OBJECT)
    PK_CL_ERR_(CL_INVALID_BUFFER_SIZE)
    PK_CL_ERR_(CL_INVALID_MIP_LEVEL)
    PK_CL_ERR_(CL_INVALID_GLOBAL_WORK_SIZE)
    PK_CL_ERR_(CL_INVALID_PROPERTY)
    PK_CL_ERR_(CL_INVALID_IMAGE_DESCRIPTOR)
    PK_CL_ERR_(CL_INVALID_COMPILER_OPTIONS)
    PK_CL_ERR_(CL_INVALID_LINKER_OPTIONS)
    PK_CL_ERR_(CL_INVALID_DEVICE_PARTITION_COUNT)
    PK_CL_ERR_(CL_PLATFORM_NOT_FOUND_KHR)
#undef PK_CL_ERR_
    default: return "CL_UNKNOWN_ERROR";
    }
}

pk_status pk_cl_fail(cl_int err, const char *call, const char *fmt, ...)
{
    pk_status st = PK_EDEVICE;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
        err == CL_OUT_OF_HOST_MEMORY)
        st = PK_EDEVMEM;
    else if (err == CL_BUILD_PROGRAM_FAILURE)
        st = PK_EBUILD;
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return pk_fail(st, "%s failed: %s (%d)%s%s", call, pk_cl_error_name(err), (int)err,
                   detail[0] ? ": " : "", detail);
}

/* ---- probing -------------------------------------------------------------------------- */
/* Strings are truncated to the buffer, not refused: a long driver string is not an error. */
static void device_string(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
    char *tmp = malloc(n + 1);
    if (!tmp) return;
    if (clGetDeviceInfo(d, what, n, tmp, NULL) == CL_SUCCESS) {
        tmp[n] = '\0';
        pk_strlcpy(buf, tmp, len);
    }
    free(tmp);
}

static void platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
    char *tmp = malloc(n + 1);
    if (!tmp) return;
    if (clGetPlatformInfo(p, what, n, tmp, NULL) == CL_SUCCESS) {
        tmp[n] = '\0';
        pk_strlcpy(buf, tmp, len);
    }
    free(tmp);
}

static void describe_device(pk_cl_device *d)
{
    cl_device_type t = 0;
    cl_uint cu = 0;
    cl_device_fp_config fp64 = 0;
    device_string(d->id, CL_DEVICE_NAME, d->name, sizeof d->name);
    device_string(d->id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    device_string(d->id, CL_DEVICE_VERSION, d->version, sizeof d->version);
    device_string(d->id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    platform_string(d->platform, CL_PLATFORM_NAME, d->platform_name, sizeof d->platform_name);
    platform_string(d->platform, CL_PLATFORM_VERSION, d->platform_version,
                    sizeof d->platform_version);
    clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem,
                    NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc,
                    NULL);
    if (clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem,
                        NULL) != CL_SUCCESS)
        d->local_mem = 0;
    d->local_mem = pk_test_local_mem_cap(d->local_mem);
    /* Devices without doubles may answer with an error instead of 0: both mean no fp64. */
    if (clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) !=
        CL_SUCCESS)
        fp64 = 0;
    d->type = (t & CL_DEVICE_TYPE_GPU)           ? PK_DEVICE_GPU
              : (t & CL_DEVICE_TYPE_CPU)         ? PK_DEVICE_CPU
              : (t & CL_DEVICE_TYPE_ACCELERATOR) ? PK_DEVICE_ACCELERATOR
                                                 : PK_DEVICE_OTHER;
    d->compute_units = (int)cu;
    d->fp64 = fp64 != 0;
}

/* The library's cache directory (pk_cache_dir); "off" disables the cache. */
static void cache_configure(pk_cl_state *st)
{
    int owner = 0;
    st->cache_on = pk_cache_dir(st->cache_dir, sizeof st->cache_dir, &owner);
    st->cache_dir_check_owner = owner;
}

static void census_write(pk_cl_state *st);

static pk_status ocl_init(const pk_context_options *opt, void **state, char *why, size_t len)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == CL_PLATFORM_NOT_FOUND_KHR) {
        snprintf(why, len, "no OpenCL platform (clGetPlatformIDs returned -1001: no ICD "
                           "installed or no vendor .icd file)");
        return PK_ENOBACKEND;
    }
    if (err != CL_SUCCESS || np == 0) {
        snprintf(why, len, "no OpenCL platform (clGetPlatformIDs returned %d: %s, %u platforms)",
                 (int)err, pk_cl_error_name(err), (unsigned)np);
        return PK_ENOBACKEND;
    }
    cl_platform_id *plat = calloc(np, sizeof *plat);
    cl_uint *ndev = calloc(np, sizeof *ndev);
    pk_cl_state *st = calloc(1, sizeof *st);
    pk_status status = PK_ENOMEM;
    char notes[512] = "";
    if (!plat || !ndev || !st) {
        snprintf(why, len, "out of host memory while listing OpenCL platforms");
        goto out;
    }
    err = clGetPlatformIDs(np, plat, NULL);
    if (err != CL_SUCCESS) {
        snprintf(why, len, "no OpenCL platform (clGetPlatformIDs returned %d: %s)", (int)err,
                 pk_cl_error_name(err));
        status = PK_ENOBACKEND;
        goto out;
    }
    int total = 0;
    for (cl_uint p = 0; p < np; ++p) {
        /* A platform without devices is normal (PoCL answers CL_DEVICE_NOT_FOUND when its
         * cache directory is unwritable); it is only worth a note if no platform has any. */
        err = clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev[p]);
        if (err != CL_SUCCESS || ndev[p] == 0) {
            char pname[128];
            platform_string(plat[p], CL_PLATFORM_NAME, pname, sizeof pname);
            pk_append_note(notes, sizeof notes, "platform '%s': clGetDeviceIDs returned %d (%s)%s",
                           pname, (int)err, pk_cl_error_name(err),
                           err == CL_DEVICE_NOT_FOUND && strstr(pname, "Portable")
                               ? ", PoCL does this when its cache directory is not "
                                 "writable: set POCL_CACHE_DIR"
                               : "");
            ndev[p] = 0;
        }
        total += (int)ndev[p];
    }
    if (total == 0) {
        snprintf(why, len, "no OpenCL device on %u platform(s): %s", (unsigned)np, notes);
        status = PK_ENOBACKEND;
        goto out;
    }
    st->dev = calloc((size_t)total, sizeof *st->dev);
    if (!st->dev) {
        snprintf(why, len, "out of host memory while listing OpenCL devices");
        goto out;
    }
    for (cl_uint p = 0; p < np; ++p) {
        if (!ndev[p]) continue;
        cl_device_id *ids = calloc(ndev[p], sizeof *ids);
        if (!ids) {
            snprintf(why, len, "out of host memory while listing OpenCL devices");
            goto out;
        }
        err = clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, ndev[p], ids, NULL);
        for (cl_uint i = 0; err == CL_SUCCESS && i < ndev[p]; ++i) {
            pk_cl_device *d = &st->dev[st->ndev++];
            d->platform = plat[p];
            d->id = ids[i];
            describe_device(d);
        }
        free(ids);
    }
    if (st->ndev == 0) {
        snprintf(why, len, "no OpenCL device: clGetDeviceIDs failed on the second query");
        status = PK_ENOBACKEND;
        goto out;
    }
    cache_configure(st);
    census_write(st);
    const char *brk = pk_getenv("PORTKERN_TEST_CL_BREAK_BUILD");
    st->break_build = brk && strcmp(brk, "0") != 0;
    *state = st;
    st = NULL;
    status = PK_OK;
out:
    if (st) free(st->dev);
    free(st);
    free(ndev);
    free(plat);
    return status;
}

static void ocl_fini(void *state)
{
    pk_cl_state *st = state;
    if (!st) return;
    for (int i = 0; i < st->ndev; ++i) {
        pk_cl_device *d = &st->dev[i];
        while (d->programs) {
            pk_cl_program *p = d->programs;
            d->programs = p->next;
            clReleaseProgram(p->program);
            free(p);
        }
        if (d->queue) clReleaseCommandQueue(d->queue);
        if (d->context) clReleaseContext(d->context);
    }
    free(st->dev);
    free(st);
}

static int ocl_device_count(void *state) { return ((pk_cl_state *)state)->ndev; }

static pk_status ocl_device_info(void *state, int index, pk_device_info *info)
{
    pk_cl_state *st = state;
    PK_CHECK(index >= 0 && index < st->ndev, PK_ENODEVICE,
             "opencl device %d: the backend has %d device(s)", index, st->ndev);
    const pk_cl_device *d = &st->dev[index];
    memset(info, 0, sizeof *info);
    info->backend = PK_BACKEND_OPENCL;
    info->index = index;
    info->type = d->type;
    pk_strlcpy(info->name, d->name, sizeof info->name);
    pk_strlcpy(info->vendor, d->vendor, sizeof info->vendor);
    pk_strlcpy(info->driver, d->driver, sizeof info->driver);
    pk_strlcpy(info->platform, d->platform_name, sizeof info->platform);
    info->compute_units = d->compute_units;
    info->global_mem_bytes = (uint64_t)d->global_mem;
    info->local_mem_bytes = (uint64_t)d->local_mem;
    info->fp64 = d->fp64;
    return PK_OK;
}

pk_status pk_cl_device_open(pk_cl_state *st, int index, pk_cl_device **out)
{
    PK_CHECK(index >= 0 && index < st->ndev, PK_ENODEVICE,
             "opencl device %d: the backend has %d device(s)", index, st->ndev);
    pk_cl_device *d = &st->dev[index];
    if (!d->context) {
        cl_int err;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform,
                                         0};
        pk_driver_lock(); /* a driver's first context, like its first queries, is not safe
                             from several threads at once (lib/internal.h) */
        cl_context c = clCreateContext(props, 1, &d->id, NULL, NULL, &err);
        cl_command_queue q = NULL;
        if (err == CL_SUCCESS) q = clCreateCommandQueue(c, d->id, 0, &err);
        pk_driver_unlock();
        if (!c) return pk_cl_fail(err, "clCreateContext", "opencl device %d '%s'", index, d->name);
        if (err != CL_SUCCESS) {
            clReleaseContext(c);
            return pk_cl_fail(err, "clCreateCommandQueue", "opencl device %d '%s'", index,
                              d->name);
        }
        d->context = c;
        d->queue = q;
    }
    *out = d;
    return PK_OK;
}

/* ---- the on-disk binary cache ---------------------------------------------------------- */
static uint64_t fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The shared /tmp fallback is only trusted when it is a directory of ours that nobody else
 * can write: a planted binary would otherwise run as our code. */
static int cache_dir_private(const pk_cl_state *st)
{
    return pk_cache_dir_private(st->cache_dir, st->cache_dir_check_owner);
}

/* Payload of a valid entry (malloc'ed) or NULL; *bad is set when the file exists but is not
 * a valid entry for this key (corrupt, truncated, stale, foreign), so the caller deletes it. */
static unsigned char *cache_read(const char *path, const char *key, size_t *payload_len, int *bad)
{
    *bad = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    *bad = 1;
    unsigned char *buf = NULL, *payload = NULL;
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
    size_t klen = strlen(key), head = 8 + 4 + 4 + klen + 8 + 8;
    if (size < (long)head || (uint64_t)size > head + (uint64_t)PK_CLCACHE_MAX_PAYLOAD) goto out;
    rewind(fp);
    buf = malloc((size_t)size);
    if (!buf || fread(buf, 1, (size_t)size, fp) != (size_t)size) goto out;
    const unsigned char *p = buf;
    if (memcmp(p, PK_CLCACHE_MAGIC, 8) != 0 || get_le(p + 8, 4) != PK_CLCACHE_FORMAT ||
        get_le(p + 12, 4) != klen || memcmp(p + 16, key, klen) != 0)
        goto out;
    p += 16 + klen;
    uint64_t len = get_le(p, 8), sum = get_le(p + 8, 8);
    if (len == 0 || len != (uint64_t)size - head || fnv1a64(p + 16, (size_t)len) != sum) goto out;
    payload = malloc((size_t)len);
    if (!payload) goto out;
    memcpy(payload, p + 16, (size_t)len);
    *payload_len = (size_t)len;
    *bad = 0;
out:
    free(buf);
    fclose(fp);
    return payload;
}

/* Write the program's binary as a cache entry; every failure just leaves no entry. */
static void cache_write(pk_cl_state *st, const char *path, const char *key, cl_program prog)
{
    if (st->cache_dir_state == 0)
        st->cache_dir_state = pk_mkdir_p(st->cache_dir) == 0 && cache_dir_private(st) ? 1 : -1;
    if (st->cache_dir_state < 0) return;
    size_t len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0 || len > PK_CLCACHE_MAX_PAYLOAD)
        return;
    unsigned char *bin = malloc(len);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS) {
        free(bin);
        return;
    }
    size_t klen = strlen(key);
    unsigned char head[16], tail[16];
    memcpy(head, PK_CLCACHE_MAGIC, 8);
    put_le(head + 8, PK_CLCACHE_FORMAT, 4);
    put_le(head + 12, klen, 4);
    put_le(tail, len, 8);
    put_le(tail + 8, fnv1a64(bin, len), 8);
    char tmp[1100];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = n > 0 && (size_t)n < sizeof tmp ? mkstemp(tmp) : -1;
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!fp) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(bin);
        return;
    }
    int ok = fwrite(head, 1, 16, fp) == 16 && fwrite(key, 1, klen, fp) == klen &&
             fwrite(tail, 1, 16, fp) == 16 && fwrite(bin, 1, len, fp) == len;
    ok = (fclose(fp) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
    free(bin);
}

/* ---- programs ------------------------------------------------------------------------- */
/* The first error line of a build log and what follows, on one line, at most len-1 chars. */
static void build_log_excerpt(cl_program prog, cl_device_id dev, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS ||
        n == 0)
        return;
    char *log = malloc(n + 1);
    if (!log) return;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = '\0';
        const char *s = strstr(log, "error");
        if (!s) s = log;
        while (s > log && s[-1] != '\n') --s;
        size_t o = 0;
        for (; *s && o + 1 < len; ++s) {
            char c = (*s == '\n' || *s == '\t' || *s == '\r') ? ' ' : *s;
            if (c == ' ' && (o == 0 || out[o - 1] == ' ')) continue;
            out[o++] = c;
        }
        out[o] = '\0';
    }
    free(log);
}

/* From a cache entry: the program, or NULL when the binary is not accepted. */
static cl_program program_from_binary(pk_cl_device *d, const unsigned char *bin, size_t len,
                                      const char *options)
{
    cl_int err, bin_status = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(d->context, 1, &d->id, &len, &bin, &bin_status,
                                                &err);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        if (prog) clReleaseProgram(prog);
        return NULL;
    }
    if (clBuildProgram(prog, 1, &d->id, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

static pk_status program_from_source(pk_cl_state *st, pk_cl_device *d, const char *source_name,
                                     const char *source, const char *options, cl_program *out)
{
    const char *parts[2] = {source, PK_CL_BREAK_SUFFIX};
    cl_int err;
    cl_program prog = clCreateProgramWithSource(d->context, st->break_build ? 2 : 1, parts, NULL,
                                                &err);
    if (err != CL_SUCCESS)
        return pk_cl_fail(err, "clCreateProgramWithSource", "%s.cl for '%s'", source_name,
                          d->name);
    err = clBuildProgram(prog, 1, &d->id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[400];
        build_log_excerpt(prog, d->id, log, sizeof log);
        clReleaseProgram(prog);
        return pk_fail(PK_EBUILD, "clBuildProgram failed: %s (%d): %s.cl for '%s' with '%s'; "
                                  "build log: %s",
                       pk_cl_error_name(err), (int)err, source_name, d->name, options,
                       log[0] ? log : "(empty)");
    }
    *out = prog;
    return PK_OK;
}

pk_status pk_cl_program_get(pk_cl_state *st, pk_cl_device *d, const char *source_name,
                            const char *source, const char *source_hash, const char *defines,
                            cl_program *program)
{
    char options[256];
    int n = snprintf(options, sizeof options, "%s%s%s", PK_CL_STD, defines[0] ? " " : "",
                     defines);
    PK_CHECK(n > 0 && (size_t)n < sizeof options, PK_EINTERNAL,
             "OpenCL build options too long: '%s'", defines);
    for (pk_cl_program *p = d->programs; p; p = p->next) {
        if (!strcmp(p->source_name, source_name) && !strcmp(p->options, options)) {
            *program = p->program;
            return PK_OK;
        }
    }
    pk_cl_program *entry = calloc(1, sizeof *entry);
    PK_CHECK(entry != NULL, PK_ENOMEM, "out of host memory for an OpenCL program");

    char key[1400], path[1100];
    int use_cache = st->cache_on;
    if (use_cache) {
        n = snprintf(key, sizeof key,
                     "portkern %s clcache %u\nsource %s %s%s\noptions %s\nplatform %s | %s\n"
                     "device %s | %s | %s\ndriver %s\n",
                     pk_version(), PK_CLCACHE_FORMAT, source_name, source_hash,
                     st->break_build ? " broken" : "", options, d->platform_name,
                     d->platform_version, d->name, d->vendor, d->version, d->driver);
        int m = snprintf(path, sizeof path, "%s/%s-%016llx.clbin", st->cache_dir, source_name,
                         (unsigned long long)fnv1a64(key, strlen(key)));
        use_cache = n > 0 && (size_t)n < sizeof key && m > 0 && (size_t)m < sizeof path;
    }
    cl_program prog = NULL;
    if (use_cache && cache_dir_private(st)) {
        size_t len = 0;
        int bad = 0;
        unsigned char *bin = cache_read(path, key, &len, &bad);
        if (bin) {
            prog = program_from_binary(d, bin, len, options);
            bad = prog == NULL;
            free(bin);
        }
        if (bad) unlink(path);
    }
    if (!prog) {
        pk_status s = program_from_source(st, d, source_name, source, options, &prog);
        if (s != PK_OK) {
            free(entry);
            return s;
        }
        if (use_cache) cache_write(st, path, key, prog);
    }
    entry->source_name = source_name;
    pk_strlcpy(entry->options, options, sizeof entry->options);
    entry->program = prog;
    entry->next = d->programs;
    d->programs = entry;
    *program = prog;
    return PK_OK;
}

/* ---- bandwidth ------------------------------------------------------------------------ */
static pk_status ocl_bandwidth(void *state, int device, size_t bytes, int reps, double *bps)
{
    pk_cl_state *st = state;
    pk_cl_device *d;
    cl_program prog;
    PK_TRY(pk_cl_device_open(st, device, &d));
    PK_TRY(pk_cl_program_get(st, d, "bandwidth", pk_cl_src_bandwidth, pk_cl_hash_bandwidth, "",
                             &prog));
    /* Two arrays must fit: each at most the largest allocation and a quarter of memory. */
    uint64_t cap = d->global_mem / 4;
    if (d->max_alloc && d->max_alloc < cap) cap = d->max_alloc;
    uint64_t want = bytes ? (uint64_t)bytes : (uint64_t)256 << 20;
    if (bytes == 0 && want > cap) want = cap;
    PK_CHECK(want <= cap, PK_ESIZE,
             "bytes: 2 arrays of %zu bytes do not fit '%s' (at most %llu bytes each: a quarter "
             "of its %llu bytes of memory and within its largest allocation)",
             bytes, d->name, (unsigned long long)cap, (unsigned long long)d->global_mem);
    want &= ~(uint64_t)63;
    if (want < 64) want = 64;
    size_t size = (size_t)want;
    if (reps <= 0) reps = 5;

    cl_int err;
    pk_status s = PK_OK;
    cl_mem a = NULL, b = NULL;
    cl_kernel k = clCreateKernel(prog, "pk_copy4", &err);
    if (err != CL_SUCCESS) return pk_cl_fail(err, "clCreateKernel", "pk_copy4");
    a = clCreateBuffer(d->context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err == CL_SUCCESS) b = clCreateBuffer(d->context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clCreateBuffer", "2 x %zu bytes on '%s'", size, d->name);
        goto out;
    }
    /* Real data in the source: reading never-touched host pages would hit the zero page. */
    const float one = 1.0f;
    err = clEnqueueFillBuffer(d->queue, a, &one, sizeof one, 0, size, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        s = pk_cl_fail(err, "clEnqueueFillBuffer", "%zu bytes on '%s'", size, d->name);
        goto out;
    }
    cl_ulong n4 = size / 16;
    clSetKernelArg(k, 0, sizeof a, &a);
    clSetKernelArg(k, 1, sizeof b, &b);
    clSetKernelArg(k, 2, sizeof n4, &n4);
    size_t local = 256, global = (size_t)((n4 + local - 1) / local * local);
    double best = 0;
    for (int r = 0; r <= reps; ++r) { /* run 0 is the warm-up */
        double t0 = pk_now();
        err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clEnqueueNDRangeKernel", "pk_copy4 on '%s'", d->name);
            goto out;
        }
        err = clFinish(d->queue);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clFinish", "pk_copy4 on '%s'", d->name);
            goto out;
        }
        double t = pk_now() - t0;
        if (r > 0 && (best == 0 || t < best)) best = t;
    }
    *bps = best > 0 ? 2.0 * (double)size / best : 0;
out:
    if (b) clReleaseMemObject(b);
    if (a) clReleaseMemObject(a);
    clReleaseKernel(k);
    return s;
}

/* The cost model's link (lib/cost.c): a blocking write and read of `bytes` between a pageable
 * host array and a device buffer, as the plans' uploads and downloads move them; the mean rate
 * of the two, best of two rounds after a warm-up. */
static pk_status ocl_link_bandwidth(void *state, int device, size_t bytes, double *bps)
{
    pk_cl_device *d = NULL;
    PK_TRY(pk_cl_device_open(state, device, &d));
    if (bytes < 4096) bytes = 4096;
    unsigned char *host = pk_alloc_aligned(bytes);
    if (!host) return pk_fail(PK_ENOMEM, "link bandwidth: cannot allocate %zu bytes", bytes);
    memset(host, 1, bytes); /* touched: a never-touched array would time its page faults */
    cl_int err;
    pk_status s = PK_OK;
    cl_mem m = clCreateBuffer(d->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        pk_free_aligned(host);
        return pk_cl_fail(err, "clCreateBuffer", "%zu bytes on '%s'", bytes, d->name);
    }
    double best = 0;
    for (int r = 0; r < 3; ++r) { /* round 0 is the warm-up */
        const double t0 = pk_now();
        err = clEnqueueWriteBuffer(d->queue, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(d->queue, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            s = pk_cl_fail(err, "clEnqueueWriteBuffer/ReadBuffer", "%zu bytes on '%s'", bytes,
                           d->name);
            break;
        }
        const double t = pk_now() - t0;
        if (r > 0 && (best == 0 || t < best)) best = t;
    }
    if (s == PK_OK) *bps = best > 0 ? 2.0 * (double)bytes / best : 0;
    clReleaseMemObject(m);
    pk_free_aligned(host);
    return s;
}

/* ---- the device census: "no OpenCL GPU here" without starting a platform --------------
 * Starting the OpenCL platforms costs 20-100 ms (PoCL loads LLVM), and auto starts them on a
 * CPU-only machine only to learn that there is no GPU to try before OpenMP.  Every init that
 * finds devices writes how many GPUs it saw to <cache>/opencl-census, under a key of what
 * decides the device list without starting anything: the ICD vendor files (names, sizes,
 * modification times, contents), the variables the ICD loader and the usual drivers read,
 * and the library version.  ocl_census answers from that file while the key matches; any
 * change, or no file, means "not known" and the platforms are started as before. */
#define PK_CL_CENSUS_FILE "opencl-census"

static uint64_t census_mix(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t census_file(uint64_t h, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return census_mix(h, "-", 1);
    const long long v[4] = {(long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
                            (long long)sb.st_mtim.tv_nsec, (long long)sb.st_ino};
    h = census_mix(census_mix(h, path, strlen(path) + 1), v, sizeof v);
    char buf[4096];
    FILE *f = S_ISREG(sb.st_mode) ? fopen(path, "rb") : NULL;
    if (f) {
        const size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        h = census_mix(h, buf, n);
    }
    return h;
}

static int census_icd(const struct dirent *e)
{
    const size_t n = strlen(e->d_name);
    return n > 4 && !strcmp(e->d_name + n - 4, ".icd");
}

static uint64_t census_key(void)
{
    static const char *const vars[] = {"OCL_ICD_VENDORS", "OCL_ICD_FILENAMES",
                                       "OPENCL_VENDOR_PATH", "POCL_DEVICES", "CUDA_VISIBLE_DEVICES",
                                       "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                       "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"};
    uint64_t h = census_mix(1469598103934665603ull, pk_version(), strlen(pk_version()) + 1);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
        const char *v = getenv(vars[i]);
        h = census_mix(h, vars[i], strlen(vars[i]) + 1);
        h = v ? census_mix(h, v, strlen(v) + 1) : census_mix(h, "", 1);
    }
    const char *vendors = getenv("OCL_ICD_VENDORS");
    struct stat sb;
    const char *dir = vendors && stat(vendors, &sb) == 0 && S_ISDIR(sb.st_mode) ? vendors
                      : vendors && *vendors                                    ? NULL
                                                                               : "/etc/OpenCL/vendors";
    if (!dir) return census_file(h, vendors); /* a single .icd file */
    struct dirent **list = NULL;
    const int n = scandir(dir, &list, census_icd, alphasort);
    for (int i = 0; i < n; ++i) {
        char path[2048];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name) < sizeof path)
            h = census_file(h, path);
        free(list[i]);
    }
    free(list);
    return census_mix(h, &n, sizeof n);
}

static int census_path(char *path, size_t len)
{
    pk_cl_state probe;
    memset(&probe, 0, sizeof probe);
    cache_configure(&probe);
    return probe.cache_on && cache_dir_private(&probe) &&
           (size_t)snprintf(path, len, "%s/" PK_CL_CENSUS_FILE, probe.cache_dir) < len;
}

static void census_write(pk_cl_state *st)
{
    if (!st->cache_on || pk_mkdir_p(st->cache_dir) != 0 || !cache_dir_private(st)) return;
    char path[1100], line[96];
    int gpus = 0;
    for (int i = 0; i < st->ndev; ++i) gpus += st->dev[i].type == PK_DEVICE_GPU;
    if ((size_t)snprintf(path, sizeof path, "%s/" PK_CL_CENSUS_FILE, st->cache_dir) >= sizeof path)
        return;
    const int n = snprintf(line, sizeof line, "portkern-opencl-census 1 %016llx %d\n",
                           (unsigned long long)census_key(), gpus);
    char old[96] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(old, sizeof old, f)) old[0] = '\0';
        fclose(f);
    }
    if (!strcmp(old, line)) return; /* already says so: no write per context */
    pk_file_tmp t;
    if (pk_file_begin(path, &t) != PK_OK) {
        pk_clear_error();
        return;
    }
    const int ok = write(t.fd, line, (size_t)n) == n;
    if (pk_file_commit(&t, ok, EIO) != PK_OK) pk_clear_error();
}

/* 0 when the census knows there is no device of `type` (the key still matches), else -1. */
static int ocl_census(pk_device_type type, char *why, size_t len)
{
    char path[1100], line[96] = "", key[20];
    unsigned long long k = 0;
    int version = 0, gpus = -1;
    if (type != PK_DEVICE_GPU || !census_path(path, sizeof path)) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    const int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got || sscanf(line, "portkern-opencl-census %d %19s %d", &version, key, &gpus) != 3 ||
        version != 1 || gpus != 0 || sscanf(key, "%llx", &k) != 1 || k != census_key())
        return -1;
    snprintf(why, len, "device census");
    return 0;
}

const pk_backend_ops pk_backend_opencl = {
    .id = PK_BACKEND_OPENCL,
    .name = "opencl",
    .init = ocl_init,
    .fini = ocl_fini,
    .device_count = ocl_device_count,
    .device_info = ocl_device_info,
    .bandwidth = ocl_bandwidth,
    .link_bandwidth = ocl_link_bandwidth,
    .census = ocl_census,
};

cl_mem pk_cl_device_buffer(const pk_cl_device *dev, cl_mem_flags flags, size_t bytes,
                           const char *kernel, const char *what, pk_status *s)
{
    cl_int err;
    cl_mem m = clCreateBuffer(dev->context, flags, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        *s = pk_cl_fail(err, "clCreateBuffer", "%s %s of %zu bytes on '%s'", kernel, what, bytes,
                        dev->name);
        return NULL;
    }
    return m;
}

/* ---- test hook: out of device memory (opencl_internal.h) ------------------------------ */
#undef clCreateBuffer
/* 1 when the context's (first) device is a CPU. */
static int context_is_cpu(cl_context context)
{
    cl_device_id dev;
    cl_device_type type = 0;
    return clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL) == CL_SUCCESS &&
           clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
           (type & CL_DEVICE_TYPE_CPU);
}

cl_mem pk_cl_create_buffer(cl_context context, cl_mem_flags flags, size_t size, void *host,
                           cl_int *err)
{
    const char *oom = pk_getenv("PORTKERN_TEST_DEVICE_OOM");
    if (oom && strcmp(oom, "0") != 0) {
        if (err) *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    /* A CPU device's memory is the host's.  PoCL allocates a plain buffer lazily, at its
     * first use, and aborts the process (an assertion in pocl_create_migration_commands) when
     * that allocation fails; with CL_MEM_ALLOC_HOST_PTR it allocates here and a failure is
     * CL_OUT_OF_HOST_MEMORY, an error the caller can report.  On a GPU that flag would mean
     * pinned host memory instead of device memory: only CPU devices get it. */
    if (!(flags & CL_MEM_USE_HOST_PTR) && context_is_cpu(context))
        flags |= CL_MEM_ALLOC_HOST_PTR;
    return clCreateBuffer(context, flags, size, host, err);
}

#undef clEnqueueReadBuffer
cl_int pk_cl_enqueue_read_buffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                 size_t offset, size_t size, void *ptr, cl_uint nwait,
                                 const cl_event *wait, cl_event *event)
{
    const char *fail = pk_getenv("PORTKERN_TEST_DEVICE_READ_FAIL");
    if (fail && strcmp(fail, "0") != 0) {
        if (ptr) memset(ptr, 0xff, size / 2);
        return CL_OUT_OF_RESOURCES;
    }
    return clEnqueueReadBuffer(queue, buffer, blocking, offset, size, ptr, nwait, wait, event);
}
