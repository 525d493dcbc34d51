//! Writes the host object that registers OpenMP device images with
//! libomptarget at program start, as `llvm-offload-wrapper` + `llc` do.
//!
//! ```sh
//! cargo run --example wrap_openmp -- wrap.o device.ob
//! cc main.o wrap.o -fopenmp ...
//! ```

use offload_kit::wrap::{self, Abi, Image, Kind, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args.next().ok_or("usage: wrap_openmp OUT INPUT...")?;
    let inputs: Vec<Vec<u8>> = args.map(std::fs::read).collect::<Result<_, _>>()?;
    if inputs.is_empty() {
        return Err("no input".into());
    }
    // An OffloadBinary hands the runtime its first image; anything else is
    // the image itself.
    let images: Vec<Image<'_>> = inputs
        .iter()
        .map(|i| Image::new(i))
        .collect::<Result<_, _>>()?;
    let opts = Options {
        kind: Kind::OpenMp,
        abi: Abi::Llvm,
        triple: "x86_64-unknown-linux-gnu".into(),
        llc_layout: true,
        relocatable: false,
    };
    // Small inputs: in memory. Large ones would go through wrap::layout and
    // be copied file to file.
    std::fs::write(&out, wrap::to_vec(&opts, &images)?)?;
    println!("{out}: registers {} image(s)", images.len());
    Ok(())
}
