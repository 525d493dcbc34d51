/* A recording stand-in for the CUDA or HIP runtime (built with -DHIP for
 * HIP), linked with a wrapper object made by `offload-kit wrap --kind=cuda`
 * (or hip) or by llvm-offload-wrapper + llc. It also defines the host entry
 * table the registration loop walks: one entry of each type, flag and kind
 * the loop distinguishes (docs/formats/wrapper-objects.md), in the section whose bounds
 * the linker defines. Every registration call is printed with its
 * arguments, names resolved to the entries they came from. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef HIP
#define P(name) __hip##name
#define KIND 4
#define OTHER_KIND 2
#else
#define P(name) __cuda##name
#define KIND 2
#define OTHER_KIND 4
#endif

struct entry {
  uint64_t reserved;
  uint16_t version;
  uint16_t kind;
  uint32_t flags;
  void *address;
  const char *name;
  uint64_t size;
  uint64_t data;
  void *aux;
};

static char kernel_stub, var[4], plain_var[4], managed_init[8], surface[4], texture[4], other[4];
static void *managed_ptr = managed_init;

#define E(k, f, a, n, s, d, x) {0, 1, (k), (f), (a), (n), (s), (d), (x)}
__attribute__((used, section("llvm_offload_entries"), aligned(8)))
static struct entry entries[] = {
    E(KIND, 0, &kernel_stub, "kernel", 0, 0, NULL),
    E(OTHER_KIND, 0, &other, "other_kind", 0, 0, NULL),
    E(1, 0, &other, "openmp_entry", 4, 0, NULL),
    E(KIND, 0x8 | 0x10, var, "var", 4, 0, NULL),
    E(KIND, 0, plain_var, "plain_var", 4, 0, NULL),
    E(KIND, 1, managed_init, "managed", 8, 0x100000010ull, &managed_ptr),
    E(KIND, 2 | 0x8, surface, "surface", 4, 3, NULL),
    E(KIND, 3 | 0x20, texture, "texture", 4, 5, NULL),
    E(KIND, 4, &other, "type4", 4, 0, NULL),
    /* A kernel whose flags would say "managed": size 0 decides. */
    E(KIND, 1, &kernel_stub, "kernel_flags", 0, 0, NULL),
};

static void *const handle = (void *)0x4a11;

static const char *what(const void *p) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    if (p == entries[i].address) return entries[i].name;
    if (p == entries[i].aux) return "(aux)";
  }
  if (p == NULL) return "null";
  return "?";
}

static void check_handle(void **h) {
  if ((void *)h != handle) printf("  WRONG HANDLE %p\n", (void *)h);
}

void **P(RegisterFatBinary)(void *wrapper) {
  const uint32_t *w = wrapper;
  const unsigned char *image = *(const unsigned char *const *)((const char *)wrapper + 8);
  void *reserved = *(void *const *)((const char *)wrapper + 16);
  printf("RegisterFatBinary magic=%#x version=%u image starts %02x %02x %02x %02x reserved=%p\n",
         w[0], w[1], image[0], image[1], image[2], image[3], reserved);
  return (void **)handle;
}

void P(RegisterFatBinaryEnd)(void **h) {
  check_handle(h);
  printf("RegisterFatBinaryEnd\n");
}

void P(UnregisterFatBinary)(void **h) {
  check_handle(h);
  printf("UnregisterFatBinary\n");
}

int P(RegisterFunction)(void **h, const void *addr, char *name, const char *dname, int limit,
                        void *a, void *b, void *c, void *d, int *e) {
  check_handle(h);
  printf("RegisterFunction %s name=%s device=%s limit=%d rest=%p %p %p %p %p\n", what(addr), name,
         dname, limit, a, b, c, d, (void *)e);
  return 0;
}

void P(RegisterVar)(void **h, char *addr, char *name, const char *dname, int ext, size_t size,
                    int constant, int global) {
  check_handle(h);
  printf("RegisterVar %s name=%s device=%s extern=%d size=%zu constant=%d global=%d\n",
         what(addr), name, dname, ext, size, constant, global);
}

void P(RegisterManagedVar)(void **h, void **ptr, char *init, const char *name, size_t size,
                           unsigned align) {
  check_handle(h);
  printf("RegisterManagedVar ptr=%s init=%s name=%s size=%zu align=%u\n",
         ptr == &managed_ptr ? "managed" : what(ptr), what(init), name, size, align);
}

#ifdef HIP
void P(RegisterSurface)(void **h, void *var, char *name, const char *dname, int dim, int ext) {
  check_handle(h);
  printf("RegisterSurface %s name=%s device=%s dim=%d extern=%d\n", what(var), name, dname, dim,
         ext);
}

void P(RegisterTexture)(void **h, void *var, char *name, const char *dname, int dim, int norm,
                        int ext) {
  check_handle(h);
  printf("RegisterTexture %s name=%s device=%s dim=%d normalized=%d extern=%d\n", what(var),
         name, dname, dim, norm, ext);
}
#endif

int main(void) {
  printf("main\n");
  return 0;
}
