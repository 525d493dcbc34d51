// Version 1 by default; -DV2 drops `dropped`, and -DLDS=256 gives `reduce`
// four times the LDS (its code object and its resources change).
#ifndef LDS
#define LDS 64
#endif
__global__ void reduce(float *p) {
  __attribute__((shared)) float tile[LDS];
  unsigned i = __builtin_amdgcn_workitem_id_x();
  tile[i % LDS] = p[i];
  __builtin_amdgcn_s_barrier();
  p[i] = tile[(LDS - 1 - i) % LDS];
}
#ifndef V2
__global__ void dropped(int *p) { *p = 7; }
#endif
