#include "hipdecl.h"
__global__ void kern1(int *p) { *p = 1; }
extern "C" int launch1(void) { return 1; }
