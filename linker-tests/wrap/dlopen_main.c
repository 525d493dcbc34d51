// Loads the OpenMP program from the shared library argv[1] with dlopen, runs
// it, and unloads it with dlclose (which runs the library's unregistration).
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2)
    return 100;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 101;
  }
  int (*run)(void) = (int (*)(void))dlsym(lib, "app_run");
  if (!run) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 102;
  }
  int fails = run();
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dlclose: %s\n", dlerror());
    return 103;
  }
  printf("dlclose done\n");
  return fails;
}
