//! The OffloadBinaries of the commands that read them: the command's one
//! [`Budget`], from `--max-uncompressed` or the drop-ins' environment
//! variable, and the hint that names it when it runs out. The images are
//! copied out by the library's [`Streams`].

use super::scan::BadValue;
use crate::Limits;
use crate::offload_binary::Budget;
pub(crate) use crate::tools::streams::{Streams, data_error};

/// The environment variable that sets `--max-uncompressed` for the
/// drop-in tools, which have no such option (same syntax).
pub const MAX_UNCOMPRESSED_ENV: &str = "OFFLOAD_KIT_MAX_UNCOMPRESSED";

/// The `--max-uncompressed` help of the commands that read
/// OffloadBinaries.
pub const MAX_UNCOMPRESSED_HELP: &str = "Most bytes all the compressed OffloadBinaries read \
    (nested ones included) may inflate to, in all (suffixes K, M, G). Default: 1024 times \
    the input's size, at least 128M and at most 16G";

/// A command's budget: `--max-uncompressed` when given, else the limits
/// derived from the inputs' size (which the caller adds as it opens them).
pub fn budget(max_uncompressed: Option<u64>) -> Budget {
    Budget::new(Limits {
        max_uncompressed,
        ..Limits::default()
    })
}

/// The budget of a drop-in tool: [`MAX_UNCOMPRESSED_ENV`] when set, else
/// derived. `Err` for a value that is not a size.
pub fn dropin_budget() -> Result<Budget, BadValue> {
    let given = match std::env::var(MAX_UNCOMPRESSED_ENV) {
        Ok(v) => Some(
            super::scan::parse_size(&v)
                .map_err(|e| BadValue::Variable(MAX_UNCOMPRESSED_ENV, Box::new(e)))?,
        ),
        Err(std::env::VarError::NotPresent) => None,
        Err(e) => return Err(BadValue::Unreadable(MAX_UNCOMPRESSED_ENV, e)),
    };
    Ok(budget(given))
}

/// The hint that follows an error for going past a limit of `budget`: the
/// option, or the environment variable, that raises it.
pub fn raise_hint(e: &crate::Error, how: &str) -> Option<String> {
    use crate::ErrorKind;
    use crate::offload_binary::Spent;
    match e.kind() {
        ErrorKind::BudgetExceeded {
            what: Spent::Inflated,
            ..
        } => Some(format!("{how} raises the limit")),
        _ => None,
    }
}
