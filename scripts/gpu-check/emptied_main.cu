int run_a();
int run_b();
int main() { return run_a() | run_b(); }
