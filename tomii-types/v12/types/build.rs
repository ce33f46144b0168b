//! Brings in the registrations of a 1.2 crate's hand-written `#[no_mangle]` bridges, which
//! `tomii.build` finds by scanning the crate's sources and writes to the file named by
//! `TOMII12_BRIDGES`; without it the crate has none.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=TOMII12_BRIDGES");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("bridges.rs");
    let text = match std::env::var_os("TOMII12_BRIDGES") {
        Some(path) => {
            println!("cargo:rerun-if-changed={}", PathBuf::from(&path).display());
            std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", PathBuf::from(&path).display()))
        }
        None => String::new(),
    };
    std::fs::write(&out, text).unwrap_or_else(|error| panic!("{}: {error}", out.display()));
}
