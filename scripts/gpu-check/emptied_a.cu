// Built for sm_90 only: an H100/H200 runs it.
#include <cstdio>
__global__ void twice(int *p) { p[threadIdx.x] = 2 * threadIdx.x; }
int run_a() {
  int *d, h[32];
  cudaMalloc(&d, sizeof h);
  twice<<<1, 32>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) { printf("a: %s\n", cudaGetErrorString(e)); return 1; }
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  long s = 0;
  for (int i = 0; i < 32; i++) s += h[i];
  printf("a: sum %ld\n", s);
  cudaFree(d);
  return 0;
}
