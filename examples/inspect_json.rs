//! Prints what `offload-kit inspect --json FILE` prints for a readable
//! file, from the library alone: the scan report serializes (serde) as the
//! CLI's JSON.
//!
//! ```sh
//! cargo run --example inspect_json -- libapp.so
//! ```

use std::io::Write;

use offload_kit::scan::{self, JsonDocument, JsonFile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: inspect_json FILE")?;
    let data = std::fs::read(&path)?;
    let report = scan::scan(&data, &scan::Options::default());
    let files = [JsonFile {
        path: &path,
        size: data.len() as u64,
        result: Ok(&report),
        kernels: None,
    }];
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &JsonDocument { files: &files })?;
    writeln!(out)?;
    Ok(())
}
