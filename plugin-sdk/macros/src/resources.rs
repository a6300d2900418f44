//! `#[resource(uri = "…")]` and `#[resource_template(uri = "…")]` functions of a plugin module:
//! their manifest entries (`resources`, `resourceTemplates`), held to the host's rules
//! (`toolhost_spec::resources::check`) at the author's line, and the dispatch of the
//! `resources.read` export to them.
//!
//! A static resource's function takes nothing; a template's takes one `String` per variable of
//! its template, named as the variable (any order). Either returns `String`, `&'static str`
//! (text), `Vec<u8>` (bytes), or a `Result` of those with a `Display` error.

use super::{Opt, doc_lines, lit_str, parse_opts, split_docs};
use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use serde_json::{Map, Value, json};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ItemFn, Meta, Pat};
use toolhost_spec::resources::{ResourceSpec, ResourceTemplateSpec, Template, check};

/// The attributes that make a function a resource.
pub(crate) const ATTRS: &[&str] = &["resource", "resource_template"];

/// The resources of one plugin module, as they are found.
#[derive(Default)]
pub(crate) struct Resources {
    statics: Vec<(ResourceSpec, proc_macro2::Span)>,
    templates: Vec<(ResourceTemplateSpec, proc_macro2::Span)>,
    arms: Vec<TokenStream2>,
}

impl Resources {
    /// Take `func`'s `#[resource]` or `#[resource_template]` attribute (at `pos`) and record it.
    pub(crate) fn add(&mut self, module: &syn::Ident, func: &mut ItemFn, pos: usize) -> syn::Result<()> {
        let attr = func.attrs.remove(pos);
        let template = attr.path().is_ident("resource_template");
        let opts = options(&attr)?;
        let uri = opts.uri.clone().ok_or_else(|| {
            syn::Error::new_spanned(&attr, "a resource needs its URI: `#[resource(uri = \"docs://guide\")]`")
        })?;
        let (description, _) = split_docs(&doc_lines(&func.attrs));
        let name = opts.name.clone().unwrap_or_else(|| func.sig.ident.to_string());
        let (ident, span) = (&func.sig.ident, func.sig.ident.span());
        let call =
            quote_spanned!(func.sig.output.span()=> ::toolhost_sdk::__private::IntoContents::into_contents);
        if !template {
            if let Some(arg) = func.sig.inputs.first() {
                return Err(syn::Error::new_spanned(
                    arg,
                    "a static resource's function takes no parameters (a URI with `{variables}` is a `#[resource_template]`)",
                ));
            }
            let spec = ResourceSpec {
                uri: uri.clone(),
                name,
                title: opts.title,
                description,
                mime_type: opts.mime_type,
                size: opts.size,
            };
            self.statics.push((spec, span));
            self.arms.push(quote! { (::std::option::Option::None, #uri) => #call(#module::#ident()), });
            return Ok(());
        }
        let parsed = Template::parse(&uri)
            .map_err(|e| syn::Error::new_spanned(&attr, format!("template {uri:?} {e}")))?;
        let vars: Vec<&str> = parsed.variables().collect();
        let mut args = Vec::new();
        for input in &func.sig.inputs {
            let FnArg::Typed(pt) = input else {
                return Err(syn::Error::new_spanned(input, "a resource function is a free function"));
            };
            let Pat::Ident(p) = &*pt.pat else {
                return Err(syn::Error::new_spanned(
                    &pt.pat,
                    "name the parameter as the template's variable",
                ));
            };
            let var = p.ident.to_string();
            if !vars.contains(&var.as_str()) {
                return Err(syn::Error::new_spanned(
                    &p.ident,
                    format!("`{var}` is no variable of {uri:?} (its variables: {})", vars.join(", ")),
                ));
            }
            args.push(quote! { ::toolhost_sdk::__private::variable(&req, #var)? });
        }
        if let Some(missing) =
            vars.iter().find(|v| {
                !func.sig.inputs.iter().any(
                    |i| matches!(i, FnArg::Typed(pt) if matches!(&*pt.pat, Pat::Ident(p) if p.ident == **v)),
                )
            })
        {
            return Err(syn::Error::new_spanned(
                &func.sig,
                format!("the template's variable `{missing}` needs a `{missing}: String` parameter"),
            ));
        }
        let spec = ResourceTemplateSpec {
            uri_template: uri.clone(),
            name,
            title: opts.title,
            description,
            mime_type: opts.mime_type,
            complete: Vec::new(),
        };
        self.templates.push((spec, span));
        self.arms
            .push(quote! { (::std::option::Option::Some(#uri), _) => #call(#module::#ident(#(#args),*)), });
        Ok(())
    }

    /// Mark the variable `var` of the template `uri_template` as completed by the plugin.
    pub(crate) fn mark_complete(&mut self, uri_template: &str, var: &str) -> Result<(), String> {
        let (t, _) = self
            .templates
            .iter_mut()
            .find(|(t, _)| t.uri_template == uri_template)
            .ok_or_else(|| format!("this plugin has no resource template {uri_template:?}"))?;
        let vars: Vec<String> = Template::parse(&t.uri_template)
            .map(|p| p.variables().map(str::to_string).collect())
            .unwrap_or_default();
        if !vars.iter().any(|v| v == var) {
            return Err(format!(
                "{uri_template:?} has no variable `{var}` (its variables: {})",
                vars.join(", ")
            ));
        }
        t.complete.push(var.to_string());
        Ok(())
    }

    /// Hold every resource to the host's rules together (duplicates, caps), the error at the
    /// function it concerns; then their manifest entries.
    pub(crate) fn manifest(&self, plugin: &mut Map<String, Value>) -> syn::Result<()> {
        let statics: Vec<ResourceSpec> = self.statics.iter().map(|(r, _)| r.clone()).collect();
        let templates: Vec<ResourceTemplateSpec> = self.templates.iter().map(|(t, _)| t.clone()).collect();
        if let Err((field, why)) = check(&statics, &templates) {
            let at = |list: &str| {
                let i: usize =
                    field.strip_prefix(list)?.strip_prefix('[')?.split(']').next()?.parse().ok()?;
                Some(i)
            };
            let span = at("resources")
                .and_then(|i| self.statics.get(i).map(|s| s.1))
                .or_else(|| at("resourceTemplates").and_then(|i| self.templates.get(i).map(|t| t.1)))
                .unwrap_or_else(proc_macro2::Span::call_site);
            return Err(syn::Error::new(span, format!("resource `{field}` {why}")));
        }
        if !statics.is_empty() {
            plugin.insert("resources".into(), json!(statics));
        }
        if !templates.is_empty() {
            plugin.insert("resourceTemplates".into(), json!(templates));
        }
        Ok(())
    }

    /// The `resources.read` export: each declared URI or template to its function.
    pub(crate) fn guest(&self) -> TokenStream2 {
        let arms = &self.arms;
        quote! {
            impl ::toolhost_sdk::__private::ResourcesGuest for __ToolhostPlugin {
                #[allow(unreachable_code, unused_variables)]
                fn read(
                    req: ::toolhost_sdk::__private::ReadRequest,
                ) -> ::std::result::Result<::toolhost_sdk::__private::Contents, ::std::string::String> {
                    match (req.template.as_deref(), req.uri.as_str()) {
                        #(#arms)*
                        _ => ::std::result::Result::Err(::std::format!("this plugin serves no resource {}", req.uri)),
                    }
                }
            }
        }
    }
}

/// A resource attribute's options.
#[derive(Default)]
struct Options {
    uri: Option<String>,
    name: Option<String>,
    title: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

fn options(attr: &Attribute) -> syn::Result<Options> {
    let mut o = Options::default();
    let Meta::List(list) = &attr.meta else { return Ok(o) };
    for opt in parse_opts(list.tokens.clone())? {
        match opt.key.to_string().as_str() {
            "uri" => o.uri = Some(lit_str(&opt)?),
            "name" => o.name = Some(lit_str(&opt)?),
            "title" => o.title = Some(lit_str(&opt)?),
            "mime_type" => o.mime_type = Some(lit_str(&opt)?),
            "size" if attr.path().is_ident("resource") => o.size = Some(size(&opt)?),
            other => {
                let known = if attr.path().is_ident("resource") {
                    "uri, name, title, mime_type, size"
                } else {
                    "uri, name, title, mime_type"
                };
                return Err(syn::Error::new_spanned(
                    &opt.key,
                    format!("unknown resource option `{other}`; expected one of: {known}"),
                ));
            }
        }
    }
    Ok(o)
}

fn size(opt: &Opt) -> syn::Result<u64> {
    match &opt.value {
        Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) => i.base10_parse(),
        _ => Err(syn::Error::new_spanned(&opt.key, "`size` is a whole number of bytes: `size = 1024`")),
    }
}
