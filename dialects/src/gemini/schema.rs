//! A function's JSON Schema as Gemini's `Schema` (an OpenAPI 3.0 subset), as LiteLLM's
//! `_build_vertex_schema` builds it: `$ref`s inlined, `null` alternatives as `nullable`, types
//! in capitals, and keywords Gemini refuses (`additionalProperties`, `$schema`, `strict`, ...)
//! dropped.

use serde_json::{Map, Value};

use crate::TranslateError;

/// The keywords of Gemini's `Schema`; every other keyword is dropped.
const KEYWORDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// How deep `$ref`s may nest before the schema counts as recursive (Gemini's schema has no
/// references, so a recursive one cannot be written out).
const MAX_DEPTH: usize = 32;

/// Translates `schema` (a JSON Schema object); `field` names it in a refusal.
pub(crate) fn gemini_schema(schema: &Value, field: &str) -> Result<Value, TranslateError> {
    let Value::Object(root) = schema else {
        return Err(TranslateError::new(field, "must be a JSON Schema object"));
    };
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(found)) = root.get(key) {
            defs.extend(found.iter().map(|(k, v)| (format!("#/{key}/{k}"), v.clone())));
        }
    }
    convert(schema, &defs, field, 0)
}

fn convert(schema: &Value, defs: &Map<String, Value>, field: &str, depth: usize) -> Result<Value, TranslateError> {
    if depth > MAX_DEPTH {
        return Err(TranslateError::new(field, "nests too deep (a recursive $ref cannot be expressed for Gemini)"));
    }
    let Value::Object(schema) = schema else {
        // `true`, `false` and other non-object schemas say nothing Gemini can use.
        return Ok(Value::Object(Map::new()));
    };
    if let Some(Value::String(reference)) = schema.get("$ref") {
        let Some(target) = defs.get(reference) else {
            return Err(TranslateError::new(field, format!("$ref {reference:?} is not in $defs or definitions")));
        };
        let mut merged = match target {
            Value::Object(t) => t.clone(),
            _ => Map::new(),
        };
        // Siblings of `$ref` (a description) win over the definition's.
        merged.extend(schema.iter().filter(|(k, _)| *k != "$ref").map(|(k, v)| (k.clone(), v.clone())));
        return convert(&Value::Object(merged), defs, field, depth + 1);
    }

    let mut out = Map::new();
    let mut nullable = false;
    for (key, value) in schema {
        match key.as_str() {
            "type" => match value {
                Value::String(t) if t == "null" => nullable = true,
                Value::String(t) => {
                    out.insert("type".to_owned(), Value::from(t.to_ascii_uppercase()));
                }
                Value::Array(types) => {
                    let mut kinds: Vec<&str> = Vec::new();
                    for t in types.iter().filter_map(Value::as_str) {
                        if t == "null" {
                            nullable = true;
                        } else {
                            kinds.push(t);
                        }
                    }
                    match kinds.as_slice() {
                        [] => {}
                        [one] => {
                            out.insert("type".to_owned(), Value::from(one.to_ascii_uppercase()));
                        }
                        many => {
                            let any: Vec<Value> =
                                many.iter().map(|t| serde_json::json!({"type": t.to_ascii_uppercase()})).collect();
                            out.insert("anyOf".to_owned(), Value::Array(any));
                        }
                    }
                }
                _ => {}
            },
            "properties" => {
                let Value::Object(props) = value else { continue };
                let mut converted = Map::new();
                for (name, prop) in props {
                    converted.insert(name.clone(), convert(prop, defs, field, depth + 1)?);
                }
                out.insert(key.clone(), Value::Object(converted));
            }
            "items" => {
                // A tuple (`items: [...]`) has no Gemini form: its first schema stands for all.
                let item = match value {
                    Value::Array(items) => items.first().cloned().unwrap_or(Value::Object(Map::new())),
                    other => other.clone(),
                };
                out.insert(key.clone(), convert(&item, defs, field, depth + 1)?);
            }
            "anyOf" | "oneOf" => {
                let Value::Array(options) = value else { continue };
                let mut kept = Vec::new();
                for option in options {
                    if option.get("type").and_then(Value::as_str) == Some("null") {
                        nullable = true;
                    } else {
                        kept.push(convert(option, defs, field, depth + 1)?);
                    }
                }
                match kept.len() {
                    0 => {}
                    // `anyOf: [X, null]` is a nullable X.
                    1 => {
                        if let Some(Value::Object(only)) = kept.pop() {
                            for (k, v) in only {
                                out.entry(k).or_insert(v);
                            }
                        }
                    }
                    _ => {
                        out.insert("anyOf".to_owned(), Value::Array(kept));
                    }
                }
            }
            "const" => {
                out.insert("enum".to_owned(), Value::Array(vec![value.clone()]));
            }
            "nullable" => nullable |= value.as_bool() == Some(true),
            "examples" => {
                if let Some(first) = value.as_array().and_then(|v| v.first()) {
                    out.entry("example").or_insert_with(|| first.clone());
                }
            }
            _ if KEYWORDS.contains(&key.as_str()) => {
                out.insert(key.clone(), value.clone());
            }
            // `additionalProperties`, `$schema`, `$id`, `strict`, `$defs`, `allOf`, ...
            _ => {}
        }
    }
    // Gemini accepts `enum` on strings only: the values of another type are left unconstrained,
    // as LiteLLM's `_fix_enum_types` leaves them.
    if let Some(Value::Array(values)) = out.get("enum") {
        let strings = values.iter().all(Value::is_string);
        let string_type = out.get("type").is_none_or(|t| t == "STRING");
        if strings && string_type {
            out.insert("type".to_owned(), Value::from("STRING"));
        } else {
            out.remove("enum");
        }
    }
    if out.contains_key("properties") && !out.contains_key("type") {
        out.insert("type".to_owned(), Value::from("OBJECT"));
    }
    if nullable {
        out.insert("nullable".to_owned(), Value::Bool(true));
    }
    Ok(Value::Object(out))
}

/// Whether a translated parameters schema declares nothing: an object without properties, which
/// Gemini refuses ("properties: should be non-empty for OBJECT type"), so it is left out.
pub(crate) fn is_empty_object(schema: &Value) -> bool {
    let Value::Object(map) = schema else { return true };
    let no_properties = map.get("properties").is_none_or(|p| p.as_object().is_none_or(Map::is_empty));
    no_properties && map.keys().all(|k| k == "type" || k == "properties" || k == "required")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refs_nullable_and_unsupported_keywords() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "unit": {"$ref": "#/$defs/Unit", "description": "the unit"},
                "city": {"type": ["string", "null"]},
                "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "required": ["city"],
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}},
        });
        let out = gemini_schema(&schema, "tools[0].function.parameters").expect("translates");
        assert_eq!(
            out,
            json!({
                "type": "OBJECT",
                "properties": {
                    "unit": {"type": "STRING", "enum": ["c", "f"], "description": "the unit"},
                    "city": {"type": "STRING", "nullable": true},
                    "count": {"type": "INTEGER", "nullable": true},
                },
                "required": ["city"],
            })
        );
    }

    #[test]
    fn a_recursive_ref_is_refused() {
        let schema = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
            "properties": {"next": {"$ref": "#/$defs/Node"}}}}});
        let err = gemini_schema(&schema, "tools[0].function.parameters").unwrap_err();
        assert_eq!(err.field, "tools[0].function.parameters");
    }
}
