/* A stand-in for the HIP and OpenMP runtimes in a DLL linked without any C
   runtime: its entry point runs the constructors between .CRT$XCA and
   .CRT$XCZ (as the C runtime would, the wrapper's registration among
   them), and the runtime functions count what they are given. The export
   `registered(int *out)` returns the number of registrations and stores
   the number of device images they carried: a HIP fat binary's bundle
   entries (the host's included), or an OpenMP descriptor's images that
   start as ELF files. */
typedef void (*fn)(void);
__attribute__((section(".CRT$XCA"), used)) static fn xc_a = 0;
__attribute__((section(".CRT$XCZ"), used)) static fn xc_z = 0;

static int registrations, images, kernels;

int __stdcall DllMain(void *h, unsigned reason, void *r) {
  if (reason == 1)
    for (fn *p = &xc_a + 1; p < &xc_z; p++)
      if (*p) (*p)();
  return 1;
}

__declspec(dllexport) int registered(int *out) {
  *out = images;
  return registrations;
}

__declspec(dllexport) int kernels_registered(int *out) {
  *out = kernels;
  return registrations;
}

int atexit(fn f) { return 0; }

/* HIP: the wrapper is {magic, version, fat binary, 0}; the fat binary an
   uncompressed bundle: 24 bytes of magic, then the entry count. */
struct wrapper { int magic, version; const char *data; void *unused; };
void *__hipRegisterFatBinary(const struct wrapper *w) {
  registrations++;
  images += (int)*(const unsigned long long *)(w->data + 24);
  return (void *)w;
}
void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a,
                           void *b, void *c, void *e, int *s) { kernels++; }
void __hipRegisterVar(void **h, char *v, char *d, const char *n, int ext, long long size,
                      int c, int g) {}
void __hipRegisterManagedVar(void **h, void **p, char *v, const char *n, long long size,
                             unsigned a) {}
void __hipRegisterSurface(void **h, void *v, char *d, const char *n, int dim, int ext) {}
void __hipRegisterTexture(void **h, void *v, char *d, const char *n, int dim, int norm,
                          int ext) {}
void __hipUnregisterFatBinary(void **h) {}
int hipLaunchKernel(const void *f, ...) { return 0; }
int __hipPopCallConfiguration(void *a, void *b, void *c, void *d) { return 0; }

/* OpenMP: __tgt_bin_desc = {int count; images; entries begin, end}, each
   __tgt_device_image = {start, end, entries begin, end}. */
struct image { const unsigned char *start, *end; void *b, *e; };
struct desc { int count; struct image *images; void *b, *e; };
void __tgt_register_lib(struct desc *d) {
  registrations++;
  for (int i = 0; i < d->count; i++) {
    const unsigned char *s = d->images[i].start;
    if (d->images[i].end - s > 4 && s[0] == 0x7f && s[1] == 'E' && s[2] == 'L' && s[3] == 'F')
      images++;
  }
}
void __tgt_unregister_lib(struct desc *d) {}
int __tgt_target_kernel(void *loc, long long dev, int teams, int threads, void *host,
                        void *args) { return 0; }
