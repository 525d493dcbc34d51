// main() for the recording stub: shows where registration happens relative
// to main (before it) and unregistration (after it).
#include <stdio.h>

int main(void) {
  printf("main\n");
  fflush(stdout);
  return 0;
}
