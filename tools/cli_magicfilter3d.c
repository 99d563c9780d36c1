/* PLACEHOLDER: portkern run/gen/bench magicfilter3d. */
#include "cli_common.h"
typedef int cli_mf_placeholder;
