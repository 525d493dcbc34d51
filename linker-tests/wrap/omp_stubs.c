// The OpenMP runtime calls app.c makes, for programs that link the recording
// stub instead of libomp and libomptarget (wrap/cpus.rs). main never calls
// app_run, so none of them runs.
#include <stdlib.h>
void __kmpc_end_reduce_nowait(void) { abort(); }
void __kmpc_for_static_fini(void) { abort(); }
void __kmpc_for_static_init_4(void) { abort(); }
void __kmpc_fork_call(void) { abort(); }
void __kmpc_fork_teams(void) { abort(); }
void __kmpc_reduce_nowait(void) { abort(); }
void __tgt_target_data_update_mapper(void) { abort(); }
void __tgt_target_kernel(void) { abort(); }
