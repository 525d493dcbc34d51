#include <omp.h>
#include <stdio.h>
/* A target region whose result and place the caller prints. */
int square_sum(int n, double *out) {
  double s = 0;
  int on_device = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s, on_device)
  for (int i = 0; i < n; i++) {
    s += (double)i * i;
    if (i == 0) on_device = !omp_is_initial_device();
  }
  *out = s;
  return on_device;
}
