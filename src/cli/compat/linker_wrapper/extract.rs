//! Which device images the link takes: those of the input objects, and of
//! the archive members the link takes under LLVM 22's rules
//! ([`offload_kit::link::resolve`]).

use std::path::{Path, PathBuf};

use std::io::Write;

use super::super::Fail;
use crate::cli::images::{self, Streams};
use crate::cli::io::{Input, open_input};
use offload_kit::link::resolve::{Resolver, Sym, symbols};
use offload_kit::link::{self, HostArg};
use offload_kit::offload_binary::{self, Budget, ImageKind, Inflate, OffloadKind, Streamed};

/// An ELF file's type (`e_type`), if it is ELF.
fn elf_type(b: &[u8]) -> Option<u16> {
    if b.len() < 18 || &b[..4] != b"\x7fELF" {
        return None;
    }
    let t = [b[16], b[17]];
    Some(if b[5] == 2 {
        u16::from_be_bytes(t)
    } else {
        u16::from_le_bytes(t)
    })
}

/// Whether `b` is an object whose device images the link takes: an ELF
/// relocatable object, or LLVM bitcode (a `-flto` host object, whose
/// images `llvm.embedded.objects` lists).
fn host_object(b: &[u8]) -> bool {
    elf_type(b) == Some(1) || offload_binary::kinds::is_bitcode(b)
}

/// One extracted device image.
pub(super) struct Extracted {
    /// The object it came from (an archive member's name for members).
    pub input: String,
    pub triple: String,
    pub arch: String,
    /// OpenMP, HIP or CUDA.
    pub kind: OffloadKind,
    /// Where its bytes are.
    source: Source,
}

/// Where an extracted image's bytes are: a slice of one of the mapped
/// inputs (the usual case: they are never copied into memory), the whole
/// of a mapped temporary file (an image of a compressed OffloadBinary,
/// streamed into it), or owned (an image whose bytes are not a slice of
/// its input, kept in memory with the binary it came from).
enum Source {
    Slice {
        file: usize,
        start: usize,
        len: usize,
    },
    Inflated(usize),
    Owned(Vec<u8>),
}

/// What the link takes: the device images, the mapped inputs their bytes
/// lie in, and which inputs are libraries (shared objects and archives),
/// which go to the device link.
pub(super) struct Extraction {
    files: Vec<Input>,
    /// The temporary files images of compressed binaries were streamed to.
    inflated: Vec<Input>,
    pub images: Vec<Extracted>,
    pub shared: Vec<String>,
}

impl Extraction {
    /// Writes the bytes of `e` to `out`, file to file where they lie in a
    /// mapped input or temporary file.
    pub fn write(&self, e: &Extracted, out: &mut std::fs::File) -> std::io::Result<()> {
        match &e.source {
            Source::Slice { file, start, len } => {
                let input = &self.files[*file];
                input.copy_to(&input.bytes()[*start..*start + *len], out)
            }
            Source::Inflated(k) => {
                let temp = &self.inflated[*k];
                temp.copy_to(temp.bytes(), out)
            }
            Source::Owned(v) => out.write_all(v),
        }
    }
}

/// Finds `-l<name>` along the `-L` directories as the host linker would.
fn find_library(name: &str, dirs: &[&str], static_only: bool) -> Option<PathBuf> {
    let names: Vec<String> = if let Some(exact) = name.strip_prefix(':') {
        vec![exact.to_string()]
    } else if static_only {
        vec![format!("lib{name}.a")]
    } else {
        vec![format!("lib{name}.so"), format!("lib{name}.a")]
    };
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| Path::new(d).join(n)))
        .find(|p| p.is_file())
}

/// The files the host link reads (inputs and found libraries), in order,
/// each with whether `--whole-archive` is on for it.
pub(super) fn host_files(host: &[HostArg]) -> Result<Vec<(String, bool)>, Fail> {
    let dirs: Vec<&str> = host
        .iter()
        .filter_map(|a| match a {
            HostArg::LibraryPath(d) => Some(d.as_str()),
            _ => None,
        })
        .collect();
    let mut static_only = false;
    let mut whole = false;
    let mut files = Vec::new();
    for arg in host {
        match arg {
            HostArg::Verbatim(v) => match v.as_str() {
                "-Bstatic" | "-static" | "-dn" | "-non_shared" => static_only = true,
                "-Bdynamic" | "-dy" | "-call_shared" => static_only = false,
                _ => {}
            },
            HostArg::WholeArchive => whole = true,
            HostArg::NoWholeArchive => whole = false,
            HostArg::Input(f) => files.push((f.clone(), whole)),
            HostArg::Library(l) => match find_library(l, &dirs, static_only) {
                Some(p) => files.push((p.to_string_lossy().into_owned(), whole)),
                None => return Err(Fail::new(format!("unable to find library -l{l}"))),
            },
            _ => {}
        }
    }
    Ok(files)
}

/// The device images of one object, checked: `Err` for what this slice
/// does not link. The bytes of images of compressed binaries are streamed
/// into temporary files, pushed to `inflated`.
fn images_of(
    name: &str,
    found: &Streamed<'_>,
    (file, base): (usize, &[u8]),
    skip_openmp: bool,
    inflated: &mut Vec<Input>,
) -> Result<Vec<Extracted>, Fail> {
    let mut out = Vec::new();
    let mut streams = Streams::new(found);
    for f in &found.images {
        let img = &f.image;
        let triple = String::from_utf8_lossy(img.triple()).into_owned();
        let arch = String::from_utf8_lossy(img.arch()).into_owned();
        if skip_openmp && img.offload_kind == OffloadKind::OFK_OpenMP {
            continue;
        }
        let hip = img.offload_kind == OffloadKind::OFK_HIP;
        let cuda = img.offload_kind == OffloadKind::OFK_Cuda;
        if img.offload_kind != OffloadKind::OFK_OpenMP && !hip && !cuda {
            return Err(super::unsupported(&format!(
                "'{name}': {triple} device code of kind {:?} is not supported yet \
                 (OpenMP, HIP and CUDA only)",
                img.offload_kind
            )));
        }
        if cuda && !link::is_nvptx_triple(&triple) {
            return Err(super::unsupported(&format!(
                "'{name}': CUDA device code for {triple} is not supported yet (NVPTX only)"
            )));
        }
        if hip && !link::is_amdgpu_triple(&triple) {
            return Err(super::unsupported(&format!(
                "'{name}': HIP device code for {triple} is not supported yet (AMDGPU only)"
            )));
        }
        let gpu = link::is_amdgpu_triple(&triple) || link::is_nvptx_triple(&triple);
        if !hip && !cuda && !link::is_cpu_triple(&triple) && !gpu {
            return Err(super::unsupported(&format!(
                "'{name}': OpenMP device code for {triple} is not supported yet \
                 (CPU targets, AMDGPU and NVPTX only)"
            )));
        }
        // Objects, or LLVM bitcode (`-foffload-lto`): clang links both, as
        // LLVM's wrapper hands them to it (`-flto=full` comes from the
        // driver's `--device-compiler`).
        if !matches!(
            img.image_kind,
            ImageKind::IMG_Object | ImageKind::IMG_Bitcode
        ) {
            return Err(super::unsupported(&format!(
                "'{name}': {triple} device code of image kind {} is not supported yet \
                 (objects and LLVM bitcode are)",
                img.image_kind
            )));
        }
        if !(hip || cuda || gpu || arch.is_empty() || arch == "generic") {
            return Err(super::unsupported(&format!(
                "'{name}': {triple} device code for arch '{arch}' is not supported yet"
            )));
        }
        let temp = streams
            .inflate_to_temp_file(f)
            .map_err(|e| match images::data_error(&e) {
                Some(bad) => bad_data(name, bad),
                None => Fail::new(format!(
                    "'{name}': cannot write a temporary file: {}",
                    crate::cli::io::strerror(&e)
                )),
            })?;
        let source = match (temp, &img.image) {
            (Some(temp), _) => {
                inflated.push(temp);
                Source::Inflated(inflated.len() - 1)
            }
            (None, std::borrow::Cow::Borrowed(b)) => match slice_at(base, b) {
                Some(start) => Source::Slice {
                    file,
                    start,
                    len: b.len(),
                },
                None => Source::Owned(b.to_vec()),
            },
            (None, std::borrow::Cow::Owned(v)) => Source::Owned(v.clone()),
        };
        out.push(Extracted {
            input: name.to_string(),
            triple,
            arch,
            kind: img.offload_kind,
            source,
        });
    }
    Ok(out)
}

/// Where `sub` starts in `base`, if it is a slice of it.
fn slice_at(base: &[u8], sub: &[u8]) -> Option<usize> {
    let start = (sub.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
    (start.checked_add(sub.len())? <= base.len()).then_some(start)
}

/// The images in `bytes` (of the object `name`), spending from `budget`;
/// those of compressed binaries pending, their data checked (streamed
/// through), and streamed again by [`images_of`].
fn find<'a>(name: &str, bytes: &'a [u8], budget: &Budget) -> Result<Streamed<'a>, Fail> {
    offload_binary::find_images_streamed(bytes, budget, Inflate::Check)
        .map_err(|e| bad_data(name, &e))
}

/// Offloading data of the object `name` that cannot be read: LLVM's line
/// first, as the packager drop-in prints it, then ours; past a limit of
/// the budget (LLVM has none), ours, naming the limit and how to raise it.
fn bad_data(name: &str, e: &offload_kit::Error) -> Fail {
    let env = format!("{}=SIZE", images::MAX_UNCOMPRESSED_ENV);
    match images::raise_hint(e, &env) {
        Some(hint) => Fail::with_note(format!("'{name}': {e}"), hint),
        None if matches!(e.kind(), offload_kit::ErrorKind::BudgetExceeded { .. }) => {
            Fail::new(format!("'{name}': {e}"))
        }
        None => Fail::with_note(
            e.llvm_message(),
            format!("'{name}': invalid offloading data: {e}"),
        ),
    }
}

/// An archive member that is an object.
struct Member {
    device: Vec<(String, Vec<Sym>)>,
    images: Vec<Extracted>,
    taken: bool,
}

impl Member {
    fn wanted(&self, r: &Resolver) -> bool {
        self.device.iter().any(|(t, s)| r.wanted(t, s))
    }
}

/// The symbols of the device images `images` of one object whose bytes
/// are `base` (with the temporary files in `inflated`).
fn device_symbols(
    base: &[u8],
    inflated: &[Input],
    images: &[Extracted],
) -> Vec<(String, Vec<Sym>)> {
    images
        .iter()
        .map(|e| {
            let bytes = match &e.source {
                Source::Slice { start, len, .. } => &base[*start..*start + *len],
                Source::Inflated(k) => inflated[*k].bytes(),
                Source::Owned(v) => v,
            };
            (e.triple.clone(), symbols(bytes))
        })
        .collect()
}

/// The object members of a (regular) archive, with their device images.
fn members(
    name: &str,
    (file, bytes): (usize, &[u8]),
    skip_openmp: bool,
    budget: &Budget,
    inflated: &mut Vec<Input>,
) -> Result<Vec<Member>, Fail> {
    let bad = |e: &dyn std::fmt::Display| Fail::new(format!("'{name}': {e}"));
    let archive = object::read::archive::ArchiveFile::parse(bytes).map_err(|e| bad(&e))?;
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| bad(&e))?;
        let data = m.data(bytes).map_err(|e| bad(&e))?;
        if !host_object(data) {
            continue;
        }
        let mname = String::from_utf8_lossy(m.name()).into_owned();
        let full = format!("{name}({mname})");
        let found = find(&full, data, budget)?;
        let images = images_of(&mname, &found, (file, bytes), skip_openmp, inflated)?;
        out.push(Member {
            device: device_symbols(bytes, inflated, &images),
            images,
            taken: false,
        });
    }
    Ok(out)
}

/// One object member whose bytes are all of input `file` (a thin
/// archive's member file), with its device images.
fn member(
    mname: &str,
    full: &str,
    (file, data): (usize, &[u8]),
    skip_openmp: bool,
    budget: &Budget,
    inflated: &mut Vec<Input>,
) -> Result<Member, Fail> {
    let found = find(full, data, budget)?;
    let images = images_of(mname, &found, (file, data), skip_openmp, inflated)?;
    Ok(Member {
        device: device_symbols(data, inflated, &images),
        images,
        taken: false,
    })
}

/// The members of a thin archive: each name as stored, and the file it
/// names (beside the archive unless absolute).
fn thin_members(name: &str, bytes: &[u8]) -> Result<Vec<(String, PathBuf)>, Fail> {
    let bad = |e: &dyn std::fmt::Display| Fail::new(format!("'{name}': {e}"));
    let archive = object::read::archive::ArchiveFile::parse(bytes).map_err(|e| bad(&e))?;
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| bad(&e))?;
        let mname = String::from_utf8_lossy(m.name()).into_owned();
        let path = crate::cli::io::thin_member_path(Path::new(name), &mname);
        out.push((mname, path));
    }
    Ok(out)
}

/// Takes the members of one archive the link takes, until none more is;
/// whether any was.
fn take(
    members: &mut [Member],
    whole: bool,
    resolver: &mut Resolver,
    out: &mut Vec<Extracted>,
) -> bool {
    let mut any = false;
    loop {
        let mut more = false;
        for m in members.iter_mut().filter(|m| !m.taken) {
            if whole || m.wanted(resolver) {
                m.taken = true;
                more = true;
                for (t, syms) in &m.device {
                    resolver.add(t, syms);
                }
                out.append(&mut m.images);
            }
        }
        if !more {
            return any;
        }
        any = true;
    }
}

/// Reads the device images the link takes, in the order the link takes
/// them; notes which inputs are libraries (shared objects and archives),
/// which go to the device link. With `skip_openmp`
/// (`--override-image=openmp=`), OpenMP images are not taken, as LLVM does.
pub(super) fn extract(files: &[(String, bool)], skip_openmp: bool) -> Result<Extraction, Fail> {
    let mut out = Vec::new();
    let mut shared = Vec::new();
    let mut resolver = Resolver::default();
    let mut archives = Vec::new();
    let mut inputs = Vec::new();
    let mut inflated = Vec::new();
    // One budget for every input and every binary in them.
    let budget = images::dropin_budget().map_err(Fail::new)?;
    for (name, whole) in files {
        if !Path::new(name).is_file() {
            continue; // Not a file: the host linker's business.
        }
        let input = open_input(name)
            .map_err(|e| Fail::new(format!("'{name}': {}", crate::cli::io::error_text(&e))))?;
        budget.add_input(input.bytes().len() as u64);
        inputs.push(input);
        let file = inputs.len() - 1;
        let bytes = inputs[file].bytes();
        if bytes.starts_with(b"!<thin>\n") || bytes.starts_with(b"!<arch>\n") {
            // Archives go to the device link too, as LLVM passes them.
            shared.push(name.clone());
        }
        if bytes.starts_with(b"!<thin>\n") {
            // The members are files beside the archive, read (and mapped)
            // as LLVM reads them.
            let mut objects = Vec::new();
            for (mname, path) in thin_members(name, bytes)? {
                let path = path.to_string_lossy().into_owned();
                // LLVM's line names the member; the note, where it was looked for.
                let member = Input::open(&path).map_err(|e| {
                    Fail::with_note(
                        format!("'{mname}': {}", crate::cli::io::strerror(&e)),
                        format!("'{path}': a member of the thin archive '{name}'"),
                    )
                })?;
                if host_object(member.bytes()) {
                    budget.add_input(member.bytes().len() as u64);
                    inputs.push(member);
                    objects.push((mname, inputs.len() - 1));
                }
            }
            let mut members = Vec::with_capacity(objects.len());
            for (mname, file) in objects {
                let data = inputs[file].bytes();
                let full = format!("{name}({mname})");
                members.push(member(
                    &mname,
                    &full,
                    (file, data),
                    skip_openmp,
                    &budget,
                    &mut inflated,
                )?);
            }
            take(&mut members, *whole, &mut resolver, &mut out);
            archives.push((members, *whole));
            continue;
        }
        if bytes.starts_with(b"!<arch>\n") {
            let mut members = members(name, (file, bytes), skip_openmp, &budget, &mut inflated)?;
            take(&mut members, *whole, &mut resolver, &mut out);
            archives.push((members, *whole));
            continue;
        }
        match elf_type(bytes) {
            Some(3) => shared.push(name.clone()),
            _ if host_object(bytes) => {
                let found = find(name, bytes, &budget)?;
                let images = images_of(name, &found, (file, bytes), skip_openmp, &mut inflated)?;
                for (t, syms) in device_symbols(bytes, &inflated, &images) {
                    resolver.add(&t, &syms);
                }
                out.extend(images);
            }
            _ => {}
        }
    }
    // LLVM scans the archives again while any member is taken.
    while archives
        .iter_mut()
        .any(|(m, whole)| take(m, *whole, &mut resolver, &mut out))
    {}
    Ok(Extraction {
        files: inputs,
        inflated,
        images: out,
        shared,
    })
}
