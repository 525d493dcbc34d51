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
use super::msgpack::{self, Value};
use super::{Format, Kernel, Listing, Resources, Symbol, SymbolKind, text};
use crate::error::{Error, Result};

/// `ELFOSABI_AMDGPU_HSA`.
const OSABI_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`.
const NT_METADATA: u32 = 32;
/// `STT_AMDGPU_HSA_KERNEL`, the kernel symbols of code object v2.
const STT_HSA_KERNEL: u8 = 10;

pub(super) fn read(bytes: &[u8]) -> Result<Listing> {
    elf::with_parsed(bytes, from_parsed)
}

fn from_parsed(p: &Parsed<'_>) -> Result<Listing> {
    let mut l = Listing::new(Format::Amdgpu);
    if p.os_abi == OSABI_HSA && (1..=4).contains(&p.abi_version) {
        l.version = Some(format!("v{}", u32::from(p.abi_version) + 2));
    }
    if let Some(note) = p
        .notes
        .iter()
        .find(|n| n.name == b"AMDGPU" && n.kind == NT_METADATA)
    {
        let doc = msgpack::read(note.desc)?;
        l.target = doc
            .get("amdhsa.target")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(ks) = doc.get("amdhsa.kernels") {
            let ks = ks.as_array().ok_or_else(|| {
                Error::invalid("AMDGPU metadata", "amdhsa.kernels is not an array")
            })?;
            for k in ks {
                l.kernels.push(kernel(k)?);
            }
        }
    }
    // Every kernel's name: the metadata's, then those of descriptors
    // (and v2 kernel symbols) it leaves out, listed without figures.
    let mut kernels: HashSet<Vec<u8>> = l
        .kernels
        .iter()
        .map(|k| k.name.as_bytes().to_vec())
        .collect();
    let exported = || p.symbols.iter().filter(|s| s.exported());
    for s in exported() {
        let name = match s.kind {
            k if k == object::elf::STT_OBJECT.0 => s.name.strip_suffix(b".kd"),
            STT_HSA_KERNEL => Some(s.name),
            _ => None,
        };
        if let Some(name) = name
            && kernels.insert(name.to_vec())
        {
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
            l.symbols.push(Symbol::new(s.name, kind, s.size));
        }
    }
    Ok(l)
}

/// One element of `amdhsa.kernels`.
fn kernel(k: &Value<'_>) -> Result<Kernel> {
    let name = k
        .get(".name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid("AMDGPU metadata", "a kernel without a .name string"))?;
    let n = |key: &str| k.get(key).and_then(Value::as_u64);
    Ok(Kernel {
        name: name.to_string(),
        demangled: None,
        resources: Resources {
            sgpr_count: n(".sgpr_count"),
            vgpr_count: n(".vgpr_count"),
            agpr_count: n(".agpr_count"),
            sgpr_spill_count: n(".sgpr_spill_count"),
            vgpr_spill_count: n(".vgpr_spill_count"),
            group_segment_fixed_size: n(".group_segment_fixed_size"),
            private_segment_fixed_size: n(".private_segment_fixed_size"),
            kernarg_segment_size: n(".kernarg_segment_size"),
            wavefront_size: n(".wavefront_size"),
            max_flat_workgroup_size: n(".max_flat_workgroup_size"),
            uses_dynamic_stack: k.get(".uses_dynamic_stack").and_then(Value::as_bool),
            ..Resources::default()
        },
    })
}
