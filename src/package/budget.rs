//! The bytes the members of one package may inflate to, together.

use super::zipfile::error::Error;

/// The bytes the members of one archive may still inflate to, together.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Bytes left.
    pub(crate) left: u64,
    /// Where the limit came from, for messages.
    pub(crate) why: &'static str,
}

impl Budget {
    /// Takes the `size` bytes the member `member` declares, or says that
    /// they are more than is left (and takes nothing).
    pub(crate) fn charge(&mut self, member: &str, size: u64) -> Result<(), Error> {
        if size > self.left {
            return Err(Error::Damaged(self.overdrawn(member, size)));
        }
        self.left -= size;
        Ok(())
    }

    /// Why the member `member`, which inflates to `size` bytes, is more
    /// than is left.
    pub(crate) fn overdrawn(&self, member: &str, size: u64) -> String {
        format!(
            "member '{member}' inflates to {size} bytes, more than the {} left of the \
             decompression budget ({})",
            self.left, self.why
        )
    }
}
