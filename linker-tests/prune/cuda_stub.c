/* A stand-in CUDA runtime that records what a program registers: for each
   fat binary, the entries of its fatbin container as they are stored
   (kind, SM, compression flags, payload size and an FNV-1a hash of the
   stored payload). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct wrapper { uint32_t magic, version; const unsigned char *binary; const void *unused; };

static uint64_t fnv(const unsigned char *p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}
static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static void *handles[64];
static int nhandles;

void **__cudaRegisterFatBinary(const struct wrapper *w) {
  const unsigned char *b = w->binary;
  printf("fatbin %08x v%u\n", w->magic, w->version);
  if (u32(b) != 0xBA55ED50u) { printf("  not a fatbin\n"); return &handles[nhandles++]; }
  uint64_t at = u16(b + 6), end = at + u64(b + 8);
  while (at < end) {
    const unsigned char *e = b + at;
    uint64_t header = u32(e + 4), size = u64(e + 8);
    printf("  entry kind %u sm_%u flags %#llx %llu %016llx\n", u16(e), u32(e + 28),
           (unsigned long long)(u64(e + 40) & 0xa000), (unsigned long long)size,
           (unsigned long long)fnv(e + header, size));
    at += header + size;
  }
  return &handles[nhandles++];
}
void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }
int __cudaRegisterFunction(void **h, const void *f, char *dev, const char *name, int t, void *a,
                           void *b, void *c, void *d, int *e) {
  (void)h; (void)f; (void)dev; (void)t; (void)a; (void)b; (void)c; (void)d; (void)e;
  printf("  kernel %s\n", name);
  return 0;
}
void __cudaRegisterVar(void) {}
void __cudaRegisterManagedVar(void) {}
