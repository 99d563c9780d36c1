# omp/: the OpenMP backend (table in omp/backend_openmp.c), one file per kernel family.
libportkern_la_SOURCES += \
	omp/backend_openmp.c \
	omp/omp_internal.h \
	omp/diffusion3d_omp.c \
	omp/conv2d_omp.c \
	omp/magicfilter3d_omp.c \
	omp/grid_omp.c \
	omp/degrid_omp.c \
	omp/laplace2d_omp.c \
	omp/su3_omp.c \
	omp/dslash_omp.c
# conv2d's fft variant (configure: PK_HAVE_FFTW; empty flags without FFTW).
AM_CPPFLAGS += $(FFTW_CFLAGS)
libportkern_la_LIBADD += $(FFTW_LIBS)
