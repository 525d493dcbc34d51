//! `offload-kit unpack`: images out of an OffloadBinary, an object file or an
//! archive, into a directory, under names built from their metadata.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::images::Streams;
use super::io::{open_input, safe_component};
use crate::llvm::path::stem;
use crate::offload_binary::{self, FoundImage, ImageArgs, Inflate, Spent};

/// Extract device images (all of them, or those matching --image filters).
#[derive(clap::Args)]
#[command(
    after_help = "Each image is written to DIR/<input stem>-<triple>-<arch>.<n>.<ext>, where n is\n\
the image's position in the input. Characters other than letters, digits and ._+- in\n\
names taken from the file become '_', so nothing is written outside DIR.\n\
\n\
The images of compressed OffloadBinaries are streamed to their files, never held in memory,\n\
after the whole compressed data was checked, within one budget for the command (bytes\n\
decompressed: --max-uncompressed; images: the input's size / 16, at least 65536; files: the\n\
input's size / 1024, at least 4096). Nothing is written from an input that goes past it."
)]
pub struct Opts {
    /// The file to extract from: an OffloadBinary, an ELF or COFF object, an
    /// executable, a shared library or an archive.
    input: String,
    /// Only images matching every KEY=VALUE (kind=openmp matches the offload
    /// kind; a missing key matches an empty value). Repeat to select more.
    #[arg(long, value_name = "FILTER")]
    image: Vec<String>,
    /// Directory to write into (created if missing).
    #[arg(short, long = "output-dir", value_name = "DIR", default_value = ".")]
    output_dir: PathBuf,
    #[arg(long, value_name = "SIZE", value_parser = super::scan::parse_size,
          help = super::images::MAX_UNCOMPRESSED_HELP)]
    max_uncompressed: Option<u64>,
}

/// A file-name component made from bytes of the file.
fn safe(s: &[u8]) -> String {
    safe_component(&String::from_utf8_lossy(s), 100)
}

impl Opts {
    pub fn run(self) -> Result<()> {
        let input = open_input(&self.input)?;
        if let Some(kind) = crate::package::detect(input.bytes()) {
            anyhow::bail!(
                "'{}': a {kind}; `offload-kit extract {0} -o DIR` writes the device images of \
                 the files inside it",
                self.input
            );
        }
        let budget = super::images::budget(self.max_uncompressed);
        budget.add_input(input.bytes().len() as u64);
        // Compressed binaries are checked whole (streamed through) before
        // anything is written, and their images streamed to their files.
        let found = offload_binary::find_images_streamed(input.bytes(), &budget, Inflate::Check)
            .map_err(
                |e| match super::images::raise_hint(&e, "--max-uncompressed SIZE") {
                    Some(hint) => anyhow::anyhow!("'{}': {e} ({hint})", self.input),
                    None => anyhow::Error::new(e).context(format!("'{}'", self.input)),
                },
            )?;
        if found.images.is_empty() {
            // Device code in another container (a .hip_fatbin's bundles, a
            // CUDA fatbin): say which command writes it, and write nothing.
            let mut opts = crate::scan::Options::default();
            opts.max_uncompressed = budget.left(Spent::Inflated);
            let report = crate::scan::scan(input.bytes(), &opts);
            if !report.images.is_empty() {
                anyhow::bail!(
                    "'{}': no OffloadBinary here, but {} device image(s) in bundles or fatbins; \
                     `offload-kit extract {0} -o DIR` writes them",
                    self.input,
                    report.images.len()
                );
            }
        }
        let filters: Vec<ImageArgs> = self.image.iter().map(|f| ImageArgs::parse(f)).collect();
        std::fs::create_dir_all(&self.output_dir)
            .with_context(|| format!("'{}': cannot create directory", self.output_dir.display()))?;
        let base = safe(stem(&self.input).as_bytes());
        let chosen: Vec<(usize, &FoundImage<'_>)> = found
            .images
            .iter()
            .enumerate()
            .filter(|(_, f)| filters.is_empty() || filters.iter().any(|flt| flt.matches(&f.image)))
            .collect();
        let n = chosen.len() as u64;
        budget
            .spend(Spent::Files, n, || format!("{n} images would be written"))
            .with_context(|| format!("'{}'", self.input))?;
        let mut streams = Streams::new(&found);
        let mut listing = super::io::Report::stdout();
        for (n, f) in chosen {
            let img = &f.image;
            let ext = match img.image_kind.extension() {
                "" => "bin",
                e => e,
            };
            let name = format!(
                "{base}-{}-{}.{n}.{ext}",
                safe(img.triple()),
                safe(img.arch())
            );
            let path = self.output_dir.join(&name);
            let shown = path.to_string_lossy();
            streams
                .write(&shown, &input, f)
                .with_context(|| format!("'{shown}': cannot write"))?;
            writeln!(listing, "{}", super::io::printable(&shown))?;
        }
        listing.flush()?;
        Ok(())
    }
}
