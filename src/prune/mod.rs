//! Pruning: keeping only the device images the GPUs a user ships to would
//! load, container by container (`offload-kit prune`, issue #28).
//!
//! Two halves, apart so that each can be checked on its own:
//! - [`Selection`] decides, image by image of a scan [`Report`](crate::scan::Report), what
//!   stays: with `--keep` rules an image stays when a device the rules name
//!   would load it ([`Rule::loaded_by_some`](crate::scan::Rule::loaded_by_some): `gfx90a` keeps gfx90a,
//!   `gfx90a:xnack+` and `gfx90a:xnack-` images and generic images that
//!   cover gfx90a; `sm_90` keeps sm_90 and sm_90a cubins and the older
//!   cubins of the 9.x line an sm_90 device runs), and PTX as [`Ptx`]
//!   says; with `--drop` rules an image goes when it is built for a target
//!   a rule names ([`Rule::built_for`](crate::scan::Rule::built_for)). Bundles' host entries always stay.
//! - `containers` rewrites one container with only the entries that stay:
//!   a CUDA fatbin (entries kept as stored, compressed or not), a binary
//!   clang offload bundle (laid out as LLVM's bundler lays out the same
//!   entries), a compressed one (rebuilt around its pruned bundle); an
//!   OffloadBinary, holding one image, stays or goes whole. Each result is a
//!   [`Layout`](crate::layout::Layout) whose payloads are byte ranges of
//!   the input: the kept entries are copied, never decoded.
//! - [`plan`] finds the containers of a file that lose entries and
//!   rewrites each; a [`Written`](crate::bundle::Written) describes the file then written, by its
//!   kind: a linked program or library rewritten where each container lies
//!   (nothing moves), a relocatable object whose sections shrink
//!   (`object`), a static archive of them ([`prune_archive`]), or a bare
//!   container file with the freed bytes cut out.
//! - With the `files` feature, [`prune_path`] does all of it to a file on
//!   disk, as `offload-kit prune` does: reads it, prunes it by its kind
//!   (static and thin archives, wheels, Debian packages, the rest as
//!   [`prune_file`]),
//!   writes the result atomically where [`PathOptions`] says (a dry run,
//!   a file, a directory, in place, keeping hard links or not) and
//!   returns a [`PathReport`], or a [`PathError`] naming the file and
//!   what failed; [`prune_tree`] does it to every file under
//!   directories, in place or in a dry run.
//!
//! # Examples
//!
//! Keep only what a gfx90a loads of a HIP bundle built for two GPUs
//! ([`prune_file`] scans, decides and describes the pruned file; a bare
//! container loses the freed bytes, a linked program keeps its layout):
//!
//! ```
//! use offload_kit::bundle::{self, Format};
//! use offload_kit::prune::{self, Options, Ptx, Rules, Selection};
//! use offload_kit::scan::Rule;
//!
//! let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
//! let entries = [
//!     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
//!     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
//!     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
//! ];
//! let mut file = Vec::new();
//! bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
//!
//! let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
//! let pruning = prune::prune_file(&file, &keep, &Options::default())?;
//! let pruned = pruning.output.ok_or("nothing to prune")?.to_vec(&[&file])?;
//! assert_eq!(pruned.len() as u64, file.len() as u64 - pruning.freed);
//!
//! let left = bundle::entries(&pruned, Format::Binary)?;
//! let ids: Vec<&[u8]> = left.iter().map(|e| e.id).collect();
//! assert_eq!(ids.len(), 2);
//! assert!(!ids.contains(&&b"hip-amdgcn-amd-amdhsa--gfx942"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "files")]
mod anchor;
pub(crate) mod archive;
#[cfg(feature = "files")]
mod budget;
#[cfg(feature = "files")]
mod by_kind;
pub(crate) mod companion;
#[cfg(feature = "files")]
mod conda;
pub(crate) mod containers;
#[cfg(feature = "files")]
pub(crate) mod deb;
#[cfg(feature = "files")]
mod fan;
mod file;
#[cfg(feature = "files")]
mod oci;
#[cfg(all(feature = "files", any(test, fuzzing)))]
pub(crate) use oci::metadata_for_fuzz as image_metadata_for_fuzz;
#[cfg(feature = "files")]
mod job;
#[cfg(feature = "files")]
mod member;
mod model;
pub(crate) mod object;
pub(crate) mod output;
#[cfg(feature = "files")]
mod packed;
#[cfg(feature = "files")]
mod path;
pub(crate) mod plan;
#[cfg(all(test, feature = "files"))]
mod race;
#[cfg(feature = "files")]
mod rewriters;
#[cfg(feature = "files")]
mod rpm;
pub(crate) mod shrink;
#[cfg(feature = "files")]
pub(crate) mod split;
#[cfg(feature = "files")]
mod squashfs;
#[cfg(feature = "files")]
pub(crate) mod summary;
#[cfg(feature = "files")]
mod tamper;
#[cfg(feature = "files")]
mod tree;
#[cfg(feature = "files")]
pub(crate) mod wheel;

pub use crate::host::linked::{Segment, Shrunk};
pub use archive::prune as prune_archive;
#[cfg(feature = "files")]
pub use by_kind::prune_path;
pub use containers::Pruned;
#[cfg(any(test, fuzzing))]
pub(crate) use file::package_not_pruned;
pub use file::{FilePruning, prune_file};
pub use model::{Options, Ptx, Rules, Selection, Verdict};
#[cfg(feature = "files")]
pub use path::{
    CondaRecords, Destination, ImageGroup, ImageRewritten, PackageBytes, PathError, PathErrorKind,
    PathOptions, PathReport, RemovedFile,
};
pub use plan::{Edit, Host, Plan, plan};
#[cfg(feature = "files")]
pub(crate) use tree::walked_dirs;
#[cfg(feature = "files")]
pub use tree::{Skip, TreeEntry, TreeOutcome, prune_tree};

#[cfg(test)]
mod tests;
