//! Files that are themselves one device image (issue #45): told from
//! their header, reported as a container of kind
//! [`ContainerKind::ImageFile`] holding that image.
//!
//! | file | told by | image kind | triple | target |
//! |---|---|---|---|---|
//! | cubin | ELF, `e_machine` `EM_CUDA` (190) | `cubin` | `nvptx64-nvidia-cuda` (`nvptx-` for ELF32) | `sm_NN[a]` from `e_flags` and `.nv.compat`, as a fatbin's cubins ([`crate::fatbin::cubin`]) |
//! | AMDGPU code object | ELF, `e_machine` `EM_AMDGPU` (224) | `object` | from `EI_OSABI` (`amdgcn-amd-amdhsa`) | the target ID `e_flags` names ([`crate::host::amdgpu`]) |
//! | PTX | after blank space and comments (within its first 64 KiB), `.version X.Y` then `.target sm_NN` (the file holds no NUL) | `ptx` | `nvptx64-nvidia-cuda` with `.address_size 64`, else `nvptx-nvidia-cuda` | the `.target` |
//! | SPIR-V | the magic `0x07230203` in either byte order and a version 1.x header | `spirv` | `spirv64`, `spirv32` or `spirv`, from the addressing model of `OpMemoryModel` | none |
//! | bitcode | `BC C0 DE`, or the wrapper magic `0x0B17C0DE`, with a GPU triple (`amdgcn`, `r600`, `nvptx*`, `spir*`) | `bitcode` | the module's | its `"target-cpu"`, without features |
//!
//! An ELF file for another machine is not one (a host object keeps its
//! section walk), nor is bitcode for a CPU or without a triple (a host
//! LTO object: it is scanned as before), nor is a text that mentions
//! `.version` anywhere but at its start. Damage found in one (an ELF
//! header or section outside the file, SPIR-V instructions that run past
//! its end, a bitcode block cut short) is a problem that makes the whole
//! file damaged data; the image is then listed but not read.

use object::read::{Object, ObjectSection};

use super::walker::{Loc, Walker, split_target_id};
use crate::bytes::at_in_order;
use crate::host::elf;
use crate::num::len64;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::{ContainerKind, Content, Image, Offload};

/// What a file that is one device image is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bare {
    /// The report's `format`: `ELF64`, `ptx`, `spirv`, `bitcode`.
    pub format: &'static str,
    /// The image kind.
    pub kind: ImageKind,
    /// The target triple.
    pub triple: String,
    /// The target ID (`gfx90a:xnack-`, `sm_80`), empty when not known.
    pub target_id: String,
    /// For cubins and PTX, the CUDA architecture (as a fatbin entry's).
    pub cuda_arch: Option<String>,
    /// What is damaged in it, if something is.
    pub damage: Option<String>,
}

/// How far into a file PTX's first directives are looked for (the
/// comments before them included).
const PTX_HEAD: usize = 64 << 10;

/// What `data` is, when the whole of it is one device image.
pub(super) fn detect(data: &[u8]) -> Option<Bare> {
    if let Some(p) = elf::peek(data) {
        return match p.machine()? {
            object::elf::EM_CUDA => Some(cubin(data, p)),
            object::elf::EM_AMDGPU => Some(code_object(data, p)),
            _ => None,
        };
    }
    if crate::offload_binary::kinds::is_bitcode(data) {
        return bitcode(data);
    }
    spirv(data).or_else(|| ptx(data))
}

/// What is damaged in the ELF file `data`, if something is: its header,
/// section table or a section's bytes lie outside it.
fn elf_damage(data: &[u8]) -> Option<String> {
    let file = match object::File::parse(data) {
        Ok(f) => f,
        Err(e) => return Some(format!("damaged ELF file: {e}")),
    };
    file.sections().find_map(|s| {
        s.data().err().map(|e| {
            let name = s.name().unwrap_or("?");
            format!("damaged ELF file: section {name}: {e}")
        })
    })
}

/// The format name of an ELF file of `p`'s class.
fn elf_format(p: elf::Peek<'_>) -> &'static str {
    if p.is_64() { "ELF64" } else { "ELF32" }
}

fn cubin(data: &[u8], p: elf::Peek<'_>) -> Bare {
    use crate::fatbin::cubin;
    // From the section table where it can be read; else from the header.
    let target = cubin::read(data).or_else(|| {
        let t = cubin::target(p.abi_version()?, p.flags()?, None);
        (t.sm != 0).then_some(t)
    });
    let arch = target.map_or_else(String::new, |t| {
        format!("sm_{}{}", t.sm, if t.arch_specific { "a" } else { "" })
    });
    Bare {
        format: elf_format(p),
        kind: ImageKind::IMG_Cubin,
        triple: if p.is_64() {
            "nvptx64-nvidia-cuda"
        } else {
            "nvptx-nvidia-cuda"
        }
        .into(),
        cuda_arch: Some(arch.clone()).filter(|a| !a.is_empty()),
        target_id: arch,
        damage: elf_damage(data),
    }
}

fn code_object(data: &[u8], p: elf::Peek<'_>) -> Bare {
    let t = crate::host::amdgpu::target(
        p.os_abi().unwrap_or(0),
        p.abi_version().unwrap_or(0),
        p.flags().unwrap_or(0),
    );
    Bare {
        format: elf_format(p),
        kind: ImageKind::IMG_Object,
        triple: t.triple.into(),
        target_id: if t.processor.is_empty() {
            String::new()
        } else {
            t.target_id()
        },
        cuda_arch: None,
        damage: elf_damage(data),
    }
}

/// Whether a triple's architecture is a GPU's (or SPIR's), whose code is
/// device code.
fn is_device_triple(triple: &str) -> bool {
    let arch = triple.split('-').next().unwrap_or_default();
    matches!(arch, "amdgcn" | "r600" | "nvptx" | "nvptx64") || arch.starts_with("spir")
}

fn bitcode(data: &[u8]) -> Option<Bare> {
    let (t, damage) = crate::bitcode::target::target(data);
    let triple = t.triple.filter(|t| is_device_triple(t))?;
    Some(Bare {
        format: "bitcode",
        kind: ImageKind::IMG_Bitcode,
        triple,
        target_id: t.cpu.unwrap_or_default(),
        cuda_arch: None,
        damage: damage.map(|d| format!("damaged bitcode: {d}")),
    })
}

/// `OpMemoryModel`'s opcode.
const OP_MEMORY_MODEL: u32 = 14;

fn spirv(data: &[u8]) -> Option<Bare> {
    let big = match data.get(..4)? {
        [0x03, 0x02, 0x23, 0x07] => false,
        [0x07, 0x23, 0x02, 0x03] => true,
        _ => return None,
    };
    let word = |i: usize| at_in_order::<u32>(data, i.checked_mul(4)?, big);
    // Version 1.x: 0x0001xx00.
    let version = word(1)?;
    if version & 0xffff_00ff != 0x0001_0000 {
        return None;
    }
    let mut bare = Bare {
        format: "spirv",
        kind: ImageKind::IMG_SPIRV,
        triple: "spirv".into(),
        target_id: String::new(),
        cuda_arch: None,
        damage: None,
    };
    let words = data.len() / 4;
    if !data.len().is_multiple_of(4) || words < 5 {
        bare.damage = Some(format!(
            "damaged SPIR-V module: {} bytes, not a header and whole words",
            data.len()
        ));
        return Some(bare);
    }
    // The instructions, each `count << 16 | opcode` and its operands.
    let mut at = 5;
    while let Some(w) = word(at) {
        let count = (w >> 16) as usize;
        if count == 0 || at + count > words {
            bare.damage = Some(format!(
                "damaged SPIR-V module: the instruction at word {at} runs past its end"
            ));
            break;
        }
        if w & 0xffff == OP_MEMORY_MODEL && count >= 3 {
            bare.triple = match word(at + 1) {
                Some(1) => "spirv32",
                Some(2) => "spirv64",
                _ => "spirv",
            }
            .into();
        }
        at += count;
    }
    Some(bare)
}

/// PTX's words at the start of a text: directives, numbers and names, cut
/// at blank space and commas; comments passed over.
struct Words<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let r = self.rest;
            if let Some((&b, tail)) = r.split_first()
                && (b.is_ascii_whitespace() || b == b',')
            {
                self.rest = tail;
            } else if let Some(tail) = r.strip_prefix(b"//") {
                let end = memchr::memchr(b'\n', tail).unwrap_or(tail.len());
                self.rest = &tail[end..];
            } else if let Some(tail) = r.strip_prefix(b"/*") {
                let end = memchr::memmem::find(tail, b"*/").map_or(tail.len(), |i| i + 2);
                self.rest = &tail[end..];
            } else {
                break;
            }
        }
        let r = self.rest;
        let end = r
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b',')
            .unwrap_or(r.len());
        self.rest = &r[end..];
        (end > 0).then(|| &r[..end])
    }
}

fn ptx(data: &[u8]) -> Option<Bare> {
    let mut w = Words {
        rest: &data[..data.len().min(PTX_HEAD)],
    };
    if w.next()? != b".version" {
        return None;
    }
    let version = w.next()?;
    let (major, minor) = std::str::from_utf8(version).ok()?.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) || w.next()? != b".target" {
        return None;
    }
    let target = std::str::from_utf8(w.next()?).ok()?;
    let sm = target.strip_prefix("sm_")?;
    let sm = sm.strip_suffix(['a', 'f']).unwrap_or(sm);
    if !digits(sm) || memchr::memchr(0, data).is_some() {
        return None;
    }
    // `.address_size` follows the target and its options, if anywhere.
    let wide = w
        .find(|d| d.starts_with(b"."))
        .is_some_and(|d| d == b".address_size" && w.next() == Some(&b"64"[..]));
    Some(Bare {
        format: "ptx",
        kind: ImageKind::IMG_PTX,
        triple: if wide {
            "nvptx64-nvidia-cuda"
        } else {
            "nvptx-nvidia-cuda"
        }
        .into(),
        target_id: target.into(),
        cuda_arch: Some(target.into()),
        damage: None,
    })
}

impl Walker<'_> {
    /// Reports `data`, a whole file at `loc` that is the device image
    /// `bare`, as an image-file container holding it; a damaged one's
    /// bytes are not read.
    pub(super) fn bare_image(&mut self, data: &[u8], bare: Bare, loc: &Loc) {
        let size = len64(data);
        let id = self.new_container(ContainerKind::ImageFile, None, loc, 0, size);
        if let Some(d) = &bare.damage {
            self.damaged_file(loc, Some(id), d.clone());
        }
        let (arch, features) = split_target_id(&bare.target_id);
        let image = Image {
            id: 0,
            container: id,
            index: 0,
            bundle_id: None,
            offload_kind: Offload::Kind(OffloadKind::OFK_None),
            image_kind: Some(Content::Image(bare.kind)),
            triple: bare.triple,
            arch,
            target_id: bare.target_id,
            features,
            cuda_arch: bare.cuda_arch,
            strings: Vec::new(),
            section: loc.section.clone(),
            member: loc.member.clone(),
            offset: loc.abs,
            relative_offset: 0,
            size,
            uncompressed_size: None,
            in_compressed: loc.in_compressed,
            hash: None,
            nested: None,
            overlaps: None,
        };
        let inner = Loc {
            depth: loc.depth + 1,
            ..loc.clone()
        };
        let bytes = bare.damage.is_none().then_some(data);
        self.push_image(image, bytes, &inner);
    }
}
