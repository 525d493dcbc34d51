//! The reports the commands print, made from what the engines return:
//! the Markdown of `size`, `inspect`, `check` and `prune` (for a CI job
//! summary), the HTML treemap of `size --html`, and the JUnit XML of
//! `check --junit`. The engines (`scan`, `kernels`, `prune`) only return
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

mod check_markdown;
mod html;
mod junit;
mod markdown;
#[cfg(feature = "files")]
mod prune;

pub use html::{HtmlFile, size_html};
pub use markdown::{inspect_markdown, size_markdown};
#[cfg(feature = "files")]
pub(crate) use prune::markdown as prune_markdown;
#[cfg(feature = "files")]
pub use prune::tree_markdown;
