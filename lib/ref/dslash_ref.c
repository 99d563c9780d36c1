/* dslash_ref.c - serial reference of dslash (KERNELS.md section 4). PLACEHOLDER. */
#include "internal.h"
