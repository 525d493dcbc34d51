//! `roc-obj-ls`'s run: the code objects in each file's `.hip_fatbin`
//! section (bundle number, entry ID, URI), handed on bundle by bundle.
//!
//! The script finds the section with GNU `objdump -h` (the first section
//! whose line matches `.hip_fatbin`), reads a bundle at its file offset,
//! lists its records, and looks for the next bundle at the next 4096-byte
//! boundary after the last record's data, until the section's end or a
//! start that is not a bundle. Bundle numbers count on across files. Here
//! the section comes from the ELF section headers; a file that is no ELF
//! gets objdump's complaint, twice (the script runs it twice).
//!
//! A compressed bundle (CCOB) where a bundle would start is decompressed and
//! its records listed as one bundle, each under
//! `file://F#offset=<CCOB>&size=<CCOB size>&entry-offset=<O>&entry-size=<S>`;
//! the next bundle starts at the next non-zero byte after the CCOB's total
//! size (compressed bundles are packed, not aligned).

use super::perl::{Die, perl_fmt, uri_encode};
use super::said::{Said, Say};
use crate::bundle::ccob::{self, HashCheck, ReadOptions};
use crate::files::Input;

/// Where the script looks for the next bundle.
const BUNDLE_ALIGN: u128 = 4096;

/// One code object as listed.
#[derive(Clone)]
pub(crate) struct Listed {
    /// The bundle number (counting across files).
    pub bundle: u64,
    /// The entry ID as stored.
    pub id: Vec<u8>,
    /// Its URI.
    pub uri: String,
}

/// What `list_file` hands on for each bundle: its code objects, whether
/// its entry count was read, whether all its entries were (a bundle whose
/// reading failed comes with what was read before the `Die`).
pub(crate) type Each<'a> = &'a mut dyn FnMut(&[Listed], bool, bool);

/// Lists the bundles of `file`, calling `each` for each bundle.
pub(crate) fn list_file(
    file: &str,
    counter: &mut u64,
    each: Each<'_>,
    say: &mut Say<'_>,
) -> Result<(), Die> {
    // Perl opens a folder; objdump, run twice, refuses it.
    if std::fs::metadata(file).is_ok_and(|m| m.is_dir()) {
        for _ in 0..2 {
            say(Said::err(format!(
                "{}: Warning: '{file}' is a directory",
                objdump_name()
            )));
        }
        return Err(Die::new("Error: No kernel section found\n", 255));
    }
    let input = Input::open(file)
        .map_err(|e| Die::errno(format!("Error: failed to open file: {file}\n"), &e))?;
    let data = input.bytes();
    let Some((offset, size)) = section(file, data, say) else {
        return Err(Die::new("Error: No kernel section found\n", 255));
    };
    let end = u128::from(offset) + u128::from(size);
    let encoded = uri_encode(file.as_bytes());
    let mut at = u128::from(offset);
    while at < end {
        let Some(rest) = usize::try_from(at).ok().and_then(|a| data.get(a..)) else {
            break;
        };
        let next = if rest.starts_with(crate::bundle::binary::MAGIC) {
            let mut listed = Vec::new();
            let read = plain_bundle(data, at, *counter, &encoded, &mut listed);
            let started = !matches!(read, Err((_, false)));
            each(&listed, started, read.is_ok());
            read.map_err(|(die, _)| die)?
        } else if ccob::has_magic(rest) {
            let (listed, size) = compressed_bundle(rest, at, *counter, &encoded)?;
            each(&listed, true, true);
            let after = at + u128::from(size);
            let skip = usize::try_from(after)
                .ok()
                .and_then(|a| data.get(a..))
                .and_then(|r| r.iter().position(|&b| b != 0))
                .map_or(end, |n| after + n as u128);
            Some(skip)
        } else {
            break;
        };
        *counter += 1;
        // The script reads the same bundle again forever when it does not
        // move on (no entries, or an empty last one, at a boundary).
        match next {
            Some(n) if n > at => at = n,
            _ => break,
        }
    }
    Ok(())
}

/// The file offset and size of the first section `objdump -h` would show
/// on a line matching `.hip_fatbin`; `None` when there is none (or it is
/// empty). A file that is not ELF gets objdump's two complaints here.
fn section(file: &str, data: &[u8], say: &mut Say<'_>) -> Option<(u64, u64)> {
    use object::read::elf::{FileHeader, SectionHeader};
    fn find<E: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Option<Option<(u64, u64)>> {
        let header = E::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let sections = header.sections(endian, data).ok()?;
        Some(sections.iter().enumerate().skip(1).find_map(|(_, s)| {
            let listed = !matches!(
                s.sh_type(endian),
                object::elf::SHT_NULL
                    | object::elf::SHT_SYMTAB
                    | object::elf::SHT_STRTAB
                    | object::elf::SHT_REL
                    | object::elf::SHT_RELA
                    | object::elf::SHT_GROUP
            );
            let name = sections.section_name(endian, s).ok()?;
            let matches = name
                .windows(10)
                .enumerate()
                .any(|(i, w)| i > 0 && w == b"hip_fatbin");
            (listed && matches).then(|| (s.sh_offset(endian).into(), s.sh_size(endian).into()))
        }))
    }
    let found = match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf64) => find::<object::elf::FileHeader64<object::Endianness>>(data),
        Ok(object::FileKind::Elf32) => find::<object::elf::FileHeader32<object::Endianness>>(data),
        _ => None,
    };
    match found {
        Some(found) => found.filter(|&(_, size)| size != 0),
        None => {
            if !data.is_empty() {
                let objdump = objdump_name();
                for _ in 0..2 {
                    say(Said::err(format!(
                        "{objdump}: {file}: file format not recognized"
                    )));
                }
            }
            None
        }
    }
}

/// The objdump the script would run, as its messages name it.
fn objdump_name() -> String {
    super::perl::which("objdump").map_or_else(|| "objdump".to_string(), |p| p.display().to_string())
}

/// Reads the script's way: little-endian words from the whole file at
/// `pos`, however far past the section.
struct Cursor<'d> {
    data: &'d [u8],
    pos: u128,
}

impl<'d> Cursor<'d> {
    fn take(&mut self, n: u128) -> Option<&'d [u8]> {
        let start = usize::try_from(self.pos).ok()?;
        let len = usize::try_from(n).ok()?;
        let bytes = self.data.get(start..start.checked_add(len)?)?;
        self.pos += n;
        Some(bytes)
    }

    fn qword(&mut self) -> Result<u64, Die> {
        self.take(8)
            .and_then(|b| crate::bytes::le_at::<u64>(b, 0))
            .ok_or_else(|| Die::new("Error: Failed to read 8 bytes\n", 255))
    }
}

/// Lists the uncompressed bundle at `at` into `listed` as the script does,
/// giving where it looks for the next one (`None`: past any file). A
/// failure says whether the entry count had been read.
fn plain_bundle<'d>(
    data: &'d [u8],
    at: u128,
    number: u64,
    encoded: &str,
    listed: &mut Vec<Listed>,
) -> Result<Option<u128>, (Die, bool)> {
    let mut cur = Cursor { data, pos: at + 24 };
    let count = cur.qword().map_err(|d| (d, false))?;
    let mut entry = || -> Result<(u64, u64, &'d [u8]), Die> {
        let offset = cur.qword()?;
        let size = cur.qword()?;
        let id_len = cur.qword()?;
        match cur.take(u128::from(id_len)) {
            Some(id) => Ok((offset, size, id)),
            // Perl sizes its buffer first: more than any memory fails there.
            None if id_len >= 1 << 40 => Err(Die::new("Out of memory!\n", 1)),
            None => Err(Die::new("Error: Fail to parse triple\n", 255)),
        }
    };
    let mut last_end = at;
    for _ in 0..count {
        let (offset, size, id) = entry().map_err(|d| (d, true))?;
        let abs = at + u128::from(offset);
        last_end = abs + u128::from(size);
        listed.push(Listed {
            bundle: number,
            id: id.to_vec(),
            uri: format!("file://{encoded}#offset={}&size={size}", number_text(abs)),
        });
    }
    let next = last_end.div_ceil(BUNDLE_ALIGN).checked_mul(BUNDLE_ALIGN);
    Ok(next.filter(|&n| n <= u128::from(u64::MAX)))
}

/// A sum as Perl prints it: exact within 64 bits, a float beyond.
fn number_text(v: u128) -> String {
    match u64::try_from(v) {
        Ok(v) => v.to_string(),
        Err(_) => perl_fmt(v as f64),
    }
}

/// Lists the CCOB at the start of `rest` (file offset `at`): its bundle's
/// records in header order. Gives them and the CCOB's size.
fn compressed_bundle(
    rest: &[u8],
    at: u128,
    number: u64,
    encoded: &str,
) -> Result<(Vec<Listed>, u64), Die> {
    let fail = |e: &dyn std::fmt::Display| {
        Die::new(
            format!("Error: compressed bundle at offset {at}: {e}\n"),
            255,
        )
    };
    let parsed = ccob::Ccob::parse(rest).map_err(|e| fail(&e))?;
    let opts = ReadOptions {
        hash: HashCheck::Skip,
        ..ReadOptions::default()
    };
    let plain = parsed.decompress(&opts).map_err(|e| fail(&e))?;
    let entries = crate::bundle::binary::read(&plain.data).map_err(|e| fail(&e))?;
    let listed = entries
        .iter()
        .map(|e| Listed {
            bundle: number,
            id: e.id.to_vec(),
            uri: format!(
                "file://{encoded}#offset={at}&size={}&entry-offset={}&entry-size={}",
                parsed.size,
                e.offset,
                e.data.len()
            ),
        })
        .collect();
    Ok((listed, parsed.size))
}
