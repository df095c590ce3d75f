"""`responses.create`, without streaming and with `stream=True`; with `--conversation`, a second
turn by `previous_response_id`, then `responses.retrieve` and `responses.delete` of the first.

Usage: openai_responses.py MODEL [--conversation]"""

import sys

import openai

from common import GATEWAY, MASTER_KEY, TIMEOUT, http_client, report

client = openai.OpenAI(
    base_url=f"{GATEWAY}/v1", api_key=MASTER_KEY, max_retries=0, timeout=TIMEOUT, http_client=http_client(openai)
)
model = sys.argv[1]
first = client.responses.create(model=model, instructions="Be brief.", input="Tell me a story.")
assert isinstance(first, openai.types.responses.Response), type(first)

events = []
completed = None
for event in client.responses.create(model=model, input=[{"role": "user", "content": "Hi"}], stream=True):
    events.append(event.type)
    if event.type == "response.completed":
        completed = event.response
summary = {
    "first": first.model_dump(mode="json"),
    "first_text": first.output_text,
    "events": events,
    "completed": completed.model_dump(mode="json") if completed else None,
    "completed_text": completed.output_text if completed else None,
}

if "--conversation" in sys.argv:
    second = client.responses.create(model=model, input="And then?", previous_response_id=first.id)
    retrieved = client.responses.retrieve(first.id)
    client.responses.delete(first.id)
    try:
        client.responses.retrieve(first.id)
        after_delete = "found"
    except openai.NotFoundError:
        after_delete = "not found"
    summary.update(
        second=second.model_dump(mode="json"),
        retrieved_id=retrieved.id,
        after_delete=after_delete,
    )
report(**summary)
