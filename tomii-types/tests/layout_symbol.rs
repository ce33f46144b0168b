//! `export_scheduler!` hard-codes the exported name of the `abi_stable` library header (an attribute
//! cannot take a constant); this test keeps that copy equal to the name `abi_stable` looks up.

use tomii_types::__private::abi_stable::library::ROOT_MODULE_LOADER_NAME;

#[test]
fn lib_header_symbol_is_the_one_abi_stable_loads() {
    assert_eq!(
        tomii_types::stable::LIB_HEADER_SYMBOL,
        ROOT_MODULE_LOADER_NAME,
        "update LIB_HEADER_SYMBOL in tomii-types/src/stable.rs and the export_name in export_scheduler!"
    );
}
