#include "hipdecl.h"
__global__ void kern2(int *p) { *p = 2; }
extern "C" int launch2(void) { return 2; }
