/* image.cl - the crop of the dirty image and its adjoint, the placing of a model (docs/KERNELS.md
 * 7.7), on the device grid that cl/fft_opencl.c transforms (cl/image_opencl.c).
 *
 * Pixel (y, x) of the N x N image is grid cell ((y - N/2) mod g, (x - N/2) mod g): the crop
 * without shift copies; sc[x] = (-1)^(x - N/2) / c(x - N/2) are lib/image.c's float factors,
 * multiplied in the host path's order without contraction:
 *     pk_im_crop:  image[y][x] = Re F[..][..] * ((sc[y] * scale) * sc[x]),   scale = 1 / norm
 *     pk_im_place: grid[..][..] = (model[y][x] * ((sc[y] * scale) * sc[x]), 0), scale = 1 / kappa
 * (the place kernel writes only the model's cells: the grid is zeroed before it). */
#pragma OPENCL FP_CONTRACT OFF

inline size_t pk_im_wrap(int x, int n, int g)
{
    return (size_t)(x < n / 2 ? x - n / 2 + g : x - n / 2);
}

__kernel void pk_im_crop(__global const float2 *grid, int g, int n, __global const float *sc,
                         float scale, __global float *image)
{
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    if (x >= n || y >= n) return;
    const float fy = sc[y] * scale;
    const float re = grid[pk_im_wrap(y, n, g) * (size_t)g + pk_im_wrap(x, n, g)].x;
    image[(size_t)y * (size_t)n + (size_t)x] = re * (fy * sc[x]);
}

__kernel void pk_im_place(__global float2 *grid, int g, int n, __global const float *sc,
                          float scale, __global const float *model)
{
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    if (x >= n || y >= n) return;
    const float fy = sc[y] * scale;
    const float v = model[(size_t)y * (size_t)n + (size_t)x] * (fy * sc[x]);
    grid[pk_im_wrap(y, n, g) * (size_t)g + pk_im_wrap(x, n, g)] = (float2)(v, 0.0f);
}
