//! `#[prompt]` and `#[complete(...)]` functions of a plugin module: the manifest's `prompts`
//! (and the `complete` marks on prompt arguments and template variables), held to the host's
//! rules (`toolhost_spec::prompts::check`) at the author's line, and the dispatch of the
//! `prompts.get` and `completion.complete` exports to them.
//!
//! A prompt's function takes its arguments as `String` (required) or `Option<String>`
//! (optional), described by the doc comment's ``- `name`: text`` lines, and returns `String`
//! (one user message), `Vec<toolhost_sdk::prompt::Message>`, or a `Result` of those. A
//! completion's function takes `value: String` and, if it wants them, `context: Vec<(String,
//! String)>` (the other arguments given), and returns `Vec<String>` or a `Result` of it.

use super::{doc_lines, lit_str, parse_opts, split_docs};
use crate::resources::Resources;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use serde_json::{Map, Value, json};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ItemFn, Meta, Pat, Type};
use toolhost_spec::prompts::{PromptArgument, PromptSpec, check};

/// The attributes that make a function a prompt or a completion.
pub(crate) const ATTRS: &[&str] = &["prompt", "complete"];

/// What a `#[complete]` completes.
enum Of {
    Prompt(String),
    Template(String),
}

/// The prompts and completions of one plugin module, as they are found.
#[derive(Default)]
pub(crate) struct Prompts {
    prompts: Vec<(PromptSpec, Span)>,
    arms: Vec<TokenStream2>,
    completes: Vec<(Of, String, Span)>,
    complete_arms: Vec<TokenStream2>,
}

impl Prompts {
    /// Take `func`'s `#[prompt]` or `#[complete]` attribute (at `pos`) and record it.
    pub(crate) fn add(&mut self, module: &syn::Ident, func: &mut ItemFn, pos: usize) -> syn::Result<()> {
        let attr = func.attrs.remove(pos);
        if attr.path().is_ident("complete") {
            return self.add_complete(module, func, &attr);
        }
        let mut name = func.sig.ident.to_string();
        let mut title = None;
        if let Meta::List(list) = &attr.meta {
            for opt in parse_opts(list.tokens.clone())? {
                match opt.key.to_string().as_str() {
                    "name" => name = lit_str(&opt)?,
                    "title" => title = Some(lit_str(&opt)?),
                    other => {
                        let why = format!("unknown prompt option `{other}`; expected one of: name, title");
                        return Err(syn::Error::new_spanned(&opt.key, why));
                    }
                }
            }
        }
        let (description, docs) = split_docs(&doc_lines(&func.attrs));
        let (mut arguments, mut args) = (Vec::new(), Vec::new());
        for input in &func.sig.inputs {
            let (ident, optional) = argument(input)?;
            let arg = ident.to_string();
            let doc = docs.iter().find(|(n, _)| *n == arg).map(|(_, d)| d.clone()).unwrap_or_default();
            args.push(match optional {
                true => quote! { ::toolhost_sdk::__private::prompt_argument(&req, #arg) },
                false => quote! { ::toolhost_sdk::__private::prompt_argument(&req, #arg).ok_or_else(|| ::std::format!("prompt `{}` needs its argument `{}`", req.name, #arg))? },
            });
            arguments.push(PromptArgument {
                name: arg,
                description: doc,
                required: !optional,
                complete: false,
            });
        }
        if let Some((n, _)) = docs.iter().find(|(n, _)| !arguments.iter().any(|a| a.name == *n)) {
            let why = format!("the doc comment describes an argument `{n}` that this prompt does not have");
            return Err(syn::Error::new(super::doc_span(&func.attrs, |t| t.contains(n.as_str())), why));
        }
        let ident = &func.sig.ident;
        let into =
            quote_spanned!(func.sig.output.span()=> ::toolhost_sdk::__private::IntoPrompt::into_prompt);
        self.arms.push(quote! { #name => #into(#module::#ident(#(#args),*)), });
        self.prompts.push((PromptSpec { name, title, description, arguments }, func.sig.ident.span()));
        Ok(())
    }

    fn add_complete(&mut self, module: &syn::Ident, func: &ItemFn, attr: &Attribute) -> syn::Result<()> {
        let (mut of, mut argument) = (None, None);
        if let Meta::List(list) = &attr.meta {
            for opt in parse_opts(list.tokens.clone())? {
                match opt.key.to_string().as_str() {
                    "prompt" => of = Some(Of::Prompt(lit_str(&opt)?)),
                    "template" => of = Some(Of::Template(lit_str(&opt)?)),
                    "argument" => argument = Some(lit_str(&opt)?),
                    other => {
                        let why = format!(
                            "unknown completion option `{other}`; expected: prompt or template, and argument"
                        );
                        return Err(syn::Error::new_spanned(&opt.key, why));
                    }
                }
            }
        }
        let (Some(of), Some(argument)) = (of, argument) else {
            let why = "a completion names what it completes: `#[complete(prompt = \"NAME\", argument = \"ARG\")]` or `#[complete(template = \"file:///{+path}\", argument = \"path\")]`";
            return Err(syn::Error::new_spanned(attr, why));
        };
        let names: Vec<String> = func
            .sig
            .inputs
            .iter()
            .map(|i| match i {
                FnArg::Typed(pt) => match &*pt.pat {
                    Pat::Ident(p) => p.ident.to_string(),
                    _ => String::new(),
                },
                FnArg::Receiver(_) => String::new(),
            })
            .collect();
        let args = match names.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["value"] => quote! { req.value.clone() },
            ["value", "context"] => quote! { req.value.clone(), req.context.clone() },
            _ => {
                let why = "a completion's function takes `value: String`, and `context: Vec<(String, String)>` if it wants the other arguments";
                return Err(syn::Error::new_spanned(&func.sig.inputs, why));
            }
        };
        let ident = &func.sig.ident;
        let into =
            quote_spanned!(func.sig.output.span()=> ::toolhost_sdk::__private::IntoValues::into_values);
        let (target, name) = match &of {
            Of::Prompt(p) => (quote! { ::toolhost_sdk::__private::CompletionTarget::Prompt(t) }, p),
            Of::Template(t) => {
                (quote! { ::toolhost_sdk::__private::CompletionTarget::ResourceTemplate(t) }, t)
            }
        };
        self.complete_arms
            .push(quote! { (#target, #argument) if t == #name => #into(#module::#ident(#args)), });
        if self.completes.iter().any(|(o, a, _)| same(o, &of) && *a == argument) {
            let why = format!("`{argument}` is completed twice");
            return Err(syn::Error::new_spanned(attr, why));
        }
        self.completes.push((of, argument, func.sig.ident.span()));
        Ok(())
    }

    /// Mark what is completed, hold the prompts to the host's rules, and write them.
    pub(crate) fn manifest(
        &mut self,
        plugin: &mut Map<String, Value>,
        resources: &mut Resources,
    ) -> syn::Result<()> {
        for (of, argument, span) in &self.completes {
            let found = match of {
                Of::Prompt(p) => self
                    .prompts
                    .iter_mut()
                    .find(|(s, _)| s.name == *p)
                    .ok_or_else(|| format!("this plugin has no prompt `{p}` (a prompt is named by `#[prompt(name = …)]`, or by its function's name)"))
                    .and_then(|(s, _)| mark_complete(s, argument)),
                Of::Template(t) => resources.mark_complete(t, argument),
            };
            found.map_err(|why| syn::Error::new(*span, why))?;
        }
        let prompts: Vec<PromptSpec> = self.prompts.iter().map(|(p, _)| p.clone()).collect();
        if let Err((field, why)) = check(&prompts) {
            let i: Option<usize> =
                field.strip_prefix("prompts[").and_then(|r| r.split(']').next()?.parse().ok());
            let span = i.and_then(|i| self.prompts.get(i)).map_or_else(Span::call_site, |p| p.1);
            return Err(syn::Error::new(span, format!("prompt `{field}` {why}")));
        }
        if !prompts.is_empty() {
            plugin.insert("prompts".into(), json!(prompts));
        }
        Ok(())
    }

    /// The `prompts.get` and `completion.complete` exports.
    pub(crate) fn guest(&self) -> TokenStream2 {
        let (arms, complete_arms) = (&self.arms, &self.complete_arms);
        quote! {
            impl ::toolhost_sdk::__private::PromptsGuest for __ToolhostPlugin {
                #[allow(unreachable_code, unused_variables)]
                fn get(
                    req: ::toolhost_sdk::__private::GetRequest,
                ) -> ::std::result::Result<::toolhost_sdk::__private::Prompt, ::std::string::String> {
                    match req.name.as_str() {
                        #(#arms)*
                        other => ::std::result::Result::Err(::std::format!("this plugin has no prompt {}", other)),
                    }
                }
            }

            impl ::toolhost_sdk::__private::CompletionGuest for __ToolhostPlugin {
                #[allow(unreachable_code, unused_variables)]
                fn complete(
                    req: ::toolhost_sdk::__private::CompleteRequest,
                ) -> ::std::result::Result<::std::vec::Vec<::std::string::String>, ::std::string::String> {
                    match (&req.target, req.argument.as_str()) {
                        #(#complete_arms)*
                        _ => ::std::result::Result::Err(::std::format!("this plugin completes nothing for {}", req.argument)),
                    }
                }
            }
        }
    }
}

/// Mark the argument `argument` of `prompt` as completed by the plugin; if it has none such,
/// say which it has (the author likely misspelt one of them).
fn mark_complete(prompt: &mut PromptSpec, argument: &str) -> Result<(), String> {
    if let Some(a) = prompt.arguments.iter_mut().find(|a| a.name == argument) {
        a.complete = true;
        return Ok(());
    }
    let names: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    Err(format!("prompt `{}` has no argument `{argument}` (its arguments: {names})", prompt.name))
}

fn same(a: &Of, b: &Of) -> bool {
    match (a, b) {
        (Of::Prompt(x), Of::Prompt(y)) | (Of::Template(x), Of::Template(y)) => x == y,
        _ => false,
    }
}

/// A prompt function's parameter: its name, and whether it is optional (`Option<String>`).
fn argument(input: &FnArg) -> syn::Result<(&syn::Ident, bool)> {
    let FnArg::Typed(pt) = input else {
        return Err(syn::Error::new_spanned(input, "a prompt is a free function"));
    };
    let Pat::Ident(p) = &*pt.pat else {
        return Err(syn::Error::new_spanned(&pt.pat, "name the parameter: it is the prompt's argument"));
    };
    let text = |t: &Type| matches!(t, Type::Path(tp) if tp.path.is_ident("String"));
    let optional = match &*pt.ty {
        t if text(t) => false,
        Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "Option") => {
            let inner = match &tp.path.segments.last().map(|s| &s.arguments) {
                Some(syn::PathArguments::AngleBracketed(a)) => a.args.first(),
                _ => None,
            };
            if !matches!(inner, Some(syn::GenericArgument::Type(t)) if text(t)) {
                return Err(syn::Error::new_spanned(
                    &pt.ty,
                    "a prompt's argument is `String` or `Option<String>`",
                ));
            }
            true
        }
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "a prompt's argument is `String` or `Option<String>` (text a person types)",
            ));
        }
    };
    Ok((&p.ident, optional))
}
