/* Two HIP kernels for a Windows host, without ROCm (-nogpuinc): the
   declarations the HIP headers would make. On Windows `long` is 32 bits,
   so the shared-memory size is `unsigned long long` (size_t): with
   `unsigned long`, clang-22's host side fails to compile the launch. */
#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3;
typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
extern "C" hipError_t hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args,
                                      unsigned long long shmem, hipStream_t s);
__global__ void one(int *p) { *p = 1; }
__global__ void two(int *p) { *p = 2; }
