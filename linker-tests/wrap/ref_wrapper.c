// A reference wrapper written in C from docs/formats/wrapper-objects.md (legacy and ROCm
// flavours), to compare offload-kit's object with where LLVM 22 has no tool
// that writes these ABIs. Build with -DIMAGE='"path"' (the raw device image)
// and, for ROCm, -DARCH='"gfx..."'.
#include <stdint.h>

__asm__(".section .rodata.ref_image,\"a\",@progbits\n"
        ".balign 8\n"
        "ref_image_start:\n"
        ".incbin \"" IMAGE "\"\n"
        "ref_image_end:\n"
        ".text\n");
extern const unsigned char ref_image_start[], ref_image_end[];

struct image {
  const void *start, *end;
  const void *entries_begin, *entries_end;
};
struct desc {
  int32_t count;
  const struct image *images;
  const void *entries_begin, *entries_end;
};

extern const char __start_omp_offloading_entries[] __attribute__((visibility("hidden")));
extern const char __stop_omp_offloading_entries[] __attribute__((visibility("hidden")));

static const struct image images[1] = {{ref_image_start, ref_image_end,
                                        __start_omp_offloading_entries,
                                        __stop_omp_offloading_entries}};
static const struct desc desc = {1, images, __start_omp_offloading_entries,
                                 __stop_omp_offloading_entries};

void __tgt_register_lib(const struct desc *);
void __tgt_unregister_lib(const struct desc *);

#ifdef ARCH
struct image_info {
  int32_t version, number, count;
  const char *arch;
  const char *compile_opts;
};
__attribute__((section(".offload_arch_list"), used)) static const char arch0[] = ARCH;
static const struct image_info info0 = {1, 0, 1, arch0, 0};
void __tgt_register_image_info(const struct image_info *);
#endif

static void reg(void) {
#ifdef ARCH
  __tgt_register_image_info(&info0);
#endif
  __tgt_register_lib(&desc);
}

static void unreg(void) { __tgt_unregister_lib(&desc); }

// Priority 1 constructor and destructor, as the legacy wrappers used.
__attribute__((section(".init_array.1"), used)) static void (*ref_ctor)(void) = reg;
__attribute__((section(".fini_array.1"), used)) static void (*ref_dtor)(void) = unreg;
