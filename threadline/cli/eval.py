"""`threadline eval`: run YAML cases against a config (or two), and capture cases from replies.

    threadline eval cases.yaml                          # against ./threadline.yaml (or default)
    threadline eval cases.yaml --against tighter.yaml   # A/B: both configs, what changed
    threadline eval cases.yaml --junit eval.xml --json eval.json --parallel 4
    threadline eval capture 3f2a9c1e -o regressions.yaml   # a reply record, frozen as a case

Exit codes: 0 every case passed, 1 a case failed or could not run, 2 bad cases or config.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from threadline.backends import open_backend
from threadline.cli.config_file import add_config_option, settings_for
from threadline.cli.history import require_database, store_url
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.evals.capture import capture_case, captured_yaml
from threadline.evals.cases import case_yaml, load_cases
from threadline.evals.report import MARK, json_report, junit_xml, text_report
from threadline.evals.suite import CASE_TIMEOUT, CaseResult, Config, run_suite

CAPTURE = "capture"
EXIT_OK, EXIT_FAILED = 0, 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("words", nargs="+", metavar="CASES | capture RECORD_ID",
                        help="the YAML cases file to run; or `capture RECORD_ID` to write the "
                             "conversation up to that reply as a case")
    add_config_option(parser)
    parser.add_argument("--against", type=Path, metavar="FILE",
                        help="a second config: every case runs against both, and what changed "
                             "is shown")
    parser.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    parser.add_argument("--parallel", type=int, default=4, metavar="N",
                        help="cases run at once (default 4)")
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT, metavar="SECONDS",
                        help=f"seconds one case may take (default {CASE_TIMEOUT:g})")
    store = parser.add_mutually_exclusive_group()
    store.add_argument("--db", metavar="PATH", help="capture: the SQLite file of the records")
    store.add_argument("--url", metavar="URL", help="capture: the database URL of the records")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="capture: append the case to FILE (default: print it)")
    parser.add_argument("--name", help="capture: the case's name")


def main(args: argparse.Namespace) -> int:
    if args.words[0] == CAPTURE:
        if len(args.words) != 2:
            raise ConfigError("write `eval capture RECORD_ID` (`threadline inspect list` shows "
                              "the records)")
        return asyncio.run(_capture(args, args.words[1]))
    if len(args.words) != 1:
        raise ConfigError(f"eval runs one cases file; got {' '.join(args.words)}")
    if args.parallel < 1 or args.timeout <= 0:
        raise ConfigError("--parallel must be at least 1 and --timeout above 0")
    return _run(args, Path(args.words[0]))


def _run(args: argparse.Namespace, path: Path) -> int:
    cases = load_cases(path)
    configs = [Config(_label(args.config), settings_for(args))]
    if args.against is not None:
        configs.append(Config(_label(args.against), load_settings(args.against)))
        if configs[0].label == configs[1].label:
            configs[1] = Config(f"{configs[1].label} (--against)", configs[1].settings)
    labels = [c.label for c in configs]

    def progress(result: CaseResult, done: int, total: int) -> None:
        print(f"[{done}/{total}] {MARK[result.passed]} {result.case} ({result.config})",
              file=sys.stderr, flush=True)

    results = asyncio.run(run_suite(cases, configs, cases_dir=path.parent,
                                    parallel=args.parallel, case_seconds=args.timeout,
                                    progress=progress))
    sys.stdout.write(text_report(results, labels))
    if args.junit is not None:
        args.junit.write_text(junit_xml(results, labels), encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json_report(results, labels), encoding="utf-8")
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def _label(config: Path | None) -> str:
    return config.name if config is not None else "built-in default"


async def _capture(args: argparse.Namespace, record_id: str) -> int:
    url = store_url(args)
    require_database(url)
    async with open_backend(url) as backend:
        case = await capture_case(backend, record_id, name=args.name)
        assert backend.records is not None  # capture_case refused a backend without
        record = await backend.records.get(record_id)
    text = captured_yaml(case, reply=record.reply if record is not None else "")
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    if args.output.exists() and args.output.stat().st_size:
        # Appending a second document would not load: add the case to the file's list.
        text = case_yaml([*load_cases(args.output), case])
    args.output.write_text(text, encoding="utf-8")
    print(f"threadline: wrote case {case.name!r} to {args.output}; write its expect: section",
          file=sys.stderr)
    return EXIT_OK
