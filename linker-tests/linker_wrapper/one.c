// The whole program in one file: app.c's target regions and a main, in one
// translation unit, built and linked by a single clang command.
#include "../wrap/app.c"

int main(void) { return app_run(); }
