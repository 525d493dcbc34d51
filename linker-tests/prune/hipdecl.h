/* What the HIP headers would declare for a kernel: enough for clang-22 to
   compile HIP without ROCm (-nogpuinc). */
#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3;
typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
extern "C" hipError_t hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args,
                                      unsigned long shmem, hipStream_t s);
