# cl/: OpenCL kernel sources (*.cl, embedded into the library as C strings at build time,
# with a build-time hash of each source for the binary cache key) and the OpenCL backend.
# Each kernel's .cl and cl/<kernel>_opencl.c are listed in kernels.mk (PK_CL_KERNELS,
# PK_CL_FILES); bandwidth.cl is the backend's own (its copy-bandwidth probe).
PK_CL_KERNELS += cl/bandwidth.cl
EXTRA_DIST += $(PK_CL_KERNELS)
if HAVE_OPENCL
libportkern_la_SOURCES += \
	cl/backend_opencl.c \
	cl/opencl_internal.h \
	cl/fft_opencl.c \
	$(PK_CL_FILES)
PK_CL_EMBEDDED = $(PK_CL_KERNELS:.cl=_cl.h)
nodist_libportkern_la_SOURCES += $(PK_CL_EMBEDDED)
BUILT_SOURCES += $(PK_CL_EMBEDDED)
CLEANFILES += $(PK_CL_EMBEDDED)
# BUILT_SOURCES only counts for all, check and install: the library's objects wait for the
# sources also when make is asked for one program (make tests/test_lp_serial in a new tree).
$(libportkern_la_OBJECTS): $(PK_CL_EMBEDDED)
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
