/* grid_gen.c - the data sets of `portkern gen grid`.  PLACEHOLDER: not written yet. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "grid_gen.h"
