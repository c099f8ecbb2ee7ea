"""deploy/ cannot be run here (no Docker engine): its files parse and run our real entry point."""

from __future__ import annotations

from pathlib import Path

import yaml

from threadline.cli import build_parser
from threadline.config import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_yaml_files_parse() -> None:
    documents = {path.name: list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
                 for path in DEPLOY.rglob("*.yaml")}
    assert set(documents) == {"compose.yaml", "threadline.yaml"}
    kinds = [d["kind"] for d in yaml.safe_load_all(
        (DEPLOY / "k8s" / "threadline.yaml").read_text(encoding="utf-8"))]
    assert kinds == ["Job", "Deployment", "Service", "PodDisruptionBudget"]
    compose = documents["compose.yaml"][0]
    assert set(compose["services"]) == {"postgres", "migrate", "threadline"}


def test_image_command_is_a_real_command_with_a_valid_config() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["threadline"]' in dockerfile
    assert 'CMD ["run", "/etc/threadline/threadline.yaml"]' in dockerfile
    assert "USER 10001:10001" in dockerfile
    args = build_parser().parse_args(["run", "/etc/threadline/threadline.yaml"])
    assert args.command == "run"
    settings = load_settings(DEPLOY / "threadline.yaml", env={
        "POSTGRES_PASSWORD": "pw", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"})
    assert settings.store.url.startswith("postgresql+asyncpg://threadline:pw@")
    assert settings.ops.host == "0.0.0.0"


def test_systemd_unit_runs_check_then_run() -> None:
    unit = (DEPLOY / "systemd" / "threadline.service").read_text(encoding="utf-8")
    assert "ExecStartPre=/opt/threadline/bin/threadline check /etc/threadline/threadline.yaml" \
        in unit
    assert "ExecStart=/opt/threadline/bin/threadline run /etc/threadline/threadline.yaml" in unit
    assert "RestartPreventExitStatus=2" in unit
