//! GNU `ar` archives, written byte for byte as LLVM 22 writes them.
//!
//! LLVM's `writeArchive` (`llvm/lib/Object/ArchiveWriter.cpp`) with the GNU
//! kind, a normal symbol table, deterministic headers and a regular (not
//! thin) archive is what `llvm-offload-binary --archive`,
//! `clang-offload-bundler -type=a -unbundle` and `llvm-ar rcD --format=gnu`
//! produce. The layout, all text fields ASCII, left-aligned, space-padded:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `!<arch>\n` |
//! | 8 | 60 | symbol-table header: name `/` (`/SYM64/`), mtime `0`, uid `0`, gid `0`, mode `0`, size |
//! | 68 | … | symbol count, then one member-header offset per symbol (big-endian u32, u64 for `/SYM64/`), then the NUL-terminated names, then NUL to an even size |
//! | … | 60 | long-name table header: name `//`, mtime, uid, gid and mode blank, size |
//! | … | … | `name/\n` per distinct long name, then `\n` to an even size |
//! | … | 60 | member header: name, mtime `0`, uid `0`, gid `0`, mode `644`, size |
//! | … | … | member bytes, then `\n` to an even size |
//!
//! A header is name (16 bytes), mtime (12), uid (6), gid (6), mode in octal
//! (8), size in decimal (10) and "`\n". What the writer does, checked against
//! the installed LLVM 22 tools (`llvm-ar`, `llvm-nm --print-armap`,
//! `llvm-offload-binary --archive`, and `SYM64_THRESHOLD`, the environment
//! variable LLVM reads to move the 64-bit switch for tests):
//!
//! - **Names.** A name shorter than 16 bytes without a `/` is stored as
//!   `name/`. Any other name goes to the `//` table, once per distinct name,
//!   and the header holds `/` and its offset in that table.
//! - **Symbol table.** Written only if at least one member is an object to
//!   LLVM (`member_symbols` returns `Some`). If such members exist but
//!   define no symbols, the table still appears, holding a zero count and
//!   NUL padding (8 bytes, 12 for `/SYM64/`). An archive of raw members only
//!   has no symbol table; an empty archive is the 8 magic bytes.
//! - **Symbol order.** Members in order, and within a member its symbol
//!   table order. An ELF symbol is listed when it is not local, not
//!   `STT_FILE` or `STT_SECTION`, not the null symbol, not a mapping symbol
//!   (names starting `$d`/`$x` on AArch64 and RISC-V; empty or starting
//!   `$d`/`$t`/`$a` on Arm; `$d`/`$t` on C-SKY), and either defined
//!   (absolute counts) or common. Weak, hidden, protected, TLS, IFUNC and
//!   `STB_GNU_UNIQUE` symbols are listed; undefined ones, weak or not, are not.
//! - **64-bit table.** `/SYM64/` is used when the last member's header would
//!   start at or beyond 4 GiB with a 32-bit table.
//! - **Which members are objects.** LLVM decides by magic
//!   (`llvm/lib/BinaryFormat/Magic.cpp`), for 4 bytes or more: ELF (18 bytes
//!   or more), LLVM bitcode, COFF (including *any* data starting with two
//!   zero bytes), XCOFF, GOFF, Mach-O, PE, WebAssembly and DXContainer. Other
//!   data (OffloadBinary, SPIR-V, CUDA fat binaries, text) is raw. LLVM fails
//!   on an object it cannot parse, except bitcode, which it then stores as
//!   raw with a warning.
//!
//! This writer reads symbols from ELF files, from COFF objects (regular and
//! `/bigobj`: defined external and weak-external symbols, read as LLVM's
//! `COFFObjectFile` reads them) and, through the symbol table LLVM (since version
//! 5) stores in the bitcode it writes (`irsymtab`), from LLVM bitcode. It
//! refuses members that LLVM would read symbols from in
//! other formats, and bitcode whose symbol table it cannot read, rather than
//! write an archive that differs from LLVM's. Member names are written as
//! given; like LLVM, the writer does not check them.
//!
//! # Examples
//!
//! An archive of two raw members (an object member also gets its symbols
//! in the symbol table):
//!
//! ```
//! use offload_kit::archive::{self, Member};
//!
//! let members = [
//!     Member { name: "a.bin".into(), data: b"first" },
//!     Member { name: "a-long-member-name.bin".into(), data: b"second" },
//! ];
//! let mut out = Vec::new();
//! let data: Vec<&[u8]> = members.iter().map(|m| m.data).collect();
//! archive::layout_gnu(&members, true)?.write_to(&mut out, &data)?;
//! assert!(out.starts_with(b"!<arch>\n//"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::host::ar::write::{Member, SYM64_THRESHOLD, layout_gnu, layout_gnu_with_threshold};
