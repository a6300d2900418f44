//! The one host-side `bindgen!` of `wit/`: the types and traits of the `toolhost:plugin` world.
//! Every capability implements its interface's `Host` trait on its own state type and imports
//! the generated types from here; this module imports nothing of the crate (as wasmtime-wasi
//! keeps its bindings).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "plugin",
    imports: {
        "toolhost:plugin/http.send": async,
        // Trappable: reaching the call's deadline while a program runs ends the call.
        "toolhost:plugin/process.run": async | trappable,
    },
    exports: { default: async },
});

pub use self::toolhost::plugin::{host, http, process};
