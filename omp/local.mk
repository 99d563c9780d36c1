# omp/: the OpenMP backend (table in omp/backend_openmp.c); each kernel's file
# (omp/<kernel>_omp.c) is listed in kernels.mk.
libportkern_la_SOURCES += \
	omp/backend_openmp.c \
	omp/omp_internal.h
# conv2d's fft variant (configure: PK_HAVE_FFTW; empty flags without FFTW).
AM_CPPFLAGS += $(FFTW_CFLAGS)
libportkern_la_LIBADD += $(FFTW_LIBS)
