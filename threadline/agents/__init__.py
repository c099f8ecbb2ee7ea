"""Agents: the LLM loop with tools, several agents in one channel, providers and summarizers."""

from threadline.agents.agent import Agent
from threadline.agents.llm import ModelProvider, ModelRequest, ModelResponse, ToolSpec
from threadline.agents.offline import OfflineModel
from threadline.agents.summarizer import ExtractiveSummarizer, SummarizerAgent
from threadline.agents.team import Team
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
    "SummarizerAgent",
    "Team",
    "Tool",
    "ToolSpec",
    "function_tool",
    "tool",
]
