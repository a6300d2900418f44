//! The environment capability's settings: `[plugin.X] env` (variables granted by name, read
//! from the host's environment) and `settings` (variables with a value of the config's). A
//! leaf: it imports nothing of the crate.

use std::collections::BTreeMap;

/// What the operator grants a plugin of the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvConfig {
    /// Variables granted by name (`env = ["LANG"]`, `--allow-env`): their host values.
    pub vars: Vec<String>,
    /// Variables given by value in the config (`settings = { NAME = "value" }`): these win.
    pub values: BTreeMap<String, String>,
}

impl EnvConfig {
    /// Add what `all` (`[plugin."*"]`) grants; a plugin's own value for a variable wins.
    pub fn merge(&mut self, all: &EnvConfig) {
        for v in &all.vars {
            if !self.vars.contains(v) {
                self.vars.push(v.clone());
            }
        }
        for (k, v) in &all.values {
            self.values.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}
