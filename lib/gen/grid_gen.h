/* grid_gen.h - the data sets of `portkern gen grid` (KERNELS.md section 1): w-kernel stacks
 * by the OSKAR/CASA recipe and SKA1-LOW uv tracks.  Compiled into the tool and the tests
 * (not exported by the library).  PLACEHOLDER: not written yet. */
#ifndef PK_GRID_GEN_H
#define PK_GRID_GEN_H
#include "portkern.h"
#endif
