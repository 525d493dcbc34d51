//! AMDGPU code objects: kernels and their resources from the HSA metadata
//! note, the other exported symbols from the symbol table.
//!
//! The note (owner `AMDGPU`, type `NT_AMDGPU_METADATA`, 32) holds one
//! MessagePack map: `amdhsa.target` names the target ID, `amdhsa.kernels`
//! is an array with one map per kernel, whose keys start with a dot
//! (`.name`, `.symbol`, `.sgpr_count`, `.group_segment_fixed_size`, …).
//! It is the same document `llvm-readelf --notes` prints as YAML. The
//! code object version is `EI_ABIVERSION` under `ELFOSABI_AMDGPU_HSA`: 1
//! is v3, 2 v4, 3 v5, 4 v6.
//!
//! A kernel's descriptor is the object symbol `NAME.kd`; its code is the
//! function symbol `NAME`. Kernels named by a descriptor but missing from
//! the note (or in a file without one) are listed without resources.

use std::collections::HashSet;

use super::elf::{self, Parsed};
use super::msgpack::{Next, Reader, Value};
use super::{Allowance, Format, Kernel, Listing, Resources, Symbol, SymbolKind, text};
use crate::error::{Error, Result};

/// `ELFOSABI_AMDGPU_HSA`.
const OSABI_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`.
const NT_METADATA: u32 = 32;
/// `STT_AMDGPU_HSA_KERNEL`, the kernel symbols of code object v2.
const STT_HSA_KERNEL: u8 = 10;

pub(super) fn read(bytes: &[u8], allowance: &Allowance) -> Result<Listing> {
    elf::with_parsed(bytes, |p| from_parsed(p, allowance))
}

fn from_parsed(p: &Parsed<'_>, allowance: &Allowance) -> Result<Listing> {
    let mut l = Listing::new(Format::Amdgpu);
    if p.os_abi == OSABI_HSA && (1..=4).contains(&p.abi_version) {
        l.version = Some(format!("v{}", u32::from(p.abi_version) + 2));
    }
    if let Some(note) = p
        .notes()
        .find(|n| n.name == b"AMDGPU" && n.kind == NT_METADATA)
    {
        metadata(note.desc, &mut l, allowance)?;
    }
    // Every kernel's name: the metadata's, then those of descriptors
    // (and v2 kernel symbols) it leaves out, listed without figures.
    let mut kernels: HashSet<Vec<u8>> = l
        .kernels
        .iter()
        .map(|k| k.name.as_bytes().to_vec())
        .collect();
    let exported = || p.symbols().filter(|s| s.exported());
    for s in exported() {
        let name = match s.kind {
            k if k == object::elf::STT_OBJECT.0 => s.name.strip_suffix(b".kd"),
            STT_HSA_KERNEL => Some(s.name),
            _ => None,
        };
        if let Some(name) = name
            && kernels.insert(name.to_vec())
        {
            allowance.spend(1)?;
            l.kernels.push(Kernel::new(text(name)));
        }
    }
    // The other functions and variables: not a kernel's code, nor a
    // descriptor.
    for s in exported() {
        let Some(kind) = s.function_or_variable() else {
            continue;
        };
        let descriptor = kind == SymbolKind::Variable && s.name.ends_with(b".kd");
        if !descriptor && !kernels.contains(s.name) {
            allowance.spend(1)?;
            l.symbols.push(Symbol::new(s.name, kind, s.size));
        }
    }
    Ok(l)
}

/// Reads the metadata note's MessagePack document into `l`: the target
/// (`amdhsa.target`) and the kernels (`amdhsa.kernels`), each taken from
/// `allowance` as it is read. A key that appears twice counts the first
/// time; everything else in the document is passed over, checked.
fn metadata(doc: &[u8], l: &mut Listing, allowance: &Allowance) -> Result<()> {
    let mut r = Reader::new(doc);
    let top = r.next()?;
    let Next::Map(pairs) = top else {
        return r.skip_rest(top, 0);
    };
    let (mut target, mut kernels) = (false, false);
    for _ in 0..pairs {
        let key = r.next()?;
        r.skip_rest(key, 1)?;
        match key.scalar().and_then(|k| k.as_str()) {
            Some("amdhsa.target") if !target => {
                target = true;
                let v = r.next()?;
                r.skip_rest(v, 1)?;
                l.target = v.scalar().and_then(|v| v.as_str()).map(str::to_string);
            }
            Some("amdhsa.kernels") if !kernels => {
                kernels = true;
                let Next::Array(n) = r.next()? else {
                    return Err(Error::invalid(
                        "AMDGPU metadata",
                        "amdhsa.kernels is not an array",
                    ));
                };
                for _ in 0..n {
                    allowance.spend(1)?;
                    l.kernels.push(kernel(&mut r)?);
                }
            }
            _ => r.skip(1)?,
        }
    }
    Ok(())
}

/// The keys of a kernel's map that are read: its name, and its figures.
const KEYS: [&str; 12] = [
    ".name",
    ".sgpr_count",
    ".vgpr_count",
    ".agpr_count",
    ".sgpr_spill_count",
    ".vgpr_spill_count",
    ".group_segment_fixed_size",
    ".private_segment_fixed_size",
    ".kernarg_segment_size",
    ".wavefront_size",
    ".max_flat_workgroup_size",
    ".uses_dynamic_stack",
];

/// One element of `amdhsa.kernels`, read from `r`: a map holding at least
/// a `.name` string (the first value of each of [`KEYS`] counts; other
/// keys, and values that are not scalars, are passed over).
fn kernel(r: &mut Reader<'_>) -> Result<Kernel> {
    let no_name = || Error::invalid("AMDGPU metadata", "a kernel without a .name string");
    let element = r.next()?;
    let Next::Map(pairs) = element else {
        r.skip_rest(element, 2)?;
        return Err(no_name());
    };
    let mut found: [Option<Value<'_>>; KEYS.len()] = [None; KEYS.len()];
    let mut seen = [false; KEYS.len()];
    for _ in 0..pairs {
        let key = r.next()?;
        r.skip_rest(key, 3)?;
        let value = r.next()?;
        r.skip_rest(value, 3)?;
        let Some(k) = key
            .scalar()
            .and_then(|k| k.as_str())
            .and_then(|k| KEYS.iter().position(|&want| want == k))
        else {
            continue;
        };
        if !std::mem::replace(&mut seen[k], true) {
            found[k] = value.scalar();
        }
    }
    let name = found[0].and_then(|v| v.as_str()).ok_or_else(no_name)?;
    let n = |i: usize| found[i].and_then(|v| v.as_u64());
    Ok(Kernel {
        name: name.to_string(),
        demangled: None,
        resources: Resources {
            sgpr_count: n(1),
            vgpr_count: n(2),
            agpr_count: n(3),
            sgpr_spill_count: n(4),
            vgpr_spill_count: n(5),
            group_segment_fixed_size: n(6),
            private_segment_fixed_size: n(7),
            kernarg_segment_size: n(8),
            wavefront_size: n(9),
            max_flat_workgroup_size: n(10),
            uses_dynamic_stack: found[11].and_then(|v| v.as_bool()),
            ..Resources::default()
        },
    })
}
