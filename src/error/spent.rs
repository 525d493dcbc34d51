//! What a command's budget counts ([`Spent`], carried by
//! [`crate::ErrorKind::BudgetExceeded`]). Here rather than in
//! `offload_binary` (which re-exports it with its `Budget`) so that `error`
//! imports nothing.

use std::fmt;

/// What a [`Budget`](crate::offload_binary::Budget) counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Spent {
    /// Bytes inflated out of compressed binaries, and bytes of objects
    /// decoded from LLVM bitcode's bitstream.
    Inflated,
    /// Images read (nested ones included).
    Images,
    /// Files written.
    Files,
    /// Levels of binaries nested in images.
    Depth,
}

impl Spent {
    /// What is counted, as a message says it after a number.
    pub fn unit(self) -> &'static str {
        match self {
            Spent::Inflated => "bytes decompressed",
            Spent::Images => "images",
            Spent::Files => "files written",
            Spent::Depth => "levels of OffloadBinaries nested in images",
        }
    }
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.unit())
    }
}
