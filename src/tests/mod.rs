//! Cross-module tests over the committed fixtures.

mod golden;
