//! Scanner tests on containers made in memory: each container kind found
//! raw and as a file, nesting, and hostile inputs (truncation, lying sizes,
//! compression bombs, magics sprinkled in noise, nesting bombs). Nothing may
//! panic; a bad candidate is skipped (raw scan) or reported (where a
//! container was expected), never fatal.
//!
//! This file holds the containers, options and visitors the tests share;
//! the tests are in one file per topic under `tests/`.

use super::*;
use crate::bundle::binary::{self as bundle, EntrySpec};
use crate::bundle::ccob::{self as ccob, CompressOptions};
use crate::fatbin;
use crate::offload_binary::{ImageKind, ImageSpec, OffloadKind};

mod bare;
mod containers;
mod damage;
mod fatbins;
mod hostile;
mod limits;
mod sinks;
mod streamed;
mod windows;

pub(crate) fn offload_binary(images: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let objects: Vec<_> = images
        .iter()
        .map(|&(t, a, d)| (ImageKind::IMG_Object, t, a, d))
        .collect();
    crate::tests::offload_binaries(&objects)
}

pub(crate) fn bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
    let specs: Vec<EntrySpec> = entries
        .iter()
        .map(|(id, d)| EntrySpec {
            id: id.to_string(),
            size: d.len() as u64,
        })
        .collect();
    let layout = bundle::layout(&specs, align).unwrap();
    let bytes: Vec<&[u8]> = entries.iter().map(|e| e.1).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &bytes).unwrap();
    out
}

pub(crate) fn ccob(data: &[u8]) -> Vec<u8> {
    ccob::compress_to_vec(data, &CompressOptions::default())
        .unwrap()
        .0
}

const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
const HOST: &str = "host-x86_64-unknown-linux-gnu-";

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

fn raw() -> Options {
    Options {
        mode: Mode::Raw,
        ..Options::default()
    }
}

/// Every image's file range lies in the file, and every id is in range.
fn sane(r: &Report, len: usize) {
    for i in &r.images {
        if let Some(o) = i.offset {
            assert!(o + i.size <= len as u64, "image {} past the end", i.id);
        }
        assert!(i.container < r.containers.len());
        assert!(i.nested.is_none_or(|n| n < r.containers.len()));
    }
    for c in &r.containers {
        if let Some(o) = c.offset {
            assert!(o + c.size <= len as u64, "container {} past the end", c.id);
        }
        match c.parent {
            Some(Parent::Image(p)) => assert!(p < r.images.len()),
            Some(Parent::Container(p)) => assert!(p < c.id),
            None => {}
        }
    }
}

/// One blob holding each kind of container, between noise.
fn mixed() -> (Vec<u8>, [usize; 4]) {
    let ob = offload_binary(&[("amdgcn-amd-amdhsa", "gfx942", b"\x7fELF-device-code")]);
    let b = bundle(&[(HOST, b""), (GFX90A, b"\x7fELF-hip-code")], 8);
    let c = ccob(&bundle(&[(GFX90A, b"\x7fELF-compressed")], 1));
    let f = fatbin::build(&[
        (2, 80, 0x15, b"\x7fELF-cubin"),
        (1, 80, 0x15, b".version 7.0\0"),
    ]);
    let mut blob = noise(1000, 1);
    let mut at = [0; 4];
    for (i, part) in [&ob, &b, &c, &f].into_iter().enumerate() {
        // OffloadBinaries need 8-byte alignment within what holds them.
        while !blob.len().is_multiple_of(8) {
            blob.push(0);
        }
        at[i] = blob.len();
        blob.extend_from_slice(part);
        blob.extend_from_slice(&noise(333, i as u64 + 7));
    }
    (blob, at)
}

/// Images kept by [`Sinks`]: (target ID, bytes).
type Kept = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// Streams images to sinks, keeping what each got once told to keep it.
#[derive(Default)]
struct Sinks {
    kept: Kept,
    failed: Vec<String>,
}

/// A sink that collects what it is given and, when kept, hands it to its
/// function.
struct VecSink(Vec<u8>, Box<dyn FnOnce(Vec<u8>) + Send>);

impl VecSink {
    fn boxed(keep: impl FnOnce(Vec<u8>) + Send + 'static) -> Box<dyn ImageSink> {
        Box::new(VecSink(Vec::new(), Box::new(keep)))
    }
}

impl std::io::Write for VecSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ImageSink for VecSink {
    fn keep(self: Box<Self>) -> std::io::Result<()> {
        let VecSink(bytes, keep) = *self;
        keep(bytes);
        Ok(())
    }
}

impl Visit for Sinks {
    fn wants(&mut self, image: &Image) -> bool {
        !image.offload_kind.is_host()
    }
    fn image(&mut self, image: &Image, bytes: &[u8]) {
        self.kept
            .lock()
            .unwrap()
            .push((image.target_id.clone(), bytes.to_vec()));
    }
    fn unavailable(&mut self, image: &Image, why: &Unread) {
        self.failed.push(format!("{}: {why}", image.target_id));
    }
    fn sink(&mut self, image: &Image) -> Option<Box<dyn ImageSink>> {
        let (name, kept) = (image.target_id.clone(), self.kept.clone());
        Some(VecSink::boxed(move |bytes| {
            kept.lock().unwrap().push((name, bytes));
        }))
    }
    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn ImageSink>,
        end: std::result::Result<(), SinkError>,
    ) {
        match end {
            Ok(()) => sink.keep().unwrap(),
            Err(e) => self.failed.push(format!("{}: {e:?}", image.target_id)),
        }
    }
}
