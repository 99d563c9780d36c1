/* _core.c - portkern's CPython extension: the C API of libportkern over NumPy arrays.
 *
 * Hand-written against the CPython and NumPy C APIs (python/README.md says why): every array
 * is checked here (an ndarray of the exact dtype, native byte order, aligned, C-contiguous,
 * the expected shape; outputs writable) and its data pointer handed to the library as is:
 * no copy in, no copy out.  The copies this layer makes are the documented ones: in-place
 * kernels (diffusion3d, laplace2d) copy their input into a new output unless the caller
 * passes out= the input itself.
 *
 * Every library call runs with the GIL released (Py_BEGIN_ALLOW_THREADS), under the
 * context's lock: the C API allows distinct contexts on distinct threads at once, but one
 * context (and its plans) on one thread at a time, so two Python threads sharing a Context
 * are serialised here while threads with their own contexts run in parallel.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <portkern.h>

/* Plan executes added by the plan-execute branch; setup.py defines these when the header
 * it builds against declares them.  Without one, the Plan's execute is upload + run +
 * download (the same result through the plan's own buffers). */
#ifndef PKPY_HAVE_CONV2D_PLAN_EXECUTE
#define PKPY_HAVE_CONV2D_PLAN_EXECUTE 0
#endif
#ifndef PKPY_HAVE_SU3_PLAN_EXECUTE
#define PKPY_HAVE_SU3_PLAN_EXECUTE 0
#endif
#ifndef PKPY_HAVE_DSLASH_PLAN_EXECUTE
#define PKPY_HAVE_DSLASH_PLAN_EXECUTE 0
#endif
#ifndef PKPY_HAVE_GRID_PLAN_EXECUTE
#define PKPY_HAVE_GRID_PLAN_EXECUTE 0
#endif
#ifndef PKPY_HAVE_CACHE_LIMIT
#define PKPY_HAVE_CACHE_LIMIT 0 /* pk_context_set_cache_limit (newer libraries) */
#endif
#ifndef PKPY_HAVE_WISDOM
#define PKPY_HAVE_WISDOM 0 /* pk_wisdom_* (newer libraries) */
#endif
#ifndef PKPY_HAVE_GEN
#define PKPY_HAVE_GEN 0 /* pk_grid_generate, pk_conv2d_generate (newer libraries) */
#endif
#ifndef PKPY_HAVE_IMAGE
#define PKPY_HAVE_IMAGE 0 /* pk_image, pk_degrid, pk_fits_write_image (newer libraries) */
#endif
#ifndef PKPY_HAVE_PARAMS
#define PKPY_HAVE_PARAMS 0 /* pk_param_*, pk_context_set_param / get_param (newer libraries) */
#endif

#define PKPY_CLOSED 1000 /* not a pk_status: the context or plan was closed */
#define PKPY_ALIGN 64    /* outputs this layer allocates start on a cache line */

static PyObject *g_make_error; /* portkern._errors.make(status, name, text, detail, where) */

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */

/* Raise the portkern.Error subclass of `status` with the given detail. */
static PyObject *raise_detail(int status, const char *detail, const char *where)
{
    PyObject *exc = PyObject_CallFunction(g_make_error, "isssz", status, pk_status_name(status),
                                          pk_strerror(status), detail, where);
    if (!exc) return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* Raise the portkern.Error subclass of `status`, with pk_last_error()'s detail (read on this
 * thread right after the failing call: the detail is thread-local). */
static PyObject *raise_status(int status, const char *where)
{
    if (status == PKPY_CLOSED)
        return raise_detail(PK_ESTATE, "the context or plan is closed", where);
    return raise_detail(status, pk_last_error(), where);
}

/* ---------------------------------------------------------------------------------------- */
/* Array checks                                                                             */

static const char *dtype_name(int typenum)
{
    switch (typenum) {
    case NPY_FLOAT32: return "float32";
    case NPY_FLOAT64: return "float64";
    case NPY_COMPLEX64: return "complex64";
    case NPY_COMPLEX128: return "complex128";
    case NPY_INT32: return "int32";
    default: return "?";
    }
}

static void format_shape(char *buf, size_t len, int ndim, const npy_intp *shape)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "(");
    for (int i = 0; i < ndim && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, i + 1 < ndim || ndim > 1 ? "%ld%s" : "%ld,",
                              (long)shape[i], i + 1 < ndim ? ", " : "");
    if (k < len) snprintf(buf + k, len - k, ")");
}

/* obj is argument `name` of `fn`: a numpy.ndarray of `typenum`, native byte order, aligned,
 * C-contiguous, `ndim` dimensions (`layout` names them for messages, e.g. "[nz, ny, nx]"),
 * and, where shape[i] >= 0, that extent.  `writable` for outputs.  Returns obj as an array
 * (borrowed) or NULL with TypeError (not an array, wrong dtype) or ValueError (shape,
 * layout, read-only). */
static PyArrayObject *check_array(PyObject *obj, const char *fn, const char *name, int typenum,
                                  int ndim, const npy_intp *shape, const char *layout,
                                  int writable)
{
    if (obj == NULL || obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a numpy.ndarray of %s %s, got None", fn,
                     name, dtype_name(typenum), layout);
        return NULL;
    }
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must be a numpy.ndarray of %s %s, got %.100s (convert with "
                     "numpy.ascontiguousarray(%s, dtype=numpy.%s): a copy)",
                     fn, name, dtype_name(typenum), layout, Py_TYPE(obj)->tp_name, name,
                     dtype_name(typenum));
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (d->type_num != typenum || !PyArray_ISNBO(d->byteorder)) {
        PyObject *ds = PyObject_Str((PyObject *)d);
        if (!ds) return NULL;
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must have dtype %s (native byte order), got %U (convert with "
                     "%s.astype(numpy.%s): a copy)",
                     fn, name, dtype_name(typenum), ds, name, dtype_name(typenum));
        Py_DECREF(ds);
        return NULL;
    }
    char got[160], want[160];
    if (PyArray_NDIM(a) != ndim) {
        format_shape(got, sizeof got, PyArray_NDIM(a), PyArray_DIMS(a));
        PyErr_Format(PyExc_ValueError, "%s: %s must be a %d-D array %s, got shape %s", fn, name,
                     ndim, layout, got);
        return NULL;
    }
    if (shape) {
        for (int i = 0; i < ndim; ++i)
            if (shape[i] >= 0 && PyArray_DIM(a, i) != shape[i]) {
                char w[160];
                size_t k = 0;
                k += (size_t)snprintf(w + k, sizeof w - k, "(");
                for (int j = 0; j < ndim && k < sizeof w; ++j) {
                    if (shape[j] >= 0)
                        k += (size_t)snprintf(w + k, sizeof w - k, "%ld", (long)shape[j]);
                    else
                        k += (size_t)snprintf(w + k, sizeof w - k, "*");
                    if (j + 1 < ndim && k < sizeof w) k += (size_t)snprintf(w + k, sizeof w - k, ", ");
                }
                if (ndim == 1 && k < sizeof w) k += (size_t)snprintf(w + k, sizeof w - k, ",");
                if (k < sizeof w) snprintf(w + k, sizeof w - k, ")");
                snprintf(want, sizeof want, "%s", w);
                format_shape(got, sizeof got, ndim, PyArray_DIMS(a));
                PyErr_Format(PyExc_ValueError, "%s: %s must have shape %s %s, got %s", fn, name,
                             want, layout, got);
                return NULL;
            }
    }
    if (!PyArray_IS_C_CONTIGUOUS(a)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %s must be C-contiguous (numpy.ascontiguousarray(%s) makes a "
                     "contiguous copy)", fn, name, name);
        return NULL;
    }
    if (!PyArray_ISALIGNED(a)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %s is not aligned for %s (numpy.array(%s) makes an aligned copy)", fn,
                     name, dtype_name(typenum), name);
        return NULL;
    }
    if (writable && !PyArray_ISWRITEABLE(a)) {
        PyErr_Format(PyExc_ValueError, "%s: %s is read-only (an output must be writable)", fn,
                     name);
        return NULL;
    }
    return a;
}

/* An extent that the C API takes as int. */
static int dim_int(PyArrayObject *a, int axis, const char *fn, const char *name, int *out)
{
    npy_intp n = PyArray_DIM(a, axis);
    if (n > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %s: extent %ld of axis %d exceeds the C API's int",
                     fn, name, (long)n, axis);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* A new C-contiguous array whose data start on a 64-byte boundary (the host backends' direct
 * paths want that), optionally zeroed. */
static PyArrayObject *new_array(int ndim, const npy_intp *shape, int typenum, int zero)
{
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr) return NULL;
    npy_intp nbytes = descr->elsize;
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] < 0 || (shape[i] > 0 && nbytes > NPY_MAX_INTP / shape[i])) {
            Py_DECREF(descr);
            PyErr_SetString(PyExc_ValueError, "array size overflows");
            return NULL;
        }
        nbytes *= shape[i];
    }
    npy_intp rawn = nbytes + PKPY_ALIGN;
    PyObject *raw = PyArray_SimpleNew(1, &rawn, NPY_UINT8);
    if (!raw) {
        Py_DECREF(descr);
        return NULL;
    }
    char *p = PyArray_BYTES((PyArrayObject *)raw);
    size_t off = (PKPY_ALIGN - ((uintptr_t)p & (PKPY_ALIGN - 1))) & (PKPY_ALIGN - 1);
    if (zero) memset(p + off, 0, (size_t)nbytes);
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, (npy_intp *)shape, NULL,
                                         p + off, NPY_ARRAY_CARRAY, NULL);
    if (!arr) {
        Py_DECREF(raw);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, raw) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return (PyArrayObject *)arr;
}

static int overlaps(PyArrayObject *a, PyArrayObject *b)
{
    const char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b);
    const size_t na = (size_t)PyArray_NBYTES(a), nb = (size_t)PyArray_NBYTES(b);
    if (na == 0 || nb == 0) return 0;
    return pa < pb + nb && pb < pa + na;
}

/* The output of an in-place kernel: a new copy of `in` (out None), `in` itself (out is in),
 * or out, checked like in and then given in's values.  New reference. */
static PyArrayObject *inplace_output(PyArrayObject *in, PyObject *outo, const char *fn,
                                     const char *layout)
{
    if (outo == Py_None) {
        PyArrayObject *o = new_array(PyArray_NDIM(in), PyArray_DIMS(in), PyArray_TYPE(in), 0);
        if (o) memcpy(PyArray_DATA(o), PyArray_DATA(in), (size_t)PyArray_NBYTES(in));
        return o;
    }
    PyArrayObject *o = check_array(outo, fn, "out", PyArray_TYPE(in), PyArray_NDIM(in),
                                   PyArray_DIMS(in), layout, 1);
    if (!o) return NULL;
    if (PyArray_DATA(o) != PyArray_DATA(in)) {
        if (overlaps(o, in)) {
            PyErr_Format(PyExc_ValueError,
                         "%s: out overlaps the input without being the same array (pass out=the "
                         "input itself to work in place)", fn);
            return NULL;
        }
        memcpy(PyArray_DATA(o), PyArray_DATA(in), (size_t)PyArray_NBYTES(in));
    }
    Py_INCREF(o);
    return o;
}

/* The output of a kernel with separate output: new (out None) or out checked.  New ref. */
static PyArrayObject *new_output(PyObject *outo, const char *fn, int typenum, int ndim,
                                 const npy_intp *shape, const char *layout, int zero)
{
    if (outo == Py_None) return new_array(ndim, shape, typenum, zero);
    PyArrayObject *o = check_array(outo, fn, "out", typenum, ndim, shape, layout, 1);
    if (!o) return NULL;
    Py_INCREF(o);
    return o;
}

/* variant=None or a str. */
static int parse_variant(PyObject *v, const char *fn, const char **out)
{
    if (v == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s: variant must be a str or None, got %.100s", fn,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(v);
    return *out ? 0 : -1;
}

/* A str option among `names` (index into names), for messages `fn: arg`. */
static int parse_choice(PyObject *v, const char *fn, const char *arg, const char *const *names,
                        int *out)
{
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a str, got %.100s", fn, arg,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(v);
    if (!s) return -1;
    char list[200] = "";
    for (int i = 0; names[i]; ++i) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    PyErr_Format(PyExc_ValueError, "%s: %s must be one of %s, got %R", fn, arg, list, v);
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* RunInfo                                                                                  */

typedef struct {
    PyObject_HEAD
    pk_run_info info;
} RunInfoObject;

static PyTypeObject RunInfoType;

static RunInfoObject *runinfo_new(void)
{
    RunInfoObject *r = PyObject_New(RunInfoObject, &RunInfoType);
    if (r) memset(&r->info, 0, sizeof r->info);
    return r;
}

static PyObject *ri_str(const char *s, size_t len)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strnlen(s, len), "replace");
}
static PyObject *ri_backend(RunInfoObject *r, void *c)
{
    (void)c;
    const char *n = pk_backend_name(r->info.backend);
    return PyUnicode_FromString(n ? n : "?");
}
static PyObject *ri_device_name(RunInfoObject *r, void *c)
{
    (void)c;
    return ri_str(r->info.device_name, sizeof r->info.device_name);
}
static PyObject *ri_variant(RunInfoObject *r, void *c)
{
    (void)c;
    return ri_str(r->info.variant, sizeof r->info.variant);
}
static PyObject *ri_reason(RunInfoObject *r, void *c)
{
    (void)c;
    return ri_str(r->info.reason, sizeof r->info.reason);
}
static PyObject *ri_fell_back(RunInfoObject *r, void *c)
{
    (void)c;
    return PyBool_FromLong(r->info.fell_back);
}
#if PKPY_HAVE_WISDOM
static PyObject *ri_wisdom_key(RunInfoObject *r, void *c)
{
    (void)c;
    return ri_str(r->info.wisdom_key, sizeof r->info.wisdom_key);
}
#endif
static PyObject *ri_stages(RunInfoObject *r, void *c)
{
    (void)c;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    int n = r->info.num_stages;
    if (n < 0) n = 0;
    if (n > 8) n = 8;
    for (int i = 0; i < n; ++i) {
        PyObject *k = ri_str(r->info.stage_name[i], sizeof r->info.stage_name[i]);
        PyObject *v = PyFloat_FromDouble(r->info.stage_s[i]);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}

#define RI_OFF(f) (offsetof(RunInfoObject, info) + offsetof(pk_run_info, f))
static PyMemberDef ri_members[] = {
    {"device", T_INT, RI_OFF(device), READONLY, "device index within the backend"},
    {"wall_s", T_DOUBLE, RI_OFF(wall_s), READONLY,
     "seconds of the whole call, transfers and program builds included"},
    {"kernel_s", T_DOUBLE, RI_OFF(kernel_s), READONLY, "seconds of device compute"},
    {"transfer_s", T_DOUBLE, RI_OFF(transfer_s), READONLY, "seconds of host <-> device copies"},
    {"setup_s", T_DOUBLE, RI_OFF(setup_s), READONLY,
     "seconds of allocation and program build/load (0 when a cached plan was reused)"},
    {"layout_s", T_DOUBLE, RI_OFF(layout_s), READONLY,
     "seconds of host layout conversion (laplace2d hvfo, su3 layouts, dslash recon12)"},
    {"bytes", T_DOUBLE, RI_OFF(bytes), READONLY, "bytes moved by the library's model"},
    {"flops", T_DOUBLE, RI_OFF(flops), READONLY, "floating-point operations by the model"},
    {"num_stages", T_INT, RI_OFF(num_stages), READONLY, "grid: number of timed stages"},
#if PKPY_HAVE_WISDOM
    {"plan_bytes", T_DOUBLE, RI_OFF(plan_bytes), READONLY,
     "bytes the plan's arrays hold: the size wisdom matches calls by"},
#endif
    {NULL, 0, 0, 0, NULL}};

static PyGetSetDef ri_getset[] = {
    {"backend", (getter)ri_backend, NULL, "the backend that ran (\"serial\", \"openmp\", ...)", NULL},
    {"device_name", (getter)ri_device_name, NULL, "the device's name", NULL},
    {"variant", (getter)ri_variant, NULL, "the variant that ran", NULL},
    {"reason", (getter)ri_reason, NULL,
     "why this backend and variant ran (each candidate auto tried, in order)", NULL},
    {"fell_back", (getter)ri_fell_back, NULL,
     "True when an earlier choice failed and a later backend ran", NULL},
    {"stages", (getter)ri_stages, NULL, "grid: {stage name: seconds}, in order", NULL},
#if PKPY_HAVE_WISDOM
    {"wisdom_key", (getter)ri_wisdom_key, NULL,
     "what besides the size wisdom matches a call by (su3 \"layout=vfo\", ...)", NULL},
#endif
    {NULL, NULL, NULL, NULL, NULL}};

static const char *const ri_fields[] = {"backend", "device", "device_name", "variant", "reason",
                                        "wall_s", "kernel_s", "transfer_s", "setup_s",
                                        "layout_s", "bytes", "flops", "fell_back", "stages",
                                        NULL};

static PyObject *ri_as_dict(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0; ri_fields[i]; ++i) {
        PyObject *v = PyObject_GetAttrString(self, ri_fields[i]);
        if (!v || PyDict_SetItemString(d, ri_fields[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *ri_repr(RunInfoObject *r)
{
    const char *b = pk_backend_name(r->info.backend);
    char buf[160];
    snprintf(buf, sizeof buf, "%.6g", r->info.wall_s);
    return PyUnicode_FromFormat("RunInfo(backend=%s, device=%d, variant=%.32s, wall_s=%s)",
                                b ? b : "?", r->info.device, r->info.variant, buf);
}

static PyMethodDef ri_methods[] = {
    {"as_dict", ri_as_dict, METH_NOARGS, "Every field as a dict."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject RunInfoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "portkern.RunInfo",
    .tp_basicsize = sizeof(RunInfoObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What ran where: the fields of pk_run_info (read-only).",
    .tp_repr = (reprfunc)ri_repr,
    .tp_members = ri_members,
    .tp_getset = ri_getset,
    .tp_methods = ri_methods,
};

/* ---------------------------------------------------------------------------------------- */
/* Context and plans                                                                        */

typedef struct PlanObject PlanObject;

typedef struct {
    PyObject_HEAD
    pk_context *ctx;
    PyThread_type_lock lock;
    pk_context_options opt;
    PlanObject *plans; /* this context's live plans (closed with it) */
} ContextObject;

enum { K_D3, K_CV, K_MF, K_LP, K_S3, K_DS, K_GR };

struct PlanObject {
    PyObject_HEAD
    ContextObject *owner; /* strong reference */
    PlanObject *prev, *next;
    int kind;
    void *handle; /* written only under the owner's lock */
    RunInfoObject *info;
    int uploaded; /* this layer's view of the plan state, for messages */
    union {
        pk_diffusion3d_params d3;
        pk_conv2d_params cv;
        pk_magicfilter3d_params mf;
        pk_laplace2d_params lp;
        pk_su3_params s3;
        pk_dslash_params ds;
        pk_grid_params gr;
    } p;
    npy_intp in_shape[3], out_shape[3]; /* magicfilter3d */
};

static PyTypeObject ContextType, PlanType;

/* Run `expr` with the GIL released and ctx's lock held; `ok` (evaluated under the lock)
 * false means closed. */
#define LOCKED(cobj, ok, st, expr)                                                              \
    do {                                                                                        \
        Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock((cobj)->lock, WAIT_LOCK);                  \
        (st) = (ok) ? (expr) : PKPY_CLOSED;                                                     \
        PyThread_release_lock((cobj)->lock);                                                    \
        Py_END_ALLOW_THREADS                                                                    \
    } while (0)

static void plan_destroy_handle(int kind, void *h); /* with the plan kinds, below */

/* ---- Tuning parameters (lib/portkern.h: pk_param_*, pk_context_set_param) ---------------- */
#if PKPY_HAVE_PARAMS
/* pk_param_source's names, as portkern-probe --params prints them. */
static const char *const param_sources[] = {"default", "env", "caller"};

/* Set parameter `nameo` of the context: value None goes back to the environment's value or
 * the default, a str is given as is, an int as its decimal digits. */
static int ctx_apply_param(ContextObject *self, PyObject *nameo, PyObject *value, const char *where)
{
    if (!PyUnicode_Check(nameo)) {
        PyErr_Format(PyExc_TypeError, "%s: a parameter name must be a str, got %s", where,
                     Py_TYPE(nameo)->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(nameo);
    if (!name) return -1;
    PyObject *text = NULL;
    if (PyUnicode_Check(value)) {
        Py_INCREF(value);
        text = value;
    } else if (value != Py_None && !PyBool_Check(value) && PyIndex_Check(value)) {
        PyObject *i = PyNumber_Index(value);
        text = i ? PyObject_Str(i) : NULL;
        Py_XDECREF(i);
        if (!text) return -1;
    } else if (value != Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a str, an int or None, got %s", where, name,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    const char *v = text ? PyUnicode_AsUTF8(text) : NULL;
    if (text && !v) {
        Py_DECREF(text);
        return -1;
    }
    pk_status st;
    LOCKED(self, self->ctx, st, pk_context_set_param(self->ctx, name, v));
    Py_XDECREF(text);
    if (st != PK_OK) {
        raise_status(st, where);
        return -1;
    }
    return 0;
}

static PyObject *ctx_set_param(ContextObject *self, PyObject *args)
{
    PyObject *name, *value;
    if (!PyArg_ParseTuple(args, "OO:set_param", &name, &value)) return NULL;
    if (ctx_apply_param(self, name, value, "Context.set_param")) return NULL;
    Py_RETURN_NONE;
}

/* get_param(name) -> (value as text, "default" | "env" | "caller"). */
static PyObject *ctx_get_param(ContextObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:get_param", &name)) return NULL;
    char buf[128] = "";
    pk_param_source src = PK_PARAM_DEFAULT;
    pk_status st;
    LOCKED(self, self->ctx, st, pk_context_get_param(self->ctx, name, buf, sizeof buf, &src));
    if (st != PK_OK) return raise_status(st, "Context.get_param");
    return Py_BuildValue("(ss)", buf,
                         (int)src >= 0 && (int)src < 3 ? param_sources[src] : "unknown");
}
#endif


static int ctx_init(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"backend", "device", "threads", "ignore_env", "params", NULL};
    const char *backend = "auto";
    PyObject *devo = Py_None, *thro = Py_None, *paramso = Py_None;
    int ignore_env = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|sOO$pO:Context", kwl, &backend, &devo, &thro,
                                     &ignore_env, &paramso))
        return -1;
    if (self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context.__init__ called twice");
        return -1;
    }
#if !PKPY_HAVE_PARAMS
    if (paramso != Py_None) {
        raise_detail(PK_EUNSUPPORTED,
                     "the libportkern this package was built against has no pk_context_set_param",
                     "Context");
        return -1;
    }
#endif
    pk_context_options_init(&self->opt);
    pk_backend_id id;
    if (pk_backend_from_name(backend, &id) != PK_OK) {
        PyErr_Format(PyExc_ValueError,
                     "Context: backend must be one of auto, serial, openmp, opencl, cuda; got '%s'",
                     backend);
        return -1;
    }
    self->opt.backend = id;
    if (devo != Py_None) {
        long d = PyLong_AsLong(devo);
        if (d == -1 && PyErr_Occurred()) return -1;
        if (d < 0 || d > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "Context: device must be >= 0 or None, got %ld", d);
            return -1;
        }
        self->opt.device = (int)d;
    }
    if (thro != Py_None) {
        long t = PyLong_AsLong(thro);
        if (t == -1 && PyErr_Occurred()) return -1;
        if (t < 1 || t > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "Context: threads must be >= 1 or None, got %ld", t);
            return -1;
        }
        self->opt.threads = (int)t;
    }
    if (ignore_env) self->opt.flags |= PK_OPT_IGNORE_ENV;
    if (!self->lock) {
        self->lock = PyThread_allocate_lock();
        if (!self->lock) {
            PyErr_NoMemory();
            return -1;
        }
    }
    PyObject *items = NULL; /* params: the (name, value) pairs, set once the context is made */
    if (paramso != Py_None) {
        if (!PyDict_Check(paramso)) {
            PyErr_Format(PyExc_TypeError, "Context: params must be a dict {name: value}, got %s",
                         Py_TYPE(paramso)->tp_name);
            return -1;
        }
        if (!(items = PyDict_Items(paramso))) return -1;
    }
    pk_status st;
    pk_context *c = NULL;
    Py_BEGIN_ALLOW_THREADS st = pk_context_create(&c, &self->opt);
    Py_END_ALLOW_THREADS
    if (st != PK_OK) {
        Py_XDECREF(items);
        raise_status(st, "Context");
        return -1;
    }
    self->ctx = c;
#if PKPY_HAVE_PARAMS
    for (Py_ssize_t i = 0; items && i < PyList_GET_SIZE(items); ++i) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        if (ctx_apply_param(self, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1), "Context") == 0)
            continue;
        Py_DECREF(items); /* a context whose parameters are not those asked for is not made */
        pk_context_destroy(self->ctx);
        self->ctx = NULL;
        return -1;
    }
#endif
    Py_XDECREF(items);
    return 0;
}

/* Close every plan and the context (waits for a call running on another thread). */
static void ctx_close_all(ContextObject *self)
{
    if (!self->lock) return;
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    for (PlanObject *p = self->plans; p; p = p->next) {
        plan_destroy_handle(p->kind, p->handle);
        p->handle = NULL;
    }
    if (self->ctx) pk_context_destroy(self->ctx);
    self->ctx = NULL;
    PyThread_release_lock(self->lock);
}

static void ctx_dealloc(ContextObject *self)
{
    ctx_close_all(self);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_close(ContextObject *self, PyObject *unused)
{
    (void)unused;
    ctx_close_all(self);
    Py_RETURN_NONE;
}

static PyObject *ctx_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *ctx_exit(ContextObject *self, PyObject *args)
{
    (void)args;
    ctx_close_all(self);
    Py_RETURN_FALSE;
}

static PyObject *ctx_closed(ContextObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->ctx == NULL);
}

static PyObject *ctx_backend(ContextObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(pk_backend_name(self->opt.backend));
}

static PyObject *ctx_device(ContextObject *self, void *c)
{
    (void)c;
    if (self->opt.device < 0) Py_RETURN_NONE;
    return PyLong_FromLong(self->opt.device);
}

static PyObject *ctx_threads(ContextObject *self, void *c)
{
    (void)c;
    if (self->opt.threads <= 0) Py_RETURN_NONE;
    return PyLong_FromLong(self->opt.threads);
}

static int ctx_check_open(ContextObject *self)
{
    if (!self->ctx) {
        raise_status(PKPY_CLOSED, "Context");
        return -1;
    }
    return 0;
}

/* [(name, available, reason)] for serial, openmp, opencl, cuda. */
static PyObject *ctx_backends(ContextObject *self, PyObject *unused)
{
    (void)unused;
    if (ctx_check_open(self)) return NULL;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int b = PK_BACKEND_SERIAL; b < PK_BACKEND_COUNT; ++b) {
        const char *why = "";
        int ok = 0;
        pk_status st;
        LOCKED(self, self->ctx, st,
               (ok = pk_backend_available(self->ctx, (pk_backend_id)b, &why), PK_OK));
        if (st != PK_OK) {
            Py_DECREF(list);
            return raise_status(st, "Context.backends");
        }
        PyObject *t = Py_BuildValue("(sNs)", pk_backend_name((pk_backend_id)b),
                                    PyBool_FromLong(ok), why ? why : "");
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(t);
    }
    return list;
}

static const char *device_type_name(pk_device_type t)
{
    switch (t) {
    case PK_DEVICE_CPU: return "cpu";
    case PK_DEVICE_GPU: return "gpu";
    case PK_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

/* [dict] of the devices of `backend` (a name; None: every available backend). */
static PyObject *ctx_devices(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"backend", NULL};
    const char *bname = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:devices", kwl, &bname)) return NULL;
    if (ctx_check_open(self)) return NULL;
    int lo = PK_BACKEND_SERIAL, hi = PK_BACKEND_COUNT - 1;
    if (bname) {
        pk_backend_id id;
        if (pk_backend_from_name(bname, &id) != PK_OK || id == PK_BACKEND_AUTO) {
            PyErr_Format(PyExc_ValueError,
                         "devices: backend must be serial, openmp, opencl, cuda or None; got '%s'",
                         bname);
            return NULL;
        }
        lo = hi = id;
    }
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int b = lo; b <= hi; ++b) {
        int n = 0;
        pk_status st;
        LOCKED(self, self->ctx, st, (n = pk_device_count(self->ctx, (pk_backend_id)b), PK_OK));
        if (st != PK_OK) {
            Py_DECREF(list);
            return raise_status(st, "Context.devices");
        }
        for (int i = 0; i < n; ++i) {
            pk_device_info di;
            LOCKED(self, self->ctx, st, pk_device_get_info(self->ctx, (pk_backend_id)b, i, &di));
            if (st != PK_OK) {
                Py_DECREF(list);
                return raise_status(st, "Context.devices");
            }
            PyObject *d = Py_BuildValue(
                "{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:i,s:K,s:N,s:(ii),s:K}", "backend",
                pk_backend_name(di.backend), "index", di.index, "type", device_type_name(di.type),
                "name", di.name, "vendor", di.vendor, "driver", di.driver, "platform",
                di.platform, "simd", di.simd, "compute_units", di.compute_units,
                "threads_per_core", di.threads_per_core, "global_mem_bytes",
                (unsigned long long)di.global_mem_bytes, "fp64", PyBool_FromLong(di.fp64),
                "compute_capability", di.cc_major, di.cc_minor, "local_mem_bytes",
                (unsigned long long)di.local_mem_bytes);
            if (!d || PyList_Append(list, d) < 0) {
                Py_XDECREF(d);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(d);
        }
    }
    return list;
}

static PyObject *ctx_release_cache(ContextObject *self, PyObject *unused)
{
    (void)unused;
    pk_status st;
    LOCKED(self, self->ctx, st, (pk_context_release_cache(self->ctx), PK_OK));
    if (st != PK_OK) return raise_status(st, "Context.release_cache");
    Py_RETURN_NONE;
}

#if PKPY_HAVE_CACHE_LIMIT
static PyObject *ctx_set_cache_limit(ContextObject *self, PyObject *arg)
{
    unsigned long long b = PyLong_AsUnsignedLongLong(arg);
    if (b == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    pk_status st;
    LOCKED(self, self->ctx, st, pk_context_set_cache_limit(self->ctx, (size_t)b));
    if (st != PK_OK) return raise_status(st, "Context.set_cache_limit");
    Py_RETURN_NONE;
}
#endif

#if PKPY_HAVE_WISDOM
/* Wisdom (lib/portkern.h): path None means PORTKERN_WISDOM, else the default file. */
static PyObject *ctx_wisdom_file(ContextObject *self, PyObject *args, int save)
{
    const char *path = NULL;
    if (!PyArg_ParseTuple(args, save ? "|z:wisdom_save" : "|z:wisdom_load", &path)) return NULL;
    pk_status st;
    LOCKED(self, self->ctx, st, save ? pk_wisdom_save(self->ctx, path)
                                     : pk_wisdom_load(self->ctx, path));
    if (st != PK_OK) return raise_status(st, save ? "Context.wisdom_save" : "Context.wisdom_load");
    Py_RETURN_NONE;
}

static PyObject *ctx_wisdom_load(ContextObject *self, PyObject *args)
{
    return ctx_wisdom_file(self, args, 0);
}

static PyObject *ctx_wisdom_save(ContextObject *self, PyObject *args)
{
    return ctx_wisdom_file(self, args, 1);
}

static PyObject *ctx_wisdom_forget(ContextObject *self, PyObject *unused)
{
    (void)unused;
    pk_status st;
    LOCKED(self, self->ctx, st, (pk_wisdom_forget(self->ctx), PK_OK));
    if (st != PK_OK) return raise_status(st, "Context.wisdom_forget");
    Py_RETURN_NONE;
}

/* The context's entries as a list of dicts (the fields of pk_wisdom_entry). */
static PyObject *ctx_wisdom(ContextObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->ctx) return raise_status(PKPY_CLOSED, "Context.wisdom");
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < pk_wisdom_count(self->ctx); ++i) {
        pk_wisdom_entry e;
        if (pk_wisdom_get(self->ctx, i, &e) != PK_OK) continue;
        PyObject *d = Py_BuildValue(
            "{s:s,s:s,s:i,s:s,s:s,s:i,s:s,s:s,s:d,s:s,s:s,s:d,s:s,s:s,s:s}", "kernel", e.kernel,
            "backend", pk_backend_name(e.backend), "device", e.device, "device_name",
            e.device_name, "driver", e.driver, "compute_units", e.compute_units, "version",
            e.version, "size_class", e.size_class, "size_bytes", e.size_bytes, "variant",
            e.variant, "params", e.params, "seconds", e.seconds, "runners_up", e.runners_up,
            "date", e.date, "tuning", e.tuning);
        if (!d || PyList_Append(list, d) != 0) Py_CLEAR(list);
        Py_XDECREF(d);
    }
    return list;
}

static PyObject *ctx_wisdom_note(ContextObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->ctx) return raise_status(PKPY_CLOSED, "Context.wisdom_note");
    return PyUnicode_FromString(pk_wisdom_note(self->ctx));
}
#endif

static PyObject *ctx_measure_bandwidth(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"backend", "device", "nbytes", "reps", NULL};
    const char *bname;
    int device = 0, reps = 3;
    Py_ssize_t nbytes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|ini:measure_bandwidth", kwl, &bname, &device,
                                     &nbytes, &reps))
        return NULL;
    pk_backend_id id;
    if (pk_backend_from_name(bname, &id) != PK_OK) {
        PyErr_Format(PyExc_ValueError, "measure_bandwidth: unknown backend '%s'", bname);
        return NULL;
    }
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "measure_bandwidth: nbytes must be >= 0");
        return NULL;
    }
    double bw = 0;
    pk_status st;
    LOCKED(self, self->ctx, st,
           pk_measure_bandwidth(self->ctx, id, device, (size_t)nbytes, reps, &bw));
    if (st != PK_OK) return raise_status(st, "measure_bandwidth");
    return PyFloat_FromDouble(bw);
}

/* ---- the calls' common parts ---------------------------------------------------------- */

/* The RunInfo of a call that made `out` (NULL: failed, error set); NULL with out released
 * when either failed. */
static RunInfoObject *call_info(PyArrayObject *out)
{
    if (!out) return NULL;
    RunInfoObject *ri = runinfo_new();
    if (!ri) Py_DECREF(out);
    return ri;
}

/* A kernel call's end: on PK_OK (out, RunInfo) (both references stolen), else the status
 * raised as fn's error and both released. */
static PyObject *call_result(PyArrayObject *out, RunInfoObject *ri, pk_status st, const char *fn)
{
    if (st != PK_OK) {
        raise_status(st, fn);
        Py_DECREF(out);
        Py_DECREF(ri);
        return NULL;
    }
    return Py_BuildValue("(NN)", out, ri);
}

/* grid's: (grid, norm, num_skipped, RunInfo). */
static PyObject *grid_result(PyArrayObject *g, double norm, int64_t skipped, RunInfoObject *ri,
                             pk_status st, const char *fn)
{
    if (st != PK_OK) return call_result(g, ri, st, fn);
    return Py_BuildValue("(NdLN)", g, norm, (long long)skipped, ri);
}

/* ---- diffusion3d ----------------------------------------------------------------------- */

static int d3_params(PyObject *const coefs[7], int nx, int ny, int nz, int count,
                     pk_diffusion3d_params *p)
{
    pk_diffusion3d_params_default(p, nx, ny, nz, count);
    double *dst[7] = {&p->cc, &p->cw, &p->ce, &p->cs, &p->cn, &p->cb, &p->ct};
    for (int i = 0; i < 7; ++i) {
        if (coefs[i] == Py_None) continue;
        double v = PyFloat_AsDouble(coefs[i]);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        *dst[i] = v;
    }
    return 0;
}

static PyObject *ctx_diffusion3d(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"f", "count", "cc", "cw", "ce", "cs", "cn", "cb", "ct", "out",
                          "variant", NULL};
    PyObject *fo, *c[7], *outo = Py_None, *varo = Py_None;
    int count;
    for (int i = 0; i < 7; ++i) c[i] = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|$OOOOOOOOO:diffusion3d", kwl, &fo, &count,
                                     &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &outo, &varo))
        return NULL;
    const char *fn = "diffusion3d", *lay = "[nz, ny, nx]";
    PyArrayObject *f = check_array(fo, fn, "f", NPY_FLOAT32, 3, NULL, lay, 0);
    if (!f) return NULL;
    int nx, ny, nz;
    const char *variant;
    pk_diffusion3d_params p;
    if (dim_int(f, 2, fn, "f", &nx) || dim_int(f, 1, fn, "f", &ny) || dim_int(f, 0, fn, "f", &nz) ||
        parse_variant(varo, fn, &variant) || d3_params(c, nx, ny, nz, count, &p))
        return NULL;
    PyArrayObject *out = inplace_output(f, outo, fn, lay);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    float *data = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_diffusion3d(self->ctx, &p, variant, data, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- conv2d ---------------------------------------------------------------------------- */

static const char *const cv_methods[] = {"auto", "direct", "fft", NULL};

static PyObject *ctx_conv2d(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"image", "psf", "method", "out", "variant", NULL};
    PyObject *imo, *psfo, *metho = NULL, *outo = Py_None, *varo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$OOO:conv2d", kwl, &imo, &psfo, &metho, &outo,
                                     &varo))
        return NULL;
    const char *fn = "conv2d", *variant;
    PyArrayObject *im = check_array(imo, fn, "image", NPY_FLOAT32, 2, NULL, "[h, w]", 0);
    if (!im) return NULL;
    PyArrayObject *psf = check_array(psfo, fn, "psf", NPY_FLOAT32, 2, NULL, "[kh, kw]", 0);
    if (!psf) return NULL;
    pk_conv2d_params p;
    int method = 0;
    if (dim_int(im, 0, fn, "image", &p.h) || dim_int(im, 1, fn, "image", &p.w) ||
        dim_int(psf, 0, fn, "psf", &p.kh) || dim_int(psf, 1, fn, "psf", &p.kw) ||
        (metho && parse_choice(metho, fn, "method", cv_methods, &method)) ||
        parse_variant(varo, fn, &variant))
        return NULL;
    p.method = method; /* PK_CONV2D_AUTO, _DIRECT, _FFT in that order */
    PyArrayObject *out = new_output(outo, fn, NPY_FLOAT32, 2, PyArray_DIMS(im), "[h, w]", 0);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    const float *ip = PyArray_DATA(im), *pp = PyArray_DATA(psf);
    float *op = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_conv2d(self->ctx, &p, variant, ip, pp, op, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- magicfilter3d --------------------------------------------------------------------- */

static const char *const mf_bcs[] = {"periodic", "grow", "shrink", NULL};

/* p from x's shape (as given: for shrink n + 15 per axis), transpose and bc; the shapes. */
static int mf_params(const npy_intp *xshape, int transpose, int bc, const char *fn,
                     pk_magicfilter3d_params *p, npy_intp in[3], npy_intp out[3])
{
    int n[3];
    for (int i = 0; i < 3; ++i) {
        npy_intp e = xshape[i] - (bc == PK_MF_SHRINK ? 15 : 0);
        if (bc == PK_MF_SHRINK && e < 1) {
            PyErr_Format(PyExc_ValueError,
                         "%s: with bc='shrink' x holds n + 15 points per axis (n >= 1): every "
                         "extent must be >= 16, axis %d has %ld", fn, i, (long)xshape[i]);
            return -1;
        }
        if (e > INT_MAX - 15) {
            PyErr_Format(PyExc_ValueError, "%s: x: extent %ld of axis %d is too large", fn,
                         (long)xshape[i], i);
            return -1;
        }
        n[i] = (int)e;
    }
    p->n1 = n[2];
    p->n2 = n[1];
    p->n3 = n[0];
    p->transpose = transpose ? 1 : 0;
    p->bc = bc;
    size_t si[3], so[3];
    pk_status st = pk_magicfilter3d_shapes(p, si, so);
    if (st != PK_OK) {
        raise_status(st, fn);
        return -1;
    }
    for (int i = 0; i < 3; ++i) {
        in[i] = (npy_intp)si[i];
        out[i] = (npy_intp)so[i];
    }
    return 0;
}

static PyObject *ctx_magicfilter3d(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "transpose", "bc", "out", "variant", NULL};
    PyObject *xo, *bco = NULL, *outo = Py_None, *varo = Py_None;
    int transpose = 0, bc = PK_MF_PERIODIC;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pOOO:magicfilter3d", kwl, &xo, &transpose, &bco,
                                     &outo, &varo))
        return NULL;
    const char *fn = "magicfilter3d", *variant;
    PyArrayObject *x = check_array(xo, fn, "x", NPY_FLOAT64, 3, NULL, "[n3, n2, n1]", 0);
    if (!x) return NULL;
    pk_magicfilter3d_params p;
    npy_intp in[3], os[3];
    if ((bco && parse_choice(bco, fn, "bc", mf_bcs, &bc)) || parse_variant(varo, fn, &variant) ||
        mf_params(PyArray_DIMS(x), transpose, bc, fn, &p, in, os))
        return NULL;
    PyArrayObject *out = new_output(outo, fn, NPY_FLOAT64, 3, os, "[n3', n2', n1']", 0);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    const double *xp = PyArray_DATA(x);
    double *yp = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_magicfilter3d(self->ctx, &p, variant, xp, yp, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- laplace2d ------------------------------------------------------------------------- */

static const char *const lp_layouts[] = {"lexi", "hvfo", "auto", NULL};

static int lp_params(int l, double sigma, int count, int layout, int nw, pk_laplace2d_params *p)
{
    p->l = l;
    p->count = count;
    p->sigma = sigma;
    p->nw = nw;
    if (layout == 2) { /* auto: hvfo when l is a multiple of the lanes, else lexi (the CLI's) */
        const int w = nw > 0 ? nw : PK_LAP_DEFAULT_NW;
        layout = l % w == 0 ? PK_LAP_HVFO : PK_LAP_LEXI;
    }
    p->layout = layout;
    return 0;
}

static PyObject *ctx_laplace2d(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"phi", "sigma", "count", "layout", "nw", "out", "variant", NULL};
    PyObject *phio, *layo = NULL, *outo = Py_None, *varo = Py_None;
    double sigma;
    int count, nw = 0, layout = 2;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Odi|$OiOO:laplace2d", kwl, &phio, &sigma, &count,
                                     &layo, &nw, &outo, &varo))
        return NULL;
    const char *fn = "laplace2d", *variant, *lay = "[l, l]";
    PyArrayObject *phi = check_array(phio, fn, "phi", NPY_FLOAT32, 2, NULL, lay, 0);
    if (!phi) return NULL;
    if (PyArray_DIM(phi, 0) != PyArray_DIM(phi, 1)) {
        PyErr_Format(PyExc_ValueError, "%s: phi must be square [l, l], got shape (%ld, %ld)", fn,
                     (long)PyArray_DIM(phi, 0), (long)PyArray_DIM(phi, 1));
        return NULL;
    }
    int l;
    pk_laplace2d_params p;
    if (dim_int(phi, 0, fn, "phi", &l) || (layo && parse_choice(layo, fn, "layout", lp_layouts, &layout)) ||
        parse_variant(varo, fn, &variant) || lp_params(l, sigma, count, layout, nw, &p))
        return NULL;
    PyArrayObject *out = inplace_output(phi, outo, fn, lay);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    float *data = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_laplace2d(self->ctx, &p, variant, data, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- su3 ------------------------------------------------------------------------------- */

static int s3_layout(PyObject *o, const char *fn, int *layout)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: layout must be a str, got %.100s", fn,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) return -1;
    if (pk_su3_layout_from_name(s, layout) != PK_OK) {
        PyErr_Format(PyExc_ValueError,
                     "%s: layout must be one of aos, short, padded, vfo, hvfo, recon12; got %R", fn, o);
        return -1;
    }
    return 0;
}

/* u [nv, 3, 3] and psi [nv, 3, 4] complex128; nv from u. */
static int s3_arrays(PyObject *uo, PyObject *psio, const char *fn, PyArrayObject **u,
                     PyArrayObject **psi)
{
    *u = check_array(uo, fn, "u", NPY_COMPLEX128, 3, (npy_intp[]){-1, 3, 3}, "[nv, 3, 3]", 0);
    if (!*u) return -1;
    npy_intp sh[3] = {PyArray_DIM(*u, 0), 3, 4};
    *psi = check_array(psio, fn, "psi", NPY_COMPLEX128, 3, sh, "[nv, 3, 4] (nv from u)", 0);
    return *psi ? 0 : -1;
}

static PyObject *ctx_su3(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"u", "psi", "layout", "nw", "out", "variant", NULL};
    PyObject *uo, *psio, *layo = NULL, *outo = Py_None, *varo = Py_None;
    int nw = 0, layout = PK_SU3_AOS;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$OiOO:su3", kwl, &uo, &psio, &layo, &nw, &outo,
                                     &varo))
        return NULL;
    const char *fn = "su3", *variant;
    PyArrayObject *u, *psi;
    if (s3_arrays(uo, psio, fn, &u, &psi) || (layo && s3_layout(layo, fn, &layout)) ||
        parse_variant(varo, fn, &variant))
        return NULL;
    pk_su3_params p = {(size_t)PyArray_DIM(u, 0), layout, nw};
    PyArrayObject *out = new_output(outo, fn, NPY_COMPLEX128, 3, PyArray_DIMS(psi), "[nv, 3, 4]", 0);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    const double *up = PyArray_DATA(u), *pp = PyArray_DATA(psi);
    double *cp = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_su3(self->ctx, &p, variant, up, pp, cp, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- dslash ---------------------------------------------------------------------------- */

/* psi [t, z, y, x, 4, 3]; u [4, t, z, y, x, 3, 3]. */
static int ds_arrays(PyObject *uo, PyObject *psio, const char *fn, PyArrayObject **u,
                     PyArrayObject **psi, pk_dslash_params *p)
{
    npy_intp ps[6] = {-1, -1, -1, -1, 4, 3};
    *psi = check_array(psio, fn, "psi", NPY_COMPLEX128, 6, ps, "[t, z, y, x, 4, 3]", 0);
    if (!*psi) return -1;
    npy_intp us[7] = {4, 0, 0, 0, 0, 3, 3};
    for (int i = 0; i < 4; ++i) us[i + 1] = PyArray_DIM(*psi, i);
    *u = check_array(uo, fn, "u", NPY_COMPLEX128, 7, us, "[4, t, z, y, x, 3, 3] (lattice from psi)", 0);
    if (!*u) return -1;
    return dim_int(*psi, 0, fn, "psi", &p->t) || dim_int(*psi, 1, fn, "psi", &p->z) ||
                   dim_int(*psi, 2, fn, "psi", &p->y) || dim_int(*psi, 3, fn, "psi", &p->x)
               ? -1
               : 0;
}

static PyObject *ctx_dslash(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"u", "psi", "kappa", "recon12", "out", "variant", NULL};
    PyObject *uo, *psio, *outo = Py_None, *varo = Py_None;
    double kappa;
    int recon12 = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOd|$pOO:dslash", kwl, &uo, &psio, &kappa, &recon12,
                                     &outo, &varo))
        return NULL;
    const char *fn = "dslash", *variant;
    PyArrayObject *u, *psi;
    pk_dslash_params p = {0}; /* t_begin, t_end 0: all planes */
    if (ds_arrays(uo, psio, fn, &u, &psi, &p) || parse_variant(varo, fn, &variant))
        return NULL;
    p.kappa = kappa;
    p.recon12 = recon12;
    PyArrayObject *out = new_output(outo, fn, NPY_COMPLEX128, 6, PyArray_DIMS(psi),
                                    "[t, z, y, x, 4, 3]", 0);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    const double *up = PyArray_DATA(u), *pp = PyArray_DATA(psi);
    double *cp = PyArray_DATA(out);
    LOCKED(self, self->ctx, st, pk_dslash(self->ctx, &p, variant, up, pp, cp, &ri->info));
    return call_result(out, ri, st, fn);
}

/* ---- grid ------------------------------------------------------------------------------ */

/* kernels (FULL: complex64 [planes, half, half]; COMPACT: complex64 [count]) and support
 * (int32 [planes]) against p; fills p's layout fields and checks the stack's length. */
static int gr_stack(PyObject *ko, PyObject *so, const char *fn, pk_grid_params *p,
                    PyArrayObject **k, PyArrayObject **s)
{
    *s = check_array(so, fn, "support", NPY_INT32, 1, NULL, "[num_w_planes]", 0);
    if (!*s) return -1;
    if (PyArray_DIM(*s, 0) > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: support: too many planes", fn);
        return -1;
    }
    p->num_w_planes = (int)PyArray_DIM(*s, 0);
    if (!PyArray_Check(ko) || PyArray_NDIM((PyArrayObject *)ko) != 1) {
        npy_intp ks[3] = {PyArray_DIM(*s, 0), -1, -1};
        *k = check_array(ko, fn, "kernels", NPY_COMPLEX64, 3, ks,
                         "[num_w_planes, half, half] (FULL) or 1-D (COMPACT)", 0);
        if (!*k) return -1;
        if (PyArray_DIM(*k, 1) != PyArray_DIM(*k, 2)) {
            PyErr_Format(PyExc_ValueError, "%s: kernels: a FULL stack is square per plane "
                         "[planes, half, half], got half %ld x %ld", fn,
                         (long)PyArray_DIM(*k, 1), (long)PyArray_DIM(*k, 2));
            return -1;
        }
        if (dim_int(*k, 1, fn, "kernels", &p->conv_size_half)) return -1;
        p->kernel_layout = PK_GRID_KERNELS_FULL;
    } else {
        *k = check_array(ko, fn, "kernels", NPY_COMPLEX64, 1, NULL, "[count] (COMPACT)", 0);
        if (!*k) return -1;
        p->conv_size_half = 0;
        p->kernel_layout = PK_GRID_KERNELS_COMPACT;
    }
    size_t count = 0;
    pk_status st = pk_grid_kernel_count(p, PyArray_DATA(*s), &count);
    if (st != PK_OK) {
        raise_status(st, fn);
        return -1;
    }
    if ((size_t)PyArray_SIZE(*k) != count) {
        PyErr_Format(PyExc_ValueError,
                     "%s: kernels: these supports and oversample need %zu complex samples "
                     "(%s layout), the array has %ld", fn, count,
                     p->kernel_layout == PK_GRID_KERNELS_FULL ? "FULL" : "COMPACT",
                     (long)PyArray_SIZE(*k));
        return -1;
    }
    return 0;
}

/* The visibility arrays: uu, vv, ww, weight float32 [n], vis complex64 [n]. */
static int gr_data(PyObject *const o[5], const char *fn, pk_grid_data *d)
{
    static const char *names[5] = {"uu", "vv", "ww", "vis", "weight"};
    PyArrayObject *a[5];
    a[0] = check_array(o[0], fn, "uu", NPY_FLOAT32, 1, NULL, "[n]", 0);
    if (!a[0]) return -1;
    npy_intp n[1] = {PyArray_DIM(a[0], 0)};
    for (int i = 1; i < 5; ++i) {
        a[i] = check_array(o[i], fn, names[i], i == 3 ? NPY_COMPLEX64 : NPY_FLOAT32, 1, n,
                           "[n] (n from uu)", 0);
        if (!a[i]) return -1;
    }
    d->num_vis = (size_t)n[0];
    d->uu = PyArray_DATA(a[0]);
    d->vv = PyArray_DATA(a[1]);
    d->ww = PyArray_DATA(a[2]);
    d->vis = PyArray_DATA(a[3]);
    d->weight = PyArray_DATA(a[4]);
    return 0;
}

/* The grid: new zeroed (None) or the caller's (accumulated into). */
static PyArrayObject *gr_output(PyObject *go, const char *fn, int G)
{
    npy_intp sh[2] = {G, G};
    if (go == Py_None) return new_array(2, sh, NPY_COMPLEX64, 1);
    PyArrayObject *g = check_array(go, fn, "grid", NPY_COMPLEX64, 2, sh, "[grid_size, grid_size]", 1);
    if (!g) return NULL;
    Py_INCREF(g);
    return g;
}

static int gr_params(int grid_size, int oversample, double cell, double w_scale, int tile_size,
                     int central_radius, PyObject *tfo, pk_grid_params *p)
{
    pk_grid_params_init(p);
    p->grid_size = grid_size;
    p->oversample = oversample;
    p->cell_size_rad = cell;
    p->w_scale = w_scale;
    p->tile_size = tile_size;
    p->central_radius = central_radius;
    if (tfo && tfo != Py_None) {
        p->tile_factor = PyFloat_AsDouble(tfo);
        if (p->tile_factor == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* The keyword-only arguments grid needs (the C API's argument parser has no required
 * keyword-only arguments). */
static int gr_required(PyObject *kw, const char *fn)
{
    static const char *const req[] = {"oversample", "cell_size", "w_scale", "grid_size", NULL};
    for (int i = 0; req[i]; ++i) {
        PyObject *v = kw ? PyDict_GetItemString(kw, req[i]) : NULL;
        if (!v) {
            PyErr_Format(PyExc_TypeError, "%s() missing required keyword argument '%s'", fn, req[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *grid_out_or_alias(PyObject *grido, PyObject *outo, const char *fn)
{
    if (grido != Py_None && outo != Py_None && grido != outo) {
        PyErr_Format(PyExc_TypeError, "%s: give grid= or out= (the same thing), not both", fn);
        return NULL;
    }
    return grido != Py_None ? grido : outo;
}

static PyObject *ctx_grid(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"uu", "vv", "ww", "vis", "weight", "kernels", "support", "oversample",
                          "cell_size", "w_scale", "grid_size", "tile_size", "central_radius",
                          "tile_factor", "grid", "out", "variant", NULL};
    PyObject *o[5], *ko, *so, *tfo = Py_None, *grido = Py_None, *outo = Py_None, *varo = Py_None;
    int oversample = INT_MIN, grid_size = INT_MIN, tile_size = 0, central_radius = 0;
    double cell = NAN, w_scale = NAN;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOO|$iddiiiOOOO:grid", kwl, &o[0], &o[1], &o[2],
                                     &o[3], &o[4], &ko, &so, &oversample, &cell, &w_scale,
                                     &grid_size, &tile_size, &central_radius, &tfo, &grido,
                                     &outo, &varo) ||
        gr_required(kw, "grid"))
        return NULL;
    const char *fn = "grid", *variant;
    pk_grid_params p;
    pk_grid_data d;
    PyArrayObject *k, *s;
    PyObject *go = grid_out_or_alias(grido, outo, fn);
    if (!go || gr_params(grid_size, oversample, cell, w_scale, tile_size, central_radius, tfo, &p) ||
        gr_data(o, fn, &d) || gr_stack(ko, so, fn, &p, &k, &s) || parse_variant(varo, fn, &variant))
        return NULL;
    if (grid_size < 2 || grid_size % 2) {
        PyErr_Format(PyExc_ValueError, "%s: grid_size must be even and >= 2, got %d", fn, grid_size);
        return NULL;
    }
    PyArrayObject *g = gr_output(go, fn, grid_size);
    RunInfoObject *ri = call_info(g);
    if (!ri) return NULL;
    double norm = 0;
    int64_t skipped = 0;
    pk_status st;
    const int32_t *sp = PyArray_DATA(s);
    const float *kp = PyArray_DATA(k);
    float *gp = PyArray_DATA(g);
    LOCKED(self, self->ctx, st,
           pk_grid(self->ctx, &p, variant, sp, kp, &d, gp, &norm, &skipped, &ri->info));
    return grid_result(g, norm, skipped, ri, st, fn);
}

#if PKPY_HAVE_IMAGE
/* ---- image and degrid (docs/KERNELS.md 7): grid's arguments, then the image's ------------ */

/* image_size is required too: grid's required keywords and this one. */
static int im_params(PyObject *kw, const char *fn, int image_size, pk_image_params *ip)
{
    if (!kw || !PyDict_GetItemString(kw, "image_size")) {
        PyErr_Format(PyExc_TypeError, "%s() missing required keyword argument 'image_size'", fn);
        return -1;
    }
    pk_image_params_init(ip);
    ip->image_size = image_size;
    return 0;
}

static PyObject *ctx_image(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"uu", "vv", "ww", "vis", "weight", "kernels", "support", "oversample",
                          "cell_size", "w_scale", "grid_size", "image_size", "tile_size",
                          "central_radius", "tile_factor", "out", "variant", NULL};
    PyObject *o[5], *ko, *so, *tfo = Py_None, *outo = Py_None, *varo = Py_None;
    int oversample = INT_MIN, grid_size = INT_MIN, image_size = INT_MIN, tile_size = 0,
        central_radius = 0;
    double cell = NAN, w_scale = NAN;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOO|$iddiiiiOOO:image", kwl, &o[0], &o[1],
                                     &o[2], &o[3], &o[4], &ko, &so, &oversample, &cell, &w_scale,
                                     &grid_size, &image_size, &tile_size, &central_radius, &tfo,
                                     &outo, &varo) ||
        gr_required(kw, "image"))
        return NULL;
    const char *fn = "image", *variant;
    pk_image_params ip;
    pk_grid_data d;
    PyArrayObject *k, *s;
    if (im_params(kw, fn, image_size, &ip) ||
        gr_params(grid_size, oversample, cell, w_scale, tile_size, central_radius, tfo, &ip.grid) ||
        gr_data(o, fn, &d) || gr_stack(ko, so, fn, &ip.grid, &k, &s) ||
        parse_variant(varo, fn, &variant))
        return NULL;
    if (image_size < 2 || image_size % 2 || image_size > grid_size) {
        PyErr_Format(PyExc_ValueError, "%s: image_size must be even, >= 2 and at most grid_size "
                     "(%d), got %d", fn, grid_size, image_size);
        return NULL;
    }
    npy_intp sh[2] = {image_size, image_size};
    PyArrayObject *img;
    if (outo == Py_None) {
        img = new_array(2, sh, NPY_FLOAT32, 0);
    } else {
        img = check_array(outo, fn, "out", NPY_FLOAT32, 2, sh, "[image_size, image_size]", 1);
        if (img) Py_INCREF(img);
    }
    RunInfoObject *ri = call_info(img);
    if (!ri) return NULL;
    double norm = 0;
    int64_t skipped = 0;
    pk_status st;
    const int32_t *sp = PyArray_DATA(s);
    const float *kp = PyArray_DATA(k);
    float *ipx = PyArray_DATA(img);
    LOCKED(self, self->ctx, st,
           pk_image(self->ctx, &ip, variant, sp, kp, &d, ipx, &norm, &skipped, &ri->info));
    return grid_result(img, norm, skipped, ri, st, fn);
}

static PyObject *ctx_degrid(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"uu", "vv", "ww", "kernels", "support", "model", "oversample",
                          "cell_size", "w_scale", "grid_size", "weight", "tile_size",
                          "central_radius", "tile_factor", "out", "variant", NULL};
    PyObject *uvw[3], *ko, *so, *mo, *wo = Py_None, *tfo = Py_None, *outo = Py_None,
                                         *varo = Py_None;
    int oversample = INT_MIN, grid_size = INT_MIN, tile_size = 0, central_radius = 0;
    double cell = NAN, w_scale = NAN;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|$iddiOiiOOO:degrid", kwl, &uvw[0], &uvw[1],
                                     &uvw[2], &ko, &so, &mo, &oversample, &cell, &w_scale,
                                     &grid_size, &wo, &tile_size, &central_radius, &tfo, &outo,
                                     &varo) ||
        gr_required(kw, "degrid"))
        return NULL;
    const char *fn = "degrid", *variant;
    static const char *names[3] = {"uu", "vv", "ww"};
    pk_image_params ip;
    pk_grid_data d;
    PyArrayObject *k, *s, *a[3], *w = NULL, *m;
    pk_image_params_init(&ip);
    memset(&d, 0, sizeof d);
    if (gr_params(grid_size, oversample, cell, w_scale, tile_size, central_radius, tfo, &ip.grid))
        return NULL;
    if (!(a[0] = check_array(uvw[0], fn, "uu", NPY_FLOAT32, 1, NULL, "[n]", 0))) return NULL;
    npy_intp n[1] = {PyArray_DIM(a[0], 0)};
    for (int i = 1; i < 3; ++i)
        if (!(a[i] = check_array(uvw[i], fn, names[i], NPY_FLOAT32, 1, n, "[n] (n from uu)", 0)))
            return NULL;
    if (wo != Py_None &&
        !(w = check_array(wo, fn, "weight", NPY_FLOAT32, 1, n, "[n] (n from uu)", 0)))
        return NULL;
    if (!(m = check_array(mo, fn, "model", NPY_FLOAT32, 2, NULL, "[N, N]", 0))) return NULL;
    if (PyArray_DIM(m, 0) != PyArray_DIM(m, 1)) {
        PyErr_Format(PyExc_ValueError, "%s: model: a square image [N, N], got [%ld, %ld]", fn,
                     (long)PyArray_DIM(m, 0), (long)PyArray_DIM(m, 1));
        return NULL;
    }
    if (dim_int(m, 0, fn, "model", &ip.image_size) || gr_stack(ko, so, fn, &ip.grid, &k, &s) ||
        parse_variant(varo, fn, &variant))
        return NULL;
    d.num_vis = (size_t)n[0];
    d.uu = PyArray_DATA(a[0]);
    d.vv = PyArray_DATA(a[1]);
    d.ww = PyArray_DATA(a[2]);
    d.weight = w ? PyArray_DATA(w) : NULL;
    PyArrayObject *vis;
    if (outo == Py_None) {
        vis = new_array(1, n, NPY_COMPLEX64, 0);
    } else {
        vis = check_array(outo, fn, "out", NPY_COMPLEX64, 1, n, "[n]", 1);
        if (vis) Py_INCREF(vis);
    }
    RunInfoObject *ri = call_info(vis);
    if (!ri) return NULL;
    int64_t skipped = 0;
    pk_status st;
    const int32_t *sp = PyArray_DATA(s);
    const float *kp = PyArray_DATA(k), *mp = PyArray_DATA(m);
    float *vp = PyArray_DATA(vis);
    LOCKED(self, self->ctx, st,
           pk_degrid(self->ctx, &ip, variant, sp, kp, mp, &d, vp, &skipped, &ri->info));
    if (st != PK_OK) return call_result(vis, ri, st, fn);
    return Py_BuildValue("(NLN)", vis, (long long)skipped, ri);
}

/* write_fits(path, image, ra_deg, dec_deg, cell_rad, freq_hz, bandwidth_hz, bunit, object,
 * telescope): pk_fits_write_image with CRPIX n/2 + 1 and CDELT (-cell, +cell) in degrees. */
static PyObject *m_write_fits(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *patho, *imo;
    double ra, dec, cell, freq, bw;
    const char *bunit, *object, *telescope;
    if (!PyArg_ParseTuple(args, "O&Odddddzzz:write_fits", PyUnicode_FSConverter, &patho, &imo,
                          &ra, &dec, &cell, &freq, &bw, &bunit, &object, &telescope))
        return NULL;
    const char *fn = "write_fits";
    PyArrayObject *im = check_array(imo, fn, "image", NPY_FLOAT32, 2, NULL, "[ny, nx]", 0);
    if (!im) {
        Py_DECREF(patho);
        return NULL;
    }
    pk_fits_image_info w;
    pk_fits_image_info_init(&w);
    w.ra_deg = ra;
    w.dec_deg = dec;
    w.cdelt_deg[0] = -cell * 180 / Py_MATH_PI;
    w.cdelt_deg[1] = cell * 180 / Py_MATH_PI;
    w.freq_hz = freq;
    w.bandwidth_hz = bw;
    if (bunit) w.bunit = bunit;
    w.object = object;
    w.telescope = telescope;
    const char *path = PyBytes_AS_STRING(patho);
    const float *px = PyArray_DATA(im);
    const size_t nx = (size_t)PyArray_DIM(im, 1), ny = (size_t)PyArray_DIM(im, 0);
    pk_status st;
    Py_BEGIN_ALLOW_THREADS st = pk_fits_write_image(path, px, nx, ny, &w);
    Py_END_ALLOW_THREADS
    Py_DECREF(patho);
    if (st != PK_OK) return raise_status(st, fn);
    Py_RETURN_NONE;
}
#endif

/* ---- plans: what differs per kernel ----------------------------------------------------- */

static PyTypeObject D3PlanType, CvPlanType, MfPlanType, LpPlanType, S3PlanType, DsPlanType,
    GrPlanType;

/* One array a plan's upload and execute take, in the order they are checked: `arg` is its
 * position among the method's arguments. */
typedef struct {
    const char *name, *layout;
    int arg;
} PlanArray;

/* A kind of plan: its type and the library's calls behind one interface.  The plan methods
 * below are shared; a kind gives only its calls, its arrays (`shape` gives the extents of
 * arrays[i], i == nin being the output) and whether it counts steps (count_at: offset of the
 * plan's default count in PlanObject, 0 for none) or works in place.  Grid's plan has only
 * execute (its own method) and leaves the resident-data part NULL. */
typedef struct {
    PyTypeObject *type;
    const char *name; /* the messages' prefix: "Diffusion3DPlan" */
    pk_status (*create)(void **h, pk_context *c, const void *prm, const char *variant,
                        const void *a, const void *b, pk_run_info *info);
    void (*destroy)(void *h);
    int typenum, nin, inplace;
    size_t count_at;
    PlanArray arrays[2];
    const char *out_layout;
    char *exec_kw[4]; /* execute's keywords: the inputs, count where counted, out */
    const char *exec_fmt;
    int (*shape)(const PlanObject *p, int i, npy_intp *sh); /* returns ndim */
    pk_status (*upload)(void *h, const void *const in[]);
    pk_status (*run)(void *h, int count, pk_run_info *info);
    pk_status (*download)(void *h, void *out);
    /* NULL where the library has no plan_execute yet: upload + run + download (the run's info
     * then covers the kernel only). */
    pk_status (*execute)(void *h, const void *const in[], void *out, int count, pk_run_info *info);
} PlanKind;

/* The library's calls, one interface (unused arguments are those another kind needs). */
/* create(h, ctx, params, variant, a, b, info): a, b the arrays conv2d (psf) and grid (support,
 * kernels) create with. */
#define CREATE_ARGS void **h, pk_context *c, const void *prm, const char *v, const void *a, \
                    const void *b, pk_run_info *i
static pk_status d3_create(CREATE_ARGS) { return (void)a, (void)b, pk_diffusion3d_plan_create((pk_diffusion3d_plan **)h, c, prm, v, i); }
static pk_status cv_create(CREATE_ARGS) { return (void)b, pk_conv2d_plan_create((pk_conv2d_plan **)h, c, prm, v, a, i); }
static pk_status mf_create(CREATE_ARGS) { return (void)a, (void)b, pk_magicfilter3d_plan_create((pk_magicfilter3d_plan **)h, c, prm, v, i); }
static pk_status lp_create(CREATE_ARGS) { return (void)a, (void)b, pk_laplace2d_plan_create((pk_laplace2d_plan **)h, c, prm, v, i); }
static pk_status s3_create(CREATE_ARGS) { return (void)a, (void)b, pk_su3_plan_create((pk_su3_plan **)h, c, prm, v, i); }
static pk_status ds_create(CREATE_ARGS) { return (void)a, (void)b, pk_dslash_plan_create((pk_dslash_plan **)h, c, prm, v, i); }
static pk_status gr_create(CREATE_ARGS) { return pk_grid_plan_create((pk_grid_plan **)h, c, prm, v, a, b, i); }
#undef CREATE_ARGS

static void d3_destroy(void *h) { pk_diffusion3d_plan_destroy(h); }
static void cv_destroy(void *h) { pk_conv2d_plan_destroy(h); }
static void mf_destroy(void *h) { pk_magicfilter3d_plan_destroy(h); }
static void lp_destroy(void *h) { pk_laplace2d_plan_destroy(h); }
static void s3_destroy(void *h) { pk_su3_plan_destroy(h); }
static void ds_destroy(void *h) { pk_dslash_plan_destroy(h); }
static void gr_destroy(void *h) { pk_grid_plan_destroy(h); }

static pk_status d3_upload(void *h, const void *const in[]) { return pk_diffusion3d_plan_upload(h, in[0]); }
static pk_status cv_upload(void *h, const void *const in[]) { return pk_conv2d_plan_upload(h, in[0]); }
static pk_status mf_upload(void *h, const void *const in[]) { return pk_magicfilter3d_plan_upload(h, in[0]); }
static pk_status lp_upload(void *h, const void *const in[]) { return pk_laplace2d_plan_upload(h, in[0]); }
static pk_status s3_upload(void *h, const void *const in[]) { return pk_su3_plan_upload(h, in[0], in[1]); }
static pk_status ds_upload(void *h, const void *const in[]) { return pk_dslash_plan_upload(h, in[0], in[1]); }

static pk_status d3_run(void *h, int n, pk_run_info *i) { return pk_diffusion3d_plan_run(h, n, i); }
static pk_status cv_run(void *h, int n, pk_run_info *i) { return (void)n, pk_conv2d_plan_run(h, i); }
static pk_status mf_run(void *h, int n, pk_run_info *i) { return (void)n, pk_magicfilter3d_plan_run(h, i); }
static pk_status lp_run(void *h, int n, pk_run_info *i) { return pk_laplace2d_plan_run(h, n, i); }
static pk_status s3_run(void *h, int n, pk_run_info *i) { return (void)n, pk_su3_plan_run(h, i); }
static pk_status ds_run(void *h, int n, pk_run_info *i) { return (void)n, pk_dslash_plan_run(h, i); }

static pk_status d3_download(void *h, void *out) { return pk_diffusion3d_plan_download(h, out); }
static pk_status cv_download(void *h, void *out) { return pk_conv2d_plan_download(h, out); }
static pk_status mf_download(void *h, void *out) { return pk_magicfilter3d_plan_download(h, out); }
static pk_status lp_download(void *h, void *out) { return pk_laplace2d_plan_download(h, out); }
static pk_status s3_download(void *h, void *out) { return pk_su3_plan_download(h, out); }
static pk_status ds_download(void *h, void *out) { return pk_dslash_plan_download(h, out); }

/* In-place kernels execute on out (a copy of the input, or the input itself). */
static pk_status d3_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)in, pk_diffusion3d_plan_execute(h, out, n, i);
}
static pk_status lp_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)in, pk_laplace2d_plan_execute(h, out, n, i);
}
static pk_status mf_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)n, pk_magicfilter3d_plan_execute(h, in[0], out, i);
}
#if PKPY_HAVE_CONV2D_PLAN_EXECUTE
static pk_status cv_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)n, pk_conv2d_plan_execute(h, in[0], out, i);
}
#else
#define cv_execute NULL
#endif
#if PKPY_HAVE_SU3_PLAN_EXECUTE
static pk_status s3_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)n, pk_su3_plan_execute(h, in[0], in[1], out, i);
}
#else
#define s3_execute NULL
#endif
#if PKPY_HAVE_DSLASH_PLAN_EXECUTE
static pk_status ds_execute(void *h, const void *const in[], void *out, int n, pk_run_info *i)
{
    return (void)n, pk_dslash_plan_execute(h, in[0], in[1], out, i);
}
#else
#define ds_execute NULL
#endif

/* The arrays' extents, from the plan. */
static int d3_shape(const PlanObject *p, int i, npy_intp *sh)
{
    (void)i;
    sh[0] = p->p.d3.nz, sh[1] = p->p.d3.ny, sh[2] = p->p.d3.nx;
    return 3;
}
static int cv_shape(const PlanObject *p, int i, npy_intp *sh)
{
    (void)i;
    sh[0] = p->p.cv.h, sh[1] = p->p.cv.w;
    return 2;
}
static int mf_shape(const PlanObject *p, int i, npy_intp *sh)
{
    memcpy(sh, i == 0 ? p->in_shape : p->out_shape, 3 * sizeof *sh);
    return 3;
}
static int lp_shape(const PlanObject *p, int i, npy_intp *sh)
{
    (void)i;
    sh[0] = sh[1] = p->p.lp.l;
    return 2;
}
static int s3_shape(const PlanObject *p, int i, npy_intp *sh) /* u [nv, 3, 3]; psi, chi [nv, 3, 4] */
{
    sh[0] = (npy_intp)p->p.s3.nv, sh[1] = 3, sh[2] = i == 0 ? 3 : 4;
    return 3;
}
static int ds_shape(const PlanObject *p, int i, npy_intp *sh) /* psi, chi [t, z, y, x, 4, 3]; u */
{
    const pk_dslash_params *d = &p->p.ds;
    if (i == 1) { /* u [4, t, z, y, x, 3, 3] */
        npy_intp us[7] = {4, d->t, d->z, d->y, d->x, 3, 3};
        memcpy(sh, us, sizeof us);
        return 7;
    }
    npy_intp ps[6] = {d->t, d->z, d->y, d->x, 4, 3};
    memcpy(sh, ps, sizeof ps);
    return 6;
}

#define COUNT_AT(k) offsetof(PlanObject, p.k.count)
static PlanKind plan_kinds[] = {
    [K_D3] = {&D3PlanType, "Diffusion3DPlan", d3_create, d3_destroy, NPY_FLOAT32, 1, 1,
              COUNT_AT(d3), {{"f", "[nz, ny, nx] (the plan's shape)", 0}}, "[nz, ny, nx]",
              {"f", "count", "out", NULL}, "O|O$O:execute", d3_shape, d3_upload, d3_run,
              d3_download, d3_execute},
    [K_CV] = {&CvPlanType, "Conv2DPlan", cv_create, cv_destroy, NPY_FLOAT32, 1, 0, 0,
              {{"image", "[h, w] (the plan's shape)", 0}}, "[h, w]", {"image", "out", NULL},
              "O|$O:execute", cv_shape, cv_upload, cv_run, cv_download, cv_execute},
    [K_MF] = {&MfPlanType, "MagicFilter3DPlan", mf_create, mf_destroy, NPY_FLOAT64, 1, 0, 0,
              {{"x", "(the plan's shape)", 0}}, "(the plan's output)", {"x", "out", NULL},
              "O|$O:execute", mf_shape, mf_upload, mf_run, mf_download, mf_execute},
    [K_LP] = {&LpPlanType, "Laplace2DPlan", lp_create, lp_destroy, NPY_FLOAT32, 1, 1,
              COUNT_AT(lp), {{"phi", "[l, l] (the plan's shape)", 0}}, "[l, l]",
              {"phi", "count", "out", NULL}, "O|O$O:execute", lp_shape, lp_upload, lp_run,
              lp_download, lp_execute},
    [K_S3] = {&S3PlanType, "SU3Plan", s3_create, s3_destroy, NPY_COMPLEX128, 2, 0, 0,
              {{"u", "[nv, 3, 3] (the plan's nv)", 0}, {"psi", "[nv, 3, 4] (the plan's nv)", 1}},
              "[nv, 3, 4]", {"u", "psi", "out", NULL}, "OO|$O:execute", s3_shape, s3_upload,
              s3_run, s3_download, s3_execute},
    [K_DS] = {&DsPlanType, "DslashPlan", ds_create, ds_destroy, NPY_COMPLEX128, 2, 0, 0,
              {{"psi", "[t, z, y, x, 4, 3]", 1}, {"u", "[4, t, z, y, x, 3, 3] (lattice from psi)", 0}},
              "[t, z, y, x, 4, 3]", {"u", "psi", "out", NULL}, "OO|$O:execute", ds_shape,
              ds_upload, ds_run, ds_download, ds_execute},
    [K_GR] = {&GrPlanType, "GridPlan", gr_create, gr_destroy, 0, 0, 0, 0, {{NULL, NULL, 0}}, NULL,
              {NULL}, NULL, NULL, NULL, NULL, NULL, NULL},
};
#undef COUNT_AT

static void plan_destroy_handle(int kind, void *h)
{
    if (h) plan_kinds[kind].destroy(h);
}

/* ---- plans: creation ------------------------------------------------------------------- */

/* A new plan object of `kind`, linked into ctx's list before the handle exists (so that a
 * close on another thread sees it), with its creation RunInfo. */
static PlanObject *plan_alloc(ContextObject *ctx, int kind)
{
    if (ctx_check_open(ctx)) return NULL;
    PlanObject *p = PyObject_New(PlanObject, plan_kinds[kind].type);
    if (!p) return NULL;
    p->owner = ctx;
    Py_INCREF(ctx);
    p->kind = kind;
    p->handle = NULL;
    p->uploaded = 0;
    p->info = runinfo_new();
    memset(&p->p, 0, sizeof p->p);
    p->prev = NULL;
    p->next = ctx->plans;
    if (ctx->plans) ctx->plans->prev = p;
    ctx->plans = p;
    if (!p->info) {
        Py_DECREF(p);
        return NULL;
    }
    return p;
}

/* A plan of `kind` with parameters prm (`size` bytes) and the create call's arrays a, b:
 * created under the context's lock with the GIL released. */
static PlanObject *plan_create(ContextObject *ctx, int kind, const void *prm, size_t size,
                               const char *variant, const void *a, const void *b, const char *fn)
{
    PlanObject *p = plan_alloc(ctx, kind);
    if (!p) return NULL;
    memcpy(&p->p, prm, size);
    const PlanKind *k = &plan_kinds[kind];
    pk_status st;
    LOCKED(ctx, ctx->ctx, st, k->create(&p->handle, ctx->ctx, &p->p, variant, a, b, &p->info->info));
    if (st != PK_OK) {
        Py_DECREF(p);
        raise_status(st, fn);
        return NULL;
    }
    return p;
}

static PyObject *ctx_diffusion3d_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "count", "cc", "cw", "ce", "cs", "cn", "cb", "ct", "variant", NULL};
    PyObject *c[7], *varo = Py_None;
    int nz, ny, nx, count = 0;
    for (int i = 0; i < 7; ++i) c[i] = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(iii)|i$OOOOOOOO:diffusion3d_plan", kwl, &nz, &ny,
                                     &nx, &count, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6],
                                     &varo))
        return NULL;
    const char *fn = "diffusion3d_plan", *variant;
    pk_diffusion3d_params prm;
    if (parse_variant(varo, fn, &variant) || d3_params(c, nx, ny, nz, count, &prm)) return NULL;
    return (PyObject *)plan_create(self, K_D3, &prm, sizeof prm, variant, NULL, NULL, fn);
}

static PyObject *ctx_conv2d_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "psf", "method", "variant", NULL};
    PyObject *psfo, *metho = NULL, *varo = Py_None;
    int h, w, method = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(ii)O|$OO:conv2d_plan", kwl, &h, &w, &psfo, &metho,
                                     &varo))
        return NULL;
    const char *fn = "conv2d_plan", *variant;
    PyArrayObject *psf = check_array(psfo, fn, "psf", NPY_FLOAT32, 2, NULL, "[kh, kw]", 0);
    if (!psf) return NULL;
    pk_conv2d_params prm = {h, w, 0, 0, 0};
    if (dim_int(psf, 0, fn, "psf", &prm.kh) || dim_int(psf, 1, fn, "psf", &prm.kw) ||
        (metho && parse_choice(metho, fn, "method", cv_methods, &method)) ||
        parse_variant(varo, fn, &variant))
        return NULL;
    prm.method = method;
    return (PyObject *)plan_create(self, K_CV, &prm, sizeof prm, variant, PyArray_DATA(psf), NULL,
                                   fn);
}

static PyObject *ctx_magicfilter3d_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "transpose", "bc", "variant", NULL};
    PyObject *bco = NULL, *varo = Py_None;
    int a, b, c, transpose = 0, bc = PK_MF_PERIODIC;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(iii)|$pOO:magicfilter3d_plan", kwl, &a, &b, &c,
                                     &transpose, &bco, &varo))
        return NULL;
    const char *fn = "magicfilter3d_plan", *variant;
    npy_intp xs[3] = {a, b, c}, in[3], os[3];
    pk_magicfilter3d_params prm;
    if ((bco && parse_choice(bco, fn, "bc", mf_bcs, &bc)) || parse_variant(varo, fn, &variant) ||
        mf_params(xs, transpose, bc, fn, &prm, in, os))
        return NULL;
    PlanObject *p = plan_create(self, K_MF, &prm, sizeof prm, variant, NULL, NULL, fn);
    if (!p) return NULL;
    memcpy(p->in_shape, in, sizeof in);
    memcpy(p->out_shape, os, sizeof os);
    return (PyObject *)p;
}

static PyObject *ctx_laplace2d_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"l", "sigma", "count", "layout", "nw", "variant", NULL};
    PyObject *layo = NULL, *varo = Py_None;
    int l, count = 0, nw = 0, layout = 2;
    double sigma;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "id|i$OiO:laplace2d_plan", kwl, &l, &sigma, &count,
                                     &layo, &nw, &varo))
        return NULL;
    const char *fn = "laplace2d_plan", *variant;
    pk_laplace2d_params prm;
    if ((layo && parse_choice(layo, fn, "layout", lp_layouts, &layout)) ||
        parse_variant(varo, fn, &variant) || lp_params(l, sigma, count, layout, nw, &prm))
        return NULL;
    return (PyObject *)plan_create(self, K_LP, &prm, sizeof prm, variant, NULL, NULL, fn);
}

static PyObject *ctx_su3_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"nv", "layout", "nw", "variant", NULL};
    PyObject *layo = NULL, *varo = Py_None;
    Py_ssize_t nv;
    int nw = 0, layout = PK_SU3_AOS;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "n|$OiO:su3_plan", kwl, &nv, &layo, &nw, &varo))
        return NULL;
    const char *fn = "su3_plan", *variant;
    if ((layo && s3_layout(layo, fn, &layout)) || parse_variant(varo, fn, &variant)) return NULL;
    if (nv < 0) {
        PyErr_Format(PyExc_ValueError, "%s: nv must be >= 1, got %zd", fn, nv);
        return NULL;
    }
    pk_su3_params prm = {(size_t)nv, layout, nw};
    return (PyObject *)plan_create(self, K_S3, &prm, sizeof prm, variant, NULL, NULL, fn);
}

static PyObject *ctx_dslash_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"shape", "kappa", "recon12", "variant", NULL};
    PyObject *varo = Py_None;
    int t, z, y, x, recon12 = 0;
    double kappa;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(iiii)d|$pO:dslash_plan", kwl, &t, &z, &y, &x,
                                     &kappa, &recon12, &varo))
        return NULL;
    const char *fn = "dslash_plan", *variant;
    if (parse_variant(varo, fn, &variant)) return NULL;
    pk_dslash_params prm = {x, y, z, t, kappa, recon12, 0, 0, 0, 0};
    return (PyObject *)plan_create(self, K_DS, &prm, sizeof prm, variant, NULL, NULL, fn);
}

static PyObject *ctx_grid_plan(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"kernels", "support", "oversample", "cell_size", "w_scale", "grid_size",
                          "tile_size", "central_radius", "tile_factor", "variant", NULL};
    PyObject *ko, *so, *tfo = Py_None, *varo = Py_None;
    int oversample = INT_MIN, grid_size = INT_MIN, tile_size = 0, central_radius = 0;
    double cell = NAN, w_scale = NAN;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$iddiiiOO:grid_plan", kwl, &ko, &so, &oversample,
                                     &cell, &w_scale, &grid_size, &tile_size, &central_radius,
                                     &tfo, &varo) ||
        gr_required(kw, "grid_plan"))
        return NULL;
    const char *fn = "grid_plan", *variant;
    pk_grid_params prm;
    PyArrayObject *k, *s;
    if (gr_params(grid_size, oversample, cell, w_scale, tile_size, central_radius, tfo, &prm) ||
        gr_stack(ko, so, fn, &prm, &k, &s) || parse_variant(varo, fn, &variant))
        return NULL;
    return (PyObject *)plan_create(self, K_GR, &prm, sizeof prm, variant, PyArray_DATA(s),
                                   PyArray_DATA(k), fn);
}

/* ---- plans: common --------------------------------------------------------------------- */

static void plan_unlink(PlanObject *p)
{
    ContextObject *c = p->owner;
    if (!c) return;
    if (p->prev) p->prev->next = p->next;
    else if (c->plans == p) c->plans = p->next;
    if (p->next) p->next->prev = p->prev;
    p->prev = p->next = NULL;
}

static void plan_close_handle(PlanObject *p)
{
    ContextObject *c = p->owner;
    if (!c) return;
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(c->lock, WAIT_LOCK);
    plan_destroy_handle(p->kind, p->handle);
    p->handle = NULL;
    PyThread_release_lock(c->lock);
    Py_END_ALLOW_THREADS
}

static void plan_dealloc(PlanObject *p)
{
    plan_close_handle(p);
    plan_unlink(p);
    Py_XDECREF(p->info);
    Py_XDECREF(p->owner);
    PyObject_Free(p);
}

static PyObject *plan_close(PlanObject *p, PyObject *unused)
{
    (void)unused;
    plan_close_handle(p);
    Py_RETURN_NONE;
}

static PyObject *plan_exit(PlanObject *p, PyObject *args)
{
    (void)args;
    plan_close_handle(p);
    Py_RETURN_FALSE;
}

static PyObject *plan_get_info(PlanObject *p, void *c)
{
    (void)c;
    Py_INCREF(p->info);
    return (PyObject *)p->info;
}

static PyObject *plan_get_closed(PlanObject *p, void *c)
{
    (void)c;
    return PyBool_FromLong(p->handle == NULL);
}

static PyObject *plan_get_context(PlanObject *p, void *c)
{
    (void)c;
    Py_INCREF(p->owner);
    return (PyObject *)p->owner;
}

/* A plan call: under the owner's lock, the GIL released; closed plans fail. */
#define PLAN_CALL(p, st, expr) LOCKED((p)->owner, (p)->handle, st, expr)

static int count_arg(PyObject *o, int dflt, const char *fn, int *out)
{
    if (o == NULL || o == Py_None) {
        *out = dflt;
        return 0;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: count %ld is out of range", fn, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* ---- plans: the shared upload / run / download / execute ------------------------------- */

#define PLAN_KIND(p) (&plan_kinds[(p)->kind])

/* "<Plan>.<method>", the messages' function name. */
static const char *plan_fn(const PlanObject *p, const char *method, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%s", PLAN_KIND(p)->name, method);
    return buf;
}

/* The count argument o (None: the plan's own) of a counting kind; 0 for the others. */
static int plan_count(const PlanObject *p, PyObject *o, const char *fn, int *count)
{
    const PlanKind *k = PLAN_KIND(p);
    *count = 0;
    return k->count_at ? count_arg(o, *(const int *)((const char *)p + k->count_at), fn, count) : 0;
}

/* The inputs o[] (in argument order) checked against the plan; their data in `in`. */
static int plan_inputs(const PlanObject *p, PyObject *const o[], const char *fn,
                       PyArrayObject *a[2], const void *in[2])
{
    const PlanKind *k = PLAN_KIND(p);
    for (int i = 0; i < k->nin; ++i) {
        const PlanArray *s = &k->arrays[i];
        npy_intp sh[NPY_MAXDIMS];
        int nd = k->shape(p, i, sh);
        a[s->arg] = check_array(o[s->arg], fn, s->name, k->typenum, nd, sh, s->layout, 0);
        if (!a[s->arg]) return -1;
    }
    for (int i = 0; i < k->nin; ++i) in[i] = PyArray_DATA(a[i]);
    return 0;
}

/* The output: new or the caller's out, of the plan's shape; for an in-place kind given its
 * input, that input's values (a copy, or the input itself). */
static PyArrayObject *plan_output(const PlanObject *p, PyObject *outo, const char *fn,
                                  PyArrayObject *in)
{
    const PlanKind *k = PLAN_KIND(p);
    if (in) return inplace_output(in, outo, fn, k->out_layout);
    npy_intp sh[NPY_MAXDIMS];
    int nd = k->shape(p, k->nin, sh);
    return new_output(outo, fn, k->typenum, nd, sh, k->out_layout, 0);
}

/* execute, or upload + run + download where the library has none. */
static pk_status plan_execute_call(const PlanKind *k, void *h, const void *const in[], void *out,
                                   int count, pk_run_info *info)
{
    if (k->execute) return k->execute(h, in, out, count, info);
    pk_status st = k->upload(h, in);
    if (st == PK_OK) st = k->run(h, count, info);
    if (st == PK_OK) st = k->download(h, out);
    return st;
}

static PyObject *plan_upload_from(PlanObject *p, PyObject *const o[])
{
    char fn[64];
    PyArrayObject *a[2];
    const void *in[2];
    if (plan_inputs(p, o, plan_fn(p, "upload", fn, sizeof fn), a, in)) return NULL;
    const PlanKind *k = PLAN_KIND(p);
    pk_status st;
    PLAN_CALL(p, st, k->upload(p->handle, in));
    if (st != PK_OK) return raise_status(st, fn);
    p->uploaded = 1;
    Py_RETURN_NONE;
}

/* upload(a) */
static PyObject *plan_upload1(PlanObject *p, PyObject *o) { return plan_upload_from(p, &o); }

/* upload(u, psi) */
static PyObject *plan_upload2(PlanObject *p, PyObject *args)
{
    PyObject *o[2];
    if (!PyArg_ParseTuple(args, "OO:upload", &o[0], &o[1])) return NULL;
    return plan_upload_from(p, o);
}

static PyObject *plan_run_n(PlanObject *p, int count, const char *fn)
{
    const PlanKind *k = PLAN_KIND(p);
    RunInfoObject *ri = runinfo_new();
    if (!ri) return NULL;
    pk_status st;
    PLAN_CALL(p, st, k->run(p->handle, count, &ri->info));
    if (st != PK_OK) {
        Py_DECREF(ri);
        return raise_status(st, fn);
    }
    return (PyObject *)ri;
}

/* run() */
static PyObject *plan_run(PlanObject *p, PyObject *unused)
{
    (void)unused;
    char fn[64];
    return plan_run_n(p, 0, plan_fn(p, "run", fn, sizeof fn));
}

/* run(count=None) */
static PyObject *plan_run_counted(PlanObject *p, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"count", NULL};
    PyObject *co = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:run", kwl, &co)) return NULL;
    char fn[64];
    int count;
    if (plan_count(p, co, plan_fn(p, "run", fn, sizeof fn), &count)) return NULL;
    return plan_run_n(p, count, fn);
}

static PyObject *plan_download(PlanObject *p, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"out", NULL};
    PyObject *outo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:download", kwl, &outo)) return NULL;
    char fn[64];
    PyArrayObject *out = plan_output(p, outo, plan_fn(p, "download", fn, sizeof fn), NULL);
    if (!out) return NULL;
    const PlanKind *k = PLAN_KIND(p);
    pk_status st;
    void *data = PyArray_DATA(out);
    PLAN_CALL(p, st, k->download(p->handle, data));
    if (st != PK_OK) {
        Py_DECREF(out);
        return raise_status(st, fn);
    }
    return (PyObject *)out;
}

static PyObject *plan_execute(PlanObject *p, PyObject *args, PyObject *kw)
{
    PlanKind *k = PLAN_KIND(p);
    PyObject *o[3] = {NULL, Py_None, Py_None}; /* the inputs, [count], out */
    if (!PyArg_ParseTupleAndKeywords(args, kw, k->exec_fmt, k->exec_kw, &o[0], &o[1], &o[2]))
        return NULL;
    char fn[64];
    PyArrayObject *a[2];
    const void *in[2];
    int count, counted = k->count_at != 0;
    if (plan_inputs(p, o, plan_fn(p, "execute", fn, sizeof fn), a, in) ||
        plan_count(p, o[k->nin], fn, &count))
        return NULL;
    PyArrayObject *out = plan_output(p, o[k->nin + counted], fn, k->inplace ? a[0] : NULL);
    RunInfoObject *ri = call_info(out);
    if (!ri) return NULL;
    pk_status st;
    void *data = PyArray_DATA(out);
    PLAN_CALL(p, st, plan_execute_call(k, p->handle, in, data, count, &ri->info));
    if (st == PK_OK) p->uploaded = 0;
    return call_result(out, ri, st, fn);
}

/* ---- grid plan ------------------------------------------------------------------------- */

static PyObject *grp_execute(PlanObject *p, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"uu", "vv", "ww", "vis", "weight", "grid", "out", NULL};
    PyObject *o[5], *grido = Py_None, *outo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|$OO:execute", kwl, &o[0], &o[1], &o[2], &o[3],
                                     &o[4], &grido, &outo))
        return NULL;
    const char *fn = "GridPlan.execute";
    pk_grid_data d;
    PyObject *go = grid_out_or_alias(grido, outo, fn);
    if (!go || gr_data(o, fn, &d)) return NULL;
    PyArrayObject *g = gr_output(go, fn, p->p.gr.grid_size);
    RunInfoObject *ri = call_info(g);
    if (!ri) return NULL;
    double norm = 0;
    int64_t skipped = 0;
    pk_status st;
    float *gp = PyArray_DATA(g);
#if PKPY_HAVE_GRID_PLAN_EXECUTE
    PLAN_CALL(p, st, pk_grid_plan_execute(p->handle, &d, gp, &norm, &skipped, &ri->info));
#else
    PLAN_CALL(p, st, pk_grid_plan_run(p->handle, &d, gp, &norm, &skipped, &ri->info));
#endif
    return grid_result(g, norm, skipped, ri, st, fn);
}

/* ---- plan types ------------------------------------------------------------------------ */

static PyMethodDef plan_methods[] = {
    {"close", (PyCFunction)plan_close, METH_NOARGS,
     "Destroy the plan now (its device buffers); later calls raise StateError."},
    {"__enter__", (PyCFunction)ctx_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)plan_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef plan_getset[] = {
    {"info", (getter)plan_get_info, NULL, "RunInfo of the plan's creation", NULL},
    {"closed", (getter)plan_get_closed, NULL, "True once closed (or its context closed)", NULL},
    {"context", (getter)plan_get_context, NULL, "the Context that made the plan", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "portkern.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A kernel plan made by a Context's <kernel>_plan method: buffers (and device "
              "programs) made once; usable in a with block, which closes it.",
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_methods = plan_methods,
    .tp_getset = plan_getset,
};

static PyObject *mfp_shapes(PlanObject *p, void *c)
{
    (void)c;
    return Py_BuildValue("((nnn)(nnn))", p->in_shape[0], p->in_shape[1], p->in_shape[2],
                         p->out_shape[0], p->out_shape[1], p->out_shape[2]);
}

#define DOC_EXECUTE_INPLACE                                                                     \
    "execute(a, count=None, *, out=None) -> (out, RunInfo): count steps (default: the plan's) " \
    "on a new array, as the one-shot call does (out=None: a new copy of a; out=a: in place)."
#define DOC_DOWNLOAD "download(out=None) -> array: the resident result."

/* The methods of a resident-data plan, all shared: upload takes one array (UPLOAD_1) or two
 * (UPLOAD_2: u, psi); run takes count (RUN_COUNTED) or nothing (RUN_PLAIN). */
#define PLAN_METHODS(execute_doc, upload, upload_doc, run, run_doc)                            \
    {{"execute", (PyCFunction)(void (*)(void))plan_execute, METH_VARARGS | METH_KEYWORDS,       \
      execute_doc},                                                                             \
     {"upload", upload, upload_doc},                                                            \
     {"run", run, run_doc},                                                                     \
     {"download", (PyCFunction)(void (*)(void))plan_download, METH_VARARGS | METH_KEYWORDS,     \
      DOC_DOWNLOAD},                                                                            \
     {NULL, NULL, 0, NULL}}
#define UPLOAD_1 (PyCFunction)plan_upload1, METH_O
#define UPLOAD_2 (PyCFunction)plan_upload2, METH_VARARGS
#define RUN_COUNTED (PyCFunction)(void (*)(void))plan_run_counted, METH_VARARGS | METH_KEYWORDS
#define RUN_PLAIN (PyCFunction)plan_run, METH_NOARGS

static PyMethodDef d3p_methods[] = PLAN_METHODS(
    DOC_EXECUTE_INPLACE, UPLOAD_1, "upload(f): f becomes the resident field.", RUN_COUNTED,
    "run(count=None) -> RunInfo: count more steps on the resident field (no host copies).");
static PyMethodDef cvp_methods[] = PLAN_METHODS(
    "execute(image, *, out=None) -> (out, RunInfo): one frame with the plan's PSF.", UPLOAD_1,
    "upload(image): the resident frame.", RUN_PLAIN, "run() -> RunInfo: convolve the resident frame.");
static PyGetSetDef mfp_getset[] = {
    {"shapes", (getter)mfp_shapes, NULL, "(shape of x, shape of y)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMethodDef mfp_methods[] = PLAN_METHODS(
    "execute(x, *, out=None) -> (y, RunInfo).", UPLOAD_1, "upload(x): the resident input.",
    RUN_PLAIN, "run() -> RunInfo: y = MF x on the device.");
static PyMethodDef lpp_methods[] = PLAN_METHODS(
    DOC_EXECUTE_INPLACE, UPLOAD_1, "upload(phi): the resident field (reordered to the plan's layout).",
    RUN_COUNTED, "run(count=None) -> RunInfo: count more iterations on the resident field.");
static PyMethodDef s3p_methods[] = PLAN_METHODS(
    "execute(u, psi, *, out=None) -> (chi, RunInfo).", UPLOAD_2,
    "upload(u, psi): resident (converted to the plan's layout).", RUN_PLAIN,
    "run() -> RunInfo: chi = u psi on the device.");
static PyMethodDef dsp_methods[] = PLAN_METHODS(
    "execute(u, psi, *, out=None) -> (chi, RunInfo).", UPLOAD_2, "upload(u, psi): resident fields.",
    RUN_PLAIN, "run() -> RunInfo: chi = M psi on the device.");
static PyMethodDef grp_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))grp_execute, METH_VARARGS | METH_KEYWORDS,
     "execute(uu, vv, ww, vis, weight, *, grid=None) -> (grid, norm, num_skipped, RunInfo): "
     "grid a visibility list with the plan's kernel stack (into grid, accumulating, or a new "
     "zeroed grid)."},
    {"run", (PyCFunction)(void (*)(void))grp_execute, METH_VARARGS | METH_KEYWORDS,
     "The same as execute (grid's plan keeps only the kernel stack)."},
    {NULL, NULL, 0, NULL}};

#define PLAN_SUBTYPE(var, pyname, methods, getset, doc)                                        \
    static PyTypeObject var = {                                                                 \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = pyname,                                        \
        .tp_basicsize = sizeof(PlanObject),                                                     \
        .tp_flags = Py_TPFLAGS_DEFAULT,                                                         \
        .tp_doc = doc,                                                                          \
        .tp_dealloc = (destructor)plan_dealloc,                                                 \
        .tp_methods = methods,                                                                  \
        .tp_getset = getset,                                                                    \
    }
PLAN_SUBTYPE(D3PlanType, "portkern.Diffusion3DPlan", d3p_methods, NULL,
             "diffusion3d plan: Context.diffusion3d_plan((nz, ny, nx), count, ...).");
PLAN_SUBTYPE(CvPlanType, "portkern.Conv2DPlan", cvp_methods, NULL,
             "conv2d plan with a fixed PSF: Context.conv2d_plan((h, w), psf, method=...).");
PLAN_SUBTYPE(MfPlanType, "portkern.MagicFilter3DPlan", mfp_methods, mfp_getset,
             "magicfilter3d plan: Context.magicfilter3d_plan(x_shape, transpose=, bc=).");
PLAN_SUBTYPE(LpPlanType, "portkern.Laplace2DPlan", lpp_methods, NULL,
             "laplace2d plan: Context.laplace2d_plan(l, sigma, count, layout=, nw=).");
PLAN_SUBTYPE(S3PlanType, "portkern.SU3Plan", s3p_methods, NULL,
             "su3 plan: Context.su3_plan(nv, layout=, nw=).");
PLAN_SUBTYPE(DsPlanType, "portkern.DslashPlan", dsp_methods, NULL,
             "dslash plan: Context.dslash_plan((t, z, y, x), kappa, recon12=).");
PLAN_SUBTYPE(GrPlanType, "portkern.GridPlan", grp_methods, NULL,
             "grid plan with a fixed kernel stack: Context.grid_plan(kernels, support, ...).");
/* A call of nothing under the same lock + GIL release as a kernel call:
 * the floor of this layer's per-call cost (python/README.md, docs/PERFORMANCE.md). */
static PyObject *ctx_noop(ContextObject *self, PyObject *unused)
{
    (void)unused;
    pk_status st;
    LOCKED(self, self->ctx, st, PK_OK);
    if (st != PK_OK) return raise_status(st, "noop");
    Py_RETURN_NONE;
}

/* ---- Context type ---------------------------------------------------------------------- */

#define KW (METH_VARARGS | METH_KEYWORDS)
#define F(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef ctx_methods[] = {
    {"close", (PyCFunction)ctx_close, METH_NOARGS,
     "Destroy the context and every plan made from it (waits for a running call)."},
    {"__enter__", (PyCFunction)ctx_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)ctx_exit, METH_VARARGS, NULL},
    {"_backends", (PyCFunction)ctx_backends, METH_NOARGS, NULL},
    {"_devices", F(ctx_devices), KW, NULL},
    {"_noop", (PyCFunction)ctx_noop, METH_NOARGS, NULL},
    {"release_cache", (PyCFunction)ctx_release_cache, METH_NOARGS,
     "Free the plans the one-shot calls keep in the context."},
#if PKPY_HAVE_CACHE_LIMIT
    {"set_cache_limit", (PyCFunction)ctx_set_cache_limit, METH_O,
     "set_cache_limit(nbytes): the ceiling of what the plans kept by one-shot calls may hold "
     "(0: keep none); plans beyond it are dropped now."},
#endif
#if PKPY_HAVE_PARAMS
    {"set_param", (PyCFunction)ctx_set_param, METH_VARARGS,
     "set_param(name, value): set a tuning parameter (portkern.params()) of this context; value "
     "a str or an int, None: back to the environment's value or the default.  The plans the "
     "one-shot calls keep are released; plans made before keep their settings."},
    {"get_param", (PyCFunction)ctx_get_param, METH_VARARGS,
     "get_param(name) -> (value, source): the value as text and where it came from, "
     "'default', 'env' or 'caller'."},
#endif
#if PKPY_HAVE_WISDOM
    {"wisdom_load", (PyCFunction)ctx_wisdom_load, METH_VARARGS,
     "wisdom_load(path=None): add the entries of a wisdom file (None: PORTKERN_WISDOM, else "
     "the default file; a missing default file is no error)."},
    {"wisdom_save", (PyCFunction)ctx_wisdom_save, METH_VARARGS,
     "wisdom_save(path=None): merge the context's entries into a wisdom file (under its lock, "
     "written whole)."},
    {"wisdom_forget", (PyCFunction)ctx_wisdom_forget, METH_NOARGS,
     "Drop the context's wisdom entries."},
    {"wisdom", (PyCFunction)ctx_wisdom, METH_NOARGS,
     "wisdom() -> the context's entries, a list of dicts."},
    {"wisdom_note", (PyCFunction)ctx_wisdom_note, METH_NOARGS,
     "Why the last load ignored its file ('' when it did not)."},
#endif
    {"measure_bandwidth", F(ctx_measure_bandwidth), KW,
     "measure_bandwidth(backend, device=0, nbytes=0, reps=3) -> bytes read + written per second."},
    {"diffusion3d", F(ctx_diffusion3d), KW,
     "diffusion3d(f, count, *, cc=, cw=, ce=, cs=, cn=, cb=, ct=, out=None, variant=None) -> "
     "(f', RunInfo)"},
    {"conv2d", F(ctx_conv2d), KW,
     "conv2d(image, psf, *, method='auto', out=None, variant=None) -> (out, RunInfo)"},
    {"magicfilter3d", F(ctx_magicfilter3d), KW,
     "magicfilter3d(x, *, transpose=False, bc='periodic', out=None, variant=None) -> (y, RunInfo)"},
    {"laplace2d", F(ctx_laplace2d), KW,
     "laplace2d(phi, sigma, count, *, layout='auto', nw=0, out=None, variant=None) -> (phi', RunInfo)"},
    {"su3", F(ctx_su3), KW,
     "su3(u, psi, *, layout='aos', nw=0, out=None, variant=None) -> (chi, RunInfo)"},
    {"dslash", F(ctx_dslash), KW,
     "dslash(u, psi, kappa, *, recon12=False, out=None, variant=None) -> (chi, RunInfo)"},
    {"grid", F(ctx_grid), KW,
     "grid(uu, vv, ww, vis, weight, kernels, support, *, oversample, cell_size, w_scale, "
     "grid_size, tile_size=0, central_radius=0, tile_factor=None, grid=None, variant=None) -> "
     "(grid, norm, num_skipped, RunInfo)"},
#if PKPY_HAVE_IMAGE
    {"image", F(ctx_image), KW,
     "image(uu, vv, ww, vis, weight, kernels, support, *, oversample, cell_size, w_scale, "
     "grid_size, image_size, tile_size=0, central_radius=0, tile_factor=None, out=None, "
     "variant=None) -> (image, norm, num_skipped, RunInfo)"},
    {"degrid", F(ctx_degrid), KW,
     "degrid(uu, vv, ww, kernels, support, model, *, oversample, cell_size, w_scale, "
     "grid_size, weight=None, tile_size=0, central_radius=0, tile_factor=None, out=None, "
     "variant=None) -> (vis, num_skipped, RunInfo)"},
#endif
    {"diffusion3d_plan", F(ctx_diffusion3d_plan), KW,
     "diffusion3d_plan((nz, ny, nx), count=0, *, cc=..., variant=None) -> Diffusion3DPlan"},
    {"conv2d_plan", F(ctx_conv2d_plan), KW,
     "conv2d_plan((h, w), psf, *, method='auto', variant=None) -> Conv2DPlan"},
    {"magicfilter3d_plan", F(ctx_magicfilter3d_plan), KW,
     "magicfilter3d_plan(x_shape, *, transpose=False, bc='periodic', variant=None) -> MagicFilter3DPlan"},
    {"laplace2d_plan", F(ctx_laplace2d_plan), KW,
     "laplace2d_plan(l, sigma, count=0, *, layout='auto', nw=0, variant=None) -> Laplace2DPlan"},
    {"su3_plan", F(ctx_su3_plan), KW, "su3_plan(nv, *, layout='aos', nw=0, variant=None) -> SU3Plan"},
    {"dslash_plan", F(ctx_dslash_plan), KW,
     "dslash_plan((t, z, y, x), kappa, *, recon12=False, variant=None) -> DslashPlan"},
    {"grid_plan", F(ctx_grid_plan), KW,
     "grid_plan(kernels, support, *, oversample, cell_size, w_scale, grid_size, ...) -> GridPlan"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ctx_getset[] = {
    {"closed", (getter)ctx_closed, NULL, "True once closed", NULL},
    {"backend", (getter)ctx_backend, NULL, "the backend asked for (\"auto\", ...)", NULL},
    {"device", (getter)ctx_device, NULL, "the device index asked for, or None", NULL},
    {"threads", (getter)ctx_threads, NULL, "the OpenMP threads asked for, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "portkern._core.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Context(backend='auto', device=None, threads=None, *, ignore_env=False, "
              "params=None)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ctx_init,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
};

/* ---------------------------------------------------------------------------------------- */
/* Module functions                                                                         */

static PyObject *m_version(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyUnicode_FromString(pk_version());
}

static int kernel_variants_fn(const char *k, const char *(**fn)(pk_backend_id))
{
    static const struct {
        const char *name;
        const char *(*fn)(pk_backend_id);
    } t[] = {{"diffusion3d", pk_diffusion3d_variants}, {"conv2d", pk_conv2d_variants},
             {"magicfilter3d", pk_magicfilter3d_variants}, {"laplace2d", pk_laplace2d_variants},
             {"su3", pk_su3_variants}, {"dslash", pk_dslash_variants}, {"grid", pk_grid_variants}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; ++i)
        if (strcmp(k, t[i].name) == 0) {
            *fn = t[i].fn;
            return 0;
        }
    return -1;
}

/* variants(kernel, backend) -> [names] (built ones; [] for a backend without the kernel). */
static PyObject *m_variants(PyObject *m, PyObject *args)
{
    (void)m;
    const char *k, *b;
    if (!PyArg_ParseTuple(args, "ss:variants", &k, &b)) return NULL;
    const char *(*fn)(pk_backend_id);
    if (kernel_variants_fn(k, &fn)) {
        PyErr_Format(PyExc_ValueError, "variants: unknown kernel '%s' (diffusion3d, conv2d, "
                     "magicfilter3d, laplace2d, su3, dslash, grid)", k);
        return NULL;
    }
    pk_backend_id id;
    if (pk_backend_from_name(b, &id) != PK_OK || id == PK_BACKEND_AUTO) {
        PyErr_Format(PyExc_ValueError, "variants: backend must be serial, openmp, opencl or cuda, got '%s'", b);
        return NULL;
    }
    const char *s = fn(id);
    PyObject *str = PyUnicode_FromString(s ? s : "");
    if (!str) return NULL;
    PyObject *list = NULL;
    if (!s || !*s) list = PyList_New(0);
    else {
        PyObject *sep = PyUnicode_FromString(",");
        if (sep) list = PyUnicode_Split(str, sep, -1);
        Py_XDECREF(sep);
    }
    Py_DECREF(str);
    return list;
}

static PyObject *m_diffusion3d_field(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwl[] = {"shape", "t", NULL};
    int nz, ny, nx;
    double t = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(iii)|d:diffusion3d_field", kwl, &nz, &ny, &nx, &t))
        return NULL;
    if (nx < 1 || ny < 1 || nz < 1) {
        PyErr_Format(PyExc_ValueError, "diffusion3d_field: shape must be >= 1 per axis, got (%d, %d, %d)",
                     nz, ny, nx);
        return NULL;
    }
    npy_intp sh[3] = {nz, ny, nx};
    PyArrayObject *f = new_array(3, sh, NPY_FLOAT32, 0);
    if (!f) return NULL;
    pk_status st;
    float *fp = PyArray_DATA(f);
    Py_BEGIN_ALLOW_THREADS st = pk_diffusion3d_field(nx, ny, nz, t, fp);
    Py_END_ALLOW_THREADS
    if (st != PK_OK) {
        Py_DECREF(f);
        return raise_status(st, "diffusion3d_field");
    }
    return (PyObject *)f;
}

static PyObject *m_diffusion3d_params(PyObject *m, PyObject *args)
{
    (void)m;
    int nz, ny, nx, count = 0;
    if (!PyArg_ParseTuple(args, "(iii)|i:diffusion3d_params", &nz, &ny, &nx, &count)) return NULL;
    pk_diffusion3d_params p;
    pk_diffusion3d_params_default(&p, nx, ny, nz, count);
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "cc", p.cc, "cw", p.cw, "ce", p.ce,
                         "cs", p.cs, "cn", p.cn, "cb", p.cb, "ct", p.ct, "dt",
                         pk_diffusion3d_dt(nx));
}

/* lqcd_random(kind, seed, out): fill a C-contiguous complex128 array. */
static PyObject *m_lqcd_random(PyObject *m, PyObject *args)
{
    (void)m;
    const char *kind;
    unsigned long long seed;
    PyObject *o;
    if (!PyArg_ParseTuple(args, "sKO:lqcd_random", &kind, &seed, &o)) return NULL;
    int su3 = strcmp(kind, "su3") == 0;
    PyArrayObject *a;
    if (su3) {
        if (!PyArray_Check(o) || PyArray_NDIM((PyArrayObject *)o) < 2) {
            PyErr_SetString(PyExc_ValueError, "lqcd_random: out must be [..., 3, 3]");
            return NULL;
        }
        int nd = PyArray_NDIM((PyArrayObject *)o);
        npy_intp sh[NPY_MAXDIMS];
        for (int i = 0; i < nd; ++i) sh[i] = -1;
        sh[nd - 2] = sh[nd - 1] = 3;
        a = check_array(o, "su3", "out", NPY_COMPLEX128, nd, sh, "[..., 3, 3]", 1);
    } else {
        int nd = PyArray_Check(o) ? PyArray_NDIM((PyArrayObject *)o) : 1;
        a = check_array(o, "complex", "out", NPY_COMPLEX128, nd, NULL, "", 1);
    }
    if (!a) return NULL;
    size_t n = (size_t)PyArray_SIZE(a) / (su3 ? 9 : 1);
    double *d = PyArray_DATA(a);
    pk_status st = PK_OK;
    if (n) {
        Py_BEGIN_ALLOW_THREADS st = su3 ? pk_lqcd_random_su3(seed, n, d) : pk_lqcd_random_complex(seed, n, d);
        Py_END_ALLOW_THREADS
    }
    if (st != PK_OK) return raise_status(st, su3 ? "gen.su3" : "gen.complex_gaussian");
    Py_RETURN_NONE;
}

static PyObject *m_magicfilter_taps(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    const double *t = pk_magicfilter_taps();
    npy_intp n = 16;
    PyArrayObject *a = new_array(1, &n, NPY_FLOAT64, 0);
    if (a) memcpy(PyArray_DATA(a), t, 16 * sizeof(double));
    return (PyObject *)a;
}

static PyObject *m_magicfilter3d_shapes(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwl[] = {"x_shape", "transpose", "bc", NULL};
    int a, b, c, transpose = 0, bc = PK_MF_PERIODIC;
    PyObject *bco = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "(iii)|$pO:magicfilter3d_shapes", kwl, &a, &b, &c,
                                     &transpose, &bco))
        return NULL;
    npy_intp xs[3] = {a, b, c}, in[3], os[3];
    pk_magicfilter3d_params p;
    if ((bco && parse_choice(bco, "magicfilter3d_shapes", "bc", mf_bcs, &bc)) ||
        mf_params(xs, transpose, bc, "magicfilter3d_shapes", &p, in, os))
        return NULL;
    return Py_BuildValue("(nnn)", os[0], os[1], os[2]);
}

static PyObject *m_grid_compact_kernels(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwl[] = {"kernels", "support", "oversample", NULL};
    PyObject *ko, *so;
    int oversample;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi:compact_kernels", kwl, &ko, &so, &oversample))
        return NULL;
    const char *fn = "compact_kernels";
    pk_grid_params p;
    pk_grid_params_init(&p);
    p.oversample = oversample;
    p.cell_size_rad = 1e-3; /* only the stack is checked: the smallest grid that holds it */
    p.grid_size = 2;
    if (PyArray_Check(so) && PyArray_TYPE((PyArrayObject *)so) == NPY_INT32 &&
        PyArray_NDIM((PyArrayObject *)so) == 1 && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)so)) {
        const int32_t *sv = PyArray_DATA((PyArrayObject *)so);
        for (npy_intp i = 0; i < PyArray_DIM((PyArrayObject *)so, 0); ++i)
            if (sv[i] > 0 && sv[i] < INT_MAX / 2 - 1 && 2 * sv[i] + 2 > p.grid_size)
                p.grid_size = 2 * sv[i] + 2;
    }
    PyArrayObject *k, *s;
    if (PyArray_Check(ko) && PyArray_NDIM((PyArrayObject *)ko) == 1) {
        PyErr_Format(PyExc_ValueError, "%s: kernels must be a FULL stack [planes, half, half]", fn);
        return NULL;
    }
    if (gr_stack(ko, so, fn, &p, &k, &s)) return NULL;
    pk_grid_params pc = p;
    pc.kernel_layout = PK_GRID_KERNELS_COMPACT;
    size_t n = 0;
    pk_status st = pk_grid_kernel_count(&pc, PyArray_DATA(s), &n);
    if (st != PK_OK) return raise_status(st, fn);
    npy_intp nn = (npy_intp)n;
    PyArrayObject *out = new_array(1, &nn, NPY_COMPLEX64, 0);
    if (!out) return NULL;
    st = pk_grid_compact_kernels(&p, PyArray_DATA(s), PyArray_DATA(k), PyArray_DATA(out));
    if (st != PK_OK) {
        Py_DECREF(out);
        return raise_status(st, fn);
    }
    return (PyObject *)out;
}

/* diff(x, y, rtol, zero, norm): x, y C-contiguous float32 or float64 of one size. */
static PyObject *m_diff(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *xo, *yo;
    double rtol, zero;
    int norm;
    if (!PyArg_ParseTuple(args, "OOddp:diff", &xo, &yo, &rtol, &zero, &norm)) return NULL;
    if (!PyArray_Check(xo) || !PyArray_Check(yo)) {
        PyErr_SetString(PyExc_TypeError, "diff: numpy arrays expected");
        return NULL;
    }
    int t = PyArray_TYPE((PyArrayObject *)xo);
    if (t != NPY_FLOAT32 && t != NPY_FLOAT64) {
        PyErr_SetString(PyExc_TypeError, "diff: float32 or float64 expected");
        return NULL;
    }
    int nd = PyArray_NDIM((PyArrayObject *)xo);
    PyArrayObject *x = check_array(xo, "diff", "a", t, nd, NULL, "", 0);
    if (!x) return NULL;
    PyArrayObject *y = check_array(yo, "diff", "b", t, nd, PyArray_DIMS(x), "(the shape of a)", 0);
    if (!y) return NULL;
    pk_diff_report r;
    pk_status st;
    size_t n = (size_t)PyArray_SIZE(x);
    const void *xp = PyArray_DATA(x), *yp = PyArray_DATA(y);
    int mode = norm ? PK_DIFF_NORM : PK_DIFF_ELEMENTWISE;
    Py_BEGIN_ALLOW_THREADS st = t == NPY_FLOAT32 ? pk_diff_f32(xp, yp, n, rtol, zero, mode, &r)
                                                 : pk_diff_f64(xp, yp, n, rtol, zero, mode, &r);
    Py_END_ALLOW_THREADS
    if (st != PK_OK && st != PK_EMISMATCH) return raise_status(st, "diff");
    return Py_BuildValue("{s:N,s:n,s:n,s:n,s:d,s:d,s:d}", "equal", PyBool_FromLong(r.equal),
                         "count", (Py_ssize_t)r.count, "num_failed", (Py_ssize_t)r.num_failed,
                         "first_fail", r.first_fail == (size_t)-1 ? (Py_ssize_t)-1 : (Py_ssize_t)r.first_fail,
                         "max_rel_err", r.max_rel_err, "max_abs_err", r.max_abs_err,
                         "norm_rel_err", r.norm_rel_err);
}

static PyObject *m_status_names(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int s = 0; s >= PK_EINTERNAL; --s) {
        PyObject *k = PyLong_FromLong(s);
        PyObject *v = Py_BuildValue("(ss)", pk_status_name(s), pk_strerror(s));
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}


#if PKPY_HAVE_GEN
/* ---------------------------------------------------------------------------------------- */
/* Generators whose outputs the library allocates                                           */

static void free_capsule(PyObject *cap) { free(PyCapsule_GetPointer(cap, NULL)); }

/* The library's malloc'ed pk_array as an ndarray owning it (no copy: a capsule that frees
 * it is the array's base).  a->data is taken over (NULL after). */
static PyObject *adopt_array(pk_array *a)
{
    static const int types[] = {0, NPY_FLOAT32, NPY_FLOAT64, NPY_COMPLEX64, NPY_COMPLEX128,
                                NPY_INT32, NPY_INT64};
    npy_intp sh[PK_NPY_MAX_DIMS];
    for (int i = 0; i < a->ndim; ++i) sh[i] = (npy_intp)a->shape[i];
    PyObject *cap = PyCapsule_New(a->data, NULL, free_capsule);
    if (!cap) return NULL; /* a->data stays with *a: pk_grid_dataset_free frees it */
    a->data = NULL;
    PyObject *arr = PyArray_SimpleNewFromData(a->ndim, sh, types[a->dtype],
                                              PyCapsule_GetPointer(cap, NULL));
    if (!arr || PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
        Py_XDECREF(arr);
        Py_DECREF(cap);
        return NULL;
    }
    return arr;
}

/* grid_generate(dataset, scale, seed, layout, unit_vis, full) -> (arrays and gridding
 * parameters: ctx.grid's keywords, info dict). */
static PyObject *m_grid_generate(PyObject *m, PyObject *args)
{
    (void)m;
    pk_grid_gen_options o;
    pk_grid_gen_options_init(&o);
    unsigned long long seed;
    int unit_vis, full;
    if (!PyArg_ParseTuple(args, "sdKzpp:grid_generate", &o.dataset, &o.scale, &seed,
                          &o.layout_path, &unit_vis, &full))
        return NULL;
    o.seed = seed;
    o.unit_vis = unit_vis;
    o.kernel_layout = full ? PK_GRID_KERNELS_FULL : PK_GRID_KERNELS_COMPACT;
    pk_grid_dataset d;
    pk_status st;
    Py_BEGIN_ALLOW_THREADS st = pk_grid_generate(&o, &d);
    Py_END_ALLOW_THREADS
    if (st != PK_OK) {
        pk_grid_dataset_free(&d);
        return raise_status(st, "gen.grid");
    }
    PyObject *arr[7] = {NULL};
    pk_array *src[7] = {&d.uu, &d.vv, &d.ww, &d.vis, &d.weight, &d.kernels, &d.support};
    PyObject *res = NULL;
    int okay = 1;
    for (int i = 0; i < 7 && okay; ++i) okay = (arr[i] = adopt_array(src[i])) != NULL;
    if (!okay)
        for (int i = 0; i < 7; ++i) Py_XDECREF(arr[i]);
    else /* N steals the arrays, on failure too */
        res = Py_BuildValue(
            "({s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:i,s:d,s:d,s:i}"
            "{s:s,s:s,s:n,s:i,s:i,s:i,s:i,s:s,s:d,s:d,s:n,s:i,s:i,s:d})",
            "uu", arr[0], "vv", arr[1], "ww", arr[2], "vis", arr[3], "weight", arr[4], "kernels",
            arr[5], "support", arr[6], "oversample", d.params.oversample, "cell_size",
            d.params.cell_size_rad, "w_scale", d.params.w_scale, "grid_size", d.params.grid_size,
            "dataset", d.name, "recipe", d.recipe, "num_vis", (Py_ssize_t)d.data.num_vis,
            "num_w_planes", d.params.num_w_planes, "max_support", d.max_support, "image_size",
            d.image_size, "fft_size", d.fft_size, "kernel_layout", full ? "full" : "compact",
            "max_w", d.max_w, "max_abs_w_data", d.max_abs_w, "num_beyond_max_w",
            (Py_ssize_t)d.num_beyond_max_w, "num_stations", d.num_stations, "num_times",
            d.num_times, "frequency_hz", d.frequency_hz);
    pk_grid_dataset_free(&d); /* what was not adopted */
    return res;
}

/* conv2d_generate(h, w, kh, kw, seed) -> (image, psf). */
static PyObject *m_conv2d_generate(PyObject *m, PyObject *args)
{
    (void)m;
    pk_conv2d_params p = {0, 0, 0, 0, PK_CONV2D_AUTO};
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "iiiiK:conv2d_generate", &p.h, &p.w, &p.kh, &p.kw, &seed))
        return NULL;
    if (seed > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "gen.conv2d: seed must be in [0, 2**32 - 1], got %llu",
                     seed);
        return NULL;
    }
    if (p.h < 1 || p.w < 1 || p.kh < 1 || p.kw < 1) { /* the library's message, before allocating */
        pk_status st = pk_conv2d_generate(&p, (uint32_t)seed, NULL, NULL);
        return raise_status(st, "gen.conv2d");
    }
    const npy_intp ish[2] = {p.h, p.w}, ksh[2] = {p.kh, p.kw};
    PyArrayObject *img = new_array(2, ish, NPY_FLOAT32, 0);
    PyArrayObject *psf = img ? new_array(2, ksh, NPY_FLOAT32, 0) : NULL;
    if (!psf) {
        Py_XDECREF(img);
        return NULL;
    }
    float *ip = PyArray_DATA(img), *pp = PyArray_DATA(psf);
    pk_status st;
    Py_BEGIN_ALLOW_THREADS st = pk_conv2d_generate(&p, (uint32_t)seed, ip, pp);
    Py_END_ALLOW_THREADS
    if (st != PK_OK) {
        Py_DECREF(img);
        Py_DECREF(psf);
        return raise_status(st, "gen.conv2d");
    }
    return Py_BuildValue("(NN)", img, psf);
}
#endif

#if PKPY_HAVE_PARAMS
/* param_list() -> [(name, env, env_alias or None, values, default, doc)], pk_param_info's. */
static PyObject *m_param_list(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < pk_param_count(); ++i) {
        pk_param_desc d;
        pk_status st = pk_param_info(i, &d);
        if (st != PK_OK) {
            Py_DECREF(list);
            return raise_status(st, "params");
        }
        PyObject *t = Py_BuildValue("(sszsss)", d.name, d.env, d.env_alias, d.values, d.def, d.doc);
        if (!t || PyList_Append(list, t) != 0) Py_CLEAR(list);
        Py_XDECREF(t);
    }
    return list;
}
#endif


static PyMethodDef module_methods[] = {
    {"version", m_version, METH_NOARGS, "pk_version(): the loaded library's version."},
    {"variants", m_variants, METH_VARARGS, "variants(kernel, backend) -> list of variant names."},
    {"diffusion3d_field", F(m_diffusion3d_field), KW, NULL},
    {"diffusion3d_params", m_diffusion3d_params, METH_VARARGS, NULL},
    {"lqcd_random", m_lqcd_random, METH_VARARGS, NULL},
    {"magicfilter_taps", m_magicfilter_taps, METH_NOARGS, "The 16 taps f_-8 .. f_7."},
    {"magicfilter3d_shapes", F(m_magicfilter3d_shapes), KW, NULL},
    {"compact_kernels", F(m_grid_compact_kernels), KW, NULL},
#if PKPY_HAVE_GEN
    {"grid_generate", m_grid_generate, METH_VARARGS, NULL},
    {"conv2d_generate", m_conv2d_generate, METH_VARARGS, NULL},
#endif
#if PKPY_HAVE_PARAMS
    {"param_list", m_param_list, METH_NOARGS, NULL},
#endif
#if PKPY_HAVE_IMAGE
    {"write_fits", m_write_fits, METH_VARARGS, NULL},
#endif
    {"diff", m_diff, METH_VARARGS, NULL},
    {"status_names", m_status_names, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};


static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "portkern._core",
                                       "The C extension of portkern (use the portkern package).",
                                       -1, module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *errs = PyImport_ImportModule("portkern._errors");
    if (!errs) return NULL;
    g_make_error = PyObject_GetAttrString(errs, "make");
    Py_DECREF(errs);
    if (!g_make_error) return NULL;

    PyTypeObject *subs[] = {&D3PlanType, &CvPlanType, &MfPlanType, &LpPlanType,
                            &S3PlanType, &DsPlanType, &GrPlanType};
    if (PyType_Ready(&RunInfoType) < 0 || PyType_Ready(&PlanType) < 0) return NULL;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; ++i) {
        subs[i]->tp_base = &PlanType;
        if (PyType_Ready(subs[i]) < 0) return NULL;
    }
    if (PyType_Ready(&ContextType) < 0) return NULL;

    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    struct {
        const char *name;
        PyTypeObject *t;
    } types[] = {{"RunInfo", &RunInfoType}, {"Context", &ContextType}, {"Plan", &PlanType},
                 {"Diffusion3DPlan", &D3PlanType}, {"Conv2DPlan", &CvPlanType},
                 {"MagicFilter3DPlan", &MfPlanType}, {"Laplace2DPlan", &LpPlanType},
                 {"SU3Plan", &S3PlanType}, {"DslashPlan", &DsPlanType}, {"GridPlan", &GrPlanType}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
        Py_INCREF(types[i].t);
        if (PyModule_AddObject(m, types[i].name, (PyObject *)types[i].t) < 0) {
            Py_DECREF(types[i].t);
            Py_DECREF(m);
            return NULL;
        }
    }
    PyModule_AddStringConstant(m, "HEADER_VERSION", PORTKERN_VERSION_STRING);
    PyObject *pe = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "diffusion3d", PyBool_FromLong(1),
                                 "magicfilter3d", PyBool_FromLong(1), "laplace2d", PyBool_FromLong(1),
                                 "conv2d", PyBool_FromLong(PKPY_HAVE_CONV2D_PLAN_EXECUTE),
                                 "su3", PyBool_FromLong(PKPY_HAVE_SU3_PLAN_EXECUTE),
                                 "dslash", PyBool_FromLong(PKPY_HAVE_DSLASH_PLAN_EXECUTE),
                                 "grid", PyBool_FromLong(PKPY_HAVE_GRID_PLAN_EXECUTE));
    if (!pe || PyModule_AddObject(m, "NATIVE_PLAN_EXECUTE", pe) < 0) {
        Py_XDECREF(pe);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
