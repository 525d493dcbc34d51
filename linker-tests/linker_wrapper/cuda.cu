// CUDA device code without the CUDA headers (declared as they would), built
// with --offload-new-driver -fgpu-rdc: a kernel and a device variable that
// the wrapper object registers.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
typedef struct {
  unsigned x, y, z;
} dim3x;
extern "C" int cudaLaunchKernel(const void *, dim3x, dim3x, void **, unsigned long, void *);
__global__ void kern(int *p) { *p = 1; }
__device__ int devvar[4];
