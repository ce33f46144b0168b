//! The `abi_stable` root module that Rust scheduler plugins carry beside their C entry symbol.
//!
//! It holds nothing but the same vtable; its purpose is the layout description that `abi_stable`
//! embeds, which the loader compares field by field with the layout it was compiled against. C
//! schedulers do not have it and are checked at the C level only (version, size, NULL callbacks).

use abi_stable::{
    StableAbi, declare_root_module_statics, library::RootModule, package_version_strings, sabi_types::VersionStrings,
};

use crate::abi::TomiiSchedulerVtable;

/// The root module of a Rust scheduler plugin.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = SchedulerModuleRef)))]
#[sabi(missing_field(panic))]
pub struct SchedulerModule {
    /// The same table `tomii_scheduler_v1()` returns.
    #[sabi(last_prefix_field)]
    pub vtable: &'static TomiiSchedulerVtable,
}

impl RootModule for SchedulerModuleRef {
    declare_root_module_statics! {SchedulerModuleRef}
    const BASE_NAME: &'static str = "tomii_scheduler";
    const NAME: &'static str = "tomii_scheduler";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// The exported name of the `abi_stable` library header. `export_scheduler!` hard-codes it because
/// an attribute cannot take a constant; a test checks that the two agree.
#[doc(hidden)]
pub const LIB_HEADER_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";
