//! Cross-module tests over the committed fixtures.

mod golden;
mod naive;
