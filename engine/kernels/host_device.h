// GEOMX_HOST_DEVICE marks functions that compile for the host and, under nvcc, for CUDA devices too. The
// functors in engine/kernels/ carry it so the CPU loops (engine/cpu/) and the CUDA kernels (engine/cuda/) share
// one definition of the math (docs/style.md R7).
#pragma once

#if defined(__CUDACC__)
#define GEOMX_HOST_DEVICE __host__ __device__
#else
#define GEOMX_HOST_DEVICE
#endif
