//! Asking the person behind an MCP client through elicitation (form mode):
//! the form shows what will run and offers three answers — allow once,
//! allow this verb for the session, deny. A client that did not declare the
//! elicitation capability cannot be asked, and says so. This is how a
//! 2025-11-25 client is asked; a 2026-07-28 client gets the same form in an
//! `InputRequiredResult` ([`super::mrtr`]).

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitationAction, ServerRequest,
};
use rmcp::service::ElicitationMode;
use rmcp::service::{Peer, PeerRequestOptions};
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::dispatch::ask::{Answer, AskFuture, Asker, Question};

/// The form field holding the answer.
const FIELD: &str = "decision";

/// The values the form offers for [`FIELD`]: allow once, allow the verb
/// for the session, deny.
pub const CHOICES: [&str; 3] = ["allow_once", "allow_session", "deny"];

/// An [`Asker`] over one MCP request's peer; a cancelled request stops
/// waiting.
pub struct Elicit {
    peer: Peer<RoleServer>,
    cancel: CancellationToken,
}

impl Elicit {
    /// For the request whose peer and cancellation token these are.
    pub fn new(peer: Peer<RoleServer>, cancel: CancellationToken) -> Self {
        Elicit { peer, cancel }
    }
}

/// The elicitation request for `q`: its message and a one-field form.
pub fn form(q: &Question) -> Value {
    json!({
        "mode": "form",
        "message": q.message(),
        "requestedSchema": {
            "type": "object",
            "properties": {
                FIELD: {
                    "type": "string",
                    "title": format!("Run {}?", q.verb),
                    "oneOf": [
                        { "const": CHOICES[0], "title": "Allow once" },
                        { "const": CHOICES[1], "title": format!("Allow {} for the rest of this session", q.verb) },
                        { "const": CHOICES[2], "title": "Deny" }
                    ]
                }
            },
            "required": [FIELD]
        }
    })
}

/// The person's answer in an elicitation result: only an accepted form
/// whose field says `allow_once` or `allow_session` allows anything; a
/// `cancel` (the question dismissed) is recorded as such, not as a "no".
pub fn answer(action: ElicitationAction, content: Option<&Value>) -> Answer {
    offered(action, content).unwrap_or(Answer::Decline)
}

/// Like [`answer`], but `None` for an `accept` of no value in
/// [`CHOICES`]: a 2026-07-28 retry carrying one is asked again.
pub fn offered(action: ElicitationAction, content: Option<&Value>) -> Option<Answer> {
    let decision = content.and_then(|c| c.get(FIELD)).and_then(Value::as_str);
    match (action, decision) {
        (ElicitationAction::Accept, Some(d)) if d == CHOICES[0] => Some(Answer::AllowOnce),
        (ElicitationAction::Accept, Some(d)) if d == CHOICES[1] => Some(Answer::AllowSession),
        (ElicitationAction::Accept, Some(d)) if d == CHOICES[2] => Some(Answer::Decline),
        (ElicitationAction::Accept, _) => None,
        (ElicitationAction::Cancel, _) => Some(Answer::Dismissed),
        _ => Some(Answer::Decline),
    }
}

impl Asker for Elicit {
    fn unavailable(&self) -> Option<String> {
        if self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return None;
        }
        let info = self.peer.peer_info();
        let client = super::client::phrase(info.as_ref().map(|i| &i.client_info));
        Some(format!("{client} did not declare the `elicitation` capability (form mode) when it connected (`initialize`), so verbgate cannot ask its user"))
    }

    fn ask<'a>(&'a self, q: &'a Question) -> AskFuture<'a> {
        Box::pin(async move {
            let params: ElicitRequestParams = match serde_json::from_value(form(q)) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "cannot build the elicitation form");
                    return Answer::Decline;
                }
            };
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let sent =
                self.peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await;
            let mut handle = match sent {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(error = %e, verb = %q.verb, "the elicitation could not be sent; nobody was asked");
                    return Answer::Failed;
                }
            };
            let given_up = tokio::select! {
                r = tokio::time::timeout(q.timeout, &mut handle.rx) => match r {
                    Err(_) => (Answer::Timeout, "verbgate's consent timeout (consent.timeout_ms) passed"),
                    Ok(Ok(Ok(ClientResult::ElicitResult(result)))) => {
                        return answer(result.action, result.content.as_ref());
                    }
                    Ok(other) => {
                        tracing::warn!(answer = ?other, verb = %q.verb, "the elicitation failed; nobody was asked");
                        return Answer::Failed;
                    }
                },
                _ = self.cancel.cancelled() => (Answer::Cancelled, "the request that asked was cancelled"),
            };
            // Close the question on the client too: an "Allow" given after
            // this would allow nothing, and must not look as if it did.
            let (answer, why) = given_up;
            if let Err(e) = handle.cancel(Some(format!("{why}; nothing runs"))).await {
                tracing::debug!(error = %e, "cannot cancel the elicitation on the client");
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_a_valid_elicitation_and_only_an_accepted_allow_allows() {
        let q = Question {
            verb: "git.commit".into(),
            args: json!({}),
            effects: crate::runtime::model::Effects::Undeclared,
            rule: "default:undeclared".into(),
            reason: None,
            program: None,
            argv: vec![],
            cwd: None,
            read_back: None,
            read_back_cwd: None,
            timeout: std::time::Duration::from_secs(1),
        };
        let params: ElicitRequestParams =
            serde_json::from_value(form(&q)).expect("rmcp accepts the form");
        assert!(serde_json::to_value(&params).unwrap()["requestedSchema"]["properties"][FIELD]
            ["oneOf"]
            .is_array());
        assert_eq!(
            answer(ElicitationAction::Accept, Some(&json!({FIELD: "allow_once"}))),
            Answer::AllowOnce
        );
        assert_eq!(
            answer(ElicitationAction::Accept, Some(&json!({FIELD: "allow_session"}))),
            Answer::AllowSession
        );
        assert_eq!(
            answer(ElicitationAction::Accept, Some(&json!({FIELD: "deny"}))),
            Answer::Decline
        );
        assert_eq!(
            answer(ElicitationAction::Accept, Some(&json!({FIELD: "yes please"}))),
            Answer::Decline
        );
        assert_eq!(answer(ElicitationAction::Accept, None), Answer::Decline);
        assert_eq!(
            answer(ElicitationAction::Decline, Some(&json!({FIELD: "allow_once"}))),
            Answer::Decline
        );
        assert_eq!(answer(ElicitationAction::Cancel, None), Answer::Dismissed);
    }
}
