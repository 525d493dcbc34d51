//! The wrapper objects the linker wrapper adds to the host link: the
//! OpenMP images packed as LLVM packs them, or the CUDA/HIP fat binary,
//! registered by `crate::wrap`'s object.

use super::DeviceLink;
use super::failure::{Failure, open};
use super::job::Options;
use crate::files::{Input, write_pieces};
use crate::layout::Piece;
use crate::llvm::jam_crc::JamCrc;
use crate::llvm::triple::{ObjectFormat, Triple};
use crate::offload_binary;
use crate::wrap::{self, Abi, Image, Kind, SyclImage};

/// Whether a `--dry-run` for a host whose objects offload-kit does not
/// write (neither ELF nor a supported Windows host): the object is left
/// empty; the dry run prints the same commands as LLVM's, which is all it
/// is for.
fn empty_under_dry_run(dry_run: bool, host_triple: &str) -> bool {
    dry_run
        && Triple::parse(host_triple).object_format() != ObjectFormat::Elf
        && !wrap::is_coff_host(host_triple)
}

/// Writes the wrapper object registering the HIP or CUDA fat binary
/// `fatbin` (with `--dry-run`, which made none, an empty one, as LLVM).
pub fn wrap_fatbin(
    host_triple: &str,
    kind: Kind,
    fatbin: &str,
    dry_run: bool,
    (out, out_name): (&mut std::fs::File, &str),
) -> Result<(), Failure> {
    if empty_under_dry_run(dry_run, host_triple) {
        return Ok(());
    }
    let bytes = if dry_run {
        Input::from_vec(Vec::new())
    } else {
        open(fatbin)?
    };
    let opts = wrap::Options {
        kind,
        abi: Abi::Llvm,
        triple: host_triple.into(),
        llc_layout: true,
        relocatable: false,
    };
    let layout = wrap::layout(&opts, &[Image::raw(bytes.bytes())]).map_err(|e| {
        Failure::new(format!(
            "cannot write the wrapper object for --host-triple={host_triple}: {e}"
        ))
    })?;
    write_pieces(&layout, |_| Some((&bytes, bytes.bytes())), out)
        .map_err(|e| Failure::file(out_name, &e))
}

/// Writes the SYCL wrapper object registering the images of the device
/// link `dl` (its output: OffloadBinaries, as `clang-sycl-linker` writes
/// them); with `--dry-run`, LLVM's stand-in image.
pub fn wrap_sycl(
    o: &Options,
    host_triple: &str,
    dl: &DeviceLink,
    (out, out_name): (&mut std::fs::File, &str),
) -> Result<(), Failure> {
    if empty_under_dry_run(o.dry_run, host_triple) {
        return Ok(());
    }
    let input = if o.dry_run {
        Input::from_vec(Vec::new())
    } else {
        open(&dl.output)?
    };
    let images = if o.dry_run {
        vec![(SyclImage::dry_run(), 0..0)]
    } else {
        SyclImage::read_all(input.bytes())
            .map_err(|e| Failure::new(format!("'{}': {e}", dl.output)))?
    };
    let shapes: Vec<SyclImage> = images.iter().map(|(i, _)| i.clone()).collect();
    let layout = wrap::sycl_layout(host_triple, &shapes).map_err(|e| {
        Failure::new(format!(
            "cannot write the wrapper object for --host-triple={host_triple}: {e}"
        ))
    })?;
    // The reader checked that each image lies within the input.
    let payload = |i: usize| {
        let r = &images.get(i)?.1;
        let start = usize::try_from(r.start).ok()?;
        let end = usize::try_from(r.end).ok()?;
        Some((&input, input.bytes().get(start..end)?))
    };
    write_pieces(&layout, payload, out).map_err(|e| Failure::file(out_name, &e))
}

/// Packs each linked image (then each `--override-image` file of
/// `overrides`) as LLVM does and
/// writes the wrapper object to `out` (for empty images with `--dry-run`,
/// as LLVM). The OffloadBinaries are never written on their own: their
/// headers are spliced into the object's layout around each image, which
/// is copied once, file to file, so memory does not grow with it.
pub fn wrap_images(
    o: &Options,
    host_triple: &str,
    linked: &[DeviceLink],
    overrides: &[String],
    (out, out_name): (&mut std::fs::File, &str),
) -> Result<(), Failure> {
    if empty_under_dry_run(o.dry_run, host_triple) {
        return Ok(());
    }
    // (image file, its name, how it is packed)
    let mut inputs: Vec<(Input, &str, offload_binary::ImageSpec)> = Vec::new();
    for dl in linked {
        let (img, spec) = linked_image(o, dl)?;
        inputs.push((img, &dl.output, spec));
    }
    for name in overrides {
        let img = open(name)?;
        let Some(triple) = super::override_triple(img.bytes()) else {
            let llvm = if img.bytes().starts_with(b"\x7fELF") {
                "Unsupported ELF machine"
            } else {
                "Invalid ELF class"
            };
            return Err(Failure::with_note(
                llvm,
                format!("'{name}': --override-image needs an ELF image of a CPU target"),
            ));
        };
        let spec = super::override_image_spec(&triple, img.bytes().len() as u64);
        inputs.push((img, name, spec));
    }
    let mut packs = Vec::with_capacity(inputs.len());
    let mut shapes = Vec::with_capacity(inputs.len());
    for (_, name, spec) in &inputs {
        let (pack, image) = offload_binary::layout_v1_one(spec)
            .map_err(|e| Failure::new(format!("'{name}': {e}")))?;
        // The arch string, as the wrapper reads it from the binary.
        let arch = spec
            .strings
            .iter()
            .find(|(k, v)| k == b"arch" && !v.is_empty())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        shapes.push(wrap::InputShape::new(pack.size, image, arch));
        packs.push(pack);
    }
    if wrap::needs_checksums(host_triple) {
        // COFF section symbols carry the checksum of the images: each
        // packed input's, read through its pieces.
        for (i, shape) in shapes.iter_mut().enumerate() {
            let img = inputs.get(i).map(|(img, _, _)| img.bytes()).unwrap_or(&[]);
            let crc = packs.get(i).map(|p| checksum(p, img)).unwrap_or_default();
            *shape = shape.clone().with_crc(crc);
        }
    }
    let opts = wrap::Options {
        kind: Kind::OpenMp,
        abi: Abi::Llvm,
        triple: host_triple.into(),
        // LLVM's bytes, which --save-temps shows (large images placed as
        // llc places them, not page-aligned).
        llc_layout: true,
        relocatable: o.relocatable,
    };
    let cannot = |e: &dyn std::fmt::Display| {
        Failure::new(format!(
            "cannot write the wrapper object for --host-triple={host_triple}: {e}"
        ))
    };
    let layout = wrap::layout_shapes(&opts, &shapes)
        .map_err(|e| cannot(&e))?
        .splice(&packs)
        .ok_or_else(|| cannot(&"an image is missing from the layout"))?;
    let payload = |i: usize| inputs.get(i).map(|(img, _, _)| (img, img.bytes()));
    write_pieces(&layout, payload, out).map_err(|e| Failure::file(out_name, &e))
}

/// The checksum of the file `layout` describes, whose one payload is
/// `image`.
fn checksum(layout: &crate::layout::Layout, image: &[u8]) -> JamCrc {
    let mut crc = JamCrc::new();
    for p in &layout.pieces {
        match p {
            Piece::Bytes(b) => crc.update(b),
            Piece::Zeros(n) => crc.zeros(*n),
            Piece::Image(_) => crc.update(image),
        }
    }
    crc
}

/// `--emit-fatbin-only` for OpenMP: the one linked image packed as LLVM
/// packs it (an OffloadBinary), written to `out`.
pub fn pack_image(
    o: &Options,
    dl: &DeviceLink,
    (out, out_name): (&mut std::fs::File, &str),
) -> Result<(), Failure> {
    let (img, spec) = linked_image(o, dl)?;
    let (layout, _) = offload_binary::layout_v1_one(&spec)
        .map_err(|e| Failure::new(format!("'{out_name}': {e}")))?;
    write_pieces(&layout, |_| Some((&img, img.bytes())), out)
        .map_err(|e| Failure::file(out_name, &e))
}

/// A linked image and how LLVM packs it. With `--dry-run` nothing was
/// linked: LLVM packs an empty image.
fn linked_image(
    o: &Options,
    dl: &DeviceLink,
) -> Result<(Input, offload_binary::ImageSpec), Failure> {
    let img = if o.dry_run {
        Input::from_vec(Vec::new())
    } else {
        open(&dl.output)?
    };
    let spec = super::linked_image_spec(
        &dl.triple,
        &dl.arch,
        o.embed_bitcode,
        img.bytes().len() as u64,
    );
    Ok((img, spec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    fn written(f: &mut std::fs::File) -> Vec<u8> {
        let mut v = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn wrapper_objects_and_packed_images() {
        let t = tempfile::tempdir().unwrap();
        let img = t.path().join("a.img");
        std::fs::write(&img, b"\x7fELF linked").unwrap();
        let dl = DeviceLink {
            triple: "amdgcn-amd-amdhsa".into(),
            arch: "gfx90a".into(),
            output: img.to_string_lossy().into_owned(),
            ..DeviceLink::default()
        };
        let o = Options::default();
        // Packed as LLVM packs it: an OffloadBinary holding the image.
        let mut out = tempfile::tempfile().unwrap();
        pack_image(&o, &dl, (&mut out, "p")).unwrap();
        let packed = written(&mut out);
        let found = offload_binary::find_images(&packed, &crate::Limits::default()).unwrap();
        assert_eq!(&found[0].image.image[..], b"\x7fELF linked");
        assert_eq!(found[0].image.arch(), b"gfx90a");
        // The wrapper object is an ELF relocatable of the host.
        let host = "x86_64-unknown-linux-gnu";
        let mut out = tempfile::tempfile().unwrap();
        wrap_images(&o, host, std::slice::from_ref(&dl), &[], (&mut out, "w")).unwrap();
        assert!(written(&mut out).starts_with(b"\x7fELF"));
        let mut out = tempfile::tempfile().unwrap();
        wrap_fatbin(host, Kind::Hip, &dl.output, false, (&mut out, "w")).unwrap();
        assert!(written(&mut out).starts_with(b"\x7fELF"));
        // A Windows host gets a COFF object, also from a dry run (of an
        // empty fatbin, as LLVM); a Mach-O host's dry run leaves it empty.
        let coff = "x86_64-pc-windows-msvc";
        let mut out = tempfile::tempfile().unwrap();
        wrap_images(&o, coff, std::slice::from_ref(&dl), &[], (&mut out, "w")).unwrap();
        assert!(written(&mut out).starts_with(&[0x64, 0x86]));
        let mut out = tempfile::tempfile().unwrap();
        wrap_fatbin(coff, Kind::Cuda, "nothing", true, (&mut out, "w")).unwrap();
        assert!(written(&mut out).starts_with(&[0x64, 0x86]));
        let mut out = tempfile::tempfile().unwrap();
        let macho = "x86_64-apple-darwin";
        wrap_fatbin(macho, Kind::Cuda, "nothing", true, (&mut out, "w")).unwrap();
        assert!(written(&mut out).is_empty());
    }

    #[test]
    fn override_images_must_be_elf() {
        let t = tempfile::tempdir().unwrap();
        let not_elf = t.path().join("x.so");
        std::fs::write(&not_elf, b"hello").unwrap();
        let name = not_elf.to_string_lossy().into_owned();
        let mut out = tempfile::tempfile().unwrap();
        let o = Options::default();
        let f = wrap_images(
            &o,
            "x86_64-unknown-linux-gnu",
            &[],
            std::slice::from_ref(&name),
            (&mut out, "w"),
        )
        .unwrap_err();
        assert_eq!(f.llvm, "Invalid ELF class");
        assert_eq!(
            f.note.unwrap(),
            format!("'{name}': --override-image needs an ELF image of a CPU target")
        );
    }
}
