// A recording stand-in for the offloading runtime: prints what the wrapper
// object registers (descriptor, image bytes, entry bounds, the entries) and
// the order of the calls, in a form that does not depend on addresses, so
// two wrapper objects can be compared by their output.
//
// -DENTRY_SIZE=56: LLVM 20+ entries; -DENTRY_SIZE=32: legacy entries.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ENTRY_SIZE
#error "define ENTRY_SIZE (56 or 32)"
#endif

struct image {
  const unsigned char *start, *end;
  const unsigned char *entries_begin, *entries_end;
};
struct desc {
  int32_t count;
  struct image *images;
  const unsigned char *entries_begin, *entries_end;
};
struct image_info {
  int32_t version, number, count;
  const char *arch;
  const char *compile_opts;
};

static const struct desc *registered;
static int calls;

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// Entry fields, read in the target's own byte order (the stub runs on
// big-endian s390x too).
static uint64_t u64_at(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint32_t u32_at(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint16_t u16_at(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static const void *ptr_at(const unsigned char *p) {
  const void *v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void print_entries(const unsigned char *b, const unsigned char *e) {
  size_t bytes = (size_t)(e - b);
  printf("  entries: %zu bytes, %zu entries, remainder %zu\n", bytes, bytes / ENTRY_SIZE,
         bytes % ENTRY_SIZE);
  for (const unsigned char *p = b; p + ENTRY_SIZE <= e; p += ENTRY_SIZE) {
#if ENTRY_SIZE == 56
    const void *addr = ptr_at(p + 16);
    const char *name = ptr_at(p + 24);
    printf("  entry %s reserved=%llu version=%u kind=%u flags=%u size=%llu data=%llu addr=%s\n",
           name, (unsigned long long)u64_at(p), u16_at(p + 8), u16_at(p + 10), u32_at(p + 12),
           (unsigned long long)u64_at(p + 32), (unsigned long long)u64_at(p + 40),
           addr ? "set" : "null");
#else
    const void *addr = ptr_at(p);
    const char *name = ptr_at(p + 8);
    printf("  entry %s size=%llu flags=%u data=%u addr=%s\n", name,
           (unsigned long long)u64_at(p + 16), u32_at(p + 24), u32_at(p + 28),
           addr ? "set" : "null");
#endif
  }
}

void __tgt_register_lib(struct desc *d) {
  printf("call %d: __tgt_register_lib images=%d\n", ++calls, d->count);
  print_entries(d->entries_begin, d->entries_end);
  for (int i = 0; i < d->count; i++) {
    const struct image *im = &d->images[i];
    size_t n = (size_t)(im->end - im->start);
    printf("  image %d: %zu bytes, fnv1a %016llx, starts %02x %02x %02x %02x, "
           "entries %s\n",
           i, n, (unsigned long long)fnv1a(im->start, n), n > 0 ? im->start[0] : 0,
           n > 1 ? im->start[1] : 0, n > 2 ? im->start[2] : 0, n > 3 ? im->start[3] : 0,
           im->entries_begin == d->entries_begin && im->entries_end == d->entries_end
               ? "= descriptor's"
               : "DIFFER from the descriptor's");
  }
  registered = d;
  fflush(stdout);
}

void __tgt_unregister_lib(struct desc *d) {
  printf("call %d: __tgt_unregister_lib %s\n", ++calls,
         d == registered ? "(the registered descriptor)" : "(ANOTHER descriptor)");
  fflush(stdout);
}

void __tgt_register_image_info(struct image_info *info) {
  printf("call %d: __tgt_register_image_info version=%d number=%d count=%d arch=%s opts=%s\n",
         ++calls, info->version, info->number, info->count,
         info->arch ? info->arch : "(null)", info->compile_opts ? info->compile_opts : "(null)");
  fflush(stdout);
}
