//! `#[tool]` functions of a plugin module: what the macro learns about each (its options, its
//! doc comment and its parameters' types), the tool's manifest entry, and its arm of the
//! `call` dispatch.

use super::{
    Opt, TASK_SUPPORT, doc_lines, doc_span, flag, ident_problem, lit_str, lit_u64, output_schema, parse_opts,
    schema_problem, split_docs, text_problem, timeout_ms,
};
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use serde_json::{Map, Value, json};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, GenericArgument, ItemFn, Lit, Meta, Pat, PathArguments, Type};
use toolhost_spec::manifest::{MAX_ICONS, MAX_LABEL, MAX_PARAM_DESCRIPTION, MAX_TITLE, MAX_TOOL_DESCRIPTION};

/// What the macro learned about one `#[tool]` function.
pub(crate) struct Tool {
    pub(crate) name: String,
    description: String,
    params: Vec<Param>,
    rest: bool,
    danger: bool,
    read_only: bool,
    output_limit: Option<u64>,
    category: Option<String>,
    /// `output_schema = r#"{…}"#`: the JSON Schema (an object schema) of the tool's result.
    output_schema: Option<Value>,
    /// `timeout_ms = N`: the time limit the tool asks for.
    timeout_ms: Option<u64>,
    /// `task_support = "optional"`: whether the tool may run as an MCP task.
    task_support: Option<String>,
    /// `title = "…"`: a name for people.
    title: Option<String>,
    /// `idempotent`: calling it again with the same arguments changes nothing more.
    idempotent: bool,
    /// `icon = "data:image/png;base64,…"`, once per icon.
    icons: Vec<String>,
}

struct Param {
    name: String,
    description: String,
    kind: ParamKind,
    optional: bool,
    /// JSON Schema for the param: a type name or a full schema.
    schema: Value,
    span: Span,
    /// `#[default = LIT]`: the value when the argument is left off (the param is optional, its
    /// type is not an `Option`), and the literal that gives it.
    default: Option<(Value, Lit)>,
}

#[derive(PartialEq)]
enum ParamKind {
    Text,
    Json,
}

impl Tool {
    pub(crate) fn from_fn(func: &mut ItemFn, attr: &Attribute) -> syn::Result<Self> {
        let mut tool = Tool {
            name: func.sig.ident.to_string(),
            description: String::new(),
            params: Vec::new(),
            rest: false,
            danger: false,
            read_only: false,
            output_limit: None,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        };
        let mut named = false;
        if let Meta::List(list) = &attr.meta {
            for opt in parse_opts(list.tokens.clone())? {
                tool.apply_option(&opt)?;
                named |= opt.key == "name";
            }
        }
        if !named && let Some(problem) = ident_problem("tool", &tool.name) {
            return Err(syn::Error::new_spanned(&func.sig.ident, problem));
        }
        if func.sig.asyncness.is_some() {
            return Err(syn::Error::new_spanned(func.sig.asyncness, "tools are synchronous: remove `async`"));
        }
        if !func.sig.generics.params.is_empty() {
            return Err(syn::Error::new_spanned(&func.sig.generics, "a tool function cannot be generic"));
        }
        let docs = doc_lines(&func.attrs);
        let (description, param_docs) = split_docs(&docs);
        if description.is_empty() {
            return Err(syn::Error::new_spanned(
                &func.sig.ident,
                format!(
                    "tool `{}` has no description: write a doc comment; its first paragraph is the description the model reads",
                    tool.name
                ),
            ));
        }
        if let Some(problem) = text_problem(&description, MAX_TOOL_DESCRIPTION, true) {
            return Err(syn::Error::new(
                doc_span(&func.attrs, |d| text_problem(d, usize::MAX, true).is_some()),
                format!("the tool's description (the doc comment's first paragraph) {problem}"),
            ));
        }
        for (name, text) in &param_docs {
            if let Some(problem) = text_problem(text, MAX_PARAM_DESCRIPTION, true) {
                return Err(syn::Error::new(
                    doc_span(&func.attrs, |d| d.contains(&format!("`{name}`"))),
                    format!("the description of parameter `{name}` {problem}"),
                ));
            }
        }
        tool.description = description;

        for input in func.sig.inputs.iter_mut() {
            let param = Param::from_input(input, &tool.params, &param_docs)?;
            tool.params.push(param);
        }
        for (doc_name, _) in &param_docs {
            if !tool.params.iter().any(|p| &p.name == doc_name) {
                // At the doc line itself (`/// - `pth`: …`), where the mistake is.
                return Err(syn::Error::new(
                    doc_span(&func.attrs, |d| d.contains(&format!("`{doc_name}`"))),
                    format!(
                        "the doc comment describes a parameter `{doc_name}` that this function does not have"
                    ),
                ));
            }
        }
        tool.check_params(&func.sig)?;
        Ok(tool)
    }

    /// Apply one option of the `#[tool(...)]` attribute.
    fn apply_option(&mut self, opt: &Opt) -> syn::Result<()> {
        match opt.key.to_string().as_str() {
            "name" => {
                let n = lit_str(opt)?;
                if let Some(problem) = ident_problem("tool", &n) {
                    return Err(syn::Error::new_spanned(&opt.value, problem));
                }
                self.name = n;
            }
            "danger" => self.danger = flag(opt)?,
            "read_only" => self.read_only = flag(opt)?,
            "rest" => self.rest = flag(opt)?,
            "output_limit" => self.output_limit = Some(lit_u64(opt, "characters")?),
            "category" => self.category = Some(short_text(opt, "category", MAX_LABEL)?),
            "output_schema" => self.output_schema = Some(output_schema(opt)?),
            "timeout_ms" => self.timeout_ms = Some(timeout_ms(opt)?),
            "task_support" => {
                let v = lit_str(opt)?;
                if !TASK_SUPPORT.contains(&v.as_str()) {
                    return Err(syn::Error::new_spanned(
                        &opt.value,
                        format!("`task_support` must be one of {}, got {v:?}", TASK_SUPPORT.join(", ")),
                    ));
                }
                self.task_support = Some(v);
            }
            "title" => self.title = Some(short_text(opt, "title", MAX_TITLE)?),
            "idempotent" => self.idempotent = flag(opt)?,
            "icon" => {
                let src = lit_str(opt)?;
                if let Some(problem) = toolhost_spec::manifest::icon_problem(&src) {
                    return Err(syn::Error::new_spanned(&opt.value, format!("`icon` {problem}")));
                }
                if self.icons.len() == MAX_ICONS {
                    return Err(syn::Error::new_spanned(
                        &opt.key,
                        format!("a tool has at most {MAX_ICONS} icons"),
                    ));
                }
                self.icons.push(src);
            }
            other => {
                return Err(syn::Error::new_spanned(
                    &opt.key,
                    format!(
                        "unknown tool option `{other}`; expected one of: name, danger, read_only, rest, output_limit, category, output_schema, timeout_ms, task_support, title, idempotent, icon"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The parameter list as a whole: optional parameters only trail, and with `rest` the last one
    /// is a required `String`.
    fn check_params(&self, sig: &syn::Signature) -> syn::Result<()> {
        // Optional parameters may only trail: the model leaves them off the end.
        let mut seen_optional = false;
        for p in &self.params {
            if p.optional {
                seen_optional = true;
            } else if seen_optional {
                return Err(syn::Error::new(
                    p.span,
                    "a required parameter cannot follow an `Option<…>` parameter",
                ));
            }
        }
        if self.rest {
            match self.params.last() {
                None => {
                    return Err(syn::Error::new_spanned(
                        sig,
                        "`rest` needs at least one parameter: the last one takes the remaining arguments",
                    ));
                }
                Some(p) if p.kind != ParamKind::Text || p.optional => {
                    return Err(syn::Error::new(
                        p.span,
                        "with `rest`, the last parameter must be a `String`: it receives the remaining arguments joined with `,`",
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    pub(crate) fn manifest(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let mut v = json!({
                    "name": p.name,
                    "type": p.schema,
                    "description": p.description,
                    "optional": p.optional,
                });
                if let Some((default, _)) = &p.default {
                    v["default"] = default.clone();
                }
                v
            })
            .collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("description".into(), json!(self.description));
        m.insert("params".into(), Value::Array(params));
        m.insert("argCount".into(), json!(self.params.len()));
        m.insert(
            "parseJson".into(),
            json!(self.params.iter().map(|p| p.kind == ParamKind::Json).collect::<Vec<_>>()),
        );
        m.insert("rest".into(), json!(self.rest));
        if let Some(limit) = self.output_limit {
            m.insert("outputLimit".into(), json!(limit));
        }
        m.insert("danger".into(), json!(self.danger));
        m.insert("readOnly".into(), json!(self.read_only));
        if let Some(c) = &self.category {
            m.insert("category".into(), json!(c));
        }
        if let Some(schema) = &self.output_schema {
            m.insert("outputSchema".into(), schema.clone());
        }
        if let Some(t) = self.timeout_ms {
            m.insert("timeoutMs".into(), json!(t));
        }
        if let Some(t) = &self.task_support {
            m.insert("taskSupport".into(), json!(t));
        }
        if let Some(t) = &self.title {
            m.insert("title".into(), json!(t));
        }
        if self.idempotent {
            m.insert("idempotent".into(), json!(true));
        }
        if !self.icons.is_empty() {
            m.insert(
                "icons".into(),
                json!(self.icons.iter().map(|s| json!({ "src": s })).collect::<Vec<_>>()),
            );
        }
        Value::Object(m)
    }

    pub(crate) fn dispatch_arm(
        &self,
        module: &syn::Ident,
        func: &syn::Ident,
        output: &syn::ReturnType,
    ) -> TokenStream2 {
        let tool = &self.name;
        let mut lets = Vec::new();
        let mut idents = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            let var = format_ident!("__arg_{}", i);
            let pname = &p.name;
            let getter = match (&p.kind, p.optional) {
                (ParamKind::Text, false) => quote!(args.text(#i, #pname)),
                (ParamKind::Text, true) => quote!(args.opt_text(#i)),
                (ParamKind::Json, false) => quote!(args.json(#i, #pname)),
                (ParamKind::Json, true) => quote!(args.opt_json(#i, #pname)),
            };
            match &p.default {
                // The default's own tokens: a literal that does not fit the type is an error at it.
                Some((_, lit)) => {
                    let value = match p.kind {
                        ParamKind::Text => quote_spanned!(lit.span()=> ::std::string::String::from(#lit)),
                        ParamKind::Json => quote_spanned!(lit.span()=> #lit),
                    };
                    lets.push(quote_spanned!(p.span=> let #var = #getter?.unwrap_or_else(|| #value);));
                }
                None => lets.push(quote_spanned!(p.span=> let #var = #getter?;)),
            }
            idents.push(var);
        }
        // The conversion of the result is spanned at the return type: a type a tool cannot
        // return is reported at the author's `-> T` (or the function's name when there is none).
        let at = match output {
            syn::ReturnType::Type(_, ty) => ty.span(),
            syn::ReturnType::Default => func.span(),
        };
        let into = quote_spanned!(at=> ::toolhost_sdk::__private::IntoToolResult::into_tool_result);
        // The value converted is a variable spanned there too: rustc reports an unsatisfied
        // bound at the argument, so the error points at the author's return type.
        let result = syn::Ident::new("__toolhost_result", at);
        quote! {
            #tool => {
                #(#lets)*
                let #result = #module::#func(#(#idents),*);
                #into(#result)
            }
        }
    }
}

impl Param {
    /// The parameter `input` of a tool whose earlier parameters are `before`, described by the
    /// doc comment's `param_docs`; its `#[schema]` and `#[default]` attributes are taken off.
    fn from_input(input: &mut FnArg, before: &[Param], param_docs: &[(String, String)]) -> syn::Result<Self> {
        let FnArg::Typed(pat_ty) = input else {
            return Err(syn::Error::new_spanned(input, "a tool is a free function: no `self`"));
        };
        let Pat::Ident(pat_ident) = &*pat_ty.pat else {
            return Err(syn::Error::new_spanned(
                &pat_ty.pat,
                "tool parameters must be plain names (`path: String`), not patterns",
            ));
        };
        let name = pat_ident.ident.to_string().trim_start_matches("r#").to_string();
        if let Some(problem) = ident_problem("parameter", &name) {
            return Err(syn::Error::new_spanned(&pat_ident.ident, problem));
        }
        if before.iter().any(|p| p.name == name) {
            return Err(syn::Error::new_spanned(
                &pat_ident.ident,
                format!("param `{name}` is declared twice"),
            ));
        }
        // `#[schema = "…"]` on a parameter overrides the JSON Schema derived from its type;
        // `#[default = 10]` gives the value a left-off argument takes.
        let mut schema_override = None;
        let mut default = None;
        let mut kept = Vec::new();
        for a in pat_ty.attrs.drain(..) {
            if a.path().is_ident("default") {
                default = Some(default_of(&a)?);
            } else if a.path().is_ident("schema") {
                schema_override = Some(schema_of(&a)?);
            } else {
                kept.push(a);
            }
        }
        pat_ty.attrs = kept;
        let (kind, mut optional, mut schema) = classify(&pat_ty.ty)?;
        if let Some((_, lit)) = &default {
            if optional {
                return Err(syn::Error::new_spanned(
                    &pat_ty.ty,
                    format!(
                        "`{name}` has a default, so it is never missing: write its type without `Option<…>`"
                    ),
                ));
            }
            let text = kind == ParamKind::Text;
            if text != matches!(lit, Lit::Str(_)) {
                return Err(syn::Error::new_spanned(
                    lit,
                    if text {
                        format!("`{name}` is text (`String`), so its default is a string literal")
                    } else {
                        format!("`{name}` is a JSON parameter, so its default is a number or a bool")
                    },
                ));
            }
            optional = true;
        }
        if let Some(s) = schema_override {
            if kind == ParamKind::Text {
                return Err(syn::Error::new_spanned(
                    &pat_ty.ty,
                    "`#[schema]` is for JSON parameters; a `String` parameter is always plain text",
                ));
            }
            schema = s;
        }
        let description =
            param_docs.iter().find(|(n, _)| *n == name).map(|(_, d)| d.clone()).unwrap_or_default();
        Ok(Param { name, description, kind, optional, schema, span: pat_ty.ty.span(), default })
    }
}

/// `#[default = LIT]` on a parameter: the value a left-off argument takes, and the literal that
/// gives it.
fn default_of(a: &Attribute) -> syn::Result<(Value, Lit)> {
    let Meta::NameValue(nv) = &a.meta else {
        return Err(syn::Error::new_spanned(a, "write `#[default = 10]` (a literal)"));
    };
    let not_literal = |what: &dyn quote::ToTokens| {
        syn::Error::new_spanned(what, "a default is a literal: a string, a number or a bool")
    };
    let lit = match &nv.value {
        Expr::Lit(ExprLit { lit, .. }) => lit.clone(),
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => match &**expr {
            Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => {
                Lit::Int(syn::LitInt::new(&format!("-{}", i.base10_digits()), i.span()))
            }
            Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => {
                Lit::Float(syn::LitFloat::new(&format!("-{}", f.base10_digits()), f.span()))
            }
            other => return Err(not_literal(other)),
        },
        other => return Err(not_literal(other)),
    };
    let value = match &lit {
        Lit::Str(s) => json!(s.value()),
        Lit::Bool(b) => json!(b.value),
        Lit::Int(i) => json!(i.base10_parse::<i64>()?),
        Lit::Float(f) => json!(f.base10_parse::<f64>()?),
        other => return Err(not_literal(other)),
    };
    Ok((value, lit))
}

/// `#[schema = r#"{…}"#]` on a parameter: the JSON Schema that overrides the one its type gives.
fn schema_of(a: &Attribute) -> syn::Result<Value> {
    let Meta::NameValue(nv) = &a.meta else {
        return Err(syn::Error::new_spanned(a, "write `#[schema = r#\"{…}\"#]`"));
    };
    let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value else {
        return Err(syn::Error::new_spanned(&nv.value, "`schema` takes a string literal holding JSON"));
    };
    let v: Value = serde_json::from_str(&s.value())
        .map_err(|e| syn::Error::new_spanned(s, format!("`schema` is not valid JSON: {e}")))?;
    if let Some(problem) = schema_problem(&v) {
        return Err(syn::Error::new_spanned(s, format!("`schema` {problem}")));
    }
    Ok(v)
}

/// How a parameter's Rust type maps onto the manifest: text or JSON, optional, and its schema.
fn classify(ty: &Type) -> syn::Result<(ParamKind, bool, Value)> {
    if let Type::Reference(r) = ty {
        return Err(syn::Error::new_spanned(
            r,
            "tool parameters are owned values: use `String` instead of `&str` (or an owned JSON type)",
        ));
    }
    let Type::Path(tp) = ty else {
        return Err(syn::Error::new_spanned(
            ty,
            "unsupported parameter type: use `String` for text or a `serde::Deserialize` type for JSON",
        ));
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(syn::Error::new_spanned(ty, "unsupported parameter type"));
    };
    let name = last.ident.to_string();
    if name == "Option" {
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return Err(syn::Error::new_spanned(ty, "write `Option<T>`"));
        };
        let Some(GenericArgument::Type(inner)) = args.args.first() else {
            return Err(syn::Error::new_spanned(ty, "write `Option<T>`"));
        };
        if matches!(inner, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option")) {
            return Err(syn::Error::new_spanned(
                ty,
                "`Option<Option<…>>` is not a meaningful tool parameter",
            ));
        }
        let (kind, _, schema) = classify(inner)?;
        return Ok((kind, true, schema));
    }
    let schema = match name.as_str() {
        "String" => return Ok((ParamKind::Text, false, json!("string"))),
        "str" => {
            return Err(syn::Error::new_spanned(ty, "use `String` instead of `str`"));
        }
        "bool" => json!("boolean"),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            json!("integer")
        }
        "f32" | "f64" => json!("number"),
        "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => json!("array"),
        "Value" => json!({}),
        _ => json!("object"),
    };
    Ok((ParamKind::Json, false, schema))
}

/// `NAME = "…"`, a short text the model reads: not blank, and within the host's cap `max`.
fn short_text(opt: &Opt, name: &str, max: usize) -> syn::Result<String> {
    let text = lit_str(opt)?;
    if text.trim().is_empty() {
        return Err(syn::Error::new_spanned(&opt.value, format!("`{name}` must not be empty")));
    }
    if let Some(problem) = text_problem(&text, max, false) {
        return Err(syn::Error::new_spanned(&opt.value, format!("`{name}` {problem}")));
    }
    Ok(text)
}
