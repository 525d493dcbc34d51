#include "hipdecl.h"
/* A kernel with a large table in its code object (about 800 KB per GPU
   target), so that pruning frees many whole pages, 64 KiB ones included. */
#define __device__ __attribute__((device))
__device__ int table[200000] = {1, 2, 3};
__global__ void kern3(int *p) { *p = table[*p]; }
extern "C" int launch3(void) { return 3; }
