//! What a member of a package becomes in one output of a rewrite
//! ([`Fate`]), and a member's new bytes ([`New`]): the answer every
//! format's per-member callback gives (zip's, `.deb`'s), one per output,
//! so that one read can feed several outputs.

use std::fs::File;
use std::io::{Read, Seek as _, Write};
use std::sync::Arc;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::Hashing;

/// What a member becomes in one output.
#[derive(Clone)]
pub(crate) enum Fate {
    /// Copied as it is stored: its header and compressed bytes. (What
    /// a member no fate names becomes; an answer for several outputs
    /// names it where some output changes the member.)
    #[cfg_attr(not(test), allow(dead_code))]
    Kept,
    /// Left out.
    Removed,
    /// Written with these bytes in its place, under its own name and
    /// header fields. One [`New`] may stand for the member in several
    /// outputs.
    Replaced(Arc<New>),
}

impl Fate {
    /// A decider's answer as one fate for each of `n` outputs: `None`,
    /// or an output the answer does not reach, keeps the member.
    pub(crate) fn each(fates: Option<Vec<Fate>>, n: usize) -> Vec<Fate> {
        let mut fates = fates.unwrap_or_default();
        fates.resize(n, Fate::Kept);
        fates
    }
}

/// A member's new bytes.
pub(crate) struct New {
    /// Where they are.
    body: Body,
    /// How many.
    pub(crate) size: u64,
    /// Their SHA-256 as a RECORD gives it (unpadded URL-safe base64),
    /// when they were hashed as they were made ([`New::written`]).
    pub(crate) sha: Option<String>,
}

/// Where a [`New`]'s bytes are.
enum Body {
    /// In a scratch file, from its start.
    File(File),
    /// In memory.
    Bytes(Vec<u8>),
}

impl New {
    /// The bytes `write` writes, into a scratch file, hashed and counted
    /// as they pass.
    pub(crate) fn written(
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<New> {
        let out = std::io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
        let mut hashing = Hashing::<_, Sha256>::new(out);
        write(&mut hashing)?;
        let Hashing {
            out,
            digest: sha,
            n,
        } = hashing;
        let file = out
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha.finalize());
        Ok(New {
            body: Body::File(file),
            size: n,
            sha: Some(sha),
        })
    }

    /// The whole of the scratch file `file`, not hashed.
    pub(crate) fn file(mut file: File) -> std::io::Result<New> {
        let size = file.seek(std::io::SeekFrom::End(0))?;
        Ok(New {
            body: Body::File(file),
            size,
            sha: None,
        })
    }

    /// `bytes`, not hashed.
    pub(crate) fn bytes(bytes: Vec<u8>) -> New {
        New {
            size: bytes.len() as u64,
            body: Body::Bytes(bytes),
            sha: None,
        }
    }

    /// A reader of the bytes from their start. Readers of one [`New`]
    /// are read one after the other (the scratch file has one position).
    pub(crate) fn reader(&self) -> std::io::Result<Box<dyn Read + Send + '_>> {
        match &self.body {
            Body::Bytes(b) => Ok(Box::new(&b[..])),
            Body::File(file) => {
                let mut f: &File = file;
                f.seek(std::io::SeekFrom::Start(0))?;
                Ok(Box::new(f.take(self.size)))
            }
        }
    }

    /// Copies the bytes to `out`. Outputs that share this [`New`] are
    /// written one after the other (the scratch file has one position).
    pub(crate) fn copy_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.body {
            Body::Bytes(b) => out.write_all(b),
            Body::File(file) => {
                let mut f: &File = file;
                f.seek(std::io::SeekFrom::Start(0))?;
                let n = std::io::copy(&mut (&mut f).take(self.size), out)?;
                match n == self.size {
                    true => Ok(()),
                    false => Err(std::io::Error::other("a scratch file was cut short")),
                }
            }
        }
    }
}
