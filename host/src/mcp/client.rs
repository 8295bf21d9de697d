//! How an MCP client is named in what verbgate writes: messages, the
//! audit trail. Its name and version are the client's own words, so they
//! are escaped and bounded wherever they enter.

use rmcp::model::Implementation;

/// Longest part of an MCP client's `clientInfo` name, and of its version,
/// that verbgate keeps (bytes, after escaping). The client chooses both,
/// and they are recorded in every audit row of the session and quoted in
/// messages: a 3 MB name once grew the audit trail by 44 MB for one
/// request.
pub const CLIENT_TEXT_BYTES: usize = 256;

/// How a client is named in a message: "the MCP client `name`", or "this
/// MCP client" when it gave no name.
pub(crate) fn phrase(info: Option<&Implementation>) -> String {
    match info.map(|i| i.name.as_str()).filter(|n| !n.is_empty()) {
        Some(name) => format!("the MCP client `{}`", text(name)),
        None => "this MCP client".to_string(),
    }
}

/// How a client is named in the audit trail: `name/version` from
/// `initialize`, each cut at [`CLIENT_TEXT_BYTES`] (the cut says how much
/// is missing) with control, bidi and invisible characters escaped (see
/// [`crate::text`]), so what the client sent cannot bloat the trail or
/// rewrite a terminal that shows it. Bounded here, where it enters, for
/// stdio and HTTP sessions alike.
pub(crate) fn label(info: &Implementation) -> String {
    format!("{}/{}", text(&info.name), text(&info.version))
}

/// One client-chosen text, bounded and escaped (see [`label`]).
pub(crate) fn text(text: &str) -> String {
    crate::text::escape(text, CLIENT_TEXT_BYTES)
}
