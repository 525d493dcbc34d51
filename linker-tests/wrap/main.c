// Runs the OpenMP program linked into this executable (or a library it
// needs); the exit status is the number of failed checks.
int app_run(void);

int main(void) { return app_run(); }
