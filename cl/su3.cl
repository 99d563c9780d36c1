/* su3.cl - OpenCL kernels of su3. PLACEHOLDER. */
