//! `offload-kit extract`: writes the selected device images of files to a
//! directory, under names built from what `inspect` shows.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::io::{Input, print_line, printable, safe_component, write_bytes};
use super::scan::{Common, ThinFiles, list, par_map};
use offload_kit::scan::{self, Image, Selection};

/// Write device images to files in a directory.
#[derive(clap::Args)]
#[command(
    after_help = "Each image goes to DIR/<input>.<image id>.<label>.<ext>: <input> is the\n\
input's file name (its path, with / as _, when several inputs are given), <image id> the\n\
id `inspect` shows, <label> the bundle-entry ID or <offload kind>-<triple>-<target id>, and\n\
<ext> comes from the image kind (o, bc, cubin, ptx, fatbin, spv; else bin). Characters other\n\
than letters, digits and ._+- become _, so names taken from the file cannot leave DIR.\n\
Images inside compressed bundles are decompressed to be written."
)]
pub struct ExtractOpts {
    #[command(flatten)]
    common: Common,
    /// Directory to write into (created if missing).
    #[arg(short, long = "output-dir", value_name = "DIR")]
    output_dir: PathBuf,
    /// Only images for these triples (comma-separated; a prefix of the
    /// triple's components matches).
    #[arg(long, value_name = "T")]
    triple: Vec<String>,
    /// Only images for these architectures (`gfx90a` also matches
    /// `gfx90a:xnack+`).
    #[arg(long, value_name = "A")]
    arch: Vec<String>,
    /// Only images of these offload kinds (openmp, hip, cuda, host, …) or
    /// image kinds (object, bitcode, cubin, ptx, …).
    #[arg(long, value_name = "K")]
    kind: Vec<String>,
}

fn extension(kind: Option<&str>) -> &'static str {
    match kind {
        Some("object") => "o",
        Some("bitcode") => "bc",
        Some("cubin") => "cubin",
        Some("ptx") => "ptx",
        Some("fatbinary") => "fatbin",
        Some("spirv") => "spv",
        Some("offload-binary") => "offload",
        Some("bundle") => "bundle",
        Some("ccob") => "ccob",
        Some("archive") => "a",
        _ => "bin",
    }
}

/// The label naming an input in output file names.
fn input_label(path: &Path, several: bool) -> String {
    let s = if several {
        let s = path.to_string_lossy();
        let s = s.trim_start_matches("./").trim_start_matches('/');
        s.replace('/', "_")
    } else {
        path.file_name()
            .map_or_else(|| "input".into(), |n| n.to_string_lossy().into_owned())
    };
    safe_component(&s, 120)
}

/// The file name of an image.
fn image_file_name(label: &str, img: &Image) -> String {
    let what = match &img.bundle_id {
        Some(id) => id.clone(),
        None => format!("{}-{}-{}", img.offload_kind, img.triple, img.target_id),
    };
    format!(
        "{label}.{}.{}.{}",
        img.id,
        safe_component(&what, 100),
        extension(img.image_kind.map(|k| k.to_string()).as_deref())
    )
}

struct Extractor<'a> {
    filter: &'a Selection,
    dir: &'a Path,
    label: String,
    input: &'a Input,
    written: Vec<String>,
    errors: Vec<String>,
}

impl scan::Visit for Extractor<'_> {
    fn wants(&mut self, image: &Image) -> bool {
        self.filter.matches(image)
    }

    fn image(&mut self, image: &Image, bytes: &[u8]) {
        let path = self.dir.join(image_file_name(&self.label, image));
        let shown = path.to_string_lossy().into_owned();
        match write_bytes(&shown, self.input, bytes) {
            Ok(()) => self.written.push(shown),
            Err(e) => self.errors.push(format!(
                "'{shown}': cannot write: {}",
                super::io::strerror(&e)
            )),
        }
    }
}

impl ExtractOpts {
    pub fn run(self) -> Result<()> {
        let mut filter = Selection::default();
        filter.triples = list(&self.triple);
        filter.archs = list(&self.arch);
        filter.kinds = list(&self.kind);
        let opts = self.common.options();
        let files = self.common.files()?;
        std::fs::create_dir_all(&self.output_dir)
            .with_context(|| format!("'{}': cannot create directory", self.output_dir.display()))?;
        let several = files.len() > 1;
        let labels: Vec<String> = files.iter().map(|f| input_label(f, several)).collect();
        let mut seen = HashSet::new();
        if let Some(dup) = labels.iter().find(|l| !seen.insert(*l)) {
            bail!("two inputs would write files named '{dup}.*'; extract them separately");
        }
        let results = par_map(&files, self.common.jobs(), |i, p| {
            let name = p.to_string_lossy().into_owned();
            let input = match Input::open(&name) {
                Ok(i) => i,
                Err(e) => {
                    return (
                        Vec::new(),
                        vec![format!(
                            "'{name}': cannot open: {}",
                            super::io::strerror(&e)
                        )],
                        Vec::new(),
                    );
                }
            };
            let mut ex = Extractor {
                filter: &filter,
                dir: &self.output_dir,
                label: labels[i].clone(),
                input: &input,
                written: Vec::new(),
                errors: Vec::new(),
            };
            let report = scan::scan_with(input.bytes(), &opts, &mut ThinFiles::new(&mut ex, p));
            let problems = report
                .problems
                .iter()
                .map(|p| format!("'{name}': warning: {}", p.message))
                .collect();
            (ex.written, ex.errors, problems)
        });
        let mut out = std::io::stdout().lock();
        let mut failed = false;
        for (written, errors, problems) in results {
            for w in written {
                print_line(&mut out, &w)?;
            }
            for p in problems {
                eprintln!("{}", printable(&p));
            }
            for e in errors {
                eprintln!("error: {}", printable(&e));
                failed = true;
            }
        }
        if failed {
            bail!("some images could not be extracted");
        }
        Ok(())
    }
}
