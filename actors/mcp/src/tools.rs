//! A server's tools as bosun keeps them: name, title, description, parameters in the server's
//! order, the `inputSchema` as the server sent it, and the annotations' hints (the risk they add
//! up to is `Hints::assess`'s).
//!
//! A `tools/list` page is read tool by tool from its JSON ([`read_page`]): one malformed tool
//! definition is set aside with what is wrong with it, and the others are listed and callable.

use std::collections::HashSet;

use bosun_shared::mcp::{Hints, MAX_TOOL_NAME_LEN};
use serde_json::Value;

use super::record::{StoredMalformedTool, StoredParam, StoredTool};

/// A tool as listed: rmcp's reading of it, and its `inputSchema` exactly as sent.
#[derive(Clone, Debug)]
pub struct Listed {
    pub tool: rmcp::model::Tool,
    pub input_schema: Value,
}

/// One `tools/list` page, read tool by tool.
#[derive(Debug, Default)]
pub struct Page {
    pub tools: Vec<Listed>,
    pub malformed: Vec<StoredMalformedTool>,
    pub next_cursor: Option<String>,
}

/// Reads one `tools/list` result. `headers`: the revision mirrors `x-mcp-header` arguments as
/// HTTP headers (2026-07-28 over HTTP), so a tool whose annotations are malformed is set aside.
/// `seen`: the names listed on earlier pages, to set a second tool of the same name aside.
/// `Err`: the result is not a listing at all.
pub fn read_page(
    result: &Value,
    headers: bool,
    seen: &mut HashSet<String>,
) -> Result<Page, PageError> {
    let Some(items) = result.get("tools").and_then(Value::as_array) else {
        return Err(PageError::NoTools(cut(&result.to_string(), 160)));
    };
    let next_cursor = match result.get("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.clone()),
        Some(other) => return Err(PageError::BadCursor(cut(&other.to_string(), 80))),
    };
    let mut page = Page {
        next_cursor,
        ..Page::default()
    };
    for (n, item) in items.iter().enumerate() {
        let name = item.get("name").and_then(Value::as_str).map(str::to_string);
        let problem = match (
            &name,
            serde_json::from_value::<rmcp::model::Tool>(item.clone()),
        ) {
            (None, _) => Err(format!(
                "tool {} of the page has no name (a string) in its definition",
                n + 1
            )),
            (Some(_), Err(e)) => Err(format!("its definition is not valid: {e}")),
            (Some(name), Ok(tool)) => {
                let schema = item.get("inputSchema").cloned().unwrap_or(Value::Null);
                if let Err(why) = bosun_shared::mcp::check_tool_name(name) {
                    Err(why.to_string())
                } else if schema.get("type").and_then(Value::as_str) != Some("object") {
                    Err("its inputSchema is not a JSON Schema of `\"type\": \"object\"`, as MCP asks".to_string())
                } else if let (true, Err(why)) = (headers, check_param_headers(&schema)) {
                    Err(format!("its x-mcp-header annotations are malformed: {why}"))
                } else if !seen.insert(name.clone()) {
                    Err("the server listed another tool of the same name before it".to_string())
                } else {
                    Ok(Listed {
                        tool,
                        input_schema: schema,
                    })
                }
            }
        };
        match problem {
            Ok(listed) => page.tools.push(listed),
            // A name that breaks the rules may be of any length: kept cut, for people to see.
            Err(problem) => page.malformed.push(StoredMalformedTool {
                name: name.map(|n| match n.char_indices().nth(MAX_TOOL_NAME_LEN) {
                    Some((at, _)) => format!("{}…", &n[..at]),
                    None => n,
                }),
                problem,
            }),
        }
    }
    Ok(page)
}

/// Why [`read_page`] found an answer to `tools/list` not to be a listing at all; each carries
/// the start of what the server sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error("its answer to tools/list has no list of tools: {0}")]
    NoTools(String),
    #[error("its answer to tools/list has a nextCursor that is not a string: {0}")]
    BadCursor(String),
}

/// The rules of the 2026-07-28 revision for `x-mcp-header`: on a property reached from the
/// schema's root through `properties` alone, a non-empty HTTP token, unique whatever its case,
/// on a property of a primitive type (string, integer, boolean).
pub fn check_param_headers(schema: &Value) -> Result<(), HeaderRuleError> {
    let Some(root) = schema.as_object() else {
        return Ok(());
    };
    if root.contains_key("x-mcp-header") {
        return Err(HeaderRuleError::OnSchema);
    }
    let mut seen = HashSet::new();
    let mut chain = Vec::new();
    walk_properties(root.get("properties"), &mut chain, &mut seen)?;
    if off_chain(schema, true) {
        return Err(HeaderRuleError::OffChain);
    }
    Ok(())
}

/// Which `x-mcp-header` rule of [`check_param_headers`] a schema breaks; `at` is the property's
/// path (`a.b`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderRuleError {
    #[error("x-mcp-header is on the schema itself, not on a property")]
    OnSchema,
    #[error("an x-mcp-header is on a schema that is not reached through `properties` alone")]
    OffChain,
    #[error("on property `{at}` it is not a string")]
    NotString { at: String },
    #[error("on property `{at}` it is empty")]
    Empty { at: String },
    #[error("on property `{at}`, `{header}` is not a valid HTTP header name")]
    NotToken { at: String, header: String },
    #[error("on property `{at}`, `{header}` is used twice (whatever the case)")]
    Twice { at: String, header: String },
    #[error("property `{at}` is of type {ty}; only a string, integer or boolean can be a header")]
    NotPrimitive { at: String, ty: String },
    #[error(
        "property `{at}` has no single type; only a string, integer or boolean can be a header"
    )]
    NoType { at: String },
}

fn walk_properties(
    properties: Option<&Value>,
    chain: &mut Vec<String>,
    seen: &mut HashSet<String>,
) -> Result<(), HeaderRuleError> {
    use HeaderRuleError as E;
    let Some(Value::Object(props)) = properties else {
        return Ok(());
    };
    for (name, prop) in props {
        chain.push(name.clone());
        if let Some(header) = prop.get("x-mcp-header") {
            let at = chain.join(".");
            let Value::String(header) = header else {
                return Err(E::NotString { at });
            };
            let header = header.clone();
            if header.is_empty() {
                return Err(E::Empty { at });
            }
            if !header.chars().all(is_token_char) {
                return Err(E::NotToken { at, header });
            }
            if !seen.insert(header.to_ascii_lowercase()) {
                return Err(E::Twice { at, header });
            }
            match prop.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                Some(ty) => return Err(E::NotPrimitive { at, ty: ty.into() }),
                None => return Err(E::NoType { at }),
            }
        }
        walk_properties(prop.get("properties"), chain, seen)?;
        chain.pop();
    }
    Ok(())
}

/// Whether an `x-mcp-header` sits anywhere but on a property of the `properties` chain.
fn off_chain(schema: &Value, on_chain: bool) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| match k.as_str() {
            "x-mcp-header" => !on_chain,
            "properties" => v
                .as_object()
                .is_some_and(|m| m.values().any(|s| off_chain(s, on_chain))),
            "default" | "const" | "enum" | "examples" | "dependentRequired" => false,
            _ => off_chain(v, false),
        }),
        Value::Array(items) => items.iter().any(|s| off_chain(s, false)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// What bosun keeps of a tool the server listed, with its schema as sent.
pub fn kept(listed: &Listed) -> StoredTool {
    StoredTool {
        input_schema: Some(listed.input_schema.clone()),
        ..from_rmcp(&listed.tool)
    }
}

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
        input_schema: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_malformed_tool_is_set_aside_and_the_others_kept_as_sent() {
        let schema = serde_json::json!({
            "type": "object",
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "properties": {"at": {"$ref": "#/$defs/point"}, "tenant": {"type": "string", "x-mcp-header": "Tenant"}},
            "unknownKeyword": [1, 2.5, {"deep": null}]
        });
        let page = serde_json::json!({"tools": [
            {"name": "good", "inputSchema": schema},
            {"name": "no-schema"},
            {"inputSchema": {"type": "object"}},
            {"name": "bad-header", "inputSchema": {"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}},
            {"name": "good", "inputSchema": {"type": "object"}},
            {"name": "not-object", "inputSchema": {"type": "string"}}
        ], "nextCursor": "n"});
        let mut seen = HashSet::new();
        let read = read_page(&page, true, &mut seen).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.tools.len(), 1);
        assert_eq!(read.tools[0].input_schema, schema, "kept exactly as sent");
        assert_eq!(kept(&read.tools[0]).input_schema.as_ref(), Some(&schema));
        let problems: Vec<(Option<&str>, &str)> = read
            .malformed
            .iter()
            .map(|m| (m.name.as_deref(), m.problem.as_str()))
            .collect();
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(problems[0].1.contains("inputSchema"), "{problems:?}");
        assert_eq!(problems[1].0, None);
        assert!(problems[2].1.contains("x-mcp-header"), "{problems:?}");
        assert!(problems[3].1.contains("same name"), "{problems:?}");
        assert!(problems[4].1.contains("type"), "{problems:?}");
        assert_eq!(read.next_cursor.as_deref(), Some("n"));
        // Without headers (a handshake revision), x-mcp-header is not bosun's business.
        let mut seen = HashSet::new();
        let read = read_page(&page, false, &mut seen).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.tools.len(), 2);
        assert!(read_page(&serde_json::json!({"x": 1}), true, &mut seen).is_err());
    }

    #[test]
    fn x_mcp_header_rules() {
        let ok = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {"c": {"type": "integer", "x-mcp-header": "C"}}}}});
        assert!(check_param_headers(&ok).is_ok());
        for bad in [
            serde_json::json!({"type": "object", "x-mcp-header": "X"}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "array", "x-mcp-header": "X"}}}),
            serde_json::json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "X"}}}),
        ] {
            assert!(check_param_headers(&bad).is_err(), "{bad}");
        }
    }

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
        assert!(kept.hints.assess().sent.is_empty());
    }
}
