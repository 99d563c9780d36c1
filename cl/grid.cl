/* grid.cl - OpenCL kernels of grid. PLACEHOLDER. */
