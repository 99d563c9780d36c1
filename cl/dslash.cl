/* dslash.cl - OpenCL kernels of dslash. PLACEHOLDER. */
