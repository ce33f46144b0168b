//! The library's registry symbol, exported from this crate so that a 1.2 plugin crate needs no
//! registration line: `tomii_kernels_v1` lists every `#[tomii_export]` function linked into the
//! library (collected by the SDK's registry), under the name `tomii.build` passes in
//! `TOMII12_LIBRARY` at compile time (the crate's package name).

use sdk::abi::TomiiKernelRegistry;
use sdk::export::LibraryRegistry;

const LIBRARY: &str = match option_env!("TOMII12_LIBRARY") {
    Some(name) => name,
    None => "tomii-1.2-plugin",
};

/// The kernel registry of the library this crate is linked into.
#[unsafe(no_mangle)]
pub extern "C" fn tomii_kernels_v1() -> *const TomiiKernelRegistry {
    static REGISTRY: LibraryRegistry = LibraryRegistry::new(LIBRARY);
    sdk::install_quiet_hook();
    REGISTRY.get()
}

/// The registrations of the crate's hand-written bridges (`build.rs`), in this module so that they
/// are linked wherever the registry symbol is.
#[allow(unsafe_code, clippy::all)]
mod bridges {
    include!(concat!(env!("OUT_DIR"), "/bridges.rs"));
}
