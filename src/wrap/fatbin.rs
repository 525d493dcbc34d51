//! The CUDA and HIP object (docs/formats/wrapper-objects.md): the fatbin, its wrapper
//! struct, the handle, and the constructor, the `atexit` handler and the
//! entry loop, with everything in llc's order. [`build`] is the whole;
//! each step below adds one part.

use object::elf;

use super::arch::CpuInfo;
use super::arch::{Fatbin, FatbinCode, Span, Target, addend};
use super::eh_frame;
use super::elf_object::{
    HostOs, finish_object, function, local, mapping, new_object, reloc, undefined, write_error,
};
use super::model::fatbin_align;
use super::relocatable::{Relocatable, SectionId, SymbolId};
use crate::error::Result;
use crate::fatbin;

/// The names that differ between CUDA and HIP.
struct Names {
    /// Prefix of the function and handle names (`.cuda.fatbin_reg`).
    prefix: &'static str,
    /// The fatbin's section.
    image: &'static [u8],
    /// The wrapper struct's section.
    wrapper: &'static [u8],
    /// The wrapper struct's magic.
    magic: u32,
}

impl Names {
    fn of(which: Fatbin) -> Names {
        match which {
            Fatbin::Cuda => Names {
                prefix: "cuda",
                image: fatbin::SECTION_CUDA,
                wrapper: fatbin::WRAPPER_SECTION_CUDA,
                magic: fatbin::WRAPPER_CUDA,
            },
            Fatbin::Hip => Names {
                prefix: "hip",
                image: fatbin::SECTION_HIP,
                wrapper: fatbin::WRAPPER_SECTION_HIP,
                magic: fatbin::WRAPPER_HIP,
            },
        }
    }
}

/// Builds the CUDA or HIP object for one fatbin of `len` bytes, whose
/// section starts at a multiple of `file_align` in the file.
pub(super) fn build(
    which: Fatbin,
    cpu: &'static CpuInfo,
    os: HostOs,
    len: u64,
    file_align: u64,
) -> Result<Relocatable> {
    let code = cpu.code.fatbin_code(which)?;
    let names = Names::of(which);
    let (mut obj, s) = sections(cpu, os, &names, &code, len, file_align);
    let syms = if cpu.symbol_relocs {
        symbols_by_name(&mut obj, &names, &s, &code, len)
    } else {
        symbols(&mut obj, cpu, &names, &s, &code, len)
    };
    code_relocs(&mut obj, &s, &syms, &code)?;
    if let Some(table) = s.rodata {
        jump_table(&mut obj, cpu, table, syms.startup, &code.jump_table)?;
    }
    let abs = cpu.abs64;
    reloc(
        &mut obj,
        s.wrapper,
        fatbin::WRAPPER_DATA_OFFSET,
        syms.image,
        0,
        abs,
    );
    let reg = addend(code.reg.offset)?;
    reloc(&mut obj, s.ctor, 0, syms.startup, reg, abs);

    let spans = [&code.reg, &code.unreg, &code.globals];
    let fdes = [0, 1, 2].map(|i| eh_frame::Fde {
        offset: spans[i].offset,
        len: spans[i].len,
        cfi: &spans[i].cfi,
        anchor: syms.starts.map(|a| a[i]),
    });
    finish_object(&mut obj, cpu, os, syms.startup, &fdes, &[s.ctor])?;
    Ok(obj)
}

/// The sections before `.note.GNU-stack`, in LLVM's order.
struct Sections {
    /// `.text.startup`: the code.
    startup: SectionId,
    /// `.rodata`: the entry loop's jump table, if it has one.
    rodata: Option<SectionId>,
    /// `llvm_offload_entries`.
    entries: SectionId,
    /// The fatbin.
    image: SectionId,
    /// The wrapper struct.
    wrapper: SectionId,
    /// `.bss`: the handle.
    bss: SectionId,
    /// `.init_array.101`: the constructor pointer.
    ctor: SectionId,
}

/// A new object with its sections and their contents (the wrapper struct
/// in the CPU's byte order).
fn sections(
    cpu: &CpuInfo,
    os: HostOs,
    names: &Names,
    code: &FatbinCode,
    len: u64,
    file_align: u64,
) -> (Relocatable, Sections) {
    use object::Endian as _;
    let (mut obj, startup) = new_object(cpu, os);
    let a = elf::SHF_ALLOC;
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let progbits = elf::SHT_PROGBITS;
    obj.set_bytes(startup, code.code.clone());
    let rodata = (!code.jump_table.is_empty()).then(|| obj.add_section(b".rodata", progbits, a, 4));
    let entries = obj.add_section(b"llvm_offload_entries", progbits, a, 8);
    let image = obj.add_section(names.image, progbits, a, fatbin_align(cpu, len));
    obj.set_images(image, vec![(0, len)], file_align);
    let wrapper = obj.add_section(names.wrapper, progbits, wa, 8);
    // Magic, version 1, then the fatbin's address (relocated) and a null
    // pointer.
    let wrapper_bytes = fatbin::write_wrapper(names.magic, 1, cpu.endian.is_big_endian());
    obj.set_bytes(wrapper, wrapper_bytes.to_vec());
    let bss = obj.add_section(b".bss", elf::SHT_NOBITS, wa, 8);
    obj.set_nobits(bss, 8);
    let ctor = obj.add_section(b".init_array.101", elf::SHT_INIT_ARRAY, wa, 8);
    obj.set_bytes(ctor, vec![0; 8]);
    let s = Sections {
        startup,
        rodata,
        entries,
        image,
        wrapper,
        bss,
        ctor,
    };
    (obj, s)
}

/// The section symbols the relocations refer to.
struct Symbols {
    startup: SymbolId,
    rodata: Option<SymbolId>,
    image: SymbolId,
    wrapper: SymbolId,
    bss: SymbolId,
    /// The entry loop's function symbol.
    globals: SymbolId,
    /// `.L0 ` at the start of the constructor, the handler and the loop,
    /// on CPUs that relocate against symbols.
    starts: Option<[SymbolId; 3]>,
    /// `.Lpcrel_hiN` labels: (offset in the code, symbol).
    labels: Vec<(u64, SymbolId)>,
}

/// The local symbols, in the order LLVM's object writer lists them (with
/// the mapping symbols where LLVM puts them).
fn symbols(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    names: &Names,
    s: &Sections,
    code: &FatbinCode,
    len: u64,
) -> Symbols {
    let p = names.prefix;
    obj.add_file_symbol(b"offload.wrapper.module");
    let startup = obj.section_symbol(s.startup);
    let func = |obj: &mut Relocatable, name: &str, span: &Span| {
        let name = format!(".{p}.{name}");
        function(obj, cpu, name.as_bytes(), s.startup, span.offset, span.len)
    };
    func(obj, "fatbin_reg", &code.reg);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(obj, b"$x", s.startup);
    }
    local(obj, b".fatbin_wrapper", s.wrapper, 0, 24, elf::STT_OBJECT);
    let handle_name = format!(".{p}.binary_handle");
    local(obj, handle_name.as_bytes(), s.bss, 0, 8, elf::STT_OBJECT);
    let globals = func(obj, "globals_reg", &code.globals);
    func(obj, "fatbin_unreg", &code.unreg);
    let rodata = s.rodata.map(|r| obj.section_symbol(r));
    let dummy = b"__dummy.llvm_offload_entries";
    local(obj, dummy, s.entries, 0, 0, elf::STT_OBJECT);
    local(obj, b".fatbin_image", s.image, 0, len, elf::STT_OBJECT);
    let section_sym = |obj: &mut Relocatable, s: SectionId| {
        let sym = obj.section_symbol(s);
        if maps {
            mapping(obj, b"$d", s);
        }
        sym
    };
    // (An empty fatbin emits no data, so it gets no `$d`.)
    let image = if len > 0 {
        section_sym(obj, s.image)
    } else {
        obj.section_symbol(s.image)
    };
    let wrapper = section_sym(obj, s.wrapper);
    let bss = section_sym(obj, s.bss);
    Symbols {
        startup,
        rodata,
        image,
        wrapper,
        bss,
        globals,
        starts: None,
        labels: Vec::new(),
    }
}

/// The local symbols of a CPU that relocates against symbols, not
/// sections (riscv64), in the order LLVM's object writer lists them: each
/// function's symbol, its `.L0 ` label (for `.eh_frame`), then the labels
/// of its relocated `auipc`s (`.Lpcrel_hiN`) each followed by the local
/// object it addresses where first mentioned; the mapping symbols. The
/// fields for section symbols hold the objects' own symbols
/// (`startup`: the constructor, at 0; `bss`: the handle).
fn symbols_by_name(
    obj: &mut Relocatable,
    names: &Names,
    s: &Sections,
    code: &FatbinCode,
    len: u64,
) -> Symbols {
    let p = names.prefix;
    let notype = elf::STT_NOTYPE;
    let object = elf::STT_OBJECT;
    obj.add_file_symbol(b"offload.wrapper.module");
    let func = |obj: &mut Relocatable, name: &str, span: &Span| {
        let name = format!(".{p}.{name}");
        local(
            obj,
            name.as_bytes(),
            s.startup,
            span.offset,
            span.len,
            elf::STT_FUNC,
        )
    };
    let mut wrapper = None;
    let mut handle = None;
    let mut labels = Vec::new();
    // A function's `.L0 ` and the labels and objects its code mentions.
    let mut body = |obj: &mut Relocatable, span: &Span, mapped: bool| {
        let start = local(obj, b".L0 ", s.startup, span.offset, 0, notype);
        if !mapped {
            mapping(obj, b"$x", s.startup);
        }
        let end = span.offset + span.len;
        for r in code
            .relocs
            .iter()
            .filter(|r| (span.offset..end).contains(&r.offset))
        {
            if r.r_type != elf::R_RISCV_PCREL_HI20 {
                continue;
            }
            // The low half's relocation names the label and its number.
            let n = code.relocs.iter().find_map(|lo| match lo.target {
                Target::Label(at, n) if at == r.offset => Some(n),
                _ => None,
            });
            if let Some(n) = n {
                let name = format!(".Lpcrel_hi{n}");
                labels.push((
                    r.offset,
                    local(obj, name.as_bytes(), s.startup, r.offset, 0, notype),
                ));
            }
            match r.target {
                Target::Wrapper if wrapper.is_none() => {
                    wrapper = Some(local(obj, b".fatbin_wrapper", s.wrapper, 0, 24, object));
                }
                Target::Handle if handle.is_none() => {
                    let name = format!(".{p}.binary_handle");
                    handle = Some(local(obj, name.as_bytes(), s.bss, 0, 8, object));
                }
                _ => {}
            }
        }
        start
    };
    let reg = func(obj, "fatbin_reg", &code.reg);
    let reg_start = body(obj, &code.reg, false);
    let globals = func(obj, "globals_reg", &code.globals);
    func(obj, "fatbin_unreg", &code.unreg);
    let unreg_start = body(obj, &code.unreg, true);
    let globals_start = body(obj, &code.globals, true);
    let dummy = b"__dummy.llvm_offload_entries";
    local(obj, dummy, s.entries, 0, 0, object);
    let image = local(obj, b".fatbin_image", s.image, 0, len, object);
    // (An empty fatbin emits no data, so it gets no `$d`.)
    if len > 0 {
        mapping(obj, b"$d", s.image);
    }
    mapping(obj, b"$d", s.wrapper);
    mapping(obj, b"$d", s.bss);
    Symbols {
        startup: reg,
        rodata: None,
        image,
        // The constructor mentions both; `reg` only if it did not.
        wrapper: wrapper.unwrap_or(reg),
        bss: handle.unwrap_or(reg),
        globals,
        starts: Some([reg_start, unreg_start, globals_start]),
        labels,
    }
}

/// The undefined globals, in the order the code first refers to them, and
/// the code's relocations.
fn code_relocs(
    obj: &mut Relocatable,
    s: &Sections,
    syms: &Symbols,
    code: &FatbinCode,
) -> Result<()> {
    let mut globals: Vec<(Target, SymbolId)> = Vec::new();
    for r in &code.relocs {
        let (name, hidden) = match r.target {
            Target::Runtime(name) => (name.to_string(), false),
            Target::EntriesStart => ("__start_llvm_offload_entries".to_string(), true),
            Target::EntriesStop => ("__stop_llvm_offload_entries".to_string(), true),
            Target::Wrapper
            | Target::Handle
            | Target::Globals
            | Target::JumpTable
            | Target::Code
            | Target::Label(..)
            | Target::Symbol(_) => continue,
        };
        if !globals.iter().any(|(t, _)| *t == r.target) {
            let sym = undefined(obj, name.as_bytes(), hidden);
            globals.push((r.target, sym));
        }
    }
    for r in &code.relocs {
        let symbol = match r.target {
            Target::Wrapper => syms.wrapper,
            Target::Handle => syms.bss,
            Target::Globals => syms.globals,
            Target::Code => syms.startup,
            Target::Symbol(s) => s,
            Target::Label(at, _) => syms
                .labels
                .iter()
                .find(|l| l.0 == at)
                .map(|l| l.1)
                .ok_or_else(|| write_error("a label of the code is missing"))?,
            Target::JumpTable => syms
                .rodata
                .ok_or_else(|| write_error("the code refers to a jump table it does not have"))?,
            t => globals
                .iter()
                .find(|(g, _)| *g == t)
                .map(|&(_, s)| s)
                .ok_or_else(|| write_error("a symbol of the code is missing"))?,
        };
        reloc(obj, s.startup, r.offset, symbol, r.addend, r.r_type);
    }
    Ok(())
}

/// The jump table in `table`: 32-bit offsets of the `cases` (code offsets)
/// from the table's start, relocated against the code (`startup`).
fn jump_table(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    table: SectionId,
    startup: SymbolId,
    cases: &[u64],
) -> Result<()> {
    let mut at = 0u64;
    for &case in cases {
        let a = addend(case + at)?;
        reloc(obj, table, at, startup, a, cpu.eh_pcrel32);
        at += 4;
    }
    obj.set_bytes(table, vec![0; usize::try_from(at).unwrap_or(0)]);
    Ok(())
}
