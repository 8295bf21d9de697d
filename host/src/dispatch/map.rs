//! Stage 8 of an op: the plugin maps what ran into the verb's result,
//! which must be JSON matching the verb's declared result schema.

use serde_json::Value;

use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::registry::Verb;
use crate::runtime::model::Outcome;
use crate::runtime::Ready;

impl Dispatcher {
    /// Map `outcome` of `verb` called with `args_text` through its plugin
    /// (on `ready`, an instance made while the program ran, if any).
    pub(crate) async fn map_outcome(
        &self,
        verb: &Verb,
        args_text: &str,
        outcome: &Outcome,
        ready: Option<Ready>,
    ) -> Result<Value, OpError> {
        let text = self
            .runtime
            .map_result(&verb.plugin.component, &verb.name, args_text, outcome, ready)
            .await
            .map_err(|e| e.to_op_error(&verb.plugin.name))?
            .map_err(|e| self.plugin_error(&verb.plugin.name, e))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            OpError::new(
                ErrorCode::InvalidOutput,
                format!("plugin `{}` returned a result that is not JSON: {e}", verb.plugin.name),
            )
            .with("plugin", verb.plugin.name.as_str())
        })?;
        let problems = verb.result_problems(&value);
        if !problems.is_empty() {
            return Err(OpError::new(
                ErrorCode::InvalidOutput,
                format!("plugin `{}` returned a result that does not match `{}`'s declared result schema: {}", verb.plugin.name, verb.name, problems[0]),
            )
            .with("plugin", verb.plugin.name.as_str())
            .with("problems", problems));
        }
        Ok(value)
    }
}
