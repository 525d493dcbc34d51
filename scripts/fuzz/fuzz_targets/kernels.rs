//! Any bytes as a device image's kernels and symbols
//! (`offload_kit::fuzz::kernels`): AMDGPU metadata, cubin sections, PTX
//! text, ELF symbol tables; no panic, the same answer twice.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(kernels);
