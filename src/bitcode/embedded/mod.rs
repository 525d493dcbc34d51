//! The objects a bitcode module embeds for the offloading tools, as LLVM
//! 22's `extractFromBitcode` (`llvm/lib/Object/OffloadBinary.cpp`) finds
//! them: each operand of the named metadata `llvm.embedded.objects` that
//! is a node of at least two operands, the second the string
//! `.llvm.offloading` and the first a global variable whose initializer is
//! a constant data array or vector, stands for that initializer's bytes.
//! Other operands are passed over.
//!
//! What is read of the bitstream (`llvm/Bitcode/LLVMBitCodes.h`,
//! `BitcodeReader.cpp`, `MetadataLoader.cpp`):
//!
//! - the top level: one module (LLVM loads exactly one), and the string
//!   table after it (global names);
//! - in the module: its version (2: names in the string table), the
//!   `BLOCKINFO` block, the type table, the `GLOBALVAR`, `FUNCTION`,
//!   `ALIAS` and `IFUNC` records (each a value, numbered in record order),
//!   the module's constants (each record but `SETTYPE` a value, numbered
//!   on), and its metadata (strings first, then every record that defines
//!   metadata, numbered in order; `METADATA_NAME` and the
//!   `METADATA_NAMED_NODE` after it);
//! - nothing of function bodies.
//!
//! The first pass keeps where each candidate record is, not its contents;
//! the initializers that turn out to be wanted are decoded from there
//! ([`EmbeddedObjects::bytes`]), so that memory stays proportional to what
//! is asked for. Everything kept per record is capped by the size of the
//! input.

use super::stream::{Abbrevs, Bits, Cursor, Record, Res, Value};
use crate::error::{Error, Result};

/// The section name that marks OffloadBinaries in `llvm.embedded.objects`.
pub const OFFLOADING_SECTION: &str = ".llvm.offloading";

mod codes;
mod metadata;
mod read;
mod resolve;
#[cfg(test)]
pub(crate) mod tests;

/// Where a record is: the block whose abbreviations it uses (an index in
/// the list of such blocks kept), the bit after its abbreviation ID, and
/// that ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At {
    block: usize,
    pos: u64,
    id: u64,
}

/// A module-level value, as far as this reader tells them apart.
#[derive(Debug, Clone, Copy)]
enum Val {
    /// A global variable: its name in the string table, and its
    /// initializer's value ID + 1 (0: none).
    Global { name: (u64, u64), init: u64 },
    /// A constant that may be a data array: its record and the type set
    /// before it (`None`: the default, `i32`).
    Data { code: u64, at: At, ty: Option<u64> },
    /// Anything else (functions, aliases, other constants).
    Other,
}

/// Consecutive values or metadata of one kind (`Other` runs merge).
#[derive(Debug, Clone, Copy)]
struct Run<T> {
    first: u64,
    count: u64,
    what: T,
}

/// A module-level metadata, as far as this reader tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Md {
    /// A string (`STRINGS` or `STRING_OLD`).
    String,
    /// `ValueAsMetadata`: a value ID.
    Value(u64),
    /// A node (`NODE`, `DISTINCT_NODE`), to be read again.
    Node(At),
    /// Anything else (debug-info nodes and the like).
    Other,
}

/// A type, as far as `CST_CODE_DATA` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// An integer of this many bits.
    Int(u64),
    /// A floating-point type of this many bytes (half, bfloat, float,
    /// double).
    Float(u8),
    /// An array or vector of this element type.
    Sequence(u64),
    /// Anything else.
    Other,
}

/// How the bytes of an initializer are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// Each operand is a byte (`STRING`).
    Bytes,
    /// Each operand is a byte, and a NUL follows (`CSTRING`).
    CString,
    /// Each operand is an element of this many bytes (`DATA`).
    Elements(u8),
}

/// An object `llvm.embedded.objects` lists for [`OFFLOADING_SECTION`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddedObject {
    /// The global variable's name (empty when it has none); not valid
    /// UTF-8 is replaced.
    pub global: String,
    /// The size of its initializer, in bytes ([`EmbeddedObjects::bytes`]
    /// decodes them).
    pub size: u64,
    at: At,
    decode: Decode,
}

/// The objects of one bitcode module, in the order of the operands of
/// `llvm.embedded.objects`, and what [`EmbeddedObjects::bytes`] needs to
/// decode them.
#[derive(Debug)]
pub struct EmbeddedObjects<'data> {
    /// The objects (a global listed twice is here twice, as LLVM reads it
    /// twice).
    pub objects: Vec<EmbeddedObject>,
    /// The bitstream (without a wrapper header).
    bits: &'data [u8],
    /// Where the bitstream starts in the input (after a wrapper header).
    base: u64,
    /// The abbreviations of each module-level constants block.
    blocks: Vec<Abbrevs>,
}

impl EmbeddedObjects<'_> {
    /// The total size of the objects' bytes.
    #[cfg(test)]
    pub fn total_size(&self) -> u64 {
        self.objects
            .iter()
            .fold(0u64, |sum, o| sum.saturating_add(o.size))
    }

    /// The bytes of `object`'s initializer, decoded from the bitstream
    /// ([`EmbeddedObject::size`] bytes). An initializer of zero bytes only
    /// gives none: LLVM makes a `zeroinitializer` of it, which is not a
    /// data array, and passes it over.
    pub fn bytes(&self, object: &EmbeddedObject) -> Result<Vec<u8>> {
        let mut cur = Cursor::new(Bits::new(self.bits));
        let abbrevs = self
            .blocks
            .get(object.at.block)
            .ok_or_else(|| invalid("the object was not found by this reader".into()))?;
        let pos = object.at.pos;
        let out = (|| {
            let r = cur.reread(abbrevs, pos, object.at.id)?;
            decode(r, object.decode, object.size)
        })()
        .map_err(|e| at_error(e, self.base, pos));
        let out = out?;
        if out.iter().all(|&b| b == 0) {
            return Ok(Vec::new());
        }
        Ok(out)
    }
}

fn invalid(detail: String) -> Error {
    Error::invalid("LLVM bitcode", detail)
}

fn at_error(e: &str, base: u64, bit: u64) -> Error {
    invalid(format!("{e} (at byte {:#x})", base.saturating_add(bit / 8)))
}

/// The objects that the bitcode file `data` (raw, or in a wrapper header)
/// embeds for the offloading tools, as LLVM 22's `extractOffloadBinaries`
/// finds them; none when the module has no `llvm.embedded.objects`. Their
/// bytes are decoded one at a time by [`EmbeddedObjects::bytes`], so that
/// a caller can weigh their sizes first.
///
/// Bitcode this cannot read is an error naming the problem and where: a
/// malformed bitstream, not exactly one module, a module older than LLVM
/// 5 (version 2), an operand of `llvm.embedded.objects` that names no
/// node, a record this reader does not know in the module's metadata (its
/// numbering would be guessed), an initializer that LLVM would reject.
pub fn offloading_objects(data: &[u8]) -> Result<EmbeddedObjects<'_>> {
    let (base, bc) = super::wrapper::unwrap_at(data).map_err(|e| invalid(e.to_string()))?;
    let mut m = Module::new(bc);
    if let Err(e) = m.read_file() {
        return Err(at_error(e, base, m.cur.bits.pos()));
    }
    let objects = m.resolve().map_err(|e| invalid(e.to_string()))?;
    Ok(EmbeddedObjects {
        objects,
        bits: bc,
        base,
        blocks: m.const_blocks,
    })
}

/// Decodes the rest of the data record `r` as `how` says, expecting
/// `size` bytes.
fn decode(mut r: Record<'_, '_>, how: Decode, size: u64) -> Res<Vec<u8>> {
    let mut out = Vec::new();
    out.try_reserve_exact(usize::try_from(size).map_err(|_| "initializer too large")?)
        .map_err(|_| "initializer too large for memory")?;
    let width = match how {
        Decode::Bytes | Decode::CString => 1,
        Decode::Elements(w) => usize::from(w),
    };
    loop {
        if width == 1 && r.array_bytes(&mut out)? {
            continue;
        }
        match r.next()? {
            None => break,
            Some(Value::Scalar(v)) => out.extend_from_slice(&v.to_le_bytes()[..width]),
            // A blob's bytes are operands of their own (as LLVM reads a
            // record without asking for its blob).
            Some(Value::Blob(b)) => {
                for &byte in b {
                    out.extend_from_slice(&u64::from(byte).to_le_bytes()[..width]);
                }
            }
        }
        if crate::num::len64(&out) > size {
            return Err("initializer longer than when it was first read");
        }
    }
    if how == Decode::CString {
        out.push(0);
    }
    if crate::num::len64(&out) != size {
        return Err("initializer size differs from when it was first read");
    }
    Ok(out)
}

/// The first pass over the file.
struct Module<'a> {
    cur: Cursor<'a>,
    /// Records kept (values, metadata, types) against the cap.
    kept: u64,
    cap: u64,
    version: Option<u64>,
    modules: u64,
    strtab: Option<&'a [u8]>,
    values: Vec<Run<Val>>,
    next_value: u64,
    types: Vec<Ty>,
    const_blocks: Vec<Abbrevs>,
    md_blocks: Vec<Abbrevs>,
    mds: Vec<Run<Md>>,
    next_md: u64,
    /// Metadata IDs of the strings equal to `.llvm.offloading`.
    offloading: Vec<u64>,
    /// The operands of `llvm.embedded.objects` (metadata IDs).
    named: Vec<u64>,
    vals: Vec<u64>,
}

/// The most operands read into memory from one record that is not data.
const MAX_OPERANDS: usize = 1 << 20;

impl<'a> Module<'a> {
    fn new(bc: &'a [u8]) -> Self {
        let bits = Bits::new(bc);
        let cap = crate::num::len64(bc).saturating_add(1024);
        Module {
            cur: Cursor::new(bits),
            kept: 0,
            cap,
            version: None,
            modules: 0,
            strtab: None,
            values: Vec::new(),
            next_value: 0,
            types: Vec::new(),
            const_blocks: Vec::new(),
            md_blocks: Vec::new(),
            mds: Vec::new(),
            next_md: 0,
            offloading: Vec::new(),
            named: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Counts one more thing kept in memory against the cap.
    fn keep(&mut self, n: u64) -> Res<()> {
        self.kept = self.kept.saturating_add(n);
        if self.kept > self.cap {
            return Err("more records than the size of the bitcode allows");
        }
        Ok(())
    }
}

/// Reads the rest of a record that is not data into `out`, a blob's bytes
/// as operands of their own (as LLVM reads records without asking for a
/// blob).
fn all_values(r: &mut Record<'_, '_>, out: &mut Vec<u64>) -> Res<()> {
    out.clear();
    while let Some(v) = r.next()? {
        if out.len() >= MAX_OPERANDS {
            return Err("record has too many operands");
        }
        match v {
            Value::Scalar(s) => out.push(s),
            Value::Blob(b) => {
                if b.len() > MAX_OPERANDS - out.len() {
                    return Err("record has too many operands");
                }
                out.extend(b.iter().map(|&x| u64::from(x)));
            }
        }
    }
    Ok(())
}
