/* PLACEHOLDER: the magicfilter3d OpenCL kernels. */
__kernel void mf_placeholder(__global double *p) { }
