# lib/: public header, runtime (context, registry, errors, probe), differ, .npy I/O and the
# data generators' shared parts (lib/gen/).  Each kernel's descriptor, serial file and
# reference (lib/ref/) are listed in kernels.mk.
libportkern_la_SOURCES += \
	lib/internal.h \
	lib/error.c \
	lib/util.c \
	lib/fftw_planner.c \
	lib/cpu.c \
	lib/context.c \
	lib/tuning.c \
	lib/backend_serial.c \
	lib/dispatch.c \
	lib/cost.c \
	lib/wisdom.c \
	lib/wisdom_store.c \
	lib/lattice_index.h \
	lib/differ.c \
	lib/npy.c \
	lib/fits.c \
	lib/gen/lqcd_gen.c \
	lib/gen/generate.c
# The grid data sets' w-kernels (pk_grid_generate): FFTW in double precision (configure:
# PK_HAVE_FFTW3; empty flags without it, and pk_grid_generate says PK_EUNSUPPORTED).
AM_CPPFLAGS += $(FFTW3_CFLAGS)
libportkern_la_LIBADD += $(FFTW3_LIBS)
# FITS images (pk_fits_write_image): cfitsio when configure found it (PK_HAVE_CFITSIO).
AM_CPPFLAGS += $(CFITSIO_CFLAGS)
libportkern_la_LIBADD += $(CFITSIO_LIBS)
