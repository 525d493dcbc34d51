//! One `cuobjdump` run over a file's units: the listing (`-lelf`,
//! `-lptx`), the extraction (`-xelf`, `-xptx`) or the dump of each
//! entry's header (the default; `-ptx` adds the PTX text), each entry
//! named and numbered as cuobjdump 13.5 names and numbers it.
//!
//! Names: `<stem>.<n>.<arch>.cubin` (or `.ptx`), `<stem>` the input's file
//! name without its last extension, `n` counted per kind over the whole
//! file (archive members included) among the entries `-arch` lets
//! through; an entry that records an identifier (`fatbinary --ident`) is
//! `<identifier's stem>.<arch>.<ext>`, a file that is a cubin
//! `<stem>.<arch>.cubin`, both without a number.

use std::io::{self, Write};

use super::args::{Args, Failure};
use super::units::{Item, Unit, cubin_arch};
use crate::fatbin::{self, Entry, FLAG_64BIT, FLAG_FAMILY, KIND_ELF, KIND_NVVM, KIND_PTX};
use crate::files::Output;
use crate::kernels::Textures;

/// Flags of an entry's header that only the dump reports: debug
/// information, and the host OS the code was built on.
const FLAG_DEBUG: u64 = 0x2;
const FLAG_LINUX: u64 = 0x10;
const FLAG_MAC: u64 = 0x20;
const FLAG_WINDOWS: u64 = 0x40;

/// What the run met: whether any unit held device code, and how many
/// cubins and PTX entries `-arch` let through.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub device_code: bool,
    pub elf: usize,
    pub ptx: usize,
}

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Task {
    List,
    Extract,
    Dump,
}

/// The run: the command line, the names it prints, where it writes.
pub(super) struct Run<'a> {
    pub args: &'a Args,
    /// The input's name without its directories and last extension.
    pub stem: String,
    /// The input as cuobjdump shows it (`<cwd>/<path as given>`).
    pub shown: String,
    /// Bytes a compressed entry may decompress to.
    pub limit: u64,
}

impl Run<'_> {
    fn task(&self) -> Task {
        let a = self.args;
        if a.extract_elf.is_some() || a.extract_ptx.is_some() {
            Task::Extract
        } else if a.list_elf || a.list_ptx {
            Task::List
        } else {
            Task::Dump
        }
    }

    /// Prints (and writes) what the run does with `units` to `out`.
    pub(super) fn units(&self, units: &[Unit<'_>], out: &mut dyn Write) -> Result<Tally, Failure> {
        let mut tally = Tally::default();
        let task = self.task();
        for unit in units {
            if unit.cut {
                return Err(Failure::fatal(
                    "archive member size exceeds library bounds\n\
                     cuobjdump fatal   : Internal error: elfLink internal error",
                ));
            }
            if let Some(m) = &unit.member {
                write!(out, "\nmember {}:{m}:\n", self.shown)?;
            }
            tally.device_code |= unit.device_code;
            for item in &unit.items {
                self.item(item, task, &mut tally, out)?;
            }
            if unit.broken {
                return Err(Failure::fatal(format!(
                    "Invalid fatbin header in '{}'",
                    self.shown
                )));
            }
        }
        Ok(tally)
    }

    fn item(
        &self,
        item: &Item<'_>,
        task: Task,
        tally: &mut Tally,
        out: &mut dyn Write,
    ) -> Result<(), Failure> {
        // `-arch` picks among a fatbin's entries by SM number; a file that
        // is a cubin is read whatever `-arch` says, unless it holds
        // arch-specific code (`sm_90a`: only `-arch sm_90` or `sm_90a`).
        let (kind, sm, arch) = match item {
            Item::Entry(e) => (e.kind, Some(e.arch), self.entry_arch(e)),
            Item::Cubin { arch, .. } => (KIND_ELF, arch_specific_sm(arch), arch.clone()),
        };
        if let (Some(want), Some(sm)) = (self.args.arch, sm)
            && want != sm
        {
            return Ok(());
        }
        let n = match kind {
            KIND_ELF => {
                tally.elf += 1;
                tally.elf
            }
            KIND_PTX => {
                tally.ptx += 1;
                tally.ptx
            }
            _ => 0,
        };
        let name = self.name(item, n, &arch, kind);
        match task {
            Task::List => self.list(kind, n, &name, out),
            Task::Extract => self.extract(item, kind, n, &name, &arch, out),
            Task::Dump => match item {
                Item::Entry(e) => {
                    self.dump(e, &arch, out)?;
                    if e.kind == KIND_ELF && (self.args.symbols || self.args.res_usage) {
                        self.cubin(&self.contents(e)?, out)?;
                    }
                    Ok(())
                }
                Item::Cubin { bytes, .. } => self.cubin(bytes, out),
            },
        }
    }

    /// The SM an entry's file is named after: PTX by the entry's flags, a
    /// cubin by the cubin's own mark (read from the decompressed cubin of
    /// a compressed entry), never with the family's `f`.
    fn entry_arch(&self, e: &Entry<'_>) -> String {
        if e.kind == KIND_ELF && e.compressed() {
            let cubin = e.contents(self.limit).ok();
            if let Some(arch) = cubin.as_deref().and_then(cubin_arch) {
                return arch;
            }
        }
        e.arch_name()
    }

    fn name(&self, item: &Item<'_>, n: usize, arch: &str, kind: u16) -> String {
        let ext = if kind == KIND_PTX { "ptx" } else { "cubin" };
        match item {
            Item::Cubin { .. } => format!("{}.{arch}.{ext}", self.stem),
            Item::Entry(e) => match e.name {
                Some(id) => format!("{}.{arch}.{ext}", stem(&String::from_utf8_lossy(id))),
                None => format!("{}.{n}.{arch}.{ext}", self.stem),
            },
        }
    }

    fn list(&self, kind: u16, n: usize, name: &str, out: &mut dyn Write) -> Result<(), Failure> {
        match kind {
            KIND_ELF if self.args.list_elf => writeln!(out, "ELF file {n:4}: {name}")?,
            KIND_PTX if self.args.list_ptx => writeln!(out, "PTX file {n:4}: {name}")?,
            _ => {}
        }
        Ok(())
    }

    fn extract(
        &self,
        item: &Item<'_>,
        kind: u16,
        n: usize,
        name: &str,
        arch: &str,
        out: &mut dyn Write,
    ) -> Result<(), Failure> {
        let pick = match kind {
            KIND_ELF => &self.args.extract_elf,
            KIND_PTX => &self.args.extract_ptx,
            _ => return Ok(()),
        };
        if !pick.as_ref().is_some_and(|p| p.takes(name)) {
            return Ok(());
        }
        match item {
            Item::Cubin { bytes, .. } => {
                writeln!(out, "Extracting ELF file {n:4}: {name}")?;
                write_file(name, bytes)
            }
            Item::Entry(e) if kind == KIND_ELF => {
                writeln!(out, "Extracting ELF file {n:4}: {name}")?;
                write_file(name, &self.contents(e)?)
            }
            Item::Entry(e) => {
                let options = String::from_utf8_lossy(e.options.unwrap_or_default());
                writeln!(
                    out,
                    "Extracting PTX file and ptxas options {n:4}: {name} -arch={arch} {options}"
                )?;
                write_file(name, fatbin::ptx_text(&self.contents(e)?))
            }
        }
    }

    /// The image as the driver loads it, decompressed.
    fn contents<'e>(&self, e: &'e Entry<'_>) -> Result<std::borrow::Cow<'e, [u8]>, Failure> {
        e.contents(self.limit).map_err(|err| {
            Failure::fatal(format!(
                "Could not decompress the entry at {:#x} of '{}': {err}",
                e.offset, self.shown
            ))
        })
    }

    /// The entry's header as cuobjdump dumps it, and under `-ptx` a PTX
    /// entry's text after it.
    fn dump(&self, e: &Entry<'_>, arch: &str, out: &mut dyn Write) -> Result<(), Failure> {
        let what = match e.kind {
            KIND_ELF => "elf",
            KIND_PTX => "ptx",
            KIND_NVVM => "nvvm",
            _ => return Ok(()),
        };
        // A family cubin is named `sm_100`, and its header says `sm_100f`.
        let header_arch = if e.flags & FLAG_FAMILY != 0 {
            e.code_arch()
        } else {
            arch.to_string()
        };
        write!(
            out,
            "\nFatbin {what} code:\n================\narch = {header_arch}\n"
        )?;
        let (major, minor) = e.version;
        writeln!(out, "code version = [{major},{minor}]")?;
        let host = if e.flags & FLAG_WINDOWS != 0 {
            "windows"
        } else if e.flags & FLAG_MAC != 0 {
            "mac"
        } else if e.flags & FLAG_LINUX != 0 {
            "linux"
        } else {
            "unknown"
        };
        writeln!(out, "host = {host}")?;
        let bits = if e.flags & FLAG_64BIT != 0 { 64 } else { 32 };
        writeln!(out, "compile_size = {bits}bit")?;
        if e.flags & FLAG_DEBUG != 0 {
            writeln!(out, "has debug info")?;
        }
        if e.compressed() {
            writeln!(out, "compressed")?;
        }
        if let Some(id) = e.name {
            writeln!(out, "identifier = {}", String::from_utf8_lossy(id))?;
        }
        let options = String::from_utf8_lossy(e.options.unwrap_or_default());
        match e.kind {
            KIND_PTX => writeln!(out, "ptxasOptions = {options}")?,
            KIND_NVVM => writeln!(out, "nvvmOptions = {options}")?,
            _ => {}
        }
        if e.kind == KIND_PTX && self.args.ptx {
            out.write_all(fatbin::ptx_text(&self.contents(e)?))?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl Run<'_> {
    /// What the dump prints of a cubin: `-res-usage`'s figures, then
    /// `-symbols`' table.
    fn cubin(&self, cubin: &[u8], out: &mut dyn Write) -> Result<(), Failure> {
        if self.args.res_usage {
            self.res_usage(cubin, out)?;
        }
        if self.args.symbols {
            self.symbols(cubin, out)?;
        }
        Ok(())
    }

    /// `-res-usage`: the module's memory, then each function's registers,
    /// stack, memory and constant banks, in the order of their text
    /// sections.
    fn res_usage(&self, cubin: &[u8], out: &mut dyn Write) -> Result<(), Failure> {
        let usage = crate::kernels::usage(cubin, &crate::kernels::Allowance::new(u64::MAX))
            .map_err(|e| self.invalid_elf(&e))?;
        match usage.textures {
            Textures::Zero => {}
            // What cuobjdump 13.5 says of a linked cubin whose texture
            // references are undefined.
            Textures::Unresolved => {
                return Err(Failure::fatal("Internal error: elf section not found"));
            }
            Textures::Unread => {
                return Err(Failure::fatal(format!(
                    "offload-kit does not count the texture, surface and sampler references of \
                     linked cubins ('{}' has some): use NVIDIA's cuobjdump for -res-usage",
                    self.shown
                )));
            }
        }
        let banks = |banks: &[crate::kernels::ConstantBank]| -> String {
            banks
                .iter()
                .map(|b| format!(" CONSTANT[{}]:{}", b.bank, b.size))
                .collect()
        };
        write!(
            out,
            "\nResource usage:\n Common:\n  GLOBAL:{}{}\n",
            usage.global,
            banks(&usage.banks)
        )?;
        for f in &usage.functions {
            writeln!(
                out,
                " Function {}:\n  REG:{} STACK:{} SHARED:{} LOCAL:{}{} TEXTURE:0 SURFACE:0 SAMPLER:0",
                f.name,
                f.registers,
                f.stack,
                f.shared,
                f.local,
                banks(&f.banks)
            )?;
        }
        Ok(())
    }

    /// cuobjdump's `Invalid ELF` for a cubin that cannot be read, and
    /// after it, on a line of ours, what is wrong with it.
    fn invalid_elf(&self, e: &crate::error::Error) -> Failure {
        Failure::fatal(format!(
            "Invalid ELF in '{}'\ncuobjdump info    : offload-kit: {e}",
            self.shown
        ))
    }

    /// `-symbols`: the cubin's symbol table, a row per symbol.
    fn symbols(&self, cubin: &[u8], out: &mut dyn Write) -> Result<(), Failure> {
        let rows = crate::kernels::symbol_table(cubin).map_err(|e| self.invalid_elf(&e))?;
        out.write_all(b"\nsymbols:\n")?;
        for r in &rows {
            writeln!(out, "{}", symbol_row(r))?;
        }
        Ok(())
    }
}

/// One line of `-symbols`: type, binding, visibility, CUDA's mark, `U`
/// for an undefined symbol, name, in cuobjdump's columns.
fn symbol_row(r: &crate::kernels::TableRow) -> String {
    let kind = match r.kind {
        0 => "NOTYPE",
        1 => "OBJECT",
        2 => "FUNC",
        10 => "CUDA_TEXTURE",
        11 => "CUDA_SAMPLER",
        12 => "CUDA_SURFACE",
        13 => "CUDA_OBJECT",
        _ => "UNKNOWN",
    };
    let bind = match r.bind {
        0 => "LOCAL",
        1 => "GLOBAL",
        2 => "WEAK",
        _ => "UNKNOWN",
    };
    let visibility = ["DEFAULT", "INTERNAL", "HIDDEN", "PROTECTED"][usize::from(r.other & 3)];
    let mark = match r.other >> 4 {
        0x1 => "ENTRY",
        0x2 => "GLOBAL",
        0x4 => "SHARED",
        0x8 => "CONSTANT",
        0xa => "RESERVED_SHARED",
        _ => "-",
    };
    let undefined = if r.defined { "" } else { "U" };
    format!(
        "{kind:<14}{bind:<8}{visibility:<11}{mark:<34}{undefined:<3}{}",
        r.name
    )
}

/// The SM number of an arch-specific cubin's name (`sm_90a` → 90);
/// `None` for other names.
fn arch_specific_sm(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.strip_suffix('a')?.parse().ok()
}

/// A path's file name without its last extension (`dir/sub.cu` → `sub`,
/// `libcurand.so.10` → `libcurand.so`).
pub(super) fn stem(path: &str) -> String {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match base.rfind('.') {
        Some(dot) if dot > 0 => base[..dot].to_string(),
        _ => base.to_string(),
    }
}

/// Writes `bytes` to `name` in the working directory, in one step: the
/// file appears whole under its name, or not at all.
fn write_file(name: &str, bytes: &[u8]) -> Result<(), Failure> {
    let write = || -> io::Result<()> {
        let mut out = Output::create(std::path::Path::new(name))?;
        out.write_all(bytes)?;
        out.commit()
    };
    write().map_err(|e| Failure::fatal(format!("Could not open output file '{name}': {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_as_cuobjdump_names_files() {
        assert_eq!(stem("libcurand.so.10"), "libcurand.so");
        assert_eq!(stem("../x/f.fatbin"), "f");
        assert_eq!(stem("dir/sub.cu"), "sub");
        assert_eq!(stem("C:\\b\\curand64_10.dll"), "curand64_10");
        assert_eq!(stem("myid"), "myid");
        assert_eq!(stem(".hidden"), ".hidden");
    }

    #[test]
    fn arch_specific_cubins_by_name() {
        assert_eq!(arch_specific_sm("sm_90a"), Some(90));
        assert_eq!(arch_specific_sm("sm_100a"), Some(100));
        assert_eq!(arch_specific_sm("sm_80"), None);
        assert_eq!(arch_specific_sm("sm_a"), None);
    }

    #[test]
    fn symbol_rows_in_cuobjdump_columns() {
        let row = |name: &str, kind, bind, other, defined| {
            symbol_row(&crate::kernels::TableRow {
                name: name.into(),
                kind,
                bind,
                other,
                defined,
            })
        };
        assert_eq!(
            row("k_hidden", 2, 0, 0x10, true),
            "FUNC          LOCAL   DEFAULT    ENTRY                                k_hidden"
        );
        assert_eq!(
            row("_param", 13, 0, 0x81, true),
            "CUDA_OBJECT   LOCAL   INTERNAL   CONSTANT                             _param"
        );
        assert_eq!(
            row("tex0", 10, 1, 0, false),
            "CUDA_TEXTURE  GLOBAL  DEFAULT    -                                 U  tex0"
        );
        assert_eq!(
            row("", 0, 0, 1, false),
            "NOTYPE        LOCAL   INTERNAL   -                                 U  "
        );
    }
}
