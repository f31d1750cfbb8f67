"""The server fixtures of the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
package.json), written with the Python `mcp` SDK 2.x: the tools, resources and prompts the suite's `server`
scenarios call by name. tests/conformance/server.sh serves it to `mcpstorm gateway` over stdio; with `--http PORT`
it serves Streamable HTTP itself, so the suite can run against it directly and tell the fixture's failures from the
gateway's. Directly it passes every server scenario of 0.1.16; only with --expected-failures, which counts warnings as
failures, does `server-sse-polling` fail: that scenario's POST says MCP-Protocol-Version 2025-03-26, and the SDK sends
the priming event and `retry:` (two SHOULDs) only to 2025-11-25 clients.

    python3 tests/conformance/fixture_server.py              # stdio
    python3 tests/conformance/fixture_server.py --http 3001  # http://127.0.0.1:3001/mcp
"""

import argparse
import base64
import json

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import (
    AudioContent,
    Completion,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

# A 1x1 PNG and a WAV header with two bytes of samples: the smallest valid media of each kind.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

fixture = MCPServer("mcpstorm-conformance-fixture", version="1.0.0")


def text_resource(uri: str, mime: str, body: str) -> EmbeddedResource:
    return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=mime, text=body))


# Tools: one per `tools-call-*` scenario, named as the suite calls them.


@fixture.tool()
def test_simple_text() -> str:
    """Returns one text block."""
    return "a simple text answer from the conformance fixture"


@fixture.tool()
def test_image_content() -> list[ImageContent]:
    """Returns one PNG image block."""
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@fixture.tool()
def test_audio_content() -> list[AudioContent]:
    """Returns one WAV audio block."""
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@fixture.tool()
def test_embedded_resource() -> list[EmbeddedResource]:
    """Returns one embedded text resource."""
    return [text_resource("test://embedded-resource", "text/plain", "an embedded resource's text")]


@fixture.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns a text, an image and an embedded resource block."""
    return [
        TextContent(type="text", text="three kinds of content follow"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        text_resource("test://mixed-content-resource", "application/json", json.dumps({"value": 123})),
    ]


@fixture.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log notifications while it runs."""
    for step in ("started", "working", "finished"):
        await ctx.info(f"test_tool_with_logging {step}")
        await anyio.sleep(0.05)
    return "logged three messages"


@fixture.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, 50 ms apart."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100, f"{done} of 100")
        if done < 100:
            await anyio.sleep(0.05)
    return "progress reported"


@fixture.tool()
def test_error_handling() -> str:
    """Always fails: the answer is a tool error (isError), not a protocol error."""
    raise ToolError("test_error_handling fails on purpose")


@fixture.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to complete `prompt` (sampling/createMessage)."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    answer = result.content.text if getattr(result.content, "type", None) == "text" else "(not text)"
    return f"the client's model answered: {answer}"


async def elicit(ctx: Context, message: str, schema: dict) -> str:
    """Asks the client's user to fill `schema` (elicitation/create) and reports what came back."""
    result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"elicitation {result.action}: {json.dumps(result.content)}"


@fixture.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the client's user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {"username": {"type": "string"}, "email": {"type": "string"}},
        "required": ["username", "email"],
    }
    return await elicit(ctx, message, schema)


@fixture.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits one field of each primitive type, each with a default (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    return await elicit(ctx, "Please confirm or change these values", schema)


@fixture.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits each enum form of SEP-1330: untitled and titled, single and multiple choice, and legacy enumNames."""
    options = [{"const": f"value{i}", "title": f"Value {i}"} for i in (1, 2, 3)]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": options},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option 1", "Option 2"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": options}},
        },
    }
    return await elicit(ctx, "Please choose", schema)


@fixture.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call (SEP-1699); the answer arrives after the client resumes."""
    await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    return "answered after the client reconnected"


@fixture.tool()
def json_schema_2020_12_tool(name: str = "", address: dict | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return f"{name} {json.dumps(address)}"


# The listing must carry these keywords as written (SEP-1613); the SDK would derive a schema without them.
fixture._tool_manager.get_tool("json_schema_2020_12_tool").parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


# Resources: static text and binary, a template, and one to subscribe to.


@fixture.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "the static text resource's content"


@fixture.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG)."""
    return base64.b64decode(PNG)


@fixture.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """A templated resource: its content names the id it was read with."""
    return json.dumps({"id": id, "data": f"data for id {id}"})


@fixture.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients may subscribe to."""
    return "the watched resource's content"


# Prompts.


@fixture.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments."""
    return [UserMessage(content=TextContent(type="text", text="a simple prompt"))]


@fixture.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt whose text carries both arguments."""
    return [UserMessage(content=TextContent(type="text", text=f"arg1 is {arg1}, arg2 is {arg2}"))]


@fixture.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt that embeds the resource it is given."""
    return [
        UserMessage(content=text_resource(resourceUri, "text/plain", "the embedded resource's text")),
        UserMessage(content=TextContent(type="text", text="read the resource above")),
    ]


@fixture.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt that carries an image."""
    return [
        UserMessage(content=ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(content=TextContent(type="text", text="describe the image above")),
    ]


@fixture.completion()
async def complete(ref, argument, context) -> Completion:
    """Argument completion: declared and answered, with no suggestions (the suite checks the shape)."""
    return Completion(values=[], total=0, has_more=False)


# Logging levels and resource subscriptions have no MCPServer decorator: low-level handlers that accept them.


async def accept(ctx, params) -> EmptyResult:
    return EmptyResult()


low = fixture._lowlevel_server
low.add_request_handler("logging/setLevel", SetLevelRequestParams, accept)
low.add_request_handler("resources/subscribe", SubscribeRequestParams, accept)
low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, accept)


class Events(EventStore):
    """Every SSE event in memory, so a client that reconnects with Last-Event-ID gets what it missed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, object]] = []

    async def store_event(self, stream_id, message):
        self.events.append((stream_id, len(self.events) + 1, message))
        return str(len(self.events))

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback):
        last = int(last_event_id) if last_event_id.isdigit() else 0
        stream = next((s for s, n, _ in self.events if n == last), None)
        for s, n, message in self.events:
            if s == stream and n > last and message is not None:
                await send_callback(EventMessage(message, str(n)))
        return stream


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    if args.http is None:
        fixture.run("stdio")
    else:
        fixture.run("streamable-http", port=args.http, event_store=Events(), retry_interval=100)
