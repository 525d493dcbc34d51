//! The walk of a layout: `index.json`, the indexes and manifests it
//! names, each image's config; every small blob checked against its
//! descriptor's size and SHA-256 as it is read.

use super::digests::{
    MAX_DEPTH, MAX_JSON, REF_NAME, hex_sha, is_image_config, is_index, sha256_hex,
};
use super::docs::{
    ConfigDoc, Desc, DiffIdsWhy, Document, Entry, Image, Index, IndexDoc, ManifestDoc, NotWhy,
};

/// Where a layout's files are: `index.json` and the blobs of
/// `blobs/sha256/`, each read whole within a cap.
pub(crate) trait Blobs {
    /// Why a file could not be read, as the store words it.
    type Error;
    /// The bytes of `index.json`, at most `cap` of them.
    fn index_json(&self, cap: u64) -> Result<Vec<u8>, Self::Error>;
    /// The bytes of the blob whose SHA-256 is `hex` (64 lowercase hex
    /// digits, checked before), at most `cap` of them.
    fn blob(&self, hex: &str, cap: u64) -> Result<Vec<u8>, Self::Error>;
}

/// What the walk is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The scanners': every manifest must be an image's (layers, a
    /// config), every diff ID and layer digest a sha256 digest; an image
    /// without a name is named by its platform.
    Scan,
    /// Prune's: what is not an image (a signature, an artifact, a blob
    /// that is no JSON and says so) is an [`Entry::Other`], left as it is.
    Rewrite,
}

/// Why a layout cannot be read: what is wrong, and where (a document, a
/// field of one, a descriptor's digest). The scanners and prune each word
/// it in their own messages.
#[derive(Debug)]
pub(crate) enum OciError<E> {
    /// The index `what` lies deeper than [`MAX_DEPTH`].
    Deep { what: String },
    /// The document `what` is not an image index.
    NotIndex { what: String, why: NotWhy },
    /// The descriptor at `field` gives a digest that is no sha256 digest.
    NotSha256 { field: String, digest: String },
    /// The descriptor at `field` gives a small blob a `size` over
    /// [`MAX_JSON`].
    OverRead {
        field: String,
        digest: String,
        size: u64,
    },
    /// The file of the descriptor at `field` (or `index.json`) cannot be
    /// read, as the store says.
    Store { field: String, err: E },
    /// The blob `digest` (at `field`) is `is` bytes, its descriptor
    /// `said` another size.
    Size {
        field: String,
        digest: String,
        said: u64,
        is: u64,
    },
    /// The blob at `field` does not hash to its `digest`.
    Digest { field: String, digest: String },
    /// The blob `digest` at `field` is not an image manifest.
    NotManifest {
        field: String,
        digest: String,
        why: NotWhy,
    },
    /// The `config` of the manifest `manifest` is not an image config.
    NotConfig {
        manifest: String,
        config: String,
        why: serde_json::Error,
    },
    /// The `config` of the manifest `manifest` lists `ids` diff IDs, the
    /// manifest `layers` layers.
    DiffIdCount {
        manifest: String,
        config: String,
        ids: usize,
        layers: usize,
    },
    /// `rootfs.diff_ids[index]` of `config` is no sha256 digest.
    DiffId {
        config: String,
        index: usize,
        digest: String,
    },
    /// A layer of the manifest `manifest` has a digest that is no sha256
    /// digest.
    LayerDigest { manifest: String, digest: String },
}

/// `index.json` of the layout `blobs`, read with everything it names.
pub(crate) fn read<B: Blobs>(blobs: &B, mode: Mode) -> Result<Index, OciError<B::Error>> {
    let bytes = blobs.index_json(MAX_JSON).map_err(|err| OciError::Store {
        field: "index.json".into(),
        err,
    })?;
    Walk { blobs, mode }.index("index.json".into(), bytes, None, 0)
}

/// A walk of one layout.
struct Walk<'b, B> {
    blobs: &'b B,
    mode: Mode,
}

/// A manifest's parts the walk reads.
struct Manifest {
    media_type: String,
    has_manifests: bool,
    config: Option<Desc>,
    layers: Option<Vec<Desc>>,
}

impl<B: Blobs> Walk<'_, B> {
    /// The index `bytes` (named `what`), with what it names; `name` is
    /// the name the index itself was given.
    fn index(
        &self,
        what: String,
        bytes: Vec<u8>,
        name: Option<&str>,
        depth: u32,
    ) -> Result<Index, OciError<B::Error>> {
        if depth > MAX_DEPTH {
            return Err(OciError::Deep { what });
        }
        let parsed = match self.mode {
            Mode::Scan => serde_json::from_slice::<Document>(&bytes)
                .map_err(NotWhy::Json)
                .and_then(|d| d.manifests.ok_or(NotWhy::Lacks("manifests"))),
            Mode::Rewrite => serde_json::from_slice::<IndexDoc>(&bytes)
                .map(|d| d.manifests)
                .map_err(NotWhy::Json),
        };
        let manifests = match parsed {
            Ok(m) => m,
            Err(why) => return Err(OciError::NotIndex { what, why }),
        };
        let mut entries = Vec::with_capacity(manifests.len());
        for (i, d) in manifests.into_iter().enumerate() {
            let field = format!("{what}: manifests[{i}]");
            entries.push(self.entry(d, field, name, depth)?);
        }
        Ok(Index {
            what,
            bytes,
            entries,
        })
    }

    /// What the descriptor `d` (at `field`) of an index names.
    fn entry(
        &self,
        d: Desc,
        field: String,
        name: Option<&str>,
        depth: u32,
    ) -> Result<Entry, OciError<B::Error>> {
        let scan = self.mode == Mode::Scan;
        let own = d
            .annotations
            .get(REF_NAME)
            .cloned()
            .or_else(|| d.platform.as_ref().filter(|_| scan).map(|p| p.name()))
            .unwrap_or_else(|| d.digest.get(..19).unwrap_or(&d.digest).to_string());
        let shown = match name {
            Some(n) => format!("{n}@{own}"),
            None => own,
        };
        let blob = self.small(&d, &field)?;
        if scan && is_index(&d.media_type) {
            let inner = self.index(d.digest.clone(), blob, Some(&shown), depth + 1)?;
            return Ok(Entry::Index(inner));
        }
        let m = match self.manifest(&blob) {
            Ok(m) => m,
            Err(_) if !scan && !d.media_type.ends_with("+json") => return Ok(Entry::Other),
            Err(why) => return Err(self.not_manifest(&field, &d, why)),
        };
        if is_index(&d.media_type) || is_index(&m.media_type) || m.has_manifests {
            let inner = self.index(d.digest.clone(), blob, Some(&shown), depth + 1)?;
            return Ok(Entry::Index(inner));
        }
        let (config, layers) = match (m.config, m.layers) {
            (Some(c), Some(l)) if scan || is_image_config(&c.media_type) => (c, l),
            (_, None) if scan => {
                return Err(self.not_manifest(&field, &d, NotWhy::Lacks("layers")));
            }
            (None, _) if scan => {
                return Err(self.not_manifest(&field, &d, NotWhy::Lacks("config")));
            }
            _ => return Ok(Entry::Other),
        };
        let config_bytes = self.small(&config, &format!("{} config", d.digest))?;
        let diff_ids = ConfigDoc::diff_ids_for(&config_bytes, layers.len()).map_err(|e| {
            let (manifest, config) = (d.digest.clone(), config.digest.clone());
            match e {
                DiffIdsWhy::Json(why) => OciError::NotConfig {
                    manifest,
                    config,
                    why,
                },
                DiffIdsWhy::Count { ids, layers } => OciError::DiffIdCount {
                    manifest,
                    config,
                    ids,
                    layers,
                },
            }
        })?;
        if scan {
            self.scan_digests(&d, &config, &diff_ids, &layers)?;
        }
        let image = Image {
            name: shown,
            field,
            manifest: blob,
            config,
            config_bytes,
            layers,
            diff_ids,
        };
        Ok(Entry::Image(d, Box::new(image)))
    }

    /// The manifest `blob`, as the mode reads it.
    fn manifest(&self, blob: &[u8]) -> Result<Manifest, NotWhy> {
        Ok(match self.mode {
            Mode::Scan => {
                let m: Document = serde_json::from_slice(blob).map_err(NotWhy::Json)?;
                Manifest {
                    media_type: m.media_type,
                    has_manifests: m.manifests.is_some(),
                    config: m.config,
                    layers: m.layers,
                }
            }
            Mode::Rewrite => {
                let m: ManifestDoc = serde_json::from_slice(blob).map_err(NotWhy::Json)?;
                Manifest {
                    media_type: m.media_type,
                    has_manifests: m.manifests.is_some(),
                    config: m.config,
                    layers: m.layers,
                }
            }
        })
    }

    fn not_manifest(&self, field: &str, d: &Desc, why: NotWhy) -> OciError<B::Error> {
        OciError::NotManifest {
            field: field.to_string(),
            digest: d.digest.clone(),
            why,
        }
    }

    /// Checks, for the scanners, that each diff ID of `config` and each
    /// layer digest of the manifest `d` is a sha256 digest.
    fn scan_digests(
        &self,
        d: &Desc,
        config: &Desc,
        diff_ids: &[String],
        layers: &[Desc],
    ) -> Result<(), OciError<B::Error>> {
        if let Some((index, id)) =
            (diff_ids.iter().enumerate()).find(|(_, id)| sha256_hex(id).is_none())
        {
            return Err(OciError::DiffId {
                config: config.digest.clone(),
                index,
                digest: id.clone(),
            });
        }
        match layers.iter().find(|l| l.hex().is_none()) {
            Some(l) => Err(OciError::LayerDigest {
                manifest: d.digest.clone(),
                digest: l.digest.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The small blob `d` (named at `field`), checked against it.
    fn small(&self, d: &Desc, field: &str) -> Result<Vec<u8>, OciError<B::Error>> {
        let Some(hex) = d.hex() else {
            return Err(OciError::NotSha256 {
                field: field.to_string(),
                digest: d.digest.clone(),
            });
        };
        if d.size > MAX_JSON {
            return Err(OciError::OverRead {
                field: field.to_string(),
                digest: d.digest.clone(),
                size: d.size,
            });
        }
        let bytes = self
            .blobs
            .blob(hex, MAX_JSON)
            .map_err(|err| OciError::Store {
                field: field.to_string(),
                err,
            })?;
        if bytes.len() as u64 != d.size {
            return Err(OciError::Size {
                field: field.to_string(),
                digest: d.digest.clone(),
                said: d.size,
                is: bytes.len() as u64,
            });
        }
        if hex_sha(&bytes) != hex {
            return Err(OciError::Digest {
                field: field.to_string(),
                digest: d.digest.clone(),
            });
        }
        Ok(bytes)
    }
}
