/* Loads a DLL, calls one of its exports `int f(int *out)` and prints the
   status and the value: "STATUS VALUE\n". No C runtime: kernel32 only. */
typedef void *HANDLE;
__declspec(dllimport) HANDLE __stdcall LoadLibraryA(const char *);
__declspec(dllimport) void *__stdcall GetProcAddress(HANDLE, const char *);
__declspec(dllimport) HANDLE __stdcall GetStdHandle(unsigned long);
__declspec(dllimport) int __stdcall WriteFile(HANDLE, const void *, unsigned long, unsigned long *, void *);
__declspec(dllimport) void __stdcall ExitProcess(unsigned);
__declspec(dllimport) char *__stdcall GetCommandLineA(void);

static char *put(char *p, long v) {
  char t[24]; int n = 0;
  if (v < 0) { *p++ = '-'; v = -v; }
  do { t[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) *p++ = t[--n];
  return p;
}

/* argv[1] = DLL, argv[2] = export: split the command line on spaces. */
void mainCRTStartup(void) {
  char *c = GetCommandLineA(), *arg[3]; int n = 0;
  while (*c && n < 3) {
    while (*c == ' ') *c++ = 0;
    if (!*c) break;
    if (*c == '"') { arg[n++] = ++c; while (*c && *c != '"') c++; if (*c) *c++ = 0; }
    else { arg[n++] = c; while (*c && *c != ' ') c++; }
  }
  if (n < 3) ExitProcess(2);
  HANDLE h = LoadLibraryA(arg[1]);
  if (!h) ExitProcess(3);
  int (*f)(int *) = (int (*)(int *))GetProcAddress(h, arg[2]);
  if (!f) ExitProcess(4);
  int v = 0, s = f(&v);
  char buf[64], *p = put(buf, s);
  *p++ = ' '; p = put(p, v); *p++ = '\n';
  unsigned long w;
  WriteFile(GetStdHandle((unsigned long)-11), buf, (unsigned long)(p - buf), &w, 0);
  ExitProcess(0);
}
