# omp/: the OpenMP backend (table in omp/backend_openmp.c), one file per kernel family.
libportkern_la_SOURCES += \
	omp/backend_openmp.c \
	omp/omp_internal.h \
	omp/diffusion3d_omp.c
