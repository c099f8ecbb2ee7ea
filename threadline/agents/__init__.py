"""Agents: the LLM loop with tools, model providers and summarizers (`threadline.team` puts
several of them on channels).

`AnthropicProvider` and `OpenAIProvider` are in their own modules (the second needs the
`openai` extra); a provider of your own registers with `register_provider`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.agents.agent import Agent
    from threadline.agents.llm import (
        ModelProvider,
        ModelRequest,
        ModelResponse,
        StreamingProvider,
        ToolSpec,
    )
    from threadline.agents.offline import OfflineModel
    from threadline.agents.providers import ProviderPlug, ProviderSettings, register_provider
    from threadline.agents.summarizer import ExtractiveSummarizer, SummarizerAgent
    from threadline.agents.tools import FunctionTool, Tool, function_tool, tool
    from threadline.turn import AgentResult

__all__ = [
    "Agent",
    "AgentResult",
    "ExtractiveSummarizer",
    "FunctionTool",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "OfflineModel",
    "ProviderPlug",
    "ProviderSettings",
    "StreamingProvider",
    "SummarizerAgent",
    "Tool",
    "ToolSpec",
    "function_tool",
    "register_provider",
    "tool",
]

__getattr__ = lazy_exports(__name__, {
    "Agent": "threadline.agents.agent",
    "ModelProvider": "threadline.agents.llm",
    "ModelRequest": "threadline.agents.llm",
    "ModelResponse": "threadline.agents.llm",
    "StreamingProvider": "threadline.agents.llm",
    "ToolSpec": "threadline.agents.llm",
    "OfflineModel": "threadline.agents.offline",
    "ProviderPlug": "threadline.agents.providers",
    "ProviderSettings": "threadline.agents.providers",
    "register_provider": "threadline.agents.providers",
    "ExtractiveSummarizer": "threadline.agents.summarizer",
    "SummarizerAgent": "threadline.agents.summarizer",
    "FunctionTool": "threadline.agents.tools",
    "Tool": "threadline.agents.tools",
    "function_tool": "threadline.agents.tools",
    "tool": "threadline.agents.tools",
    "AgentResult": "threadline.turn",
})
