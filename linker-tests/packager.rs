//! offload-kit as `llvm-offload-binary` against the real llvm-offload-binary 22:
//! the same packed bytes over a matrix of inputs, each tool extracting the
//! other's output to the same files, the same messages for bad command
//! lines, and a clean error for each kind of malformed input.
//!
//! `interop.rs` has the matrix and the extraction from objects and
//! archives, `transcripts.rs` the messages, `malformed.rs` the malformed
//! inputs, `newer.rs` what offload-kit does beyond LLVM 22.

use libtest_mimic::{Failed, Trial};

use crate::util::{
    bytes, clean_failure, clean_failure_code, llvm, ours, ours_as,
    run, same, same_bytes, same_messages, snapshot, tempdir,
};

test_files! {
    interop,
    transcripts,
    malformed,
    newer,
}

const TOOL: &str = "llvm-offload-binary";

/// Everything above, as trials.
pub fn tests() -> Vec<Trial> {
    file_trials()
}
