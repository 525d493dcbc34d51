//! What the runs print, said to the caller in order.

/// What a run prints, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Said {
    /// Bytes on standard output.
    Out(Vec<u8>),
    /// Text on standard error, as it is (newlines included).
    Err(String),
}

impl Said {
    /// A line on standard error (its newline added).
    pub(crate) fn err(line: impl Into<String>) -> Said {
        let mut text = line.into();
        text.push('\n');
        Said::Err(text)
    }
}

/// Where a run's [`Said`]s go.
pub(crate) type Say<'a> = dyn FnMut(Said) + 'a;
