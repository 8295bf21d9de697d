//! The protected-resource metadata (RFC 9728) an OAuth client reads to
//! learn which authorization servers issue tokens for this server, and the
//! `WWW-Authenticate` challenges (RFC 6750) that point it there.

use serde_json::{json, Value};

use super::settings::OAuthSettings;

/// The well-known prefix of the metadata (RFC 9728 §3).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document.
pub fn document(s: &OAuthSettings) -> Value {
    json!({
        "resource": s.resource,
        "authorization_servers": s.issuers.iter().map(|i| i.issuer.as_str()).collect::<Vec<_>>(),
        "scopes_supported": s.scopes.keys().collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "resource_name": "verbgate",
    })
}

/// The resource's path (`/mcp` of `https://host/mcp`; empty for a bare
/// origin).
fn resource_path(resource: &str) -> &str {
    let after = resource.find("://").map_or(0, |i| i + 3);
    let rest = &resource[after..];
    rest.find('/').map_or("", |i| rest[i..].split(['?', '#']).next().unwrap_or(""))
}

/// The request paths the document is served on: the path-scoped one
/// (RFC 9728 §3.1: the well-known prefix before the resource's path) and
/// the root one clients fall back to.
pub fn paths(s: &OAuthSettings) -> Vec<String> {
    let scoped = format!("{WELL_KNOWN}{}", resource_path(&s.resource).trim_end_matches('/'));
    if scoped == WELL_KNOWN {
        vec![scoped]
    } else {
        vec![scoped, WELL_KNOWN.to_string()]
    }
}

/// The document's URL, as the challenge names it (`resource_metadata`).
pub fn url(s: &OAuthSettings) -> String {
    let path = resource_path(&s.resource);
    let origin = &s.resource[..s.resource.len() - path.len()];
    let origin = origin.split(['?', '#']).next().unwrap_or(origin);
    format!("{origin}{}", paths(s)[0])
}

/// A quoted-string value for a challenge parameter (no quotes or
/// backslashes inside, nothing outside printable ASCII).
fn quoted(v: &str) -> String {
    let clean: String = v
        .chars()
        .map(|c| if c == '"' || c == '\\' || !(' '..='~').contains(&c) { '\'' } else { c })
        .collect();
    format!("\"{clean}\"")
}

/// The `WWW-Authenticate` value: `error` (RFC 6750 §3.1) when a token was
/// presented, `scope` for `insufficient_scope`, always `resource_metadata`.
pub fn challenge(s: &OAuthSettings, error: Option<(&str, &str)>, scope: Option<&str>) -> String {
    let mut parts = vec![format!("resource_metadata={}", quoted(&url(s)))];
    if let Some((code, description)) = error {
        parts.push(format!("error={}", quoted(code)));
        parts.push(format!("error_description={}", quoted(description)));
    }
    if let Some(scope) = scope {
        parts.push(format!("scope={}", quoted(scope)));
    }
    format!("Bearer realm=\"verbgate\", {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(resource: &str) -> OAuthSettings {
        toml::from_str(&format!(
            "resource = \"{resource}\"\n[[issuers]]\nissuer = \"https://as.example.com\"\n[scopes]\n\"verbs:read\" = [\"git.status\"]\n\"verbs:all\" = [\"*\"]\n"
        ))
        .unwrap()
    }

    #[test]
    fn the_document_is_served_path_scoped_and_at_the_root() {
        let s = settings("https://mcp.example.com/mcp");
        assert_eq!(
            paths(&s),
            ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
        );
        assert_eq!(url(&s), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        let doc = document(&s);
        assert_eq!(doc["resource"], "https://mcp.example.com/mcp");
        assert_eq!(doc["authorization_servers"], json!(["https://as.example.com"]));
        assert_eq!(doc["scopes_supported"], json!(["verbs:all", "verbs:read"]));
        let bare = settings("https://mcp.example.com");
        assert_eq!(paths(&bare), ["/.well-known/oauth-protected-resource"]);
        assert_eq!(url(&bare), "https://mcp.example.com/.well-known/oauth-protected-resource");
    }

    #[test]
    fn challenges_quote_what_they_carry() {
        let s = settings("http://127.0.0.1:9/mcp");
        assert_eq!(
            challenge(&s, None, None),
            "Bearer realm=\"verbgate\", resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        let c = challenge(&s, Some(("invalid_token", "kid \"x\"\n")), Some("a b"));
        assert!(
            c.contains("error=\"invalid_token\"")
                && c.contains("error_description=\"kid 'x''\"")
                && c.ends_with("scope=\"a b\""),
            "{c}"
        );
    }
}
