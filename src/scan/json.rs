//! The `inspect --json` document: what [`Report`]s serialize as, plus the
//! per-file wrapper ([`File`]) and the document itself ([`Document`]).
//! Serializing a [`Document`] with `serde_json::to_writer_pretty` gives
//! exactly what `offload-kit inspect --json` prints.
//!
//! # Schema (version 2)
//!
//! ```text
//! {
//!   "schema": "offload-kit/inspect/2",
//!   "files": [{
//!     "path": string,              // as given, or joined below a directory given
//!     "size": number,              // file size in bytes
//!     "format": string,            // ELF32 ELF64 COFF PE Mach-O archive object
//!                                  // offload-binary bundle ccob cuda-fatbin data;
//!                                  // for a file that is one image: ptx spirv bitcode
//!     "scan": [string],            // "sections" and/or "raw": how images were found
//!                                  // (none: a file that is one image, told by its header)
//!     "error": string | null,      // the file could not be read (nothing else is set)
//!     "containers": [{
//!       "id": number,              // index in this list
//!       "kind": string,            // offload-binary bundle text-bundle object-bundle
//!                                  // ccob cuda-fatbin fatbin-wrapper image-file
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
//!                                             // (in an archive: in the archive, as
//!                                             // "offset"; a thin archive's member: in it)
//!         "target_container": number | null   // the container there
//!       } | null
//!     }],
//!     "images": [{                   // device images, in id order (ids of
//!                                       // host entries are missing here)
//!       "id": number, "container": number, "index": number,
//!       "bundle_id": string | null,     // bundle entries
//!       "offload_kind": string,         // openmp cuda hip sycl host opencl none ...
//!       "image_kind": string | null,    // object bitcode cubin fatbinary ptx spirv
//!                                       // none unknown unknown-N ...; null: not read
//!       "triple": string,
//!       "arch": string,                 // processor: gfx90a, sm_80
//!       "target_id": string,            // with features: gfx90a:xnack+
//!       "features": [string],
//!       "cuda_arch": string | null,     // CUDA fatbin entries: what the code is built
//!                                       // for (sm_90, sm_90a, sm_100f); arch is
//!                                       // cuobjdump's name, sm_100 for a family cubin
//!       "strings": [{"key": string, "value": string}],  // other metadata
//!       "section": string | null, "member": string | null,
//!       "offset": number | null,        // file offset; null inside decompressed data and thin archive members
//!       "relative_offset": number,      // in its container
//!       "size": number,                 // bytes at its offset (what extract writes, but for
//!                                       // a compressed CUDA fatbin entry: its compressed bytes)
//!       "uncompressed_size": number | null,  // compressed CUDA fatbin entries: the size its
//!                                       // header declares (what extract writes)
//!       "in_compressed": bool,
//!       "hash": string | null,          // "xxh3-128:<hex>" or "md5:<hex>" with --hash
//!       "nested": number | null,        // first container found inside its bytes
//!       "overlaps": number | null       // index of an earlier entry of its container whose
//!                                       // bytes it overlaps (damage: it was not read)
//!     }],
//!     "host_entries": [...],          // bundles' host entries (offload_kind
//!                                     // "host"), as images are written;
//!                                     // never counted as images
//!     "problems": [{
//!       "offset": number | null, "section": string | null, "member": string | null,
//!       "container": number | null, "message": string,
//!       "kind": string                  // damage | rejected (a raw-scan candidate
//!                                       // that was no container, with --rejects)
//!     }],
//!     "unread": string,               // only for a format not read (a squashfs,
//!                                     // an ISO …: UNREAD_FORMATS), what it is
//!                                     // ("a squashfs image"); its images are not known
//!     "fatbins_elsewhere": [{           // only when there are any: CUDA fatbins in
//!       "section": string,              // other data sections (.rodata, .data …),
//!       "fatbins": number               // which the file loads itself; counted,
//!     }],                               // not listed (--raw lists them)
//!     "kernels": [{                     // only with --kernels: one per image whose
//!                                       // symbols were read, by image id
//!       "image": number,                // the image's id
//!       "error": string,                // the image is damaged (nothing else is set), or:
//!       "format": string,               // amdgpu cubin ptx elf
//!       "target": string,               // absent when the image names none
//!       "version": string,              // code object "v5", PTX ISA "8.0"; may be absent
//!       "kernels": [{
//!         "name": string,               // the symbol name, mangled
//!         "demangled": string,          // with --demangle, for C++ names
//!         "resources": {                // what the image records; absent keys: not recorded
//!           // AMDGPU, the metadata's keys: sgpr_count vgpr_count agpr_count
//!           //   sgpr_spill_count vgpr_spill_count group_segment_fixed_size
//!           //   private_segment_fixed_size kernarg_segment_size wavefront_size
//!           //   max_flat_workgroup_size (numbers), uses_dynamic_stack (bool)
//!           // CUDA, cuobjdump -res-usage's figures: registers stack shared local
//!           //   texture surface sampler max_threads (numbers),
//!           //   constant: [{"bank": number, "size": number}]
//!         }
//!       }],
//!       "symbols": [{"name": string, "demangled": string, "kind": string,  // function | variable
//!                    "size": number}]
//!     }]
//!   }]
//! }
//! ```
//!
//! New fields may be added to objects; existing ones keep their meaning.
//! A change that breaks a consumer bumps the version in `schema`: version 2
//! moved bundles' host entries out of `images` into `host_entries`.

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use super::Report;

/// The `schema` of the document.
pub const SCHEMA: &str = "offload-kit/inspect/2";

/// The whole `inspect --json` document: the [`SCHEMA`] and the files.
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// The files, in the order reported.
    pub files: &'a [File<'a>],
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Document", 2)?;
        st.serialize_field("schema", SCHEMA)?;
        st.serialize_field("files", self.files)?;
        st.end()
    }
}

/// One file of the document: its name and size, and its [`Report`] or why
/// it could not be read.
#[derive(Debug, Clone, Copy)]
pub struct File<'a> {
    /// The file, as named.
    pub path: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// What the scan found, or why the file could not be read.
    pub result: Result<&'a Report, &'a str>,
    /// The kernels of its images (`inspect --kernels`): serialized as
    /// `kernels` when given.
    pub kernels: Option<&'a [crate::kernel_listing::ImageKernels]>,
}

impl Serialize for File<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("File", 9)?;
        st.serialize_field("path", self.path)?;
        st.serialize_field("size", &self.size)?;
        match self.result {
            Ok(r) => {
                st.serialize_field("format", r.format)?;
                st.serialize_field("scan", &How(r))?;
                st.serialize_field("error", &None::<&str>)?;
                report_lists(&mut st, r)?;
            }
            Err(e) => {
                st.serialize_field("format", &None::<&str>)?;
                st.serialize_field("scan", &[] as &[&str])?;
                st.serialize_field("error", e)?;
                report_lists(&mut st, &Report::default())?;
            }
        }
        if let Some(k) = self.kernels {
            st.serialize_field("kernels", k)?;
        }
        st.end()
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Report", 5)?;
        st.serialize_field("format", self.format)?;
        st.serialize_field("scan", &How(self))?;
        report_lists(&mut st, self)?;
        st.end()
    }
}

/// The `containers`, `images`, `host_entries` and `problems` fields of `r`.
fn report_lists<S: SerializeStruct>(st: &mut S, r: &Report) -> Result<(), S::Error> {
    st.serialize_field("containers", &r.containers)?;
    st.serialize_field("images", &Images(r, false))?;
    st.serialize_field("host_entries", &Images(r, true))?;
    st.serialize_field("problems", &r.problems)?;
    if let Some(f) = r.unread {
        st.serialize_field("unread", f.name)?;
    }
    match Elsewhere::of(r) {
        Some(e) => st.serialize_field("fatbins_elsewhere", &e),
        None => Ok(()),
    }
}

/// [`Report::fatbins_elsewhere`] as the commands' JSON has it: a list of
/// `{"section": …, "fatbins": …}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Elsewhere<'a>(&'a [(String, u64)]);

impl Elsewhere<'_> {
    /// The list of report `r`, when it has any.
    pub(crate) fn of(r: &Report) -> Option<Elsewhere<'_>> {
        (!r.fatbins_elsewhere.is_empty()).then_some(Elsewhere(&r.fatbins_elsewhere))
    }
}

impl Serialize for Elsewhere<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row<'a> {
            section: &'a str,
            fatbins: u64,
        }
        s.collect_seq(self.0.iter().map(|(section, fatbins)| Row {
            section,
            fatbins: *fatbins,
        }))
    }
}

/// The device images of a report, or (`true`) its bundles' host entries.
struct Images<'a>(&'a Report, bool);

impl Serialize for Images<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .images
                .iter()
                .filter(|i| i.offload_kind.is_host() == self.1),
        )
    }
}

/// How a report's images were found: `["sections"]`, `["raw"]`, both or
/// neither.
struct How<'a>(&'a Report);

impl Serialize for How<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut how = Vec::with_capacity(2);
        if self.0.used_sections {
            how.push("sections");
        }
        if self.0.used_raw_scan {
            how.push("raw");
        }
        how.serialize(s)
    }
}

/// Key–value pairs as a list of `{"key": …, "value": …}` objects.
pub(super) fn key_values<S: Serializer>(
    pairs: &[(String, String)],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct KeyValue<'a> {
        key: &'a str,
        value: &'a str,
    }
    s.collect_seq(pairs.iter().map(|(key, value)| KeyValue { key, value }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{Options, scan};

    #[test]
    fn a_file_that_could_not_be_read() {
        let f = File {
            path: "x.o",
            size: 3,
            result: Err("no such file"),
            kernels: None,
        };
        assert_eq!(
            serde_json::to_string(&Document { files: &[f] }).unwrap(),
            r#"{"schema":"offload-kit/inspect/2","files":[{"path":"x.o","size":3,"#.to_owned()
                + r#""format":null,"scan":[],"error":"no such file","containers":[],"#
                + r#""images":[],"host_entries":[],"problems":[]}]}"#
        );
    }

    #[test]
    fn a_report_is_a_file_without_path_size_and_error() {
        let r = scan(b"no device code here", &Options::default());
        let file = serde_json::to_value(File {
            path: "p",
            size: 19,
            result: Ok(&r),
            kernels: None,
        })
        .unwrap();
        let mut report = serde_json::to_value(&r).unwrap();
        let obj = report.as_object_mut().unwrap();
        assert_eq!(obj["format"], "data");
        assert_eq!(obj["scan"], serde_json::json!(["raw"]));
        obj.insert("path".into(), "p".into());
        obj.insert("size".into(), 19.into());
        obj.insert("error".into(), serde_json::Value::Null);
        assert_eq!(file, report);
    }
}
