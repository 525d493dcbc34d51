//! The host-side "wrapper" object: an ELF relocatable that carries device
//! images and registers them with the offloading runtime at program start,
//! written directly (what `llvm-offload-wrapper` + `llc -relocation-model=pic`
//! produce with LLVM 22, without LLVM). For x86-64 and ARM64 Windows hosts
//! (`-windows-msvc`, MinGW's `-windows-gnu`) the object is COFF, as llc
//! writes it there; the private `coff` module has its layout.
//!
//! For `--kind=openmp` and the default ABI ([`Abi::Llvm`], LLVM 20–22
//! runtimes), with N inputs (docs/formats/wrapper-objects.md):
//!
//! | section | type, flags, align | contents |
//! |---|---|---|
//! | `.text` | PROGBITS AX 4 | empty |
//! | `.text.startup` | PROGBITS AX 16 | `.omp_offloading.descriptor_reg` at 0, `.omp_offloading.descriptor_unreg` at the next 16 |
//! | `llvm_offload_entries` | PROGBITS A 8 | `__dummy.llvm_offload_entries` (0 bytes), so the bounds exist |
//! | `.llvm.offloading` | `SHT_LLVM_OFFLOADING` (0x6fff4c0b) A 8 | each input file unchanged (`.omp_offloading.device_image`, `.1`, …), 8-aligned |
//! | `.data.rel.ro` | PROGBITS WA 16 | N × `__tgt_device_image` (32 bytes), then `__tgt_bin_desc` (32 bytes) |
//! | `.init_array.101` | INIT_ARRAY WA 8 | pointer to the constructor |
//! | `.note.GNU-stack` | PROGBITS, no flags | empty: the stack is not executable |
//! | `.eh_frame` | unwind, A 8 | one CIE, one FDE per function |
//!
//! `__tgt_device_image` = {ImageStart, ImageEnd, EntriesBegin, EntriesEnd};
//! `__tgt_bin_desc` = {i32 NumDeviceImages, 4 bytes padding, DeviceImages,
//! HostEntriesBegin, HostEntriesEnd}. ImageStart/End point at the device
//! image *inside* the input when the input is an OffloadBinary (its first
//! entry), else at the whole input. The entry bounds are the linker-defined,
//! hidden `__start_llvm_offload_entries` / `__stop_llvm_offload_entries`.
//! The constructor calls `__tgt_register_lib(&desc)` and then
//! `atexit(unreg)`; `unreg` calls `__tgt_unregister_lib(&desc)`.
//!
//! [`Abi::Legacy`] (LLVM ≤ 19 runtimes, §7) takes the bounds of
//! `omp_offloading_entries` (32-byte entries), defines a global hidden
//! `__dummy.omp_offloading.entry` there, registers from `.init_array.1` and
//! unregisters from `.fini_array.1`. [`Abi::Rocm`] is the legacy ABI plus, per
//! image, its target ID in `.offload_arch_list` and a `__tgt_image_info`
//! passed to `__tgt_register_image_info` before `__tgt_register_lib` (§7.3).
//!
//! `--kind=cuda` and `--kind=hip` (§5) embed their one input unchanged as
//! `.fatbin_image` (`.nv_fatbin` / `.hip_fatbin`, 16-aligned unless tiny), point a
//! `__fatBinC_Wrapper_t`-shaped `.fatbin_wrapper` at it, keep the handle in
//! `.bss`, and register from `.init_array.101`: register the fatbin, walk the
//! host entries between the `llvm_offload_entries` bounds registering each
//! kernel, variable and managed variable of the kind (and, for HIP, surface
//! and texture), end the registration (CUDA), and `atexit` the
//! unregistration. That code does not depend on the input, so it is one
//! fixed sequence per CPU (`arch::Cpu::fatbin_code`).
//!
//! The file is written as llc lays it out (see the private `relocatable` module): for the same
//! inputs it is byte-identical to `llvm-offload-wrapper` + `llc
//! -relocation-model=pic`, except that by default an image section of 1 MiB
//! or more starts at a multiple of 64 KiB in the file ([`Options::llc_layout`]
//! turns that off). One other difference: llc puts an OpenMP image of exactly
//! 4, 8, 16 or 32 bytes, or one whose only zero byte is its last, in a
//! mergeable `.llvm.offloading` section of its own (flags `AM` / `AMS`),
//! which a linker may merge with equal constants; every image here stays in
//! the one plain section (real OffloadBinaries are never like that). Image
//! bytes are never copied: the object is described as a [`Layout`] whose
//! image pieces the caller copies file to file.
//!
//! # Examples
//!
//! The object that registers a CUDA fatbin with the CUDA runtime, for an
//! x86-64 host (link it into the host program); [`layout`] describes the
//! same object without copying the fatbin, for large ones:
//!
//! ```
//! use offload_kit::wrap::{self, Abi, Image, Kind, Options};
//!
//! let fatbin = b"a CUDA fatbin".to_vec();
//! let opts = Options {
//!     kind: Kind::Cuda,
//!     abi: Abi::Llvm,
//!     triple: "x86_64-unknown-linux-gnu".into(),
//!     llc_layout: true,
//!     relocatable: false,
//! };
//! let object = wrap::to_vec(&opts, &[Image::raw(&fatbin)])?;
//! assert_eq!(&object[..4], b"\x7fELF");
//! // An unknown host is an error of its own kind.
//! let arm = Options { triple: "armv7-apple-ios".into(), ..opts };
//! let e = wrap::to_vec(&arm, &[Image::raw(&fatbin)]).unwrap_err();
//! assert!(matches!(e.kind(), offload_kit::ErrorKind::UnsupportedTriple { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arch;
mod coff;
mod eh_frame;
mod elf_object;
mod fatbin;
mod merge;
mod model;
mod openmp;
mod relocatable;
mod sycl;

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::llvm::jam_crc::JamCrc;
use arch::Fatbin;
use elf_object::HostOs;
use model::{IMAGE_ALIGN, fatbin_align};

pub(crate) use crate::offload_binary::container::SHT_LLVM_OFFLOADING;
pub use model::{Abi, Image, Kind, Options};
pub(crate) use model::{IMAGE_FILE_ALIGN, IMAGE_FILE_ALIGN_FROM, InputShape};
pub use sycl::{SyclImage, sycl_layout};

/// Whether objects are written for `triple` as a Windows host (COFF).
pub(crate) fn is_coff_host(triple: &str) -> bool {
    matches!(coff::host(triple), Ok(Some(_)))
}

/// Whether the object for `triple` is COFF, whose section symbols carry
/// checksums of the inputs ([`InputShape::crc`]). An unsupported Windows
/// triple counts as COFF: its error comes when the object is laid out.
pub(crate) fn needs_checksums(triple: &str) -> bool {
    !matches!(coff::host(triple), Ok(None))
}

/// Writes the wrapper object for `images` (in memory; for tests and small
/// images — large ones go through [`layout`]).
pub fn to_vec(opts: &Options, images: &[Image<'_>]) -> Result<Vec<u8>> {
    let layout = layout(opts, images)?;
    let mut out = Vec::new();
    let bytes: Vec<&[u8]> = images.iter().map(|i| i.bytes).collect();
    layout.write_to(&mut out, &bytes)?;
    Ok(out)
}

/// Describes the wrapper object for `images`: everything but the image
/// bytes as built pieces, and [`Piece::Image`](crate::layout::Piece::Image)`(i)` where input `i` goes.
pub fn layout(opts: &Options, images: &[Image<'_>]) -> Result<Layout> {
    let checksums = needs_checksums(opts.triple.as_str());
    let shapes: Vec<InputShape> = images
        .iter()
        .map(|i| {
            let shape = i.shape();
            if checksums {
                let mut crc = JamCrc::new();
                crc.update(i.bytes);
                shape.with_crc(crc)
            } else {
                shape
            }
        })
        .collect();
    layout_shapes(opts, &shapes)
}

/// [`layout`] for inputs known by their [`InputShape`] alone:
/// [`Piece::Image`](crate::layout::Piece::Image)`(i)` is where input `i`
/// goes.
pub(crate) fn layout_shapes(opts: &Options, images: &[InputShape]) -> Result<Layout> {
    if let Some(host) = coff::host(opts.triple.as_str())? {
        if images.is_empty() {
            return Err(Error::usage("no input images"));
        }
        opts.check()?;
        return coff::layout(host, opts, images);
    }
    let cpu = arch::for_triple(opts.triple.as_str())?;
    let os = HostOs::of(opts.triple.as_str());
    if images.is_empty() {
        return Err(Error::usage("no input images"));
    }
    let fatbin = match opts.kind {
        Kind::OpenMp => None,
        Kind::Cuda => Some(Fatbin::Cuda),
        Kind::Hip => Some(Fatbin::Hip),
    };
    opts.check()?;
    if let Some(which) = fatbin {
        let [image] = images else {
            return Err(Error::usage(
                "CUDA / HIP offloading uses a single fatbinary or offload bundle",
            ));
        };
        let len = image.size;
        let file_align = if len >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
            IMAGE_FILE_ALIGN
        } else {
            fatbin_align(cpu, len)
        };
        return fatbin::build(which, cpu, os, len, file_align)?.write();
    }
    // Where each input goes in `.llvm.offloading`.
    let placement = openmp::place(cpu, images)?;
    let file_align = if placement.end >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
        IMAGE_FILE_ALIGN
    } else {
        IMAGE_ALIGN
    };
    openmp::build(
        opts.abi,
        opts.relocatable,
        cpu,
        os,
        images,
        placement,
        file_align,
    )?
    .write()
}

#[cfg(test)]
mod tests;
