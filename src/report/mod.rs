//! The reports the commands print, made from what the engines return:
//! the Markdown of `size`, `inspect`, `check` and `prune` (for a CI job
//! summary), the HTML treemap of `size --html`, the JUnit XML of
//! `check --junit`, and the tables and JSON of `list`, `prune` and
//! `split`. The engines (`scan`, `kernels`, `prune`) only return
//! data; this module turns it into bytes, and the command line only
//! prints what it returns. Nothing here reads files or prints.
//!
//! A library user makes the same documents as the command line from the
//! same data: [`size_markdown`] and [`size_html`] of `scan::size`'s
//! [`SizeReport`](crate::scan::SizeReport)s, [`inspect_markdown`] of
//! [`JsonFile`](crate::scan::JsonFile)s, [`tree_markdown`] of what
//! [`prune_tree`](crate::prune::prune_tree) returns; a
//! [`CheckReport`](crate::kernels::CheckReport)'s `markdown` and `junit`
//! are made here too.

#[cfg(feature = "cli")]
mod check;
mod check_markdown;
#[cfg(feature = "cli")]
mod diff;
#[cfg(feature = "cli")]
mod dirs;
mod html;
#[cfg(feature = "cli")]
mod inspect;
#[cfg(feature = "cli")]
mod json;
mod junit;
#[cfg(feature = "cli")]
mod list;
mod markdown;
pub(crate) mod problems;
#[cfg(feature = "files")]
mod prune;
#[cfg(feature = "cli")]
pub(crate) mod prune_text;
#[cfg(feature = "cli")]
pub(crate) mod size;
#[cfg(feature = "cli")]
pub(crate) mod split;
mod text;

#[cfg(feature = "cli")]
pub(crate) use check::{Shown as CheckShown, print_outcome as print_check};
#[cfg(feature = "cli")]
pub(crate) use diff::print as diff_table;
#[cfg(feature = "cli")]
pub(crate) use dirs::quiet_dirs;
pub use html::{HtmlFile, size_html};
#[cfg(feature = "cli")]
pub(crate) use inspect::print_table as inspect_table;
#[cfg(feature = "cli")]
pub(crate) use json::{RawNames, write_json};
#[cfg(feature = "cli")]
pub(crate) use list::{list_bundle, list_json, list_rows, list_scanned};
pub use markdown::{inspect_markdown, size_markdown};
#[cfg(feature = "files")]
pub(crate) use prune::markdown as prune_markdown;
#[cfg(feature = "files")]
pub use prune::tree_markdown;
pub(crate) use text::print_line;
