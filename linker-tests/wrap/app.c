// An OpenMP program with several target regions and declare-target globals.
// app_run() prints one line per check and returns the number of failures.
// Every region records omp_is_initial_device() from inside, so a region that
// falls back to the host is reported as a failure.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int gv = 4;
double table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
int counter;
static int twice(int x) { return 2 * x; }
#pragma omp end declare target

int app_run(void) {
  int fails = 0;
  int host[4] = {0, 0, 0, 0};

  // 1: a scalar computed from a declare-target global.
  int x = 0;
#pragma omp target map(from : x, host[0:1])
  {
    host[0] = omp_is_initial_device();
    x = twice(gv);
  }

  // 2: an array mapped both ways.
  int a[100];
  for (int i = 0; i < 100; i++)
    a[i] = i;
#pragma omp target map(tofrom : a[0:100]) map(from : host[1:1])
  {
    host[1] = omp_is_initial_device();
    for (int i = 0; i < 100; i++)
      a[i] = a[i] * 3 + gv;
  }

  // 3: declare-target globals written on the device, then copied back.
#pragma omp target map(from : host[2:1])
  {
    host[2] = omp_is_initial_device();
    counter = 42;
    table[3] += 10;
  }
#pragma omp target update from(counter, table)

  // 4: a combined construct with a reduction.
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum) map(from : host[3:1])
  for (int i = 0; i < 1000; i++) {
    if (i == 0)
      host[3] = omp_is_initial_device();
    sum += i;
  }

  for (int r = 0; r < 4; r++) {
    printf("region %d on_device=%d\n", r + 1, !host[r]);
    fails += host[r] != 0;
  }
  printf("x=%d a[99]=%d counter=%d table[3]=%g sum=%ld\n", x, a[99], counter, table[3], sum);
  fails += x != 8;
  fails += a[99] != 301;
  fails += counter != 42;
  fails += table[3] != 14.0;
  fails += sum != 499500;
  return fails;
}
