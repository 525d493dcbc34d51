//! Bundles a host file and device files into a clang offload bundle, as
//! `clang-offload-bundler -type=bc` does, then takes the bundle apart again.
//!
//! ```sh
//! cargo run --example bundle_unbundle -- out.bundle \
//!     host-x86_64-unknown-linux-gnu=host.bc hip-amdgcn-amd-amdhsa--gfx90a=dev.o
//! ```

use offload_kit::bundle::{self, BundleId, Format};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: bundle_unbundle OUT TARGET=FILE...")?;
    let mut entries = Vec::new();
    let mut files = Vec::new();
    for arg in args {
        let (target, file) = arg.split_once('=').ok_or("expected TARGET=FILE")?;
        // LLVM normalizes the IDs it writes (triple, target ID).
        let id = BundleId::parse(target).map_err(|e| format!("'{target}': {e}"))?;
        let data = std::fs::read(file)?;
        entries.push((id.normalized(), data.len() as u64));
        files.push(data);
    }
    let sources: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let mut fat = Vec::new();
    bundle::layout(Format::Binary, &entries, 1)?.write_to(&mut fat, &sources)?;
    std::fs::write(&out, &fat)?;
    println!("{out}: {} bytes", fat.len());

    // The entries in the order clang-offload-bundler -list prints them.
    for e in bundle::entries(&fat, Format::Binary)? {
        println!(
            "  {} ({} bytes)",
            String::from_utf8_lossy(e.id),
            e.data.len()
        );
    }
    Ok(())
}
