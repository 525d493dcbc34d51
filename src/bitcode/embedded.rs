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

use super::stream::{Abbrevs, BLOCKINFO_BLOCK, Bits, Cursor, Entry, Record, Res, Value};
use crate::error::{Error, Result};

/// The section name that marks OffloadBinaries in `llvm.embedded.objects`.
pub const OFFLOADING_SECTION: &str = ".llvm.offloading";

/// The named metadata that lists embedded objects.
const EMBEDDED_OBJECTS: &[u8] = b"llvm.embedded.objects";

// Block IDs (`bitc::BlockIDs`).
const MODULE_BLOCK: u64 = 8;
const CONSTANTS_BLOCK: u64 = 11;
const METADATA_BLOCK: u64 = 15;
const TYPE_BLOCK: u64 = 17;
const STRTAB_BLOCK: u64 = 23;

// `bitc::ModuleCodes`.
const MODULE_CODE_VERSION: u64 = 1;
const MODULE_CODE_GLOBALVAR: u64 = 7;
const MODULE_CODE_FUNCTION: u64 = 8;
const MODULE_CODE_ALIAS_OLD: u64 = 9;
const MODULE_CODE_ALIAS: u64 = 14;
const MODULE_CODE_IFUNC: u64 = 18;

// `bitc::ConstantsCodes`.
const CST_CODE_SETTYPE: u64 = 1;
const CST_CODE_AGGREGATE: u64 = 7;
const CST_CODE_STRING: u64 = 8;
const CST_CODE_CSTRING: u64 = 9;
const CST_CODE_DATA: u64 = 22;

// `bitc::TypeCodes` (those that are not a type, and those `DATA` needs).
const TYPE_CODE_NUMENTRY: u64 = 1;
const TYPE_CODE_FLOAT: u64 = 3;
const TYPE_CODE_DOUBLE: u64 = 4;
const TYPE_CODE_INTEGER: u64 = 7;
const TYPE_CODE_HALF: u64 = 10;
const TYPE_CODE_ARRAY: u64 = 11;
const TYPE_CODE_VECTOR: u64 = 12;
const TYPE_CODE_STRUCT_NAME: u64 = 19;
const TYPE_CODE_BFLOAT: u64 = 23;

// `bitc::MetadataCodes`.
const METADATA_STRING_OLD: u64 = 1;
const METADATA_VALUE: u64 = 2;
const METADATA_NODE: u64 = 3;
const METADATA_NAME: u64 = 4;
const METADATA_DISTINCT_NODE: u64 = 5;
const METADATA_NAMED_NODE: u64 = 10;
const METADATA_STRINGS: u64 = 35;

/// Whether a metadata record code defines the next metadata ID, as LLVM
/// 22's `MetadataLoader` numbers them; `None` for codes it does not know.
/// (`KIND`, `NAME`, `NAMED_NODE`, `ATTACHMENT`, `GLOBAL_DECL_ATTACHMENT`,
/// `INDEX_OFFSET` and `INDEX` define none; `STRINGS` defines several and
/// is handled apart.)
fn defines_metadata(code: u64) -> Option<bool> {
    match code {
        // STRING_OLD, VALUE, NODE, DISTINCT_NODE, LOCATION, OLD_NODE,
        // OLD_FN_NODE, the debug-info nodes from GENERIC_DEBUG to
        // MACRO_FILE, GLOBAL_VAR_EXPR, LABEL, STRING_TYPE, COMMON_BLOCK,
        // GENERIC_SUBRANGE, ARG_LIST, ASSIGN_ID, SUBRANGE_TYPE,
        // FIXED_POINT_TYPE.
        1..=3 | 5 | 7..=9 | 12..=34 | 37 | 40 | 41 | 44..=49 => Some(true),
        4 | 6 | 10 | 11 | 36 | 38 | 39 => Some(false),
        _ => None,
    }
}

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
    let (base, bc) = super::unwrap_at(data).map_err(|e| invalid(e.to_string()))?;
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

    /// The top level, as `getBitcodeFileContents` walks it.
    fn read_file(&mut self) -> Res<()> {
        self.cur.bits.seek(32)?;
        loop {
            // LLVM stops when at most 8 bytes remain (tolerating padding).
            let byte = self.cur.bits.pos() / 8;
            if byte.saturating_add(8) >= crate::num::len64(self.cur.bits.data()) {
                break;
            }
            match self.cur.next()? {
                Entry::Block(MODULE_BLOCK) => {
                    if self.modules > 0 {
                        return Err("more than one module (LLVM reads only single-module files)");
                    }
                    self.modules += 1;
                    self.read_module()?;
                }
                Entry::Block(STRTAB_BLOCK) if self.modules == 1 && self.strtab.is_none() => {
                    self.strtab = Some(self.read_strtab()?);
                }
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => self.cur.record(id)?.skip_rest()?,
                Entry::End => return Err("malformed block"),
            }
        }
        if self.modules == 0 {
            return Err("no module");
        }
        Ok(())
    }

    fn read_strtab(&mut self) -> Res<&'a [u8]> {
        self.cur.enter(STRTAB_BLOCK)?;
        let mut blob: &[u8] = &[];
        loop {
            match self.cur.next()? {
                Entry::End => return Ok(blob),
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    let b = r.values(&mut self.vals, MAX_OPERANDS)?;
                    // STRTAB_BLOB.
                    if code == 1 {
                        blob = b.unwrap_or(&[]);
                    }
                }
            }
        }
    }

    fn read_module(&mut self) -> Res<()> {
        self.cur.enter(MODULE_BLOCK)?;
        loop {
            match self.cur.next()? {
                Entry::End => break,
                Entry::Block(BLOCKINFO_BLOCK) => self.cur.read_block_info()?,
                Entry::Block(TYPE_BLOCK) => self.read_types()?,
                Entry::Block(CONSTANTS_BLOCK) => self.read_constants()?,
                Entry::Block(METADATA_BLOCK) => self.read_metadata()?,
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    match r.code() {
                        MODULE_CODE_VERSION => {
                            all_values(&mut r, &mut self.vals)?;
                            let v = *self.vals.first().ok_or("empty VERSION record")?;
                            self.version = Some(v);
                        }
                        MODULE_CODE_GLOBALVAR => {
                            all_values(&mut r, &mut self.vals)?;
                            self.global()?;
                        }
                        MODULE_CODE_FUNCTION
                        | MODULE_CODE_ALIAS
                        | MODULE_CODE_ALIAS_OLD
                        | MODULE_CODE_IFUNC => {
                            r.skip_rest()?;
                            self.push_value(Val::Other)?;
                        }
                        _ => r.skip_rest()?,
                    }
                }
            }
        }
        match self.version {
            Some(2) => Ok(()),
            Some(0 | 1) | None => Err(
                "module older than LLVM 5 (version 0 or 1, names in a value symbol table), \
                 which this reader does not read",
            ),
            Some(_) => Err("unknown module version"),
        }
    }

    /// A `GLOBALVAR` record (in `self.vals`): [strtab offset, size, type,
    /// flags, initid + 1, linkage, …].
    fn global(&mut self) -> Res<()> {
        if self.version != Some(2) {
            return Err("GLOBALVAR before a VERSION 2 record (bitcode older than LLVM 5?)");
        }
        if self.vals.len() < 8 {
            return Err("GLOBALVAR record too short");
        }
        let g = Val::Global {
            name: (self.vals[0], self.vals[1]),
            init: self.vals[4],
        };
        self.push_value(g)
    }

    fn push_value(&mut self, v: Val) -> Res<()> {
        let first = self.next_value;
        self.next_value = first.checked_add(1).ok_or("too many values")?;
        if let (Val::Other, Some(last)) = (v, self.values.last_mut())
            && matches!(last.what, Val::Other)
        {
            last.count += 1;
            return Ok(());
        }
        self.keep(1)?;
        self.values.push(Run {
            first,
            count: 1,
            what: v,
        });
        Ok(())
    }

    fn read_types(&mut self) -> Res<()> {
        self.cur.enter(TYPE_BLOCK)?;
        loop {
            match self.cur.next()? {
                Entry::End => return Ok(()),
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    if matches!(code, TYPE_CODE_NUMENTRY | TYPE_CODE_STRUCT_NAME) {
                        r.skip_rest()?;
                        continue;
                    }
                    all_values(&mut r, &mut self.vals)?;
                    let ty = match code {
                        TYPE_CODE_INTEGER => Ty::Int(*self.vals.first().ok_or("empty type")?),
                        TYPE_CODE_HALF | TYPE_CODE_BFLOAT => Ty::Float(2),
                        TYPE_CODE_FLOAT => Ty::Float(4),
                        TYPE_CODE_DOUBLE => Ty::Float(8),
                        TYPE_CODE_ARRAY | TYPE_CODE_VECTOR => {
                            Ty::Sequence(*self.vals.get(1).ok_or("array type too short")?)
                        }
                        _ => Ty::Other,
                    };
                    self.keep(1)?;
                    self.types.push(ty);
                }
            }
        }
    }

    fn read_constants(&mut self) -> Res<()> {
        self.cur.enter(CONSTANTS_BLOCK)?;
        let block = self.const_blocks.len();
        let mut ty = None;
        loop {
            match self.cur.next()? {
                Entry::End => {
                    self.const_blocks.push(self.cur.take_closed());
                    return Ok(());
                }
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let pos = self.cur.bits.pos();
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    if code == CST_CODE_SETTYPE {
                        all_values(&mut r, &mut self.vals)?;
                        ty = Some(*self.vals.first().ok_or("empty SETTYPE record")?);
                        continue;
                    }
                    r.skip_rest()?;
                    let v = match code {
                        CST_CODE_STRING | CST_CODE_CSTRING | CST_CODE_DATA | CST_CODE_AGGREGATE => {
                            Val::Data {
                                code,
                                at: At { block, pos, id },
                                ty,
                            }
                        }
                        _ => Val::Other,
                    };
                    self.push_value(v)?;
                }
            }
        }
    }

    fn push_md(&mut self, md: Md, count: u64) -> Res<()> {
        let first = self.next_md;
        self.next_md = first.checked_add(count).ok_or("too many metadata")?;
        if let (Md::Other | Md::String, Some(last)) = (md, self.mds.last_mut())
            && last.what == md
        {
            last.count += count;
            return Ok(());
        }
        self.keep(1)?;
        self.mds.push(Run {
            first,
            count,
            what: md,
        });
        Ok(())
    }

    fn read_metadata(&mut self) -> Res<()> {
        self.cur.enter(METADATA_BLOCK)?;
        let block = self.md_blocks.len();
        loop {
            let entry = self.cur.next()?;
            let id = match entry {
                Entry::End => {
                    self.md_blocks.push(self.cur.take_closed());
                    return Ok(());
                }
                Entry::Block(_) => {
                    self.cur.skip()?;
                    continue;
                }
                Entry::Record(id) => id,
            };
            let pos = self.cur.bits.pos();
            let mut r = self.cur.record(id)?;
            match r.code() {
                METADATA_STRINGS => {
                    let blob = r.values(&mut self.vals, MAX_OPERANDS)?;
                    self.strings(blob.unwrap_or(&[]))?;
                }
                METADATA_STRING_OLD => {
                    all_values(&mut r, &mut self.vals)?;
                    let same = self
                        .vals
                        .iter()
                        .map(|&v| v.to_le_bytes()[0])
                        .eq(OFFLOADING_SECTION.bytes());
                    if same {
                        self.offloading.push(self.next_md);
                    }
                    self.push_md(Md::String, 1)?;
                }
                METADATA_VALUE => {
                    r.values(&mut self.vals, MAX_OPERANDS)?;
                    let &[_, value] = self.vals.as_slice() else {
                        return Err("METADATA_VALUE record is not [type, value]");
                    };
                    self.push_md(Md::Value(value), 1)?;
                }
                METADATA_NODE | METADATA_DISTINCT_NODE => {
                    r.skip_rest()?;
                    self.push_md(Md::Node(At { block, pos, id }), 1)?;
                }
                METADATA_NAME => {
                    r.values(&mut self.vals, MAX_OPERANDS)?;
                    let wanted = self
                        .vals
                        .iter()
                        .map(|&v| v.to_le_bytes()[0])
                        .eq(EMBEDDED_OBJECTS.iter().copied());
                    self.named_node(wanted)?;
                }
                code => match defines_metadata(code) {
                    Some(true) => {
                        r.skip_rest()?;
                        self.push_md(Md::Other, 1)?;
                    }
                    Some(false) => r.skip_rest()?,
                    None => {
                        return Err(
                            "a metadata record this reader does not know (the numbering of \
                             the metadata after it would be a guess)",
                        );
                    }
                },
            }
        }
    }

    /// The `METADATA_NAMED_NODE` record that must follow a `METADATA_NAME`;
    /// its operands are kept when `wanted`.
    fn named_node(&mut self, wanted: bool) -> Res<()> {
        let Entry::Record(id) = self.cur.next()? else {
            return Err("METADATA_NAME not followed by METADATA_NAMED_NODE");
        };
        let mut r = self.cur.record(id)?;
        if r.code() != METADATA_NAMED_NODE {
            return Err("METADATA_NAME not followed by METADATA_NAMED_NODE");
        }
        if !wanted {
            return r.skip_rest();
        }
        let max = usize::try_from(self.cap).unwrap_or(usize::MAX);
        while let Some(v) = r.next()? {
            let Value::Scalar(md) = v else {
                return Err("blob in METADATA_NAMED_NODE");
            };
            if self.named.len() >= max {
                return Err(
                    "llvm.embedded.objects has more operands than the bitcode's size allows",
                );
            }
            self.named.push(md);
        }
        Ok(())
    }

    /// A `METADATA_STRINGS` record's blob (the record's operands, count
    /// and offset, in `self.vals`): the lengths as VBR6 fields, then the
    /// characters from the offset.
    fn strings(&mut self, blob: &[u8]) -> Res<()> {
        let &[count, offset] = self.vals.as_slice() else {
            return Err("METADATA_STRINGS record is not [count, offset, blob]");
        };
        if count == 0 {
            return Err("METADATA_STRINGS with no strings");
        }
        let offset = usize::try_from(offset)
            .ok()
            .filter(|&o| o <= blob.len())
            .ok_or("METADATA_STRINGS offset past its blob")?;
        let (lengths, mut chars) = blob.split_at(offset);
        let mut bits = Bits::new(lengths);
        // Each length takes at least 6 bits.
        if count > bits.len() / 6 {
            return Err("METADATA_STRINGS lengths truncated");
        }
        for i in 0..count {
            let len = bits
                .vbr(6)
                .map_err(|_| "METADATA_STRINGS lengths truncated")?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= chars.len())
                .ok_or("METADATA_STRINGS characters truncated")?;
            let (s, rest) = chars.split_at(len);
            if s == OFFLOADING_SECTION.as_bytes() {
                self.offloading.push(self.next_md + i);
            }
            chars = rest;
        }
        self.push_md(Md::String, count)
    }

    /// What metadata ID `id` is.
    fn md(&self, id: u64) -> Option<Md> {
        let i = self.mds.partition_point(|r| r.first + r.count <= id);
        self.mds
            .get(i)
            .filter(|r| r.first <= id && id - r.first < r.count)
            .map(|r| r.what)
    }

    /// What value ID `id` is.
    fn value(&self, id: u64) -> Option<Val> {
        let i = self.values.partition_point(|r| r.first + r.count <= id);
        self.values
            .get(i)
            .filter(|r| r.first <= id && id - r.first < r.count)
            .map(|r| r.what)
    }

    /// The objects, from the operands of `llvm.embedded.objects`.
    fn resolve(&mut self) -> Res<Vec<EmbeddedObject>> {
        let mut out = Vec::new();
        let named = std::mem::take(&mut self.named);
        for md in named {
            let at = match self.md(md) {
                Some(Md::Node(at)) => at,
                // Debug-info nodes are nodes too, but never of this form.
                Some(Md::Other) => continue,
                Some(Md::String | Md::Value(_)) => {
                    return Err("an operand of llvm.embedded.objects is not a metadata node");
                }
                None => {
                    return Err("an operand of llvm.embedded.objects names no metadata");
                }
            };
            if let Some(object) = self.object(at)? {
                out.push(object);
            }
        }
        Ok(out)
    }

    /// The object the node at `at` stands for, if any.
    fn object(&mut self, at: At) -> Res<Option<EmbeddedObject>> {
        let abbrevs = self
            .md_blocks
            .get(at.block)
            .ok_or("metadata block lost")?
            .clone();
        let mut r = self.cur.reread(&abbrevs, at.pos, at.id)?;
        // Operands are metadata IDs + 1 (0: null).
        let (Some(Value::Scalar(gv)), Some(Value::Scalar(section))) = (r.next()?, r.next()?) else {
            return Ok(None);
        };
        let is_offloading = section
            .checked_sub(1)
            .is_some_and(|s| self.offloading.binary_search(&s).is_ok());
        if !is_offloading {
            return Ok(None);
        }
        let Some(Md::Value(value)) = gv.checked_sub(1).and_then(|g| self.md(g)) else {
            return Ok(None);
        };
        let Some(Val::Global { name, init }) = self.value(value) else {
            return Ok(None);
        };
        let Some(init) = init.checked_sub(1) else {
            // A declaration.
            return Ok(None);
        };
        let (code, at, ty) = match self.value(init) {
            Some(Val::Data { code, at, ty }) => (code, at, ty),
            Some(_) => return Ok(None),
            None => return Err("a global's initializer names no value"),
        };
        let decode = match code {
            CST_CODE_STRING => Decode::Bytes,
            CST_CODE_CSTRING => Decode::CString,
            CST_CODE_DATA => Decode::Elements(self.element_size(ty)?),
            // An aggregate of this reader does not read.
            _ => {
                if self.data_sequence(ty) {
                    return Err(
                        "an embedded object's initializer is an aggregate constant of \
                                simple elements, which this reader does not read",
                    );
                }
                return Ok(None);
            }
        };
        let abbrevs = self
            .const_blocks
            .get(at.block)
            .ok_or("constants block lost")?
            .clone();
        let mut r = self.cur.reread(&abbrevs, at.pos, at.id)?;
        let mut count = 0u64;
        while let Some(v) = r.next()? {
            count = count.saturating_add(match v {
                Value::Scalar(_) => 1 + r.skip_array()?,
                Value::Blob(b) => crate::num::len64(b),
            });
        }
        if count == 0 {
            return Err("empty data constant (LLVM rejects it)");
        }
        let size = match decode {
            Decode::Bytes => count,
            Decode::CString => count.saturating_add(1),
            Decode::Elements(w) => count.saturating_mul(u64::from(w)),
        };
        let global = self
            .strtab
            .and_then(|t| {
                let start = usize::try_from(name.0).ok()?;
                let end = start.checked_add(usize::try_from(name.1).ok()?)?;
                t.get(start..end)
            })
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        Ok(Some(EmbeddedObject {
            global,
            size,
            at,
            decode,
        }))
    }

    /// The element size of a `DATA` constant of type `ty`, as LLVM's
    /// reader takes it (integers of 8 to 64 bits, half, bfloat, float,
    /// double).
    fn element_size(&self, ty: Option<u64>) -> Res<u8> {
        let elt = match ty.and_then(|t| self.ty(t)) {
            Some(Ty::Sequence(elt)) => self.ty(elt),
            _ => return Err("DATA constant not of an array or vector type"),
        };
        match elt {
            Some(Ty::Int(8)) => Ok(1),
            Some(Ty::Int(16)) => Ok(2),
            Some(Ty::Int(32)) => Ok(4),
            Some(Ty::Int(64)) => Ok(8),
            Some(Ty::Float(w)) => Ok(w),
            _ => Err("DATA constant of an element type LLVM does not take"),
        }
    }

    /// Whether `ty` is an array or vector of elements that a data array
    /// can hold.
    fn data_sequence(&self, ty: Option<u64>) -> bool {
        match ty.and_then(|t| self.ty(t)) {
            Some(Ty::Sequence(elt)) => {
                matches!(self.ty(elt), Some(Ty::Int(8 | 16 | 32 | 64) | Ty::Float(_)))
            }
            _ => false,
        }
    }

    fn ty(&self, id: u64) -> Option<Ty> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.types.get(i))
            .copied()
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

#[cfg(test)]
pub(crate) mod tests {
    use super::super::stream::testing::Writer;
    use super::*;
    use crate::tests::Rng;

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        std::fs::read(p.join(name)).unwrap()
    }

    /// Every object's global name and bytes.
    fn read(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
        let objects = offloading_objects(data)?;
        let mut out = Vec::new();
        for o in &objects.objects {
            let bytes = objects.bytes(o)?;
            out.push((o.global.clone(), bytes));
        }
        Ok(out)
    }

    #[test]
    fn reads_the_objects_llvm_reads_in_metadata_order() {
        let data = fixture("bitcode/embedded.bc");
        let multi = fixture("offload_binary/multi.bin");
        let one = fixture("offload_binary/one.bin");
        let objects = offloading_objects(&data).unwrap();
        let sizes: Vec<u64> = objects.objects.iter().map(|o| o.size).collect();
        assert_eq!(sizes, [880, 176, 176]);
        assert_eq!(objects.total_size(), 880 + 176 + 176);
        // Another section, a pointer, a zeroinitializer, a node of one
        // operand and one with the operands swapped are passed over; the
        // i32 array (a DATA record) is read as its bytes.
        let got = read(&data).unwrap();
        let want = [
            ("multi".to_string(), multi),
            ("one".to_string(), one.clone()),
            ("words".to_string(), one),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_wrapper_header_changes_nothing_but_offsets() {
        let bc = fixture("bitcode/embedded.bc");
        let mut wrapped = Vec::new();
        for w in [0x0B17_C0DEu32, 0, 20, u32::try_from(bc.len()).unwrap(), 7] {
            wrapped.extend_from_slice(&w.to_le_bytes());
        }
        wrapped.extend_from_slice(&bc);
        assert_eq!(read(&wrapped).unwrap(), read(&bc).unwrap());
        // A header pointing past the end.
        wrapped[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = read(&wrapped).unwrap_err();
        assert!(e.to_string().contains("outside the file"), "{e}");
    }

    #[test]
    fn reads_every_encoding_of_a_data_sequence() {
        let got = read(&fixture("bitcode/kinds.bc")).unwrap();
        let le = |v: &[u64], w: usize| -> Vec<u8> {
            v.iter()
                .flat_map(|x| x.to_le_bytes()[..w].to_vec())
                .collect()
        };
        let bytes = vec![1, 2, 0, 4, 5];
        let want: Vec<(&str, Vec<u8>)> = vec![
            ("bytes", bytes.clone()),
            // A CSTRING record: its NUL is implicit.
            ("cstr", b"hello\0".to_vec()),
            ("vec", vec![1, 2, 3, 255]),
            ("i16", le(&[1, 0xfffe, 770], 2)),
            ("i64", le(&[1, u64::MAX], 8)),
            (
                "f32",
                le(
                    &[u64::from(1.0f32.to_bits()), u64::from((-2.5f32).to_bits())],
                    4,
                ),
            ),
            ("f64", le(&[1.0f64.to_bits(), 0.5f64.to_bits()], 8)),
            ("half", le(&[0x3c00, 0x4000], 2)),
            // The declaration and the struct are passed over; the first
            // operand again is read again.
            ("bytes", bytes),
        ];
        let want: Vec<(String, Vec<u8>)> =
            want.into_iter().map(|(n, b)| (n.to_string(), b)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn clang_lto_objects() {
        for (obj, image) in [
            ("bitcode/openmp.o", "bitcode/openmp.o.image"),
            ("bitcode/amdgcn.o", "bitcode/amdgcn.o.image"),
        ] {
            let got = read(&fixture(obj)).unwrap();
            assert_eq!(got.len(), 1, "{obj}");
            assert_eq!(got[0].0, "llvm.embedded.object");
            let images =
                crate::offload_binary::find_images(&got[0].1, &Default::default()).unwrap();
            assert_eq!(images.len(), 1);
            assert_eq!(&images[0].image.image[..], fixture(image), "{obj}");
        }
    }

    #[test]
    fn damaged_files_fail_or_read_the_same_bytes() {
        let data = fixture("bitcode/embedded.bc");
        let want: Vec<Vec<u8>> = read(&data).unwrap().into_iter().map(|o| o.1).collect();
        let check = |d: &[u8]| {
            if let Ok(got) = read(d) {
                let got: Vec<Vec<u8>> = got.into_iter().map(|o| o.1).collect();
                got == want
            } else {
                true
            }
        };
        // Every truncation (at a multiple of 4 bytes: the others are
        // refused for their size) fails, but for one in the string table
        // after the module, which only loses the names.
        for n in (0..data.len()).step_by(4) {
            assert!(check(&data[..n]), "truncated to {n}");
        }
        // Damage anywhere: an error or whatever it reads, never a panic.
        let mut rng = Rng(0x5eed);
        for _ in 0..3000 {
            let mut d = data.clone();
            for _ in 0..=rng.below(3) {
                let at = rng.index(d.len());
                d[at] ^= 1 << rng.below(8);
            }
            let _ = read(&d);
        }
    }

    /// What [`module`] puts in the test module.
    struct Spec {
        version: u64,
        /// The code and operands of the initializer's record.
        init: (u64, Vec<u64>),
        /// Metadata records before the embedded-objects node.
        extra_md: Vec<(u64, Vec<u64>)>,
        /// The operands of `llvm.embedded.objects` (metadata IDs; the node
        /// is ID 2 plus the number of extra records).
        named: Option<Vec<u64>>,
        modules: usize,
    }

    impl Default for Spec {
        fn default() -> Self {
            Spec {
                version: 2,
                init: (CST_CODE_STRING, b"\x10\xff\x10\xad".map(u64::from).to_vec()),
                extra_md: Vec::new(),
                named: None,
                modules: 1,
            }
        }
    }

    fn chars(s: &[u8]) -> Vec<u64> {
        s.iter().map(|&c| u64::from(c)).collect()
    }

    /// A module made by hand: type 0 = i8, type 1 = [4 x i8]; value 0 =
    /// the global `g`, initialized with value 1 = `spec.init`; metadata
    /// 0 = ".llvm.offloading", 1 = `ptr @g`, then `spec.extra_md`, then
    /// the node `!{ptr @g, !".llvm.offloading"}`.
    fn module(spec: &Spec) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(b"BC\xc0\xde");
        for _ in 0..spec.modules {
            let m = w.enter(2, MODULE_BLOCK, 3);
            w.record(3, MODULE_CODE_VERSION, &[spec.version]);
            let t = w.enter(3, TYPE_BLOCK, 4);
            w.record(4, TYPE_CODE_INTEGER, &[8]);
            w.record(4, TYPE_CODE_ARRAY, &[4, 0]);
            w.end(4, t);
            w.record(3, MODULE_CODE_GLOBALVAR, &[0, 1, 1, 1, 2, 0, 0, 0]);
            let c = w.enter(3, CONSTANTS_BLOCK, 4);
            w.record(4, CST_CODE_SETTYPE, &[1]);
            w.record(4, spec.init.0, &spec.init.1);
            w.end(4, c);
            let md = w.enter(3, METADATA_BLOCK, 3);
            w.record(3, METADATA_STRING_OLD, &chars(b".llvm.offloading"));
            w.record(3, METADATA_VALUE, &[0, 0]);
            for (code, ops) in &spec.extra_md {
                w.record(3, *code, ops);
            }
            let node = 2 + spec.extra_md.len() as u64;
            w.record(3, METADATA_NODE, &[2, 1]);
            w.record(3, METADATA_NAME, &chars(EMBEDDED_OBJECTS));
            let named = spec.named.clone().unwrap_or(vec![node]);
            w.record(3, METADATA_NAMED_NODE, &named);
            w.end(3, md);
            w.end(3, m);
        }
        // The string table: an abbreviation [STRTAB_BLOB, blob].
        let s = w.enter(2, STRTAB_BLOCK, 3);
        w.fixed(2, 3);
        w.vbr(2, 5);
        w.fixed(1, 1);
        w.vbr(1, 8);
        w.fixed(0, 1);
        w.fixed(5, 3);
        w.fixed(4, 3);
        w.vbr(1, 6);
        w.align32();
        w.raw(b"g\0\0\0");
        w.end(3, s);
        w.bytes
    }

    /// A module made by hand whose one object holds `bytes`.
    pub(crate) fn module_holding(bytes: &[u8]) -> Vec<u8> {
        module(&Spec {
            init: (CST_CODE_STRING, chars(bytes)),
            ..Spec::default()
        })
    }

    fn error_of(spec: &Spec) -> String {
        match read(&module(spec)) {
            Ok(v) => panic!("read {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_module_made_by_hand_reads() {
        let got = read(&module(&Spec::default())).unwrap();
        assert_eq!(got, [("g".to_string(), b"\x10\xff\x10\xad".to_vec())]);
        // Records that define metadata move the node along; others do not.
        let spec = Spec {
            extra_md: vec![(6, vec![0, 1]), (16, vec![0, 0, 0]), (38, vec![1, 2])],
            named: Some(vec![3]),
            ..Spec::default()
        };
        assert_eq!(read(&module(&spec)).unwrap().len(), 1);
        // A zeroinitializer-like all-zero array is passed over by LLVM.
        let spec = Spec {
            init: (CST_CODE_STRING, vec![0; 4]),
            ..Spec::default()
        };
        assert_eq!(read(&module(&spec)).unwrap(), [("g".to_string(), vec![])]);
        // No llvm.embedded.objects operands: nothing.
        let spec = Spec {
            named: Some(vec![]),
            ..Spec::default()
        };
        assert!(read(&module(&spec)).unwrap().is_empty());
    }

    #[test]
    fn what_cannot_be_read_is_an_error_naming_it() {
        let cases: Vec<(Spec, &str)> = vec![
            (
                Spec {
                    version: 1,
                    ..Spec::default()
                },
                "older than LLVM 5",
            ),
            (
                Spec {
                    modules: 2,
                    ..Spec::default()
                },
                "more than one module",
            ),
            (
                Spec {
                    extra_md: vec![(99, vec![])],
                    ..Spec::default()
                },
                "metadata record this reader does not know",
            ),
            (
                Spec {
                    named: Some(vec![0]),
                    ..Spec::default()
                },
                "is not a metadata node",
            ),
            (
                Spec {
                    named: Some(vec![1000]),
                    ..Spec::default()
                },
                "names no metadata",
            ),
            (
                Spec {
                    init: (CST_CODE_AGGREGATE, vec![1, 1, 1, 1]),
                    ..Spec::default()
                },
                "aggregate",
            ),
            (
                Spec {
                    init: (CST_CODE_STRING, vec![]),
                    ..Spec::default()
                },
                "empty data constant",
            ),
            (
                Spec {
                    init: (CST_CODE_DATA, vec![1]),
                    extra_md: vec![],
                    ..Spec::default()
                },
                // [4 x i8] is fine for DATA: this one reads.
                "",
            ),
        ];
        for (spec, want) in cases {
            if want.is_empty() {
                assert_eq!(read(&module(&spec)).unwrap()[0].1, [1]);
                continue;
            }
            let e = error_of(&spec);
            assert!(e.contains(want), "{e} (wanted {want:?})");
            assert!(e.starts_with("invalid LLVM bitcode"), "{e}");
        }
    }

    #[test]
    fn huge_counts_fail_without_allocating() {
        // An unabbreviated record that claims 2^40 operands.
        let mut data = module(&Spec::default());
        let mut w = Writer::default();
        w.raw(b"BC\xc0\xde");
        let m = w.enter(2, MODULE_BLOCK, 3);
        w.record(3, MODULE_CODE_VERSION, &[2]);
        w.fixed(3, 3);
        w.vbr(MODULE_CODE_GLOBALVAR, 6);
        w.vbr(1 << 40, 6);
        w.end(3, m);
        let e = read(&w.bytes).unwrap_err().to_string();
        assert!(
            e.contains("end of bitcode") || e.contains("too many"),
            "{e}"
        );
        // METADATA_STRINGS claiming 2^50 strings.
        let mut w = Writer::default();
        w.raw(b"BC\xc0\xde");
        let m = w.enter(2, MODULE_BLOCK, 3);
        w.record(3, MODULE_CODE_VERSION, &[2]);
        let md = w.enter(3, METADATA_BLOCK, 3);
        // Abbreviation 4: [STRINGS, vbr6, vbr6, blob].
        w.fixed(2, 3);
        w.vbr(4, 5);
        w.fixed(1, 1);
        w.vbr(METADATA_STRINGS, 8);
        for _ in 0..2 {
            w.fixed(0, 1);
            w.fixed(2, 3);
            w.vbr(6, 5);
        }
        w.fixed(0, 1);
        w.fixed(5, 3);
        w.fixed(4, 3);
        w.vbr(1 << 50, 6);
        w.vbr(4, 6);
        w.vbr(8, 6);
        w.align32();
        w.raw(b"\x05\0\0\0abcd");
        w.end(3, md);
        w.end(3, m);
        let e = read(&w.bytes).unwrap_err().to_string();
        assert!(e.contains("METADATA_STRINGS"), "{e}");
        // A blob longer than the file.
        let n = data.len();
        data.truncate(n - 8);
        assert!(read(&data).is_err());
    }
}
