//! A plugin crate's `skills/` folder (issue #58), embedded by the macro as the `toolhost-skills`
//! custom section beside the manifest, so a Rust plugin carries its skills with no build step
//! of its own.
//!
//! The folder is read and checked with the host's own rules (`toolhost_spec::skills`), so a
//! skill the macro accepts is a skill the host serves; a rule broken is a compile error at the
//! `#[toolhost_sdk::plugin]` attribute naming the file. Each file is also named in an
//! `include_bytes!`, which is how cargo learns to rebuild when one is edited. A proc macro
//! cannot declare a folder as an input, so a file *added* to `skills/` goes unseen by a plain
//! `cargo build` until the crate compiles again; `toolhost build` and `toolhost dev` set
//! [`STAMP_ENV`] to an id of the folder's file list, which the expansion reads with
//! `option_env!`, and cargo rebuilds a crate when a variable it read changes.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use std::path::{Path, PathBuf};
use toolhost_spec::skills;

/// The folder of a plugin crate that holds its skills, next to its `Cargo.toml`.
const DIR: &str = "skills";

/// The id of `skills/`'s file list that `toolhost build` passes (the CLI's
/// `project::skills::STAMP_ENV`, the same name).
const STAMP_ENV: &str = "TOOLHOST_SKILLS_STAMP";

/// The skills section of the crate being compiled (nothing when it has no `skills/` folder),
/// and, always, the read of [`STAMP_ENV`] that lets a folder created later be seen.
pub(crate) fn expand() -> syn::Result<TokenStream2> {
    let section = match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(crate_dir) => expand_dir(&PathBuf::from(crate_dir).join(DIR))?,
        None => TokenStream2::new(),
    };
    Ok(quote! {
        #section
        // Never used: cargo rebuilds the crate when the skills folder's file list changes.
        #[doc(hidden)]
        const _: ::core::option::Option<&str> = ::core::option_env!(#STAMP_ENV);
    })
}

/// The `toolhost-skills` static for the skills in `dir`, with an `include_bytes!` per file;
/// nothing when `dir` does not exist.
pub(crate) fn expand_dir(dir: &Path) -> syn::Result<TokenStream2> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(TokenStream2::new());
    }
    let error = |e: skills::SkillsError| {
        syn::Error::new(Span::call_site(), format!("the skills in {}: {e}", dir.display()))
    };
    let section = skills::collect_dir(dir).map_err(error)?;
    // The front matter is the host's to read at load; reading it here too turns a bad one into
    // a compile error instead of a plugin the host refuses.
    skills::skills(&section).map_err(error)?;
    let bytes = skills::encode(&section);
    let len = bytes.len();
    let lit = syn::LitByteStr::new(&bytes, Span::call_site());
    let name = skills::SECTION;
    let inputs: Vec<String> = section.files.iter().map(|f| dir.join(&f.path).display().to_string()).collect();
    Ok(quote! {
        #[doc(hidden)]
        const _: () = {
            // The skills travel inside the .wasm as a custom section of their own, read by the
            // host without compiling or running the plugin.
            #[unsafe(link_section = #name)]
            #[used]
            static __TOOLHOST_SKILLS: [u8; #len] = *#lit;

            // Never used: it makes cargo rebuild the crate when a skill's file is edited.
            #( const _: &[u8] = include_bytes!(#inputs); )*
        };
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const SKILL: &str = "---\nname: tidy\ndescription: Keep the workspace tidy.\n---\n\n# Tidy\n";

    #[test]
    fn no_folder_no_section() {
        let dir = tempfile::tempdir().unwrap();
        assert!(expand_dir(&dir.path().join("skills")).unwrap().is_empty());
    }

    #[test]
    fn the_section_holds_the_encoded_files_and_each_file_is_tracked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("skills");
        write(&root, "tidy/SKILL.md", SKILL);
        write(&root, "tidy/references/rules.md", "one rule\n");
        let section = skills::collect_dir(&root).unwrap();
        let tokens = expand_dir(&root).unwrap().to_string();
        assert!(tokens.contains("link_section = \"toolhost-skills\""), "{tokens}");
        let lit = syn::LitByteStr::new(&skills::encode(&section), Span::call_site());
        assert!(tokens.contains(&quote!(#lit).to_string()), "the static is not encode()'s bytes: {tokens}");
        for rel in ["tidy/SKILL.md", "tidy/references/rules.md"] {
            let path = root.join(rel).display().to_string();
            assert!(tokens.contains(&format!("include_bytes ! ({path:?})")), "{rel} untracked: {tokens}");
        }
    }

    #[test]
    fn a_broken_rule_is_an_error_naming_the_file() {
        for (rel, text, file) in [
            ("Tidy/SKILL.md", SKILL, "Tidy"),
            ("tidy/notes.md", "no SKILL.md beside me", "tidy"),
            ("tidy/SKILL.md", "---\nname: other\ndescription: d\n---\n", "tidy/SKILL.md"),
            ("tidy/SKILL.md", "no front matter\n", "tidy/SKILL.md"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("skills");
            write(&root, rel, text);
            let e = expand_dir(&root).expect_err(rel).to_string();
            assert!(e.starts_with(&format!("the skills in {}: ", root.display())), "{rel}: {e}");
            assert!(e.contains(file), "{rel}: the error does not name `{file}`: {e}");
        }
    }
}
