#include <stdio.h>
int launch1(void); int launch2(void);
int main(void) { printf("run %d\n", launch1() + launch2()); return 0; }
