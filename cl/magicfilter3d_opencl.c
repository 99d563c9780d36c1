/* PLACEHOLDER: the OpenCL backend's magicfilter3d plan. */
#include "opencl_internal.h"
typedef int pk_mf_opencl_placeholder;
