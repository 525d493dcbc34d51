//! CUDA cubins: the entry functions (kernels), the other exported
//! symbols, and each kernel's resources, as `cuobjdump -res-usage` prints
//! them.
//!
//! A cubin is an ELF file (`EM_CUDA`). What is read here, and where it
//! lies (docs/formats/kernels.md has the same with examples):
//!
//! - **Kernels** are the defined `STT_FUNC` symbols whose `st_other`
//!   carries `STO_CUDA_ENTRY` (0x10). Each lives in its own section,
//!   `.text.NAME`. The other defined, exported functions and objects
//!   (device functions, `__device__` and `__constant__` variables; in a
//!   relocatable cubin variables have type 13) are the listing's symbols.
//! - **Attribute records** (`.nv.info`, and `.nv.info.NAME` for each
//!   kernel) follow each other with no gap: a format byte, an attribute
//!   byte, then two little-endian bytes. Format 1 has no value; 2 and 3
//!   keep theirs in those two bytes; 4 (the only other format) gives
//!   there the length of the value that follows. An unknown format ends
//!   the reading with an error (its length is unknown); unknown attributes
//!   are skipped.
//! - The registers (`REG`) come from the `.nv.info` record 0x2f, which
//!   holds the kernel's symbol index and the count (two 32-bit words; the
//!   last record for a symbol counts); without one, from the top byte of
//!   the `sh_info` of the kernel's text section (0 in the newer ABI).
//! - The stack (`STACK`) is the `.nv.info` record 0x12 (symbol index,
//!   bytes); 0xffffffff there means unknown (a recursive call graph), and
//!   no record means 0, as `cuobjdump` prints.
//! - A kernel's other sections name its text section in their `sh_info`:
//!   `.nv.shared.NAME` (bytes of static shared memory, `SHARED`),
//!   `.nv.local.NAME` (`LOCAL`), `.nv.constantN.NAME` (bank `N`,
//!   `CONSTANT[N]`, its parameters in bank 0) and `.nv.info.NAME`, whose
//!   records 0x05 (`.maxntid`) and 0x10 (`.reqntid`) hold three 32-bit
//!   block dimensions (their product is [`max_threads`]) and 0x37 the CUDA
//!   release that built it, times ten (the listing's version, `12.9`, is
//!   the newest a kernel names).
//!   Sizes are `sh_size`; the sections hold no bytes (shared and local
//!   memory) or the bank's initial contents.
//! - Textures, surfaces and samplers are symbols of types 10, 12 and 11.
//!   A cubin with none of them uses none (0); in one with some, which
//!   kernel uses which is not recorded in a way read here (`None`).
//! - The target is `sm_NN`, or `sm_NNa` for architecture-specific code, as
//!   `cuobjdump` names it ([`crate::fatbin::cubin`]): `NN` is the low byte
//!   of `e_flags` in the older ABI (`EI_ABIVERSION` 7 and before, where
//!   `e_flags` bit 0x800 marks `a`) and the second byte in the newer (8,
//!   where a `.nv.compat` record 9 of value 1 marks `a`, or without that
//!   record `e_flags` bit 0x8). A family cubin (`sm_100f`) is named as the
//!   plain one: nothing in it but `ptxas`'s command line says otherwise.
//!
//! [`max_threads`]: super::Resources::max_threads

use std::collections::{BTreeMap, HashMap};

use super::elf::{self, Parsed, Section};
use super::{
    Allowance, ConstantBank, Format, Kernel, Listing, Resources, Symbol, SymbolKind, text,
};
use crate::bytes::{le, le_at};
use crate::error::{Error, Result};

/// `STO_CUDA_ENTRY` in `st_other`: the function is a kernel.
const STO_ENTRY: u8 = 0x10;
/// `STT_CUDA_TEXTURE`, `STT_CUDA_SAMPLER`, `STT_CUDA_SURFACE`.
const STT_TEXTURE_TO_SURFACE: std::ops::RangeInclusive<u8> = 10..=12;
/// `STT_CUDA_OBJECT`: a variable of a relocatable cubin.
const STT_CUDA_OBJECT: u8 = 13;

/// Record formats: no value, a byte, a half-word, sized data.
const FMT_NVAL: u8 = 1;
const FMT_BVAL: u8 = 2;
const FMT_HVAL: u8 = 3;
const FMT_SVAL: u8 = 4;

/// Attributes read (`EIATTR_*`).
const ATTR_MAX_THREADS: u8 = 0x05;
const ATTR_REQNTID: u8 = 0x10;
const ATTR_MIN_STACK_SIZE: u8 = 0x12;
const ATTR_REGCOUNT: u8 = 0x2f;
const ATTR_CUDA_API_VERSION: u8 = 0x37;

/// The stack size that stands for "unknown".
const STACK_UNKNOWN: u32 = u32::MAX;

fn damaged(detail: impl Into<String>) -> Error {
    Error::invalid("CUDA cubin", detail)
}

pub(super) fn read(bytes: &[u8], allowance: &Allowance) -> Result<Listing> {
    elf::with_parsed(bytes, |p| from_parsed(p, allowance))
}

/// One attribute record: its format, attribute, and value (the two bytes
/// of a byte or half-word value, the data of a sized one).
struct Record<'a> {
    format: u8,
    attr: u8,
    value: &'a [u8],
}

impl Record<'_> {
    /// The `i`th 32-bit word of a sized value.
    fn word(&self, i: usize) -> Option<u32> {
        le_at::<u32>(self.value, i.checked_mul(4)?)
    }

    /// A sized value of exactly `words` words, or an error naming `what`.
    fn words(&self, words: usize, what: &str) -> Result<&Self> {
        if self.format == FMT_SVAL && self.value.len() == words * 4 {
            Ok(self)
        } else {
            Err(damaged(format!(
                "a {what} record (attribute {:#x}) holds {} bytes in format {}, not {} in format {FMT_SVAL}",
                self.attr,
                self.value.len(),
                self.format,
                words * 4
            )))
        }
    }
}

/// The records of a `.nv.info` section, in order; the first damaged one
/// is an error and ends them.
struct Records<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.data.get(self.pos..).filter(|r| !r.is_empty())?;
        let at = self.pos;
        self.pos = self.data.len();
        let [format, attr, lo, hi, ..] = *rest else {
            return Some(Err(damaged(format!(
                "a record at {at:#x} is cut short ({} bytes)",
                rest.len()
            ))));
        };
        let (value, len) = match format {
            FMT_NVAL => (&rest[..0], 4),
            FMT_BVAL | FMT_HVAL => (&rest[2..4], 4),
            FMT_SVAL => {
                let size = usize::from(le::<u16>([lo, hi]));
                match rest.get(4..4 + size) {
                    Some(v) => (v, 4 + size),
                    None => {
                        return Some(Err(damaged(format!(
                            "the record at {at:#x} declares {size} bytes; {} are left",
                            rest.len() - 4
                        ))));
                    }
                }
            }
            _ => {
                return Some(Err(damaged(format!(
                    "the record at {at:#x} has format {format}, not one of 1 to 4"
                ))));
            }
        };
        self.pos = at + len;
        Some(Ok(Record {
            format,
            attr,
            value,
        }))
    }
}

/// The records of `s`, which must have contents in the file.
fn records<'a>(s: &Section<'a>) -> Result<Records<'a>> {
    let data = s.data.ok_or_else(|| {
        damaged(format!(
            "the contents of {} lie outside the file",
            text(s.name)
        ))
    })?;
    Ok(Records { data, pos: 0 })
}

/// What `.nv.info` records for one function, by its symbol index.
#[derive(Default, Clone, Copy)]
struct Global {
    registers: Option<u32>,
    stack: Option<u32>,
}

/// The `.nv.info` section's registers and stack sizes, by symbol index.
fn global_info(p: &Parsed<'_>) -> Result<HashMap<usize, Global>> {
    let mut out: HashMap<usize, Global> = HashMap::new();
    for s in p.sections.iter().filter(|s| s.name == b".nv.info") {
        for r in records(s)? {
            let r = r?;
            let (what, field): (&str, fn(&mut Global) -> &mut Option<u32>) = match r.attr {
                ATTR_REGCOUNT => ("register count", |g| &mut g.registers),
                ATTR_MIN_STACK_SIZE => ("stack size", |g| &mut g.stack),
                _ => continue,
            };
            let r = r.words(2, what)?;
            let (Some(sym), Some(value)) = (r.word(0), r.word(1)) else {
                continue;
            };
            let sym = usize::try_from(sym).unwrap_or(usize::MAX);
            if sym == 0 || sym > p.symbol_count() {
                return Err(damaged(format!(
                    "a {what} record names symbol {sym}; the table has {}",
                    p.symbol_count()
                )));
            }
            *field(out.entry(sym).or_default()) = Some(value);
        }
    }
    Ok(out)
}

/// What a kernel's own sections record (those whose `sh_info` is its
/// text section).
#[derive(Default)]
struct Own {
    shared: u64,
    local: u64,
    constant: BTreeMap<u32, u64>,
    max_threads: Option<u64>,
    reqntid: Option<u64>,
    api_version: Option<u32>,
}

/// A sum of section sizes, or an error when it overflows.
fn add(total: &mut u64, s: &Section<'_>) -> Result<()> {
    *total = total.checked_add(s.size).ok_or_else(|| {
        damaged(format!(
            "the sizes of the sections like {} overflow",
            text(s.name)
        ))
    })?;
    Ok(())
}

/// The bank of a `.nv.constantN.NAME` section (`rest` is what follows
/// `.nv.constant`).
fn bank(rest: &[u8]) -> Option<u32> {
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 3 || rest.get(digits) != Some(&b'.') {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// The product of a record's three block dimensions.
fn threads(r: &Record<'_>, what: &str) -> Result<u64> {
    let r = r.words(3, what)?;
    let dims = [r.word(0), r.word(1), r.word(2)].map(|d| u64::from(d.unwrap_or(0)));
    dims.iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| damaged(format!("the {what} dimensions overflow")))
}

/// Reads the records of a kernel's `.nv.info.NAME` section into `own`.
fn kernel_info(s: &Section<'_>, own: &mut Own) -> Result<()> {
    for r in records(s)? {
        let r = r?;
        match r.attr {
            ATTR_MAX_THREADS => own.max_threads = Some(threads(&r, ".maxntid")?),
            ATTR_REQNTID => own.reqntid = Some(threads(&r, ".reqntid")?),
            ATTR_CUDA_API_VERSION => own.api_version = r.words(1, "CUDA version")?.word(0),
            _ => {}
        }
    }
    Ok(())
}

/// Every kernel's own sections, by the index of its text section.
fn own_sections(p: &Parsed<'_>) -> Result<HashMap<u32, Own>> {
    let mut out: HashMap<u32, Own> = HashMap::new();
    for s in &p.sections {
        let Some(rest) = s.name.strip_prefix(b".nv.") else {
            continue;
        };
        if let Some(rest) = rest.strip_prefix(b"info.") {
            if !rest.is_empty() {
                kernel_info(s, out.entry(s.info).or_default())?;
            }
        } else if rest.starts_with(b"shared.") {
            add(&mut out.entry(s.info).or_default().shared, s)?;
        } else if rest.starts_with(b"local.") {
            add(&mut out.entry(s.info).or_default().local, s)?;
        } else if let Some(n) = rest.strip_prefix(b"constant").and_then(bank) {
            let own = out.entry(s.info).or_default();
            add(own.constant.entry(n).or_default(), s)?;
        }
    }
    Ok(out)
}

/// `sm_NN` or `sm_NNa` from `e_flags` and `.nv.compat`, read as
/// `cuobjdump` reads them ([`crate::fatbin::cubin`]), when they name one.
fn target(p: &Parsed<'_>) -> Option<String> {
    let compat = p
        .sections
        .iter()
        .find(|s| s.name == b".nv.compat")
        .map(|s| s.data.unwrap_or_default());
    let t = crate::fatbin::cubin::target(p.abi_version, p.flags, compat);
    (t.sm != 0).then(|| format!("sm_{}{}", t.sm, if t.arch_specific { "a" } else { "" }))
}

/// The resources of the kernel `s`.
fn resources(
    p: &Parsed<'_>,
    s: &elf::Symbol<'_>,
    global: Global,
    own: Option<&Own>,
    textures: bool,
) -> Resources {
    let text = s.section.and_then(|i| p.sections.get(i));
    let none = (!textures).then_some(0);
    Resources {
        registers: global
            .registers
            .or(text.map(|t| t.info >> 24))
            .map(u64::from),
        stack: match global.stack {
            Some(STACK_UNKNOWN) => None,
            v => Some(u64::from(v.unwrap_or(0))),
        },
        shared: Some(own.map_or(0, |o| o.shared)),
        local: Some(own.map_or(0, |o| o.local)),
        constant: own.map_or_else(Vec::new, |o| {
            o.constant
                .iter()
                .map(|(&bank, &size)| ConstantBank { bank, size })
                .collect()
        }),
        texture: none,
        surface: none,
        sampler: none,
        max_threads: own.and_then(|o| o.max_threads.or(o.reqntid)),
        ..Resources::default()
    }
}

fn from_parsed(p: &Parsed<'_>, allowance: &Allowance) -> Result<Listing> {
    let global = global_info(p)?;
    let own = own_sections(p)?;
    let textures = p
        .symbols()
        .any(|s| STT_TEXTURE_TO_SURFACE.contains(&s.kind));
    let mut l = Listing::new(Format::Cubin);
    l.target = target(p);
    l.version = own
        .values()
        .filter_map(|o| o.api_version)
        .max()
        .map(|v| format!("{}.{}", v / 10, v % 10));
    for s in p.symbols() {
        let func = s.kind == object::elf::STT_FUNC.0;
        if func && s.defined && s.other & STO_ENTRY != 0 {
            allowance.spend(1)?;
            let mine = s
                .section
                .and_then(|i| u32::try_from(i).ok())
                .and_then(|i| own.get(&i));
            let g = global.get(&s.index).copied().unwrap_or_default();
            let mut k = Kernel::new(text(s.name));
            k.resources = resources(p, &s, g, mine, textures);
            l.kernels.push(k);
        } else if s.exported()
            && (func || s.kind == object::elf::STT_OBJECT.0 || s.kind == STT_CUDA_OBJECT)
        {
            let kind = if func {
                SymbolKind::Function
            } else {
                SymbolKind::Variable
            };
            allowance.spend(1)?;
            l.symbols.push(Symbol::new(s.name, kind, s.size));
        }
    }
    Ok(l)
}

/// One row of a cubin's symbol table, as `cuobjdump -symbols` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRow {
    /// Its name (bytes that are not UTF-8 replaced).
    pub name: String,
    /// `STT_*` (CUDA's own from 10 up).
    pub kind: u8,
    /// `STB_*`.
    pub bind: u8,
    /// `st_other`: the visibility in its low two bits, CUDA's marks
    /// (`STO_CUDA_ENTRY` 0x10 …) above.
    pub other: u8,
    /// Whether it is defined (`st_shndx` is not `SHN_UNDEF`).
    pub defined: bool,
}

/// The symbols of the cubin `bytes` in table order, as `cuobjdump
/// -symbols` lists them: every one but the null symbol and the section
/// and file symbols. A table that cannot be read is an error.
pub(crate) fn symbol_table(bytes: &[u8]) -> Result<Vec<TableRow>> {
    elf::with_parsed(bytes, |p| {
        Ok(p.symbols()
            .filter(|s| s.kind != object::elf::STT_SECTION.0 && s.kind != object::elf::STT_FILE.0)
            .map(|s| TableRow {
                name: text(s.name),
                kind: s.kind,
                bind: s.bind,
                other: s.other,
                defined: s.defined,
            })
            .collect())
    })
}

/// One cubin's figures as `cuobjdump -res-usage` prints them: the
/// module's own memory, then every function with a text section of its
/// own, kernels and device functions alike, in the order of those
/// sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Usage {
    /// `GLOBAL`: the bytes of `.nv.global` and `.nv.global.init`.
    pub global: u64,
    /// The module's constant banks (`.nv.constantN` without a function's
    /// name), in section order.
    pub banks: Vec<ConstantBank>,
    /// The functions, in the order of their text sections.
    pub functions: Vec<FunctionUsage>,
    /// What the texture, surface and sampler counts can say.
    pub textures: Textures,
}

/// One function's line of `cuobjdump -res-usage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FunctionUsage {
    /// The name its text section gives (`.text.NAME`).
    pub name: String,
    /// `REG`.
    pub registers: u32,
    /// `STACK` (`u32::MAX` where `ptxas` could not bound it).
    pub stack: u32,
    /// `SHARED`.
    pub shared: u64,
    /// `LOCAL`.
    pub local: u64,
    /// Its own constant banks (a kernel's parameters in bank 0), by bank.
    pub banks: Vec<ConstantBank>,
}

/// Whether a cubin's texture, surface and sampler counts are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Textures {
    /// None in a linked cubin, or a relocatable cubin (which `cuobjdump`
    /// counts as 0 whatever references it holds): every count is 0.
    Zero,
    /// A linked cubin that references a texture, surface or sampler it
    /// does not define: `cuobjdump` fails on it ("elf section not found").
    Unresolved,
    /// A linked cubin that defines such references: which function uses
    /// which is not read here.
    Unread,
}

/// The figures `cuobjdump -res-usage` prints for the cubin `bytes`.
pub(crate) fn usage(bytes: &[u8], allowance: &Allowance) -> Result<Usage> {
    elf::with_parsed(bytes, |p| usage_of(p, allowance))
}

fn usage_of(p: &Parsed<'_>, allowance: &Allowance) -> Result<Usage> {
    let global_records = global_info(p)?;
    let own = own_sections(p)?;
    let mut global = 0u64;
    let mut banks = Vec::new();
    let mut texts = Vec::new();
    // Each function's banks in section order, as cuobjdump prints them
    // (a bank in several sections summed).
    let mut own_banks: HashMap<u32, Vec<ConstantBank>> = HashMap::new();
    for (i, s) in p.sections.iter().enumerate() {
        let constant = s.name.strip_prefix(b".nv.constant");
        if s.name == b".nv.global" || s.name == b".nv.global.init" {
            add(&mut global, s)?;
        } else if let Some(n) = constant.and_then(module_bank) {
            banks.push(ConstantBank {
                bank: n,
                size: s.size,
            });
        } else if let Some(n) = constant.and_then(bank) {
            let list = own_banks.entry(s.info).or_default();
            match list.iter_mut().find(|b| b.bank == n) {
                Some(b) => add(&mut b.size, s)?,
                None => list.push(ConstantBank {
                    bank: n,
                    size: s.size,
                }),
            }
        } else if let Some(name) = s.name.strip_prefix(b".text.") {
            texts.push((i, name));
        }
    }
    // The function symbol of each text section.
    let mut symbol_of: HashMap<usize, (usize, bool)> = HashMap::new();
    let mut textures = Textures::Zero;
    let linked = p.kind != object::elf::ET_REL.0;
    for s in p.symbols() {
        if s.kind == object::elf::STT_FUNC.0
            && let Some(section) = s.section
        {
            // The function the section is named after, where the section
            // also holds helpers (`$__internal_0_$__cuda_sm20_div…`).
            let named = p
                .sections
                .get(section)
                .and_then(|t| t.name.strip_prefix(b".text."))
                == Some(s.name);
            if named {
                symbol_of.insert(section, (s.index, s.other & STO_ENTRY != 0));
            } else {
                symbol_of
                    .entry(section)
                    .or_insert((s.index, s.other & STO_ENTRY != 0));
            }
        }
        if linked && STT_TEXTURE_TO_SURFACE.contains(&s.kind) {
            textures = match (textures, s.defined) {
                (Textures::Unresolved, _) | (_, false) => Textures::Unresolved,
                _ => Textures::Unread,
            };
        }
    }
    let mut functions = Vec::with_capacity(texts.len());
    for (i, name) in texts {
        allowance.spend(1)?;
        let symbol = symbol_of.get(&i).copied();
        let g = symbol
            .and_then(|(sym, _)| global_records.get(&sym))
            .copied()
            .unwrap_or_default();
        let entry = symbol.is_some_and(|(_, entry)| entry);
        let mine = u32::try_from(i).ok().and_then(|i| own.get(&i));
        functions.push(FunctionUsage {
            name: text(name),
            // cuobjdump reads a kernel's count from `.nv.info`, any
            // other function's from `sh_info` alone (0 in the newer ABI,
            // whatever `.nv.info` says).
            registers: match g.registers {
                Some(r) if entry => r,
                _ => p.sections[i].info >> 24,
            },
            stack: g.stack.unwrap_or(0),
            shared: mine.map_or(0, |o| o.shared),
            local: mine.map_or(0, |o| o.local),
            banks: u32::try_from(i)
                .ok()
                .and_then(|i| own_banks.remove(&i))
                .unwrap_or_default(),
        });
    }
    Ok(Usage {
        global,
        banks,
        functions,
        textures,
    })
}

/// The bank of a module's `.nv.constantN` section (`rest` is what follows
/// `.nv.constant`): digits alone, no function's name after them.
fn module_bank(rest: &[u8]) -> Option<u32> {
    if rest.is_empty() || rest.len() > 3 || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}
