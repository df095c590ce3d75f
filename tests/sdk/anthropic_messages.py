"""`messages.create` without streaming, with a system prompt and a tool definition.

Usage: anthropic_messages.py MODEL"""

import sys

import anthropic

from common import GATEWAY, MASTER_KEY, TIMEOUT, http_client, report

client = anthropic.Anthropic(
    base_url=GATEWAY, api_key=MASTER_KEY, max_retries=0, timeout=TIMEOUT, http_client=http_client(anthropic)
)
message = client.messages.create(
    model=sys.argv[1],
    max_tokens=256,
    system="You are terse.",
    messages=[{"role": "user", "content": "What is in the current directory?"}],
    tools=[
        {
            "name": "ls",
            "description": "List files",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ],
    metadata={"user_id": "u-1"},
)
assert isinstance(message, anthropic.types.Message), type(message)
report(
    message=message.model_dump(mode="json"),
    text="".join(block.text for block in message.content if block.type == "text"),
)
