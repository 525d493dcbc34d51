//! `inspect --kernels`, `check --require-kernel` / `--forbid-kernel`:
//! kernel lists and resource figures of code built here, held to the
//! reference tools (llvm-readelf and llvm-nm for AMDGPU code objects,
//! cuobjdump for cubins).

use libtest_mimic::Trial;

test_files! {
    pub(crate) amdgpu,
    pub(crate) cuda,
}

pub fn tests() -> Vec<Trial> {
    file_trials()
}
