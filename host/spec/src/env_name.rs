//! The one rule for an environment variable's name, wherever one is written: a manifest's `env`
//! request, the operator's `env` grants and `settings`, an `exec` grant's `env`/`set_env`,
//! `--allow-env`, `[model] api_key_env`. Non-empty, no `=` (the separator of `NAME=value`), no
//! NUL (the end of a C string).

/// `Err` with why `name` cannot name an environment variable.
pub fn check(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("is empty")
    } else if name.contains('=') {
        Err("contains `=`")
    } else if name.contains('\0') {
        Err("contains a NUL character")
    } else {
        Ok(())
    }
}

/// Whether `name` can name an environment variable ([`check`]).
pub fn is_valid(name: &str) -> bool {
    check(name).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert!(super::is_valid("GITHUB_TOKEN") && super::is_valid("lower.case-ok"));
        assert_eq!(super::check(""), Err("is empty"));
        assert_eq!(super::check("A=B"), Err("contains `=`"));
        assert_eq!(super::check("A\0"), Err("contains a NUL character"));
    }
}
