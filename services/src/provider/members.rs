//! Editing a JSON request body member by member, without building a tree: the members of the
//! top-level object are read as raw slices of the body, and an edit copies every byte it does
//! not change. A passed-through body stays byte-faithful (the client's formatting, escapes,
//! number spellings and unknown fields included) except for the members Switchyard rewrites, and
//! a huge member costs no more than its bytes (no `serde_json::Value` per element).

use std::{borrow::Cow, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{MapAccess, Visitor},
};
use serde_json::value::RawValue;

/// One member of the top-level object: its key (unescaped) and where its value lies in the body.
#[derive(Debug)]
struct Member<'a> {
    key: Cow<'a, str>,
    value: &'a RawValue,
    /// Byte offsets of the value in the body.
    start: usize,
    end: usize,
}

/// The top-level members of a JSON object body, in order.
#[derive(Debug)]
pub(crate) struct Members<'a> {
    body: &'a [u8],
    members: Vec<Member<'a>>,
    edits: Vec<Option<Vec<u8>>>,
    removed: Vec<bool>,
    appended: Vec<(String, Vec<u8>)>,
}

/// Why a body is not an object of members.
#[derive(Debug)]
pub(crate) struct NotAnObject(pub(crate) String);

impl fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'a> Members<'a> {
    /// Reads the members of `body`, a JSON object (anything else is an error naming the problem).
    pub(crate) fn parse(body: &'a [u8]) -> Result<Self, NotAnObject> {
        if body.trim_ascii_start().first() != Some(&b'{') {
            return Err(NotAnObject("request body must be a JSON object".to_owned()));
        }
        let text = std::str::from_utf8(body).map_err(|e| NotAnObject(format!("request body is not UTF-8: {e}")))?;
        let raw: RawMembers<'a> =
            serde_json::from_str(text).map_err(|e| NotAnObject(format!("request body is not valid JSON: {e}")))?;
        let base = body.as_ptr() as usize;
        let members: Vec<Member<'a>> = raw
            .0
            .into_iter()
            .map(|(key, value)| {
                // The raw value borrows from `body`: its offset is its address minus the body's.
                let start = value.get().as_ptr() as usize - base;
                Member { key, value, start, end: start + value.get().len() }
            })
            .collect();
        let n = members.len();
        Ok(Self { body, members, edits: vec![None; n], removed: vec![false; n], appended: Vec::new() })
    }

    /// The raw value of the last member named `key` (JSON keeps the last of duplicates).
    pub(crate) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.members.iter().rev().find(|m| m.key == key).map(|m| m.value)
    }

    /// Whether the body has a member named `key`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.members.iter().any(|m| m.key == key)
    }

    /// Removes every member named `key`.
    pub(crate) fn remove(&mut self, key: &str) {
        for (i, m) in self.members.iter().enumerate() {
            if m.key == key {
                self.removed[i] = true;
            }
        }
    }

    /// Sets `key` to the JSON text `value`: in place when the body has it (the last of
    /// duplicates; earlier ones are removed), else appended.
    pub(crate) fn set(&mut self, key: &str, value: Vec<u8>) {
        match self.members.iter().rposition(|m| m.key == key) {
            Some(last) => {
                for (i, m) in self.members.iter().enumerate() {
                    if m.key == key && i != last {
                        self.removed[i] = true;
                    }
                }
                self.removed[last] = false;
                self.edits[last] = Some(value);
            }
            None => {
                self.appended.retain(|(k, _)| k != key);
                self.appended.push((key.to_owned(), value));
            }
        }
    }

    /// Sets `key` to a string.
    pub(crate) fn set_str(&mut self, key: &str, value: &str) {
        self.set(key, json_string(value));
    }

    /// The edited body: every byte of a kept member (and of the space between members) copied
    /// as it was, edited values in place, appended members before the closing brace.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let body = self.body;
        let mut out = Vec::with_capacity(body.len() + 64);
        // Everything up to and including the opening brace.
        let open = body.iter().position(|b| *b == b'{').unwrap_or(0);
        out.extend_from_slice(&body[..=open]);
        let mut gap_start = open + 1;
        let mut wrote = false;
        for (i, m) in self.members.iter().enumerate() {
            if !self.removed[i] {
                // The gap holds `, "key": ` (whitespace included); a member that now comes first
                // loses the comma of a removed predecessor.
                let gap = &body[gap_start..m.start];
                let gap = if wrote { gap } else { strip_leading_comma(gap) };
                out.extend_from_slice(gap);
                match &self.edits[i] {
                    Some(value) => out.extend_from_slice(value),
                    None => out.extend_from_slice(&body[m.start..m.end]),
                }
                wrote = true;
            }
            gap_start = m.end;
        }
        for (key, value) in &self.appended {
            if wrote {
                out.push(b',');
            }
            out.extend_from_slice(&json_string(key));
            out.push(b':');
            out.extend_from_slice(value);
            wrote = true;
        }
        // Whatever followed the last member: whitespace and the closing brace.
        out.extend_from_slice(&body[gap_start..]);
        out
    }
}

/// `gap` (`<ws> , <ws> "key" <ws> : <ws>`) without its leading comma.
fn strip_leading_comma(gap: &[u8]) -> &[u8] {
    match gap.trim_ascii_start().strip_prefix(b",") {
        Some(rest) => rest.trim_ascii_start(),
        None => gap,
    }
}

/// `s` as a JSON string.
pub(crate) fn json_string(s: &str) -> Vec<u8> {
    serde_json::to_vec(s).unwrap_or_else(|_| b"\"\"".to_vec())
}

/// The members as `(key, raw value)` pairs, duplicates kept, in order.
struct RawMembers<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMembers<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    out.push((key.0, value));
                }
                Ok(RawMembers(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// A key, borrowed from the body unless it holds an escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(body: &str, f: impl FnOnce(&mut Members<'_>)) -> String {
        let mut m = Members::parse(body.as_bytes()).expect("an object");
        f(&mut m);
        String::from_utf8(m.to_bytes()).expect("utf-8")
    }

    #[test]
    fn untouched_members_keep_every_byte() {
        let body = "{ \"model\" : \"a\",\n  \"x\": [1.0, 2e3, \"\\u00e9\"], \"tools\":{} }";
        assert_eq!(edited(body, |_| {}), body);
        assert_eq!(
            edited(body, |m| m.set_str("model", "claude")),
            "{ \"model\" : \"claude\",\n  \"x\": [1.0, 2e3, \"\\u00e9\"], \"tools\":{} }"
        );
    }

    #[test]
    fn removing_members_keeps_the_rest_valid_wherever_they_are() {
        let body = r#"{"a": 1, "b": 2, "c": 3}"#;
        assert_eq!(edited(body, |m| m.remove("a")), r#"{"b": 2, "c": 3}"#);
        assert_eq!(edited(body, |m| m.remove("b")), r#"{"a": 1, "c": 3}"#);
        assert_eq!(edited(body, |m| m.remove("c")), r#"{"a": 1, "b": 2}"#);
        assert_eq!(
            edited(body, |m| {
                m.remove("a");
                m.remove("b");
                m.remove("c");
            }),
            "{}"
        );
        for out in [edited(body, |m| m.remove("a")), edited(body, |m| m.remove("c"))] {
            serde_json::from_str::<serde_json::Value>(&out).expect("valid JSON");
        }
    }

    #[test]
    fn set_appends_a_missing_member_and_keeps_the_last_of_duplicates() {
        assert_eq!(edited("{}", |m| m.set("stream", b"true".to_vec())), r#"{"stream":true}"#);
        assert_eq!(edited(r#"{"a":1}"#, |m| m.set("b", b"2".to_vec())), r#"{"a":1,"b":2}"#);
        assert_eq!(edited(r#"{"m":"x","m":"y"}"#, |m| m.set_str("m", "z")), r#"{"m":"z"}"#);
        let m = Members::parse(br#"{"m":"x","m":"y"}"#).expect("object");
        assert_eq!(m.get("m").map(RawValue::get), Some("\"y\""));
    }

    #[test]
    fn escaped_keys_are_read_unescaped() {
        let m = Members::parse(br#"{"mo\u0064el":"x"}"#).expect("object");
        assert!(m.contains("model"));
    }

    #[test]
    fn anything_but_an_object_is_refused() {
        for body in [&b"[1]"[..], b"\"s\"", b"{", b"{\"a\":}", b"\xff"] {
            assert!(Members::parse(body).is_err(), "{body:?}");
        }
    }
}
