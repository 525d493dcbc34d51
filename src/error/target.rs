//! A `-targets` problem ([`TargetError`], carried by
//! [`crate::ErrorKind::Target`]), worded as `clang-offload-bundler` 22
//! words it. Here rather than in `bundle` (which re-exports it) so that
//! `error` imports nothing; `bundle::id` finds these faults.

use std::fmt;

/// The message LLVM prints for a target that does not have 5 or 6 dash
/// separated parts.
pub const FORMAT_MESSAGE: &str = "Targets need to follow the format '<offload kind>-<target triple>', \
     where '<target triple>' follows the format \
     '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'.";

/// A `-targets` problem, displayed as LLVM 22's message for it (without the
/// `<argv0>: error: ` prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetError {
    /// The same target text appears twice: `Duplicate targets are not allowed`.
    Duplicate,
    /// Not 5 or 6 dash-separated parts: `Targets need to follow the format
    /// '<offload kind>-<target triple>'…`, LLVM's message.
    Format,
    /// Unknown offload kind and/or unknown architecture:
    /// `invalid target 'X', unknown offloading kind 'K', unknown target triple 'T'`
    /// (each clause only when it applies).
    Invalid {
        /// The target as given.
        target: String,
        /// The offload kind, when it is not a valid one.
        bad_kind: Option<String>,
        /// The four triple parts as given, when the architecture is unknown.
        bad_triple: Option<String>,
    },
    /// Two target IDs for one processor in one kind+triple group, where the
    /// later one names a feature the earlier one lacks (§5.4):
    /// `Cannot bundle inputs with conflicting targets: 'A' and 'B'`. The IDs
    /// are the kind, the triple *as given* and the target ID.
    Conflict {
        /// The first ID seen for the processor.
        first: String,
        /// The ID that conflicts with it.
        second: String,
    },
    /// Not exactly one `host` target when bundling (unless every target is
    /// `hip`/`hipv4`), or more than one when unbundling:
    /// `expecting exactly one host target but got N`.
    HostCount(usize),
    /// A target ID whose features do not parse (a feature without `+` or
    /// `-`, an empty one, one named twice, features without a processor).
    /// LLVM 22's conflict check reads such an ID through an empty
    /// `std::optional`: it crashes (a segfault) or goes on with whatever
    /// that memory holds, from machine to machine. Ours is an error:
    /// `invalid target ID 'I' in target 'T'; …`.
    InvalidTargetId {
        /// The whole target (kind, triple as given, target ID).
        target: String,
        /// Its target ID.
        id: String,
    },
    /// A `dxil` triple with OS `shadermodel6.Y`, Y ≥ 10, which LLVM 22
    /// cannot normalize: it prints `LLVM ERROR: Unsupported Shader Model
    /// version` (with no `<argv0>: error:` prefix) and exits with 1. Displays
    /// as `Unsupported Shader Model version`.
    UnsupportedShaderModel,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Duplicate => f.write_str("Duplicate targets are not allowed"),
            TargetError::Format => f.write_str(FORMAT_MESSAGE),
            TargetError::Invalid {
                target,
                bad_kind,
                bad_triple,
            } => {
                write!(f, "invalid target '{target}'")?;
                if let Some(kind) = bad_kind {
                    write!(f, ", unknown offloading kind '{kind}'")?;
                }
                if let Some(triple) = bad_triple {
                    write!(f, ", unknown target triple '{triple}'")?;
                }
                Ok(())
            }
            TargetError::Conflict { first, second } => write!(
                f,
                "Cannot bundle inputs with conflicting targets: '{first}' and '{second}'"
            ),
            TargetError::HostCount(n) => {
                write!(f, "expecting exactly one host target but got {n}")
            }
            TargetError::InvalidTargetId { target, id } => write!(
                f,
                "invalid target ID '{id}' in target '{target}'; a target ID is a processor \
                 and features, each ':name+' or ':name-' and named once"
            ),
            TargetError::UnsupportedShaderModel => f.write_str("Unsupported Shader Model version"),
        }
    }
}

impl std::error::Error for TargetError {}
