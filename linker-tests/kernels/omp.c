/* OpenMP target regions and declare-target globals, for `inspect --kernels`. */
#include <stdio.h>
#pragma omp declare target
int dev_counter = 0;
double dev_table[16];
#pragma omp end declare target
void saxpy(int n, float a, float *x, float *y) {
#pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])
  for (int i = 0; i < n; i++) y[i] += a * x[i];
}
int count(void) {
  int c = 0;
#pragma omp target map(from: c)
  { dev_counter++; c = dev_counter; }
  return c;
}
int main(void) { float x[8] = {1}, y[8] = {0}; saxpy(8, 2.0f, x, y); printf("%g %d\n", y[0], count()); return 0; }
