#!/usr/bin/env python3
"""scaling_model.py - the tables of docs/SCALING.md's model of distributed diffusion3d.

One rank per node, slabs of L = nz / N planes of P = nx * ny points, halo depth d (the
library's default: min(12, L / 4), at least 1; 12 = two passes of omp-tb's default 6 steps).  Per chunk of d steps an inner rank (the
slowest from 3 nodes on; with 2 nodes each rank has one neighbour: one d, one message)
  - steps L + 2 d planes d times (the halo planes are stepped as well):  (L + 2d) P d / R
  - sends d P 4 bytes to each of its two neighbours and receives as much:  a + 2 d P 4 / b
    (one link per node, both messages through it)
  - agrees on the status (MPI_Allreduce of 8 bytes):  2 a log2(N)
R depends on d on CPU nodes: omp-tb's passes of 4 steps or more run near its full rate, so d < 4
is counted as single sweeps (omp-tiled's rate, 0.54 of omp-tb's in docs/PERFORMANCE.md).
without overlap these add up; with overlap the exchange hides behind the interior (L P d / R)
and the boundary planes cost 2 x 3 d planes stepped d times.  R: the node's rate in
point-steps per second on its slab, a and b: the network's latency and bandwidth.
GPU nodes through the current library (pk_diffusion3d_plan_execute on host memory) also move
the whole slab across the host link once each way per chunk: (L + 2d) P 4 (1/up + 1/down).

The distributed grid (mpi/mpi_grid.c), one rank per node, the visibilities split evenly:
  - grids its 1/N of them:  T1 / N  (T1 the whole list's gridding on one node; the tiled and
    atomic gridders cost per visibility)
  - locates them for the box and zeroes, packs the box (B = 8 W H bytes) and unpacks its band
    of 8 G^2 / N bytes (zeros around the box):  T_loc / N + 2 B / m + 8 G^2 / (N m)
  - MPI_Reduce_scatter of B bytes as a ring: N - 1 steps, each sending and adding B / N:
    (N - 1) (a + B / (N b) + B / (N m_add))
m and m_add a node's copy and add-and-store rates in bytes per second.
Usage: python3 mpi/scaling_model.py  (prints the Markdown tables)
"""
import math


def depth_for(L):
    return max(1, min(12, L // 4))


def rate(R, d, sweep):
    """The node's rate at depth d: omp-tb's passes run near R from 4 steps; below, single sweeps
    (sweep: their rate as a fraction of R; 1 for GPU nodes)."""
    return R if d >= 4 else R * sweep


def step_time(n, N, R, a, b, overlap=False, link=None, L=None, sweep=1.0):
    """Seconds per step of an n^3 field over N nodes (or L planes per node for weak scaling)."""
    P = n * n
    if L is None:
        L = n / N
    d = depth_for(int(L)) if N > 1 else 1
    if N == 1:
        t = L * P / R
        if link:
            t += 0  # resident: no transfers when nothing is exchanged
        return t
    Rd = rate(R, d, sweep)
    nb = 1 if N == 2 else 2  # the slowest rank: an inner one, from 3 nodes on
    comp = (L + nb * d) * P * d / Rd
    comm = a + nb * d * P * 4 / b
    agree = 2 * a * math.log2(N)
    if overlap:
        inner = L * P * d / Rd
        t = max(inner, comm) + nb * 3 * d * P * d / Rd + agree
    else:
        t = comp + comm + agree
    if link:
        up, down = link
        t += (L + nb * d) * P * 4 * (1 / up + 1 / down)
    return t / d


def table(title, n, nodes, R, a, b, link=None, weak_L=None, sweep=1.0):
    print(f"\n{title}\n")
    print("| nodes | planes/node | depth | ms/step | speedup | efficiency | overlap ms/step |")
    print("|---|---|---|---|---|---|---|")
    for N in nodes:
        if weak_L:
            t1 = step_time(n, 1, R, a, b, L=weak_L, link=link, sweep=sweep)
            t = step_time(n, N, R, a, b, L=weak_L, link=link, sweep=sweep)
            to = step_time(n, N, R, a, b, overlap=True, L=weak_L, link=link, sweep=sweep)
            L = weak_L
            sp = N * t1 / t
        else:
            if n // N < 1:
                continue
            t1 = step_time(n, 1, R, a, b, link=link, sweep=sweep)
            t = step_time(n, N, R, a, b, link=link, sweep=sweep)
            to = step_time(n, N, R, a, b, overlap=True, link=link, sweep=sweep)
            L = n / N
            sp = t1 / t
        d = depth_for(int(L)) if N > 1 else "-"
        print(f"| {N} | {L:g} | {d} | {t * 1e3:.3f} | {sp:.1f} | {sp / N:.2f} | "
              f"{to * 1e3 if N > 1 else t * 1e3:.3f} |")


def grid_time(N, T1, T_loc, B, G, a, b, m, m_add):
    t = T1 / N + T_loc / N + 2 * B / m + 8.0 * G * G / (N * m)
    if N > 1:
        t += (N - 1) * (a + B / (N * b) + B / (N * m_add))
    return t


def grid_table(title, nodes, T1, T_loc, B, G, a, b, m, m_add):
    print(f"\n{title}\n")
    print("| nodes | vis share | grid s | local box s | reduce-scatter s | total s | speedup "
          "| efficiency |")
    print("|---|---|---|---|---|---|---|---|")
    t1 = grid_time(1, T1, T_loc, B, G, a, b, m, m_add)
    for N in nodes:
        t = grid_time(N, T1, T_loc, B, G, a, b, m, m_add)
        loc = T_loc / N + 2 * B / m + 8.0 * G * G / (N * m)
        rs = (N - 1) * (a + B / (N * b) + B / (N * m_add)) if N > 1 else 0.0
        print(f"| {N} | 1/{N} | {T1 / N:.3f} | {loc:.3f} | {rs:.3f} | {t:.3f} | {t1 / t:.1f} "
              f"| {t1 / t / N:.2f} |")


if __name__ == "__main__":
    nodes = [1, 2, 4, 8, 16, 32, 64]
    # measured here (docs/SCALING.md): 1 rank x 2 threads, omp-tb, best run
    R_cpu = 256 ** 3 * 20 / 0.0662
    # assumed network: InfiniBand EDR class, not measured
    a, b = 1.5e-6, 12e9
    # single sweeps (depth < 4) at omp-tiled's rate: 2.98 / 5.48 of omp-tb's
    # (docs/PERFORMANCE.md, 256^3 x 20)
    sweep = 2.98 / 5.48
    table("Strong scaling, 512^3, CPU nodes like this one (R = %.2f Gpt/s), EDR-class network"
          % (R_cpu / 1e9), 512, nodes, R_cpu, a, b, sweep=sweep)
    table("Weak scaling, 256 planes of 256^2 per node, same nodes and network", 256, nodes,
          R_cpu, a, b, weak_L=256, sweep=sweep)
    # H100 (docs/PERFORMANCE.md: 256^3 x 20 in 1.06 ms of kernel), host link pageable
    R_gpu = 256 ** 3 * 20 / 1.06e-3
    table("Strong scaling, 512^3, H100 nodes (R = %.0f Gpt/s), EDR-class network, halos only "
          "(a plane API the core does not have yet)" % (R_gpu / 1e9), 512, nodes, R_gpu, a, b)
    table("Strong scaling, 512^3, H100 nodes through the current library (the slab crosses "
          "the host link every chunk: 6.7 GB/s up, 11.4 down, pageable)", 512, nodes, R_gpu, a,
          b, link=(6.7e9, 11.4e9))
    # grid (docs/SCALING.md section 6): el82-70, the box of updated cells measured by
    # `portkern run grid --mpi` (rows and columns of the 18000^2 grid), B = 8 W H bytes
    G = 18000
    W, H = 11452 - 6626, 11523 - 6447  # measured: box [6447, 11523) x [6626, 11452)
    B = 8.0 * W * H
    m, m_add = 8e9, 4e9  # assumed node copy / add-and-store rates (not measured)
    # CPU nodes like this one: omp-tiled, 2 threads, 398 ms for el82-70 x 0.1, its bounding
    # box stage 36.8 ms (docs/PERFORMANCE.md)
    grid_table("Distributed grid, el82-70 x 0.1 (3.1 M visibilities), CPU nodes like this one, "
               "EDR-class network", nodes, 0.398, 0.0368, B, G, a, b, m, m_add)
    # H100 nodes: the full el82-70 (31.4 M visibilities) in 392 ms with its transfers
    # (cuda-atomic, docs/PERFORMANCE.md); the locate pass on the host at this machine's rate
    grid_table("Distributed grid, the full el82-70 (31.4 M visibilities), H100 nodes (392 ms "
               "with transfers), EDR-class network", nodes, 0.392, 0.368, B, G, a, b, m, m_add)
    # the same CPU nodes with the reduce-scatter at the rate measured on this machine (2 ranks
    # sharing 2 loaded cores: 196 MB in 0.77 s with CMA, MPI_Reduce_scatter alone): b = m_add
    # with B / 2 (1 / b + 1 / m_add) = 0.77 s
    r_here = 195974208 / 0.77
    grid_table("Distributed grid, el82-70 x 0.1, CPU nodes, the reduce-scatter at this machine's "
               "measured rate (b = m_add = %.2f GB/s)" % (r_here / 1e9), nodes, 0.398, 0.0368,
               B, G, a, r_here, m, r_here)
