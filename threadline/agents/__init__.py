"""Agents: the LLM loop with tools, model providers and summarizers (`threadline.team` puts
several of them on channels).

`AnthropicProvider` and `OpenAIProvider` are in their own modules (the second needs the
`openai` extra); a provider of your own registers with `register_provider`.
"""

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
