"""The texts calibration.json carries: approximations the fit makes, how its statistics
were computed and the formulas it fits (build.build_calibration)."""

from __future__ import annotations

APPROXIMATIONS = (
    "Models with a config (calibration/models.py MODEL_CONFIGS): bytes per token from "
    "weights_breakdown with the measured file size applied tensor by tensor; Unsloth UD "
    "mixes take their base type's layout; EXL2 / q4f16_1 are sized as uniformly "
    "compressed bf16. Stand-in configs with the same shapes are listed there.",
    "Models without a config (GLM-4.7-Flash, Ministral-3-14B): MoE active bytes = file "
    "bytes x params_active / params_total; dense = file bytes minus the untied token_embd "
    "at the file's mean bits per weight; no KV reads, no attention FLOPs (tg128 / pp512).",
    "Rows without file_size_gb: params x nominal bits per weight (EXL2 bpw, GPTQ 4.25, "
    "q4f16_1 4.5, Q4_0 4.53, Q4_K_M 4.9, FP16 16, FP8 8).",
    "TFLOPS of the 18 devices accelerators.csv lacks: estimator/data/calibration_devices.csv "
    "(whitepaper figures or SMs x FLOP/clk x boost clock, one source per row).",
    "MoE batches touch 1 - (1 - k/E)^B of the experts (uniform routing).",
    "'decode 256 tok' rows: 8-token prompt; 'decode (single stream)': tg128 assumed.",
    "A100 (PCIe, no NVLink) TP rows: memory size not stated, 80GB (1935 GB/s) assumed.",
    "llama.cpp/cpu and /sycl have no rows: they use the pooled llama.cpp factors.",
)


# How the stored figures were computed (calibration.json "statistics" and "formulas").
STATISTICS = (
    "overall: whole devices held out (every prediction comes from a fit "
    "without the row's device, every bound from the other rows' residuals); "
    "error = |predicted - measured| / measured"
)
FORMULAS = {
    "decode_step_s": "weight+KV bytes / (bandwidth x bandwidth_share) + 2 x active "
    "params x batch / (fp16 TFLOPS x decode_mfu) + host + comm + "
    "(decode_overhead_s (+ moe_decode_overhead_s for MoE)) x n_layers / 32",
    "prefill_s_per_token": "FLOPs x format factor / (TFLOPS x prefill_mfu) + active "
    "params x prefill_s_per_param",
    "bounds": "estimate x ratio quantiles (bound_quantiles) of the group's "
    "whole-device hold-out measured / predicted, shrunk toward the pooled "
    "quantiles by bound_shrink_rows pseudo-rows (in log space)",
    "corrections": "local engines: tokens/s x exp(family effect + weights-kind effect + "
    "vendor effect), each a shrunk mean log residual (calibration/effects.py)",
    "family_ranges": "local engines: estimate x ratio quantiles of the device family's "
    "whole-device hold-out measured / predicted, shrunk toward the pooled current or "
    "older-and-rare ratios",
}
