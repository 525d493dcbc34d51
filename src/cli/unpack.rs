//! `offload-kit unpack`: images out of an OffloadBinary, an object file or an
//! archive, into a directory, under names built from their metadata (the
//! library's `crate::extract::unpack`); here, the options and messages.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use super::io::open_input;
use crate::extract::{UnpackError, unpack};

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

impl Opts {
    pub fn run(self) -> Result<()> {
        let input = open_input(&self.input)?;
        if let Some(kind) = crate::package::detect(input.bytes()) {
            anyhow::bail!(
                "'{}': {} {kind}; `offload-kit extract {0} -o DIR` writes the device images of \
                 the files inside it",
                self.input,
                kind.article()
            );
        }
        let budget = super::images::budget(self.max_uncompressed);
        budget.add_input(input.bytes().len() as u64);
        let mut listing = super::io::Report::stdout();
        let mut listed = |path: &str| writeln!(listing, "{}", super::io::printable(path));
        let name = &self.input;
        unpack(
            name,
            &input,
            &budget,
            &self.image,
            &self.output_dir,
            &mut listed,
        )
        .map_err(|e| match e {
            UnpackError::Read(e) => {
                match super::images::raise_hint(&e, "--max-uncompressed SIZE") {
                    Some(hint) => anyhow::anyhow!("'{name}': {e} ({hint})"),
                    None => anyhow::Error::new(e).context(format!("'{name}'")),
                }
            }
            UnpackError::Elsewhere(n) => anyhow::anyhow!(
                "'{name}': no OffloadBinary here, but {n} device image(s) in bundles or \
                     fatbins, or the file is one itself; `offload-kit extract {name} -o DIR` \
                     writes them"
            ),
            UnpackError::CreateDir(e) => anyhow::Error::new(e).context(format!(
                "'{}': cannot create directory",
                self.output_dir.display()
            )),
            UnpackError::TooManyFiles(e) => anyhow::Error::new(e).context(format!("'{name}'")),
            UnpackError::TooManyBytes(why) => anyhow::anyhow!("'{name}': {why}"),
            UnpackError::Write(path, e) => {
                anyhow::Error::new(e).context(format!("'{path}': cannot write"))
            }
            UnpackError::Listing(e) => e.into(),
        })?;
        listing.flush()?;
        Ok(())
    }
}
