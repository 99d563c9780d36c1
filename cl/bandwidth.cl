/* bandwidth.cl - a float4 copy, the device's memory-bandwidth roof (STREAM copy). */

__kernel void pk_copy4(__global const float4 *restrict src, __global float4 *restrict dst,
                       ulong n)
{
    size_t i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}
