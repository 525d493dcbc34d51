/* HIP kernels for `inspect --kernels` and the kernel rules of `check`: LDS, spills
   and scratch, a workgroup limit, templates, a device function and globals. */
#include "hipdecl.h"
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
__device__ int counter;
__device__ float table[64];
__device__ __attribute__((noinline)) float helper(float x) { return x * table[(int)x & 63]; }
__global__ void add(float *a, const float *b, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) a[i] += helper(b[i]);
}
__global__ void __attribute__((amdgpu_flat_work_group_size(1, 256))) reduce(float *out, const float *in) {
  __shared__ float buf[256];
  int t = __builtin_amdgcn_workitem_id_x();
  buf[t] = in[t];
  __builtin_amdgcn_s_barrier();
  if (t == 0) { float s = 0; for (int i = 0; i < 256; i++) s += buf[i]; out[0] = s; __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED); }
}
__global__ void spill(float *a, int n) { volatile float big[300]; for (int i = 0; i < 300; i++) big[i] = a[i]; a[n] = big[n % 300]; }
template <typename T> __global__ void scale(T *a, T f) { a[0] *= f; }
template __global__ void scale<float>(float *, float);
template __global__ void scale<double>(double *, double);
