"""`python -m estimator estimate FILE`: JSON Lines in, one result per line out, in order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads(
    (ROOT / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text()
)


def good(context: int, request_id: str) -> dict[str, Any]:
    return {
        "id": request_id,
        "model": {"hf_config": CONFIG},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1008},
        "workload": {"context_tokens": context},
    }


def run_cli(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "estimator", "estimate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_it_answers_json_lines_in_order_and_exits_2_on_a_bad_line() -> None:
    bad = good(4096, "bad")
    bad["workload"]["context_tokens"] = -1
    lines = [json.dumps(good(2048, "a")), json.dumps(bad), "{not json", json.dumps(good(8192, "c"))]
    done = run_cli("\n".join(lines) + "\n", "-")
    assert done.returncode == 2, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(out) == 4
    assert out[0]["id"] == "a" and out[3]["id"] == "c"
    assert out[0]["kv_cache_bytes"] < out[3]["kv_cache_bytes"]
    assert out[1] == {
        "error": {"field": "workload.context_tokens", "message": "must be at least 1, got -1"}
    }
    assert out[2]["error"]["field"] == "request"


def test_it_reads_one_pretty_printed_request_from_a_file_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(good(4096, "x"), indent=2))
    done = run_cli("", str(path))
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["fit"]["verdict"] == "comfortable"


def test_it_names_the_field_holding_nan() -> None:
    text = json.dumps(good(4096, "n")).replace('"memory_gb": 24', '"memory_gb": NaN')
    done = run_cli(text, "-")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["field"] == "device.memory_gb"
