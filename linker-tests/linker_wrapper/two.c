// A second file with its own target region and declare-target global, for
// the several-files program of the clang-linker-wrapper tests.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int scale = 5;
#pragma omp end declare target

int two_run(void) {
  int on_host = 1, y = 0;
#pragma omp target map(from : on_host, y)
  {
    on_host = omp_is_initial_device();
    y = scale * 7;
  }
  printf("two on_device=%d y=%d\n", !on_host, y);
  return on_host || y != 35;
}
