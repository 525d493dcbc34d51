#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>
int launch1(void); int launch2(void);

/* Every loaded object's program headers, as the dynamic loader hands them
   out (what unwinders and profilers read): each of a known type, each
   load segment's alignment a power of two. A file whose header table
   moved and that the loader found at a wrong address fails this. */
static int check(struct dl_phdr_info *info, size_t size, void *bad) {
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    int known = p->p_type <= PT_TLS || p->p_type == PT_GNU_EH_FRAME || p->p_type == PT_GNU_STACK ||
                p->p_type == PT_GNU_RELRO || p->p_type == PT_GNU_PROPERTY;
    if (!known || (p->p_type == PT_LOAD && (p->p_align & (p->p_align - 1)) != 0)) {
      printf("bad program header %d of '%s'\n", i, info->dlpi_name);
      *(int *)bad = 1;
    }
  }
  return 0;
}

int main(void) {
  int bad = 0;
  dl_iterate_phdr(check, &bad);
  printf("program headers %s\n", bad ? "BAD" : "ok");
  printf("run %d\n", launch1() + launch2());
  return 0;
}
