// Built for sm_80 machine code alone (no PTX): a 9.0 device cannot load it,
// so `prune --keep sm_90` empties this file's fatbin.
#include <cstdio>
__global__ void thrice(int *p) { p[threadIdx.x] = 3 * threadIdx.x; }
int run_b() {
  int *d;
  cudaMalloc(&d, 32 * sizeof(int));
  thrice<<<1, 32>>>(d);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  printf("b: %s\n", e == cudaSuccess ? "ran" : cudaGetErrorString(e));
  cudaFree(d);
  return 0;
}
