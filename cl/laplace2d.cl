/* laplace2d.cl - OpenCL kernels of laplace2d. PLACEHOLDER. */
