//! The Content-Security-Policy the host applies to an app's page: built from its declared
//! origins, never looser than the extension asks.

use super::{AppCsp, check_domain};

/// The policy for a page whose `csp` is `csp`:
///
/// ```text
/// default-src 'none'; script-src 'self' 'unsafe-inline' R; style-src 'self' 'unsafe-inline' R;
/// img-src 'self' data: R; font-src 'self' R; media-src 'self' data: R; connect-src C;
/// frame-src F; base-uri B; object-src 'none'; form-action 'none'
/// ```
///
/// R is `resource_domains`, C `connect_domains` (`'none'` when empty), F `frame_domains`
/// (`'none'` when empty), B `base_uri_domains` (`'self'` when empty), each joined by spaces.
///
/// The stable extension (2026-01-26) gives two policies that disagree on `connect-src`: its
/// default (no `csp` declared) has `connect-src 'none'`, its construction from declared origins
/// `connect-src 'self' C`. This one never adds `'self'` there: the page's own origin is the
/// host's sandbox, which the app did not declare ("no loosening"), so with nothing declared it
/// is the default. It adds `object-src 'none'` (the sandbox rules ask for it; the draft adds it
/// to the default) and `form-action 'none'` (a page talks to its tools through the host, not
/// by posting forms), both stricter than the extension's, which it allows.
///
/// Every entry goes through [`check_domain`] again, so an `AppCsp` built by hand rather than
/// read from a checked section still cannot add a source or a directive: an entry that is not
/// an origin is left out (the policy only gets stricter), repeats are written once.
pub fn content_security_policy(csp: &AppCsp) -> String {
    let resources = origins(&csp.resource_domains);
    let with_resources = |base: &str| match resources.as_str() {
        "" => base.to_string(),
        r => format!("{base} {r}"),
    };
    let or = |list: String, otherwise: &str| if list.is_empty() { otherwise.to_string() } else { list };
    [
        "default-src 'none'".to_string(),
        format!("script-src {}", with_resources("'self' 'unsafe-inline'")),
        format!("style-src {}", with_resources("'self' 'unsafe-inline'")),
        format!("img-src {}", with_resources("'self' data:")),
        format!("font-src {}", with_resources("'self'")),
        format!("media-src {}", with_resources("'self' data:")),
        format!("connect-src {}", or(origins(&csp.connect_domains), "'none'")),
        format!("frame-src {}", or(origins(&csp.frame_domains), "'none'")),
        format!("base-uri {}", or(origins(&csp.base_uri_domains), "'self'")),
        "object-src 'none'".to_string(),
        "form-action 'none'".to_string(),
    ]
    .join("; ")
}

/// The origins of a list in their normal form, each once, joined by spaces; entries that are
/// not origins left out.
fn origins(list: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    for entry in list {
        if let Ok(origin) = check_domain(entry)
            && !out.contains(&origin)
        {
            out.push(origin);
        }
    }
    out.join(" ")
}
