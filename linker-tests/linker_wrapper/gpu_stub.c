/* A recording stand-in for the HIP runtime (or, with -DCUDA, the CUDA
 * runtime), for programs linked through a clang-linker-wrapper: prints the
 * fat binary it is given (the wrapper's magic and version; for HIP the
 * bundle's entry IDs with their sizes and a hash of their bytes, for CUDA
 * the fatbin's size and a hash of it), every kernel and variable
 * registration, and the unregistration at exit. */
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

#ifdef CUDA
#define P(name) __cuda##name
#else
#define P(name) __hip##name
#endif

void **P(RegisterFatBinary)(const struct wrapper *w) {
  printf("RegisterFatBinary magic=%08x version=%u\n", (unsigned)w->magic, (unsigned)w->version);
  const unsigned char *b = w->data;
#ifdef CUDA
  uint32_t magic;
  uint16_t header;
  memcpy(&magic, b, 4);
  memcpy(&header, b + 6, 2);
  uint64_t size = u64(b + 8);
  printf("  fatbin magic=%08x %llu bytes, fnv1a %016llx\n", (unsigned)magic,
         (unsigned long long)(header + size), (unsigned long long)fnv1a(b, header + size));
#else
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
#endif
  fflush(stdout);
  return &handle;
}

#ifdef CUDA
void P(RegisterFatBinaryEnd)(void **h) {
  printf("RegisterFatBinaryEnd%s\n", h == &handle ? "" : " (another handle)");
}
#endif

void P(RegisterFunction)(void **h, const void *host, const char *dev, const char *name, int limit,
                           void *tid, void *bid, void *bdim, void *gdim, int *wsize) {
  (void)host, (void)dev, (void)limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
  printf("RegisterFunction %s%s\n", name, h == &handle ? "" : " (another handle)");
}

void P(RegisterVar)(void **h, void *var, const char *hostname, const char *name, int ext,
                      size_t size, int constant, int global) {
  (void)var, (void)hostname;
  printf("RegisterVar %s size=%zu ext=%d constant=%d global=%d%s\n", name, size, ext,
         constant, global, h == &handle ? "" : " (another handle)");
}

void P(RegisterManagedVar)(void *h, void **ptr, void *init, const char *name, size_t size,
                             unsigned align) {
  (void)h, (void)ptr, (void)init;
  printf("RegisterManagedVar %s size=%zu align=%u\n", name, size, align);
}

void P(RegisterSurface)(void **h, void *var, const char *hv, const char *name, int dim, int ext) {
  (void)h, (void)var, (void)hv;
  printf("RegisterSurface %s dim=%d ext=%d\n", name, dim, ext);
}

void P(RegisterTexture)(void **h, void *var, const char *hv, const char *name, int dim, int norm,
                          int ext) {
  (void)h, (void)var, (void)hv;
  printf("RegisterTexture %s dim=%d norm=%d ext=%d\n", name, dim, norm, ext);
}

void P(UnregisterFatBinary)(void **h) {
  printf("UnregisterFatBinary%s\n", h == &handle ? "" : " (another handle)");
  fflush(stdout);
}

#ifdef CUDA
int cudaLaunchKernel(const void *f, ...)
#else
int hipLaunchKernel(const void *f, ...)
#endif
{
  (void)f;
  return 0;
}

int P(PopCallConfiguration)(void *a, void *b, void *c, void *d) {
  (void)a, (void)b, (void)c, (void)d;
  return 0;
}

int main(void) {
  printf("main\n");
  return 0;
}
