/* A stand-in HIP runtime that records what a program registers: for each
   fat binary, the entries of its clang offload bundle (ID, size, FNV-1a
   hash of the bytes), decompressed first when it is a zstd CCOB (version
   2 or 3); for each kernel, its name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct wrapper { uint32_t magic, version; const unsigned char *binary; const void *unused; };

static uint64_t fnv(const unsigned char *p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}
static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void *handles[64];
static int nhandles;

void **__hipRegisterFatBinary(const struct wrapper *w) {
  const unsigned char *b = w->binary;
  printf("fatbin %08x v%u\n", w->magic, w->version);
  if (memcmp(b, "CCOB", 4) == 0) {
    uint16_t version, method;
    memcpy(&version, b + 4, 2);
    memcpy(&method, b + 6, 2);
    uint64_t total, size, header;
    if (version == 3) {
      total = u64(b + 8); size = u64(b + 16); header = 32;
    } else {
      uint32_t t, s; memcpy(&t, b + 8, 4); memcpy(&s, b + 12, 4);
      total = t; size = s; header = 24;
    }
    printf("  ccob v%u method %u\n", version, method);
    unsigned char *plain = malloc(size);
    if (method != 1 || ZSTD_decompress(plain, size, b + header, total - header) != size) {
      printf("  cannot decompress\n");
      return &handles[nhandles++];
    }
    b = plain; /* kept for the program's life, as a runtime would */
  }
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) { printf("  not a bundle\n"); return &handles[nhandles++]; }
  uint64_t n = u64(b + 24), at = 32;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t off = u64(b + at), size = u64(b + at + 8), len = u64(b + at + 16);
    printf("  entry %.*s %llu %016llx\n", (int)len, (const char *)(b + at + 24),
           (unsigned long long)size, (unsigned long long)fnv(b + off, size));
    at += 24 + len;
  }
  return &handles[nhandles++];
}
void __hipRegisterFunction(void **h, const void *f, char *dev, const char *name, int t, void *a, void *b, void *c, void *d, int *e) {
  (void)h; (void)f; (void)dev; (void)t; (void)a; (void)b; (void)c; (void)d; (void)e;
  printf("  kernel %s\n", name);
}
void __hipRegisterVar(void) {}
void __hipRegisterManagedVar(void) {}
void __hipRegisterSurface(void) {}
void __hipRegisterTexture(void) {}
void __hipUnregisterFatBinary(void **h) { (void)h; }
int hipLaunchKernel(void) { return 0; }
int __hipPopCallConfiguration(void) { return 0; }
