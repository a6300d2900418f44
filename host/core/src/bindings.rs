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

/// `wasi:keyvalue` 0.2.0-draft2 (`wit/deps/keyvalue`, vendored unchanged), which world
/// `plugin-full` imports: the key-value capability implements its `Host` traits. Async, so a
/// store on the network (Redis) is awaited like the `http` import — except opening a bucket
/// and dropping its handle, which never reach a store and are cheaper called directly.
pub mod keyvalue {
    wasmtime::component::bindgen!({
        path: "../../wit/deps/keyvalue",
        world: "imports",
        imports: {
            "wasi:keyvalue/store.open": trappable,
            "wasi:keyvalue/store.[drop]bucket": trappable,
            default: async,
        },
    });
}

pub use self::keyvalue::wasi::keyvalue::{atomics, batch, store};

/// The exports a plugin may have beyond `tools` (world `plugin-full`), each looked up in a
/// component once, when it links (`engine::Linked`): a component of world `plugin` has none
/// of them. The imports are
/// the ones above.
pub mod full {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "plugin-full",
        with: {
            "toolhost:plugin/host": super::host,
            "toolhost:plugin/http": super::http,
            "toolhost:plugin/process": super::process,
            "wasi:keyvalue/store": super::store,
            "wasi:keyvalue/atomics": super::atomics,
            "wasi:keyvalue/batch": super::batch,
        },
        exports: { default: async },
    });
}

/// A plugin's exports beyond `tools`: `resources` (a read), `prompts` (a prompt got),
/// `completion` (an argument completed), each with its request, answer and lookup.
pub use self::full::exports::toolhost::plugin::{completion, prompts, resources};
