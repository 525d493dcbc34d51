//! `inspect --kernels`, `check --require-kernel` / `--forbid-kernel`:
//! kernel lists and resource figures of code built here, held to the
//! reference tools (llvm-readelf and llvm-nm for AMDGPU code objects,
//! cuobjdump for cubins).

use libtest_mimic::Trial;

pub(crate) mod amdgpu;
pub(crate) mod cuda;

pub fn tests() -> Vec<Trial> {
    let mut v = amdgpu::tests();
    v.extend(cuda::tests());
    v
}
