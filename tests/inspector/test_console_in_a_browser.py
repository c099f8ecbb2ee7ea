"""The console in a real browser (headless Chromium from the system packages, via selenium):
from the conversation list to a reply's record and to the charts, the prompt is there, and a
message holding `<script>` shows as text and runs nothing. Screenshots are kept as artifacts
(their paths are printed; set THREADLINE_TEST_ARTIFACTS to keep them in a folder of yours).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from threadline.channels.local import LocalChannel
from threadline.config import AgentChannel, AgentSettings, OpsSettings, Settings, StoreSettings
from threadline.runtime import Runtime

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
HOSTILE = "@support my order is 4417-B <script>document.title='pwned'</script> <b>bold?</b>"

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)"
           ": apt-get install chromium chromium-driver (.ci/run does it)")


def browse(url: str, artifacts: Path) -> dict[str, object]:
    """Click through the console like a person; returns what was seen."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,2200"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)),
                              options=options)
    seen: dict[str, object] = {}
    try:
        driver.get(url)
        seen["list_title"] = driver.title
        driver.find_element(By.LINK_TEXT, "local:main").click()
        seen["conversation_text"] = driver.find_element(By.TAG_NAME, "main").text
        driver.find_elements(By.CSS_SELECTOR, "#records a.record-link")[0].click()  # newest
        seen["record_title"] = driver.title
        seen["prompt"] = driver.find_element(By.ID, "prompt").text
        seen["inbound"] = driver.find_element(By.ID, "inbound").text
        seen["scripts"] = len(driver.find_elements(By.TAG_NAME, "script"))
        seen["bold"] = len(driver.find_elements(By.CSS_SELECTOR, "main b"))
        seen["budget_parts"] = len(driver.find_elements(By.CSS_SELECTOR, "svg.budget rect"))
        driver.save_screenshot(str(artifacts / "console-record.png"))
        driver.find_element(By.LINK_TEXT, "Charts").click()
        seen["charts_heading"] = driver.find_element(By.TAG_NAME, "h1").text
        seen["captions"] = [f.text for f in driver.find_elements(By.TAG_NAME, "figcaption")]
        seen["dots"] = len(driver.find_elements(By.CSS_SELECTOR, "svg circle.dot"))
        seen["lines"] = len(driver.find_elements(By.CSS_SELECTOR, "svg polyline.series"))
        driver.save_screenshot(str(artifacts / "console-charts.png"))
        seen["final_title"] = driver.title
    finally:
        driver.quit()
    return seen


def keep_screenshots(folder: Path) -> list[Path]:
    """The screenshots, copied to THREADLINE_TEST_ARTIFACTS when that is set."""
    shots = [folder / "console-record.png", folder / "console-charts.png"]
    keep = os.environ.get("THREADLINE_TEST_ARTIFACTS")
    if not keep:
        return shots
    Path(keep).mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(shot, Path(keep) / shot.name)) for shot in shots]


async def test_a_person_finds_what_the_agent_saw(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium must not look for drivers to download
    settings = Settings(
        store=StoreSettings(url=f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"),
        ops=OpsSettings(port=0), base_dir=tmp_path,
        agents={"support": AgentSettings(channels=[AgentChannel(name="local")])})
    runtime = Runtime.build(settings)
    await runtime.start()
    try:
        [room] = runtime.channels
        assert isinstance(room, LocalChannel)
        await room.say(HOSTILE, user="ada")
        await room.say("@support what did I say about my order?", user="ada")
        assert runtime.inspector.recorder is not None
        await runtime.inspector.recorder.flush()
        assert runtime.console_url is not None
        seen = await asyncio.to_thread(browse, runtime.console_url, tmp_path)
    finally:
        await runtime.stop()

    for shot in keep_screenshots(tmp_path):
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 10_000  # a rendered page, not an empty canvas
    assert seen["list_title"] == "Conversations · Threadline console"
    assert HOSTILE in str(seen["conversation_text"])  # shown as typed, tags and all
    assert seen["record_title"] == "support · reply record · Threadline console"
    prompt = str(seen["prompt"])
    assert "what did I say about my order?" in prompt  # the turn being answered
    assert HOSTILE.removeprefix("@support ") in prompt  # an earlier turn it kept
    assert "newest · user" in prompt and "kept · user" in prompt
    assert seen["inbound"] == "@support what did I say about my order?"
    assert seen["scripts"] == 0 and seen["bold"] == 0  # the message's markup is only text
    assert int(str(seen["budget_parts"])) >= 3
    assert seen["charts_heading"] == "Replies over the last 7 days"
    assert seen["captions"] == ["tokens per reply (tokens) · 2 replies", "latency (ms) · 2 replies",
                                "cache hit rate (%) · 2 replies"]
    assert seen["dots"] == 6 and seen["lines"] == 3
    assert seen["final_title"] != "pwned"
