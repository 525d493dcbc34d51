//! What a caller of the scan wants of the images: [`Visit`], and the
//! readers and sinks it hands images through.

use super::{Image, Unread};

/// A caller that wants the bytes of some images (to extract them, say).
/// The bytes are only valid during the call: images inside compressed data
/// are streamed to a [sink](Visit::sink), or decompressed into a buffer
/// that is dropped afterwards.
pub trait Visit {
    /// Whether [`Visit::image`] should get this image's bytes. Asked before
    /// anything is decompressed for it, so `image_kind` may be `None`.
    fn wants(&mut self, image: &Image) -> bool;
    /// The bytes of an image [`Visit::wants`] said yes to.
    fn image(&mut self, image: &Image, bytes: &[u8]);
    /// An image [`Visit::wants`] said yes to whose bytes cannot be had
    /// (compressed data that does not decompress, or fails its stored
    /// hash), and why, when no sink was streamed into (a sink's failure
    /// comes through [`Visit::streamed`]). The default does nothing; the
    /// damage is also a [`Problem`](super::Problem) of the report.
    fn unavailable(&mut self, image: &Image, why: &Unread) {
        let _ = (image, why);
    }
    /// The contents of a member of a thin archive, which records only the
    /// member's name (a path, relative to the archive's directory unless
    /// absolute) and size: `None` (the default) leaves it unread, reported
    /// as a problem; `Some(Err(why))` reports why it could not be read.
    fn thin_member(&mut self, name: &str) -> ThinMember {
        let _ = name;
        None
    }
    /// Where to stream the bytes of an image inside compressed data (a
    /// CCOB's bundle, a compressed OffloadBinary, a compressed CUDA fatbin
    /// entry) that [`Visit::wants`] said yes to, as they are decompressed,
    /// instead of handing them to [`Visit::image`] in one piece (which
    /// needs them all in memory). `None` (the default): [`Visit::image`]
    /// gets them. Every sink given is handed back through
    /// [`Visit::streamed`]. The image's hash, if asked for, may not be
    /// known yet when the sink is asked for.
    fn sink(&mut self, image: &Image) -> Option<Box<dyn ImageSink>> {
        let _ = image;
        None
    }
    /// How the stream into a sink from [`Visit::sink`] ended: `Ok` when
    /// every byte of the image was written and the compressed data held
    /// together (its hash too, under [`Options::verify`](super::Options::verify)); the visitor
    /// then [keeps](ImageSink::keep) what was written. The default keeps
    /// it on success and drops it otherwise.
    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn ImageSink>,
        end: std::result::Result<(), SinkError>,
    ) {
        let _ = image;
        if end.is_ok() {
            let _ = sink.keep();
        }
    }
    /// A reader for the bytes of an image [`Visit::wants`] said yes to,
    /// asked before [`Visit::sink`]: given one, the scan runs it on the
    /// image's bytes in place of [`Visit::image`] (and of any sink), then
    /// hands it back through [`Visit::read`]. A compressed CUDA fatbin
    /// entry is read on the thread that decompressed it, several at once
    /// under [`Options::threads`](super::Options::threads), each from a buffer that thread keeps;
    /// any other image on the scan's own thread. `None` (the default):
    /// [`Visit::image`] or the sink gets the bytes.
    fn reader(&mut self, image: &Image) -> Option<Box<dyn ImageReader>> {
        let _ = image;
        None
    }
    /// A reader from [`Visit::reader`] back, in the scan's order: `Ok`
    /// when it has read all of the image's bytes, `Err(why)` when they
    /// could not be had (as [`Visit::unavailable`] says) or the scan
    /// stopped at a limit, and what it read must not be used.
    fn read(
        &mut self,
        image: &Image,
        reader: Box<dyn ImageReader>,
        end: std::result::Result<(), Unread>,
    ) {
        let _ = (image, reader, end);
    }
}

/// What [`Visit::reader`] gives: work on one image's bytes that may run on
/// another thread. It is `Any`, so that the visitor can take its own type
/// back from the `Box<dyn ImageReader>` that [`Visit::read`] gets (as
/// `Box<dyn Any>`, then `downcast`).
pub trait ImageReader: std::any::Any + Send {
    /// Reads the image's bytes: all of them, in one piece, once.
    fn read(&mut self, bytes: &[u8]);
}

/// What [`Visit::sink`] gives: a writer for an image's bytes.
pub trait ImageSink: std::io::Write + Send {
    /// Keeps what was written (renames a temporary file into place, say).
    /// A sink dropped without this call should leave nothing behind.
    fn keep(self: Box<Self>) -> std::io::Result<()>;
}

/// Why a stream into an [`ImageSink`] did not end well.
#[derive(Debug)]
pub enum SinkError {
    /// Writing to the sink failed (the stream went on for the others).
    Write(std::io::Error),
    /// The compressed data around the image is damaged (it ends early,
    /// decodes further than declared or is corrupt), or its stored hash
    /// does not match (under [`Options::verify`](super::Options::verify)): why.
    Data(Unread),
}

/// What [`Visit::thin_member`] gives: nothing, why the member file could
/// not be read, or its contents (held as long as they are scanned).
pub type ThinMember = Option<Result<Box<dyn AsRef<[u8]>>, String>>;

/// A [`Visit`] that wants nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoVisit;

impl Visit for NoVisit {
    fn wants(&mut self, _: &Image) -> bool {
        false
    }
    fn image(&mut self, _: &Image, _: &[u8]) {}
}
