"""An OpenAI Agents SDK session kept in a SynthOrg Memory conversation: the Session protocol
directly (add, get, pop, clear), then ``Runner.run`` with the session.

    pip install "./clients/python[agents]"
    SYNTHORG_URL=http://127.0.0.1:8000 SYNTHORG_API_KEY=sok_... \\
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_API_KEY=... MODEL=llama3.1 \\
        python agents_session.py
"""

from __future__ import annotations

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from synthorg_memory import AsyncMemoryClient
from synthorg_memory.agents import SynthOrgSession


async def session_flow(base_url: str, api_key: str, session_id: str = "agent-run-1") -> dict:
    """The Session protocol, as the Runner drives it."""
    async with AsyncMemoryClient(base_url=base_url, api_key=api_key) as client:
        session = SynthOrgSession(session_id, client)
        await session.add_items(
            [
                {"role": "user", "content": "What is the weather in Paris?"},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "weather",
                    "arguments": '{"city": "Paris"}',
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "18°C, sunny"},
                {"role": "assistant", "content": "It is 18°C and sunny in Paris."},
            ]
        )
        everything = await session.get_items()
        latest_two = await session.get_items(limit=2)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return {
            "everything": everything,
            "latest_two": latest_two,
            "popped": popped,
            "after_pop": after_pop,
            "after_clear": await session.get_items(),
            "pop_empty": await session.pop_item(),
        }


async def runner_flow(
    base_url: str,
    api_key: str,
    *,
    llm_base_url: str,
    llm_api_key: str,
    model: str,
    session_id: str = "agent-run-2",
) -> dict:
    """Two turns of an agent whose history is the session (any OpenAI-compatible model)."""
    set_tracing_disabled(True)
    llm = OpenAIChatCompletionsModel(
        model=model, openai_client=AsyncOpenAI(base_url=llm_base_url, api_key=llm_api_key)
    )
    agent = Agent(name="assistant", instructions="Answer in one sentence.", model=llm)
    async with AsyncMemoryClient(base_url=base_url, api_key=api_key) as client:
        session = SynthOrgSession(session_id, client)
        first = await Runner.run(agent, "Billing deploys on Fridays; remember it.", session=session)
        second = await Runner.run(agent, "When does billing deploy?", session=session)
        return {
            "answers": [first.final_output, second.final_output],
            "items": await session.get_items(),
        }


if __name__ == "__main__":
    url, key = os.environ["SYNTHORG_URL"], os.environ["SYNTHORG_API_KEY"]
    for name, value in asyncio.run(session_flow(url, key)).items():
        print(name, value)
    if os.environ.get("OPENAI_BASE_URL"):
        out = asyncio.run(
            runner_flow(
                url,
                key,
                llm_base_url=os.environ["OPENAI_BASE_URL"],
                llm_api_key=os.environ.get("OPENAI_API_KEY", "none"),
                model=os.environ["MODEL"],
            )
        )
        print(out["answers"])
