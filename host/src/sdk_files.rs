//! The Python and JavaScript SDKs and their `toolhost new` templates, carried inside the
//! binary so `toolhost build` and `toolhost new` work from an installed `toolhost` alone.
//! Each list mirrors the SDK's `FILES` (a test holds them equal).

/// `plugin-sdk/python/`: the package `toolhost_sdk`.
pub const PYTHON: [(&str, &str); 0] = [];
/// `plugin-sdk/python/template/`.
pub const PYTHON_TEMPLATE: &[(&str, &str)] = &[];
/// `plugin-sdk/js/`: the package `toolhost-sdk`.
pub const JS: [(&str, &str); 0] = [];
/// `plugin-sdk/js/template/`.
pub const JS_TEMPLATE: &[(&str, &str)] = &[];
