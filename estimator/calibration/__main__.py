"""python -m estimator.calibration: refit and rewrite estimator/data/calibration.json."""

from __future__ import annotations

import json

from estimator.calibration import CALIBRATION_JSON
from estimator.calibration.build import build_calibration


def main() -> None:
    content = build_calibration()
    CALIBRATION_JSON.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    overall = content["overall"]
    print(f"wrote {CALIBRATION_JSON}")
    for kind in ("decode", "prefill"):
        print(kind, overall[kind])


if __name__ == "__main__":
    main()
