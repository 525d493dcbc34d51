/* Loads the shared library named by argv[1] (a path) and checks the
   dynamic loader's view of it, as dl_iterate_phdr hands it out: every
   program header of a known type; every load segment's alignment a power
   of two at least the page size, its offset congruent to its address
   modulo it; and the bytes of every load segment that is not writable
   (nothing relocates them) in memory exactly the file's bytes at its
   offset. Prints what is wrong, then "ok" or "BAD". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct link_map *lib;
static unsigned char *file;
static long file_len;
static int found, bad;

static int check(struct dl_phdr_info *info, size_t size, void *unused) {
  (void)size; (void)unused;
  if (info->dlpi_addr != lib->l_addr || strcmp(info->dlpi_name, lib->l_name) != 0) return 0;
  found = 1;
  unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    int known = p->p_type <= PT_TLS || p->p_type == PT_GNU_EH_FRAME || p->p_type == PT_GNU_STACK ||
                p->p_type == PT_GNU_RELRO || p->p_type == PT_GNU_PROPERTY;
    if (!known) { printf("program header %d: type %#x\n", i, (unsigned)p->p_type); bad = 1; }
    if (p->p_type != PT_LOAD) continue;
    unsigned long align = p->p_align;
    if ((align & (align - 1)) != 0 || align < page || (p->p_vaddr - p->p_offset) % align != 0) {
      printf("load segment %d: offset %#lx address %#lx alignment %#lx\n", i,
             (unsigned long)p->p_offset, (unsigned long)p->p_vaddr, align);
      bad = 1;
    }
    if (p->p_flags & PF_W) continue;
    if (p->p_offset > (unsigned long)file_len || p->p_filesz > (unsigned long)file_len - p->p_offset) {
      printf("load segment %d: past the file's end\n", i);
      bad = 1;
    } else if (memcmp((const void *)(info->dlpi_addr + p->p_vaddr), file + p->p_offset, p->p_filesz)) {
      printf("load segment %d: its bytes in memory are not the file's\n", i);
      bad = 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f || fseek(f, 0, SEEK_END) || (file_len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) return 2;
  file = malloc((size_t)file_len + 1);
  if (!file || fread(file, 1, (size_t)file_len, f) != (size_t)file_len) return 2;
  fclose(f);
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  if (dlinfo(h, RTLD_DI_LINKMAP, &lib) != 0) { printf("dlinfo: %s\n", dlerror()); return 1; }
  dl_iterate_phdr(check, NULL);
  if (!found) { printf("dl_iterate_phdr does not list it\n"); bad = 1; }
  printf("%s\n", bad ? "BAD" : "ok");
  return bad;
}
