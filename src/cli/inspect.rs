//! `offload-kit inspect`: every device image inside files, as a table or
//! JSON.
//!
//! # `inspect --json` schema (version 1)
//!
//! ```text
//! {
//!   "schema": "offload-kit/inspect/1",
//!   "files": [{
//!     "path": string,              // as given, or joined below a directory given
//!     "size": number,              // file size in bytes
//!     "format": string,            // ELF32 ELF64 COFF PE Mach-O archive object
//!                                  // offload-binary bundle ccob cuda-fatbin data
//!     "scan": [string],            // "sections" and/or "raw": how images were found
//!     "error": string | null,      // the file could not be read (nothing else is set)
//!     "containers": [{
//!       "id": number,              // index in this list
//!       "kind": string,            // offload-binary bundle text-bundle object-bundle
//!                                  // ccob cuda-fatbin fatbin-wrapper
//!       "version": number | null,
//!       "parent": {"image": number} | {"container": number} | null,
//!       "member": string | null,   // archive member, "outer(inner)" when nested
//!       "section": string | null,
//!       "offset": number | null,   // file offset; null inside decompressed data and thin archive members
//!       "relative_offset": number, // offset in the parent's bytes, else in the
//!                                  // section, member or file
//!       "size": number,            // bytes it occupies
//!       "images": number,          // images it holds directly
//!       "compression": {           // ccob, compressed offload-binary; else null
//!         "method": string,        // zstd | zlib
//!         "compressed_size": number, "uncompressed_size": number,
//!         "stored_hash": string | null,  // CCOB: 0x-prefixed LE64 of the MD5
//!         "decompressed": bool,    // false: only the bundle header was read
//!         "hash_ok": bool | null   // with --verify
//!       } | null,
//!       "wrapper": {               // fatbin-wrapper only; else null
//!         "flavor": string,        // cuda | hip | hipk
//!         "magic": number, "version": number,
//!         "target": number | null,            // file offset its pointer resolves to
//!         "target_container": number | null   // the container there
//!       } | null
//!     }],
//!     "images": [{
//!       "id": number, "container": number, "index": number,
//!       "bundle_id": string | null,     // bundle entries
//!       "offload_kind": string,         // openmp cuda hip sycl host opencl none ...
//!       "image_kind": string | null,    // object bitcode cubin fatbinary ptx spirv
//!                                       // none unknown unknown-N ...; null: not read
//!       "triple": string,
//!       "arch": string,                 // processor: gfx90a, sm_80
//!       "target_id": string,            // with features: gfx90a:xnack+
//!       "features": [string],
//!       "strings": [{"key": string, "value": string}],  // other metadata
//!       "section": string | null, "member": string | null,
//!       "offset": number | null,        // file offset; null inside decompressed data and thin archive members
//!       "relative_offset": number,      // in its container
//!       "size": number,                 // bytes (what extract writes)
//!       "uncompressed_size": number | null,  // compressed CUDA fatbin entries
//!       "in_compressed": bool,
//!       "hash": string | null,          // "xxh3-128:<hex>" or "md5:<hex>" with --hash
//!       "nested": number | null         // first container found inside its bytes
//!     }],
//!     "problems": [{
//!       "offset": number | null, "section": string | null, "member": string | null,
//!       "container": number | null, "message": string
//!     }]
//!   }]
//! }
//! ```
//!
//! New fields may be added to objects; existing ones keep their meaning.
//! A change that breaks a consumer bumps the version in `schema`.

use std::io::Write;

use anyhow::{Result, bail};
use serde::Serialize;

use super::scan::{Common, Scanned, par_map, scan_file};
use offload_kit::scan::{self, HashAlgo, Parent};
use table::print_table;

mod table;

/// List every device image inside files: where it is, what it is, for whom.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    offload-kit inspect libtorch_hip.so\n  \
    offload-kit inspect --json --hash build/ > images.json\n  \
    offload-kit inspect --raw --verify core.dump\n\n\
    The --json schema is documented in the README (schema \"offload-kit/inspect/1\").")]
pub struct InspectOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Hash every image: `--hash` (xxh3-128) or `--hash=md5`.
    #[arg(long, value_name = "ALGO", num_args = 0..=1, require_equals = true,
          default_missing_value = "xxh3-128", value_parser = ["xxh3-128", "md5"])]
    hash: Option<String>,
    /// Also report raw-scan candidates that turned out not to be containers.
    #[arg(long)]
    rejects: bool,
}

impl InspectOpts {
    pub fn run(self) -> Result<()> {
        let mut opts = self.common.options();
        opts.hash = self.hash.as_deref().map(|h| {
            if h == "md5" {
                HashAlgo::Md5
            } else {
                HashAlgo::Xxh3_128
            }
        });
        opts.report_rejects = self.rejects;
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let mut out = std::io::stdout().lock();
        let failed = scanned.iter().any(|s| s.result.is_err());
        if self.json {
            let doc = JsonDoc {
                schema: "offload-kit/inspect/1",
                files: scanned.iter().map(json_file).collect(),
            };
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        } else {
            for s in &scanned {
                print_table(&mut out, s)?;
            }
        }
        if failed {
            bail!("some files could not be read");
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct JsonDoc {
    schema: &'static str,
    files: Vec<JsonFile>,
}

#[derive(Serialize)]
struct JsonFile {
    path: String,
    size: u64,
    format: Option<&'static str>,
    scan: Vec<&'static str>,
    error: Option<String>,
    containers: Vec<JsonContainer>,
    images: Vec<JsonImage>,
    problems: Vec<JsonProblem>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum JsonParent {
    Image(usize),
    Container(usize),
}

#[derive(Serialize)]
struct JsonCompression {
    method: String,
    compressed_size: u64,
    uncompressed_size: u64,
    stored_hash: Option<String>,
    decompressed: bool,
    hash_ok: Option<bool>,
}

#[derive(Serialize)]
struct JsonWrapper {
    flavor: &'static str,
    magic: u32,
    version: u32,
    target: Option<u64>,
    target_container: Option<usize>,
}

#[derive(Serialize)]
struct JsonContainer {
    id: usize,
    kind: &'static str,
    version: Option<u32>,
    parent: Option<JsonParent>,
    member: Option<String>,
    section: Option<String>,
    offset: Option<u64>,
    relative_offset: u64,
    size: u64,
    images: usize,
    compression: Option<JsonCompression>,
    wrapper: Option<JsonWrapper>,
}

#[derive(Serialize)]
struct JsonString {
    key: String,
    value: String,
}

#[derive(Serialize)]
struct JsonImage {
    id: usize,
    container: usize,
    index: usize,
    bundle_id: Option<String>,
    offload_kind: String,
    image_kind: Option<String>,
    triple: String,
    arch: String,
    target_id: String,
    features: Vec<String>,
    strings: Vec<JsonString>,
    section: Option<String>,
    member: Option<String>,
    offset: Option<u64>,
    relative_offset: u64,
    size: u64,
    uncompressed_size: Option<u64>,
    in_compressed: bool,
    hash: Option<String>,
    nested: Option<usize>,
}

#[derive(Serialize)]
struct JsonProblem {
    offset: Option<u64>,
    section: Option<String>,
    member: Option<String>,
    container: Option<usize>,
    message: String,
}

fn json_file(s: &Scanned) -> JsonFile {
    let r = match &s.result {
        Ok(r) => r,
        Err(e) => {
            return JsonFile {
                path: s.path.clone(),
                size: s.size,
                format: None,
                scan: Vec::new(),
                error: Some(e.clone()),
                containers: Vec::new(),
                images: Vec::new(),
                problems: Vec::new(),
            };
        }
    };
    let mut how = Vec::new();
    if r.used_sections {
        how.push("sections");
    }
    if r.used_raw_scan {
        how.push("raw");
    }
    JsonFile {
        path: s.path.clone(),
        size: s.size,
        format: Some(r.format),
        scan: how,
        error: None,
        containers: r
            .containers
            .iter()
            .map(|c| JsonContainer {
                id: c.id,
                kind: c.kind.name(),
                version: c.version,
                parent: c.parent.map(|p| match p {
                    Parent::Image(i) => JsonParent::Image(i),
                    Parent::Container(i) => JsonParent::Container(i),
                }),
                member: c.member.clone(),
                section: c.section.clone(),
                offset: c.offset,
                relative_offset: c.relative_offset,
                size: c.size,
                images: c.images,
                compression: c.compression.as_ref().map(|z| JsonCompression {
                    method: z.method.clone(),
                    compressed_size: z.compressed_size,
                    uncompressed_size: z.uncompressed_size,
                    stored_hash: z.stored_hash.clone(),
                    decompressed: z.decompressed,
                    hash_ok: z.hash_ok,
                }),
                wrapper: c.wrapper.as_ref().map(|w| JsonWrapper {
                    flavor: w.flavor,
                    magic: w.magic,
                    version: w.version,
                    target: w.target,
                    target_container: w.target_container,
                }),
            })
            .collect(),
        images: r
            .images
            .iter()
            .map(|i| JsonImage {
                id: i.id,
                container: i.container,
                index: i.index,
                bundle_id: i.bundle_id.clone(),
                offload_kind: i.offload_kind.to_string(),
                image_kind: i.image_kind.map(|k| k.to_string()),
                triple: i.triple.clone(),
                arch: i.arch.clone(),
                target_id: i.target_id.clone(),
                features: i.features.clone(),
                strings: i
                    .strings
                    .iter()
                    .map(|(k, v)| JsonString {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                section: i.section.clone(),
                member: i.member.clone(),
                offset: i.offset,
                relative_offset: i.relative_offset,
                size: i.size,
                uncompressed_size: i.uncompressed_size,
                in_compressed: i.in_compressed,
                hash: i.hash.as_ref().map(ToString::to_string),
                nested: i.nested,
            })
            .collect(),
        problems: r
            .problems
            .iter()
            .map(|p| JsonProblem {
                offset: p.offset,
                section: p.section.clone(),
                member: p.member.clone(),
                container: p.container,
                message: p.message.clone(),
            })
            .collect(),
    }
}
