//! GNU `ar` archives as LLVM writes them (placeholder; see the helper task).
