/* laplace2d_ref.c - serial reference of laplace2d (KERNELS.md section 4). PLACEHOLDER. */
#include "internal.h"
