/* An OpenMP target region, for a Windows host. */
int run(void) {
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 42;
  return x;
}
