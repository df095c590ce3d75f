//! Reading `{"type": ..., ...}` objects whose unknown (or malformed) kinds must survive as raw JSON.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The `type` of a JSON object, if it has a string one.
pub(crate) fn kind(value: &Value) -> Option<&str> {
    value.as_object()?.get("type")?.as_str()
}

/// Reads `value` (an object whose `type` was already matched) as `T` without its `type` key;
/// gives the value back unchanged when it does not fit `T`.
pub(crate) fn typed<T: DeserializeOwned>(value: Value) -> Result<T, Value> {
    let Value::Object(mut map) = value else { return Err(value) };
    let tag = map.remove("type");
    let rest = Value::Object(map);
    match T::deserialize(&rest) {
        Ok(t) => Ok(t),
        Err(_) => {
            let Value::Object(mut map) = rest else { unreachable!("built as an object above") };
            if let Some(tag) = tag {
                map.insert("type".to_owned(), tag);
            }
            Err(Value::Object(map))
        }
    }
}
