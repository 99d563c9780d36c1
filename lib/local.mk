# lib/: public header, runtime (context, registry, errors, probe), differ, .npy I/O,
# serial references (lib/ref/) and data generators (lib/gen/).
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
	lib/diffusion3d.c \
	lib/diffusion3d_serial.c \
	lib/conv2d.c \
	lib/conv2d_host.h \
	lib/conv2d_serial.c \
	lib/magicfilter3d.c \
	lib/magicfilter3d_host.h \
	lib/magicfilter3d_serial.c \
	lib/magicfilter3d_simd.c \
	lib/grid.c \
	lib/grid_host.h \
	lib/grid_serial.c \
	lib/image.c \
	lib/degrid_serial.c \
	lib/laplace2d.c \
	lib/laplace2d_host.h \
	lib/laplace2d_serial.c \
	lib/su3.c \
	lib/su3_host.h \
	lib/lattice_index.h \
	lib/su3_serial.c \
	lib/dslash.c \
	lib/dslash_host.h \
	lib/dslash_serial.c \
	lib/differ.c \
	lib/npy.c \
	lib/fits.c \
	lib/ref/diffusion3d_ref.c \
	lib/ref/conv2d_ref.c \
	lib/ref/magicfilter3d_ref.c \
	lib/ref/grid_ref.c \
	lib/ref/degrid_ref.c \
	lib/ref/laplace2d_ref.c \
	lib/ref/su3_ref.c \
	lib/ref/dslash_ref.c \
	lib/gen/diffusion3d_gen.c \
	lib/gen/lqcd_gen.c \
	lib/gen/generate.c \
	lib/gen/conv2d_gen.c \
	lib/gen/conv2d_gen.h \
	lib/gen/grid_gen.c \
	lib/gen/grid_gen.h
# The grid data sets' w-kernels (pk_grid_generate): FFTW in double precision (configure:
# PK_HAVE_FFTW3; empty flags without it, and pk_grid_generate says PK_EUNSUPPORTED).
AM_CPPFLAGS += $(FFTW3_CFLAGS)
libportkern_la_LIBADD += $(FFTW3_LIBS)
# FITS images (pk_fits_write_image): cfitsio when configure found it (PK_HAVE_CFITSIO).
AM_CPPFLAGS += $(CFITSIO_CFLAGS)
libportkern_la_LIBADD += $(CFITSIO_LIBS)
