# cuda/: CUDA kernels (*.cu) behind extern "C" launchers, and the CUDA backend's table.
# Built when configure found nvcc; linked with the static CUDA runtime (no libcudart.so).
# Each kernel's .cu is listed in kernels.mk (PK_CUDA_FILES).
EXTRA_DIST += $(PK_CUDA_FILES) cuda/runtime.cu cuda/cuda_internal.h cuda/backend_cuda.c
if HAVE_CUDA
libportkern_la_SOURCES += \
	cuda/cuda_internal.h \
	cuda/backend_cuda.c \
	cuda/runtime.cu \
	$(PK_CUDA_FILES)
libportkern_la_LIBADD += $(CUDA_LIBS)
endif

# libtool eats -Xcompiler and appends -fPIC -DPIC, which nvcc rejects: hence -prefer-non-pic
# and --compiler-options.
.cu.lo:
	$(AM_V_CC)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) \
	  --mode=compile $(NVCC) -prefer-non-pic $(CUDA_ARCH_FLAGS) -O3 -std=c++17 \
	  -I$(top_srcdir)/lib -I$(top_srcdir)/cuda -I$(top_builddir) -DPK_BUILDING_LIBRARY \
	  $(NVCCFLAGS) --compiler-options -fPIC,-fvisibility=hidden -c -o $@ $<
