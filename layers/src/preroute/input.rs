//! What a pre-router sees of a request ([`PreRouteInput`]): the name asked for, the request
//! facts, and the conversation read from the body on first use ([`Conversation`]).

use std::{borrow::Cow, cell::OnceCell, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, IgnoredAny, SeqAccess, Visitor},
};

use crate::RequestFacts;

/// What a [`PreRouter`](super::PreRouter) sees of one request.
///
/// The conversation is read from the request body ([`RequestFacts::body`]) the first time a
/// router asks for it, so a router that decides on the facts alone (tags, the stream flag) never
/// parses the body.
pub struct PreRouteInput<'a> {
    requested: &'a str,
    facts: &'a RequestFacts,
    conversation: OnceCell<Option<Conversation>>,
}

impl fmt::Debug for PreRouteInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRouteInput")
            .field("requested", &self.requested)
            .field("conversation", &self.conversation.get().map(|c| c.as_ref().map(|c| c.turns.len())))
            .finish_non_exhaustive()
    }
}

impl<'a> PreRouteInput<'a> {
    /// The input for a request that asked for `requested`, with `facts`; the conversation is read
    /// from `facts.body` when first asked for.
    pub fn new(requested: &'a str, facts: &'a RequestFacts) -> Self {
        Self { requested, facts, conversation: OnceCell::new() }
    }

    /// The input with a conversation the caller already has (a typed in-process request).
    ///
    /// ```
    /// use switchyard_layers::{RequestFacts, preroute::{Conversation, PreRouteInput, Role}};
    ///
    /// let facts = RequestFacts::new();
    /// let input = PreRouteInput::with_conversation("smart-router", &facts, Conversation::new().push(Role::User, "Hello!"));
    /// assert_eq!(input.conversation().map(|c| c.turns().len()), Some(1));
    /// ```
    pub fn with_conversation(requested: &'a str, facts: &'a RequestFacts, conversation: Conversation) -> Self {
        Self { requested, facts, conversation: OnceCell::from(Some(conversation)) }
    }

    /// The name the client asked for.
    pub fn requested(&self) -> &str {
        self.requested
    }

    /// The request facts.
    pub fn facts(&self) -> &RequestFacts {
        self.facts
    }

    /// The conversation, read from the body once: OpenAI chat `messages`, Anthropic Messages
    /// `system` and `messages`, OpenAI Responses `instructions` and `input`. `None` for an
    /// endpoint that is not a conversation turn (embeddings, completions), and when the body is
    /// absent, is not JSON, or carries none of these.
    pub fn conversation(&self) -> Option<&Conversation> {
        self.conversation
            .get_or_init(|| {
                let body = self.facts.body.as_deref().filter(|_| self.facts.endpoint.is_conversation())?;
                Conversation::from_json(body)
            })
            .as_ref()
    }
}

/// Who wrote a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// `system` (Anthropic's top-level `system`, a Responses request's `instructions`).
    System,
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// Anything else (`developer`, `tool`, ...).
    Other,
}

impl Role {
    fn parse(role: &str) -> Self {
        match role {
            "system" => Self::System,
            "user" => Self::User,
            "assistant" => Self::Assistant,
            _ => Self::Other,
        }
    }
}

/// One turn of a conversation: its role and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Who wrote it.
    pub role: Role,
    /// Its text: a string content as it is; a list of parts as the text of its `text` parts
    /// (`input_text` / `output_text` for the Responses API) joined by spaces and trimmed. Images,
    /// tool calls and tool results contribute nothing, so a turn carrying only a tool result has
    /// an empty text (LiteLLM's `_message_text`).
    pub text: String,
}

/// The turns of a request, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conversation {
    turns: Vec<Turn>,
    /// Tool results flagged `is_error: true` in the newest message (Anthropic's `tool_result`).
    failed_tool_results: u32,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// With one more turn.
    pub fn push(mut self, role: Role, text: impl Into<String>) -> Self {
        self.turns.push(Turn { role, text: text.into() });
        self
    }

    /// The turns, oldest first.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// How many tool results of the newest message say the tool call failed (Anthropic's
    /// `tool_result` parts with `is_error: true`): the previous answer's tool calls went wrong.
    ///
    /// ```
    /// use switchyard_layers::preroute::Conversation;
    ///
    /// let body = br#"{"messages":[{"role":"user","content":[
    ///     {"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"no such file"}]}]}"#;
    /// assert_eq!(Conversation::from_json(body).unwrap().failed_tool_results(), 1);
    /// ```
    pub fn failed_tool_results(&self) -> u32 {
        self.failed_tool_results
    }

    /// Reads the conversation of a request body (see [`PreRouteInput::conversation`]); `None`
    /// when there is none.
    ///
    /// ```
    /// use switchyard_layers::preroute::{Conversation, Role};
    ///
    /// let body = br#"{"model":"smart-router","messages":[{"role":"system","content":"Be brief."},
    ///     {"role":"user","content":[{"type":"text","text":"Hello"},{"type":"image_url","image_url":{"url":"x"}}]}]}"#;
    /// let conversation = Conversation::from_json(body).unwrap();
    /// assert_eq!(conversation.turns()[1].role, Role::User);
    /// assert_eq!(conversation.turns()[1].text, "Hello");
    /// ```
    pub fn from_json(body: &[u8]) -> Option<Self> {
        let body: Body<'_> = serde_json::from_slice(body).ok()?;
        let mut turns = Vec::new();
        let system = body.system.or(body.instructions.map(Content::Text));
        if let Some(system) = system {
            turns.push(Turn { role: Role::System, text: system.into_text() });
        }
        let messages = body.messages.or(body.input.map(|input| match input {
            // A Responses request's `input` string is one user turn.
            Input::Text(text) => {
                vec![Message { role: Some(Cow::Borrowed("user")), content: Some(Content::Text(text)) }]
            }
            Input::Items(items) => items,
        }));
        let mut failed_tool_results = 0;
        for message in messages.unwrap_or_default() {
            // Responses items without a role (function calls, their outputs) are not turns.
            let Some(role) = message.role else { continue };
            failed_tool_results = match &message.content {
                Some(Content::Parts(_, failed)) => *failed,
                _ => 0,
            };
            let text = message.content.map(Content::into_text).unwrap_or_default();
            turns.push(Turn { role: Role::parse(&role), text });
        }
        (!turns.is_empty()).then_some(Self { turns, failed_tool_results })
    }
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    messages: Option<Vec<Message<'a>>>,
    #[serde(borrow, default)]
    system: Option<Content<'a>>,
    #[serde(borrow, default)]
    input: Option<Input<'a>>,
    #[serde(borrow, default)]
    instructions: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

/// A Responses API `input`: a string, or a list of items.
enum Input<'a> {
    Text(Cow<'a, str>),
    Items(Vec<Message<'a>>),
}

/// A message's content: a string, or a list of parts of which only the text counts.
enum Content<'a> {
    Text(Cow<'a, str>),
    /// The text parts, and how many tool results were flagged `is_error`.
    Parts(Vec<Cow<'a, str>>, u32),
    Other,
}

impl Content<'_> {
    /// LiteLLM's `_message_text`: a string as it is, parts joined by spaces and trimmed.
    fn into_text(self) -> String {
        match self {
            Self::Text(text) => text.into_owned(),
            Self::Parts(parts, _) => parts.join(" ").trim().to_owned(),
            Self::Other => String::new(),
        }
    }
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    /// Anthropic's `tool_result.is_error`.
    #[serde(default)]
    is_error: Option<bool>,
}

/// A part that is not an object (never seen on the wire) is skipped rather than failing the read.
struct MaybePart<'a>(Option<Part<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybePart<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybePart<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content part")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Part::deserialize(de::value::MapAccessDeserializer::new(map)).map(|p| MaybePart(Some(p)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybePart(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The text part types: chat and Anthropic `text`, the Responses API's `input_text` and
/// `output_text`.
fn is_text_part(kind: Option<&str>) -> bool {
    matches!(kind, Some("text" | "input_text" | "output_text"))
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                let mut failed = 0u32;
                while let Some(MaybePart(part)) = seq.next_element::<MaybePart<'a>>()? {
                    let Some(Part { kind, text, is_error }) = part else { continue };
                    if kind.as_deref() == Some("tool_result") && is_error == Some(true) {
                        failed = failed.saturating_add(1);
                    }
                    if let Some(text) = text
                        && is_text_part(kind.as_deref())
                    {
                        parts.push(text);
                    }
                }
                Ok(Content::Parts(parts, failed))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Input<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Input<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of input items")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Input::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Input::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Message<'a>>()? {
                    items.push(item);
                }
                Ok(Input::Items(items))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(body: &str) -> Vec<(Role, String)> {
        Conversation::from_json(body.as_bytes())
            .map(|c| c.turns.into_iter().map(|t| (t.role, t.text)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn chat_messages_keep_strings_as_they_are_and_join_text_parts() {
        let got = turns(
            r#"{"messages":[{"role":"system","content":"  Be brief. "},{"role":"user","content":[{"type":"text","text":" a "},{"type":"image_url"},{"type":"text","text":"b\u00e9 "}]},{"role":"tool","content":"x"}]}"#,
        );
        assert_eq!(
            got,
            [
                (Role::System, "  Be brief. ".to_owned()),
                (Role::User, "a  bé".to_owned()),
                (Role::Other, "x".to_owned())
            ]
        );
    }

    #[test]
    fn anthropic_system_and_tool_results() {
        let got = turns(
            r#"{"system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":[{"type":"tool_result","content":"42"}]}]}"#,
        );
        assert_eq!(got, [(Role::System, "sys".to_owned()), (Role::User, String::new())]);
    }

    #[test]
    fn responses_input_string_and_items() {
        assert_eq!(
            turns(r#"{"instructions":"be kind","input":"hi"}"#),
            [(Role::System, "be kind".to_owned()), (Role::User, "hi".to_owned())]
        );
        assert_eq!(
            turns(
                r#"{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},{"type":"function_call_output","output":"1"}]}"#
            ),
            [(Role::User, "q".to_owned())]
        );
    }

    #[test]
    fn bodies_without_a_conversation_have_none() {
        assert!(Conversation::from_json(b"not json").is_none());
        assert!(Conversation::from_json(br#"{"input":["a"]}"#).is_none() || turns(r#"{"input":["a"]}"#).is_empty());
        assert!(Conversation::from_json(br#"{"prompt":"x"}"#).is_none());
    }
}
