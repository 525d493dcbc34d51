#include <stdio.h>
int square_sum(int n, double *out);
int main(void) {
  double s;
  int dev = square_sum(1000, &s);
  printf("sum %.1f on %s\n", s, dev ? "the offload device" : "the host");
  return 0;
}
