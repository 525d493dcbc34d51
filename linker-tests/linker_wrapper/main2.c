// Runs both files' target regions; the exit status counts the failures.
int app_run(void);
int two_run(void);

int main(void) { return app_run() + two_run(); }
