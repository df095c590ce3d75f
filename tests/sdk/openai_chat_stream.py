"""`chat.completions.create` streamed with `stream_options={"include_usage": True}`.

Usage: openai_chat_stream.py MODEL"""

import sys

import openai

from common import GATEWAY, MASTER_KEY, TIMEOUT, http_client, report

client = openai.OpenAI(
    base_url=f"{GATEWAY}/v1", api_key=MASTER_KEY, max_retries=0, timeout=TIMEOUT, http_client=http_client(openai)
)
chunks = list(
    client.chat.completions.create(
        model=sys.argv[1],
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
)
report(
    text="".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
    finish_reasons=[c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason],
    usage=[c.usage.model_dump(mode="json") for c in chunks if c.usage],
    last_has_choices=bool(chunks[-1].choices),
)
