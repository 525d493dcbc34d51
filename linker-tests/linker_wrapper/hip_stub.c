/* A recording stand-in for the HIP runtime, for programs linked through a
 * clang-linker-wrapper: prints the fat binary it is given (the wrapper's
 * magic and version, and the bundle's entry IDs with their sizes and a hash
 * of their bytes), every kernel and variable registration, and the
 * unregistration at exit. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct wrapper {
  uint32_t magic, version;
  const unsigned char *data;
  void *unused;
};

static uint64_t fnv1a(const unsigned char *p, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void *handle = &handle;

void **__hipRegisterFatBinary(const struct wrapper *w) {
  printf("__hipRegisterFatBinary magic=%08x version=%u\n", (unsigned)w->magic, (unsigned)w->version);
  const unsigned char *b = w->data;
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) {
    printf("  not an uncompressed bundle: %.4s\n", (const char *)b);
  } else {
    uint64_t n = u64(b + 24);
    const unsigned char *p = b + 32;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t off = u64(p), size = u64(p + 8), len = u64(p + 16);
      printf("  entry %.*s: %llu bytes, fnv1a %016llx\n", (int)len, (const char *)(p + 24),
             (unsigned long long)size, (unsigned long long)fnv1a(b + off, size));
      p += 24 + len;
    }
  }
  fflush(stdout);
  return &handle;
}

void __hipRegisterFunction(void **h, const void *host, const char *dev, const char *name, int limit,
                           void *tid, void *bid, void *bdim, void *gdim, int *wsize) {
  (void)host, (void)dev, (void)limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
  printf("__hipRegisterFunction %s%s\n", name, h == &handle ? "" : " (another handle)");
}

void __hipRegisterVar(void **h, void *var, const char *hostname, const char *name, int ext,
                      size_t size, int constant, int global) {
  (void)var, (void)hostname;
  printf("__hipRegisterVar %s size=%zu ext=%d constant=%d global=%d%s\n", name, size, ext,
         constant, global, h == &handle ? "" : " (another handle)");
}

void __hipRegisterManagedVar(void *h, void **ptr, void *init, const char *name, size_t size,
                             unsigned align) {
  (void)h, (void)ptr, (void)init;
  printf("__hipRegisterManagedVar %s size=%zu align=%u\n", name, size, align);
}

void __hipRegisterSurface(void **h, void *var, const char *hv, const char *name, int dim, int ext) {
  (void)h, (void)var, (void)hv;
  printf("__hipRegisterSurface %s dim=%d ext=%d\n", name, dim, ext);
}

void __hipRegisterTexture(void **h, void *var, const char *hv, const char *name, int dim, int norm,
                          int ext) {
  (void)h, (void)var, (void)hv;
  printf("__hipRegisterTexture %s dim=%d norm=%d ext=%d\n", name, dim, norm, ext);
}

void __hipUnregisterFatBinary(void **h) {
  printf("__hipUnregisterFatBinary%s\n", h == &handle ? "" : " (another handle)");
  fflush(stdout);
}

int hipLaunchKernel(const void *f, ...) {
  (void)f;
  return 0;
}

int __hipPopCallConfiguration(void *a, void *b, void *c, void *d) {
  (void)a, (void)b, (void)c, (void)d;
  return 0;
}

int main(void) {
  printf("main\n");
  return 0;
}
