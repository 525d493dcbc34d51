/* What the HIP runtime and the C library would define, so that a program
   of the HIP translation units links with -nostdlib: for checking how
   its file is laid out, not for running it. */
void **__hipRegisterFatBinary(const void *w) { (void)w; return 0; }
void __hipRegisterFunction(void) {}
void __hipRegisterVar(void) {}
void __hipUnregisterFatBinary(void **h) { (void)h; }
int hipLaunchKernel(void) { return 0; }
int __hipPopCallConfiguration(void) { return 0; }
int atexit(void (*f)(void)) { (void)f; return 0; }
void _start(void) {}
