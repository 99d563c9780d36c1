# PK_CHECK_CUDA: find nvcc (--with-cuda[=DIR], default: PATH then /usr/local/cuda), choose
# the GPU architectures (--with-cuda-arch=LIST; default: sm_90 plus PTX of the newest one
# listed, restricted to what this nvcc supports) and check that a CUDA object links with the
# static runtime, so libportkern never needs libcudart.so at load time.
# Sets have_cuda, NVCC, NVCCFLAGS, CUDA_ARCH_FLAGS, CUDA_LIBS; defines PK_HAVE_CUDA.
AC_DEFUN([PK_CHECK_CUDA], [
AC_ARG_VAR([NVCC], [CUDA compiler])
AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
    [build the CUDA backend (DIR: toolkit root; default: nvcc on PATH or /usr/local/cuda)])],
  [], [with_cuda=check])
AC_ARG_WITH([cuda-arch],
  [AS_HELP_STRING([--with-cuda-arch=LIST],
    [comma-separated compute capabilities to build, e.g. 80,90 (default: 90 plus PTX)])],
  [], [with_cuda_arch=default])
have_cuda=no
CUDA_ARCH_FLAGS=
CUDA_LIBS=
AS_IF([test "x$with_cuda" != xno], [
  pk_cuda_path="$PATH$PATH_SEPARATOR/usr/local/cuda/bin"
  AS_CASE([$with_cuda], [yes|check], [], [pk_cuda_path="$with_cuda/bin"])
  AS_IF([test -z "$NVCC"], [AC_PATH_PROG([NVCC], [nvcc], [no], [$pk_cuda_path])])
  AS_IF([test "x$NVCC" != xno && test -n "$NVCC"], [
    pk_cuda_root=`AS_DIRNAME(["$NVCC"])`
    pk_cuda_root=`AS_DIRNAME(["$pk_cuda_root"])`
    AS_IF([test "x$with_cuda_arch" = xdefault], [pk_archs=90], [pk_archs=`echo "$with_cuda_arch" | $SED 's/sm_//g; s/,/ /g'`])
    pk_supported=`"$NVCC" --list-gpu-arch 2>/dev/null | $SED -n 's/^compute_//p' | tr '\n' ' '`
    pk_last=
    for a in $pk_archs; do
      AS_CASE([" $pk_supported "], [*" $a "*],
        [CUDA_ARCH_FLAGS="$CUDA_ARCH_FLAGS -gencode arch=compute_$a,code=sm_$a"; pk_last=$a],
        [AC_MSG_WARN([nvcc does not support sm_$a; skipped])])
    done
    AS_IF([test -n "$pk_last"],
      [CUDA_ARCH_FLAGS="$CUDA_ARCH_FLAGS -gencode arch=compute_$pk_last,code=compute_$pk_last"])
    AC_MSG_CHECKING([whether $NVCC compiles for $pk_archs and links the static runtime])
    cat > conftest.cu <<_PKEOF
#include <cuda_runtime.h>
extern "C" int pk_conftest(void) { int n = 0; cudaGetDeviceCount(&n); return n; }
_PKEOF
    pk_libdir=
    for d in "$pk_cuda_root/lib64" "$pk_cuda_root/lib" "$pk_cuda_root/targets/x86_64-linux/lib"; do
      AS_IF([test -f "$d/libcudart_static.a"], [pk_libdir=$d; break])
    done
    AS_IF([test -n "$CUDA_ARCH_FLAGS" && test -n "$pk_libdir" &&
           "$NVCC" $CUDA_ARCH_FLAGS $NVCCFLAGS --compiler-options -fPIC -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
      [have_cuda=yes
       CUDA_LIBS="-L$pk_libdir -lcudart_static -ldl -lrt -lpthread -lstdc++"],
      [have_cuda=no])
    rm -f conftest.cu conftest.$OBJEXT
    AC_MSG_RESULT([$have_cuda])
  ])
  AS_IF([test "x$with_cuda" != xcheck && test "x$have_cuda" = xno],
    [AC_MSG_ERROR([--with-cuda given but nvcc could not build a CUDA object])])
])
AS_IF([test "x$have_cuda" = xyes],
  [AC_DEFINE([PK_HAVE_CUDA], [1], [Define when the CUDA backend is built])
   AC_DEFINE_UNQUOTED([PK_CUDA_LIBDIR], ["$pk_libdir"],
     [The CUDA toolkit's library directory (the CUDA test suites load libcudart.so from it)])],
  [NVCC=])
AC_SUBST([CUDA_ARCH_FLAGS])
AC_SUBST([CUDA_LIBS])
])
