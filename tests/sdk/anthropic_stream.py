"""`messages.stream` and `get_final_message()`, the way an agent calls: tools, a system prompt
with a `cache_control` marker, extended thinking and an `anthropic-beta` header.

Usage: anthropic_stream.py MODEL"""

import sys

import anthropic

from common import GATEWAY, MASTER_KEY, TIMEOUT, http_client, report

BETA = "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"

client = anthropic.Anthropic(
    base_url=GATEWAY, api_key=MASTER_KEY, max_retries=0, timeout=TIMEOUT, http_client=http_client(anthropic)
)
events = []
with client.messages.stream(
    model=sys.argv[1],
    max_tokens=2048,
    system=[{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
    messages=[{"role": "user", "content": "List the files."}],
    tools=[
        {
            "name": "ls",
            "description": "List files",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "cache_control": {"type": "ephemeral"},
        }
    ],
    thinking={"type": "enabled", "budget_tokens": 1024},
    extra_headers={"anthropic-beta": BETA},
) as stream:
    for event in stream:
        events.append(event.type)
    message = stream.get_final_message()
assert isinstance(message, anthropic.types.Message), type(message)
report(
    events=events,
    message=message.model_dump(mode="json"),
    text="".join(block.text for block in message.content if block.type == "text"),
)
