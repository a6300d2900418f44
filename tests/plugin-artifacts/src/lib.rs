//! Paths of the example and test plugins, built from source by this crate's build script.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// The plugins shipped in the demo folder (the `hostile` test plugin is not among them).
pub const SHIPPED: &[&str] = &[FILES, TEXT, WEB];
