//! A server's tools as bosun keeps and shows them: name, title, description, parameters in the
//! server's order, and the annotations' hints with the risk they add up to.

use bosun_shared::mcp::{Hints, full_tool_name};
use bosun_shared::protocol::mcp::{ParamView, ToolView};
use serde_json::Value;

use super::record::{StoredParam, StoredTool};

/// What bosun keeps of a tool the server listed.
pub fn from_rmcp(tool: &rmcp::model::Tool) -> StoredTool {
    let schema = tool.input_schema.as_ref();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // `properties` keeps the server's order (serde_json is built with preserve_order).
    let params = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| StoredParam {
                    name: name.clone(),
                    r#type: param_type(p),
                    required: required.contains(&name.as_str()),
                    description: p
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default();
    let a = tool.annotations.as_ref();
    StoredTool {
        name: tool.name.to_string(),
        title: tool
            .title
            .clone()
            .or_else(|| a.and_then(|a| a.title.clone())),
        description: tool.description.as_ref().map(|d| d.to_string()),
        params,
        hints: Hints {
            read_only: a.and_then(|a| a.read_only_hint),
            destructive: a.and_then(|a| a.destructive_hint),
            idempotent: a.and_then(|a| a.idempotent_hint),
            open_world: a.and_then(|a| a.open_world_hint),
        },
    }
}

/// A JSON Schema type in words: `string`, `integer`, `string | null`, `array of string`.
fn param_type(p: &Value) -> Option<String> {
    let ty = match p.get("type")? {
        Value::String(s) => s.clone(),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => return None,
    };
    if ty == "array"
        && let Some(item) = p
            .get("items")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
    {
        return Some(format!("array of {item}"));
    }
    Some(ty)
}

/// A kept tool as the UI shows it.
pub fn view(server: &str, t: &StoredTool) -> ToolView {
    ToolView {
        name: t.name.clone(),
        full_name: full_tool_name(server, &t.name),
        title: t.title.clone(),
        description: t.description.clone(),
        params: t
            .params
            .iter()
            .map(|p| ParamView {
                name: p.name.clone(),
                r#type: p.r#type.clone(),
                required: p.required,
                description: p.description.clone(),
            })
            .collect(),
        hints: t.hints,
        assessment: t.hints.assess(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_keep_the_servers_order_and_say_what_is_required() {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "t",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "zeta": {"type": "string", "description": "last letter"},
                    "alpha": {"type": ["integer", "null"]},
                    "list": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["zeta"]
            }
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let kept = from_rmcp(&tool);
        let names: Vec<&str> = kept.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "list"]);
        assert!(kept.params[0].required && !kept.params[1].required);
        assert_eq!(kept.params[1].r#type.as_deref(), Some("integer | null"));
        assert_eq!(kept.params[2].r#type.as_deref(), Some("array of string"));
        assert_eq!(
            kept.hints,
            Hints::default(),
            "no annotations: no hints sent"
        );
        let v = view("srv", &kept);
        assert_eq!(v.full_name, "mcp__srv__t");
        assert!(v.assessment.sent.is_empty());
    }
}
