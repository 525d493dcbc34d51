//! Tests that need the built binary or external tools (the LLVM 22 tools,
//! compilers, linkers). One harness (libtest-mimic): trials whose tools are
//! missing are ignored, unless `OFFLOAD_KIT_REQUIRE_TOOLS=1` (CI) makes them
//! fail.

#![allow(
    clippy::cast_possible_truncation,
    reason = "tests truncate on purpose when they make filler bytes and offsets"
)]

mod archive;
mod bare;
mod bitcode;
mod bundle_ids;
mod bundle_native;
mod bundler;
mod ccob;
mod cuda_variants;
mod damaged;
mod diff;
mod extract_compressed;
mod fan_out;
mod fatbin_compressed;
mod hostile;
mod hostile_ob;
mod kernels;
mod linker_wrapper;
mod packager;
mod packages;
mod prune;
mod real_libs;
mod scan;
mod scan_ci;
mod scan_rules;
mod silent_zeros;
mod sycl;
mod util;
mod windows_hostile;
mod windows_libs;
mod windows_objects;
mod wrap;
mod wrapper_parity;
mod wrapper_select;

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = Vec::new();
    trials.extend(packager::tests());
    trials.extend(real_libs::tests());
    trials.extend(windows_libs::tests());
    trials.extend(windows_hostile::tests());
    trials.extend(windows_objects::tests());
    trials.extend(prune::tests());
    trials.extend(archive::tests());
    trials.extend(bitcode::tests());
    trials.extend(bundler::tests());
    trials.extend(bundle_native::tests());
    trials.extend(bundle_ids::tests());
    trials.extend(ccob::tests());
    trials.extend(fatbin_compressed::tests());
    trials.extend(cuda_variants::tests());
    trials.extend(damaged::tests());
    trials.extend(extract_compressed::tests());
    trials.extend(fan_out::tests());
    trials.extend(wrap::tests());
    trials.extend(scan::tests());
    trials.extend(scan_ci::tests());
    trials.extend(scan_rules::tests());
    trials.extend(sycl::tests());
    trials.extend(silent_zeros::tests());
    trials.extend(packages::tests());
    trials.extend(hostile::tests());
    trials.extend(hostile_ob::tests());
    trials.extend(linker_wrapper::tests());
    trials.extend(wrapper_select::tests());
    trials.extend(wrapper_parity::tests());
    trials.extend(kernels::tests());
    trials.extend(diff::tests());
    trials.extend(bare::tests());
    libtest_mimic::run(&args, trials).exit();
}
