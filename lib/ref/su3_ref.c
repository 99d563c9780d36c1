/* su3_ref.c - serial reference of su3 (KERNELS.md section 4). PLACEHOLDER. */
#include "internal.h"
