# cl/: OpenCL kernel sources (*.cl, embedded into the library as C strings at build time,
# with a build-time hash of each source for the binary cache key) and the OpenCL backend.
PK_CL_KERNELS = cl/diffusion3d.cl cl/conv2d.cl cl/magicfilter3d.cl cl/bandwidth.cl \
	cl/laplace2d.cl cl/su3.cl cl/dslash.cl cl/grid.cl cl/degrid.cl cl/image.cl
EXTRA_DIST += $(PK_CL_KERNELS)
if HAVE_OPENCL
libportkern_la_SOURCES += \
	cl/backend_opencl.c \
	cl/opencl_internal.h \
	cl/diffusion3d_opencl.c \
	cl/conv2d_opencl.c \
	cl/magicfilter3d_opencl.c \
	cl/grid_opencl.c \
	cl/degrid_opencl.c \
	cl/fft_opencl.c \
	cl/image_opencl.c \
	cl/laplace2d_opencl.c \
	cl/su3_opencl.c \
	cl/dslash_opencl.c
PK_CL_EMBEDDED = cl/diffusion3d_cl.h cl/conv2d_cl.h cl/magicfilter3d_cl.h cl/bandwidth_cl.h \
	cl/laplace2d_cl.h cl/su3_cl.h cl/dslash_cl.h cl/grid_cl.h cl/degrid_cl.h cl/image_cl.h
nodist_libportkern_la_SOURCES += $(PK_CL_EMBEDDED)
BUILT_SOURCES += $(PK_CL_EMBEDDED)
CLEANFILES += $(PK_CL_EMBEDDED)
libportkern_la_LIBADD += $(OPENCL_LIBS)
endif

# One string literal per source line; a VPATH-safe rule (reads $<, writes the build dir).
cl/%_cl.h: cl/%.cl
	$(AM_V_GEN)$(MKDIR_P) cl && name=`basename $< .cl` && \
	{ echo "/* generated from $$name.cl by cl/local.mk - do not edit */"; \
	  echo "static const char pk_cl_src_$${name}[] ="; \
	  $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ";"; \
	  echo "static const char pk_cl_hash_$${name}[] = \"`cksum < $< | $(AWK) '{print $$1 "-" $$2}'`\";"; \
	} > $@-t && mv $@-t $@
