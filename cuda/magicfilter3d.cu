// PLACEHOLDER: the CUDA magicfilter3d kernels.
